/*
 * test-pace.c - unit tests of the spread-or-in-line measurement (pace.c):
 * a kind's first epochs run spread untimed, then the modes alternate; in
 * line loses at once when clearly slower, and otherwise the lower median
 * wins (a tie in line); each epoch runs in the mode of its own kind, known
 * by the work before it and its whole first operation; a key whose epochs
 * often differ is varied and stays spread (an in-line verdict too), a rare
 * odd one is tolerated, and one just after warm-up; small
 * epochs count for nothing; kinds are replaced least recently used, and
 * their verdicts leave the counts; an epoch with no time passed is not
 * timed.
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
static uint64_t last_key;	/* of the last epoch() */

/*
 * One epoch of n operations, the first (tag, 0), the rest (tag, i + body):
 * it takes spread_ns when run spread and inline_ns in line.  Returns the
 * mode it ran in.
 */
static int epoch_of(struct pace *p, uint64_t tag, uint64_t body, int n,
		    uint64_t spread_ns, uint64_t inline_ns)
{
	int m;

	for (int i = 0; i < n; i++)
		if (pace_op(p, tag, i ? (uint64_t)i + body : 0) != (i == 0))
			fail_msg("pace_op: first operation not told");
	m = p->mode;
	last_key = p->key;
	now += m == L ? inline_ns : spread_ns;
	pace_epoch_end(p, now);
	assert_int_equal(p->mode, S);	/* until the next first op */
	return m;
}

static int epoch(struct pace *p, uint64_t tag, int n, uint64_t spread_ns,
		 uint64_t inline_ns)
{
	return epoch_of(p, tag, 0, n, spread_ns, inline_ns);
}

static const struct pace_kind *last_kind(const struct pace *p)
{
	return pace_kind_find(p, last_key);
}

static void test_clear_loss_spreads_at_once(void **state)
{
	struct pace p;
	const struct pace_kind *k;
	/* The first epoch has no work before it: a key of its own. */
	int want[] = { S, S, S, S, L };

	(void)state;
	pace_init(&p, now);
	assert_int_equal(p.mode, S);
	for (int i = 0; i < 5; i++)
		assert_int_equal(epoch(&p, 1, 40, 100, 150), want[i]);
	/* One in-line epoch 50% slower than the spread one: decided. */
	k = last_kind(&p);
	assert_non_null(k);
	assert_int_equal(k->verdict, PACE_KEEP_SPREAD);
	assert_int_equal(k->n[S], 1);
	assert_int_equal(k->n[L], 1);
	for (int i = 0; i < 10; i++)
		assert_int_equal(epoch(&p, 1, 40, 100, 150), S);
	assert_int_equal(p.kinds_spread, 1);
	assert_int_equal(p.kinds_inline, 0);
	assert_int_equal(p.epochs, 15);
	assert_int_equal(p.inline_epochs, 1);
}

static void test_small_gain_goes_in_line(void **state)
{
	struct pace p;
	int want[] = { S, S, S, S, L, S, L, S, L };

	(void)state;
	pace_init(&p, now);
	/* First, warm twice, then S L S L S L, the verdict after the last. */
	for (int i = 0; i < 8; i++)
		assert_int_equal(epoch(&p, 2, 100, 1000, 980), want[i]);
	assert_int_equal(last_kind(&p)->verdict, PACE_OPEN);
	assert_int_equal(epoch(&p, 2, 100, 1000, 980), want[8]);
	assert_int_equal(last_kind(&p)->verdict, PACE_KEEP_INLINE);
	for (int i = 0; i < 5; i++)
		assert_int_equal(epoch(&p, 2, 100, 1000, 980), L);
	assert_int_equal(p.kinds_inline, 1);
}

/*
 * The verdict on a kind after its 9 epochs (one first, 2 warm, 3 spread,
 * 3 in line): spread[i] is epoch i's time when it runs spread, inline_ns
 * in line.
 */
static int verdict_after(struct pace *p, uint64_t tag, const uint64_t *spread,
			 uint64_t inline_ns)
{
	pace_init(p, now);
	for (int i = 0; i < 9; i++)
		epoch(p, tag, 100, spread[i], inline_ns);
	return last_kind(p)->verdict;
}

