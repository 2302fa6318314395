/*
 * busy-est.h - a job's demand on the GPU, estimated from NVML's
 * per-process utilization as it runs: the busyness its profile learns and
 * the next run of the command is placed and admitted by.
 *
 * Owns the pure estimator (no NVML, no daemon state): which samples count
 * (the active phase) and how a sample taken while several processes
 * competed for the GPU is turned into a demand (the contention
 * correction).  docs/design-daemon.md ("Busyness is measured") gives the
 * reasoning and the limits.
 *
 * Demand is on the scale of NVML's device utilization: 1 is a job that
 * alone would keep a kernel running all the time, 0.2 one that would keep
 * the GPU busy a fifth of the time.
 */
#ifndef KMUX_BUSY_EST_H
#define KMUX_BUSY_EST_H

#include <stdbool.h>
#include <stdint.h>

/*
 * Contention: a GPU counts as saturated when its processes' shares (or its
 * device utilization) sum to BUSY_EST_SAT_HI or more, and as having time to
 * spare below BUSY_EST_SAT_LO; in between the correction is applied in
 * proportion.  Not 1.0: NVML's shares are whole percents averaged over
 * sampling windows, and switching between time-sliced contexts costs some
 * time, so a GPU that never idles reads a little under 100 %.
 */
#define BUSY_EST_SAT_LO 0.75
#define BUSY_EST_SAT_HI 0.95

/*
 * One process's demand from one sample of one GPU:
 *   share  the process's share of the GPU in the sample (0..1)
 *   total  the sum of all processes' shares there, or the device's
 *          utilization if larger (processes NVML does not list)
 *   top    the largest share of any process there
 * A process alone, or on a GPU with time to spare, got what it asked for:
 * its share is its demand.  On a saturated GPU shared with others, each
 * got a slice: the heaviest is taken to want the whole GPU and the others
 * in proportion to it (share / top).  Bad input (NaN, out of range) is
 * clamped; the result is within 0..1.
 */
double busy_est_demand(double share, double total, double top);

/*
 * One job's estimate over its life.  Samples before its first active one
 * (share > 0 on any of its GPUs: before its first kernel, i.e. imports,
 * model construction, context creation) are not counted; samples after
 * its last active one (shutdown) are dropped when the estimate is read.
 * Idle gaps between active samples (data loading, host work) count: they
 * are part of the demand.
 */
struct busy_est {
	uint32_t seen;		/* samples taken, active or not */
	double sum_all;		/* demand summed over all of them */
	uint32_t n;		/* samples since the first active one */
	double sum;
	uint32_t n_last;	/* ... up to and including the last active */
	double sum_last;
};

/* Fold one sample in: the job's demand (its GPUs' mean) and whether it ran
 * GPU work in it. */
void busy_est_add(struct busy_est *e, double demand, bool active);

/*
 * The job's demand, for its profile: the mean over its active phase
 * (first to last active sample); for a job never active in two samples
 * at least, the mean over all its samples (near 0: an idle job stays
 * low).  0 and *out, or -ENODATA when fewer than min samples back it.
 */
int busy_est_final(const struct busy_est *e, uint32_t min, double *out);

/*
 * The job's duty, for admission: its demand averaged over its whole life,
 * start-up and shutdown included (sum_all / seen), i.e. the load it adds
 * to a GPU on average over the time it holds a place there.  At most its
 * active-phase demand (samples outside the active phase have no share).
 * 0 and *out, or -ENODATA when fewer than min samples back it.
 */
int busy_est_duty(const struct busy_est *e, uint32_t min, double *out);

/*
 * The same while the job runs: the mean since its first active sample,
 * idle samples since included (a job that went quiet is lighter now).
 * -ENODATA before min samples of its active phase.
 */
int busy_est_now(const struct busy_est *e, uint32_t min, double *out);

#endif
