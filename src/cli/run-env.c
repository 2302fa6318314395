/*
 * run-env.c - the --streams and --memory arguments and the environment
 * shared by `kmux run` and `kmux verify` (see run-env.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "barrier-re.h"
#include "num.h"
#include "run-env.h"

int run_parse_streams(const char *arg, int *n)
{
	long v;

	if (num_parse(arg, 1, RUN_STREAMS_MAX, &v))
		return -EINVAL;
	*n = (int)v;
	return 0;
}

int run_parse_memory(const char *arg)
{
	if (arg && (!strcmp(arg, "quota") || !strcmp(arg, "lazy") ||
		    !strcmp(arg, "evict")))
		return 0;
	return -EINVAL;
}

int run_check_barrier_kernels(const char *value, char *err, size_t errlen)
{
	regex_t re;
	int r;

	if (!value || !*value)
		return 0;
	r = regcomp(&re, value, BARRIER_RE_FLAGS);
	if (r) {
		regerror(r, &re, err, errlen);
		return -EINVAL;
	}
	regfree(&re);
	return 0;
}

void run_env_init(struct run_env *e)
{
	memset(e, 0, sizeof(*e));
}

static void run_env_push(struct run_env *e, const char *entry)
{
	if (e->n < RUN_ENV_MAX)
		e->env[e->n++] = entry;
	e->env[e->n] = NULL;
}

void run_env_streams(struct run_env *e, int n)
{
	const char *cdmc = getenv("CUDA_DEVICE_MAX_CONNECTIONS");
	int want;

	if (n <= 0) {
		run_env_push(e, "KMUX_STREAMS");
		return;
	}
	snprintf(e->streams, sizeof(e->streams), "KMUX_STREAMS=%d", n);
	run_env_push(e, e->streams);
	if (n > RUN_DEFAULT_CONNECTIONS && (!cdmc || !*cdmc)) {
		want = n < RUN_MAX_CONNECTIONS ? n : RUN_MAX_CONNECTIONS;
		snprintf(e->connections, sizeof(e->connections),
			 "CUDA_DEVICE_MAX_CONNECTIONS=%d", want);
		run_env_push(e, e->connections);
	}
}

int run_env_set(struct run_env *e, const char *name, const char *value)
{
	char *slot;
	int len;

	if (e->nextra >= (int)(sizeof(e->extra) / sizeof(e->extra[0])) ||
	    e->n >= RUN_ENV_MAX)
		return -ENOSPC;
	slot = e->extra[e->nextra];
	len = snprintf(slot, sizeof(e->extra[0]), "%s=%s", name, value);
	if (len < 0 || (size_t)len >= sizeof(e->extra[0]))
		return -ENAMETOOLONG;
	e->nextra++;
	run_env_push(e, slot);
	return 0;
}

int run_env_memory(struct run_env *e, const char *mode)
{
	return run_env_set(e, "KMUX_MEMORY", mode);
}
