/*
 * graphs.cu - compat program (f): CUDA Graphs through the runtime API.
 *
 * One iteration (a memset node and two kernels) is recorded by stream
 * capture in cudaStreamCaptureModeGlobal (so any "unsafe" call that kmux
 * made from any thread during capture would invalidate it), instantiated
 * with cudaGraphInstantiate and launched LAUNCHES times with cudaGraphLaunch.
 * The kernels reach the driver only while being captured; the trace should
 * still name them.  Prints deterministic checksums; exits nonzero on any
 * CUDA error or a result that disagrees with the CPU.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "rt_check.h"

#define N 4096
#define BLOCK 128
#define LAUNCHES 2000

/* x = x * 0.75 + 1 (converges to 4); no FMA, so the CPU can replay it */
extern "C" __global__ void graph_step(float *x, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		x[i] = __fadd_rn(__fmul_rn(x[i], 0.75f), 1.0f);
}

/* acc += x + tmp, where tmp was zeroed by the captured memset */
extern "C" __global__ void graph_accum(double *acc, const float *x, const float *tmp, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		acc[i] += (double)x[i] + (double)tmp[i];
}

int main(void)
{
	const int grid = (N + BLOCK - 1) / BLOCK;
	float *dx, *dtmp, *hx;
	double *dacc, *hacc;
	cudaStream_t st;
	cudaGraph_t graph;
	cudaGraphExec_t exec;
	cudaStreamCaptureStatus cs;
	size_t nnodes = 0;
	int bad = 0;

	CK(cudaSetDevice(0));
	CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
	CK(cudaMalloc(&dx, N * sizeof(float)));
	CK(cudaMalloc(&dtmp, N * sizeof(float)));
	CK(cudaMalloc(&dacc, N * sizeof(double)));
	hx = (float *)malloc(N * sizeof(float));
	hacc = (double *)malloc(N * sizeof(double));
	if (!hx || !hacc)
		return 1;
	for (int i = 0; i < N; i++)
		hx[i] = (float)(i % 100) - 50.0f;
	CK(cudaMemcpy(dx, hx, N * sizeof(float), cudaMemcpyHostToDevice));
	CK(cudaMemset(dacc, 0, N * sizeof(double)));
	CK(cudaDeviceSynchronize());

	CK(cudaStreamBeginCapture(st, cudaStreamCaptureModeGlobal));
	CK(cudaMemsetAsync(dtmp, 0, N * sizeof(float), st));
	graph_step<<<grid, BLOCK, 0, st>>>(dx, N);
	CK_LAUNCH();
	graph_accum<<<grid, BLOCK, 0, st>>>(dacc, dx, dtmp, N);
	CK_LAUNCH();
	CK(cudaStreamIsCapturing(st, &cs));
	if (cs != cudaStreamCaptureStatusActive) {
		fprintf(stderr, "graphs: capture not active (%d)\n", (int)cs);
		return 1;
	}
	CK(cudaStreamEndCapture(st, &graph));
	CK(cudaGraphGetNodes(graph, NULL, &nnodes));
	CK(cudaGraphInstantiate(&exec, graph, 0));

	for (int l = 0; l < LAUNCHES; l++)
		CK(cudaGraphLaunch(exec, st));
	CK(cudaStreamSynchronize(st));

	CK(cudaMemcpy(hacc, dacc, N * sizeof(double), cudaMemcpyDeviceToHost));
	{
		double sum = 0, sum_x = 0;
		float *gx = (float *)malloc(N * sizeof(float));

		if (!gx)
			return 1;
		CK(cudaMemcpy(gx, dx, N * sizeof(float), cudaMemcpyDeviceToHost));
		for (int i = 0; i < N; i++) {
			/* CPU replay of one element class (same float ops) */
			float x = (float)(i % 100) - 50.0f;
			double acc = 0;
			if (i < 100) {
				for (int l = 0; l < LAUNCHES; l++) {
					x = x * 0.75f + 1.0f;
					acc += (double)x;
				}
				if (fabs(acc - hacc[i]) > 1e-9 * fabs(acc) + 1e-9 ||
				    fabsf(x - gx[i]) > 1e-5f)
					bad++;
			} else if (hacc[i] != hacc[i % 100] || gx[i] != gx[i % 100]) {
				bad++;
			}
			sum += hacc[i];
			sum_x += gx[i];
		}
		printf("graphs nodes=%zu launches=%d n=%d\n", nnodes, LAUNCHES, N);
		printf("graph_accum checksum=%.12e\n", sum);
		printf("graph_step checksum=%.9e\n", sum_x);
		free(gx);
		if (bad || nnodes != 3) {
			printf("graphs: MISMATCH (%d elements, %zu nodes)\n", bad, nnodes);
			return 1;
		}
		printf("graphs: reference check OK\n");
	}

	CK(cudaGraphExecDestroy(exec));
	CK(cudaGraphDestroy(graph));
	CK(cudaStreamDestroy(st));
	CK(cudaFree(dx));
	CK(cudaFree(dtmp));
	CK(cudaFree(dacc));
	free(hx);
	free(hacc);
	return 0;
}
