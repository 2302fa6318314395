/*
 * streams.h - the stream scheduler's driver side (issue 3): what the
 * wrappers call to run default-stream work on a per-context pool of
 * streams, as sched.h decides.
 *
 * With KMUX_STREAMS=N (read once by the constructor), work the program
 * submits to the legacy or per-thread default stream goes through
 * streams_run(): sched_submit() decides a pool stream and the cross-stream
 * waits, this module issues the records, waits and the operation itself.
 * Work on the program's own streams never comes here.  Host
 * synchronizations of a default stream or of the context wait only for the
 * pool streams with pending work; a host-side read waits only for the
 * writers of what it reads.
 *
 * This module owns: one struct streams_ctx per CUDA context (the
 * scheduler, N non-blocking pool streams, the event slots, two bridge
 * events, a mutex), created lazily on first use; the bridging of the
 * program's blocking streams to the pool; the count of
 * stream captures in progress; reading ahead (the copies, their stream and
 * shadows; readahead.h keeps the table); the statistics printed at exit.
 * docs/design-streams.md ("The wrappers") explains the rules.
 *
 * Failure: nothing here aborts.  A context whose pool cannot be set up
 * passes everything through; a record or wait that fails is replaced by a
 * host synchronization; sched_submit() errors become full barriers.  Never
 * a wrong order.
 */
#ifndef KMUX_STREAMS_H
#define KMUX_STREAMS_H

#include <stdatomic.h>
#include <stdint.h>

#include "cuda-internal.h"
#include "kparams.h"
#include "sched.h"

/* Pool size asked for (1..64), 0 when scheduling is off.  Set by the
 * constructor, read without synchronization afterwards. */
extern int kmux_streams;

/*
 * Configuration, once, from the constructor: KMUX_STREAMS's value (NULL:
 * off), CUDA_DEVICE_MAX_CONNECTIONS's (NULL: unset), KMUX_BARRIER_KERNELS's
 * (NULL: none).  Sets kmux_streams; 0 or -errno (then scheduling stays off,
 * and one line on stderr says so whatever KMUX_LOG asks for).
 */
int streams_init(const char *streams, const char *max_connections,
		 const char *barrier_regex);

/*
 * Test knob KMUX_DEBUG_STREAMS_FAIL=N: every Nth event creation, record or
 * wait the pool makes fails (N=1: the pool cannot even be set up), and the
 * scheduler keeps at most 4 allocation states (so that operations are
 * degraded to barriers and renames fail): the fallbacks must keep every
 * order.  From the constructor.
 */
void streams_debug_fail(const char *every);

/*
 * KMUX_KEEP_UP: "0" turns off the probe that keeps a launch-bound
 * program's work on one stream (streams.c, "Keeping up"); anything else
 * but "1" is warned about and leaves it on.  debug_us: test knob
 * KMUX_DEBUG_KEEP_UP_US, the host time per operation (default 200 us)
 * above which a check says nothing.  From the constructor.
 */
void streams_keep_up_init(const char *value, const char *debug_us);

/*
 * KMUX_PASS_THROUGH: "0" keeps a launch-bound program's work scheduled
 * (placed on one stream) instead of passing it through as submitted
 * (streams.c, "Passing through").  From the constructor.
 */
void streams_passthru_init(const char *value);

/* KMUX_DEFER_FREE: "0" turns deferred frees off (streams.c). */
void streams_defer_init(const char *value);

/*
 * KMUX_PACE: "0" turns off checking that spreading pays (pace.h; on by
 * default): every epoch of the program runs spread.  KMUX_DEBUG_PACE
 * ("inline", "alternate", "spread") forces the placement, for tests.
 */
void streams_pace_init(const char *value, const char *debug);

/*
 * KMUX_DURATIONS: "1" turns on learning kernel durations for the
 * scheduler's weights (kdur.h; off by default: kernels are weighed by
 * their waves of thread blocks).  debug_unit_us: test knob
 * KMUX_DEBUG_DURATION_UNIT_US, the weight unit (default 16 us).
 */
