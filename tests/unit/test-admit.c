/*
 * test-admit.c - unit tests of kmuxd's admission and placement policy on
 * synthetic GPU states.
 *
 * Case by case: the memory fit with headroom and foreign memory, the
 * busyness threshold, the score's three terms, multi-GPU placement, 1..16
 * GPUs, declared / learned / guessed needs, exclusivity, deterministic
 * ties, round robin, backfill, the head's reservation, priorities.  Then
 * small discrete-time simulations show that a big task is starved by a
 * stream of small ones without the backfill bound and is not with it, and
 * likewise for priorities and aging.  Last, random states are checked
 * against a brute-force reading of the rules.  And the learned profiles'
 * part in placement: heavy tasks split where round robin stacks them, the
 * overlap weighting by expected runtime, the utilization beyond the
 * predictions and what a released task takes out of it.
 *
 * KMUX_TEST_SEED=<n> replays the random tests with another seed.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <math.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "admit.h"

#define MiB (UINT64_C(1) << 20)
#define GiB (UINT64_C(1) << 30)
#define SEC UINT64_C(1000000)

static uint64_t seed = 0x61646d6974u;	/* "admit" */

static uint64_t rnd(void)
{
	seed ^= seed >> 12;
	seed ^= seed << 25;
	seed ^= seed >> 27;
	return seed * 0x2545f4914f6cdd1dull;
}

static struct admit_policy pol;

static int setup(void **state)
{
	(void)state;
	admit_policy_default(&pol);
	return 0;
}

static struct admit_gpu gpu(uint32_t index, uint64_t total_gib)
{
	struct admit_gpu g = { .index = index, .mem_total = total_gib * GiB };

	return g;
}

static struct admit_task task(uint64_t id, uint64_t mem, uint32_t ngpus)
{
	struct admit_task t = {
		.id = id, .mem = mem, .mem_source = ADMIT_MEM_DECLARED,
		.busy = 0.1, .duty = 0.1, .ngpus = ngpus,
	};

	return t;
}

static void test_policy(void **state)
{
	struct admit_policy p;

	(void)state;
	admit_policy_default(&p);
	assert_int_equal(admit_policy_check(&p), 0);
	p.headroom = -0.1;
	assert_int_equal(admit_policy_check(&p), -EINVAL);
	admit_policy_default(&p);
	p.guess_frac = 0.96;	/* above 1 - headroom */
	assert_int_equal(admit_policy_check(&p), -EINVAL);
	admit_policy_default(&p);
	p.busy_max = 0;
	assert_int_equal(admit_policy_check(&p), -EINVAL);
	admit_policy_default(&p);
	p.w_mem = NAN;	/* NaN */
	assert_int_equal(admit_policy_check(&p), -EINVAL);
	admit_policy_default(&p);
	p.learned_margin = 0.9;
	assert_int_equal(admit_policy_check(&p), -EINVAL);
	admit_policy_default(&p);
	p.placement = 7;
	assert_int_equal(admit_policy_check(&p), -EINVAL);
	admit_policy_default(&p);
	p.slice_waits = -1;
	assert_int_equal(admit_policy_check(&p), -EINVAL);
	p.slice_waits = NAN;
	assert_int_equal(admit_policy_check(&p), -EINVAL);
	p.slice_waits = 0;	/* never */
	assert_int_equal(admit_policy_check(&p), 0);
	assert_int_equal(admit_policy_check(NULL), -EINVAL);
}

/* Who is wait-bound (--slice-waits). */
static void test_wait_bound_rule(void **state)
{
	struct admit_policy p;

	(void)state;
	admit_policy_default(&p);
	assert_true(p.slice_waits > 999.0 && p.slice_waits < 1001.0);
	assert_false(p.mps);
	assert_true(admit_wait_bound(1000.0, &p));
	assert_true(admit_wait_bound(28000.0, &p));
	assert_false(admit_wait_bound(999.0, &p));
	assert_false(admit_wait_bound(0.0, &p));
	assert_false(admit_wait_bound(-1.0, &p));	/* not known */
	assert_false(admit_wait_bound(NAN, &p));
	assert_false(admit_wait_bound(1e6, NULL));
	p.mps = true;		/* contexts run side by side */
	assert_false(admit_wait_bound(28000.0, &p));
	p.mps = false;
	p.slice_waits = 0;	/* never */
	assert_false(admit_wait_bound(28000.0, &p));
	p.slice_waits = 50;
	assert_true(admit_wait_bound(50.0, &p));
}

/* ------------------------------------------------------------------------
 * The filter.
 */
static void test_fit_with_headroom(void **state)
{
	struct admit_gpu g = gpu(0, 100);
	struct admit_placement pl;
	struct admit_task t;
	uint64_t cap;

	(void)state;
	cap = admit_capacity(&g, &pol);
	assert_int_equal(cap, 95 * GiB);

	t = task(1, cap, 1);
	assert_int_equal(admit_place(&g, 1, &t, &pol, &pl), 0);
	assert_int_equal(pl.ngpus, 1);
	assert_int_equal(pl.slot[0], 0);
	assert_int_equal(pl.quota, cap);
	/* One byte more can never fit on this GPU. */
	t.mem = cap + 1;
	assert_int_equal(admit_place(&g, 1, &t, &pol, &pl), -ENOSPC);

	/* Committed memory (the preloads' accounting) counts... */
	g.mem_committed = 10 * GiB;
	t.mem = 85 * GiB;
	assert_int_equal(admit_place(&g, 1, &t, &pol, &pl), 0);
	t.mem = 85 * GiB + 1;
	assert_int_equal(admit_place(&g, 1, &t, &pol, &pl), -EAGAIN);
	/* ... and so does NVML's used memory when it is larger (memory
	 * held by processes kmux does not manage). */
	g.mem_used = 20 * GiB;
	t.mem = 75 * GiB;
	assert_int_equal(admit_place(&g, 1, &t, &pol, &pl), 0);
	t.mem = 75 * GiB + 1;
	assert_int_equal(admit_place(&g, 1, &t, &pol, &pl), -EAGAIN);
	/* Over capacity already (foreign process): nothing fits. */
	g.mem_used = 99 * GiB;
	t.mem = 1;
	assert_int_equal(admit_place(&g, 1, &t, &pol, &pl), -EAGAIN);

	/* No headroom: the whole GPU; an odd size rounds the reserve up. */
	pol.headroom = 0;
	g = gpu(0, 80);
	assert_int_equal(admit_capacity(&g, &pol), 80 * GiB);
	pol.headroom = 0.1;
	g.mem_total = 1001;
	assert_int_equal(admit_capacity(&g, &pol), 900);
	g.mem_total = 0;
	assert_int_equal(admit_capacity(&g, &pol), 0);
}

static void test_busyness_threshold(void **state)
{
	struct admit_gpu g = gpu(0, 80);
	struct admit_placement pl;
	struct admit_task t = task(1, GiB, 1);

	(void)state;
	/* One task there, its duty predicted 1.2: + 0.5 > 1.5. */
	g.ntasks = 1;
	g.duty_committed = 1.2;
	t.duty = 0.5;
	assert_int_equal(admit_place(&g, 1, &t, &pol, &pl), -EAGAIN);
	t.duty = 0.3;	/* exactly at the threshold: allowed */
	assert_int_equal(admit_place(&g, 1, &t, &pol, &pl), 0);
	/* Measured utilization counts when higher than the duties. */
	g.duty_committed = 0.2;
	g.util = 1.0;
	g.util_valid = true;
	t.duty = 0.6;
	assert_int_equal(admit_place(&g, 1, &t, &pol, &pl), -EAGAIN);
	/* An idle-by-kmux GPU always passes, whatever foreign load it has:
	 * otherwise a task predicted very busy could never run. */
	g.ntasks = 0;
	g.duty_committed = 0;
	t.duty = 1.0;
	pol.busy_max = 0.5;
	assert_int_equal(admit_place(&g, 1, &t, &pol, &pl), 0);
	/* Round robin obeys the same limit: a placement decides where a
	 * task goes, not whether the GPU takes one more. */
	pol.busy_max = 1.5;
	g.ntasks = 3;
	g.duty_committed = 3.0;
	pol.placement = ADMIT_PLACE_ROUND_ROBIN;
	assert_int_equal(admit_place(&g, 1, &t, &pol, &pl), -EAGAIN);
	g.duty_committed = 0.5;	/* load: the utilization, 1.0 */
	t.duty = 0.5;
	assert_int_equal(admit_place(&g, 1, &t, &pol, &pl), 0);
	g.mem_committed = 80 * GiB;
	assert_int_equal(admit_place(&g, 1, &t, &pol, &pl), -EAGAIN);
}

/*
 * Admission gates by duty (the whole-life mean load), the score by active
 * demand.  Three jobs there that each want 0.7 while they run kernels but
 * average 0.3 over their lives: 2.1 active, 0.9 duty.  A newcomer of
 * active 0.7, duty 0.3 fits (0.9 + 0.3 <= 1.5), although the active sum
 * alone would be 2.8; the same GPU with duties near their active values
 * refuses it.  An empty GPU takes anything.  A release gives the duty back.
 */
static void test_duty_gate(void **state)
{
	struct admit_gpu g = gpu(0, 80);
	struct admit_placement pl, one = { .ngpus = 1, .slot = { 0 },
					   .quota = GiB };
	struct admit_task r[3], t = task(9, GiB, 1), big = task(10, GiB, 1);
	double score_low;

	(void)state;
	for (int i = 0; i < 3; i++) {
		r[i] = task((uint64_t)i + 1, GiB, 1);
		r[i].busy = 0.7;
		r[i].duty = 0.3;
		admit_commit(&g, 1, &r[i], &one, (uint64_t)i + 1, 0);
	}
	assert_float_equal(g.busy_committed, 2.1, 1e-9);
	assert_float_equal(g.duty_committed, 0.9, 1e-9);
	assert_true(g.busy_committed + 0.7 > pol.busy_max);
	t.busy = 0.7;
	t.duty = 0.3;
	assert_int_equal(admit_place(&g, 1, &t, &pol, &pl), 0);
	/* The score is still the active demand's: 2.1 + 0.7 of load. */
	score_low = pl.score;
	assert_true(pl.score > pol.w_util * 2.8 - 1e-9);
	assert_true(pl.score < pol.w_util * 2.8 + pol.w_mem + pol.w_tasks * 3 + 1e-9);
	/* A newcomer whose duty is its active demand: 0.9 + 0.7 > 1.5. */
	big.busy = big.duty = 0.7;
	assert_int_equal(admit_place(&g, 1, &big, &pol, &pl), -EAGAIN);
	/* The reverse: the same active sum, duties near it: refused. */
	g.duty_committed = 1.3;
	assert_int_equal(admit_place(&g, 1, &t, &pol, &pl), -EAGAIN);
	g.duty_committed = 1.2;		/* exactly busy_max with t's 0.3 */
	assert_int_equal(admit_place(&g, 1, &t, &pol, &pl), 0);
	/* The duty does not move the score. */
	assert_float_equal(pl.score, score_low, 1e-12);
	g.duty_committed = 0.9;
	/* Release restores duty_committed, task by task, to 0. */
	admit_release(&g, 1, &r[0], &one);
	assert_float_equal(g.duty_committed, 0.6, 1e-9);
	assert_float_equal(g.busy_committed, 1.4, 1e-9);
	/* Now the duty-heavy newcomer fits too: 0.6 + 0.7 <= 1.5. */
	assert_int_equal(admit_place(&g, 1, &big, &pol, &pl), 0);
	admit_release(&g, 1, &r[1], &one);
	admit_release(&g, 1, &r[2], &one);
	assert_true(g.duty_committed == 0.0);
	assert_int_equal(g.ntasks, 0);
	/* Never below zero, and an empty GPU takes anything. */
	admit_release(&g, 1, &r[2], &one);
	assert_true(g.duty_committed == 0.0);
	g.util = 1.0;
	g.util_valid = true;
	big.duty = big.busy = 1.0;
	pol.busy_max = 0.5;
	assert_int_equal(admit_place(&g, 1, &big, &pol, &pl), 0);
}

