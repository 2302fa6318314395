/*
 * ptds.cu - compat program (g): several host threads, each launching on its
 * own per-thread default stream.  Built with `nvcc --default-stream
 * per-thread`, so cudart asks the driver for the _ptsz/_ptds entry points
 * (through cuGetProcAddress with the per-thread flag) and stream 0 means the
 * calling thread's stream.  kmux must hand back the per-thread variants, or
 * the threads would serialize on the legacy stream (slower but still
 * correct) or, worse, mix their work up.
 *
 * Each thread owns a buffer, runs ITERS dependent kernel launches plus async
 * copies on stream 0, synchronizes its own stream and checks its result.
 * Results are printed in thread order (deterministic).  Exits nonzero on
 * any CUDA error or wrong result.
 */
#include <stdio.h>
#include <stdlib.h>
#include <thread>
#include <vector>

#include "rt_check.h"

#define THREADS 4
#define N (1 << 16)
#define BLOCK 256
#define ITERS 200

__global__ void ptds_work(unsigned *buf, int n, unsigned tid, unsigned it)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		buf[i] = buf[i] * 1664525u + 1013904223u + tid * 7u + it;
}

struct result {
	unsigned long long sum;
	unsigned xr;
	int bad;
};

static void worker(unsigned tid, struct result *r)
{
	unsigned *d, *h;
	unsigned *ref;
	const int grid = (N + BLOCK - 1) / BLOCK;

	CK(cudaSetDevice(0));
	CK(cudaMalloc(&d, N * sizeof(unsigned)));
	CK(cudaMallocHost(&h, N * sizeof(unsigned)));
	ref = (unsigned *)malloc(N * sizeof(unsigned));
	if (!ref)
		exit(1);
	for (int i = 0; i < N; i++)
		h[i] = ref[i] = (unsigned)i ^ (tid << 20);
	CK(cudaMemcpyAsync(d, h, N * sizeof(unsigned), cudaMemcpyHostToDevice, 0));
	for (unsigned it = 0; it < ITERS; it++) {
		ptds_work<<<grid, BLOCK>>>(d, N, tid, it);	/* stream 0 = per-thread */
		CK_LAUNCH();
	}
	CK(cudaMemcpyAsync(h, d, N * sizeof(unsigned), cudaMemcpyDeviceToHost, 0));
	CK(cudaStreamSynchronize(0));
	r->sum = 0;
	r->xr = 0;
	r->bad = 0;
	for (int i = 0; i < N; i++) {
		unsigned v = ref[i];
		for (unsigned it = 0; it < ITERS; it++)
			v = v * 1664525u + 1013904223u + tid * 7u + it;
		if (v != h[i])
			r->bad++;
		r->sum += h[i];
		r->xr ^= h[i];
	}
	CK(cudaFree(d));
	CK(cudaFreeHost(h));
	free(ref);
}

int main(void)
{
	std::vector<std::thread> th;
	struct result res[THREADS];
	int bad = 0;

	CK(cudaSetDevice(0));
	CK(cudaFree(0));	/* create the context before the threads start */
	for (unsigned t = 0; t < THREADS; t++)
		th.emplace_back(worker, t, &res[t]);
	for (auto &t : th)
		t.join();
	CK(cudaDeviceSynchronize());
	printf("ptds threads=%d n=%d iters=%d\n", THREADS, N, ITERS);
	for (int t = 0; t < THREADS; t++) {
		printf("thread %d sum=%llu xor=0x%08x\n", t, res[t].sum, res[t].xr);
		bad += res[t].bad;
	}
	if (bad) {
		printf("ptds: MISMATCH (%d)\n", bad);
		return 1;
	}
	printf("ptds: reference check OK\n");
	return 0;
}