void streams_durations_init(const char *value, const char *debug_unit_us);

/*
 * KMUX_LEVEL: "1" levels the streams' modelled finish times at every full
 * synchronization (sched.h SCHED_LEVEL; off by default).
 */
void streams_level_init(const char *value);

/*
 * KMUX_READAHEAD: "0" turns reading ahead off (streams.c, "Reading
 * ahead"); anything else but "1" is warned about and leaves it on.
 * debug: test knob KMUX_DEBUG_READAHEAD, "unordered" queues each copy
 * with no dependency (a wrong order, which t5h's control must catch).
 */
void streams_readahead_init(const char *value, const char *debug);

/*
 * A synchronous read of bytes at device address src, in allocation
 * alloc_id at base, into pageable host memory dst: 1 and *r when a
 * read-ahead held it (dst is filled, the read is complete), 0 when the
 * caller reads as before (the read is learned then).
 */
int streams_host_read(uint64_t alloc_id, uint64_t base, uint64_t src,
		      void *dst, uint64_t bytes, CUresult *r);

/*
 * alloc_id is about to be freed where streams_before_free() is not called
 * (a deferred free, a stream-ordered free on a stream of the program's):
 * wait for kmux's read-ahead copy of it, if one is running, and forget
 * what was learned of it (streams_before_free() does both too).
 */
void streams_ra_release(uint64_t alloc_id);

/*
 * Deferred frees (streams.c, "deferred frees"): a synchronous cuMemFree of
 * a plain device allocation, while the pool schedules the current context.
 * Returns 1 when kmux keeps the memory allocated until the pool is idle at
 * a host synchronization or memory is short (the caller then drops the
 * allocation from the table and the scheduler and reports success; charged
 * quota bytes are given back at the real free), 0 when the caller frees it
 * as before.
 */
int streams_defer_free(uint64_t base, uint64_t size, uint64_t charged);

/*
 * Free for real, after draining the pool, what the current context
 * deferred: before retrying an allocation that failed for memory or quota,
 * and before cuMemGetInfo.  1 when anything was freed.
 */
int streams_flush_frees(void);

/* base is a deferred free of the current context (freeing it again is the
 * program's error, as it would be without kmux). */
int streams_is_deferred(uint64_t base);

/*
 * Pure parsing of KMUX_STREAMS against CUDA_DEVICE_MAX_CONNECTIONS, for
 * streams_init() and the unit tests.  value must be a decimal integer in
 * 1..SCHED_MAX_STREAMS; the pool is bounded by CUDA_DEVICE_MAX_CONNECTIONS
 * when that is a positive integer, by 8 (the driver's default number of
 * hardware queues) otherwise.  0 and *n set (*clamped: 1 when the bound cut
 * it), or -EINVAL with *why saying what is wrong.
 */
int streams_parse_count(const char *value, const char *max_connections,
			int *n, int *clamped, const char **why);

/* A NULL, CU_STREAM_LEGACY or CU_STREAM_PER_THREAD stream. */
/*
 * The calling thread's context passes its default-stream work through as
 * submitted (keeping up with a launch-bound program, KMUX_PASS_THROUGH):
 * a hint read without the lock, for skipping work the scheduler would not
 * use; an operation that finds passing through ended must not rely on it.
 */
int streams_passing_through(void);

static inline int streams_is_default(CUstream s)
{
	return !s || s == CU_STREAM_LEGACY || s == CU_STREAM_PER_THREAD;
}

/* The explicit handle of the default stream an entry point means by s. */
static inline CUstream streams_default_handle(CUstream s, int per_thread)
{
	if (s)
		return s;
	return per_thread ? CU_STREAM_PER_THREAD : CU_STREAM_LEGACY;
}

/*
 * One operation: issue(arg, s) submits it to stream s; issue(arg, NULL)
 * makes the call exactly as the program made it (its own stream argument,
 * its synchronous form).
 */
typedef CUresult (*streams_issue_fn)(void *arg, CUstream s);

