/*
 * test-pace.c - unit tests of the spread-or-in-line measurement (pace.c):
 * a kind's first epochs run spread untimed, then the modes alternate; in
 * line loses at once when clearly slower, and otherwise the lower median
 * wins (a tie in line); the next epoch's mode follows the kind that came
 * after this one last time; small epochs count for nothing; kinds are
 * replaced least recently used; an epoch with no time passed is not timed.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>

#include <cmocka.h>

#include "pace.h"

#define S PACE_SPREAD
#define L PACE_INLINE

static uint64_t now;

/*
 * One epoch of kind tag with n operations, taking spread_ns when run
 * spread and inline_ns in line; returns the mode for the next epoch.
 */
static int epoch(struct pace *p, uint64_t tag, int n, uint64_t spread_ns,
		 uint64_t inline_ns)
{
	for (int i = 0; i < n; i++)
		pace_op(p, tag, (uint64_t)i);
	now += p->mode == L ? inline_ns : spread_ns;
	return pace_epoch_end(p, now);
}

/* The sig one epoch of tag with n operations hashes to. */
static uint64_t sig_of(uint64_t tag, int n)
{
	struct pace q;

	pace_init(&q, 0);
	for (int i = 0; i < n; i++)
		pace_op(&q, tag, (uint64_t)i);
	return q.sig;
}

static void test_clear_loss_spreads_at_once(void **state)
{
	struct pace p;
	const struct pace_kind *k;

	(void)state;
	pace_init(&p, now);
	assert_int_equal(p.mode, S);
	assert_int_equal(epoch(&p, 1, 40, 100, 150), S);	/* warm */
	assert_int_equal(epoch(&p, 1, 40, 100, 150), S);	/* warm */
	assert_int_equal(epoch(&p, 1, 40, 100, 150), L);	/* S timed */
	/* One in-line epoch 50% slower than the spread one: decided. */
	assert_int_equal(epoch(&p, 1, 40, 100, 150), S);
	k = pace_kind_find(&p, sig_of(1, 40));
	assert_non_null(k);
	assert_int_equal(k->verdict, PACE_KEEP_SPREAD);
	assert_int_equal(k->n[S], 1);
	assert_int_equal(k->n[L], 1);
	for (int i = 0; i < 10; i++)
		assert_int_equal(epoch(&p, 1, 40, 100, 150), S);
	assert_int_equal(p.kinds_spread, 1);
	assert_int_equal(p.kinds_inline, 0);
	assert_int_equal(p.epochs, 14);
	assert_int_equal(p.inline_epochs, 1);
}

static void test_small_gain_goes_in_line(void **state)
{
	struct pace p;
	int want[] = { S, S, L, S, L, S, L };

	(void)state;
	pace_init(&p, now);
	/* Warm twice, then S L S L S L, the verdict after the sixth. */
	for (int i = 0; i < 7; i++)
		assert_int_equal(epoch(&p, 2, 100, 1000, 980), want[i]);
	assert_int_equal(pace_kind_find(&p, sig_of(2, 100))->verdict,
			 PACE_OPEN);
	assert_int_equal(epoch(&p, 2, 100, 1000, 980), L);
	assert_int_equal(pace_kind_find(&p, sig_of(2, 100))->verdict,
			 PACE_KEEP_INLINE);
	for (int i = 0; i < 5; i++)
		assert_int_equal(epoch(&p, 2, 100, 1000, 980), L);
	assert_int_equal(p.kinds_inline, 1);
}

/*
 * The verdict on a kind after its 8 epochs (2 warm, 3 spread, 3 in line):
 * spread[i] is epoch i's time when it runs spread, inline_ns in line.
 */
static int verdict_after(struct pace *p, uint64_t tag, const uint64_t *spread,
			 uint64_t inline_ns)
{
	pace_init(p, now);
	for (int i = 0; i < 8; i++)
		epoch(p, tag, 100, spread[i], inline_ns);
	return pace_kind_find(p, sig_of(tag, 100))->verdict;
}

static const uint64_t flat[8] = { 1000, 1000, 1000, 1000, 1000, 1000, 1000, 1000 };

