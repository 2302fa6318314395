/*
 * test-thrash.c - unit tests of the evict mode's thrash detector
 * (thrash.c): cyclic working sets larger than the budget thrash at any
 * scale, idle objects restored now and then do not, the rate limit, and
 * the edges (no budget, saturation); and the whole run's verdict
 * (thrash_run_*): 1/THRASH_RUN_DIV exactly, its edges and patterns; and
 * the sustained working set learned from a run that asked (thrash.h).
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>

#include <cmocka.h>

#include "thrash.h"

/*
 * A program cycling over nobj objects of obj bytes, one per operation,
 * under an LRU budget: every touch restores when the cycle exceeds the
 * budget, none when it fits (the first round backs, it does not restore).
 * How many asks in ops operations, one per ms.
 */
static int cyclic(uint64_t obj, int nobj, uint64_t budget, int ops)
{
	struct thrash t = { 0 };
	bool fits = (uint64_t)nobj * obj <= budget;
	int asks = 0;

	for (int i = 0; i < ops; i++) {
		asks += thrash_note(&t, obj, fits ? 0 : obj, budget,
				    (uint64_t)i + 1);
	}
	return asks;
}

static void test_cyclic_scale_free(void **state)
{
	(void)state;
	/* Twice the budget, at KiB, MiB and GiB scales: thrash. */
	assert_int_equal(cyclic(1024, 8, 4 * 1024, 100), 1);
	assert_int_equal(cyclic(UINT64_C(64) << 20, 8, UINT64_C(256) << 20,
				100), 1);
	assert_int_equal(cyclic(UINT64_C(1) << 30, 8, UINT64_C(4) << 30,
				100), 1);
	/* The whole cycle fits: never. */
	assert_int_equal(cyclic(1024, 4, 4 * 1024, 10000), 0);
	assert_int_equal(cyclic(UINT64_C(1) << 30, 4, UINT64_C(4) << 30,
				10000), 0);
}

static void test_rate_limit(void **state)
{
	struct thrash t = { 0 };
	int asks = 0;

	(void)state;
	/* Every window thrashes; 5 s of them, one per 10 ms: one ask/s. */
	for (uint64_t ms = 1; ms <= 5000; ms += 10)
		asks += thrash_note(&t, 200, 200, 100, ms);
	assert_int_equal(asks, 5);
	assert_true(t.thrashing >= 400);
}

static void test_idle_restores(void **state)
{
	struct thrash t = { 0 };
	int asks = 0;

	(void)state;
	/* A hot set that fits, and an idle object (100) restored every
	 * 1000th operation: one window in 15 restores, a third of it. */
	for (int i = 0; i < 100000; i++)
		asks += thrash_note(&t, 30, i % 1000 ? 0 : 100, 1000,
				    (uint64_t)i * 1000);
	assert_int_equal(asks, 0);
	assert_true(t.windows > 1000);
	assert_int_equal(t.thrashing, 0);
}

/* Steady restores below half of each window (THRASH_STEADY_*). */
static void test_steady(void **state)
{
	struct thrash t = { 0 };
	uint64_t ms = 0;
	int asks = 0, w;

	(void)state;
	/* reductions under a budget too small: 45% restored per window,
	 * never half; asks at the 4th window. */
	for (w = 1; w <= 3; w++)
		assert_false(thrash_note(&t, 200, 90, 100, ms += 2000));
	assert_true(thrash_note(&t, 200, 90, 100, ms += 2000));
	/* 1/64 exactly counts, a byte less does not. */
	t = (struct thrash){ 0 };
	for (w = 1; w <= 3; w++)
		assert_false(thrash_note(&t, 6400, 100, 3200, ms += 2000));
	assert_true(thrash_note(&t, 6400, 100, 3200, ms += 2000));
	t = (struct thrash){ 0 };
	for (w = 1; w <= 20; w++)
		asks += thrash_note(&t, 6400, 99, 3200, ms += 2000);
	assert_int_equal(asks, 0);
	/* Every other window restores (a period longer than a window): 4
	 * of the last 8 at the 7th window. */
	t = (struct thrash){ 0 };
	for (w = 1; w <= 6; w++)
		assert_false(thrash_note(&t, 200, w % 2 ? 50 : 0, 100,
					 ms += 2000));
	assert_true(thrash_note(&t, 200, 50, 100, ms += 2000));
	/* Every third window: 3 of 8 at most, never. */
	t = (struct thrash){ 0 };
	asks = 0;
	for (w = 1; w <= 300; w++)
		asks += thrash_note(&t, 200, w % 3 ? 0 : 90, 100, ms += 2000);
	assert_int_equal(asks, 0);
	assert_int_equal(t.thrashing, 0);
}

