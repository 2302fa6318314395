/*
 * thrash.c - the evict mode's thrash detector; the rule and why it is
 * scale-free: thrash.h.
 */
#include "thrash.h"

static uint64_t thrash_sat_add(uint64_t a, uint64_t b)
{
	return b > UINT64_MAX - a ? UINT64_MAX : a + b;
}

/* restored >= touched / THRASH_RUN_DIV, exactly and without overflow. */
static bool thrash_steady(uint64_t touched, uint64_t restored)
{
	if (!touched)
		return false;
	if (restored > UINT64_MAX / THRASH_RUN_DIV)
		return true;
	return restored * THRASH_RUN_DIV >= touched;
}

bool thrash_note(struct thrash *t, uint64_t touched, uint64_t restored,
		 uint64_t budget, uint64_t now_ms)
{
	uint64_t span;
	bool bad;

	if (!budget)
		return false;
	/* Saturating: a huge operation closes the window, never wraps it. */
	t->touched = thrash_sat_add(t->touched, touched);
	t->restored = thrash_sat_add(t->restored, restored);
	span = budget > UINT64_MAX / THRASH_WINDOW ? UINT64_MAX
						   : budget * THRASH_WINDOW;
	if (t->touched < span)
		return false;
	bad = t->restored >= t->touched / THRASH_MISS_DIV;
	t->steady = (t->steady << 1 |
		     thrash_steady(t->touched, t->restored)) &
		    ((1u << THRASH_STEADY_SPAN) - 1);
	if (__builtin_popcount(t->steady) >= THRASH_STEADY_WINDOWS)
		bad = true;
	t->windows++;
	t->touched = 0;
	t->restored = 0;
	if (!bad)
		return false;
	t->thrashing++;
	if (t->asked && now_ms - t->last_ask_ms < THRASH_ASK_GAP_MS)
		return false;
	t->asked = true;
	t->last_ask_ms = now_ms;
	return true;
}

void thrash_run_note(struct thrash_run *r, uint64_t touched,
		     uint64_t restored)
{
	r->touched = thrash_sat_add(r->touched, touched);
	r->restored = thrash_sat_add(r->restored, restored);
}

bool thrash_run_verdict(const struct thrash_run *r)
{
	/* Multiplied, not divided: touched below THRASH_RUN_DIV would make
	 * touched / THRASH_RUN_DIV 0, and nothing restored "thrash". */
	return thrash_steady(r->touched, r->restored);
}

/* Distances below 8 have a bucket each; above, 8 per power of two. */
static int thrash_bucket(uint64_t d)
{
	int o;

	if (d < 8)
		return (int)d;
	o = 63 - __builtin_clzll(d);
	return 8 * (o - 2) + (int)((d >> (o - 3)) & 7);
}

void thrash_note_reuse(struct thrash *t, uint64_t size, uint64_t dist)
{
	int b = thrash_bucket(dist);

	t->reused = thrash_sat_add(t->reused, size);
	t->reuse_bytes[b] = thrash_sat_add(t->reuse_bytes[b], size);
	if (dist > t->reuse_max[b])
		t->reuse_max[b] = dist;
}

uint64_t thrash_ws(const struct thrash *t)
{
	uint64_t allowed = t->reused / THRASH_RUN_DIV, far = 0;
	int low = -1;

	/* From the farthest down: the first bucket whose bytes, with all
	 * farther ones, are more than may be restored must fit. */
	for (int b = THRASH_WS_BUCKETS - 1; b >= 0; b--) {
		if (!t->reuse_bytes[b])
			continue;
		low = b;
		far = thrash_sat_add(far, t->reuse_bytes[b]);
		if (far > allowed)
			return t->reuse_max[b];
	}
	/* Everything within the share (fewer than THRASH_RUN_DIV bytes
	 * reused): the nearest distance seen. */
	return low < 0 ? 0 : t->reuse_max[low];
}
