/*
 * run-env.h - what the commands that run CMD under the preload share
 * beyond spawn.h: the --streams argument and the environment variables
 * that ask libkmux.so for stream scheduling (`kmux run`, `kmux verify`).
 */
#ifndef KMUX_RUN_ENV_H
#define KMUX_RUN_ENV_H

#include <stddef.h>

#define RUN_STREAMS_MAX		64	/* the preload's SCHED_MAX_STREAMS */
/* The driver's hardware queues unless CUDA_DEVICE_MAX_CONNECTIONS says. */
#define RUN_DEFAULT_CONNECTIONS	8
#define RUN_MAX_CONNECTIONS	32	/* the most the driver accepts */
#define RUN_ENV_MAX		14

/*
 * N of --streams N: a decimal integer in 1..RUN_STREAMS_MAX and nothing
 * else.  0 and *n, or -EINVAL.
 */
int run_parse_streams(const char *arg, int *n);

/*
 * MODE of --memory MODE: "quota", "lazy" or "evict" (the preload's
 * KMUX_MEMORY, mm.h).  0, or -EINVAL on anything else.
 */
int run_parse_memory(const char *arg);

/*
 * KMUX_BARRIER_KERNELS's value (NULL or "": none), compiled as the preload
 * compiles it (barrier-re.h).  0, or -EINVAL with regerror()'s reason in
 * err: the preload would run CMD unscheduled, so `kmux run` and `kmux
 * verify` refuse to start it.
 */
int run_check_barrier_kernels(const char *value, char *err, size_t errlen);

/* Environment changes for spawn_opts.env: "NAME=VALUE" sets, "NAME" unsets. */
struct run_env {
	const char *env[RUN_ENV_MAX + 1];	/* NULL-terminated */
	int n;
	char streams[32];
	char connections[64];
	char extra[8][4096 + 32];	/* run_env_set() */
	int nextra;
};

void run_env_init(struct run_env *e);

/*
 * Ask for n pool streams (n 0: make sure the preload does not schedule,
 * whatever the caller's environment says).  A pool larger than the
 * driver's default 8 hardware queues needs more of them: when
 * CUDA_DEVICE_MAX_CONNECTIONS is not set, it is set to min(n, 32).
 */
void run_env_streams(struct run_env *e, int n);

/* KMUX_MEMORY=MODE for the child, a value run_parse_memory() accepted. */
int run_env_memory(struct run_env *e, const char *mode);

/* "NAME=VALUE" (copied); 0, -ENOSPC or -ENAMETOOLONG. */
int run_env_set(struct run_env *e, const char *name, const char *value);

#endif
