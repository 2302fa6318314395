/*
 * ks-env.h - the pure parts of kmux's SPANK plugin (kmux_spank.c): what a
 * task's LD_PRELOAD becomes, the kmuxd socket path of a node, a step's
 * name.  libc only and free of Slurm's headers, so that the unit tests
 * (tests/unit/test-slurm-env.c) run where Slurm is not installed.
 */
#ifndef KMUX_KS_ENV_H
#define KMUX_KS_ENV_H

#include <stddef.h>
#include <stdint.h>

/*
 * The task's LD_PRELOAD, given its old value (ld.so splits it on colons and
 * blanks) and the preload's path lib.  Returns 1 and leaves out alone when
 * a libkmux.so is already there (srun inside sbatch inherits the batch
 * step's); else 0 with out = the sanitizer runtimes of old (they must stay
 * first), lib, then old's other entries, colon-separated.  -ENAMETOOLONG
 * when out (len bytes) is too small.
 */
int ks_preload_value(const char *old, const char *lib, char *out, size_t len);

/*
 * pattern with "%n" replaced by node and "%%" by "%" (a socket per slurmd
 * when several run on one host).  0, or -ENAMETOOLONG.
 */
int ks_expand_path(const char *pattern, const char *node, char *out,
		   size_t len);

/* Step ids Slurm gives the steps that are not an srun. */
#define KS_STEP_BATCH 0xfffffffbu
#define KS_STEP_INTERACTIVE 0xfffffffau
#define KS_STEP_EXTERN 0xfffffffcu

/* "slurm-JOB.STEP.TASK" (STEP: a number, "batch" or "interactive"). */
void ks_task_name(uint32_t job, uint32_t step, uint32_t task, char *buf,
		  size_t len);

#endif