/*
 * Where the duty comes from: the profile's when it has one (never above
 * the busyness), else the busyness; a running correction of the busyness
 * moves the duty in proportion, and the GPU's committed duty with it.
 */
static void test_duty_init_and_correct(void **state)
{
	struct admit_profile prof = { .peak_mem = GiB, .mean_busy = 0.8,
				      .mean_duty = 0.2, .duty_runs = 2,
				      .runs = 3 };
	struct admit_gpu g = gpu(0, 80);
	struct admit_placement one = { .ngpus = 1, .slot = { 0 }, .quota = GiB };
	struct admit_task t;

	(void)state;
	assert_int_equal(admit_task_init(&t, 1, 1, 0, &prof, &pol, 0), 0);
	assert_float_equal(t.busy, 0.8, 1e-12);
	assert_float_equal(t.duty, 0.2, 1e-12);
	/* Unknown duty (a profile from before it was measured). */
	prof.duty_runs = 0;
	assert_int_equal(admit_task_init(&t, 2, 1, 0, &prof, &pol, 0), 0);
	assert_float_equal(t.duty, 0.8, 1e-12);
	/* No profile: the default busyness for both. */
	assert_int_equal(admit_task_init(&t, 3, 1, 0, NULL, &pol, 0), 0);
	assert_float_equal(t.duty, pol.default_busy, 1e-12);
	/* A duty above the busyness (learned over fewer runs) is capped. */
	prof.duty_runs = 1;
	prof.mean_duty = 0.95;
	assert_int_equal(admit_task_init(&t, 4, 1, 0, &prof, &pol, 0), 0);
	assert_float_equal(t.duty, 0.8, 1e-12);

	/* Measured at 0.4 while running: duty 0.2 x 0.4 / 0.8. */
	prof.mean_duty = 0.2;
	assert_int_equal(admit_task_init(&t, 5, 1, 0, &prof, &pol, 0), 0);
	admit_commit(&g, 1, &t, &one, 1, 0);
	assert_float_equal(g.duty_committed, 0.2, 1e-9);
	admit_set_busy(&g, 1, &t, &one, 0.4);
	assert_float_equal(t.duty, 0.1, 1e-12);
	assert_float_equal(g.duty_committed, 0.1, 1e-9);
	assert_float_equal(g.busy_committed, 0.4, 1e-9);
	/* From a busyness of 0 there is no proportion: the duty is it. */
	admit_set_busy(&g, 1, &t, &one, 0.0);
	assert_float_equal(g.duty_committed, 0.0, 1e-9);
	admit_set_busy(&g, 1, &t, &one, 0.5);
	assert_float_equal(t.duty, 0.5, 1e-12);
	assert_float_equal(g.duty_committed, 0.5, 1e-9);
	admit_release(&g, 1, &t, &one);
	assert_true(g.duty_committed == 0.0);
}

/* ------------------------------------------------------------------------
 * The score.
 */
static uint32_t place_one(struct admit_gpu *g, size_t n, struct admit_task *t)
{
	struct admit_placement pl;

	assert_int_equal(admit_place(g, n, t, &pol, &pl), 0);
	return g[pl.slot[0]].index;
}

static void test_picks_less_busy(void **state)
{
	struct admit_gpu g[2] = { gpu(0, 80), gpu(1, 80) };
	struct admit_task t = task(1, GiB, 1);

	(void)state;
	/* Utilization, both ways round. */
	g[0].util = 0.8;
	g[1].util = 0.2;
	g[0].util_valid = g[1].util_valid = true;
	assert_int_equal(place_one(g, 2, &t), 1);
	g[0].util = 0.2;
	g[1].util = 0.8;
	assert_int_equal(place_one(g, 2, &t), 0);

	/* Predicted busyness of tasks placed a moment ago (NVML has not seen
	 * them yet) counts like utilization. */
	g[0].util = g[1].util = 0.1;
	g[0].ntasks = g[1].ntasks = 1;
	g[0].busy_committed = 0.9;
	g[1].busy_committed = 0.3;
	assert_int_equal(place_one(g, 2, &t), 1);

	/* Memory pressure, at equal load. */
	g[0].busy_committed = g[1].busy_committed = 0.3;
	g[0].mem_committed = 10 * GiB;
	g[1].mem_committed = 50 * GiB;
	assert_int_equal(place_one(g, 2, &t), 0);
	/* Heterogeneous GPUs: the same bytes weigh less on the larger. */
	g[0] = gpu(0, 40);
	g[1] = gpu(1, 141);
	g[0].mem_committed = g[1].mem_committed = 20 * GiB;
	assert_int_equal(place_one(g, 2, &t), 1);

	/* Tasks present, at equal load and memory. */
	g[0] = gpu(0, 80);
	g[1] = gpu(1, 80);
	g[0].util = g[1].util = 0.9;
	g[0].util_valid = g[1].util_valid = true;
	g[0].ntasks = 3;
	g[1].ntasks = 1;
	assert_int_equal(place_one(g, 2, &t), 1);

	/* The score is the documented formula. */
	g[0] = gpu(0, 100);
	g[0].util = 0.4;
	g[0].util_valid = true;
	g[0].mem_committed = 25 * GiB;
	g[0].ntasks = 2;
	g[0].busy_committed = 0.3;
	assert_true(admit_busyness(&g[0], &pol) > 1.0 * 0.4 + 0.5 * 0.25 + 0.1 * 2 - 1e-12);
	assert_true(admit_busyness(&g[0], &pol) < 1.0 * 0.4 + 0.5 * 0.25 + 0.1 * 2 + 1e-12);
	{
		struct admit_placement pl;

		t = task(1, 25 * GiB, 1);
		t.busy = 0.2;
		assert_int_equal(admit_place(g, 1, &t, &pol, &pl), 0);
		assert_true(pl.score > 0.6 + 0.25 + 0.2 - 1e-12);
		assert_true(pl.score < 0.6 + 0.25 + 0.2 + 1e-12);
	}
}

/* Equal GPUs: the lowest index wins, wherever it sits in the array. */
static void test_ties_deterministic(void **state)
{
	static const uint32_t order[][4] = {
		{ 0, 1, 2, 3 }, { 3, 1, 0, 2 }, { 2, 3, 1, 0 }, { 1, 0, 3, 2 },
	};
	struct admit_gpu g[4];
	struct admit_placement pl;
	struct admit_task t = task(1, GiB, 2);
	size_t k, i;

	(void)state;
	for (k = 0; k < 4; k++) {
		for (i = 0; i < 4; i++)
			g[i] = gpu(order[k][i], 80);
		for (int rep = 0; rep < 3; rep++) {
			assert_int_equal(admit_place(g, 4, &t, &pol, &pl), 0);
			assert_int_equal(g[pl.slot[0]].index, 0);
			assert_int_equal(g[pl.slot[1]].index, 1);
		}
	}
	/* Scores that differ only by rounding are ties too. */
	g[0] = gpu(5, 80);
	g[1] = gpu(4, 80);
	g[0].util = 0.3;
	g[1].util = 0.1 + 0.2;	/* 0.30000000000000004 */
	g[0].util_valid = g[1].util_valid = true;
	t.ngpus = 1;
	assert_int_equal(place_one(g, 2, &t), 4);
}

/* ------------------------------------------------------------------------
 * Multi-GPU, and any number of GPUs.
 */
static void test_multi_gpu(void **state)
{
	struct admit_gpu g[4] = { gpu(0, 80), gpu(1, 80), gpu(2, 80), gpu(3, 80) };
	struct admit_placement pl;
	struct admit_task t = task(1, 30 * GiB, 2);

	(void)state;
	for (int i = 0; i < 4; i++) {
		g[i].util_valid = true;
		g[i].util = 0.1 * (4 - i);	/* 0.4 0.3 0.2 0.1 */
	}
	assert_int_equal(admit_place(g, 4, &t, &pol, &pl), 0);
	assert_int_equal(pl.ngpus, 2);
	assert_int_equal(pl.slot[0], 3);	/* best first */
	assert_int_equal(pl.slot[1], 2);
	assert_int_equal(pl.quota, 30 * GiB);

	/* Each of the K GPUs must fit on its own: two are too full. */
	g[3].mem_committed = 60 * GiB;
	g[2].mem_committed = 60 * GiB;
	assert_int_equal(admit_place(g, 4, &t, &pol, &pl), 0);
	assert_int_equal(pl.slot[0], 1);
	assert_int_equal(pl.slot[1], 0);
	t.ngpus = 3;
	assert_int_equal(admit_place(g, 4, &t, &pol, &pl), -EAGAIN);
	t.ngpus = 4;
	assert_int_equal(admit_place(g, 4, &t, &pol, &pl), -EAGAIN);
	/* More GPUs than the node has, or more memory than any GPU has. */
	t.ngpus = 5;
	assert_int_equal(admit_place(g, 4, &t, &pol, &pl), -ENODEV);
	assert_int_equal(admit_check(&t, g, 4, &pol), -ENODEV);
	t.ngpus = 2;
	t.mem = 77 * GiB;
	assert_int_equal(admit_place(g, 4, &t, &pol, &pl), -ENOSPC);
	/* Mixed sizes: only one GPU is large enough for a 2-GPU task. */
	g[0] = gpu(0, 141);
	g[1] = gpu(1, 80);
	t.mem = 100 * GiB;
	assert_int_equal(admit_check(&t, g, 2, &pol), -ENOSPC);
	t.ngpus = 1;
	assert_int_equal(admit_check(&t, g, 2, &pol), 0);
	t.ngpus = 0;
	assert_int_equal(admit_place(g, 2, &t, &pol, &pl), -EINVAL);
	assert_int_equal(admit_place(g, 65, &t, &pol, &pl), -EINVAL);
}

