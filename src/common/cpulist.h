/*
 * cpulist.h - the CPU list grammar of `kmux daemon --region-cpus` ("2-3",
 * "0,4-7"), the one Linux prints in Cpus_allowed_list and cpuset.cpus.
 *
 *	list  := item { "," item }
 *	item  := cpu | cpu "-" cpu	(the first no larger than the second)
 *	cpu   := decimal digits
 *
 * Strict: no blanks, no empty items, no sign, no stride ("0-7:2"); every CPU
 * below a limit the caller gives (the machine's).  libc only.
 */
#ifndef KMUX_CPULIST_H
#define KMUX_CPULIST_H

#include <sched.h>
#include <stddef.h>

/*
 * Parse s into *set (cleared first).  Every CPU must be < ncpus (and below
 * CPU_SETSIZE).  0, or -EINVAL with why in err ("CPU 9 is beyond this
 * machine's 4").
 */
int cpulist_parse(const char *s, int ncpus, cpu_set_t *set, char *err,
		  size_t errlen);

/* cpulist_parse against this machine's configured CPUs. */
int cpulist_parse_here(const char *s, cpu_set_t *set, char *err,
		       size_t errlen);

/* from without the CPUs in drop, into *out (out may be from). */
void cpulist_without(cpu_set_t *out, const cpu_set_t *from,
		     const cpu_set_t *drop);

/* set as a canonical list ("1,3-5"; "" when empty) into buf; -ENOSPC. */
int cpulist_format(const cpu_set_t *set, char *buf, size_t len);

#endif
