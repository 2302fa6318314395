/*
 * sched.h - the stream scheduler's decisions (issue 3), without the driver.
 *
 * A program that submits everything to the default stream is serial.  For
 * each operation it submits (a kernel, a copy, a memset, ...), with the
 * allocations it reads and writes, the scheduler decides on which of a pool
 * of N streams it runs and which earlier operations of other streams it must
 * wait for, so that every conflicting pair (same allocation, at least one
 * writer) still runs in program order while independent work overlaps.  It
 * also tells the caller where to record the events those waits use, and which
 * streams a host synchronization must touch.  It calls no driver function:
 * the wrappers issue what it decides, and the unit tests check it with a
 * simulated GPU.  docs/design-streams.md explains the design and its choices.
 *
 * This module owns: the per-context scheduler state (one vector clock per pool
 * stream, the per-allocation last writer / readers since, the event-slot
 * rings, the virtual-time load estimate) and the statistics of waits issued
 * and pruned.  It does not own streams, events, contexts or locks.
 *
 * Words used throughout:
 *   stream	an index 0 .. N-1 into the caller's pool of streams
 *   seq	an operation's number on its stream, from 1; (stream, seq)
 *		names an operation; seq 0 means "nothing"
 *   event	a slot 0 .. N * SCHED_EVENTS_PER_STREAM - 1 in the caller's
 *		array of CUevents; slot / SCHED_EVENTS_PER_STREAM is the
 *		stream it is always recorded on.  The caller creates each
 *		CUevent (CU_EVENT_DISABLE_TIMING) the first time a decision
 *		names its slot, and reuses it forever after.
 *
 * Choices, in short (the design document has the reasons):
 *  - dependencies: last writer of what is touched (RAW, WAW), readers since
 *    that writer for what is written (WAR), the latest barrier; only the
 *    latest per stream counts; readers kept exactly up to 4 streams, then
 *    conservatively as "the end of that stream".
 *  - placement: the stream where the operation would start earliest in a
 *    virtual-time model (queued work per stream, dependencies' finish, a
 *    small cost per wait); a chain stays on its stream, independent work
 *    spreads to the least loaded one, a fork's branches go side by side.
 *  - pruning: a wait is dropped when the stream's vector clock already
 *    covers it; waits are issued so that one implying others comes first,
 *    and each merges its record's clock (transitive reduction online).
 *  - events: recorded lazily at the source stream's end when a wait needs
 *    one (exact when the dependency is that end, the common case), and right
 *    after an operation only on allocations where a late record was seen to
 *    cost overlap before; chains never record.
 *
 * Locking: none inside.  The caller holds one per-context lock around
 * sched_submit() AND the driver calls that carry out its decision, and
 * around every other function here (host waits are done with the lock
 * released, see sched_sync_all()).  The decision assumes that its records,
 * waits and operation reach the streams before any later decision's do.
 *
 * Errors: functions return 0 or -errno and never abort.  sched_submit() does
 * not fail for lack of memory: it then turns the operation into a full
 * barrier (SCHED_DEC_DEGRADED), which needs none.
 */
#ifndef KMUX_SCHED_H
#define KMUX_SCHED_H

#include <stdint.h>

#define SCHED_MAX_STREAMS 64
/* Event slots per stream (a ring; the oldest record is reused). */
#define SCHED_EVENTS_PER_STREAM 8

/*
 * How an operation uses an allocation.  The zero value is read-write, so an
 * access nobody classified is treated the safe way: kernels are SCHED_RW
 * unless proven read-only; copies and memsets know their sides exactly.
 */
enum sched_mode {
	SCHED_RW = 0,
	SCHED_READ = 1,
	SCHED_WRITE = 2,
};

struct sched_access {
	uint64_t alloc_id;	/* alloc-table id, never 0 */
	enum sched_mode mode;
	/*
	 * The bytes [off, off + len) of the allocation, when the caller has
	 * proven the operation touches nothing else (ptx-readonly.c's
	 * extents); len 0, the zero value: the whole allocation.  Two
	 * accesses to one allocation conflict only where their byte ranges
	 * overlap; a whole access overlaps every range.
	 */
	uint64_t off, len;
};