/* A task restricted to some GPUs (CUDA_VISIBLE_DEVICES set before kmux). */
static void test_gpu_mask(void **state)
{
	struct admit_gpu g[3] = { gpu(0, 80), gpu(1, 80), gpu(5, 80) };
	struct admit_task t = task(1, 10 * GiB, 1), q[2];
	struct admit_decision d;
	struct admit_placement pl;

	(void)state;
	g[0].util_valid = g[1].util_valid = g[2].util_valid = true;
	g[0].util = 0.9;
	g[1].util = 0.0;
	g[2].util = 0.5;
	/* Unrestricted: the idle GPU.  Restricted by index, not by slot. */
	assert_int_equal(admit_place(g, 3, &t, &pol, &pl), 0);
	assert_int_equal(pl.slot[0], 1);
	t.gpu_mask = (UINT64_C(1) << 5) | 1;
	assert_int_equal(admit_place(g, 3, &t, &pol, &pl), 0);
	assert_int_equal(pl.slot[0], 2);
	/* Its GPUs full: it waits, even though GPU 1 is free. */
	g[2].mem_committed = 75 * GiB;
	g[0].mem_committed = 75 * GiB;
	assert_int_equal(admit_place(g, 3, &t, &pol, &pl), -EAGAIN);
	/* More GPUs than the mask allows, or a mask of GPUs not here. */
	t.ngpus = 3;
	assert_int_equal(admit_check(&t, g, 3, &pol), -ENODEV);
	t.ngpus = 1;
	t.gpu_mask = UINT64_C(1) << 7;
	assert_int_equal(admit_check(&t, g, 3, &pol), -ENODEV);
	/* Backfill respects it too: the restricted head waits, the next
	 * task goes on GPU 1. */
	q[0] = task(1, 10 * GiB, 1);
	q[0].gpu_mask = 1;
	q[1] = task(2, 10 * GiB, 1);
	q[1].gpu_mask = 2;
	assert_int_equal(admit_next(q, 2, g, 3, &pol, 0, &d), 0);
	assert_int_equal(d.task, 1);
	assert_int_equal(d.place.slot[0], 1);
	assert_true(d.backfilled);
}

static void test_any_number_of_gpus(void **state)
{
	struct admit_gpu g[16];
	struct admit_placement pl;
	struct admit_task t;
	size_t n, i;
	int placed;

	(void)state;
	pol.headroom = 0;
	pol.busy_max = 100;	/* memory is what limits here */
	for (n = 1; n <= 16; n++) {
		for (i = 0; i < n; i++)
			g[i] = gpu((uint32_t)i, 80);
		/* n tasks of one GPU spread one per GPU. */
		t = task(1, 10 * GiB, 1);
		for (i = 0; i < n; i++) {
			assert_int_equal(admit_place(g, n, &t, &pol, &pl), 0);
			admit_commit(g, n, &t, &pl, i + 1, 0);
		}
		for (i = 0; i < n; i++)
			assert_int_equal(g[i].ntasks, 1);
		/* Then fill: 8 per GPU, never beyond capacity. */
		placed = (int)n;
		while (admit_place(g, n, &t, &pol, &pl) == 0) {
			admit_commit(g, n, &t, &pl, 0, 0);
			placed++;
			assert_true(placed <= 8 * (int)n);
		}
		assert_int_equal(placed, 8 * (int)n);
		for (i = 0; i < n; i++)
			assert_true(g[i].mem_committed <= g[i].mem_total);
		/* An n-GPU task on the empty node takes every GPU. */
		for (i = 0; i < n; i++)
			g[i] = gpu((uint32_t)i, 80);
		t = task(2, 80 * GiB, (uint32_t)n);
		assert_int_equal(admit_place(g, n, &t, &pol, &pl), 0);
		{
			uint64_t seen = 0;

			for (i = 0; i < n; i++)
				seen |= UINT64_C(1) << pl.slot[i];
			assert_int_equal(seen, (UINT64_C(1) << n) - 1);
		}
		t.ngpus = (uint32_t)n + 1;
		assert_int_equal(admit_place(g, n, &t, &pol, &pl), -ENODEV);
	}
	/* The protocol's limit: 64 GPUs works, 65 is refused. */
	{
		static struct admit_gpu big[ADMIT_MAX_GPUS];

		for (i = 0; i < ADMIT_MAX_GPUS; i++)
			big[i] = gpu((uint32_t)i, 16);
		t = task(3, GiB, ADMIT_MAX_GPUS);
		assert_int_equal(admit_place(big, ADMIT_MAX_GPUS, &t, &pol, &pl), 0);
		assert_int_equal(pl.ngpus, ADMIT_MAX_GPUS);
	}
}

/* ------------------------------------------------------------------------
 * Task needs.
 */
static void test_learned_vs_guessed(void **state)
{
	struct admit_profile prof = { .peak_mem = 2 * GiB, .mean_busy = 0.35,
				      .runs = 3 };
	struct admit_gpu g = gpu(0, 80), small = gpu(1, 2);
	struct admit_placement pl;
	struct admit_task t;

	(void)state;
	/* Declared wins over anything learned. */
	assert_int_equal(admit_task_init(&t, 1, 1, 5 * GiB, &prof, &pol, 77), 0);
	assert_int_equal(t.mem_source, ADMIT_MEM_DECLARED);
	assert_int_equal(t.mem, 5 * GiB);
	assert_true(t.busy == 0.35);
	assert_int_equal(t.wait_start_us, 77);
	assert_int_equal(admit_need(&t, &g, &pol), 5 * GiB);

	/* Learned: the peak plus 10 %, rounded up to a MiB. */
	assert_int_equal(admit_task_init(&t, 2, 1, 0, &prof, &pol, 0), 0);
	assert_int_equal(t.mem_source, ADMIT_MEM_LEARNED);
	assert_int_equal(t.mem, 2253 * MiB);	/* 2252.8 MiB */
	assert_int_equal(admit_need(&t, &g, &pol), 2253 * MiB);

	/* Guessed: a tenth of the GPU, at least 1 GiB, the default busyness. */
	assert_int_equal(admit_task_init(&t, 3, 1, 0, NULL, &pol, 0), 0);
	assert_int_equal(t.mem_source, ADMIT_MEM_GUESSED);
	assert_true(t.busy == pol.default_busy);
	assert_int_equal(admit_need(&t, &g, &pol), 8 * GiB);
	assert_int_equal(admit_need(&t, &small, &pol), GiB);
	/* A profile without runs is no profile. */
	prof.runs = 0;
	assert_int_equal(admit_task_init(&t, 3, 1, 0, &prof, &pol, 0), 0);
	assert_int_equal(t.mem_source, ADMIT_MEM_GUESSED);
	/* Corrected as it allocates: above the guess, the real need counts. */
	t.mem = 30 * GiB;
	assert_int_equal(admit_need(&t, &g, &pol), 30 * GiB);

	/* Where 5 GiB are left, the learned task fits, the unknown does not. */
	g.mem_committed = 71 * GiB;	/* capacity 76 */
	prof.runs = 3;
	assert_int_equal(admit_task_init(&t, 4, 1, 0, &prof, &pol, 0), 0);
	assert_int_equal(admit_place(&g, 1, &t, &pol, &pl), 0);
	assert_int_equal(admit_task_init(&t, 5, 1, 0, NULL, &pol, 0), 0);
	assert_int_equal(admit_place(&g, 1, &t, &pol, &pl), -EAGAIN);
	/* Its quota is the guess. */
	g.mem_committed = 0;
	assert_int_equal(admit_place(&g, 1, &t, &pol, &pl), 0);
	assert_int_equal(pl.quota, 8 * GiB);

	assert_int_equal(admit_task_init(&t, 6, 0, 0, NULL, &pol, 0), -EINVAL);
	assert_int_equal(admit_task_init(&t, 6, 65, 0, NULL, &pol, 0), -EINVAL);
	/* Learned busyness is clamped to 0..1. */
	prof.mean_busy = 7;
	assert_int_equal(admit_task_init(&t, 7, 1, 0, &prof, &pol, 0), 0);
	assert_true(t.busy == 1.0);
}

/* ------------------------------------------------------------------------
 * Exclusivity, round robin, commit and release, samples.
 */
static void test_exclusive(void **state)
{
	struct admit_gpu g[2] = { gpu(0, 80), gpu(1, 80) };
	struct admit_placement pl, plx;
	struct admit_task t = task(1, GiB, 1), x = task(2, GiB, 1);

	(void)state;
	x.exclusive = true;
	admit_place(g, 2, &t, &pol, &pl);
	admit_commit(g, 2, &t, &pl, 1, 0);
	/* The exclusive task takes the empty GPU even if it scores worse. */
	g[1].util = 0.9;
	g[1].util_valid = true;
	assert_int_equal(admit_place(g, 2, &x, &pol, &plx), 0);
	assert_int_equal(plx.slot[0], 1);
	admit_commit(g, 2, &x, &plx, 2, 0);
	assert_true(g[1].exclusive);
	/* Nothing else joins it; with both GPUs taken an exclusive waits. */
	assert_int_equal(admit_place(g, 2, &t, &pol, &pl), 0);
	assert_int_equal(pl.slot[0], 0);
	assert_int_equal(admit_place(g, 2, &x, &pol, &pl), -EAGAIN);
	admit_release(g, 2, &x, &plx);
	assert_false(g[1].exclusive);
	assert_int_equal(g[1].ntasks, 0);
}

/* Two wait-bound tasks never share a GPU; anything else may join one. */
static void test_wait_bound_place(void **state)
{
	struct admit_gpu g[2] = { gpu(0, 80), gpu(1, 80) };
	struct admit_placement p1, p2, p3, pl;
	struct admit_task w1 = task(1, GiB, 1), w2 = task(2, GiB, 1);
	struct admit_task n1 = task(3, GiB, 1), w3 = task(4, GiB, 1);
	struct admit_task q[2];
	struct admit_decision d;

	(void)state;
	w1.wait_bound = w2.wait_bound = true;
	assert_int_equal(admit_place(g, 2, &w1, &pol, &p1), 0);
	admit_commit(g, 2, &w1, &p1, 1, 0);
	assert_int_equal(g[p1.slot[0]].nwait_bound, 1);
	/* The second goes to the other GPU, even when that one is busier. */
	g[1 - p1.slot[0]].util = 0.9;
	g[1 - p1.slot[0]].util_valid = true;
	assert_int_equal(admit_place(g, 2, &w2, &pol, &p2), 0);
	assert_int_equal(p2.slot[0], 1 - p1.slot[0]);
	admit_commit(g, 2, &w2, &p2, 2, 0);
	/* Both GPUs hold one: a third waits; a task that hardly waits joins. */
	w3.wait_bound = true;
	assert_int_equal(admit_place(g, 2, &w3, &pol, &pl), -EAGAIN);
	assert_int_equal(admit_place(g, 2, &n1, &pol, &p3), 0);
	admit_commit(g, 2, &n1, &p3, 3, 0);
	/* The queue: the blocked wait-bound head reserves the GPU with the
	 * fewest wait-bound tasks; nothing else may be placed there. */
	admit_release(g, 2, &w2, &p2);
	assert_int_equal(g[p2.slot[0]].nwait_bound, 0);
	q[0] = w3;
	assert_int_equal(admit_next(q, 1, g, 2, &pol, 10, &d), 0);
	assert_int_equal(d.place.slot[0], p2.slot[0]);
	/* Turned wait-bound while running: counted once, released once. */
	admit_mark_wait_bound(g, 2, &n1, &p3);
	admit_mark_wait_bound(g, 2, &n1, &p3);
	assert_true(n1.wait_bound);
	assert_int_equal(g[p3.slot[0]].nwait_bound,
			 p3.slot[0] == p1.slot[0] ? 2 : 1);
	admit_release(g, 2, &n1, &p3);
	admit_release(g, 2, &w1, &p1);
	assert_int_equal(g[0].nwait_bound, 0);
	assert_int_equal(g[1].nwait_bound, 0);
	/* A release never wraps the count below 0. */
	admit_release(g, 2, &w1, &p1);
	assert_int_equal(g[p1.slot[0]].nwait_bound, 0);
}

