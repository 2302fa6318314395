/*
 * mm.h - the memory manager (issue 5, docs/design-memory.md): large device
 * allocations served as reserved address ranges, backed with physical
 * memory right before the first operation that touches them (lazy), and,
 * under a budget, copied out to pinned host memory and unmapped when idle
 * (evict), restored before the next operation that touches them.
 *
 *   KMUX_MEMORY     quota (default: nothing here) | lazy | evict
 *   KMUX_LAZY_MIN   smallest managed allocation, bytes (K/M/G/T), default 2M
 *   KMUX_MEM_BUDGET evict: resident bytes allowed (default: KMUX_MEM_QUOTA)
 *   KMUX_DEBUG_MM_HOST_FAIL=N  tests: every Nth pinned host allocation of
 *                   an eviction fails
 *   KMUX_DEBUG_MM_BROKEN=1     tests: operations never back what they touch
 *                   (simcuda must see the faults)
 *   KMUX_DEBUG_QUIET_DELAY_US=N  tests: an operation evict's quiet state
 *                   waves through waits N us before its driver call
 *   KMUX_DEBUG_QUIET_TRACK=N   tests: operations still tracked per clock
 *                   tick in the quiet state (default 32; 0: none)
 *
 * Only cuMemAlloc / cuMemAlloc_v2 allocations are managed; everything else
 * passes through as before.  The wrappers bracket every operation with
 * mm_op_begin() (what it touches, or "everything" when kmux cannot see)
 * and mm_op_end().
 */
#ifndef KMUX_MM_H
#define KMUX_MM_H

#include <stdint.h>

#include "cuda-internal.h"

#include "kparams.h"

enum mm_mode {
	MM_OFF = 0,	/* quota: the default, nothing managed */
	MM_LAZY = 1,
	MM_EVICT = 2,
};

/* Written once by the constructor, read without synchronization after. */
extern int mm_on;		/* enum mm_mode */
extern uint64_t mm_min;		/* KMUX_LAZY_MIN */

/*
 * From the constructor, after quota_init().  A bad value: a warning and
 * mode off (the program runs unmanaged).  0, or -EINVAL.
 */
int mm_init(const char *mode, const char *min, const char *budget);

/* Parse a --memory / KMUX_MEMORY value: enum mm_mode, or -EINVAL. */
int mm_parse_mode(const char *s);

/*
 * [*lo, *hi): every managed object lies inside (empty, lo > hi, before
 * the first); an address outside is in none.  Lock-free.
 */
void mm_span(uint64_t *lo, uint64_t *hi);

/* A managed allocation of size bytes: CUDA result, *dptr its address. */
CUresult mm_alloc(CUdeviceptr *dptr, uint64_t size);
/* The allocation table's id for the object at base (after mm_alloc). */
void mm_set_id(uint64_t base, uint64_t id);
/* Whether base is a managed object. */
int mm_owns(uint64_t base);
/* Free it: waits for its users, unmaps, releases, frees the range. */
CUresult mm_free(uint64_t base);

/*
 * Under evict: reserve n bytes of the budget for a pass-through
 * allocation, evicting idle objects to make room.  0 or -ENOSPC.
 */
int mm_reserve(uint64_t n);

/* One operation's view of memory, between begin and end. */
struct mm_op {
	int locked;
	uint64_t grow_to;	/* evict: thrashing, ask for this budget */
	uint64_t need;		/* evict: bytes of the objects it touches */
};

#define MM_MAX_TOUCH 66

/*
 * Before an operation is submitted: make every object it touches resident
 * (bases: the allocations' base addresses, in any order, unknown ones are
 * ignored).  all: kmux cannot see what it touches; every object is made
 * resident.  pin: those objects may never be evicted again (graphs, peer,
 * pointer queries).  stream/per_thread: where the program submitted it.
 * CUDA_SUCCESS, or the error that kept an object from being backed (the
 * operation must then not be submitted; mm_op_end() is still called).
 */
CUresult mm_op_begin(struct mm_op *op, const uint64_t *bases, int n, int all,
		     int pin, CUstream stream, int per_thread);
void mm_op_end(struct mm_op *op);

/* Convenience: a launch's decoded accesses. */
CUresult mm_op_begin_acc(struct mm_op *op, const struct access *acc, int n,
			 int all, int pin, CUstream stream, int per_thread);

