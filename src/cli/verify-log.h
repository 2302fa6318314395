/*
 * verify-log.h - reading and comparing the logs libkmux.so writes for
 * `kmux verify` (KMUX_VERIFY_LOG; the format is in src/preload/verify.h):
 * one record per device-to-host copy, grouped by process, ordered by the
 * copy's number in its process.  Pure: no CUDA, no processes; the unit
 * tests feed it text.
 *
 * Processes of one run are told apart by pid and put in the order their
 * first line appears in the file; the k-th process of one run is compared
 * with the k-th of the other (exact for single-process commands, and for
 * commands whose processes start one after another).  Within a process,
 * copies are compared in program order when one thread made them all; when
 * several threads did, their interleaving differs from run to run, so the
 * copies are compared as a multiset (size, hash) instead, and the first
 * copy of either run without a match in the other is the divergence.
 *
 * Each process also leaves one "sched" record at exit (what its scheduler
 * did); they are summed into struct vlog_sched, which says whether the run
 * was scheduled at all (vlog_unscheduled()).  They play no part in the
 * comparison of copies.
 */
#ifndef KMUX_VERIFY_LOG_H
#define KMUX_VERIFY_LOG_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct vlog_copy {
	uint64_t idx;		/* in program order, from 0 */
	unsigned thread;	/* the thread that made it, from 1 */
	uint64_t bytes;
	uint64_t hash;
	int hashed;		/* 0: never known complete ("-") */
	char *kernels;		/* "a,b,c", or "-" */
};

struct vlog_proc {
	long pid;
	struct vlog_copy *copy;	/* sorted by idx after vlog_read() */
	size_t n, cap;
	unsigned threads;	/* threads that made copies */
};

/* The "sched" records of a run, summed (sums saturate). */
struct vlog_sched {
	size_t procs;		/* processes that wrote one */
	size_t off_procs;	/* ... with scheduling off (streams=0) */
	uint64_t contexts;	/* contexts that had a pool */
	uint64_t off;		/* times a context was switched off */
	uint64_t ops;		/* operations the scheduler placed */
	size_t placed;		/* "placed" records: processes that placed
				 * one, exit record or not */
};

struct vlog {
	struct vlog_proc *proc;
	size_t n, cap;
	struct vlog_sched sched;
};

/* One "copy" line; 0 (c->kernels allocated), -EINVAL or -ENOMEM. */
int vlog_parse_line(const char *line, long *pid, struct vlog_copy *c);

/* One "sched" line, as a sum over one process; 0 or -EINVAL. */
int vlog_parse_sched(const char *line, long *pid, struct vlog_sched *s);

/* One "placed" line ("placed pid=P"); 0 or -EINVAL. */
int vlog_parse_placed(const char *line, long *pid);

/*
 * Whether the run that wrote l was scheduled: NULL when some scheduler
 * placed operations in every process that recorded, else why not (in
 * buf): no record at all, scheduling off in a process, or nothing placed.
 * A run scheduled in part (contexts switched off after placing work) is
 * scheduled; l->sched.off tells the caller.
 */
const char *vlog_unscheduled(const struct vlog *l, char *buf, size_t len);

/*
 * All lines of f into l (zeroed first).  Lines starting with '#' and blank
 * lines are skipped.  0, or -EINVAL (a malformed line, a missing or
 * repeated copy number: err says which) or -ENOMEM.
 */
int vlog_read(FILE *f, struct vlog *l, char *err, size_t errlen);
void vlog_release(struct vlog *l);

/* Copies in all processes. */
size_t vlog_count(const struct vlog *l);

/* Where two logs first differ. */
struct vlog_diff {
	size_t proc;			/* index of the process */
	size_t pos;			/* copy number within it */
	const struct vlog_copy *a, *b;	/* NULL: that log has no such copy */
	const char *what;		/* "different contents", ... */
};

/* 0 when a and b hold the same copies, 1 and *d otherwise, or -ENOMEM. */
int vlog_compare(const struct vlog *a, const struct vlog *b,
		 struct vlog_diff *d);

#endif
