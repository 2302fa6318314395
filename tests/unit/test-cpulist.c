/*
 * test-cpulist.c - the CPU list grammar of --region-cpus: what it accepts,
 * the set each list means, what it refuses (with the reason), and that
 * cpulist_format() prints a list that parses back to the same set.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "cpulist.h"

/* s parses (on a machine of ncpus) and formats back as canon. */
static void ok(const char *s, int ncpus, const char *canon, int count)
{
	char err[256] = "", buf[256];
	cpu_set_t set, again;

	if (cpulist_parse(s, ncpus, &set, err, sizeof(err)))
		fail_msg("'%s' refused: %s", s, err);
	assert_int_equal(CPU_COUNT(&set), count);
	assert_int_equal(cpulist_format(&set, buf, sizeof(buf)), 0);
	assert_string_equal(buf, canon);
	assert_int_equal(cpulist_parse(buf, ncpus, &again, err, sizeof(err)), 0);
	assert_true(CPU_EQUAL(&set, &again));
}

/* s is refused, and the reason contains why. */
static void bad(const char *s, int ncpus, const char *why)
{
	char err[256] = "";
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(5, &set);
	assert_int_equal(cpulist_parse(s, ncpus, &set, err, sizeof(err)),
			 -EINVAL);
	if (!strstr(err, why))
		fail_msg("'%s': reason '%s' lacks '%s'", s ? s : "(null)", err,
			 why);
	assert_int_equal(CPU_COUNT(&set), 0);	/* never half-filled */
}

static void test_accepts(void **state)
{
	(void)state;
	ok("1", 2, "1", 1);
	ok("0", 1, "0", 1);
	ok("2-3", 4, "2-3", 2);
	ok("0,4-7", 8, "0,4-7", 5);
	ok("3,1,2", 4, "1-3", 3);
	ok("1-1", 2, "1", 1);
	ok("0-1,1", 2, "0-1", 2);	/* overlaps are harmless */
	ok("007", 8, "7", 1);
	ok("0,2,4", 8, "0,2,4", 3);
	ok("1000-1023", 1024, "1000-1023", 24);
}

static void test_refuses(void **state)
{
	(void)state;
	bad("", 4, "empty");
	bad(NULL, 4, "empty");
	bad("3-1", 4, "backwards");
	bad("x", 4, "not a CPU list");
	bad("1,", 4, "not a CPU list");
	bad(",1", 4, "not a CPU list");
	bad("1,,2", 4, "not a CPU list");
	bad("-1", 4, "not a CPU list");
	bad("1-", 4, "not a CPU list");
	bad("1-2-3", 4, "not a CPU list");
	bad(" 1", 4, "not a CPU list");
	bad("1 ", 4, "not a CPU list");
	bad("+1", 4, "not a CPU list");
	bad("0-7:2", 8, "not a CPU list");
	bad("1x", 4, "not a CPU list");
	bad("4", 4, "beyond this machine's 4");
	bad("2-3", 3, "CPU 3 is beyond");
	bad("99999999999999999999", 4, "too large");
	bad("1024", 2048, "too large");
}

static void test_format_small_buffer(void **state)
{
	char buf[4];
	cpu_set_t set;

	(void)state;
	CPU_ZERO(&set);
	assert_int_equal(cpulist_format(&set, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "");
	CPU_SET(1, &set);
	CPU_SET(3, &set);
	CPU_SET(100, &set);
	assert_int_equal(cpulist_format(&set, buf, sizeof(buf)), -ENOSPC);
	assert_int_equal(cpulist_format(&set, buf, 0), -ENOSPC);
}

static void test_without(void **state)
{
	char buf[64], err[128];
	cpu_set_t from, drop, out;

	(void)state;
	assert_int_equal(cpulist_parse("0-7", 8, &from, err, sizeof(err)), 0);
	assert_int_equal(cpulist_parse("2,6-9", 16, &drop, err, sizeof(err)),
			 0);
	cpulist_without(&out, &from, &drop);
	assert_int_equal(cpulist_format(&out, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "0-1,3-5");
	/* In place, and everything dropped leaves nothing. */
	cpulist_without(&from, &from, &from);
	assert_int_equal(CPU_COUNT(&from), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_accepts),
		cmocka_unit_test(test_refuses),
		cmocka_unit_test(test_format_small_buffer),
		cmocka_unit_test(test_without),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