/*
 * kmuxd reports memory pressure on this process's GPU (MEM_PRESSURE):
 * under evict, evict least recently used objects until give bytes are
 * free or nothing more can go; the budget is unchanged.  Any thread (it
 * makes each object's context current for its eviction).  Bytes freed.
 */
uint64_t mm_reclaim(uint64_t give);

/*
 * kmuxd asks for budget back (MEM_PRESSURE with PROTO_PRESSURE_F_BUDGET):
 * under evict with a budget, lower it by up to give bytes, never below
 * what the task needs resident (shrink.h) and not while it thrashes;
 * objects idle for MM_IDLE_MS are evicted to fit.  The bytes the budget
 * shrank (0: kept) and *new_budget (0 when kept).  The helper thread.
 */
uint64_t mm_shrink(uint64_t give, uint64_t *new_budget);

/*
 * Evict mode, registered with kmuxd (register.c sets it): ask kmuxd at
 * once, without waiting for room, to raise the budget to want bytes.  0
 * and *granted (the new budget, which may be less than want), or -errno
 * (refused, no daemon).  NULL: the budget is fixed.  Called from
 * mm_op_end(), after the operation was submitted and mm_mu released.
 */
extern int (*mm_grow_budget)(uint64_t want, uint64_t *granted);

/*
 * Evict mode, registered with kmuxd (register.c sets it): the task is
 * suspended (load control, suspend.h): it evicted all it could; tell
 * kmuxd what it still holds and block until kmuxd commits want bytes of
 * budget.  0 and *granted (want, or past kmuxd's wait bound the budget it
 * had), or -errno (no daemon, it died, refused): the caller resumes with
 * the budget it had.  Called with no lock held.
 */
extern int (*mm_suspend_budget)(uint64_t want, uint64_t *granted);

/* A context goes away: pinned buffers kept for it go with it. */
void mm_ctx_gone(CUcontext ctx);

/* The program destroys a stream: its pending work can no longer be named. */
void mm_stream_gone(CUstream s);

/* Bytes of managed objects that are resident now (for cuMemGetInfo). */
uint64_t mm_resident(void);

struct mm_stats {
	uint64_t objects, reserved, resident, evicted;	/* now, bytes */
	uint64_t peak_resident;
	uint64_t peak_backed;	/* evict: budget used + evicted, at most,
				 * seen at an operation */
	uint64_t largest;	/* the largest object managed, bytes */
	uint64_t backs, back_bytes;
	uint64_t evicts, evict_bytes, restores, restore_bytes;
	uint64_t evict_failed, back_failed, pinned;
	uint64_t reclaims, reclaim_bytes;	/* kmuxd's MEM_PRESSURE */
	uint64_t thrash_windows, thrashing;	/* thrash.h's windows */
	uint64_t grow_asks, grows;	/* budget growths asked, granted */
	uint64_t budget;		/* evict: the budget now, bytes */
	/* Evict: the most bytes one operation touched (the floor of a
	 * shrink), budget shrinks for kmuxd and the last budget so given. */
	uint64_t op_need, shrinks, shrunk_to;
	uint64_t suspends;	/* load control: times it suspended */
	/* Evict: the whole run's bytes touched by operations and restored
	 * for them (thrash_run), whether that thrashed (thrash_run_verdict),
	 * and the working set kmuxd learns, rounded up to a MiB (ALLOC_UPDATE's
	 * thrash_ws; mm.c, mm_learn_ws: peak_backed when the run thrashed,
	 * what its reuse needed when it only asked to grow, else 0). */
	uint64_t run_touched, run_restored, thrash_ws;
	int run_thrashed;
	/* Lazy: operations that took the fast path (nothing was left to
	 * back), of those the ones whose wrapper called straight through
	 * without decoding them (mm_skip_begin), and objects still unbacked
	 * now (while any is, none does). */
	uint64_t fast_ops, skip_ops, unbacked;
	/* Evict: operations seen in the quiet state (nothing evicted or
	 * unbacked), and of those the ones not decoded (mm.c). */
	uint64_t quiet_ops, quiet_skips;
};
void mm_get_stats(struct mm_stats *st);

/* fork(2): the lock across fork; the child keeps its objects as they are. */
void mm_atfork_prepare(void);
void mm_atfork_parent(void);
void mm_atfork_child(void);

#endif
