/*
 * rt_api.cu - compat programs (b) and (c): one runtime-API source, built
 * twice: with `-cudart shared` (libcudart.so.13) and with nvcc's default
 * static cudart (libcudart_static.a).  Both reach the driver through
 * dlopen("libcuda.so.1") + cuGetProcAddress, which kmux must interpose.
 *
 * Covers: cudaMalloc/cudaMallocHost, a created stream and the legacy default
 * stream, async and sync memcpys, cudaMemset, events, an extern "C" kernel,
 * a C++ template kernel (mangled name) and a deterministic block reduction.
 * Prints checksums; exits nonzero on any CUDA error or a wrong result.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "rt_check.h"

#define N (1 << 20)
#define BLOCK 256

extern "C" __global__ void rt_vec_add(const float *a, const float *b, float *c, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		c[i] = a[i] + b[i];
}

template <typename T>
__global__ void rt_axpy_t(T alpha, const T *x, T *y, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		y[i] = alpha * x[i] + y[i];
}

/* One partial sum per block, fixed tree order: deterministic. */
__global__ void rt_reduce_block(const float *x, float *partial, int n)
{
	__shared__ float s[BLOCK];
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	s[threadIdx.x] = i < n ? x[i] : 0.0f;
	__syncthreads();
	for (int w = BLOCK / 2; w > 0; w >>= 1) {
		if ((int)threadIdx.x < w)
			s[threadIdx.x] += s[threadIdx.x + w];
		__syncthreads();
	}
	if (threadIdx.x == 0)
		partial[blockIdx.x] = s[0];
}

int main(void)
{
	const int grid = (N + BLOCK - 1) / BLOCK;
	float *da, *db, *dc, *dpart, *ha, *hb, *hc, *hpart;
	cudaStream_t st;
	cudaEvent_t e0, e1;
	float ms = -1.0f;
	int bad = 0;

	CK(cudaSetDevice(0));
	CK(cudaStreamCreate(&st));
	CK(cudaEventCreate(&e0));
	CK(cudaEventCreate(&e1));
	CK(cudaMalloc(&da, N * sizeof(float)));
	CK(cudaMalloc(&db, N * sizeof(float)));
	CK(cudaMalloc(&dc, N * sizeof(float)));
	CK(cudaMalloc(&dpart, grid * sizeof(float)));
	CK(cudaMallocHost(&ha, N * sizeof(float)));
	CK(cudaMallocHost(&hb, N * sizeof(float)));
	CK(cudaMallocHost(&hc, N * sizeof(float)));
	hpart = (float *)malloc(grid * sizeof(float));
	if (!hpart)
		return 1;

	for (int i = 0; i < N; i++) {
		ha[i] = (float)(i % 513) * 0.25f;
		hb[i] = (float)(i % 17) - 8.0f;
	}
	CK(cudaMemcpyAsync(da, ha, N * sizeof(float), cudaMemcpyHostToDevice, st));
	CK(cudaMemcpy(db, hb, N * sizeof(float), cudaMemcpyHostToDevice));
	CK(cudaMemsetAsync(dc, 0, N * sizeof(float), st));

	CK(cudaEventRecord(e0, st));
	rt_vec_add<<<grid, BLOCK, 0, st>>>(da, db, dc, N);		/* c = a + b */
	CK_LAUNCH();
	rt_axpy_t<float><<<grid, BLOCK, 0, st>>>(0.5f, da, dc, N);	/* c += a/2 */
	CK_LAUNCH();
	CK(cudaEventRecord(e1, st));
	CK(cudaStreamSynchronize(st));
	/* legacy default stream */
	rt_reduce_block<<<grid, BLOCK>>>(dc, dpart, N);
	CK_LAUNCH();
	CK(cudaDeviceSynchronize());
	CK(cudaEventElapsedTime(&ms, e0, e1));
	if (!(ms >= 0.0f)) {
		fprintf(stderr, "rt_api: bad elapsed time %f\n", ms);
		return 1;
	}
	CK(cudaMemcpy(hc, dc, N * sizeof(float), cudaMemcpyDeviceToHost));
	CK(cudaMemcpy(hpart, dpart, grid * sizeof(float), cudaMemcpyDeviceToHost));

	{
		double sum_c = 0, sum_part = 0;

		for (int i = 0; i < N; i++) {
			float want = ha[i] + hb[i];
			want = 0.5f * ha[i] + want;
			if (fabsf(hc[i] - want) > 1e-5f * (1.0f + fabsf(want)))
				bad++;
			sum_c += hc[i];
		}
		for (int b = 0; b < grid; b++)
			sum_part += hpart[b];
		printf("rt_api n=%d grid=%d\n", N, grid);
		printf("rt_vec_add+rt_axpy_t checksum=%.9e\n", sum_c);
		printf("rt_reduce_block sum=%.9e first=%.6e last=%.6e\n", sum_part,
		       hpart[0], hpart[grid - 1]);
		if (bad || fabs(sum_part - sum_c) > 1e-6 * fabs(sum_c) + 1e-3) {
			printf("rt_api: MISMATCH (%d elements)\n", bad);
			return 1;
		}
		printf("rt_api: reference check OK\n");
	}

	CK(cudaEventDestroy(e0));
	CK(cudaEventDestroy(e1));
	CK(cudaStreamDestroy(st));
	CK(cudaFree(da));
	CK(cudaFree(db));
	CK(cudaFree(dc));
	CK(cudaFree(dpart));
	CK(cudaFreeHost(ha));
	CK(cudaFreeHost(hb));
	CK(cudaFreeHost(hc));
	free(hpart);
	return 0;
}