/* sched_new() flags. */
/*
 * Record an event after every operation that touches an allocation, instead
 * of only where waits are expected (see record_after below).  Costs one
 * cuEventRecord per operation; for measurements and tests.
 */
#define SCHED_EAGER_EVENTS	0x1
/*
 * Level the streams' finish times when all are known complete (a full
 * synchronization), so that the next epoch is placed the same whatever came
 * before it (sched-sync.c, sched_all_done(); KMUX_LEVEL=1).
 */
#define SCHED_LEVEL		0x2
/*
 * Among streams where an operation would start equally early with as many
 * waits, prefer the one whose last operation was submitted just before it
 * and is one of its dependencies: a chain the program submits in a row
 * stays on one stream (sched_place()).  Set with learned durations
 * (KMUX_DURATIONS=1), where the lower-finish tie-break split mha's heads.
 */
#define SCHED_KEEP_CHAIN	0x4

/* sched_submit() flags. */
/*
 * kmux cannot see what the operation touches (graph launch, host function,
 * unknown pointers, ...): it waits for all outstanding work and every later
 * operation waits for it, as on the legacy default stream.
 */
#define SCHED_BARRIER		0x1
/*
 * The operation waits for all outstanding work, but later operations only
 * for what they conflict with: for an event the program records on the
 * default stream (its event must cover all earlier default-stream work).
 */
#define SCHED_JOIN		0x2

/* struct sched_decision.flags */
#define SCHED_DEC_BARRIER	0x1	/* full barrier (asked or degraded) */
#define SCHED_DEC_JOIN		0x2	/* waits for all outstanding work */
#define SCHED_DEC_DEGRADED	0x4	/* barrier for an internal limit */

/* An event slot and the operation its record follows. */
struct sched_event_ref {
	uint64_t seq;		/* the op on `stream` the record comes after */
	int stream;		/* the stream it is recorded on */
	int event;		/* slot */
};

/*
 * What to issue for one operation, in this order:
 *   1. for each record[i]:  cuEventRecord(ev[record[i].event],
 *				pool[record[i].stream])
 *      (a lazy record at the current end of another stream; it must come
 *      before step 2 and before anything else is put on that stream)
 *   2. for each wait[i]:    cuStreamWaitEvent(pool[stream], ev[wait[i].event])
 *   3. the operation itself on pool[stream]
 *   4. if record_after >= 0: cuEventRecord(ev[record_after], pool[stream])
 * Steps 1, 2 and 4 are needed for correctness even when step 3 fails (the
 * slot must hold a record at that position): if one of them fails, see
 * sched_event_lost().
 */
struct sched_decision {
	int stream;		/* pool stream the operation runs on */
	uint64_t seq;		/* its number there */
	unsigned flags;		/* SCHED_DEC_* */
	int nrecord;
	int nwait;
	int record_after;	/* slot, or -1 */
	struct sched_event_ref record[SCHED_MAX_STREAMS];
	struct sched_event_ref wait[SCHED_MAX_STREAMS];
};

/* How the host waits for one entry of a struct sched_hostwait. */
enum sched_hw_how {
	SCHED_HW_STREAM = 0,	/* cuStreamSynchronize(pool[stream]) */
	SCHED_HW_EVENT = 1,	/* cuEventSynchronize(ev[event]) */
	SCHED_HW_IMPLIED = 2,	/* nothing: another entry's wait implies it */
};

struct sched_hostwait_ent {
	uint64_t seq;		/* complete once the wait returns */
	int stream;
	int event;		/* SCHED_HW_EVENT only, else -1 */
	enum sched_hw_how how;
};

/*
 * A minimal set of host waits.  After waiting for every entry, the caller
 * reports them with sched_complete_hostwait() (IMPLIED ones included).
 */
struct sched_hostwait {
	int n;
	struct sched_hostwait_ent ent[SCHED_MAX_STREAMS];
};

