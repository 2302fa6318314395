/*
 * quota.c - device-memory quota accounting; see quota.h.
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "alloc-table.h"
#include "cuda-internal.h"
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

uint64_t quota_cap;

void quota_init(const char *env, int by_kmuxd)
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
	quota_cap = by_kmuxd ? 0 : v;
	log_debug("memory quota: %llu bytes", (unsigned long long)v);
}

uint64_t quota_capped(uint64_t v)
{
	return quota_cap && v > quota_cap ? quota_cap : v;
}

void quota_set_admitted(uint64_t limit)
{
	quota_global.limit = quota_capped(limit);
	quota_on = 1;
}

int quota_reserve_grow(uint64_t n)
{
	uint64_t used;

	if (!quota_grow)
		return -ENOSPC;
	used = quota_used(&quota_global);
	if (n > UINT64_MAX - used ||
	    (quota_cap && used + n > quota_cap) || quota_grow(used + n))
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

/*
 * One texel's bytes, or with *block one 4x4 block's (the compressed
 * formats).
 */
static uint64_t qa_texel(unsigned format, unsigned channels, bool *block)
{
	uint64_t ch = channels ? channels : 1;

	*block = false;
	switch (format) {
	case CU_AD_FORMAT_UNSIGNED_INT8:
	case CU_AD_FORMAT_SIGNED_INT8:
		return ch;
	case CU_AD_FORMAT_UNSIGNED_INT16:
	case CU_AD_FORMAT_SIGNED_INT16:
	case CU_AD_FORMAT_HALF:
		return 2 * ch;
	case CU_AD_FORMAT_UNSIGNED_INT32:
	case CU_AD_FORMAT_SIGNED_INT32:
	case CU_AD_FORMAT_FLOAT:
		return 4 * ch;
	case CU_AD_FORMAT_UNORM_INT8X1:
	case CU_AD_FORMAT_SNORM_INT8X1:
		return 1;
	case CU_AD_FORMAT_UNORM_INT8X2:
	case CU_AD_FORMAT_SNORM_INT8X2:
	case CU_AD_FORMAT_UNORM_INT16X1:
	case CU_AD_FORMAT_SNORM_INT16X1:
		return 2;
	case CU_AD_FORMAT_UNORM_INT8X4:
	case CU_AD_FORMAT_SNORM_INT8X4:
	case CU_AD_FORMAT_UNORM_INT16X2:
	case CU_AD_FORMAT_SNORM_INT16X2:
	case CU_AD_FORMAT_UNORM_INT_101010_2:
		return 4;
	case CU_AD_FORMAT_UNORM_INT16X4:
	case CU_AD_FORMAT_SNORM_INT16X4:
		return 8;
	case CU_AD_FORMAT_BC1_UNORM:
	case CU_AD_FORMAT_BC1_UNORM_SRGB:
	case CU_AD_FORMAT_BC4_UNORM:
	case CU_AD_FORMAT_BC4_SNORM:
		*block = true;
		return 8;
	case CU_AD_FORMAT_BC2_UNORM:
	case CU_AD_FORMAT_BC2_UNORM_SRGB:
	case CU_AD_FORMAT_BC3_UNORM:
	case CU_AD_FORMAT_BC3_UNORM_SRGB:
	case CU_AD_FORMAT_BC5_UNORM:
	case CU_AD_FORMAT_BC5_SNORM:
	case CU_AD_FORMAT_BC6H_UF16:
	case CU_AD_FORMAT_BC6H_SF16:
	case CU_AD_FORMAT_BC7_UNORM:
	case CU_AD_FORMAT_BC7_UNORM_SRGB:
		*block = true;
		return 16;
	default:
		return ch;
	}
}

static uint64_t qa_level(uint64_t n, unsigned l)
{
	n = l < 64 ? n >> l : 0;
	return n ? n : 1;
}

uint64_t quota_array_bytes(uint64_t width, uint64_t height, uint64_t depth,
			   unsigned format, unsigned channels, unsigned flags,
			   unsigned levels)
{
	bool block, keep_depth;
	uint64_t texel = qa_texel(format, channels, &block), total = 0;

	if (flags & (CUDA_ARRAY3D_SPARSE | CUDA_ARRAY3D_DEFERRED_MAPPING))
		return 0;
	keep_depth = flags & (CUDA_ARRAY3D_LAYERED | CUDA_ARRAY3D_CUBEMAP);
	width = width ? width : 1;
	height = height ? height : 1;
	depth = depth ? depth : 1;
	if (levels == 0)
		levels = 1;
	for (unsigned l = 0; l < levels; l++) {
		uint64_t w = qa_level(width, l), h = qa_level(height, l);
		uint64_t d = keep_depth ? depth : qa_level(depth, l), b;

		if (block) {
			w = w / 4 + (w % 4 != 0);
			h = h / 4 + (h % 4 != 0);
		}
		if (__builtin_mul_overflow(w, h, &b) ||
		    __builtin_mul_overflow(b, d, &b) ||
		    __builtin_mul_overflow(b, texel, &b) ||
		    __builtin_add_overflow(total, b, &total))
			return UINT64_MAX;
		/*
		 * Nothing left to halve: every level below adds the same, so
		 * the loop ends within 64 levels whatever levels says.
		 */
		if (w == 1 && h == 1 && (keep_depth || d == 1) &&
		    levels - l > 1) {
			uint64_t rest;

			if (__builtin_mul_overflow(b, (uint64_t)(levels - l - 1),
						   &rest) ||
			    __builtin_add_overflow(total, rest, &total))
				return UINT64_MAX;
			break;
		}
	}
	return total;
}

uint64_t quota_charged(uint64_t base)
{
	struct alloc_table *t = alloc_table_global();
	struct alloc a;

	if (!t || !base || alloc_table_find(t, base, &a) || a.base != base ||
	    (a.flags & ALLOC_F_GRAPH))
		return 0;
	return a.kind == ALLOC_DEVICE || a.kind == ALLOC_MANAGED ? a.size : 0;
}

/*
 * Handles: a small chained hash under one mutex (cuMemCreate and array
 * creation are rare).
 */
#define QH_BUCKETS 64

struct qhandle {
	uint64_t h, size;
	enum quota_handle_kind kind;
	struct qhandle *next;
};

static pthread_mutex_t qh_lock = PTHREAD_MUTEX_INITIALIZER;
static struct qhandle *qh_tab[QH_BUCKETS];

static unsigned qh_bucket(uint64_t h)
{
	return (unsigned)((h * 0x9E3779B97F4A7C15ULL) >> 58) % QH_BUCKETS;
}

int quota_handle_add(enum quota_handle_kind kind, uint64_t h, uint64_t size)
{
	struct qhandle *e = malloc(sizeof(*e));
	unsigned b = qh_bucket(h);

	if (!e)
		return -ENOMEM;
	e->h = h;
	e->size = size;
	e->kind = kind;
	pthread_mutex_lock(&qh_lock);
	e->next = qh_tab[b];
	qh_tab[b] = e;
	pthread_mutex_unlock(&qh_lock);
	return 0;
}

uint64_t quota_handle_take(enum quota_handle_kind kind, uint64_t h)
{
	struct qhandle **p, *e = NULL;
	uint64_t size = 0;

	pthread_mutex_lock(&qh_lock);
	for (p = &qh_tab[qh_bucket(h)]; *p; p = &(*p)->next) {
		if ((*p)->h == h && (*p)->kind == kind) {
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
