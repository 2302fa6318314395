/*
 * test-shrink.c - unit tests of the evict mode's budget-shrinking rule
 * (shrink.c): the floor (the larger of one operation's need and the
 * recently touched bytes, plus pass-through bytes, rounded up to the
 * granularity), the new budget (never below the floor, never above the
 * old one), no shrink while thrashing, and the edges (saturation, a give
 * larger than the budget, granularity 0); objects never touched count
 * as recent, and a young task gives nothing.
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>

#include <cmocka.h>

#include "shrink.h"

#define MIB (UINT64_C(1) << 20)

/* bench/memory/staged.cu's shape: 512 MiB stages, one in use. */
static struct shrink_in staged(void)
{
	return (struct shrink_in){ .limit = 776 * MIB, .give = 171 * MIB,
				   .op_need = 512 * MIB, .recent = 512 * MIB,
				   .pass = 4096, .gran = 2 * MIB };
}

static void test_floor(void **state)
{
	struct shrink_in in = staged();

	(void)state;
	/* 512 MiB + 4 KiB, up to the next 2 MiB. */
	assert_int_equal(shrink_floor(&in), 514 * MIB);
	/* The larger of op_need and recent counts, not their sum. */
	in.op_need = 100 * MIB;
	assert_int_equal(shrink_floor(&in), 514 * MIB);
	in.recent = 10 * MIB;
	in.op_need = 300 * MIB;
	assert_int_equal(shrink_floor(&in), 302 * MIB);
	/* Exactly a multiple: not rounded further. */
	in.pass = 0;
	assert_int_equal(shrink_floor(&in), 300 * MIB);
	/* Nothing at all: one granule. */
	in = (struct shrink_in){ .gran = 2 * MIB };
	assert_int_equal(shrink_floor(&in), 2 * MIB);
	in.gran = 0;
	assert_int_equal(shrink_floor(&in), 1);
	/* Allocated, never touched: about to be used, so counted with the
	 * recent bytes (a task asked while it sets up keeps its budget). */
	in = staged();
	in.recent = 100 * MIB;
	in.op_need = 64 * MIB;
	in.untouched = 400 * MIB;
	assert_int_equal(shrink_floor(&in), 502 * MIB);
	in.untouched = UINT64_MAX;
	assert_true(shrink_floor(&in) >= UINT64_MAX - 2 * MIB);
	/* Saturating. */
	in = (struct shrink_in){ .recent = UINT64_MAX - 5, .pass = 100,
				 .gran = 2 * MIB };
	assert_true(shrink_floor(&in) >= UINT64_MAX - 2 * MIB);
}

static void test_plan(void **state)
{
	struct shrink_in in = staged();

	(void)state;
	/* Asked for less than it can give: limit - give, rounded down
	 * (it gives at least what was asked). */
	assert_int_equal(shrink_plan(&in), 604 * MIB);
	/* Asked for more: down to the floor, no further. */
	in.give = 500 * MIB;
	assert_int_equal(shrink_plan(&in), 514 * MIB);
	in.give = UINT64_MAX;
	assert_int_equal(shrink_plan(&in), 514 * MIB);
	/* The floor at or above the budget: nothing to give. */
	in.limit = 514 * MIB;
	assert_int_equal(shrink_plan(&in), 0);
	in.limit = 400 * MIB;
	assert_int_equal(shrink_plan(&in), 0);
	/* A give smaller than a granule gives a whole one. */
	in = staged();
	in.give = MIB;
	assert_int_equal(shrink_plan(&in), 774 * MIB);
	in.give = 0;
	assert_int_equal(shrink_plan(&in), 0);
	/* Idle objects only: down to the pass-through bytes. */
	in = (struct shrink_in){ .limit = 256 * MIB, .give = 1 << 30,
				 .op_need = 16 * MIB, .gran = 2 * MIB };
	assert_int_equal(shrink_plan(&in), 16 * MIB);
}

static void test_thrashing(void **state)
{
	struct shrink_in in = staged();

	(void)state;
	in.thrashing = true;
	assert_int_equal(shrink_plan(&in), 0);
	in.give = UINT64_MAX;
	assert_int_equal(shrink_plan(&in), 0);
	in.thrashing = false;
	assert_int_equal(shrink_plan(&in), 514 * MIB);
}

/* Observed for less than the idle horizon: nothing is idle yet. */
static void test_young(void **state)
{
	struct shrink_in in = staged();

	(void)state;
	in.give = UINT64_MAX;
	in.young = true;
	assert_int_equal(shrink_plan(&in), 0);
	in.young = false;
	assert_int_equal(shrink_plan(&in), 514 * MIB);
	/* Setting up: most of it untouched, so nothing to give. */
	in.recent = 64 * MIB;
	in.untouched = 712 * MIB;
	assert_int_equal(shrink_plan(&in), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_floor),
		cmocka_unit_test(test_plan),
		cmocka_unit_test(test_thrashing),
		cmocka_unit_test(test_young),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
