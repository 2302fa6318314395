/*
 * demo.c - the program `make demo` traces: a few kernels on the default
 * stream, the way most programs are written, with copies and a check of the
 * result.  Driver API only, so it builds with a C compiler; the kernels come
 * as PTX (demo-kernels.cu) that the driver compiles for the GPU at hand, or,
 * on the simulated driver, from the module named by KMUX_DEMO_MODULE.
 */
#include <stdio.h>
#include <stdlib.h>

#include <cuda.h>

#include "demo-kernels-ptx.h"

#define N (1 << 20)
#define ITERS 200

static void check(CUresult r, const char *what)
{
	const char *name = NULL;

	if (r == CUDA_SUCCESS)
		return;
	cuGetErrorName(r, &name);
	fprintf(stderr, "demo: %s failed: %s\n", what, name ? name : "?");
	exit(1);
}

int main(void)
{
	const char *module = getenv("KMUX_DEMO_MODULE");
	CUfunction vec_add, scale, fill;
	CUdeviceptr a, b, c;
	CUcontext ctx;
	CUmodule mod;
	CUdevice dev;
	float *host = malloc(N * sizeof(float));
	char name[128];
	int n = N;

	if (!host)
		return 1;
	check(cuInit(0), "cuInit");
	check(cuDeviceGet(&dev, 0), "cuDeviceGet");
	check(cuDeviceGetName(name, sizeof(name), dev), "cuDeviceGetName");
	check(cuDevicePrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain");
	check(cuCtxSetCurrent(ctx), "cuCtxSetCurrent");
	if (module)
		check(cuModuleLoad(&mod, module), "cuModuleLoad");
	else
		check(cuModuleLoadData(&mod, demo_kernels_ptx), "cuModuleLoadData");
	check(cuModuleGetFunction(&vec_add, mod, "vec_add"), "vec_add");
	check(cuModuleGetFunction(&scale, mod, "scale"), "scale");
	check(cuModuleGetFunction(&fill, mod, "fill_u32"), "fill_u32");
	check(cuMemAlloc(&a, N * sizeof(float)), "cuMemAlloc");
	check(cuMemAlloc(&b, N * sizeof(float)), "cuMemAlloc");
	check(cuMemAlloc(&c, N * sizeof(float)), "cuMemAlloc");

	for (int it = 0; it < ITERS; it++) {
		unsigned one = 0x3f800000u, two = 0x40000000u; /* 1.0f, 2.0f */
		float half = 0.5f;
		void *fa[] = { &a, &one, &n }, *fb[] = { &b, &two, &n };
		void *add[] = { &a, &b, &c, &n }, *sc[] = { &c, &half, &n };

		check(cuLaunchKernel(fill, N / 256, 1, 1, 256, 1, 1, 0, 0, fa,
				     NULL), "fill a");
		check(cuLaunchKernel(fill, N / 256, 1, 1, 256, 1, 1, 0, 0, fb,
				     NULL), "fill b");
		check(cuLaunchKernel(vec_add, N / 256, 1, 1, 256, 1, 1, 0, 0,
				     add, NULL), "vec_add");
		check(cuLaunchKernel(scale, N / 256, 1, 1, 256, 1, 1, 0, 0, sc,
				     NULL), "scale");
	}
	check(cuCtxSynchronize(), "cuCtxSynchronize");
	check(cuMemcpyDtoH(host, c, N * sizeof(float)), "cuMemcpyDtoH");
	for (int i = 0; i < N; i++) {
		if (host[i] != 1.5f) {
			fprintf(stderr, "demo: wrong result at %d: %f\n", i,
				host[i]);
			return 1;
		}
	}
	check(cuMemFree(a), "cuMemFree");
	check(cuMemFree(b), "cuMemFree");
	check(cuMemFree(c), "cuMemFree");
	check(cuModuleUnload(mod), "cuModuleUnload");
	check(cuDevicePrimaryCtxRelease(dev), "cuDevicePrimaryCtxRelease");
	printf("demo: %d launches on %s, result correct\n", 4 * ITERS, name);
	free(host);
	return 0;
}
