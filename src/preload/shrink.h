/*
 * shrink.h - the evict mode's rule for giving budget back to kmuxd
 * (docs/design-memory.md, "Giving back budget to admit a queued task"): a
 * pure function of the budget and what the task needs resident, so that
 * it can be unit tested (libc only).
 *
 * A task asked to give up `give` bytes of budget keeps at least a floor:
 * the most one operation needed resident (op_need: below it that operation
 * could not run), or the bytes of objects it touched within MM_IDLE_MS
 * (recent: its working set now, which eviction should not touch), the
 * larger of the two, plus the pass-through allocations charged to the
 * budget (they cannot be evicted), rounded up to the allocation
 * granularity.  Objects allocated but never touched count as recent:
 * they are about to be used, not idle (bench/results/memory.md run 10: a
 * task asked while it set up gave a budget its buffers then needed, and
 * thrashed).  A task that thrashes gives nothing: its budget is already
 * too small for what it cycles through; nor does one observed for less
 * than the idle horizon (young): "not touched lately" means nothing yet.
 */
#ifndef KMUX_SHRINK_H
#define KMUX_SHRINK_H

#include <stdbool.h>
#include <stdint.h>

struct shrink_in {
	uint64_t limit;		/* the budget now, bytes */
	uint64_t give;		/* asked to give up, bytes */
	uint64_t op_need;	/* the most one operation touched, bytes */
	uint64_t recent;	/* bytes touched within MM_IDLE_MS, and pinned */
	uint64_t untouched;	/* bytes allocated and never touched yet */
	uint64_t pass;		/* pass-through bytes charged to the budget */
	uint64_t gran;		/* allocation granularity (0: 1) */
	bool thrashing;		/* asked to grow lately, or the run thrashed */
	bool young;		/* first operation less than MM_IDLE_MS ago */
};

/* The floor: max(op_need, recent + untouched) + pass, rounded up to gran,
 * >= gran (saturating). */
uint64_t shrink_floor(const struct shrink_in *in);

/*
 * The new budget, max(floor, limit - give rounded down to gran), when it is
 * below limit and the task is neither thrashing nor young; else 0 (keep
 * the budget).
 */
uint64_t shrink_plan(const struct shrink_in *in);

#endif