static const uint64_t flat[9] = {
	1000, 1000, 1000, 1000, 1000, 1000, 1000, 1000, 1000
};

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
	const uint64_t sp[9] = { 1000, 1000, 1000, 1000, 0, 5000, 0, 1000, 0 };

	(void)state;
	assert_int_equal(verdict_after(&p, 5, sp, 1010), PACE_KEEP_SPREAD);
}

/*
 * host_sync's shape: rounds of a reset epoch A (its own first operation)
 * and three steps B.  Every epoch runs in its own kind's mode: A, which
 * loses clearly in line, is tried in line once, and the steps, which gain
 * a little, go in line.  (Predicting the next kind from the one that came
 * after last time ran one step a round in line for A's sake, unmeasured.)
 */
static void test_kind_known_at_first_op(void **state)
{
	struct pace p;
	int a_inline = 0, b_spread = 0;

	(void)state;
	pace_init(&p, now);
	for (int r = 0; r < 16; r++) {
		a_inline += epoch(&p, 10, 50, 100, 300) == L;
		for (int st = 0; st < 3; st++)
			b_spread += epoch(&p, 11, 60, 1000, 900) == S && r >= 12;
	}
	assert_int_equal(a_inline, 1);
	assert_int_equal(b_spread, 0);
	assert_int_equal(p.kinds_spread, 1);	/* A */
	assert_int_equal(p.kinds_inline, 2);	/* B after A, B after B */
	assert_int_equal(p.kinds_varied, 0);
}

/*
 * rounds of X X Y, each of 40 operations beginning (tag, 0), Y's others
 * unlike X's: the key "after X" sees X and Y alike often.
 */
static void rounds_xxy(struct pace *p, uint64_t tag, int rounds)
{
	for (int r = 0; r < rounds; r++) {
		epoch_of(p, tag, 0, 40, 1000, 900);
		epoch_of(p, tag, 0, 40, 1000, 900);
		epoch_of(p, tag, 500, 40, 1000, 900);
	}
}

/*
 * The same work before and the same first operation, different work
 * after: X X Y in turn, so the key "after X" sees X and Y alike often,
 * too many to compare: it stays spread.  "After Y" is always X: in line.
 */
static void test_varied_key_spread(void **state)
{
	struct pace p;

	(void)state;
	pace_init(&p, now);
	rounds_xxy(&p, 12, 10);
	assert_int_equal(p.kinds_varied, 1);
	assert_int_equal(p.kinds_inline, 1);
	for (int r = 0; r < 3; r++) {
		assert_int_equal(epoch_of(&p, 12, 0, 40, 1000, 900), L);
		assert_int_equal(epoch_of(&p, 12, 0, 40, 1000, 900), S);
		assert_int_equal(epoch_of(&p, 12, 500, 40, 1000, 900), S);
	}
}

/* An odd epoch now and then (an evaluation pass) neither times nor spoils. */
static void test_rare_odd_epoch_tolerated(void **state)
{
	struct pace p;

	(void)state;
	pace_init(&p, now);
	for (int i = 0; i < 60; i++)
		epoch_of(&p, 13, i % 20 == 19 ? 700 : 0, 40, 1000, 900);
	assert_int_equal(p.kinds_varied, 0);
	assert_int_equal(p.kinds_inline, 1);
	/* After the odd one (i = 59) a key of its own, seen twice: warm. */
	assert_int_equal(epoch_of(&p, 13, 0, 40, 1000, 900), S);
	assert_int_equal(epoch_of(&p, 13, 0, 40, 1000, 900), L);
	assert_int_equal(last_kind(&p)->odd, 3);
	assert_int_equal(last_kind(&p)->n[S], PACE_SAMPLES);
}

/* One unlike epoch just after warm-up (a first pass) is not yet varied. */
static void test_one_early_odd_epoch_not_varied(void **state)
{
	struct pace p;

	(void)state;
	pace_init(&p, now);
	for (int i = 0; i < 3; i++)
		epoch_of(&p, 15, 0, 40, 1000, 900);
	epoch_of(&p, 15, 700, 40, 1000, 900);	/* same key, other work */
	assert_int_equal(last_kind(&p)->odd, 1);
	assert_int_equal(p.kinds_varied, 0);
	for (int i = 0; i < 12; i++)
		epoch_of(&p, 15, 0, 40, 1000, 900);
	assert_int_equal(p.kinds_varied, 0);
	assert_int_equal(p.kinds_inline, 1);
}

