/*
 * drv_api.c - compat program (a): a pure driver-API program (-lcuda).
 *
 * Proves that under kmux a driver-API program still works and is traced:
 *   - cuModuleLoadData on a fatbin made by `nvcc -fatbin` (argv[1]);
 *   - cuLaunchKernel with kernelParams (drv_saxpy, on a created stream);
 *   - cuLaunchKernel with `extra` = CU_LAUNCH_PARAM_BUFFER_POINTER/SIZE
 *     (drv_mix, on the legacy NULL stream, ordered by legacy semantics);
 *   - cuLibraryLoadData on PTX (argv[2]) and a launch of the CUkernel;
 *   - synchronous and asynchronous memcpys, cuMemsetD32, pinned host memory;
 *   - events (record, synchronize, elapsed time; the time is not printed).
 * Prints checksums (deterministic) and exits nonzero on any CUDA error or a
 * result that disagrees with the CPU.
 *
 * Usage: drv_api KERNELS.fatbin LIBKERNELS.ptx
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "drv_check.h"

#define N (1 << 20)
#define BLOCK 256

static int close_enough(double got, double want)
{
	return fabs(got - want) <= 1e-5 * fabs(want) + 1e-4;
}

int main(int argc, char **argv)
{
	CUdevice dev;
	CUcontext ctx;
	CUmodule mod;
	CUlibrary lib;
	CUfunction f_saxpy, f_mix;
	CUkernel k_iota;
	CUstream st;
	CUevent ev0, ev1;
	CUdeviceptr dx, dy, dout;
	float *hx, *hy, *ref;
	unsigned *hout;
	void *image, *ptx;
	float ms = -1.0f;
	int n = N, bad = 0;
	unsigned grid = (N + BLOCK - 1) / BLOCK;

	if (argc != 3) {
		fprintf(stderr, "usage: %s KERNELS.fatbin LIBKERNELS.ptx\n", argv[0]);
		return 2;
	}
	image = read_file_or_die(argv[1], NULL);
	ptx = read_file_or_die(argv[2], NULL);

	CU(cuInit(0));
	CU(cuDeviceGet(&dev, 0));
	CU(cuDevicePrimaryCtxRetain(&ctx, dev));
	CU(cuCtxSetCurrent(ctx));

	CU(cuModuleLoadData(&mod, image));
	CU(cuModuleGetFunction(&f_saxpy, mod, "drv_saxpy"));
	CU(cuModuleGetFunction(&f_mix, mod, "drv_mix"));
	CU(cuLibraryLoadData(&lib, ptx, NULL, NULL, 0, NULL, NULL, 0));
	CU(cuLibraryGetKernel(&k_iota, lib, "drv_iota"));

	CU(cuStreamCreate(&st, CU_STREAM_DEFAULT));	/* blocking: legacy-ordered */
	CU(cuEventCreate(&ev0, CU_EVENT_DEFAULT));
	CU(cuEventCreate(&ev1, CU_EVENT_DEFAULT));
	CU(cuMemAlloc(&dx, N * sizeof(float)));
	CU(cuMemAlloc(&dy, N * sizeof(float)));
	CU(cuMemAlloc(&dout, N * sizeof(unsigned)));
	CU(cuMemAllocHost((void **)&hx, N * sizeof(float)));
	CU(cuMemAllocHost((void **)&hy, N * sizeof(float)));
	hout = (unsigned *)malloc(N * sizeof(unsigned));
	ref = (float *)malloc(N * sizeof(float));
	if (!hout || !ref)
		return 1;

	for (int i = 0; i < N; i++) {
		hx[i] = (float)(i % 1000) * 0.001f;
		hy[i] = (float)(i % 7) - 3.0f;
	}
	CU(cuMemcpyHtoD(dx, hx, N * sizeof(float)));		/* sync copy */
	CU(cuMemcpyHtoDAsync(dy, hy, N * sizeof(float), st));	/* async copy */
	CU(cuMemsetD32(dout, 0xdeadbeefu, N));

	CU(cuEventRecord(ev0, st));
	{	/* kernelParams form */
		float a = 2.5f;
		void *params[] = { &a, &dx, &dy, &n };
		CU(cuLaunchKernel(f_saxpy, grid, 1, 1, BLOCK, 1, 1, 0, st,
				  params, NULL));
	}
	CU(cuEventRecord(ev1, st));
	{	/* extra form, on the legacy stream (waits for st: blocking stream) */
		unsigned char buf[32];
		size_t size = sizeof(buf);
		float s = 0.5f;
		void *extra[] = {
			CU_LAUNCH_PARAM_BUFFER_POINTER, buf,
			CU_LAUNCH_PARAM_BUFFER_SIZE, &size,
			CU_LAUNCH_PARAM_END,
		};
		memset(buf, 0, sizeof(buf));
		memcpy(buf + 0, &n, sizeof(n));
		memcpy(buf + 8, &dx, sizeof(dx));
		memcpy(buf + 16, &s, sizeof(s));
		memcpy(buf + 24, &dy, sizeof(dy));
		CU(cuLaunchKernel(f_mix, grid, 1, 1, BLOCK, 1, 1, 0, NULL,
				  NULL, extra));
	}
	{	/* a CUkernel from a library, passed as the CUfunction */
		unsigned un = N, mul = 2654435761u;
		void *params[] = { &dout, &un, &mul };
		CU(cuLaunchKernel((CUfunction)k_iota, grid, 1, 1, BLOCK, 1, 1, 0,
				  st, params, NULL));
	}
	CU(cuEventSynchronize(ev1));
	CU(cuEventElapsedTime(&ms, ev0, ev1));
	if (!(ms >= 0.0f)) {
		fprintf(stderr, "drv: bad elapsed time %f\n", ms);
		return 1;
	}
	CU(cuMemcpyDtoHAsync(hy, dy, N * sizeof(float), st));
	CU(cuStreamSynchronize(st));
	CU(cuMemcpyDtoH(hout, dout, N * sizeof(unsigned)));
	CU(cuCtxSynchronize());

	/* CPU reference and deterministic checksums. */
	{
		double sum_y = 0, sum_ref = 0;
		unsigned long long sum_o = 0;
		unsigned xr = 0;

		for (int i = 0; i < N; i++) {
			float y0 = (float)(i % 7) - 3.0f;
			ref[i] = (2.5f * hx[i] + y0) * 0.5f - hx[i];
			sum_y += hy[i];
			sum_ref += ref[i];
			if (fabsf(hy[i] - ref[i]) > 1e-4f * (1.0f + fabsf(ref[i])))
				bad++;
			unsigned want = ((unsigned)i * 2654435761u) ^ ((unsigned)i >> 3);
			if (hout[i] != want)
				bad++;
			sum_o += hout[i];
			xr ^= hout[i];
		}
		printf("drv_api n=%d\n", N);
		printf("drv_saxpy+drv_mix checksum=%.9e\n", sum_y);
		printf("drv_iota xor=0x%08x sum=%llu\n", xr, sum_o);
		if (bad || !close_enough(sum_y, sum_ref)) {
			printf("drv_api: MISMATCH (%d elements)\n", bad);
			return 1;
		}
		printf("drv_api: reference check OK\n");
	}

	CU(cuEventDestroy(ev0));
	CU(cuEventDestroy(ev1));
	CU(cuStreamDestroy(st));
	CU(cuMemFree(dx));
	CU(cuMemFree(dy));
	CU(cuMemFree(dout));
	CU(cuMemFreeHost(hx));
	CU(cuMemFreeHost(hy));
	CU(cuLibraryUnload(lib));
	CU(cuModuleUnload(mod));
	CU(cuDevicePrimaryCtxRelease(dev));
	free(hout);
	free(ref);
	free(image);
	free(ptx);
	return 0;
}
