/*
 * streams-env.c - KMUX_STREAMS and CUDA_DEVICE_MAX_CONNECTIONS, parsed
 * (pure: the constructor and the unit tests call it; see streams.h).
 */
#include <errno.h>
#include <stdlib.h>

#include "streams.h"

/* Hardware queues a device has unless CUDA_DEVICE_MAX_CONNECTIONS says. */
#define STREAMS_DEFAULT_BOUND 8

static int parse_positive(const char *s, long *out)
{
	char *end;
	long v;

	if (!s || *s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || *end)
		return -EINVAL;
	*out = v;
	return 0;
}

int streams_parse_count(const char *value, const char *max_connections,
			int *n, int *clamped, const char **why)
{
	long v, m, bound = STREAMS_DEFAULT_BOUND;

	*clamped = 0;
	if (parse_positive(value, &v) || v < 1 || v > SCHED_MAX_STREAMS) {
		*why = "not an integer in 1..64";
		return -EINVAL;
	}
	if (max_connections && *max_connections &&
	    parse_positive(max_connections, &m) == 0 && m > 0)
		bound = m < SCHED_MAX_STREAMS ? m : SCHED_MAX_STREAMS;
	if (v > bound) {
		v = bound;
		*clamped = 1;
	}
	*n = (int)v;
	return 0;
}