static void test_round_robin(void **state)
{
	struct admit_gpu g[3] = { gpu(0, 80), gpu(1, 80), gpu(2, 80) };
	struct admit_placement pl;
	struct admit_task t = task(1, 10 * GiB, 1);
	static const uint32_t want[] = { 0, 1, 2, 0, 1, 2, 0, 2, 0, 2 };
	uint64_t stamp = 0;

	(void)state;
	pol.placement = ADMIT_PLACE_ROUND_ROBIN;
	/* GPU 0 is far busier: round robin does not care. */
	g[0].util = 1.0;
	g[0].util_valid = true;
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		if (i == 7)	/* GPU 1 fills up (foreign memory) */
			g[1].mem_used = 79 * GiB;
		assert_int_equal(admit_place(g, 3, &t, &pol, &pl), 0);
		assert_int_equal(pl.slot[0], want[i]);
		assert_true(pl.score == 0);
		admit_commit(g, 3, &t, &pl, ++stamp, 0);
	}
}

/*
 * Round robin in the order the daemon applies it: a GPU whose task ended
 * stays behind in the rotation (its stamp is the placement's, not the end's),
 * and a GPU that cannot hold the task is skipped without losing its turn.
 */
static void test_round_robin_rotation(void **state)
{
	struct admit_gpu g[2] = { gpu(0, 16), gpu(1, 16) };
	struct admit_placement pa, pb, pc, pd;
	struct admit_task t = task(1, 2 * GiB, 1), big = task(2, 12 * GiB, 1);
	enum admit_placement_kind k;
	uint64_t stamp = 0;

	(void)state;
	pol.placement = ADMIT_PLACE_ROUND_ROBIN;
	assert_int_equal(admit_place(g, 2, &t, &pol, &pa), 0);
	assert_int_equal(pa.slot[0], 0);
	admit_commit(g, 2, &t, &pa, ++stamp, 0);
	assert_int_equal(admit_place(g, 2, &t, &pol, &pb), 0);
	assert_int_equal(pb.slot[0], 1);
	admit_commit(g, 2, &t, &pb, ++stamp, 0);
	/* The task on GPU 1 ends: busyness would now pick the empty GPU 1,
	 * round robin goes back to GPU 0, placed longest ago. */
	admit_release(g, 2, &t, &pb);
	assert_int_equal(admit_place(g, 2, &t, &pol, &pc), 0);
	assert_int_equal(pc.slot[0], 0);
	pol.placement = ADMIT_PLACE_BUSYNESS;
	assert_int_equal(admit_place(g, 2, &t, &pol, &pd), 0);
	assert_int_equal(pd.slot[0], 1);
	pol.placement = ADMIT_PLACE_ROUND_ROBIN;
	admit_commit(g, 2, &t, &pc, ++stamp, 0);
	/* GPU 1 is next (placed at 2, GPU 0 at 3): a 12 GiB task goes there. */
	assert_int_equal(admit_place(g, 2, &big, &pol, &pd), 0);
	assert_int_equal(pd.slot[0], 1);
	admit_commit(g, 2, &big, &pd, ++stamp, 0);
	/* Another 12 GiB fits on neither (4 + 12 and 12 + 12 > 15.2 GiB). */
	assert_int_equal(admit_place(g, 2, &big, &pol, &pd), -EAGAIN);
	/* A small task still goes to GPU 0, whose turn it is. */
	assert_int_equal(admit_place(g, 2, &t, &pol, &pd), 0);
	assert_int_equal(pd.slot[0], 0);

	/* The names `kmux daemon --placement` takes, and nothing else. */
	assert_int_equal(admit_placement_parse("busyness", &k), 0);
	assert_int_equal(k, ADMIT_PLACE_BUSYNESS);
	assert_int_equal(admit_placement_parse("roundrobin", &k), 0);
	assert_int_equal(k, ADMIT_PLACE_ROUND_ROBIN);
	assert_int_equal(admit_placement_parse("round-robin", &k), -EINVAL);
	assert_int_equal(admit_placement_parse("", &k), -EINVAL);
	assert_int_equal(admit_placement_parse("Busyness", &k), -EINVAL);
	assert_int_equal(admit_placement_parse(NULL, &k), -EINVAL);
	assert_string_equal(admit_placement_name(ADMIT_PLACE_BUSYNESS), "busyness");
	assert_string_equal(admit_placement_name(ADMIT_PLACE_ROUND_ROBIN),
			    "roundrobin");
	assert_string_equal(admit_placement_name((enum admit_placement_kind)9), "?");
}

static void test_commit_release(void **state)
{
	struct admit_gpu g[3] = { gpu(0, 80), gpu(1, 80), gpu(2, 80) };
	struct admit_placement pl;
	struct admit_task t = task(1, 7 * GiB, 2);

	(void)state;
	t.busy = 0.3;
	assert_int_equal(admit_place(g, 3, &t, &pol, &pl), 0);
	admit_commit(g, 3, &t, &pl, 42, 0);
	for (uint32_t i = 0; i < 2; i++) {
		const struct admit_gpu *x = &g[pl.slot[i]];

		assert_int_equal(x->mem_committed, 7 * GiB);
		assert_int_equal(x->ntasks, 1);
		assert_true(x->busy_committed == 0.3);
		assert_int_equal(x->last_placed, 42);
	}
	admit_release(g, 3, &t, &pl);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(g[i].mem_committed, 0);
		assert_int_equal(g[i].ntasks, 0);
		assert_true(g[i].busy_committed == 0);
	}
	/* Releasing again saturates rather than wrapping. */
	admit_release(g, 3, &t, &pl);
	assert_int_equal(g[pl.slot[0]].mem_committed, 0);
	assert_int_equal(g[pl.slot[0]].ntasks, 0);
}

/* An unknown task outgrows its guess: all its GPUs grow, or none. */
static void test_grow(void **state)
{
	struct admit_gpu g[2] = { gpu(0, 80), gpu(1, 80) };
	struct admit_task t = task(1, 10 * GiB, 2), o = task(2, 60 * GiB, 1);
	struct admit_placement pl, plo;
	uint64_t cap = admit_capacity(&g[0], &pol);

	(void)state;
	assert_int_equal(admit_place(g, 2, &t, &pol, &pl), 0);
	admit_commit(g, 2, &t, &pl, 1, 0);
	assert_int_equal(admit_grow(g, 2, &pl, 20 * GiB, &pol), 0);
	assert_int_equal(pl.quota, 20 * GiB);
	assert_int_equal(g[0].mem_committed, 20 * GiB);
	assert_int_equal(g[1].mem_committed, 20 * GiB);
	/* Not a growth. */
	assert_int_equal(admit_grow(g, 2, &pl, 20 * GiB, &pol), -EINVAL);
	assert_int_equal(admit_grow(g, 2, &pl, 1 * GiB, &pol), -EINVAL);
	/* Another task fills most of GPU 1: no room there, nothing moves. */
	o.mem = cap - 20 * GiB - 5 * GiB;
	plo = (struct admit_placement){ .ngpus = 1, .slot = { 1 },
					.quota = o.mem };
	admit_commit(g, 2, &o, &plo, 2, 0);
	assert_int_equal(admit_grow(g, 2, &pl, 26 * GiB, &pol), -ENOSPC);
	assert_int_equal(pl.quota, 20 * GiB);
	assert_int_equal(g[0].mem_committed, 20 * GiB);
	/* Exactly the room left. */
	assert_int_equal(admit_grow(g, 2, &pl, 25 * GiB, &pol), 0);
	assert_int_equal(g[1].mem_committed, cap);
	/* Releasing gives back the grown quota. */
	admit_release(g, 2, &t, &pl);
	assert_int_equal(g[0].mem_committed, 0);
	assert_int_equal(g[1].mem_committed, o.mem);
}

/* An evict budget's growth: what every GPU of the task can commit now. */
static void test_grow_room(void **state)
{
	struct admit_gpu g[2] = { gpu(0, 80), gpu(1, 80) };
	struct admit_task t = task(1, 10 * GiB, 2), o = task(2, 30 * GiB, 1);
	struct admit_placement pl = { .ngpus = 2, .slot = { 0, 1 },
				      .quota = t.mem };
	struct admit_placement plo = { .ngpus = 1, .slot = { 1 },
				       .quota = o.mem };
	uint64_t cap = admit_capacity(&g[0], &pol);

	(void)state;
	admit_commit(g, 2, &t, &pl, 1, 0);
	assert_int_equal(admit_grow_room(g, 2, &pl, &pol), cap - 10 * GiB);
	/* The fuller GPU decides. */
	admit_commit(g, 2, &o, &plo, 2, 0);
	assert_int_equal(admit_grow_room(g, 2, &pl, &pol), cap - 40 * GiB);
	assert_int_equal(admit_grow(g, 2, &pl, 10 * GiB +
				    admit_grow_room(g, 2, &pl, &pol), &pol), 0);
	assert_int_equal(admit_grow_room(g, 2, &pl, &pol), 0);
	assert_int_equal(g[1].mem_committed, cap);
	/* Room again, but a task there waits to grow: none for us. */
	admit_release(g, 2, &o, &plo);
	assert_int_equal(admit_grow_room(g, 2, &pl, &pol), 30 * GiB);
	g[1].grow_waiting = 1;
	assert_int_equal(admit_grow_room(g, 2, &pl, &pol), 0);
	/* A suspended waiter gave its room up for its neighbours (load
	 * control): it does not keep it from them; a second, quota-mode
	 * waiter does. */
	g[1].suspended = 1;
	assert_int_equal(admit_grow_room(g, 2, &pl, &pol), 30 * GiB);
	g[1].grow_waiting = 2;
	assert_int_equal(admit_grow_room(g, 2, &pl, &pol), 0);
	g[1].grow_waiting = 0;
	g[1].suspended = 0;
	/* Bad placements have no room. */
	pl.slot[1] = 7;
	assert_int_equal(admit_grow_room(g, 2, &pl, &pol), 0);
	pl.ngpus = 0;
	assert_int_equal(admit_grow_room(g, 2, &pl, &pol), 0);
}

