/*
 * test-size.c - unit tests of size_parse() and size_format().
 *
 * Table-driven: every accepted spelling with its exact byte count, every
 * rejected one with its error, the 64-bit edges, and print-then-parse
 * round trips over the whole range.
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "size.h"

#define KiB (UINT64_C(1) << 10)
#define MiB (UINT64_C(1) << 20)
#define GiB (UINT64_C(1) << 30)
#define TiB (UINT64_C(1) << 40)

struct ok_case {
	const char *s;
	uint64_t v;
};

static void test_parse_ok(void **state)
{
	static const struct ok_case cases[] = {
		{ "0", 0 },
		{ "8192", 8192 },
		{ "8192B", 8192 },
		{ "8192b", 8192 },
		{ "1K", KiB },
		{ "100KB", 100 * KiB },
		{ "100kb", 100 * KiB },
		{ "100KiB", 100 * KiB },
		{ "100kib", 100 * KiB },
		{ "100k", 100 * KiB },
		{ "512M", 512 * MiB },
		{ "512MB", 512 * MiB },
		{ "512MiB", 512 * MiB },
		{ "512mIb", 512 * MiB },
		{ "12G", 12 * GiB },
		{ "12g", 12 * GiB },
		{ "12GB", 12 * GiB },
		{ "1.5GiB", GiB + GiB / 2 },
		{ "1.5G", GiB + GiB / 2 },
		{ "0.5K", 512 },
		{ "2T", 2 * TiB },
		{ "2TiB", 2 * TiB },
		{ "007M", 7 * MiB },
		{ "1.50 GiB", GiB + GiB / 2 },	/* size_format()'s own output */
		{ "12 G", 12 * GiB },
		{ "512 B", 512 },
		/* Fractions round down to a whole byte. */
		{ "0.3K", 307 },		/* 307.2 */
		{ "0.001K", 1 },		/* 1.024 */
		{ "0.0001K", 0 },		/* 0.1024 */
		{ "1.999999999999999999999T", 2 * TiB - 1 },
		{ "0.000000000000000000001T", 0 },
		/* Exact edges of 64 bits. */
		{ "18446744073709551615", UINT64_MAX },
		{ "18446744073709551615B", UINT64_MAX },
		{ "16777215T", UINT64_C(16777215) << 40 },
		{ "16777215.999999999999T", UINT64_MAX - 1 },
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		uint64_t v = 0xdeadbeef;
		int rc = size_parse(cases[i].s, &v);

		if (rc != 0 || v != cases[i].v)
			fail_msg("size_parse(\"%s\") = %d, %llu; want 0, %llu",
				 cases[i].s, rc, (unsigned long long)v,
				 (unsigned long long)cases[i].v);
	}
}

struct bad_case {
	const char *s;
	int err;
};

static void test_parse_bad(void **state)
{
	static const struct bad_case cases[] = {
		{ "", -EINVAL },
		{ "12Q", -EINVAL },
		{ "-1G", -EINVAL },
		{ "+1G", -EINVAL },
		{ "-0", -EINVAL },
		{ "G", -EINVAL },
		{ "KiB", -EINVAL },
		{ ".5G", -EINVAL },
		{ "5.G", -EINVAL },
		{ "1.5", -EINVAL },		/* half a byte */
		{ "1.5B", -EINVAL },
		{ "1.5 B", -EINVAL },
		{ " 1G", -EINVAL },
		{ "1G ", -EINVAL },
		{ "1 ", -EINVAL },
		{ "1  G", -EINVAL },
		{ "1\tG", -EINVAL },
		{ "1GG", -EINVAL },
		{ "1Gi", -EINVAL },
		{ "1GiBB", -EINVAL },
		{ "1iB", -EINVAL },
		{ "1P", -EINVAL },		/* not in the grammar */
		{ "1e9", -EINVAL },
		{ "0x10", -EINVAL },
		{ "1,5G", -EINVAL },
		{ "1.2.3G", -EINVAL },
		{ "12Gb!", -EINVAL },
		{ "18446744073709551616", -ERANGE },
		{ "99999999999999999999999", -ERANGE },
		{ "16777216T", -ERANGE },
		{ "17179869184G", -ERANGE },
		{ "16777215.9999999999999999999999999T", 0 },	/* < 2^64: ok */
		{ "18446744073709551615.5K", -ERANGE },
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		uint64_t v = 42;
		int rc = size_parse(cases[i].s, &v);

		if (rc != cases[i].err)
			fail_msg("size_parse(\"%s\") = %d; want %d",
				 cases[i].s, rc, cases[i].err);
		if (rc != 0 && v != 42)
			fail_msg("size_parse(\"%s\") wrote *out on error",
				 cases[i].s);
	}
	assert_int_equal(size_parse(NULL, &(uint64_t){ 0 }), -EINVAL);
	assert_int_equal(size_parse("1G", NULL), -EINVAL);
}