struct sched_stats {
	uint64_t ops;		/* operations submitted */
	uint64_t barriers;	/* of which full barriers (degraded included) */
	uint64_t joins;		/* of which SCHED_JOIN */
	uint64_t degraded;	/* turned into barriers by an internal limit */
	/*
	 * Dependencies are counted per (operation, predecessor stream): the
	 * latest predecessor on each stream is the only one that matters.
	 */
	uint64_t deps;		/* all of them, before any pruning */
	uint64_t deps_same;	/* on the operation's own stream: free */
	uint64_t deps_done;	/* already known complete: dropped */
	uint64_t waits_issued;	/* cross-stream waits issued */
	uint64_t waits_pruned;	/* implied by earlier waits: dropped */
	uint64_t over_waits;	/* issued on a record later than needed */
	uint64_t events_after;	/* record_after requested */
	uint64_t events_lazy;	/* records at another stream's end */
	uint64_t hot_cleared;	/* hot marks dropped: their record unused */
	uint64_t reader_collapses;	/* reader sets made conservative */
	uint64_t host_waits;	/* hostwait entries to wait for */
	uint64_t host_implied;	/* hostwait entries implied by others */
	uint64_t host_idle;	/* sched_sync_all(): streams left alone */
	uint64_t kept_up;	/* placed while the GPU kept up (sched_set_kept_up) */
	uint64_t narrow;	/* placed in line (sched_set_narrow) */
	uint64_t allocs;	/* allocations tracked now */
};

struct sched;

/*
 * A scheduler over a pool of nstreams streams (1 .. SCHED_MAX_STREAMS; the
 * caller bounds it by CUDA_DEVICE_MAX_CONNECTIONS).  flags: SCHED_EAGER_*.
 * 0, or -EINVAL, -ENOMEM.  Memory: (1 + SCHED_EVENTS_PER_STREAM) *
 * nstreams^2 words (288 KiB at 64 streams, 18 KiB at 16), plus a map of
 * 96-byte allocation states at most half full (24 KiB at first).
 */
int sched_new(int nstreams, unsigned flags, struct sched **out);
void sched_free(struct sched *s);
int sched_nstreams(const struct sched *s);

/*
 * Decide where one operation runs and what it waits for; see struct
 * sched_decision for what to issue.  acc may repeat an allocation; nacc 0
 * is an operation that touches nothing kmux can see (it is placed freely,
 * so a caller that cannot see its effects passes SCHED_BARRIER).  weight
 * is the caller's estimate of the operation's duration in any unit it
 * likes (for example thread blocks per SM, at least 1); sched_submit() uses 1.
 * 0, or -EINVAL for a bad argument (state unchanged; the caller then
 * submits the operation again as SCHED_BARRIER with no accesses, which
 * cannot fail).
 */
int sched_submit_weighted(struct sched *s, const struct sched_access *acc,
			  int nacc, unsigned flags, uint32_t weight,
			  struct sched_decision *out);

static inline int sched_submit(struct sched *s, const struct sched_access *acc,
			       int nacc, unsigned flags,
			       struct sched_decision *out)
{
	return sched_submit_weighted(s, acc, nacc, flags, 1, out);
}

/*
 * Host synchronization of everything submitted so far (cuCtxSynchronize,
 * cuStreamSynchronize of a default stream): the fewest pool streams whose
 * synchronization covers all outstanding work; idle streams are left out.
 * Call with the lock held, wait with it released, then (lock held again)
 * sched_complete_hostwait().  For cuCtxSynchronize the real call covers every
 * stream anyway: it still needs the entries, to report them afterwards.
 */
int sched_sync_all(struct sched *s, struct sched_hostwait *out);

/*
 * The host waits a synchronous host-side access needs: the last writers of
 * what it reads (RAW) and, for what it writes, the readers since as well
 * (WAR, WAW); outstanding barriers too.  For a synchronous device-to-host
 * copy, pass its source as SCHED_READ; before freeing an allocation, pass it
 * as SCHED_WRITE.  Nothing is recorded: the caller does the access after the
 * waits, before any later operation is submitted.
 */
