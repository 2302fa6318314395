/*
 * pace.c - the per-kind measurement of spread against in-line epochs
 * (pace.h says what and why).
 */
#include <stdlib.h>
#include <string.h>

#include "pace.h"

#define PACE_SIG_SEED 0xcbf29ce484222325ull

void pace_init(struct pace *p, uint64_t now_ns)
{
	memset(p, 0, sizeof(*p));
	p->sig = PACE_SIG_SEED;
	p->start_ns = now_ns;
	p->mode = PACE_SPREAD;
}

static struct pace_kind *kind_find(struct pace *p, uint64_t sig)
{
	if (!sig)
		return NULL;
	for (int i = 0; i < PACE_KINDS; i++)
		if (p->kind[i].sig == sig)
			return &p->kind[i];
	return NULL;
}

const struct pace_kind *pace_kind_find(const struct pace *p, uint64_t sig)
{
	return kind_find((struct pace *)p, sig);
}

/* sig's kind, made in a free or the least recently used slot. */
static struct pace_kind *kind_get(struct pace *p, uint64_t sig)
{
	struct pace_kind *k = kind_find(p, sig), *old = &p->kind[0];

	if (k)
		return k;
	for (int i = 0; i < PACE_KINDS; i++) {
		if (!p->kind[i].sig) {
			old = &p->kind[i];
			break;
		}
		if (p->kind[i].used < old->used)
			old = &p->kind[i];
	}
	memset(old, 0, sizeof(*old));
	old->sig = sig;
	return old;
}

static int u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static uint64_t samples_median(const uint64_t *ns, int n)
{
	uint64_t v[PACE_SAMPLES];

	memcpy(v, ns, (size_t)n * sizeof(*v));
	qsort(v, (size_t)n, sizeof(*v), u64_cmp);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static uint64_t samples_min(const uint64_t *ns, int n)
{
	uint64_t m = ns[0];

	for (int i = 1; i < n; i++)
		m = ns[i] < m ? ns[i] : m;
	return m;
}

static void kind_judge(struct pace *p, struct pace_kind *k)
{
	const int s = PACE_SPREAD, l = PACE_INLINE;

	if (k->n[s] && k->n[l] &&
	    samples_min(k->ns[l], k->n[l]) * 100 >
	    samples_min(k->ns[s], k->n[s]) * (100 + PACE_LOSS_PCT)) {
		k->verdict = PACE_KEEP_SPREAD;
		p->kinds_spread++;
		return;
	}
	if (k->n[s] < PACE_SAMPLES || k->n[l] < PACE_SAMPLES)
		return;
	/* A tie goes in line: the same time for fewer waits and records. */
	if (samples_median(k->ns[l], k->n[l]) <=
	    samples_median(k->ns[s], k->n[s])) {
		k->verdict = PACE_KEEP_INLINE;
		p->kinds_inline++;
	} else {
		k->verdict = PACE_KEEP_SPREAD;
		p->kinds_spread++;
	}
}

/* The mode for an epoch of kind k (NULL: a kind not seen yet). */
static int kind_mode(const struct pace_kind *k)
{
	if (!k || k->verdict == PACE_KEEP_SPREAD)
		return PACE_SPREAD;
	if (k->verdict == PACE_KEEP_INLINE)
		return PACE_INLINE;
	if (k->seen < PACE_WARM)
		return PACE_SPREAD;
	/* Spread first, then alternate: each mode gets its samples. */
	return k->n[PACE_INLINE] < k->n[PACE_SPREAD] ? PACE_INLINE
						      : PACE_SPREAD;
}

int pace_epoch_end(struct pace *p, uint64_t now_ns)
{
	const struct pace_kind *last;

	/* 0 marks a free slot. */
	if (!p->sig)
		p->sig = 1;
	if (p->ops >= PACE_MIN_OPS) {
		struct pace_kind *k = kind_get(p, p->sig), *prev;
		int m = p->mode;

		p->clock++;
		p->epochs++;
		p->inline_epochs += m == PACE_INLINE;
		/* Gone (NULL) when k took its slot: nothing to link. */
		prev = kind_find(p, p->prev);
		if (prev)
			prev->next = p->sig;
		k->used = p->clock;
		if (k->verdict == PACE_OPEN && k->seen >= PACE_WARM &&
		    k->n[m] < PACE_SAMPLES && now_ns > p->start_ns) {
			k->ns[m][k->n[m]++] = now_ns - p->start_ns;
			kind_judge(p, k);
		}
		if (k->seen < UINT32_MAX)
			k->seen++;
		p->prev = p->sig;
	}
	/* An epoch too small to count leaves the prediction as it was. */
	last = kind_find(p, p->prev);
	p->mode = kind_mode(last ? kind_find(p, last->next) : NULL);
	p->sig = PACE_SIG_SEED;
	p->ops = 0;
	p->start_ns = now_ns;
	return p->mode;
}