/*
 * A growth that does not fit now may wait while some task on each of its
 * GPUs does not itself wait (it will end and free its memory); when every
 * task there waits, or the growth exceeds the GPU, it is refused.  While a
 * task waits, its GPU takes no new task: the room that frees is its own.
 */
static void test_grow_wait(void **state)
{
	struct admit_gpu g[2] = { gpu(0, 100), gpu(1, 100) };
	struct admit_task a = task(1, 10 * GiB, 1), b = task(2, 60 * GiB, 1);
	struct admit_task small = task(3, 1 * GiB, 1), two = task(4, GiB, 2);
	struct admit_placement pa, pb, pl;
	uint64_t cap = admit_capacity(&g[0], &pol);	/* 95 GiB */

	(void)state;
	pa = (struct admit_placement){ .ngpus = 1, .slot = { 0 },
				       .quota = a.mem };
	pb = (struct admit_placement){ .ngpus = 1, .slot = { 0 },
				       .quota = b.mem };
	admit_commit(g, 2, &a, &pa, 1, 0);
	admit_commit(g, 2, &b, &pb, 2, 0);
	/* a wants 40 GiB: 25 are free, so not now. */
	assert_int_equal(admit_grow(g, 2, &pa, 40 * GiB, &pol), -ENOSPC);
	g[0].grow_waiting = 1;		/* the daemon counts it */
	/* b runs on (not waiting): a may wait for it. */
	assert_true(admit_grow_may_wait(g, 2, &pa, 40 * GiB, &pol));
	/* Never more than the GPU can hold. */
	assert_false(admit_grow_may_wait(g, 2, &pa, cap + 1, &pol));
	assert_true(admit_grow_may_wait(g, 2, &pa, cap, &pol));
	/* While a waits, GPU 0 takes no new task, even one that fits... */
	assert_int_equal(admit_place(g, 1, &small, &pol, &pl), -EAGAIN);
	/* ... round robin included; GPU 1 still does. */
	pol.placement = ADMIT_PLACE_ROUND_ROBIN;
	assert_int_equal(admit_place(g, 1, &small, &pol, &pl), -EAGAIN);
	pol.placement = ADMIT_PLACE_BUSYNESS;
	assert_int_equal(admit_place(g, 2, &small, &pol, &pl), 0);
	assert_int_equal(pl.slot[0], 1);
	/* A two-GPU task cannot start while one of them is held back. */
	assert_int_equal(admit_place(g, 2, &two, &pol, &pl), -EAGAIN);
	/* b waits too: nothing on GPU 0 will free memory, a deadlock. */
	g[0].grow_waiting = 2;
	assert_false(admit_grow_may_wait(g, 2, &pa, 40 * GiB, &pol));
	assert_false(admit_grow_may_wait(g, 2, &pb, 70 * GiB, &pol));
	/* b is refused (the last to ask): a may wait for b to fail. */
	g[0].grow_waiting = 1;
	assert_true(admit_grow_may_wait(g, 2, &pa, 40 * GiB, &pol));
	/* b ends: the room is a's. */
	admit_release(g, 2, &b, &pb);
	assert_int_equal(admit_grow(g, 2, &pa, 40 * GiB, &pol), 0);
	g[0].grow_waiting = 0;
	assert_int_equal(admit_place(g, 1, &small, &pol, &pl), 0);
	/* Bad placements never wait. */
	pl = (struct admit_placement){ .ngpus = 0 };
	assert_false(admit_grow_may_wait(g, 2, &pl, GiB, &pol));
	pl = (struct admit_placement){ .ngpus = 1, .slot = { 5 } };
	assert_false(admit_grow_may_wait(g, 2, &pl, GiB, &pol));
}

/*
 * Evict mode's learned working set (bench/results/memory.md run 3): a
 * task whose profile thrashed is admitted at max(its budget, the working
 * set), capped at a GPU's capacity; one that never thrashed, or a budget
 * already above the working set, is unchanged.
 */
static void test_evict_working_set(void **state)
{
	struct admit_gpu g[1] = { gpu(0, 100) };
	struct admit_profile thr = { .peak_mem = 40 * GiB, .runs = 2,
				     .mean_busy = 0.1,
				     .thrash_mem = 30 * GiB - 5,
				     .thrash_runs = 1 };
	struct admit_profile calm = thr;
	struct admit_task t, u, w;
	struct admit_placement pl;
	uint64_t cap = admit_capacity(&g[0], &pol);	/* 95 GiB */

	(void)state;
	calm.thrash_mem = 0;
	calm.thrash_runs = 0;
	/* Declared 10 GiB, thrashed without 30 GiB - 5: needs 30 GiB, the
	 * working set rounded up to a MiB. */
	assert_int_equal(admit_task_init(&t, 1, 1, 10 * GiB, &thr, &pol, 0), 0);
	assert_int_equal(t.evict_ws, 0);	/* not evict mode: nothing */
	assert_int_equal(admit_need(&t, &g[0], &pol), 10 * GiB);
	assert_true(admit_task_evict(&t, &thr));
	assert_int_equal(t.evict_ws, 30 * GiB);
	assert_int_equal(t.mem, 10 * GiB);	/* the declared need stays */
	assert_int_equal(admit_need(&t, &g[0], &pol), 30 * GiB);
	/* Placed and granted at the working set, not the budget. */
	assert_int_equal(admit_place(g, 1, &t, &pol, &pl), 0);
	assert_int_equal(pl.quota, 30 * GiB);
	/* Room for the budget but not the working set: it waits. */
	g[0].mem_committed = cap - 20 * GiB;
	assert_int_equal(admit_place(g, 1, &t, &pol, &pl), -EAGAIN);
	g[0].mem_committed = cap - 30 * GiB;
	assert_int_equal(admit_place(g, 1, &t, &pol, &pl), 0);
	g[0].mem_committed = 0;
	/* A budget above the working set is what it was. */
	assert_int_equal(admit_task_init(&u, 2, 1, 50 * GiB, &thr, &pol, 0), 0);
	assert_true(admit_task_evict(&u, &thr));
	assert_int_equal(admit_need(&u, &g[0], &pol), 50 * GiB);
	assert_int_equal(admit_place(g, 1, &u, &pol, &pl), 0);
	assert_int_equal(pl.quota, 50 * GiB);
	/* A profile that never thrashed changes nothing. */
	assert_int_equal(admit_task_init(&w, 3, 1, 10 * GiB, &calm, &pol, 0), 0);
	assert_false(admit_task_evict(&w, &calm));
	assert_int_equal(w.evict_ws, 0);
	assert_int_equal(admit_need(&w, &g[0], &pol), 10 * GiB);
	calm.thrash_runs = 1;	/* runs without a size teach nothing */
	assert_false(admit_task_evict(&w, &calm));
	calm.thrash_runs = 0;
	calm.thrash_mem = 30 * GiB;	/* nor a size without runs */
	assert_false(admit_task_evict(&w, &calm));
	assert_false(admit_task_evict(&w, NULL));
	/* More than the GPU holds: the capacity, so it still runs. */
	thr.thrash_mem = 200 * GiB;
	assert_true(admit_task_evict(&t, &thr));
	assert_int_equal(admit_need(&t, &g[0], &pol), cap);
	assert_int_equal(admit_check(&t, g, 1, &pol), 0);
	assert_int_equal(admit_place(g, 1, &t, &pol, &pl), 0);
	assert_int_equal(pl.quota, cap);
	/* A guessed need takes the larger of the guess and the set. */
	assert_int_equal(admit_task_init(&w, 4, 1, 0, NULL, &pol, 0), 0);
	thr.thrash_mem = 2 * GiB;
	assert_true(admit_task_evict(&w, &thr));
	assert_int_equal(admit_need(&w, &g[0], &pol), 10 * GiB);	/* guess */
	thr.thrash_mem = 20 * GiB;
	assert_true(admit_task_evict(&w, &thr));
	assert_int_equal(admit_need(&w, &g[0], &pol), 20 * GiB);
}

/*
 * A thrashing evict task refused its growth holds its GPUs: no new task
 * starts there (round robin neither), other GPUs still take them; it
 * holds only when the working set could ever be committed there.
 */
static void test_thrash_hold(void **state)
{
	struct admit_gpu g[2] = { gpu(0, 100), gpu(1, 100) };
	struct admit_task a = task(1, 10 * GiB, 1), small = task(3, GiB, 1);
	struct admit_task two = task(4, GiB, 2);
	struct admit_placement pa, pl;
	uint64_t cap = admit_capacity(&g[0], &pol);

	(void)state;
	pa = (struct admit_placement){ .ngpus = 1, .slot = { 0 },
				       .quota = a.mem };
	admit_commit(g, 2, &a, &pa, 1, 0);
	assert_true(admit_thrash_hold(g, 2, &pa, 40 * GiB, &pol));
	assert_true(admit_thrash_hold(g, 2, &pa, cap, &pol));
	assert_false(admit_thrash_hold(g, 2, &pa, cap + 1, &pol));
	assert_false(admit_thrash_hold(g, 2, &pa, a.mem, &pol));	/* has it */
	pl = (struct admit_placement){ .ngpus = 1, .slot = { 5 }, .quota = 1 };
	assert_false(admit_thrash_hold(g, 2, &pl, GiB, &pol));
	pl = (struct admit_placement){ .ngpus = 0 };
	assert_false(admit_thrash_hold(g, 2, &pl, GiB, &pol));
	/* Held: GPU 0 takes nothing, even what fits. */
	assert_int_equal(admit_place(g, 1, &small, &pol, &pl), 0);
	g[0].thrash_hold = 1;
	assert_int_equal(admit_place(g, 1, &small, &pol, &pl), -EAGAIN);
	pol.placement = ADMIT_PLACE_ROUND_ROBIN;
	assert_int_equal(admit_place(g, 1, &small, &pol, &pl), -EAGAIN);
	pol.placement = ADMIT_PLACE_BUSYNESS;
	assert_int_equal(admit_place(g, 2, &small, &pol, &pl), 0);
	assert_int_equal(pl.slot[0], 1);
	assert_int_equal(admit_place(g, 2, &two, &pol, &pl), -EAGAIN);
	/* The hold is not a growth wait: the holder's own room is there. */
	assert_int_equal(admit_grow_room(g, 2, &pa, &pol), cap - 10 * GiB);
	g[0].thrash_hold = 0;
	assert_int_equal(admit_place(g, 2, &two, &pol, &pl), 0);
}

static void test_util_sample(void **state)
{
	struct admit_gpu g = gpu(0, 80);

	(void)state;
	admit_gpu_sample(&g, 0.8, 5 * GiB, 1.0, &pol);
	assert_true(g.util_valid);
	assert_true(g.util == 0.8);	/* first sample as is */
	assert_int_equal(g.mem_used, 5 * GiB);
	/* tau 10 s, dt 10 s: halfway to the new sample. */
	admit_gpu_sample(&g, 0.0, 0, 10.0, &pol);
	assert_true(g.util > 0.4 - 1e-12 && g.util < 0.4 + 1e-12);
	/* A short dt moves it a little; dt 0 not at all; out of range clamps. */
	admit_gpu_sample(&g, 1.0, 0, 1.0, &pol);
	assert_true(g.util > 0.45 && g.util < 0.46);	/* 0.4 + 0.6/11 */
	double u = g.util;
	admit_gpu_sample(&g, 1.0, 0, 0.0, &pol);
	assert_true(g.util == u);
	for (int i = 0; i < 200; i++)
		admit_gpu_sample(&g, 7.0, 0, 1.0, &pol);
	assert_true(g.util > 0.999 && g.util <= 1.0);
	admit_gpu_sample(&g, NAN, 0, 1000.0, &pol);
	assert_true(g.util >= 0.0 && g.util < 0.01);
}

