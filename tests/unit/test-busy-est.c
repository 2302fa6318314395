/*
 * test-busy-est.c - unit tests of kmuxd's busyness estimator
 * (src/daemon/busy-est.c) on synthetic sample streams: a job's start-up
 * and shutdown do not dilute its demand, a heavy job time-sliced in a
 * crowd still measures heavier than a light one in the same crowd, and an
 * idle job stays low.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <setjmp.h>

#include <cmocka.h>

#include "busy-est.h"

#define EPS 1e-9

static void near(double got, double want, double tol)
{
	if (!(fabs(got - want) <= tol))
		fail_msg("got %.6f, want %.6f +- %g", got, want, tol);
}

/* A job alone on its GPU: its share is its demand, whatever the share. */
static void test_demand_alone(void **state)
{
	(void)state;
	near(busy_est_demand(0.8, 0.8, 0.8), 0.8, EPS);
	near(busy_est_demand(0.99, 0.99, 0.99), 0.99, EPS);
	near(busy_est_demand(0.05, 0.05, 0.05), 0.05, EPS);
	near(busy_est_demand(0.0, 0.0, 0.0), 0.0, EPS);
	/* Others there, but time to spare: nobody was held back. */
	near(busy_est_demand(0.3, 0.5, 0.3), 0.3, EPS);
	near(busy_est_demand(0.1, BUSY_EST_SAT_LO, 0.5), 0.1, EPS);
}

/* Saturated and shared: relative to the heaviest process there. */
static void test_demand_saturated(void **state)
{
	(void)state;
	near(busy_est_demand(0.125, 1.0, 0.125), 1.0, EPS);
	near(busy_est_demand(0.05, 1.0, 0.25), 0.2, EPS);
	near(busy_est_demand(0.5, BUSY_EST_SAT_HI, 0.5), 1.0, EPS);
	/* In between the thresholds the correction is partial, and grows
	 * with the GPU's load: no jump at either bound. */
	{
		double prev = busy_est_demand(0.2, BUSY_EST_SAT_LO, 0.4), d;

		near(prev, 0.2, EPS);
		for (double t = BUSY_EST_SAT_LO + 0.01; t <= 1.0; t += 0.01) {
			d = busy_est_demand(0.2, t, 0.4);
			assert_true(d >= prev - EPS);
			assert_true(d - prev < 0.05);
			prev = d;
		}
		near(prev, 0.5, EPS);
	}
	/* The device's utilization above the processes' sum (processes NVML
	 * does not list) counts as saturation too. */
	near(busy_est_demand(0.3, 1.0, 0.3), 1.0, EPS);
}

/* Bad readings never leave 0..1 nor divide by less than the share. */
static void test_demand_bad_input(void **state)
{
	(void)state;
	near(busy_est_demand(NAN, 1.0, 0.5), 0.0, EPS);
	near(busy_est_demand(-0.2, 1.0, 0.5), 0.0, EPS);
	near(busy_est_demand(1.7, 1.0, 1.0), 1.0, EPS);
	near(busy_est_demand(0.4, NAN, NAN), 0.4, EPS);
	near(busy_est_demand(0.4, 0.1, 0.0), 0.4, EPS);	/* total, top < share */
	near(busy_est_demand(0.4, 1.0, 0.1), 1.0, EPS);	/* top < share */
	for (double s = 0.0; s <= 1.0; s += 0.1)
		for (double t = 0.0; t <= 2.0; t += 0.1)
			for (double m = 0.0; m <= 1.0; m += 0.1) {
				double d = busy_est_demand(s, t, m);

				assert_true(d >= 0.0 && d <= 1.0);
			}
}

/*
 * Start-up idle then busy then shutdown: 20 samples of imports and model
 * construction, 10 at 0.6 with a pause in the middle, 4 while it exits.
 * The whole-life mean (what kmuxd learned before) would be about 0.16.
 */
static void test_startup_then_busy(void **state)
{
	struct busy_est e = { 0 };
	double d = -1;

	(void)state;
	for (int i = 0; i < 20; i++)
		busy_est_add(&e, 0.0, false);
	assert_int_equal(busy_est_now(&e, 4, &d), -ENODATA);
	for (int i = 0; i < 10; i++)
		busy_est_add(&e, 0.6, true);
	assert_int_equal(busy_est_now(&e, 4, &d), 0);
	near(d, 0.6, EPS);
	/* A pause (data loading) inside the active phase counts... */
	for (int i = 0; i < 2; i++)
		busy_est_add(&e, 0.0, false);
	for (int i = 0; i < 8; i++)
		busy_est_add(&e, 0.6, true);
	/* ... the shutdown after its last kernel does not. */
	for (int i = 0; i < 4; i++)
		busy_est_add(&e, 0.0, false);
	assert_int_equal(busy_est_final(&e, 2, &d), 0);
	near(d, 0.6 * 18 / 20, EPS);
	assert_int_equal(e.seen, 44);
	/* While it runs, the quiet end lowers the estimate. */
	assert_int_equal(busy_est_now(&e, 4, &d), 0);
	near(d, 0.6 * 18 / 24, EPS);
}

/*
 * Eight processes time-sliced on one GPU: seven heavy ones that would each
 * keep the GPU busy alone and a light, latency-bound one that keeps it
 * busy 10 % of the time alone and gets 3 % in the crowd.  Shares sum to
 * about 1.  The heavy one must come out well above the light one, and
 * near what it measures alone.
 */
