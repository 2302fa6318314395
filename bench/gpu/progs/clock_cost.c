/*
 * clock_cost.c - what a clock read costs on this host (issue 5 (c)): the
 * memory manager's evict mode reads CLOCK_MONOTONIC_COARSE once per
 * operation, and the stream scheduler reads CLOCK_MONOTONIC in places.
 * Where the kernel offers them through the vDSO a read is tens of
 * nanoseconds; where it does not (some virtual machines' clock sources)
 * each one is a system call.
 *
 * Usage: clock_cost [N=2000000]
 * Prints one line per clock: CLOCK name ns_per_call=X (best of 5 trials
 * of N calls), and the rdtsc cost for comparison on x86-64.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#if defined(__x86_64__)
#include <x86intrin.h>
#endif

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static volatile long sink;

static void one(const char *name, clockid_t id, long n)
{
	double best = 1e30;
	struct timespec ts;

	for (int t = 0; t < 5; t++) {
		double t0 = now_ns();

		for (long i = 0; i < n; i++) {
			clock_gettime(id, &ts);
			sink += ts.tv_nsec;
		}
		double d = (now_ns() - t0) / (double)n;
		if (d < best)
			best = d;
	}
	printf("CLOCK %s ns_per_call=%.1f\n", name, best);
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 2000000;

	if (n < 1000) {
		fprintf(stderr, "clock_cost: N >= 1000\n");
		return 2;
	}
	one("MONOTONIC", CLOCK_MONOTONIC, n);
	one("MONOTONIC_COARSE", CLOCK_MONOTONIC_COARSE, n);
	one("REALTIME", CLOCK_REALTIME, n);
#if defined(__x86_64__)
	{
		double best = 1e30;

		for (int t = 0; t < 5; t++) {
			double t0 = now_ns();

			for (long i = 0; i < n; i++)
				sink += (long)__rdtsc();
			double d = (now_ns() - t0) / (double)n;
			if (d < best)
				best = d;
		}
		printf("CLOCK rdtsc ns_per_call=%.1f\n", best);
	}
#endif
	return 0;
}