static void test_window(void **state)
{
	struct thrash t = { 0 };

	(void)state;
	/* All restored, but under two budgets touched: no verdict yet. */
	assert_false(thrash_note(&t, 150, 150, 100, 5000));
	assert_int_equal(t.windows, 0);
	/* Closes at 2 budgets; exactly half restored counts. */
	assert_true(thrash_note(&t, 150, 0, 100, 5000));
	assert_int_equal(t.windows, 1);
	assert_int_equal(t.touched, 0);
	/* Just under half: not thrashing. */
	assert_false(thrash_note(&t, 200, 99, 100, 9000));
	assert_int_equal(t.thrashing, 1);
}

static void test_edges(void **state)
{
	struct thrash t = { 0 };

	(void)state;
	assert_false(thrash_note(&t, 1000, 1000, 0, 1));
	assert_int_equal(t.touched, 0);
	/* Saturation, not wrap-around. */
	assert_false(thrash_note(&t, UINT64_MAX - 1, 0, UINT64_MAX, 1));
	assert_true(thrash_note(&t, UINT64_MAX, UINT64_MAX, UINT64_MAX, 1));
	assert_int_equal(t.windows, 1);
	/* A first ask at time 0 is not rate limited by "never asked". */
	t = (struct thrash){ 0 };
	assert_true(thrash_note(&t, 10, 10, 1, 0));
	assert_false(thrash_note(&t, 10, 10, 1, 999));
	assert_true(thrash_note(&t, 10, 10, 1, 1000));
}

/* The run's verdict after one note of touched and restored bytes. */
static bool run1(uint64_t touched, uint64_t restored)
{
	struct thrash_run r = { 0 };

	thrash_run_note(&r, touched, restored);
	return thrash_run_verdict(&r);
}

/* Exactly 1/64 thrashes; a byte less does not; at any scale. */
static void test_run_ratio(void **state)
{
	(void)state;
	assert_int_equal(THRASH_RUN_DIV, 64);
	for (uint64_t t = 64; t <= (UINT64_C(1) << 50); t <<= 7) {
		assert_true(run1(t, t / 64));
		assert_false(run1(t, t / 64 - 1));
		assert_true(run1(t - 1, t / 64));	/* a bit above 1/64 */
		assert_false(run1(t + 1, t / 64));	/* a bit below */
		assert_true(run1(t, t));
		assert_true(run1(t, t / 2));
	}
	/* Not rounded: 1/64 of 127 bytes is more than 1 byte. */
	assert_false(run1(127, 1));
	assert_true(run1(64, 1));
	assert_false(run1(65, 1));
}

static void test_run_edges(void **state)
{
	struct thrash_run r = { 0 };

	(void)state;
	assert_false(thrash_run_verdict(&r));		/* nothing at all */
	assert_false(run1(0, 0));
	assert_false(run1(0, 5));		/* nothing touched */
	assert_false(run1(1, 0));		/* touched, nothing restored */
	assert_false(run1(63, 0));
	assert_true(run1(63, 1));
	/* Saturation: never wraps back below the ratio. */
	thrash_run_note(&r, UINT64_MAX - 1, 0);
	thrash_run_note(&r, 10, 0);
	assert_int_equal(r.touched, UINT64_MAX);
	assert_false(thrash_run_verdict(&r));
	thrash_run_note(&r, 0, UINT64_MAX / 64);
	assert_false(thrash_run_verdict(&r));	/* 64 * that < UINT64_MAX */
	thrash_run_note(&r, 0, 1);
	assert_true(thrash_run_verdict(&r));	/* > UINT64_MAX / 64 */
	thrash_run_note(&r, 0, UINT64_MAX);
	assert_int_equal(r.restored, UINT64_MAX);
	assert_true(thrash_run_verdict(&r));	/* not multiplied around */
}