/* Every fraction digit sequence just below 2^64 bytes overflows cleanly. */
static void test_parse_overflow_fraction(void **state)
{
	uint64_t v;

	(void)state;
	/* 16777215 T + 1023.999... G is 2^64 - 1 - (less than a byte). */
	assert_int_equal(size_parse("16777215.99999999999999T", &v), 0);
	assert_true(v >= UINT64_MAX - 1);
	/* 2^54 K = 2^64: one over. */
	assert_int_equal(size_parse("18014398509481984K", &v), -ERANGE);
	assert_int_equal(size_parse("18014398509481983K", &v), 0);
	assert_int_equal(v, UINT64_MAX - 1023);
	assert_int_equal(size_parse("18014398509481983.999K", &v), 0);
	assert_int_equal(v, UINT64_MAX - 1023 + 1022);	/* 1022.976 */
}

struct fmt_case {
	uint64_t v;
	const char *s;
};

static void test_format(void **state)
{
	static const struct fmt_case cases[] = {
		{ 0, "0 B" },
		{ 1, "1 B" },
		{ 1023, "1023 B" },
		{ 1024, "1.00 KiB" },
		{ 1536, "1.50 KiB" },
		{ GiB + GiB / 2, "1.50 GiB" },
		{ 12 * GiB, "12.00 GiB" },
		{ 512 * MiB, "512.00 MiB" },
		{ 2 * TiB, "2.00 TiB" },
		{ GiB - 1, "1.00 GiB" },	/* 1023.99999 MiB rounds up */
		{ MiB - 5 * KiB, "1019.00 KiB" },
		{ 1024 * 1023 + 1018, "1023.99 KiB" },	/* .99414 */
		{ 1024 * 1023 + 1019, "1.00 MiB" },	/* .99511 */
		{ 141 * GiB + 300 * MiB, "141.29 GiB" },
		{ UINT64_C(1) << 50, "1.00 PiB" },
		{ UINT64_C(1) << 60, "1.00 EiB" },
		{ UINT64_MAX, "16.00 EiB" },
	};
	char buf[SIZE_FORMAT_MAX];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		assert_int_equal(size_format(cases[i].v, buf, sizeof(buf)), 0);
		if (strcmp(buf, cases[i].s) != 0)
			fail_msg("size_format(%llu) = \"%s\"; want \"%s\"",
				 (unsigned long long)cases[i].v, buf,
				 cases[i].s);
	}
}

static void test_format_short_buffer(void **state)
{
	char buf[SIZE_FORMAT_MAX];

	(void)state;
	memset(buf, 'x', sizeof(buf));
	assert_int_equal(size_format(12 * GiB, buf, 5), -ENOSPC);
	assert_string_equal(buf, "12.0");
	assert_int_equal(size_format(12 * GiB, buf, 10), 0);	/* 9 + NUL */
	assert_int_equal(size_format(12 * GiB, buf, 9), -ENOSPC);
	assert_int_equal(size_format(1, buf, 0), -ENOSPC);
	assert_int_equal(size_format(1, NULL, 10), -EINVAL);
}

/*
 * What size_format() prints parses back to within its rounding: half a
 * hundredth of the unit.
 */
static void test_format_parse_round_trip(void **state)
{
	uint64_t s = 0x9e3779b97f4a7c15ull;
	char buf[SIZE_FORMAT_MAX];
	int i;

	(void)state;
	for (i = 0; i < 100000; i++) {
		uint64_t v, back, unit = 1, err;

		s ^= s << 13;
		s ^= s >> 7;
		s ^= s << 17;
		v = s >> (s % 64);	/* spread over all magnitudes */
		assert_int_equal(size_format(v, buf, sizeof(buf)), 0);
		/* P and E are printed but not in size_parse()'s grammar. */
		if (strstr(buf, "PiB") != NULL || strstr(buf, "EiB") != NULL)
			continue;
		assert_int_equal(size_parse(buf, &back), 0);
		while (unit < (UINT64_C(1) << 40) && (v >> 10) >= unit)
			unit <<= 10;
		err = back > v ? back - v : v - back;
		if (err > unit / 200 + 1)
			fail_msg("%llu -> \"%s\" -> %llu", (unsigned long long)v,
				 buf, (unsigned long long)back);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_ok),
		cmocka_unit_test(test_parse_bad),
		cmocka_unit_test(test_parse_overflow_fraction),
		cmocka_unit_test(test_format),
		cmocka_unit_test(test_format_short_buffer),
		cmocka_unit_test(test_format_parse_round_trip),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
