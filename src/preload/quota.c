/*
 * quota.c - device-memory quota accounting; see quota.h.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "alloc-table.h"
#include "log.h"
#include "quota.h"

int quota_on;
struct quota quota_global;
int (*quota_grow)(uint64_t want);

int quota_parse(const char *s, uint64_t *out)
{
	static const char units[] = "KMGT";
	uint64_t v = 0;
	const char *u;
	int shift;

	if (!s || *s < '0' || *s > '9')
		return -EINVAL;
	for (; *s >= '0' && *s <= '9'; s++) {
		unsigned d = (unsigned)(*s - '0');

		if (v > (UINT64_MAX - d) / 10)
			return -EINVAL;
		v = v * 10 + d;
	}
	if (*s) {
		u = strchr(units, *s);
		if (!u || !*u || s[1])
			return -EINVAL;
		shift = 10 * (int)(u - units + 1);
		if (v > UINT64_MAX >> shift)
			return -EINVAL;
		v <<= shift;
	}
	*out = v;
	return 0;
}

void quota_init(const char *env)
{
	uint64_t v;

	if (!env)
		return;
	if (quota_parse(env, &v)) {
		log_warn("KMUX_MEM_QUOTA=%s is not a byte count; no memory "
			 "quota", env);
		return;
	}
	quota_global.limit = v;
	atomic_store_explicit(&quota_global.used, 0, memory_order_relaxed);
	quota_on = 1;
	log_debug("memory quota: %llu bytes", (unsigned long long)v);
}

void quota_set_admitted(uint64_t limit)
{
	quota_global.limit = limit;
	quota_on = 1;
}

int quota_reserve_grow(uint64_t n)
{
	uint64_t used;

	if (!quota_grow)
		return -ENOSPC;
	used = quota_used(&quota_global);
	if (n > UINT64_MAX - used || quota_grow(used + n))
		return -ENOSPC;
	return quota_try_reserve(&quota_global, n);
}

int quota_try_reserve(struct quota *q, uint64_t n)
{
	uint64_t used = atomic_load_explicit(&q->used, memory_order_relaxed);
	uint64_t peak;

	do {
		if (n > q->limit || used > q->limit - n)
			return -ENOSPC;
	} while (!atomic_compare_exchange_weak_explicit(&q->used, &used,
			used + n, memory_order_relaxed, memory_order_relaxed));
	/* The peak kmuxd learns a command's need from (register.c). */
	used += n;
	peak = atomic_load_explicit(&q->peak, memory_order_relaxed);
	while (peak < used &&
	       !atomic_compare_exchange_weak_explicit(&q->peak, &peak, used,
			memory_order_relaxed, memory_order_relaxed))
		;
	return 0;
}

void quota_give_back(struct quota *q, uint64_t n)
{
	uint64_t used = atomic_load_explicit(&q->used, memory_order_relaxed);

	while (!atomic_compare_exchange_weak_explicit(&q->used, &used,
			used > n ? used - n : 0, memory_order_relaxed,
			memory_order_relaxed))
		;
}

uint64_t quota_used(const struct quota *q)
{
	return atomic_load_explicit(&q->used, memory_order_relaxed);
}

uint64_t quota_peak(const struct quota *q)
{
	return atomic_load_explicit(&q->peak, memory_order_relaxed);
}

void quota_clamp_info(const struct quota *q, size_t *free_bytes,
		      size_t *total_bytes)
{
	uint64_t used = quota_used(q);
	uint64_t left = used < q->limit ? q->limit - used : 0;

	if (total_bytes && *total_bytes > q->limit)
		*total_bytes = (size_t)q->limit;
	if (free_bytes && *free_bytes > left)
		*free_bytes = (size_t)left;
}

uint64_t quota_charged(uint64_t base)
{
	struct alloc_table *t = alloc_table_global();
	struct alloc a;

	if (!t || !base || alloc_table_find(t, base, &a) || a.base != base)
		return 0;
	return a.kind == ALLOC_DEVICE || a.kind == ALLOC_MANAGED ? a.size : 0;
}

/* VMM handles: a small chained hash under one mutex (cuMemCreate is rare). */
#define QH_BUCKETS 64

struct qhandle {
	uint64_t h, size;
	struct qhandle *next;
};

static pthread_mutex_t qh_lock = PTHREAD_MUTEX_INITIALIZER;
static struct qhandle *qh_tab[QH_BUCKETS];

static unsigned qh_bucket(uint64_t h)
{
	return (unsigned)((h * 0x9E3779B97F4A7C15ULL) >> 58) % QH_BUCKETS;
}

int quota_handle_add(uint64_t h, uint64_t size)
{
	struct qhandle *e = malloc(sizeof(*e));
	unsigned b = qh_bucket(h);

	if (!e)
		return -ENOMEM;
	e->h = h;
	e->size = size;
	pthread_mutex_lock(&qh_lock);
	e->next = qh_tab[b];
	qh_tab[b] = e;
	pthread_mutex_unlock(&qh_lock);
	return 0;
}

uint64_t quota_handle_take(uint64_t h)
{
	struct qhandle **p, *e = NULL;
	uint64_t size = 0;

	pthread_mutex_lock(&qh_lock);
	for (p = &qh_tab[qh_bucket(h)]; *p; p = &(*p)->next) {
		if ((*p)->h == h) {
			e = *p;
			*p = e->next;
			break;
		}
	}
	pthread_mutex_unlock(&qh_lock);
	if (e) {
		size = e->size;
		free(e);
	}
	return size;
}

void quota_atfork_prepare(void)
{
	pthread_mutex_lock(&qh_lock);
}

void quota_atfork_parent(void)
{
	pthread_mutex_unlock(&qh_lock);
}

void quota_atfork_child(void)
{
	pthread_mutex_unlock(&qh_lock);
}
