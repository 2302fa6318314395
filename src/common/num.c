/*
 * num.c - strict integer and seconds parsing (num.h): the grammar is
 * checked character by character first, so that strtol and strtod only
 * ever see what it allows.
 */
#include <errno.h>
#include <stdlib.h>

#include "num.h"

static int num_digits(const char *s)
{
	int n = 0;

	while (s[n] >= '0' && s[n] <= '9')
		n++;
	return n;
}

int num_parse(const char *s, long lo, long hi, long *out)
{
	const char *d = s;
	char *end;
	long v;

	if (!s)
		return -EINVAL;
	if (*d == '-' && lo < 0)
		d++;
	if (num_digits(d) == 0 || d[num_digits(d)] != '\0')
		return -EINVAL;
	errno = 0;
	v = strtol(s, &end, 10);
	if (errno == ERANGE || v < lo || v > hi)
		return -ERANGE;
	if (errno || *end)
		return -EINVAL;
	*out = v;
	return 0;
}

int num_parse_seconds(const char *s, double lo, double hi, double *out)
{
	const char *p = s;
	char *end;
	double v;
	int n;

	if (!s || (n = num_digits(p)) == 0)
		return -EINVAL;
	p += n;
	if (*p == '.') {
		p++;
		if ((n = num_digits(p)) == 0)
			return -EINVAL;
		p += n;
	}
	if (*p)
		return -EINVAL;
	errno = 0;
	v = strtod(s, &end);
	if (errno || *end)
		return -EINVAL;
	if (!(v >= lo) || v > hi)
		return -ERANGE;
	*out = v;
	return 0;
}
