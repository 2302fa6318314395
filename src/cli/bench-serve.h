/*
 * bench-serve.h - the engine of `kmux bench serve` and `kmux bench run
 * --workers` (issue 6): a pool of persistent context workers (Python
 * processes running python/kmux/worker.py, each keeping its CUDA context
 * and imports across jobs), a FIFO of jobs, and the clients of a listening
 * socket, all in one poll() loop.
 *
 * Python jobs (bjob.python) go to an idle worker; other jobs run as plain
 * processes (their own process group).  At most `concurrency` jobs run at
 * a time.  A worker that dies is replaced, and the job it ran ends with the
 * worker's wait status.  A job runs with its own environment (bjob.env,
 * else job_env), but for the variables a process reads once as it starts
 * (bjob_env_kept), which stay the worker's (plain jobs: env's).  A client
 * that leaves before its job ended cancels it: a queued job is dropped, a
 * running one killed (SIGKILL to its process group; a worker is replaced).
 * SIGINT, SIGTERM and SIGHUP stop the engine: the workers and jobs get
 * SIGTERM, SIGKILL 2 s later, and every child is reaped before bsrv_run()
 * returns.
 */
#ifndef KMUX_BENCH_SERVE_H
#define KMUX_BENCH_SERVE_H

#include <stdbool.h>

#include "bench-job.h"

struct bsrv;

struct bsrv_opts {
	int workers;		/* persistent workers, >= 0 */
	int concurrency;	/* jobs at a time, >= 1 */
	const char *python;	/* the workers' interpreter (PATH lookup) */
	const char *worker_py;	/* python/kmux/worker.py */
	char *const *env;	/* of the workers (the kept variables of plain
				 * jobs too) */
	char *const *job_env;	/* of jobs that bring none */
	int listen_fd;		/* clients' socket (non-blocking); -1: none */
	/*
	 * Called as each job ends, with its record line (bjob_record); jobs
	 * of clients get it sent back as well.  May be NULL.
	 */
	void (*done)(void *arg, const struct bjob_result *r, const char *rec);
	void *arg;
};

/* 0 and *sp, or -errno (message on stderr).  Blocks the stop signals. */
int bsrv_new(const struct bsrv_opts *o, struct bsrv **sp);

/*
 * Queue a job (j is taken over, even on error): cmd names it in its
 * record, i is its index (and its output's name in j->out_dir).  0/-errno.
 */
int bsrv_add(struct bsrv *s, struct bjob *j, const char *cmd, long i);

/*
 * Run until a stop signal (returns it, > 0) or, with until_done, until
 * every queued job ended (0); the workers are stopped and every child
 * reaped before it returns.  -errno on a failure of the loop itself.
 */
int bsrv_run(struct bsrv *s, bool until_done);

/* Jobs that ended with a nonzero status (or were refused). */
long bsrv_failed(const struct bsrv *s);

void bsrv_free(struct bsrv *s);

#endif