/*
 * Sums over a run: phases that bring their objects back once per phase
 * thrash as a whole (never half of a window: test_idle_restores), the
 * staged pattern (one restore per stage, thousands of requests) does not.
 */
static void test_run_patterns(void **state)
{
	const uint64_t mib = UINT64_C(1) << 20;
	struct thrash_run ph = { 0 }, st = { 0 };
	struct thrash t = { 0 };
	int asks = 0;

	(void)state;
	/* 3 objects of 4 MiB, budget 8: each used 8 times in a row; every
	 * other window restores one: the windows ask too, now (steady). */
	for (int i = 0; i < 3000; i++) {
		uint64_t rest = i % 8 == 0 && i >= 16 ? 4 * mib : 0;

		thrash_run_note(&ph, 4 * mib, rest);
		asks += thrash_note(&t, 4 * mib, rest, 8 * mib,
				    (uint64_t)i * 2000);
	}
	assert_true(asks > 0);
	assert_true(thrash_run_verdict(&ph));
	/* staged.cu: 3 stages of 512 MiB, 32768 requests each, one restore
	 * of the stage's weights per stage. */
	t = (struct thrash){ 0 };
	asks = 0;
	for (int s = 0; s < 3; s++) {
		thrash_run_note(&st, 512 * mib, 512 * mib);
		asks += thrash_note(&t, 512 * mib, 512 * mib, 776 * mib,
				    (uint64_t)s * 100000);
		for (int q = 0; q < 32768; q++) {
			thrash_run_note(&st, 512 * mib, 0);
			asks += thrash_note(&t, 512 * mib, 0, 776 * mib,
					    (uint64_t)s * 100000 + q);
		}
	}
	assert_false(thrash_run_verdict(&st));
	assert_int_equal(asks, 0);
}

/*
 * The sustained working set (thrash.h, THRASH_WS_SPAN).  A toy LRU of
 * objects under a budget, with reuse distances noted as mm.c does (at an
 * object's first touch in a window): an operation touches one object,
 * restores it if it was evicted.
 */
struct ws_obj {
	uint64_t size, win, last;
	bool resident;
};

struct ws_sim {
	struct thrash t;
	struct ws_obj *o;
	int n;
	uint64_t budget, seq, ms;
	int asks;
};

static void ws_touch(struct ws_sim *s, int i)
{
	struct ws_obj *o = &s->o[i];
	uint64_t restored = 0, res = 0;

	if (o->win != thrash_window_id(&s->t)) {
		o->win = thrash_window_id(&s->t);
		if (o->last) {
			uint64_t d = o->size;

			for (int k = 0; k < s->n; k++)
				if (s->o[k].last > o->last)
					d += s->o[k].size;
			thrash_note_reuse(&s->t, o->size, d);
		}
	}
	if (!o->resident && o->last)
		restored = o->size;
	o->resident = true;
	o->last = ++s->seq;
	/* Evict least recently used objects until the budget holds. */
	for (int k = 0; k < s->n; k++)
		res += s->o[k].resident ? s->o[k].size : 0;
	while (res > s->budget) {
		int v = -1;

		for (int k = 0; k < s->n; k++)
			if (k != i && s->o[k].resident &&
			    (v < 0 || s->o[k].last < s->o[v].last))
				v = k;
		if (v < 0)
			break;
		s->o[v].resident = false;
		res -= s->o[v].size;
	}
	s->asks += thrash_note(&s->t, o->size, restored, s->budget,
			       s->ms += 10);
}

