/*
 * reg.c - a CUDA program that knows nothing of kmux, for the registration
 * tests (t6b-t6f): what an uncooperative process does, and what it sees.
 *
 *   reg [ALLOC_MIB [HOLD_MS [KERNELS]]]     (default 64 MiB, 0 ms, 0)
 *
 * Prints, one fact a line:
 *   start                      before cuInit (so a test can see it wait)
 *   cvd=LIST                   CUDA_VISIBLE_DEVICES after cuInit ("unset")
 *   total=MIB                  cuMemGetInfo's total (the quota, if any)
 *   alloc err=E                cuMemAlloc of ALLOC_MIB
 *   ready                      holding: launches KERNELS kernels over HOLD_MS
 *   alloc2 err=E               REG_ALLOC2_MIB=n: after the hold, n MiB more
 *                              (a task whose need grows as it runs)
 *   done                       freed, about to exit 0
 *
 * REG_HOLD_FILE=PATH: after the hold, go on only once PATH exists, so that
 * a test ends the hold when it has seen what it looks for, not after a
 * time that a loaded machine may overrun.
 *
 * REG_FORK_MS=n: at "ready", fork a child that sleeps n ms and exits
 * without touching CUDA (a data loader's worker): it must not keep the
 * parent's registration alive.
 *
 * REG_SYNC_MS=n: at "ready", for n ms launch one small kernel and wait for
 * it (cuStreamSynchronize) in a loop, then print syncs=N: a program that
 * waits on the GPU thousands of times a second (kmuxd's --slice-waits).
 * REG_SYNC_UNTIL=PATH: the loop goes on past n ms until PATH exists, so a
 * test sees the program waiting for as long as it looks, however loaded
 * the machine.
 */
#include <stdint.h>
#include <time.h>
#include <unistd.h>

#include "e2e-common.h"

#define MIB (1024u * 1024u)

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

int main(int argc, char **argv)
{
	unsigned long mib = argc > 1 ? strtoul(argv[1], NULL, 10) : 64;
	long hold = argc > 2 ? strtol(argv[2], NULL, 10) : 0;
	long kernels = argc > 3 ? strtol(argv[3], NULL, 10) : 0;
	const char *cvd;
	CUdevice dev;
	CUcontext ctx;
	CUmodule mod;
	CUfunction fill;
	CUdeviceptr p = 0, p2 = 0;
	size_t f = 0, t = 0;
	CUresult r;

	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("start\n");
	CHECK(cuInit(0));
	cvd = getenv("CUDA_VISIBLE_DEVICES");
	printf("cvd=%s\n", cvd ? cvd : "unset");
	CHECK(cuDeviceGet(&dev, 0));
	CHECK(cuCtxCreate(&ctx, NULL, 0, dev));
	CHECK(cuMemGetInfo(&f, &t));
	printf("total=%zu\n", t / MIB);
	r = cuMemAlloc(&p, mib * MIB);
	printf("alloc err=%d\n", (int)r);
	CHECK(cuModuleLoad(&mod, e2e_module_path()));
	CHECK(cuModuleGetFunction(&fill, mod, "fill_u32"));
	printf("ready\n");
	if (getenv("REG_FORK_MS")) {
		pid_t c = fork();

		if (c == 0) {
			sleep_ms(atol(getenv("REG_FORK_MS")));
			_exit(0);
		}
		printf("child=%d\n", (int)c);
	}
	if (getenv("REG_SYNC_MS") && r == CUDA_SUCCESS) {
		struct timespec t0, t1;
		long ms = atol(getenv("REG_SYNC_MS")), n = 0, el;
		const char *until = getenv("REG_SYNC_UNTIL");

		clock_gettime(CLOCK_MONOTONIC, &t0);
		do {
			CUdeviceptr q = p;
			unsigned v = (unsigned)n, cnt = 256;
			void *params[] = { &q, &v, &cnt };

			CHECK(cuLaunchKernel(fill, 1, 1, 1, 256, 1, 1, 0, 0,
					     params, NULL));
			CHECK(cuStreamSynchronize(0));
			n++;
			clock_gettime(CLOCK_MONOTONIC, &t1);
			el = (t1.tv_sec - t0.tv_sec) * 1000 +
			     (t1.tv_nsec - t0.tv_nsec) / 1000000;
		} while (el < ms || (until && access(until, F_OK)));
		printf("syncs=%ld\n", n);
	}
	for (long k = 0; k < kernels; k++) {
		CUdeviceptr q = p;
		unsigned v = (unsigned)k, n = 256;
		void *params[] = { &q, &v, &n };

		if (r == CUDA_SUCCESS)
			CHECK(cuLaunchKernel(fill, 1, 1, 1, 256, 1, 1, 0, 0,
					     params, NULL));
		sleep_ms(hold / kernels);
	}
	if (kernels == 0)
		sleep_ms(hold);
	if (getenv("REG_HOLD_FILE"))
		while (access(getenv("REG_HOLD_FILE"), F_OK))
			sleep_ms(10);
	if (getenv("REG_ALLOC2_MIB")) {
		r = cuMemAlloc(&p2, strtoul(getenv("REG_ALLOC2_MIB"), NULL, 10) *
				    MIB);
		printf("alloc2 err=%d\n", (int)r);
	}
	CHECK(cuCtxSynchronize());
	if (p)
		CHECK(cuMemFree(p));
	if (p2)
		CHECK(cuMemFree(p2));
	printf("done\n");
	return 0;
}