/* ------------------------------------------------------------------------
 * The queue.
 */
static void test_fifo_and_backfill(void **state)
{
	struct admit_gpu g = gpu(0, 80);
	struct admit_task q[3] = { 0 };
	struct admit_decision d;

	(void)state;
	pol.headroom = 0;
	assert_int_equal(admit_next(q, 0, &g, 1, &pol, 0, &d), -EAGAIN);
	/* Both fit: FIFO, the first queued goes first. */
	q[0] = task(1, 10 * GiB, 1);
	q[1] = task(2, 10 * GiB, 1);
	q[0].wait_start_us = 5;
	q[1].wait_start_us = 3;
	assert_int_equal(admit_next(q, 2, &g, 1, &pol, 10, &d), 0);
	assert_int_equal(d.task, 1);
	assert_false(d.backfilled);
	/* Same time: queue order. */
	q[1].wait_start_us = 5;
	assert_int_equal(admit_next(q, 2, &g, 1, &pol, 10, &d), 0);
	assert_int_equal(d.task, 0);

	/* The head does not fit: a smaller task behind it starts. */
	g.mem_committed = 50 * GiB;
	q[0] = task(1, 40 * GiB, 1);
	q[1] = task(2, 35 * GiB, 1);
	q[2] = task(3, 20 * GiB, 1);
	for (int i = 0; i < 3; i++)
		q[i].wait_start_us = (uint64_t)i;
	assert_int_equal(admit_next(q, 3, &g, 1, &pol, 10, &d), 0);
	assert_int_equal(d.task, 2);
	assert_true(d.backfilled);
	assert_int_equal(d.place.quota, 20 * GiB);
	/* Without backfill, nothing. */
	pol.backfill = false;
	assert_int_equal(admit_next(q, 3, &g, 1, &pol, 10, &d), -EAGAIN);
	pol.backfill = true;
	/* Nothing fits at all. */
	g.mem_committed = 79 * GiB;
	assert_int_equal(admit_next(q, 3, &g, 1, &pol, 10, &d), -EAGAIN);
}

static void test_never_fits_reported(void **state)
{
	struct admit_gpu g[2] = { gpu(0, 80), gpu(1, 80) };
	struct admit_task q[3] = { task(1, GiB, 1), task(2, 90 * GiB, 1),
				   task(3, GiB, 3) };
	struct admit_decision d;

	(void)state;
	assert_int_equal(admit_next(q, 3, g, 2, &pol, 0, &d), -ENOSPC);
	assert_int_equal(d.task, 1);
	assert_int_equal(admit_next(q + 2, 1, g, 2, &pol, 0, &d), -ENODEV);
	assert_int_equal(d.task, 0);
	assert_int_equal(admit_next(q, 1, g, 2, &pol, 0, &d), 0);
	assert_int_equal(admit_next(q, 1, g, 65, &pol, 0, &d), -EINVAL);
	assert_int_equal(admit_next(NULL, 1, g, 2, &pol, 0, &d), -EINVAL);
}

/* Once the head has waited the bound, its GPUs take no backfill. */
static void test_backfill_bound_reserves(void **state)
{
	struct admit_gpu g[2] = { gpu(0, 80), gpu(1, 80) };
	struct admit_task q[2];
	struct admit_decision d;
	uint64_t bound = pol.backfill_bound_us;

	(void)state;
	pol.headroom = 0;
	g[0].mem_committed = 50 * GiB;	/* shortfall 10 for the head */
	g[1].mem_committed = 70 * GiB;	/* shortfall 30 */
	g[0].ntasks = g[1].ntasks = 1;
	q[0] = task(1, 40 * GiB, 1);
	q[1] = task(2, 5 * GiB, 1);
	q[0].wait_start_us = 0;
	q[1].wait_start_us = 1;

	/* Before the bound: backfill anywhere, here the emptier GPU 0. */
	assert_int_equal(admit_next(q, 2, g, 2, &pol, bound - 1, &d), 0);
	assert_int_equal(d.task, 1);
	assert_int_equal(d.place.slot[0], 0);
	/* After: GPU 0, closest to fitting the head, is reserved. */
	assert_int_equal(admit_next(q, 2, g, 2, &pol, bound, &d), 0);
	assert_int_equal(d.task, 1);
	assert_int_equal(d.place.slot[0], 1);
	/* With one GPU there is nowhere to backfill. */
	assert_int_equal(admit_next(q, 2, g, 1, &pol, bound, &d), -EAGAIN);
	/* UINT64_MAX turns the bound off. */
	pol.backfill_bound_us = UINT64_MAX;
	assert_int_equal(admit_next(q, 2, g, 1, &pol, UINT64_MAX, &d), 0);
	assert_int_equal(d.task, 1);
}

/*
 * A discrete-time simulation, 1 s steps: tasks arrive, admit_next() starts
 * what it can, tasks end after their duration and release their GPU.
 */
struct sim_task {
	struct admit_task t;
	uint64_t arrive, dur;	/* seconds */
	int64_t start;		/* -1: not yet */
	struct admit_placement pl;
	bool done;
};

struct sim {
	struct admit_gpu g[4];
	size_t ngpus;
	struct sim_task *tasks;
	size_t ntasks;
	uint64_t stamp;
};

static void sim_run(struct sim *s, uint64_t horizon)
{
	struct admit_task *q = calloc(s->ntasks, sizeof(*q));
	size_t *qi = calloc(s->ntasks, sizeof(*qi));
	uint64_t now;

	assert_non_null(q);
	assert_non_null(qi);
	for (now = 0; now < horizon; now++) {
		size_t i, nq;
		struct admit_decision d;

		for (i = 0; i < s->ntasks; i++) {
			struct sim_task *x = &s->tasks[i];

			if (x->start >= 0 && !x->done &&
			    (uint64_t)x->start + x->dur <= now) {
				admit_release(s->g, s->ngpus, &x->t, &x->pl);
				x->done = true;
			}
		}
		for (;;) {
			nq = 0;
			for (i = 0; i < s->ntasks; i++) {
				if (s->tasks[i].start < 0 && s->tasks[i].arrive <= now) {
					q[nq] = s->tasks[i].t;
					q[nq].wait_start_us = s->tasks[i].arrive * SEC;
					qi[nq++] = i;
				}
			}
			if (admit_next(q, nq, s->g, s->ngpus, &pol, now * SEC, &d) != 0)
				break;
			struct sim_task *x = &s->tasks[qi[d.task]];

			x->start = (int64_t)now;
			x->pl = d.place;
			admit_commit(s->g, s->ngpus, &x->t, &x->pl, ++s->stamp, 0);
			/* Memory is never overcommitted. */
			for (i = 0; i < s->ngpus; i++)
				assert_true(s->g[i].mem_committed <= s->g[i].mem_total);
		}
	}
	free(q);
	free(qi);
}

/*
 * One 80 GiB GPU.  A 60 GiB task arrives at t=5 behind a stream of 20 GiB
 * tasks (one every 4 s, 10 s each: two or three always running, 40-60 GiB).
 * Backfill alone never leaves it 60 GiB; with the bound it starts once the
 * small tasks already running have ended.
 */
static int64_t starvation_run(uint64_t bound_s)
{
	struct sim s = { .ngpus = 1 };
	size_t n = 200, i;
	int64_t start;

	pol.headroom = 0;
	pol.busy_max = 100;
	pol.age_us = UINT64_MAX;	/* isolate the backfill bound */
	pol.backfill_bound_us = bound_s == UINT64_MAX ? UINT64_MAX : bound_s * SEC;
	s.g[0] = gpu(0, 80);
	s.tasks = calloc(n, sizeof(*s.tasks));
	assert_non_null(s.tasks);
	s.ntasks = n;
	s.tasks[0].t = task(1000, 60 * GiB, 1);
	s.tasks[0].arrive = 5;	/* two small tasks (40 GiB) running */
	s.tasks[0].dur = 10;
	for (i = 1; i < n; i++) {
		s.tasks[i].t = task(i, 20 * GiB, 1);
		s.tasks[i].arrive = (i - 1) * 4;
		s.tasks[i].dur = 10;
	}
	for (i = 0; i < n; i++)
		s.tasks[i].start = -1;
	sim_run(&s, 4 * n + 100);
	start = s.tasks[0].start;
	/* Every small task still ran eventually. */
	for (i = 1; i < n; i++)
		assert_true(s.tasks[i].start >= 0);
	free(s.tasks);
	return start;
}

static void test_backfill_bound_prevents_starvation(void **state)
{
	int64_t start;

	(void)state;
	/* Control: without the bound the big task waits for the stream to
	 * dry up (the last small task arrives at 796 s). */
	start = starvation_run(UINT64_MAX);
	assert_true(start > 790);
	/* With a 30 s bound: at most 30 s + one small task's 10 s. */
	start = starvation_run(30);
	assert_true(start >= 0);
	assert_true(start <= 5 + 30 + 10);
	/* A bound of 0: reserved at once, like strict FIFO for the head. */
	start = starvation_run(0);
	assert_true(start <= 5 + 10);
}

/*
 * Priorities: a stream of high-priority tasks would keep a low-priority one
 * out forever (here they occupy the only GPU back to back); aging puts it
 * first after age_us.
 */
static int64_t priority_run(uint64_t age_s)
{
	struct sim s = { .ngpus = 1 };
	size_t n = 100, i;
	int64_t start;

	pol.headroom = 0;
	pol.busy_max = 100;
	pol.age_us = age_s == UINT64_MAX ? UINT64_MAX : age_s * SEC;
	s.g[0] = gpu(0, 80);
	s.tasks = calloc(n, sizeof(*s.tasks));
	assert_non_null(s.tasks);
	s.ntasks = n;
	s.tasks[0].t = task(1000, 50 * GiB, 1);
	s.tasks[0].t.prio = -10;
	s.tasks[0].arrive = 0;
	s.tasks[0].dur = 5;
	for (i = 1; i < n; i++) {
		s.tasks[i].t = task(i, 50 * GiB, 1);
		s.tasks[i].t.prio = 10;
		s.tasks[i].arrive = 0;	/* all queued at once */
		s.tasks[i].dur = 5;
	}
	for (i = 0; i < n; i++)
		s.tasks[i].start = -1;
	sim_run(&s, 5 * n + 10);
	start = s.tasks[0].start;
	free(s.tasks);
	return start;
}