/* struct streams_req.flags, besides SCHED_BARRIER and SCHED_JOIN */
/* Run it as the program asked, on its default stream, ordered after all
 * pool work and before all later pool work (the "bridge"). */
#define STREAMS_BRIDGE	0x100
/* The host waits for the operation before returning (synchronous copies
 * from pinned host memory). */
#define STREAMS_WAIT	0x200
/* The operation frees what it writes (cuMemFreeAsync): kmux's read-ahead
 * copies of it are waited for and forgotten first (readahead.h). */
#define STREAMS_FREES	0x400
/* A launch whose parameters were not read (streams_passing_through()):
 * counted when passed through, a barrier if scheduled. */
#define STREAMS_UNREAD	0x800

struct streams_req {
	const struct sched_access *acc;
	int nacc;
	unsigned flags;		/* SCHED_BARRIER, SCHED_JOIN, STREAMS_* */
	uint64_t blocks;	/* thread blocks (kernels), for the weight */
	/* Kernels: function and grid, the kind for learned weights (kdur.h). */
	const void *fn;
	const unsigned *grid;
	CUstream orig;		/* explicit default stream handle */
	streams_issue_fn issue;
	void *arg;
	CUcontext peer[2];	/* a peer copy's contexts, or NULL */
};

/*
 * Run one default-stream operation through the scheduler.  1 and *res
 * the operation's result; 0 when the caller must pass it through itself
 * (no current context, scheduling off for it, or its default stream is
 * being captured into a graph).
 */
int streams_run(const struct streams_req *rq, CUresult *res);

/*
 * The host is about to touch memory (a synchronous device-to-host copy, a
 * free): wait for the pool work it conflicts with.  full: wait for all of
 * the current context's pool work (an address kmux does not know).  Other
 * contexts are not waited for.  CUDA_SUCCESS or a wait's error.
 */
CUresult streams_host_access(const struct sched_access *acc, int nacc,
			     int full);

/*
 * Synchronization or query of a default stream: the pool part (every pool
 * stream with pending work, nothing else).  The caller then makes the real
 * call on the default stream itself, for work that went there directly.
 * query: poll instead of waiting (CUDA_ERROR_NOT_READY if busy).
 */
CUresult streams_sync_default(int query);

/*
 * cuCtxSynchronize(ctx) (NULL: current): _begin notes what is pending, the
 * caller makes the real call, _end with its result marks the notes done.
 */
struct streams_ctx;
struct streams_sync {
	struct streams_ctx *c;	/* NULL: nothing scheduled there */
	unsigned gen;
	struct sched_hostwait hw;
};
void streams_ctx_sync_begin(CUcontext ctx, struct streams_sync *ss);
void streams_ctx_sync_end(struct streams_sync *ss, CUresult r);

/*
 * An allocation is about to be freed synchronously (cuMemFree,
 * cuMemFreeHost, cuMemHostUnregister, cuMemUnmap): wait for the pool work
 * that uses it in every context; after a successful free, forget it.
 */
void streams_before_free(uint64_t alloc_id);
void streams_forget(uint64_t alloc_id);

/*
 * Stream-ordered allocation: the address is known only after the call, so
 * the operation is submitted as writing a placeholder id, renamed to the
 * allocation's id afterwards (in the current context).  to 0: the
 * allocation failed or is not tracked; the placeholder is dropped.
 */
uint64_t streams_placeholder(void);
void streams_rename(uint64_t from, uint64_t to);

/*
 * For stream-alloc.c: 1 when default-stream work of the current context is
 * scheduled now (its pool is set up, no capture in progress), so that an
 * operation submitted through streams_run() is ordered by the scheduler.
 * streams_own_nonblocking: the program has created a non-blocking stream
 * (ever): its work is ordered with nothing kmux sees.
 */
int streams_alloc_ok(void);
extern atomic_int streams_own_nonblocking;

/* KMUX_BARRIER_KERNELS matches this kernel (cached per kernel). */
int streams_barrier_kernel(const struct kernel_info *ki);

