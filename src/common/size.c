/*
 * size.c - parsing and printing of memory sizes (see size.h for the grammar).
 *
 * Owns: size_parse() and size_format().
 *
 * All arithmetic is integer.  Sizes reach 2^64 - 1 and a double has 53 bits
 * of mantissa, so "16383.999999T" through strtod() would be off by bytes and
 * overflow would be guessed rather than detected.  Fractions are kept as a
 * decimal numerator over 10^k and multiplied by the unit one bit at a time
 * (the unit is a power of two), which is exact with 64-bit integers.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "size.h"

/* Fraction digits kept: 10^18 < 2^63, so a doubled remainder fits in u64. */
#define FRAC_DIGITS_MAX 18

static int lower(int c)
{
	return (c >= 'A' && c <= 'Z') ? c - 'A' + 'a' : c;
}

/*
 * Unit suffix -> shift (log2 of the multiplier).  -1 if not a unit.  The
 * caller has already stripped the number and at most one blank.
 */
static int unit_shift(const char *u)
{
	static const char prefixes[] = "kmgt";
	const char *p;
	int shift;

	if (u[0] == '\0')
		return 0;
	if (lower(u[0]) == 'b' && u[1] == '\0')
		return 0;
	p = strchr(prefixes, lower(u[0]));	/* u[0] != '\0' here */
	if (p == NULL)
		return -1;
	shift = 10 * (int)(p - prefixes + 1);
	u++;
	if (u[0] == '\0')
		return shift;
	if (lower(u[0]) == 'b' && u[1] == '\0')
		return shift;
	if (lower(u[0]) == 'i' && lower(u[1]) == 'b' && u[2] == '\0')
		return shift;
	return -1;
}

/*
 * floor(num / 10^digits * 2^shift), exactly: long division of num * 2^shift
 * by 10^digits, one bit of the multiplier at a time.  num < 10^digits, so
 * the result is < 2^shift <= 2^40 and the remainder stays < 10^18.
 */
static uint64_t frac_scale(uint64_t num, uint64_t den, int shift)
{
	uint64_t q = 0, r = num;
	int i;

	for (i = 0; i < shift; i++) {
		r *= 2;
		q = q * 2 + r / den;
		r %= den;
	}
	return q;
}

int size_parse(const char *s, uint64_t *out)
{
	uint64_t whole = 0, num = 0, den = 1, v;
	bool has_frac = false;
	int shift;

	if (s == NULL || out == NULL)
		return -EINVAL;
	if (*s < '0' || *s > '9')
		return -EINVAL;	/* empty, sign, blank, ".5" */

	for (; *s >= '0' && *s <= '9'; s++) {
		uint64_t d = (uint64_t)(*s - '0');

		if (whole > (UINT64_MAX - d) / 10)
			return -ERANGE;
		whole = whole * 10 + d;
	}
	if (*s == '.') {
		s++;
		if (*s < '0' || *s > '9')
			return -EINVAL;	/* "5." */
		has_frac = true;
		for (int n = 0; *s >= '0' && *s <= '9'; s++, n++) {
			/* Digits past 10^-18 are below a byte even for T. */
			if (n >= FRAC_DIGITS_MAX)
				continue;
			num = num * 10 + (uint64_t)(*s - '0');
			den *= 10;
		}
	}
	if (*s == ' ') {
		s++;
		if (*s == '\0')
			return -EINVAL;	/* the blank must introduce a unit */
	}

	shift = unit_shift(s);
	if (shift < 0)
		return -EINVAL;
	if (has_frac && shift == 0)
		return -EINVAL;

	if (shift > 0 && whole > (UINT64_MAX >> shift))
		return -ERANGE;
	v = whole << shift;
	if (has_frac) {
		uint64_t f = frac_scale(num, den, shift);

		if (v > UINT64_MAX - f)
			return -ERANGE;
		v += f;
	}
	*out = v;
	return 0;
}

int size_format(uint64_t v, char *buf, size_t len)
{
	static const char *const units[] = {
		"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB",
	};
	uint64_t whole, rem, hundredths;
	int k = 0, shift, drop, n;

	if (buf == NULL)
		return -EINVAL;
	while (k < 6 && (v >> (10 * (k + 1))) != 0)
		k++;

	if (k == 0) {
		n = snprintf(buf, len, "%llu B", (unsigned long long)v);
		goto out;
	}

	for (;;) {
		shift = 10 * k;
		whole = v >> shift;
		rem = v & ((UINT64_C(1) << shift) - 1);
		/*
		 * Round rem / 2^shift to hundredths.  rem * 100 overflows for
		 * shift > 57, so drop low bits first: below 2^-50 of the unit
		 * they cannot change two decimals.
		 */
		drop = shift > 50 ? shift - 50 : 0;
		rem >>= drop;
		shift -= drop;
		hundredths = (rem * 100 + (UINT64_C(1) << (shift - 1))) >> shift;
		if (hundredths == 100) {
			whole++;
			hundredths = 0;
		}
		/* 1023.999 MiB rounds to 1024.00: say 1.00 GiB instead. */
		if (whole < 1024 || k == 6)
			break;
		k++;
	}
	n = snprintf(buf, len, "%llu.%02llu %s", (unsigned long long)whole,
		     (unsigned long long)hundredths, units[k]);
out:
	if (n < 0 || (size_t)n >= len)
		return -ENOSPC;
	return 0;
}
