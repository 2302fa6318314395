/*
 * fuzz-verify-log.c - libFuzzer harness for `kmux verify`'s log reader
 * (src/cli/verify-log.c).  The logs are written by the preload inside the
 * program under test, into a file that program can also write: nothing in
 * them is trusted.  For every input this checks that:
 *   - vlog_parse_line() on each line returns 0, -EINVAL or -ENOMEM, and an
 *     accepted line has a thread number from 1 and a kernel list that is
 *     not empty and holds no blank or control byte;
 *   - vlog_parse_sched() on each line returns 0 or -EINVAL, and an
 *     accepted "sched" record counts one process, off (streams=0) or not;
 *   - vlog_read() on the whole input returns 0, -EINVAL or -ENOMEM, with a
 *     reason on -EINVAL, and never reads outside it (ASan);
 *   - an accepted log compares identical with itself, its copy count is the
 *     sum over its processes, and each process's copies are numbered
 *     0, 1, 2, ... in order;
 *   - its "sched" sums count no more processes off than processes, and
 *     vlog_unscheduled() gives a reason exactly when a process was off, or
 *     no operation was placed (no "placed" record, every "sched" one
 *     ops=0 or none at all);
 *   - an accepted log with one copy's hash changed is reported different,
 *     at a copy that exists.
 * Built and run by tests/fuzz/build-verify-log.sh.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "verify-log.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int cond, const char *what)
{
	if (!cond) {
		fprintf(stderr, "fuzz-verify-log: %s\n", what);
		abort();
	}
}

static void sched_line(const char *line)
{
	struct vlog_sched s;
	long pid;
	int r;

	r = vlog_parse_sched(line, &pid, &s);
	check(r == 0 || r == -EINVAL, "parse_sched: unexpected return code");
	check(r || (s.procs == 1 && s.off_procs <= 1 && pid >= 0),
	      "a bad sched record accepted");
}

static void sched_sums(const struct vlog *l)
{
	const struct vlog_sched *s = &l->sched;
	char why[256];
	const char *u = vlog_unscheduled(l, why, sizeof(why));
	int want = s->off_procs || (!s->ops && !s->placed);

	check(s->off_procs <= s->procs, "more processes off than seen");
	check(!u == !want, "not scheduled, or scheduled, wrongly");
	check(!u || (u == why && why[0]), "no reason given");
}

static void each_line(const char *buf, size_t size)
{
	const char *p = buf, *end = buf + size, *nl;

	while (p < end) {
		struct vlog_copy c;
		size_t n;
		char *line;
		long pid;
		int r;

		nl = memchr(p, '\n', (size_t)(end - p));
		n = nl ? (size_t)(nl - p) : (size_t)(end - p);
		line = strndup(p, n);
		check(line != NULL, "out of memory");
		r = vlog_parse_line(line, &pid, &c);
		check(r == 0 || r == -EINVAL || r == -ENOMEM,
		      "parse_line: unexpected return code");
		if (r == 0) {
			check(c.thread >= 1 && pid >= 0, "bad thread or pid");
			check(c.kernels && c.kernels[0], "empty kernel list");
			for (const char *k = c.kernels; *k; k++)
				check(*k > ' ' && *k <= '~',
				      "a blank or control byte in kernels");
			free(c.kernels);
		}
		sched_line(line);
		free(line);
		if (!nl)
			break;
		p = nl + 1;
	}
}

static void whole(const uint8_t *data, size_t size)
{
	struct vlog l, m;
	struct vlog_diff d;
	char err[256];
	size_t total = 0;
	FILE *f;
	int r;

	f = fmemopen((void *)data, size, "r");
	if (!f)
		return;
	r = vlog_read(f, &l, err, sizeof(err));
	fclose(f);
	check(r == 0 || r == -EINVAL || r == -ENOMEM,
	      "read: unexpected return code");
	check(r != -EINVAL || err[0], "a refusal without a reason");
	if (r) {
		vlog_release(&l);
		return;
	}
	for (size_t i = 0; i < l.n; i++) {
		total += l.proc[i].n;
		for (size_t k = 0; k < l.proc[i].n; k++)
			check(l.proc[i].copy[k].idx == k,
			      "copies not numbered 0, 1, 2, ...");
	}
	check(total == vlog_count(&l), "count is not the sum");
	sched_sums(&l);
	check(vlog_compare(&l, &l, &d) == 0, "a log differs from itself");
	if (total) {
		/* The same input read again, one copy's contents changed. */
		f = fmemopen((void *)data, size, "r");
		check(f != NULL, "fmemopen failed the second time");
		check(vlog_read(f, &m, err, sizeof(err)) == 0,
		      "the same input read differently");
		fclose(f);
		for (size_t i = 0; i < m.n; i++)
			if (m.proc[i].n) {
				struct vlog_copy *c = &m.proc[i].copy[0];

				c->hash ^= 1;
				c->hashed = 1;
				break;
			}
		r = vlog_compare(&l, &m, &d);
		check(r == 1 || r == -ENOMEM, "a changed hash not reported");
		check(r != 1 || d.a || d.b, "a difference at no copy");
		vlog_release(&m);
	}
	vlog_release(&l);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	each_line((const char *)data, size);
	whole(data, size);
	return 0;
}
