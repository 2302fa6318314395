/*
 * cmd-bench.h - the parts of `kmux bench` in cmd-bench-serve.c (serve,
 * submit, run --workers), called from cmd-bench.c's dispatch.
 */
#ifndef KMUX_CMD_BENCH_H
#define KMUX_CMD_BENCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

int bench_serve(int argc, char **argv);
int bench_submit(int argc, char **argv);

/* A batch of `kmux bench run --workers N`. */
struct bench_batch {
	char *const *lines;	/* the command lines */
	size_t n;
	int workers;
	const char *python;	/* NULL: $KMUX_PYTHON or python3 */
	const char *out_dir;	/* NULL: output inherited */
	FILE *json;		/* the records */
	bool no_preload;
};

/* Exit status as `bench run`'s: 0 all OK, 1 otherwise. */
int bench_run_workers(const struct bench_batch *b);

#endif
