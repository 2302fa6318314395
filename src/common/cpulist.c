/*
 * cpulist.c - parsing and printing CPU lists (see cpulist.h).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cpulist.h"

/* A decimal CPU number at *p, advanced past it; -1 if none or too large. */
static long cpu_number(const char **p)
{
	long v = 0;

	if (**p < '0' || **p > '9')
		return -1;
	while (**p >= '0' && **p <= '9') {
		v = v * 10 + (**p - '0');
		if (v >= CPU_SETSIZE)
			return -2;
		(*p)++;
	}
	return v;
}

int cpulist_parse(const char *s, int ncpus, cpu_set_t *set, char *err,
		  size_t errlen)
{
	const char *p = s;
	cpu_set_t got;
	long lo, hi;

	/* Filled on success only: a refused list leaves *set empty. */
	CPU_ZERO(set);
	CPU_ZERO(&got);
	if (!s || !*s) {
		snprintf(err, errlen, "empty CPU list");
		return -EINVAL;
	}
	if (ncpus > CPU_SETSIZE)
		ncpus = CPU_SETSIZE;
	for (;;) {
		lo = hi = cpu_number(&p);
		if (lo >= 0 && *p == '-') {
			p++;
			hi = cpu_number(&p);
		}
		if (lo == -2 || hi == -2) {
			snprintf(err, errlen, "CPU number too large in '%s'",
				 s);
			return -EINVAL;
		}
		if (lo < 0 || hi < 0 || (*p && *p != ',')) {
			snprintf(err, errlen, "'%s' is not a CPU list (like "
				 "2-3 or 0,4-7)", s);
			return -EINVAL;
		}
		if (hi < lo) {
			snprintf(err, errlen, "range %ld-%ld in '%s' runs "
				 "backwards", lo, hi, s);
			return -EINVAL;
		}
		if (hi >= ncpus) {
			snprintf(err, errlen, "CPU %ld is beyond this "
				 "machine's %d (0-%d)", hi, ncpus, ncpus - 1);
			return -EINVAL;
		}
		for (long c = lo; c <= hi; c++)
			CPU_SET((int)c, &got);
		if (!*p) {
			*set = got;
			return 0;
		}
		p++;	/* ',' */
	}
}

int cpulist_parse_here(const char *s, cpu_set_t *set, char *err,
		       size_t errlen)
{
	long n = sysconf(_SC_NPROCESSORS_CONF);

	return cpulist_parse(s, n > 0 ? (int)n : 1, set, err, errlen);
}

void cpulist_without(cpu_set_t *out, const cpu_set_t *from,
		     const cpu_set_t *drop)
{
	cpu_set_t both;

	CPU_AND(&both, from, drop);
	CPU_XOR(out, from, &both);
}

int cpulist_format(const cpu_set_t *set, char *buf, size_t len)
{
	size_t off = 0;
	int n;

	if (len == 0)
		return -ENOSPC;
	buf[0] = '\0';
	for (int c = 0; c < CPU_SETSIZE; c++) {
		int e = c;

		if (!CPU_ISSET(c, set))
			continue;
		while (e + 1 < CPU_SETSIZE && CPU_ISSET(e + 1, set))
			e++;
		if (e == c)
			n = snprintf(buf + off, len - off, "%s%d",
				     off ? "," : "", c);
		else
			n = snprintf(buf + off, len - off, "%s%d-%d",
				     off ? "," : "", c, e);
		if (n < 0 || (size_t)n >= len - off)
			return -ENOSPC;
		off += (size_t)n;
		c = e;
	}
	return 0;
}
