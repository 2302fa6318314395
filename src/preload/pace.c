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

/* The counters say which verdicts are in force (for the exit line). */
static void verdict_drop(struct pace *p, const struct pace_kind *k)
{
	p->kinds_spread -= k->verdict == PACE_KEEP_SPREAD;
	p->kinds_inline -= k->verdict == PACE_KEEP_INLINE;
	p->kinds_varied -= k->verdict == PACE_VARIED;
}

static void verdict_set(struct pace *p, struct pace_kind *k, int v)
{
	verdict_drop(p, k);
	k->verdict = (uint8_t)v;
	p->kinds_spread += v == PACE_KEEP_SPREAD;
	p->kinds_inline += v == PACE_KEEP_INLINE;
	p->kinds_varied += v == PACE_VARIED;
}

static uint64_t sig_mix(uint64_t h, uint64_t v)
{
	return (h ^ v) * 0x100000001b3ull;
}

uint64_t pace_key(uint64_t prev, uint64_t a, uint64_t b)
{
	uint64_t k = sig_mix(sig_mix(sig_mix(PACE_SIG_SEED, prev), a), b);

	return k ? k : 1;	/* 0 marks a free slot */
}

static struct pace_kind *kind_find(struct pace *p, uint64_t key)
{
	if (!key)
		return NULL;
	for (int i = 0; i < PACE_KINDS; i++)
		if (p->kind[i].key == key)
			return &p->kind[i];
	return NULL;
}

const struct pace_kind *pace_kind_find(const struct pace *p, uint64_t key)
{
	return kind_find((struct pace *)p, key);
}

/* key's kind, made in a free or the least recently used slot. */
static struct pace_kind *kind_get(struct pace *p, uint64_t key)
{
	struct pace_kind *k = kind_find(p, key), *old = &p->kind[0];

	if (k)
		return k;
	for (int i = 0; i < PACE_KINDS; i++) {
		if (!p->kind[i].key) {
			old = &p->kind[i];
			break;
		}
		if (p->kind[i].used < old->used)
			old = &p->kind[i];
	}
	if (old->key)
		verdict_drop(p, old);
	memset(old, 0, sizeof(*old));
	old->key = key;
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
		verdict_set(p, k, PACE_KEEP_SPREAD);
		return;
	}
	if (k->n[s] < PACE_SAMPLES || k->n[l] < PACE_SAMPLES)
		return;
	/* A tie goes in line: the same time for fewer waits and records. */
	if (samples_median(k->ns[l], k->n[l]) <=
	    samples_median(k->ns[s], k->n[s]))
		verdict_set(p, k, PACE_KEEP_INLINE);
	else
		verdict_set(p, k, PACE_KEEP_SPREAD);
}

/* The mode for an epoch of kind k (NULL: a kind not seen yet). */
static int kind_mode(const struct pace_kind *k)
{
	if (!k || k->verdict == PACE_KEEP_SPREAD || k->verdict == PACE_VARIED)
		return PACE_SPREAD;
	if (k->verdict == PACE_KEEP_INLINE)
		return PACE_INLINE;
	if (k->seen < PACE_WARM)
		return PACE_SPREAD;
	/* Spread first, then alternate: each mode gets its samples. */
	return k->n[PACE_INLINE] < k->n[PACE_SPREAD] ? PACE_INLINE
						      : PACE_SPREAD;
}

int pace_op(struct pace *p, uint64_t a, uint64_t b)
{
	int first = !p->ops++;

	if (first) {
		p->key = pace_key(p->prev, a, b);
		p->mode = kind_mode(kind_find(p, p->key));
	}
	p->sig = sig_mix(sig_mix(p->sig, a), b);
	return first;
}

/*
 * An epoch of k's key did the work sig: during warm-up the last one
 * seen is what its epochs do; after it, an unlike epoch is odd, and too
 * many odd ones make the kind varied.  Returns whether it may be timed.
 */
static int kind_like(struct pace *p, struct pace_kind *k, uint64_t sig)
{
	if (k->seen < PACE_WARM) {
		k->sig = sig;
		return 0;
	}
	if (k->sig == sig)
		return 1;
	k->odd++;
	/* One odd epoch early on (a first pass unlike the rest) is not yet
	 * too many. */
	if (k->odd >= 2 &&
	    (uint64_t)k->odd * PACE_ODD_SHARE > (uint64_t)k->seen + 1)
		verdict_set(p, k, PACE_VARIED);
	return 0;
}

void pace_epoch_end(struct pace *p, uint64_t now_ns)
{
	if (p->ops >= PACE_MIN_OPS) {
		struct pace_kind *k = kind_get(p, p->key);
		int m = p->mode;

		p->clock++;
		p->epochs++;
		p->inline_epochs += m == PACE_INLINE;
		k->used = p->clock;
		if (kind_like(p, k, p->sig) && k->verdict == PACE_OPEN &&
		    k->n[m] < PACE_SAMPLES && now_ns > p->start_ns) {
			k->ns[m][k->n[m]++] = now_ns - p->start_ns;
			kind_judge(p, k);
		}
		if (k->seen < UINT32_MAX)
			k->seen++;
		p->prev = p->sig;
	}
	/* An epoch too small to count leaves prev as it was. */
	p->key = 0;
	p->sig = PACE_SIG_SEED;
	p->ops = 0;
	p->mode = PACE_SPREAD;
	p->start_ns = now_ns;
}