static void test_ws_cyclic(void **state)
{
	struct ws_obj o[4] = { { .size = 4 } , { .size = 4 }, { .size = 4 },
			       { .size = 4 } };
	struct ws_sim s = { .o = o, .n = 4, .budget = 8 };

	(void)state;
	/* First touches are no reuse: nothing known. */
	for (int i = 0; i < 4; i++)
		ws_touch(&s, i);
	assert_int_equal(thrash_ws(&s.t), 0);
	/* Each object comes back after the other three: the whole cycle,
	 * 16 bytes, twice the budget: it thrashes. */
	for (int i = 0; i < 64; i++)
		ws_touch(&s, i % 4);
	assert_int_equal(thrash_ws(&s.t), 16);
	assert_true(s.asks > 0);
	/* The budget grown to hold it: the same set. */
	s.budget = 16;
	for (int i = 0; i < 64; i++)
		ws_touch(&s, i % 4);
	assert_int_equal(thrash_ws(&s.t), 16);
}

/* hot: activation touches after each piece (1 in test_ws_phases). */
static uint64_t ws_phases(int hot)
{
	struct ws_obj o[13] = { { 0 } };
	struct ws_sim s = { .o = o, .n = 13, .budget = 62 };
	const uint64_t piece[3] = { 15, 10, 4 };

	for (int m = 0; m < 3; m++)
		for (int p = 0; p < 4; p++)
			o[4 * m + p].size = piece[m];
	o[12].size = 8;
	for (int m = 0; m < 3; m++)
		for (int p = 0; p < 4; p++) {
			ws_touch(&s, 4 * m + p);
			ws_touch(&s, 12);
		}
	for (int m = 0; m < 3; m++)
		for (int b = 0; b < 100; b++)
			for (int p = 0; p < 4; p++) {
				ws_touch(&s, 4 * m + p);
				for (int h = 0; h < hot; h++)
					ws_touch(&s, 12);
			}
	assert_true(s.asks > 0);
	return thrash_ws(&s.t);
}

static void test_ws_phases(void **state)
{
	(void)state;
	assert_int_equal(ws_phases(1), 68);
	/* The activations touched 8 times a piece: a window (124 bytes of
	 * touches) spans under half a batch, yet the pieces it touches come
	 * back after the whole batch: still 68. */
	assert_int_equal(ws_phases(8), 68);
}

/* The quantile's edges: nothing reused, the share exactly, buckets. */
static void test_ws_edges(void **state)
{
	struct thrash t = { 0 };

	(void)state;
	assert_int_equal(thrash_window_id(&t), 1);
	assert_int_equal(thrash_ws(&t), 0);
	thrash_note(&t, 200, 0, 100, 1);
	assert_int_equal(thrash_window_id(&t), 2);
	/* One reuse: its distance. */
	thrash_note_reuse(&t, 1, 5);
	assert_int_equal(thrash_ws(&t), 5);
	/* Fewer than THRASH_RUN_DIV bytes reused: none may come back. */
	thrash_note_reuse(&t, 1, 1000);
	assert_int_equal(thrash_ws(&t), 1000);
	/* 64 bytes at 10, 1 at 1000 (of 66 with the 5): 1/64 of 66 is 1
	 * byte, the one at 1000 may come back: 10. */
	t = (struct thrash){ 0 };
	thrash_note_reuse(&t, 64, 10);
	thrash_note_reuse(&t, 1, 5);
	thrash_note_reuse(&t, 1, 1000);
	assert_int_equal(thrash_ws(&t), 10);
	/* A second byte at 1000 is more than the share. */
	thrash_note_reuse(&t, 1, 1001);
	assert_int_equal(thrash_ws(&t), 1001);	/* the bucket's largest */
	/* Saturation: never wraps. */
	thrash_note_reuse(&t, UINT64_MAX, 1);
	thrash_note_reuse(&t, UINT64_MAX, UINT64_MAX);
	assert_true(t.reused == UINT64_MAX);
	assert_true(thrash_ws(&t) == UINT64_MAX);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cyclic_scale_free),
		cmocka_unit_test(test_rate_limit),
		cmocka_unit_test(test_idle_restores),
		cmocka_unit_test(test_steady),
		cmocka_unit_test(test_window),
		cmocka_unit_test(test_edges),
		cmocka_unit_test(test_run_ratio),
		cmocka_unit_test(test_run_edges),
		cmocka_unit_test(test_run_patterns),
		cmocka_unit_test(test_ws_cyclic),
		cmocka_unit_test(test_ws_phases),
		cmocka_unit_test(test_ws_edges),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