int sched_sync_for(struct sched *s, const struct sched_access *acc, int nacc,
		   struct sched_hostwait *out);

/* sched_sync_for() with every id read. */
int sched_sync_for_read(struct sched *s, const uint64_t *alloc_ids, int n,
			struct sched_hostwait *out);

/*
 * Operation (stream, seq) and everything before it on that stream is known
 * complete (a host wait returned, or a query said so).  Later dependencies on
 * it are dropped and the load estimate shrinks.  0, or -EINVAL when stream
 * is out of range or seq was never submitted.
 */
int sched_complete(struct sched *s, int stream, uint64_t seq);
int sched_complete_hostwait(struct sched *s, const struct sched_hostwait *hw);

/*
 * The allocation was freed: drop its state.  Call it only once no
 * outstanding operation uses it (the wrapper of cuMemFree waits for
 * sched_sync_for() with SCHED_WRITE first, as the driver's own free would),
 * since the next allocation at the same address has a new id and no
 * dependency on the old one.  0 or -ENOENT.
 */
int sched_forget(struct sched *s, uint64_t alloc_id);

/*
 * The allocation known as `from` is now known as `to` (its state moves).
 * For stream-ordered allocation: the wrapper submits the allocation as an
 * operation writing a placeholder id, then learns the real id from the
 * address the driver returned.  0, -ENOENT (no state for `from`: nothing to
 * move), -EEXIST (`to` has state), -EINVAL, -ENOMEM or -ENOSPC (the state of
 * `from` is then kept: the caller makes the operation complete and forgets
 * `from`).
 */
int sched_rename(struct sched *s, uint64_t from, uint64_t to);

/*
 * A record of this slot that a decision asked for did not happen, or a wait
 * on it failed.  The slot is never named again until it is recorded anew.
 * Before going on, the caller makes the work the slot stood for complete
 * itself: cuStreamSynchronize(pool[slot / SCHED_EVENTS_PER_STREAM]), then
 * sched_complete() of that stream's seq from the decision.
 */
void sched_event_lost(struct sched *s, int event);

void sched_get_stats(const struct sched *s, struct sched_stats *out);

/*
 * The caller's probe of the real GPU (streams.c, "Keeping up") says the
 * device finishes the program's work about as fast as it is submitted: no
 * queue builds up, so spreading buys no overlap and only costs waits and
 * records.  While on, placement takes the stream needing the fewest waits
 * and, among those, the previous operation's; no hot marks are learned.
 * Dependencies and waits are exactly as always: this changes where an
 * operation runs, never what it waits for.
 */
void sched_set_kept_up(struct sched *s, int on);

/*
 * In line (pace.h): while on, every operation goes to the previous
 * operation's stream, whatever could start earlier elsewhere, so a program
 * runs on one stream once the others drain.  Waits are exactly as always;
 * no hot marks are learned.  Takes precedence over keeping up.
 */
void sched_set_narrow(struct sched *s, int on);

/*
 * The latest operation submitted to stream that is not known complete, or
 * 0 when the stream has no pending work: what a cuStreamQuery of it that
 * succeeds lets the caller pass to sched_complete().
 */
uint64_t sched_pending(const struct sched *s, int stream);

/*
 * Outstanding work on a stream, in the caller's weight units (an estimate:
 * the scheduler only learns of completions through sched_complete()).
 */
uint64_t sched_load(const struct sched *s, int stream);

/*
 * Limits and test knobs.  max_allocs bounds the allocation states kept (0:
 * no bound but memory): an operation that would exceed it is degraded to a
 * barrier.  sched_debug_fail_alloc(s, n): the next n internal allocations
 * fail, so that tests reach the degraded path.
 */
void sched_set_max_allocs(struct sched *s, uint32_t max_allocs);
void sched_debug_fail_alloc(struct sched *s, int n);

/* Internal invariants, for tests: 0 or -EUCLEAN. */
int sched_check(const struct sched *s);

#endif