static void test_aging_beats_priority(void **state)
{
	int64_t start;

	(void)state;
	start = priority_run(UINT64_MAX);
	assert_int_equal(start, 5 * 99);	/* last */
	start = priority_run(60);
	assert_true(start >= 60 && start <= 60 + 5);
}

/* ------------------------------------------------------------------------
 * Random states against a brute-force reading of the rules.
 */
static bool brute_fits(const struct admit_gpu *g, const struct admit_task *t)
{
	uint64_t need = admit_need(t, g, &pol), cap = admit_capacity(g, &pol);
	uint64_t occ = g->mem_committed > g->mem_used ? g->mem_committed : g->mem_used;
	double ld = g->util_valid ? g->util : 0;

	if (g->duty_committed > ld)
		ld = g->duty_committed;
	if (occ + need > cap || occ > cap)
		return false;
	if (g->grow_waiting > 0)	/* its room goes to a waiting growth */
		return false;
	if (g->exclusive || (t->exclusive && g->ntasks > 0))
		return false;
	/* Both placements share the busyness limit, on the duty. */
	if (g->ntasks > 0 && ld + t->duty > pol.busy_max + 1e-9)
		return false;
	return true;
}

/* Pressure: memory in use over capacity, or keeping a head out. */
static void test_mem_short(void **state)
{
	struct admit_gpu g = gpu(0, 20);	/* capacity 19 GiB */
	struct admit_task t = task(1, 4 * GiB, 1), two = task(2, 4 * GiB, 2);

	(void)state;
	assert_int_equal(admit_capacity(&g, &pol), 19 * GiB);
	assert_true(admit_mem_short(&g, NULL, &pol) == 0);
	g.mem_used = 21 * GiB;
	assert_true(admit_mem_short(&g, NULL, &pol) == 2 * GiB);
	/* The head fits by commitments (8 GiB), not by use: 2 + 4 more. */
	g.mem_committed = 8 * GiB;
	assert_true(admit_mem_short(&g, &t, &pol) == 6 * GiB);
	g.mem_used = 17 * GiB;
	assert_true(admit_mem_short(&g, &t, &pol) == 2 * GiB);
	g.mem_used = 15 * GiB;
	assert_true(admit_mem_short(&g, &t, &pol) == 0);
	/* Commitments leave no room: evicting cannot let it in. */
	g.mem_used = 17 * GiB;
	g.mem_committed = 16 * GiB;
	assert_true(admit_mem_short(&g, &t, &pol) == 0);
	/* Only one-GPU heads, on GPUs they may use. */
	g.mem_committed = 8 * GiB;
	assert_true(admit_mem_short(&g, &two, &pol) == 0);
	t.gpu_mask = 0x2;
	assert_true(admit_mem_short(&g, &t, &pol) == 0);
	/* No overflow near the top. */
	g.mem_used = UINT64_MAX;
	t.gpu_mask = 0;
	assert_true(admit_mem_short(&g, &t, &pol) == UINT64_MAX - 15 * GiB);
}

/* Commitments keeping a head out; giving budget back lowers them. */
static void test_commit_short(void **state)
{
	struct admit_gpu g[1] = { gpu(0, 20) };	/* capacity 19 GiB */
	struct admit_task t = task(1, 4 * GiB, 1), two = task(2, 4 * GiB, 2);
	struct admit_placement pl = { .ngpus = 1, .quota = 8 * GiB };

	(void)state;
	assert_true(admit_commit_short(&g[0], NULL, &pol) == 0);
	g[0].mem_committed = 15 * GiB;
	g[0].ntasks = 2;
	assert_true(admit_commit_short(&g[0], &t, &pol) == 0);	/* fits */
	g[0].mem_committed = 16 * GiB;
	assert_true(admit_commit_short(&g[0], &t, &pol) == 1 * GiB);
	g[0].mem_committed = 20 * GiB;		/* over capacity */
	assert_true(admit_commit_short(&g[0], &t, &pol) == 5 * GiB);
	/* Never fits, several GPUs, not allowed, exclusive: nothing. */
	t.mem = 20 * GiB;
	assert_true(admit_commit_short(&g[0], &t, &pol) == 0);
	t.mem = 4 * GiB;
	assert_true(admit_commit_short(&g[0], &two, &pol) == 0);
	t.gpu_mask = 0x2;
	assert_true(admit_commit_short(&g[0], &t, &pol) == 0);
	t.gpu_mask = 0;
	g[0].exclusive = true;
	assert_true(admit_commit_short(&g[0], &t, &pol) == 0);
	g[0].exclusive = false;
	/* A budget given back lowers the commitment, never raises it. */
	g[0].mem_committed = 16 * GiB;
	assert_int_equal(admit_shrink(g, 1, &pl, 8 * GiB), -EINVAL);
	assert_int_equal(admit_shrink(g, 1, &pl, 0), -EINVAL);
	pl.slot[0] = 1;
	assert_int_equal(admit_shrink(g, 1, &pl, 5 * GiB), -EINVAL);
	assert_true(g[0].mem_committed == 16 * GiB);
	pl.slot[0] = 0;
	assert_int_equal(admit_shrink(g, 1, &pl, 5 * GiB), 0);
	assert_true(pl.quota == 5 * GiB && g[0].mem_committed == 13 * GiB);
	assert_true(admit_commit_short(&g[0], &t, &pol) == 0);
}

static void test_random_states(void **state)
{
	struct admit_gpu g[16];
	struct admit_placement pl;
	struct admit_task t;
	int iter;

	(void)state;
	for (iter = 0; iter < 20000; iter++) {
		size_t n = 1 + rnd() % 16, i, nfit = 0;
		int rc;

		pol.placement = rnd() % 4 ? ADMIT_PLACE_BUSYNESS :
					    ADMIT_PLACE_ROUND_ROBIN;
		/* Distinct indices: the first n of a shuffled 0..63. */
		uint32_t perm[ADMIT_MAX_GPUS];
		for (i = 0; i < ADMIT_MAX_GPUS; i++)
			perm[i] = (uint32_t)i;
		for (i = ADMIT_MAX_GPUS - 1; i > 0; i--) {
			size_t j = rnd() % (i + 1);
			uint32_t x = perm[i];

			perm[i] = perm[j];
			perm[j] = x;
		}
		for (i = 0; i < n; i++) {
			g[i] = gpu(perm[i], 16 + rnd() % 128);
			g[i].mem_committed = rnd() % (g[i].mem_total + 1);
			g[i].mem_used = rnd() % (g[i].mem_total + 1);
			g[i].util_valid = rnd() % 2;
			g[i].util = (double)(rnd() % 1001) / 1000;
			g[i].ntasks = (uint32_t)(rnd() % 4);
			g[i].grow_waiting = g[i].ntasks && rnd() % 6 == 0;
			g[i].busy_committed = g[i].ntasks * (double)(rnd() % 100) / 100;
			g[i].duty_committed = g[i].busy_committed *
					      (double)(rnd() % 101) / 100;
			g[i].exclusive = g[i].ntasks == 1 && rnd() % 8 == 0;
			g[i].last_placed = rnd() % 8;
		}
		t = task(1, (rnd() % 64) * GiB, (uint32_t)(1 + rnd() % 4));
		t.busy = (double)(rnd() % 100) / 100;
		t.duty = t.busy * (double)(rnd() % 101) / 100;
		t.exclusive = rnd() % 8 == 0;
		if (rnd() % 4 == 0)
			t.mem_source = ADMIT_MEM_GUESSED;

		for (i = 0; i < n; i++)
			nfit += brute_fits(&g[i], &t);
		rc = admit_place(g, n, &t, &pol, &pl);
		if (rc == -ENODEV) {
			assert_true(t.ngpus > n);
			continue;
		}
		if (rc == -ENOSPC)
			continue;	/* checked by admit_check's own tests */
		if (rc == -EAGAIN) {
			assert_true(nfit < t.ngpus);
			continue;
		}
		assert_int_equal(rc, 0);
		assert_true(nfit >= t.ngpus);
		uint64_t chosen = 0;
		for (i = 0; i < pl.ngpus; i++) {
			assert_true(pl.slot[i] < n);
			assert_false(chosen & (UINT64_C(1) << pl.slot[i]));
			chosen |= UINT64_C(1) << pl.slot[i];
			assert_true(brute_fits(&g[pl.slot[i]], &t));
			assert_true(pl.quota <= admit_need(&t, &g[pl.slot[i]], &pol));
		}
		/* No GPU left out is strictly better than one taken. */
		if (pol.placement == ADMIT_PLACE_BUSYNESS) {
			for (i = 0; i < n; i++) {
				struct admit_task one = t;
				struct admit_placement p1;

				if ((chosen & (UINT64_C(1) << i)) || !brute_fits(&g[i], &t))
					continue;
				one.ngpus = 1;
				assert_int_equal(admit_place(&g[i], 1, &one, &pol, &p1), 0);
				assert_true(p1.score >= pl.score - 1e-9);
			}
		}
	}
}

/* A task as a second run of its command finds it: from its profile. */
static struct admit_task learned_task(uint64_t id, uint64_t peak, double busy,
				      uint64_t runtime_us)
{
	struct admit_profile pr = { .peak_mem = peak, .mean_busy = busy,
				    .runtime_us = runtime_us, .runs = 1 };
	struct admit_task t;

	assert_int_equal(admit_task_init(&t, id, 1, 0, &pr, &pol, 0), 0);
	return t;
}

/*
 * Where a queue of learned heavy and light tasks goes on two GPUs, placed
 * one after the other as kmuxd does (admit_next, admit_commit): GPU slot of
 * each of the queue's tasks in where[].
 */
static void place_queue(enum admit_placement_kind kind, struct admit_task *q,
			size_t n, uint32_t *where)
{
	struct admit_gpu g[2] = { gpu(0, 140), gpu(1, 140) };
	struct admit_task left[8];
	uint64_t ids[8];
	struct admit_decision d;
	size_t nl = n, i, k;
	uint64_t stamp = 0;

	assert_true(n <= 8);
	pol.placement = kind;
	memcpy(left, q, n * sizeof(*q));
	for (i = 0; i < n; i++)
		ids[i] = q[i].id;
	while (nl > 0) {
		assert_int_equal(admit_next(left, nl, g, 2, &pol, 0, &d), 0);
		for (k = 0; k < n; k++)
			if (ids[k] == left[d.task].id)
				where[k] = d.place.slot[0];
		admit_commit(g, 2, &left[d.task], &d.place, ++stamp, 0);
		memmove(&left[d.task], &left[d.task + 1],
			(nl - d.task - 1) * sizeof(*left));
		nl--;
	}
	pol.placement = ADMIT_PLACE_BUSYNESS;
}

/*
 * Learned profiles let the score tell a heavy task from a light one: a
 * pipeline submitting train / evaluate pairs (heavy, light, heavy, light)
 * has its two heavy tasks split across two GPUs by busyness placement,
 * where round robin, alternating, stacks both on GPU 0.  With every task
 * unknown (default busyness, guessed memory) busyness placement has
 * nothing to tell them apart by and alternates too (bench/results/
 * jobmix.md, run 3: why the learning pass).
 */