static void test_crowd_heavy_vs_light(void **state)
{
	struct busy_est heavy = { 0 }, light = { 0 }, alone = { 0 };
	double light_s = 0.03, heavy_s = (0.99 - 0.03) / 7, total = 0.99;
	double h, l, a;

	(void)state;
	for (int i = 0; i < 30; i++) {
		/* NVML's per-sample noise: +-1 point on each share. */
		double jit = (i % 3 - 1) * 0.01;

		busy_est_add(&heavy, busy_est_demand(heavy_s + jit, total,
						     heavy_s + 0.01), true);
		busy_est_add(&light, busy_est_demand(light_s, total,
						     heavy_s + 0.01), true);
		busy_est_add(&alone, busy_est_demand(0.95, 0.95, 0.95), true);
	}
	assert_int_equal(busy_est_final(&heavy, 2, &h), 0);
	assert_int_equal(busy_est_final(&light, 2, &l), 0);
	assert_int_equal(busy_est_final(&alone, 2, &a), 0);
	assert_true(h > 0.85);
	assert_true(h > 3 * l);
	assert_true(fabs(h - a) < 0.1);
	/* The raw shares would have ranked them 0.14 vs 0.03, and the heavy
	 * job 7x below itself alone. */
	assert_true(l < 0.5);
}

/* A job that holds a context and never runs a kernel stays low. */
static void test_idle_stays_low(void **state)
{
	struct busy_est e = { 0 };
	double d = -1;

	(void)state;
	for (int i = 0; i < 40; i++)
		busy_est_add(&e, 0.0, false);
	assert_int_equal(busy_est_now(&e, 4, &d), -ENODATA);
	assert_int_equal(busy_est_final(&e, 2, &d), 0);
	near(d, 0.0, EPS);
	/* One stray active sample in a long idle life is not an active
	 * phase to learn from. */
	busy_est_add(&e, 0.5, true);
	for (int i = 0; i < 5; i++)
		busy_est_add(&e, 0.0, false);
	assert_int_equal(busy_est_final(&e, 2, &d), 0);
	near(d, 0.5 / 46, EPS);
}

/*
 * Duty: the whole life, start-up and shutdown included, where the active
 * phase's mean leaves them out.  10 samples of start-up, 10 at 0.8 with
 * one pause, 5 of shutdown: active mean 0.8 x 9 / 10, duty 7.2 / 25.
 */
static void test_duty_whole_life(void **state)
{
	struct busy_est e = { 0 };
	double d = -1, a = -1;

	(void)state;
	assert_int_equal(busy_est_duty(&e, 2, &d), -ENODATA);
	near(d, -1, EPS);
	for (int i = 0; i < 10; i++)
		busy_est_add(&e, 0.0, false);
	/* Start-up alone is enough samples: an idle job's duty is 0. */
	assert_int_equal(busy_est_duty(&e, 2, &d), 0);
	near(d, 0.0, EPS);
	for (int i = 0; i < 5; i++)
		busy_est_add(&e, 0.8, true);
	busy_est_add(&e, 0.0, false);
	for (int i = 0; i < 4; i++)
		busy_est_add(&e, 0.8, true);
	for (int i = 0; i < 5; i++)
		busy_est_add(&e, 0.0, false);
	assert_int_equal(busy_est_duty(&e, 2, &d), 0);
	near(d, 0.8 * 9 / 25, EPS);
	assert_int_equal(busy_est_final(&e, 2, &a), 0);
	near(a, 0.8 * 9 / 10, EPS);
	assert_true(d < a);
	/* min counts every sample, not only active ones; min 0 is 1. */
	assert_int_equal(busy_est_duty(&e, 26, &d), -ENODATA);
	assert_int_equal(busy_est_duty(&e, 25, &d), 0);
	memset(&e, 0, sizeof(e));
	assert_int_equal(busy_est_duty(&e, 0, &d), -ENODATA);
	busy_est_add(&e, 4.0, true);	/* clamped to 1 on the way in */
	assert_int_equal(busy_est_duty(&e, 0, &d), 0);
	near(d, 1.0, EPS);
}

/* Too few samples: nothing to learn (the profile keeps what it had). */
static void test_too_few(void **state)
{
	struct busy_est e = { 0 };
	double d = -1;

	(void)state;
	assert_int_equal(busy_est_final(&e, 2, &d), -ENODATA);
	busy_est_add(&e, 0.7, true);
	assert_int_equal(busy_est_final(&e, 2, &d), -ENODATA);
	near(d, -1, EPS);
	busy_est_add(&e, 0.3, true);
	assert_int_equal(busy_est_final(&e, 2, &d), 0);
	near(d, 0.5, EPS);
	/* A demand out of range is clamped on the way in. */
	busy_est_add(&e, 4.0, true);
	assert_int_equal(busy_est_final(&e, 2, &d), 0);
	near(d, 2.0 / 3, EPS);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_demand_alone),
		cmocka_unit_test(test_duty_whole_life),
		cmocka_unit_test(test_demand_saturated),
		cmocka_unit_test(test_demand_bad_input),
		cmocka_unit_test(test_startup_then_busy),
		cmocka_unit_test(test_crowd_heavy_vs_light),
		cmocka_unit_test(test_idle_stays_low),
		cmocka_unit_test(test_too_few),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