static void test_small_loss_stays_spread(void **state)
{
	struct pace p;

	(void)state;
	assert_int_equal(verdict_after(&p, 3, flat, 1030), PACE_KEEP_SPREAD);
	for (int i = 0; i < 5; i++)
		assert_int_equal(epoch(&p, 3, 100, 1000, 1030), S);
}

static void test_tie_goes_in_line(void **state)
{
	struct pace p;

	(void)state;
	assert_int_equal(verdict_after(&p, 4, flat, 1000), PACE_KEEP_INLINE);
}

/* The median, not the mean: one slow spread epoch does not decide. */
static void test_median_of_samples(void **state)
{
	struct pace p;
	/* spread times of the timed epochs: 1000, 5000 (an outlier), 1000 */
	const uint64_t sp[8] = { 1000, 1000, 1000, 0, 5000, 0, 1000, 0 };

	(void)state;
	assert_int_equal(verdict_after(&p, 5, sp, 1010), PACE_KEEP_SPREAD);
}

/* Two kinds in turn: each next epoch gets the mode of its own kind. */
static void test_next_kind_predicted(void **state)
{
	struct pace p;
	int m;

	(void)state;
	pace_init(&p, now);
	/* A: in line clearly slower; B: in line a little faster. */
	for (int i = 0; i < 12; i++) {
		epoch(&p, 10, 50, 100, 300);
		epoch(&p, 11, 60, 1000, 900);
	}
	assert_int_equal(pace_kind_find(&p, sig_of(10, 50))->verdict,
			 PACE_KEEP_SPREAD);
	assert_int_equal(pace_kind_find(&p, sig_of(11, 60))->verdict,
			 PACE_KEEP_INLINE);
	for (int i = 0; i < 4; i++) {
		m = epoch(&p, 10, 50, 100, 300);
		assert_int_equal(m, L);		/* B comes next */
		m = epoch(&p, 11, 60, 1000, 900);
		assert_int_equal(m, S);		/* A comes next */
	}
}

static void test_small_epochs_ignored(void **state)
{
	struct pace p;

	(void)state;
	pace_init(&p, now);
	for (int i = 0; i < 8; i++)
		epoch(&p, 6, 100, 1000, 980);
	assert_int_equal(p.mode, L);
	/* A wait after a few operations: nothing counted, mode kept. */
	assert_int_equal(epoch(&p, 7, PACE_MIN_OPS - 1, 10, 10), L);
	assert_int_equal(p.epochs, 8);
	assert_null(pace_kind_find(&p, sig_of(7, PACE_MIN_OPS - 1)));
	assert_int_equal(epoch(&p, 6, 100, 1000, 980), L);
}

static void test_kinds_replaced_lru(void **state)
{
	struct pace p;

	(void)state;
	pace_init(&p, now);
	for (uint64_t t = 0; t < PACE_KINDS + 1; t++)
		epoch(&p, 100 + t, 20, 10, 10);
	assert_null(pace_kind_find(&p, sig_of(100, 20)));
	assert_non_null(pace_kind_find(&p, sig_of(101, 20)));
	assert_non_null(pace_kind_find(&p, sig_of(100 + PACE_KINDS, 20)));
	/* A new kind is always spread until it has been measured. */
	assert_int_equal(p.mode, S);
}

static void test_no_time_not_timed(void **state)
{
	struct pace p;

	(void)state;
	pace_init(&p, now);
	for (int i = 0; i < 4; i++)
		epoch(&p, 8, 30, 0, 0);
	assert_int_equal(pace_kind_find(&p, sig_of(8, 30))->n[S], 0);
	assert_int_equal(pace_kind_find(&p, sig_of(8, 30))->verdict,
			 PACE_OPEN);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_clear_loss_spreads_at_once),
		cmocka_unit_test(test_small_gain_goes_in_line),
		cmocka_unit_test(test_small_loss_stays_spread),
		cmocka_unit_test(test_tie_goes_in_line),
		cmocka_unit_test(test_median_of_samples),
		cmocka_unit_test(test_next_kind_predicted),
		cmocka_unit_test(test_small_epochs_ignored),
		cmocka_unit_test(test_kinds_replaced_lru),
		cmocka_unit_test(test_no_time_not_timed),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
