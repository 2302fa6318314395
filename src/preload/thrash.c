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
	t->ws_last[t->windows % THRASH_WS_SPAN] = t->reuse;
	t->windows++;
	if (t->windows >= THRASH_WS_SPAN) {
		uint64_t held = UINT64_MAX;

		for (int i = 0; i < THRASH_WS_SPAN; i++)
			if (t->ws_last[i] < held)
				held = t->ws_last[i];
		if (held > t->ws)
			t->ws = held;
	}
	t->touched = 0;
	t->restored = 0;
	t->reuse = 0;
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