/*
 * Lifecycle, from the stream, capture and context wrappers.  A blocking
 * stream (created without CU_STREAM_NON_BLOCKING) is bridged to the pool:
 * _created after a successful create, _destroying before the destroy.
 */
void streams_stream_created(CUstream s, unsigned flags);
void streams_stream_destroying(CUstream s);

/*
 * An operation on one of the program's own streams, s: issue(arg, NULL)
 * as the program asked, ordered with the pool when s is a blocking stream
 * (it follows earlier default-stream work, later default-stream work
 * follows it, as on the legacy stream).
 */
extern atomic_int streams_nblocking;
CUresult streams_run_user(CUstream s, streams_issue_fn issue, void *arg);

/*
 * A kernel launch on a default stream while its context passes through
 * (streams_passing_through()): issue(arg, NULL) as submitted, with
 * streams_run()'s check, without its set-up.  1 and *res when done; 0: take
 * the full way (streams_run(), which also sees passing through end).  orig
 * is the default stream's explicit handle (streams_default_handle()).
 */
int streams_pass_quick(CUstream orig, streams_issue_fn issue, void *arg,
		       CUresult *res);

/*
 * The pass-through every wrapper ends in when streams_run() did not take
 * the operation: s is the stream the program named.
 */
static inline CUresult streams_pass(CUstream s, streams_issue_fn issue,
				    void *arg)
{
	if (kmux_streams && !streams_is_default(s) &&
	    atomic_load_explicit(&streams_nblocking, memory_order_relaxed))
		return streams_run_user(s, issue, arg);
	return issue(arg, NULL);
}
/*
 * Captures: _begin before the real call (undone with _end if it fails);
 * _active before cuStreamEndCapture, _end after it when it was.
 */
void streams_capture_begin(CUstream s, int per_thread);
int streams_capture_active(CUstream s, int per_thread);
void streams_capture_end(CUstream s, int per_thread);
/* Before cuCtxDestroy; before a primary context's release or reset. */
void streams_ctx_gone(CUcontext ctx);
void streams_primary_retained(CUdevice dev, CUcontext ctx);
CUcontext streams_primary_ctx(CUdevice dev);
void streams_primary_gone(CUdevice dev, int reset);

/* Totals over every context, for the trace's exit line and the exit log. */
struct streams_totals {
	int contexts;		/* that had a pool */
	int off;		/* times one was switched off (blocking
				 * streams, failure), destroyed since or not */
	uint64_t bridged;	/* run on a default stream, ordered */
	uint64_t blk_joins;	/* blocking-stream operations that joined */
	uint64_t blk_barriers;	/* pool waits for blocking streams */
	uint64_t failures;	/* records, waits replaced by host waits */
	uint64_t probe_checks;	/* keeping-up checks that counted */
	uint64_t probe_drained;	/* of which found the pool idle */
	uint64_t dfr_count;	/* frees deferred */
	uint64_t dfr_idle;	/* times they were freed at an idle sync */
	uint64_t dfr_short;	/* ... after a drain: memory, quota, cap */
	uint64_t pauses;	/* kmux_streams_pause(1) that paused */
	uint64_t paused_ops;	/* run as submitted while paused */
	uint64_t pt_ops;	/* passed through while keeping up */
	uint64_t pt_stretches;	/* ... in that many stretches */
	uint64_t pt_unread;	/* ... launches whose parameters kmux left
				 * unread */
	uint64_t ra_queued;	/* read-aheads queued */
	uint64_t ra_served;	/* host reads served from one */
	uint64_t ra_dropped;	/* slots given up, unused */
	uint64_t pace_epochs;	/* epochs measured (pace.h) */
	uint64_t pace_inline;	/* ... of them run in line */
	uint64_t pace_spread_kinds, pace_inline_kinds;	/* verdicts in force */
	uint64_t pace_varied_kinds;
	uint64_t kd_kinds, kd_timed;	/* learned durations (kdur.h) */
	struct sched_stats st;	/* summed */
};
void streams_get_totals(struct streams_totals *t);

/* In a forked child: forget the parent's contexts. */
void streams_atfork_child(void);

#endif
