/*
 * const_symbol.cu - a program that sets a `__constant__` before each step
 * with cudaMemcpyToSymbol, for bench/gpu/symbols-check.sh: does kmux order
 * that copy by the constant's readers (ptx-table.h, located variables), or
 * make it a barrier?
 *
 * Each of STEPS steps: set step_param (cudaMemcpyToSymbol), k_apply on
 * array a (reads step_param: the copy must wait for the last step's
 * k_apply, and this step's k_apply for the copy), then k_work on each of
 * NT buffers of their own, which reach no module variable.  One task's
 * k_work is 4x longer each step, a different task each step, so a step
 * that waits for everything (the copy as a barrier) costs the longest
 * task, while tasks that only keep their own order share the GPU.
 *
 * Prints "checksum X" (over a and every buffer: the same whatever the
 * schedule, when every dependency is kept) and "roi_ms Y" (host clock,
 * from the first copy to a cudaDeviceSynchronize after the last kernel).
 */
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <vector>

#define NT 8
#define STEPS 48
#define N (16 * 256)
#define ITERS 60000

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
	fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, \
		cudaGetErrorString(e_)); exit(1); } } while (0)

__constant__ float step_param[2];

__global__ void k_apply(float *a)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	a[i] = a[i] * step_param[0] + step_param[1];
}

__global__ void k_work(float *b, int iters)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	float x = b[i];

	for (int k = 0; k < iters; k++)
		x = x * 0.999999f + 1e-6f;
	b[i] = x;
}

static double now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static void roi(float *a, float **b)
{
	for (int s = 0; s < STEPS; s++) {
		float p[2] = { 1.f + 1e-3f * (float)(s % 5), 0.01f * (float)s };

		CK(cudaMemcpyToSymbol(step_param, p, sizeof(p)));
		k_apply<<<16, 256>>>(a);
		for (int t = 0; t < NT; t++)
			k_work<<<16, 256>>>(b[t], (s % NT) == t ? 4 * ITERS : ITERS);
	}
}

int main(void)
{
	std::vector<float> h(N), init(N);
	float *a, *b[NT];
	double t0, ms, sum = 0;

	for (int i = 0; i < N; i++)
		init[i] = (float)(i % 97) * 0.01f;
	CK(cudaMalloc(&a, N * sizeof(float)));
	for (int t = 0; t < NT; t++)
		CK(cudaMalloc(&b[t], N * sizeof(float)));
	/* Warm-up: one pass, then the same inputs again for the timed one. */
	for (int pass = 0; pass < 2; pass++) {
		CK(cudaMemcpy(a, init.data(), N * sizeof(float),
			      cudaMemcpyHostToDevice));
		for (int t = 0; t < NT; t++)
			CK(cudaMemcpy(b[t], init.data(), N * sizeof(float),
				      cudaMemcpyHostToDevice));
		CK(cudaDeviceSynchronize());
		t0 = now_ms();
		roi(a, b);
		CK(cudaGetLastError());
		CK(cudaDeviceSynchronize());
		ms = now_ms() - t0;
	}
	CK(cudaMemcpy(h.data(), a, N * sizeof(float), cudaMemcpyDeviceToHost));
	for (int i = 0; i < N; i++)
		sum += h[i];
	for (int t = 0; t < NT; t++) {
		CK(cudaMemcpy(h.data(), b[t], N * sizeof(float),
			      cudaMemcpyDeviceToHost));
		for (int i = 0; i < N; i++)
			sum += h[i] * (t + 1);
	}
	printf("checksum %.9g\n", sum);
	printf("roi_ms %.3f\n", ms);
	return 0;
}
