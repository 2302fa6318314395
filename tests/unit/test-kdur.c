/*
 * test-kdur.c - unit tests of the learned kernel durations (kdur.c): which
 * launches are timed, the estimate and the weight it gives, kinds told
 * apart by function and grid, a kind pushed out by another, bad input.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdlib.h>

#include <cmocka.h>

#include "kdur.h"

static struct kdur *new_kdur(void)
{
	struct kdur *k = malloc(sizeof(*k));

	assert_non_null(k);
	kdur_init(k, 0);
	return k;
}

/*
 * Not the first launch (it may load the module), then the next
 * KDUR_FIRST, then one in KDUR_EVERY.
 */
static void test_which_launches_timed(void **state)
{
	struct kdur *k = new_kdur();
	int timed = 0, n = 10 * KDUR_EVERY;

	(void)state;
	assert_int_equal(kdur_launch(k, 7), 0);
	for (int i = 0; i < KDUR_FIRST; i++)
		assert_int_equal(kdur_launch(k, 7), 1);
	for (int i = 1 + KDUR_FIRST; i < n; i++)
		timed += kdur_launch(k, 7);
	assert_int_equal(timed, n / KDUR_EVERY);
	assert_int_equal(kdur_launch(k, 0), 0);	/* not a kernel */
	free(k);
}

/* No sample: the fallback; then the estimate in units, at least 1. */
static void test_weight_from_estimate(void **state)
{
	struct kdur *k = new_kdur();

	(void)state;
	kdur_launch(k, 5);
	assert_int_equal(kdur_weight(k, 5, 3), 3);
	assert_int_equal(kdur_weight(k, 0, 2), 2);
	kdur_add(k, 5, 40 * KDUR_UNIT_NS);
	assert_int_equal(kdur_weight(k, 5, 3), 40);
	assert_int_equal(k->kinds, 1);
	/* A quarter of each new timing. */
	kdur_add(k, 5, 80 * KDUR_UNIT_NS);
	assert_int_equal(kdur_weight(k, 5, 3), 50);
	kdur_add(k, 5, 0);			/* lost: ignored */
	assert_int_equal(kdur_weight(k, 5, 3), 50);
	assert_int_equal(k->timed, 2);
	/* A short kernel weighs 1, never 0; a huge one is capped. */
	kdur_launch(k, 6);
	kdur_add(k, 6, 100);
	assert_int_equal(kdur_weight(k, 6, 9), 1);
	kdur_launch(k, 8);
	kdur_add(k, 8, (uint64_t)KDUR_UNIT_NS * KDUR_WEIGHT_MAX * 4);
	assert_int_equal(kdur_weight(k, 8, 9), KDUR_WEIGHT_MAX);
	assert_int_equal(k->kinds, 3);
	free(k);
}

/* The same kernel with another grid is another kind; the key is never 0. */
static void test_key(void **state)
{
	static const unsigned g16[3] = { 16, 1, 1 }, g1[3] = { 1, 1, 1 };
	static const unsigned g0[3] = { 0, 0, 0 };
	static int a, b;

	(void)state;
	assert_int_equal(kdur_key(&a, g16), kdur_key(&a, g16));
	assert_int_not_equal(kdur_key(&a, g16), kdur_key(&a, g1));
	assert_int_not_equal(kdur_key(&a, g16), kdur_key(&b, g16));
	assert_int_not_equal(kdur_key(NULL, g0), 0);
}

/*
 * Direct-mapped: a kind whose slot another takes starts over, and a
 * timing of it that comes back late is dropped, not credited to the other.
 */
static void test_replaced(void **state)
{
	struct kdur *k = new_kdur();
	uint64_t a = 11, b;

	(void)state;
	/* Find another key with a's slot (the table is direct-mapped). */
	for (b = a + 1;; b++) {
		kdur_init(k, 0);
		kdur_launch(k, a);
		kdur_add(k, a, 10 * KDUR_UNIT_NS);
		kdur_launch(k, b);
		if (kdur_weight(k, a, 99) == 99)
			break;
		assert_true(b < a + 100 * KDUR_SLOTS);
	}
	assert_int_equal(k->replaced, 1);
	assert_int_equal(k->kinds, 0);
	kdur_add(k, a, 30 * KDUR_UNIT_NS);	/* late: dropped */
	assert_int_equal(kdur_weight(k, b, 7), 7);
	assert_int_equal(kdur_weight(k, a, 7), 7);
	assert_int_equal(k->timed, 1);
	/* b started over: its second launch is timed. */
	assert_int_equal(kdur_launch(k, b), 1);
	free(k);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_which_launches_timed),
		cmocka_unit_test(test_weight_from_estimate),
		cmocka_unit_test(test_key),
		cmocka_unit_test(test_replaced),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
