/*
 * launch_loop.cu - overhead benchmark, runtime-API variant (issue item 8).
 *
 * Launches a near-empty kernel (one pointer into a real allocation, so an
 * interposer that decodes parameters does its usual work) CHUNKS x CHUNK
 * times on one created stream, after WARMUP untimed launches.  Each chunk
 * is timed on the host clock: `submit` = time to issue the launches,
 * `total` = the same plus the final cudaStreamSynchronize; `gpu` = the
 * chunk's time between two events on the stream (if gpu ~ submit, the loop
 * was limited by the GPU, not the host, and host overhead may be hidden).
 * Prints one line per chunk and a RESULT line with the median per-launch
 * times, which overhead.sh parses.  Exits nonzero on any CUDA error.
 *
 * The same file, built with `nvcc -cubin`, gives the kernel for
 * launch_loop_drv.c (the driver-API variant).
 *
 * Usage: launch_loop [CHUNK=50000] [CHUNKS=5] [WARMUP=20000]
 */
#include <algorithm>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <vector>

#include "rt_check.h"

extern "C" __global__ void loop_empty(int *p, int n)
{
	if (n < 0)
		p[threadIdx.x] = n;
}

static double now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec * 1e-3;
}

static double median(std::vector<double> v)
{
	std::sort(v.begin(), v.end());
	size_t n = v.size();
	return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

int main(int argc, char **argv)
{
	long chunk = argc > 1 ? atol(argv[1]) : 50000;
	long chunks = argc > 2 ? atol(argv[2]) : 5;
	long warmup = argc > 3 ? atol(argv[3]) : 20000;
	std::vector<double> submit, total, gpu;
	cudaStream_t st;
	cudaEvent_t e0, e1;
	int *d, n = 1;
	void *args[] = { &d, &n };

	if (chunk < 1 || chunks < 1 || warmup < 0) {
		fprintf(stderr, "usage: %s [CHUNK] [CHUNKS] [WARMUP]\n", argv[0]);
		return 2;
	}
	CK(cudaSetDevice(0));
	CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
	CK(cudaMalloc(&d, 32 * sizeof(int)));
	CK(cudaEventCreate(&e0));
	CK(cudaEventCreate(&e1));

	for (long i = 0; i < warmup; i++)
		CK(cudaLaunchKernel((const void *)loop_empty, dim3(1), dim3(32),
				    args, 0, st));
	CK(cudaStreamSynchronize(st));

	for (long c = 0; c < chunks; c++) {
		double t0, t1, t2;
		float ms = 0;
		CK(cudaEventRecord(e0, st));
		t0 = now_us();
		for (long i = 0; i < chunk; i++)
			CK(cudaLaunchKernel((const void *)loop_empty, dim3(1),
					    dim3(32), args, 0, st));
		t1 = now_us();
		CK(cudaEventRecord(e1, st));
		CK(cudaStreamSynchronize(st));
		t2 = now_us();
		CK(cudaEventElapsedTime(&ms, e0, e1));
		submit.push_back((t1 - t0) / chunk);
		total.push_back((t2 - t0) / chunk);
		gpu.push_back(ms * 1e3 / chunk);
		printf("chunk %ld launches=%ld submit_us=%.4f total_us=%.4f gpu_us=%.4f\n",
		       c, chunk, submit.back(), total.back(), gpu.back());
	}
	printf("RESULT api=runtime launches=%ld submit_us=%.4f total_us=%.4f gpu_us=%.4f\n",
	       chunk * chunks, median(submit), median(total), median(gpu));
	CK(cudaEventDestroy(e0));
	CK(cudaEventDestroy(e1));
	CK(cudaFree(d));
	CK(cudaStreamDestroy(st));
	return 0;
}
