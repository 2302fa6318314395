/*
 * test-num.c - unit tests of num_parse() and num_parse_seconds(): what
 * strtol and strtod would take and the grammar refuses, the range edges,
 * and that *out is left alone on failure.
 */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>

#include <cmocka.h>

#include "num.h"

static void test_num_ok(void **state)
{
	long v = 0;

	(void)state;
	assert_int_equal(num_parse("1", 1, 64, &v), 0);
	assert_int_equal(v, 1);
	assert_int_equal(num_parse("64", 1, 64, &v), 0);
	assert_int_equal(v, 64);
	assert_int_equal(num_parse("007", 1, 64, &v), 0);	/* decimal */
	assert_int_equal(v, 7);
	assert_int_equal(num_parse("-100", -100, 100, &v), 0);
	assert_int_equal(v, -100);
	assert_int_equal(num_parse("0", -100, 100, &v), 0);
	assert_int_equal(v, 0);
}

static void test_num_refused(void **state)
{
	static const char *bad[] = {
		"", " 1", "1 ", "+1", "1x", "0x1", "1.0", "1e2", "--1", "-",
		"\t1", "one",
	};
	long v = 42;

	(void)state;
	assert_int_equal(num_parse(NULL, 1, 64, &v), -EINVAL);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(num_parse(bad[i], -100, 100, &v), -EINVAL);
	/* A sign only where the range has negative numbers. */
	assert_int_equal(num_parse("-1", 1, 64, &v), -EINVAL);
	assert_int_equal(num_parse("0", 1, 64, &v), -ERANGE);
	assert_int_equal(num_parse("65", 1, 64, &v), -ERANGE);
	assert_int_equal(num_parse("-101", -100, 100, &v), -ERANGE);
	assert_int_equal(num_parse("99999999999999999999999", 1, LONG_MAX,
				   &v), -ERANGE);
	assert_int_equal(v, 42);
}

static void test_seconds(void **state)
{
	double d = 7;

	(void)state;
	assert_int_equal(num_parse_seconds("0.5", 0.1, 3600, &d), 0);
	assert_true(d == 0.5);
	assert_int_equal(num_parse_seconds("2", 0.1, 3600, &d), 0);
	assert_true(d == 2);
	assert_int_equal(num_parse_seconds("3600", 0.1, 3600, &d), 0);
	d = 7;
	assert_int_equal(num_parse_seconds("0x1", 0.1, 3600, &d), -EINVAL);
	assert_int_equal(num_parse_seconds(" 1", 0.1, 3600, &d), -EINVAL);
	assert_int_equal(num_parse_seconds("1e2", 0.1, 3600, &d), -EINVAL);
	assert_int_equal(num_parse_seconds("inf", 0.1, 3600, &d), -EINVAL);
	assert_int_equal(num_parse_seconds("nan", 0.1, 3600, &d), -EINVAL);
	assert_int_equal(num_parse_seconds(".5", 0.1, 3600, &d), -EINVAL);
	assert_int_equal(num_parse_seconds("1.", 0.1, 3600, &d), -EINVAL);
	assert_int_equal(num_parse_seconds("-1", 0.1, 3600, &d), -EINVAL);
	assert_int_equal(num_parse_seconds("0.05", 0.1, 3600, &d), -ERANGE);
	assert_int_equal(num_parse_seconds("3601", 0.1, 3600, &d), -ERANGE);
	assert_int_equal(num_parse_seconds(NULL, 0.1, 3600, &d), -EINVAL);
	assert_true(d == 7);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_num_ok),
		cmocka_unit_test(test_num_refused),
		cmocka_unit_test(test_seconds),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
