/*
 * kdur.h - how long each kind of kernel runs, learned on the program itself,
 * for the scheduler's weights (streams.c, "Learned durations";
 * docs/design-streams.md).
 *
 * The scheduler's model places an operation where it could start earliest,
 * from each stream's queued work.  Without durations it weighs a kernel by
 * its waves of thread blocks, so a 1-block finalize weighs what a 16-block
 * pass over 8 Mi elements does, and a scan's 600 us apply what its 100 us
 * partial sums do: work then lands behind a long kernel the model takes for
 * a short one.  On the H200 the same program's placement took 15% more or
 * less time depending on nothing but where the previous epoch's work was
 * modelled to end (bench/results/streams.md, run 18).  With
 * KMUX_DURATIONS=1 kmux times a few launches of each kind (a kernel and its
 * grid) with a pair of CUDA events on the pool stream it runs on, and
 * weighs later launches of that kind by what they took.  Off by default:
 * it made reductions and image_pipeline 4-7% faster and mha and
 * stencil_dag 2-7% slower (run 18).
 *
 * Timing a launch costs the host two event records (about 1-2 us each), so
 * KDUR_FIRST launches of a kind are timed after its first (which may load
 * the module), then one in KDUR_EVERY to follow changes.  A time includes what the kernel shared the GPU with:
 * that is the time it takes where it runs.
 *
 * Pure bookkeeping: no driver calls, no locking (the caller holds its
 * context's lock).
 */
#ifndef KMUX_KDUR_H
#define KMUX_KDUR_H

#include <stdint.h>

#define KDUR_SLOTS	512	/* kinds remembered (direct-mapped) */
#define KDUR_FIRST	3	/* launches of a new kind timed */
#define KDUR_EVERY	256	/* then one in this many */
/* One weight unit: the duration the model's unit operation stands for. */
#define KDUR_UNIT_NS	16000u
#define KDUR_WEIGHT_MAX	(1u << 20)

struct kdur_ent {
	uint64_t key;		/* 0: empty */
	uint64_t ns;		/* running estimate; 0: no sample yet */
	uint32_t samples;	/* timings folded in */
	uint32_t launches;	/* launches seen */
};

struct kdur {
	struct kdur_ent ent[KDUR_SLOTS];
	uint64_t unit_ns;	/* one weight unit, KDUR_UNIT_NS by default */
	uint64_t timed;		/* timings folded in, all kinds */
	uint64_t kinds;		/* kinds with an estimate */
	uint64_t replaced;	/* kinds pushed out by another */
};

/* unit_ns: one weight unit (0: KDUR_UNIT_NS). */
void kdur_init(struct kdur *k, uint64_t unit_ns);

/*
 * The kind of a launch: its function and grid, never 0.  The same kernel
 * with another grid does other work.
 */
uint64_t kdur_key(const void *fn, const unsigned grid[3]);

/*
 * Launch of kind key about to be placed: counts it and says whether to
 * time it (1) or not (0).  key 0 is never timed.
 */
int kdur_launch(struct kdur *k, uint64_t key);

/* A timed launch of kind key took ns (0: lost, ignored). */
void kdur_add(struct kdur *k, uint64_t key, uint64_t ns);

/*
 * The weight of a launch of kind key: its estimate in weight units
 * (at least 1), or fallback while the kind has no sample.
 */
uint32_t kdur_weight(const struct kdur *k, uint64_t key, uint32_t fallback);

#endif