/* A kind judged in line that turns varied leaves the in-line count. */
static void test_inline_verdict_turns_varied(void **state)
{
	struct pace p;

	(void)state;
	pace_init(&p, now);
	for (int i = 0; i < 10; i++)
		epoch_of(&p, 16, 0, 40, 1000, 900);
	assert_int_equal(p.kinds_inline, 1);
	/* From now on every other epoch after X is unlike it. */
	rounds_xxy(&p, 16, 6);
	assert_int_equal(p.kinds_varied, 1);
	assert_int_equal(p.kinds_inline, 0);
	epoch_of(&p, 16, 0, 40, 1000, 900);	/* after the unlike: its own */
	assert_int_equal(epoch_of(&p, 16, 0, 40, 1000, 900), S);
}

/* The first operation's whole description keys the epoch, b included. */
static void test_first_op_b_in_key(void **state)
{
	struct pace p;

	(void)state;
	pace_init(&p, now);
	for (int r = 0; r < 12; r++) {
		for (int e = 0; e < 3; e++) {
			uint64_t body = e == 2 ? 500 : 0;

			for (int i = 0; i < 40; i++)
				pace_op(&p, 17, i ? (uint64_t)i + body
						  : (uint64_t)(e == 2));
			now += 1000;
			pace_epoch_end(&p, now);
		}
	}
	assert_int_equal(p.kinds_varied, 0);
}

static void test_small_epochs_ignored(void **state)
{
	struct pace p;

	(void)state;
	pace_init(&p, now);
	for (int i = 0; i < 9; i++)
		epoch(&p, 6, 100, 1000, 980);
	assert_int_equal(epoch(&p, 6, 100, 1000, 980), L);
	/* A wait after a few operations: a kind never seen, spread, and
	 * nothing counted. */
	assert_int_equal(epoch(&p, 7, PACE_MIN_OPS - 1, 10, 10), S);
	assert_int_equal(p.epochs, 10);
	assert_null(last_kind(&p));
	/* The work before the next epoch is still the last counted one. */
	assert_int_equal(epoch(&p, 6, 100, 1000, 980), L);
}

static void test_kinds_replaced_lru(void **state)
{
	struct pace p;
	uint64_t key[PACE_KINDS + 1];

	(void)state;
	pace_init(&p, now);
	for (uint64_t t = 0; t < PACE_KINDS + 1; t++) {
		assert_int_equal(epoch(&p, 100 + t, 20, 10, 10), S);
		key[t] = last_key;
	}
	assert_null(pace_kind_find(&p, key[0]));
	assert_non_null(pace_kind_find(&p, key[1]));
	assert_non_null(pace_kind_find(&p, key[PACE_KINDS]));
}

/* A verdict leaves the counts with its kind. */
static void test_evicted_verdict_not_counted(void **state)
{
	struct pace p;

	(void)state;
	pace_init(&p, now);
	for (int i = 0; i < 6; i++)
		epoch(&p, 1, 40, 100, 150);
	assert_int_equal(p.kinds_spread, 1);
	for (uint64_t t = 0; t < PACE_KINDS; t++)
		epoch(&p, 200 + t, 20, 10, 10);
	assert_int_equal(p.kinds_spread, 0);
}

static void test_no_time_not_timed(void **state)
{
	struct pace p;

	(void)state;
	pace_init(&p, now);
	for (int i = 0; i < 5; i++)
		epoch(&p, 8, 30, 0, 0);
	assert_int_equal(last_kind(&p)->n[S], 0);
	assert_int_equal(last_kind(&p)->verdict, PACE_OPEN);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_clear_loss_spreads_at_once),
		cmocka_unit_test(test_small_gain_goes_in_line),
		cmocka_unit_test(test_small_loss_stays_spread),
		cmocka_unit_test(test_tie_goes_in_line),
		cmocka_unit_test(test_median_of_samples),
		cmocka_unit_test(test_kind_known_at_first_op),
		cmocka_unit_test(test_varied_key_spread),
		cmocka_unit_test(test_rare_odd_epoch_tolerated),
		cmocka_unit_test(test_one_early_odd_epoch_not_varied),
		cmocka_unit_test(test_inline_verdict_turns_varied),
		cmocka_unit_test(test_first_op_b_in_key),
		cmocka_unit_test(test_small_epochs_ignored),
		cmocka_unit_test(test_kinds_replaced_lru),
		cmocka_unit_test(test_evicted_verdict_not_counted),
		cmocka_unit_test(test_no_time_not_timed),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
