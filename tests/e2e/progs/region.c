/*
 * region.c - a CUDA program using exclusive regions (issue 6), for
 * t6x-region.sh and t6x-region-isolate.sh.  It includes kmux.h with
 * KMUX_DYNAMIC: no link dependency on libkmux.so, so the same binary runs
 * without kmux.
 *
 *   region hold MS [KERNELS [LINGER]]  begin, KERNELS launches (each
 *                              synchronized) spread over MS ms, end, then
 *                              LINGER ms more before exiting
 *   region busy MS             a sibling: launch + synchronize in a loop
 *                              for MS ms, no region
 *   region nest                begin, begin, end, end, end (the last is
 *                              an error)
 *   region bad                 end without begin
 *
 * Prints, one fact a line (times: CLOCK_MONOTONIC ns, simcuda's clock):
 *   ready                      CUDA set up (before any region)
 *   begin rc=R t=NS            kmux_exclusive_begin() returned R at NS
 *   end rc=R t=NS              kmux_exclusive_end() returned R at NS
 *   depth=D                    kmux_exclusive_depth()
 *   done
 */
#define KMUX_DYNAMIC
#include <kmux.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "e2e-common.h"

static CUfunction fill;
static CUdeviceptr buf;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

static void kernel(unsigned v)
{
	CUdeviceptr q = buf;
	unsigned n = 256;
	void *params[] = { &q, &v, &n };

	CHECK(cuLaunchKernel(fill, 1, 1, 1, 256, 1, 1, 0, 0, params, NULL));
	CHECK(cuCtxSynchronize());
}

static int begin(void)
{
	int r = kmux_exclusive_begin();

	printf("begin rc=%d t=%llu\n", r, (unsigned long long)now_ns());
	return r;
}

static int end(void)
{
	uint64_t t = now_ns();
	int r = kmux_exclusive_end();

	printf("end rc=%d t=%llu\n", r, (unsigned long long)t);
	return r;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	long ms = argc > 2 ? strtol(argv[2], NULL, 10) : 0;
	long kernels = argc > 3 ? strtol(argv[3], NULL, 10) : 10;
	long linger = argc > 4 ? strtol(argv[4], NULL, 10) : 0;
	CUcontext ctx;
	CUmodule mod;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (strcmp(mode, "bad") == 0) {
		end();
		printf("depth=%d\n", kmux_exclusive_depth());
		return 0;
	}
	CHECK(cuInit(0));
	CHECK(cuDevicePrimaryCtxRetain(&ctx, 0));
	CHECK(cuCtxSetCurrent(ctx));
	CHECK(cuMemAlloc(&buf, 1024));
	CHECK(cuModuleLoad(&mod, e2e_module_path()));
	CHECK(cuModuleGetFunction(&fill, mod, "fill_u32"));
	printf("ready\n");
	if (strcmp(mode, "hold") == 0) {
		begin();
		for (long k = 0; k < kernels; k++) {
			kernel((unsigned)k);
			sleep_ms(ms / (kernels ? kernels : 1));
		}
		end();
		sleep_ms(linger);	/* still there once the region is over */
	} else if (strcmp(mode, "busy") == 0) {
		uint64_t stop = now_ns() + (uint64_t)ms * 1000000u;

		while (now_ns() < stop) {
			kernel(1);
			sleep_ms(2);
		}
	} else if (strcmp(mode, "nest") == 0) {
		begin();
		begin();
		printf("depth=%d\n", kmux_exclusive_depth());
		kernel(2);
		end();
		printf("depth=%d\n", kmux_exclusive_depth());
		end();
		end();
		printf("depth=%d\n", kmux_exclusive_depth());
	} else {
		fprintf(stderr, "usage: region hold|busy|nest|bad [MS [K [LINGER_MS]]]\n");
		return 2;
	}
	CHECK(cuMemFree(buf));
	CHECK(cuDevicePrimaryCtxRelease(0));
	printf("done\n");
	return 0;
}
