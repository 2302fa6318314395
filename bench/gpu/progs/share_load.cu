/*
 * share_load.cu - loads for bench/gpu/probe-share.sh: what time slicing
 * between processes on one GPU costs a program, as a function of how often
 * it waits for the GPU.
 *
 *   share_load sync SECONDS WORK_US   one 1-block kernel that spins WORK_US
 *                                     microseconds, then a stream
 *                                     synchronize, in a loop: a program
 *                                     that waits on the GPU 1/(WORK_US +
 *                                     overhead) times a second
 *   share_load heavy SECONDS          132-block kernels of ~200 us, queued
 *                                     asynchronously, a synchronize every
 *                                     50: a throughput job that always has
 *                                     work queued
 *
 * Both run for SECONDS of wall time after one warm-up iteration and print
 *   SHARE mode=M work_us=W iters=N secs=S per_iter_us=U syncs_per_s=R
 */
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
	fprintf(stderr, "share_load: %s: %s\n", #x, cudaGetErrorString(e_)); \
	exit(1); } } while (0)

__global__ void spin(long long cycles, int *sink)
{
	long long t0 = clock64();

	while (clock64() - t0 < cycles)
		;
	if (threadIdx.x == 0 && cycles < 0)
		*sink = 1;	/* never: keeps the loop from being removed */
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
	int clock_khz, *sink;
	double secs, work_us = 200, t0, t;
	long long cycles, iters = 0, syncs = 0;
	int heavy;

	if (argc < 3 || (strcmp(argv[1], "sync") && strcmp(argv[1], "heavy")) ||
	    (!strcmp(argv[1], "sync") && argc < 4)) {
		fprintf(stderr, "usage: share_load sync SECONDS WORK_US | heavy SECONDS\n");
		return 2;
	}
	heavy = !strcmp(argv[1], "heavy");
	secs = atof(argv[2]);
	if (!heavy)
		work_us = atof(argv[3]);
	CK(cudaSetDevice(0));
	CK(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, 0));
	CK(cudaMalloc(&sink, sizeof(int)));
	cycles = (long long)(work_us * clock_khz / 1000.0);
	spin<<<heavy ? 132 : 1, 128>>>(cycles, sink);
	CK(cudaDeviceSynchronize());
	t0 = now_s();
	do {
		if (heavy) {
			for (int i = 0; i < 50; i++)
				spin<<<132, 128>>>(cycles, sink);
			iters += 50;
		} else {
			spin<<<1, 32>>>(cycles, sink);
			iters++;
		}
		CK(cudaStreamSynchronize(0));
		syncs++;
		t = now_s();
	} while (t - t0 < secs);
	printf("SHARE mode=%s work_us=%.0f iters=%lld secs=%.3f per_iter_us=%.2f "
	       "syncs_per_s=%.1f\n", argv[1], work_us, iters, t - t0,
	       (t - t0) * 1e6 / (double)iters, (double)syncs / (t - t0));
	return 0;
}
