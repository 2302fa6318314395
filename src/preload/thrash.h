/*
 * thrash.h - the evict mode's thrash detector (docs/design-memory.md,
 * "Growing the budget on thrash"): a pure function of what each operation
 * touched and restored, so that it can be unit tested (libc only).
 *
 * The rule is scale-free: the window is measured in units of the budget
 * and the verdict is a ratio.  A window closes once the operations in it
 * have touched THRASH_WINDOW budgets' worth of object bytes (counting an
 * object once per operation that touches it).  The window thrashes when at
 * least 1/THRASH_MISS_DIV of those bytes had to be restored from host
 * memory: the working set the task cycles through does not fit, so most
 * touches find their object evicted.  A task whose idle objects come back
 * now and then (what eviction is for) restores a small fraction of what it
 * touches and never trips it; one whose every repetition touches more than
 * the budget restores nearly all it touches (LRU with a cyclic pattern
 * larger than the budget misses every time).  A window of two budgets also
 * means at least one budget's worth of bytes came back before asking.
 */
#ifndef KMUX_THRASH_H
#define KMUX_THRASH_H

#include <stdbool.h>
#include <stdint.h>

#define THRASH_WINDOW 2		/* budgets of touched bytes per window */
#define THRASH_MISS_DIV 2	/* thrash: restored >= touched / this */
#define THRASH_ASK_GAP_MS 1000	/* at most one ask per this */
/*
 * Steady restores thrash too: at least THRASH_STEADY_WINDOWS of the last
 * THRASH_STEADY_SPAN windows each restored 1/THRASH_RUN_DIV or more of
 * what it touched (the whole run's rule, below, and why that share
 * already costs more than the kernels' own memory traffic).  One window
 * with restores now and then is a phase or a stage coming back (what
 * eviction is for: the staged pipeline restores in one window of
 * thousands); most recent windows restoring means the task brings its
 * objects back over and over: what it cycles through does not fit.  Half
 * of a span, not every window in a row, so that restores at a period
 * longer than a window (objects coming back once per phase) count.
 * bench/results/memory.md run 11: reductions and image_pipeline restored
 * about half of what they touched over the run, 3-20x slower than under
 * quota, and never asked, since no single window reached half.
 */
#define THRASH_STEADY_SPAN 8
#define THRASH_STEADY_WINDOWS 4

/*
 * The working set a task needs (what kmuxd learns from a run that asked
 * to grow but did not thrash as a whole, docs/design-memory.md).  The
 * first time a window touches an object that was touched before, the
 * caller notes the object's reuse distance: the bytes of the distinct
 * objects touched since its previous touch, itself included, which is the
 * smallest LRU budget under which that touch finds it resident.  The
 * working set is the smallest budget under which at most
 * 1/THRASH_RUN_DIV of the bytes so reused would have been restored: the
 * run verdict's share (below), applied to reuse.  A warm-up that runs
 * every model once, or a stage coming back after the others, reuses
 * objects from far back, but a few times in a run; a stage's weights,
 * reused every batch, are most of what the run reuses
 * (bench/results/memory.md run 17: pipeline.py's warm-up asked for its
 * whole footprint, 1.46 GiB, where one model at a time needs about half).
 * A quantile of the run, not a property of windows in a row: a window is
 * two budgets of touches counted per operation, which hot activation
 * buffers fill within part of one forward pass, so windows are no unit of
 * time for it (run 17's window-based estimates: 310 MiB, then 1.46 GiB).
 * Distances are kept in THRASH_WS_BUCKETS buckets, 8 a power of two (the
 * largest distance of each is kept, so the answer is one that was seen).
 */
#define THRASH_WS_BUCKETS 512

struct thrash {
	uint64_t touched, restored;	/* bytes, in the current window */
	uint64_t windows, thrashing;	/* windows closed, and thrashing */
	uint32_t steady;		/* the last windows at 1/RUN_DIV, a bit each */
	uint64_t last_ask_ms;		/* 0: never asked */
	bool asked;
	uint64_t reused;		/* bytes of noted reuses, saturating */
	uint64_t reuse_bytes[THRASH_WS_BUCKETS];	/* by distance */
	uint64_t reuse_max[THRASH_WS_BUCKETS];	/* the largest distance seen */
};

/*
 * The open window's number (never 0): an object stamped with it had its
 * reuse noted in this window already.
 */
static inline uint64_t thrash_window_id(const struct thrash *t)
{
	return t->windows + 1;
}

/*
 * An object of size bytes reused at a distance of dist bytes (above), at
 * its first touch in the open window.
 */
void thrash_note_reuse(struct thrash *t, uint64_t size, uint64_t dist);

/*
 * The working set (above): the smallest reuse distance noted such that
 * the bytes reused from farther are at most 1/THRASH_RUN_DIV of all bytes
 * reused; 0 when nothing was reused.
 */
uint64_t thrash_ws(const struct thrash *t);

/*
 * One operation: touched bytes of objects, restored bytes of them, under a
 * budget of budget bytes, at now_ms (a monotonic clock).  True when a
 * window closed thrashing (half restored, or steady restores: above) and
 * no ask was made in the last
 * THRASH_ASK_GAP_MS: the caller should ask for a larger budget now (the
 * ask is recorded).  A budget of 0 never thrashes.
 */
bool thrash_note(struct thrash *t, uint64_t touched, uint64_t restored,
		 uint64_t budget, uint64_t now_ms);

/*
 * The whole run's verdict, besides the windows.  The window rule above
 * misses a task that restores a steady but smaller share of what it
 * touches, e.g. phases whose objects come back once per phase, never half
 * of a window (bench/results/raw/2026-11-30-h200-memory7: reductions,
 * image_pipeline and phase_buffers restored thousands of objects per run
 * and never asked).  Whether that costs is a matter of bandwidth: a
 * restore moves bytes over PCIe (~50 GB/s) that a kernel reads from HBM
 * (~4.8 TB/s on an H200, ~100x faster), so restoring 1/THRASH_RUN_DIV of
 * the bytes kernels touch already costs more transfer time than the
 * kernels' own memory traffic: the run thrashed.  A task whose idle
 * objects come back now and then, say once per stage of a pipeline that
 * serves thousands of requests a stage, restores orders of magnitude less
 * (~1e-4) and does not.  kmuxd learns a thrashed run's working set for its
 * next run (docs/design-daemon.md, "Evict mode: learned working sets").
 */
#define THRASH_RUN_DIV 64	/* thrashed: restored >= touched / this */

struct thrash_run {
	uint64_t touched, restored;	/* bytes, the whole run, saturating */
};

/* One operation's touched and restored bytes (as for thrash_note). */
void thrash_run_note(struct thrash_run *r, uint64_t touched,
		     uint64_t restored);

/*
 * Whether the run so far thrashed: restored >= touched / THRASH_RUN_DIV,
 * exactly (no rounding: restored * THRASH_RUN_DIV >= touched).  Nothing
 * touched never thrashed.
 */
bool thrash_run_verdict(const struct thrash_run *r);

#endif
