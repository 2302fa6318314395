/*
 * test-suspend.c - unit tests of the evict mode's load control rules
 * (suspend.c): a task suspends at the second thrash ask refused in a row
 * (a grant between starts the count again), and a shrunk task waits for
 * what it needs only when that is above its budget now and within the
 * largest it held.
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>

#include <cmocka.h>

#include "suspend.h"

#define MIB (UINT64_C(1) << 20)

static void test_refusals(void **state)
{
	struct suspend_asks s = { 0 };

	(void)state;
	assert_false(suspend_after_ask(&s, false));
	assert_true(suspend_after_ask(&s, false));
	/* The count starts again after a suspension. */
	assert_false(suspend_after_ask(&s, false));
	assert_true(suspend_after_ask(&s, false));
}

static void test_grant_resets(void **state)
{
	struct suspend_asks s = { 0 };

	(void)state;
	assert_false(suspend_after_ask(&s, false));
	assert_false(suspend_after_ask(&s, true));
	assert_false(suspend_after_ask(&s, false));
	assert_true(suspend_after_ask(&s, false));
	/* Grants alone never suspend. */
	for (int i = 0; i < 5; i++)
		assert_false(suspend_after_ask(&s, true));
}

static void test_need(void **state)
{
	(void)state;
	/* Shrunk 10 -> 6 MiB, needs 8: wait for it. */
	assert_true(suspend_for_need(8 * MIB, 6 * MIB, 10 * MIB));
	assert_true(suspend_for_need(10 * MIB, 6 * MIB, 10 * MIB));
	/* It fits now: nothing to wait for. */
	assert_false(suspend_for_need(6 * MIB, 6 * MIB, 10 * MIB));
	/* More than it ever held: waiting may never end; it fails. */
	assert_false(suspend_for_need(10 * MIB + 1, 6 * MIB, 10 * MIB));
	assert_false(suspend_for_need(UINT64_MAX, 0, UINT64_MAX - 1));
	assert_true(suspend_for_need(UINT64_MAX, 0, UINT64_MAX));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_grant_resets),
		cmocka_unit_test(test_need),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
