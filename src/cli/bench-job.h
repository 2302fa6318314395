/*
 * bench-job.h - what a job of `kmux bench` is (issue 6): its argv, where it
 * runs, whether a persistent worker can run it; built from a batch's
 * command line (bjob_from_line) or from a client's request line, untrusted
 * bytes (bjob_from_request); and its JSON record (bjob_record).
 *
 * The request, one JSON object on one line (at most BJOB_MAX_LINE bytes):
 *	{"argv": ["/abs/x.py", "arg", ...], "cwd": "/abs", "out_dir": "/abs",
 *	 "env": ["K=V", ...]}
 * argv: 1..BJOB_MAX_ARGS strings, argv[0] not empty; cwd absolute;
 * out_dir absolute or absent (output inherited); env at most BJOB_MAX_ENV
 * "K=V" strings, K not empty and without '=', or absent (the server's
 * environment).  Nothing else.
 */
#ifndef KMUX_BENCH_JOB_H
#define KMUX_BENCH_JOB_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* Room for a large environment (the kernel allows argv + environ up to a
 * quarter of the stack limit, 2 MiB by default; real ones are a few KiB). */
#define BJOB_MAX_LINE (1024 * 1024)
#define BJOB_MAX_ARGS 1024
#define BJOB_MAX_ENV 32768

struct bjob {
	char **argv;		/* NULL-terminated, argc entries */
	int argc;
	char *cwd;		/* NULL: the server's */
	char *out_dir;		/* NULL: output inherited */
	char **env;		/* NULL-terminated "K=V"; NULL: the server's */
	int nenv;
	bool python;		/* argv[0] is a .py script: a worker runs it */
};

/*
 * A batch's shell command line.  When it is simply "[PYTHON] SCRIPT.py
 * ARGS..." (words, quotes and backslashes only: no variables, redirections,
 * pipes, globs or assignments; PYTHON a python* word without options),
 * fills *j with SCRIPT.py and ARGS (j->python) and returns 1.  Otherwise
 * fills *j with /bin/sh -c LINE and returns 0.  -ENOMEM.
 */
int bjob_from_line(const char *line, struct bjob *j);

/*
 * A client's request: buf[0..len) without the newline.  0, or -EINVAL with
 * what is wrong in err (-ENOMEM).  On error *j is empty.
 */
int bjob_from_request(const char *buf, size_t len, struct bjob *j,
		      char *err, size_t errlen);

/* A request line for j (with its newline), malloc'd; NULL on ENOMEM. */
char *bjob_request(const struct bjob *j);

void bjob_free(struct bjob *j);

/*
 * Whether the variable of entry kv ("K=V", or a bare name) stays the
 * running process's own: LD_PRELOAD, LD_LIBRARY_PATH, CUDA_VISIBLE_DEVICES
 * and KMUX_*, read once when a process starts (by ld.so, libcuda, the
 * preload), so a worker's cannot change for a job.  python/kmux/worker.py
 * keeps the same list (KEPT_ENV).
 */
bool bjob_env_kept(const char *kv);

/*
 * The environment of a job: own's kept entries (bjob_env_kept), then
 * job's other entries.  The pointers are borrowed from both; the array is
 * malloc'd, NULL-terminated; NULL on ENOMEM.
 */
char **bjob_env_merge(char *const *job, char *const *own);

/* The outcome of a job, for its record. */
struct bjob_result {
	long i;
	const char *cmd;
	int status;		/* wait status */
	double start_s, wall_s, queue_s;
	int worker;		/* -1: a plain process */
	pid_t worker_pid;
	const char *out, *err;	/* NULL: inherited */
	const char *error;	/* NULL: it ran */
};

/*
 * Its JSON record, one line with its newline, malloc'd (NULL on ENOMEM):
 * i, cmd, exit (-1 when a signal ended it), signal, start_s, wall_s,
 * queue_s, worker, worker_pid, and out, err, error when set.
 */
char *bjob_record(const struct bjob_result *r);

/* {"error": MSG} and a newline, malloc'd. */
char *bjob_error_reply(const char *msg);

#endif
