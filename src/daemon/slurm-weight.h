/*
 * slurm-weight.h - kmuxd's node busyness as the node's Slurm weight
 * (`kmux daemon --slurm-node NAME`), so that Slurm sends new jobs to the
 * least busy node (Slurm allocates the lowest weights first).
 *
 * Owns: the pure mapping from the GPUs' busyness to a weight, with buckets
 * and hysteresis so that noise does not turn into controller traffic; the
 * parsing of `scontrol -o show node`; and, in the daemon, the rate-limited
 * `scontrol update NodeName=NAME Weight=W` (fork/exec, never a shell, one at
 * a time, never blocking the loop) with a periodic check that puts the
 * weight back after a controller restart or reconfigure resets it.
 * docs/slurm.md has the trade-offs against features and --prefer.
 */
#ifndef KMUX_SLURM_WEIGHT_H
#define KMUX_SLURM_WEIGHT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "admit.h"

struct server;

/* The mapping's tunables; slurm_weight_params_default() gives the values
 * written after each field. */
struct slurm_weight_params {
	double bucket_width;	/* node score per weight step: 0.25 */
	double hysteresis;	/* score margin before leaving a bucket: 0.05 */
	uint32_t nbuckets;	/* weights base .. base + nbuckets - 1: 16 */
	uint32_t base;		/* weight of an idle node: 1 (Slurm's default) */
};

void slurm_weight_params_default(struct slurm_weight_params *p);

/*
 * The node's busyness: the mean of admit_busyness() over its GPUs (a node
 * with one busy GPU out of eight is mostly free; the mean says so, the
 * maximum would not).  0 for no GPUs.
 */
double slurm_weight_node_score(const struct admit_gpu *gpus, size_t n,
			       const struct admit_policy *ap);

/*
 * The bucket of score: floor(score / bucket_width), clamped to
 * 0 .. nbuckets - 1, except that a score within hysteresis of the previous
 * bucket prev (-1: none yet) stays in it.  NaN or negative scores are 0.
 */
int slurm_weight_bucket(double score, int prev,
			const struct slurm_weight_params *p);

/* The Slurm weight of a bucket: base + bucket. */
uint32_t slurm_weight_of_bucket(int bucket, const struct slurm_weight_params *p);

/*
 * The node's weight in `scontrol -o show node NAME` output (the token
 * "Weight=N" where a token starts the text or follows a blank).  0 and
 * *weight; -ENOENT when there is none; -ERANGE when N is not a 32-bit count.
 */
int slurm_weight_parse_show(const char *text, uint32_t *weight);

/* A name scontrol takes as one NodeName= value: [A-Za-z0-9._-], 1..64
 * bytes, not starting with '-'. */
bool slurm_weight_node_ok(const char *name);

/*
 * In the daemon.  init: -EINVAL for a bad node name or interval (the reason
 * in err); the interval is the least time between two updates (a change
 * after a quiet spell goes out at the next tick), and the weight is
 * checked against the controller every 3 intervals.  The tick runs from
 * the daemon's 500 ms tick; reaped() takes the exit of a child that is not
 * a job (true if it was ours).  The scontrol run is `scontrol`, from PATH,
 * or $KMUX_SCONTROL (a test knob).
 */
int slurm_weight_init(struct server *srv, const char *node, double interval_s,
		      char *err, size_t errlen);
void slurm_weight_tick(struct server *srv);
bool slurm_weight_reaped(struct server *srv, pid_t pid, int status);
void slurm_weight_free(struct server *srv);

#define SLURM_WEIGHT_INTERVAL_S 10.0

#endif