static void test_learned_heavy_split(void **state)
{
	struct admit_task q[4];
	uint32_t w[4];
	size_t i;

	(void)state;
	q[0] = learned_task(1, 30 * GiB, 0.6, 60 * SEC);
	q[1] = learned_task(2, GiB, 0.1, 10 * SEC);
	q[2] = learned_task(3, 30 * GiB, 0.6, 60 * SEC);
	q[3] = learned_task(4, GiB, 0.1, 10 * SEC);
	assert_true(q[0].from_profile);
	assert_int_equal(q[0].runtime_us, 60 * SEC);
	assert_int_equal(q[0].mem_source, ADMIT_MEM_LEARNED);

	place_queue(ADMIT_PLACE_BUSYNESS, q, 4, w);
	assert_int_not_equal(w[0], w[2]);	/* heavies split */
	assert_int_not_equal(w[1], w[3]);	/* lights too */
	place_queue(ADMIT_PLACE_ROUND_ROBIN, q, 4, w);
	assert_int_equal(w[0], 0);
	assert_int_equal(w[2], 0);		/* stacked */
	assert_int_equal(w[1], 1);
	assert_int_equal(w[3], 1);

	/* Unknown tasks: all alike, so busyness can only alternate. */
	for (i = 0; i < 4; i++) {
		assert_int_equal(admit_task_init(&q[i], i + 1, 1, 0, NULL, &pol,
						 0), 0);
		assert_false(q[i].from_profile);
		assert_int_equal(q[i].runtime_us, 0);
	}
	place_queue(ADMIT_PLACE_BUSYNESS, q, 4, w);
	assert_int_equal(w[0], w[2]);
}

/*
 * The score weighs each task already on a GPU by how much of the
 * newcomer's expected lifetime it will overlap.  GPU 0 holds a heavy task
 * (0.8) expected to end in 2 s; GPU 1 a lighter one (0.5) with 120 s left.
 * A 60 s task goes to GPU 0 (it will share a quarter of its life at most
 * with the heavy one: the floor for a task near its end), a 1 s task to
 * GPU 1 (both outlast it: counted whole, as the instant score would), and
 * so does a task with no learned runtime.
 */
static void test_overlap_weighting(void **state)
{
	struct admit_gpu g[2] = { gpu(0, 140), gpu(1, 140) };
	struct admit_task a = learned_task(1, 10 * GiB, 0.8, 60 * SEC);
	struct admit_task b = learned_task(2, 10 * GiB, 0.5, 200 * SEC);
	struct admit_task t;
	struct admit_placement pa, pb, pl;
	uint64_t now = 1000 * SEC;

	(void)state;
	pa = (struct admit_placement){ .ngpus = 1, .slot = { 0 },
				       .quota = a.mem };
	pb = (struct admit_placement){ .ngpus = 1, .slot = { 1 },
				       .quota = b.mem };
	admit_commit(g, 2, &a, &pa, 1, now - 58 * SEC);
	admit_commit(g, 2, &b, &pb, 2, now - 80 * SEC);
	assert_int_equal(g[0].nruns, 1);
	assert_int_equal(g[0].runs[0].end_us, now + 2 * SEC);

	t = learned_task(3, 10 * GiB, 0.5, 60 * SEC);
	assert_float_equal(admit_load_for(&g[0], &t, now), 0.8 * 0.25, 1e-9);
	assert_float_equal(admit_load_for(&g[1], &t, now), 0.5, 1e-9);
	assert_int_equal(admit_place_at(g, 2, &t, &pol, now, &pl), 0);
	assert_int_equal(pl.slot[0], 0);

	t = learned_task(3, 10 * GiB, 0.5, SEC);
	assert_float_equal(admit_load_for(&g[0], &t, now), 0.8, 1e-9);
	assert_int_equal(admit_place_at(g, 2, &t, &pol, now, &pl), 0);
	assert_int_equal(pl.slot[0], 1);

	t = task(3, 10 * GiB, 1);	/* no runtime: the instant score */
	assert_float_equal(admit_load_for(&g[0], &t, now), 0.8, 1e-9);
	assert_int_equal(admit_place_at(g, 2, &t, &pol, now, &pl), 0);
	assert_int_equal(pl.slot[0], 1);

	/* Long past its expected end, the heavy task still counts for a
	 * quarter of its runtime: 15 s of a 60 s newcomer's life. */
	t = learned_task(3, 10 * GiB, 0.5, 60 * SEC);
	assert_float_equal(admit_load_for(&g[0], &t, now + 100 * SEC),
			   0.8 * 0.25, 1e-9);
	/* A measurement replaces the prediction in the weighting too. */
	admit_set_busy(g, 2, &a, &pa, 0.4);
	assert_float_equal(a.busy, 0.4, 1e-12);
	assert_float_equal(g[0].busy_committed, 0.4, 1e-9);
	assert_float_equal(admit_load_for(&g[0], &t, now), 0.4 * 0.25, 1e-9);
	admit_release(g, 2, &a, &pa);
	assert_int_equal(g[0].nruns, 0);
	assert_float_equal(admit_load_for(&g[0], &t, now), 0.0, 1e-12);
}

/*
 * The measured utilization counts beyond what the tasks predict (foreign
 * work, hotter tasks), never twice; a task that ends takes its share out of
 * the utilization average, so the GPU it leaves does not look busy for
 * util_tau_s after; expected ends are kept per task as tasks come and go.
 */
static void test_util_excess_and_release(void **state)
{
	struct admit_gpu g = gpu(0, 140);
	struct admit_task a = learned_task(1, GiB, 0.3, 10 * SEC);
	struct admit_task b = learned_task(2, GiB, 0.2, 20 * SEC);
	struct admit_task c = learned_task(3, GiB, 0.1, 30 * SEC);
	struct admit_placement pl = { .ngpus = 1, .slot = { 0 }, .quota = GiB };

	(void)state;
	admit_commit(&g, 1, &a, &pl, 1, 0);
	admit_commit(&g, 1, &b, &pl, 2, 0);
	admit_commit(&g, 1, &c, &pl, 3, 0);
	assert_int_equal(g.nruns, 3);
	admit_gpu_sample(&g, 0.9, 0, 0, &pol);
	/* 0.6 predicted, 0.9 measured: 0.9, not 1.5. */
	assert_float_equal(admit_load_for(&g, NULL, 0), 0.9, 1e-9);
	admit_release(&g, 1, &b, &pl);
	assert_int_equal(g.nruns, 2);
	assert_true(g.runs[0].id != 2 && g.runs[1].id != 2);
	assert_float_equal(g.util, 0.7, 1e-9);
	assert_float_equal(admit_load_for(&g, NULL, 0), 0.7, 1e-9);
	admit_release(&g, 1, &a, &pl);
	admit_release(&g, 1, &c, &pl);
	assert_int_equal(g.nruns, 0);
	assert_int_equal(g.ntasks, 0);
	assert_float_equal(g.util, 0.3, 1e-9);
	/* Never below zero. */
	admit_commit(&g, 1, &a, &pl, 4, 0);
	g.util = 0.1;
	admit_release(&g, 1, &a, &pl);
	assert_float_equal(g.util, 0.0, 1e-12);
}


/* Budget asks back off for a task that keeps its budget, and only for it. */
static void test_ask_hold(void **state)
{
	uint64_t h;

	(void)state;
	/* Never asked: the base wait. */
	assert_true(admit_ask_hold(0, 0, 8 * GiB) == ADMIT_ASK_HOLD_US);
	/* Kept everything: 2, 4, 8, 16, 32 s, then 32 s. */
	h = admit_ask_hold(0, 0, 8 * GiB);
	for (int i = 1; i <= 4; i++) {
		h = admit_ask_hold(h, 8 * GiB, 8 * GiB);
		assert_true(h == ADMIT_ASK_HOLD_US << i);
	}
	assert_true(h == ADMIT_ASK_HOLD_MAX_US);
	assert_true(admit_ask_hold(h, 8 * GiB, 8 * GiB) ==
		    ADMIT_ASK_HOLD_MAX_US);
	/* A budget that grew since (thrash growth) is no answer either. */
	assert_true(admit_ask_hold(ADMIT_ASK_HOLD_US, 8 * GiB, 9 * GiB) ==
		    2 * ADMIT_ASK_HOLD_US);
	/* It gave something since the last ask: back to the base wait. */
	assert_true(admit_ask_hold(ADMIT_ASK_HOLD_MAX_US, 8 * GiB,
				   8 * GiB - 1) == ADMIT_ASK_HOLD_US);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_policy, setup),
		cmocka_unit_test_setup(test_fit_with_headroom, setup),
		cmocka_unit_test_setup(test_busyness_threshold, setup),
		cmocka_unit_test_setup(test_duty_gate, setup),
		cmocka_unit_test_setup(test_duty_init_and_correct, setup),
		cmocka_unit_test_setup(test_picks_less_busy, setup),
		cmocka_unit_test_setup(test_ties_deterministic, setup),
		cmocka_unit_test_setup(test_multi_gpu, setup),
		cmocka_unit_test_setup(test_gpu_mask, setup),
		cmocka_unit_test_setup(test_any_number_of_gpus, setup),
		cmocka_unit_test_setup(test_learned_vs_guessed, setup),
		cmocka_unit_test_setup(test_exclusive, setup),
		cmocka_unit_test_setup(test_round_robin, setup),
		cmocka_unit_test_setup(test_round_robin_rotation, setup),
		cmocka_unit_test_setup(test_commit_release, setup),
		cmocka_unit_test_setup(test_grow, setup),
		cmocka_unit_test_setup(test_grow_wait, setup),
		cmocka_unit_test_setup(test_grow_room, setup),
		cmocka_unit_test_setup(test_util_sample, setup),
		cmocka_unit_test_setup(test_fifo_and_backfill, setup),
		cmocka_unit_test_setup(test_never_fits_reported, setup),
		cmocka_unit_test_setup(test_backfill_bound_reserves, setup),
		cmocka_unit_test_setup(test_backfill_bound_prevents_starvation, setup),
		cmocka_unit_test_setup(test_aging_beats_priority, setup),
		cmocka_unit_test_setup(test_mem_short, setup),
		cmocka_unit_test_setup(test_commit_short, setup),
		cmocka_unit_test_setup(test_random_states, setup),
		cmocka_unit_test_setup(test_learned_heavy_split, setup),
		cmocka_unit_test_setup(test_overlap_weighting, setup),
		cmocka_unit_test_setup(test_util_excess_and_release, setup),
		cmocka_unit_test_setup(test_evict_working_set, setup),
		cmocka_unit_test_setup(test_thrash_hold, setup),
		cmocka_unit_test(test_ask_hold),
		cmocka_unit_test(test_wait_bound_rule),
		cmocka_unit_test(test_wait_bound_place),
	};
	const char *s = getenv("KMUX_TEST_SEED");

	if (s != NULL)
		seed = strtoull(s, NULL, 0) | 1;
	return cmocka_run_group_tests(tests, NULL, NULL);
}
