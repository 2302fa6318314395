/*
 * drv-basic.c - a plain driver-API program linked with -lcuda: allocations,
 * copies, launches with kernelParams and with the `extra` buffer form, a
 * by-value struct holding pointers, two streams with an event between them,
 * and synchronizations.  Prints a checksum; exits non-zero on any error or
 * wrong result.
 */
#include <stdint.h>
#include <string.h>

#include "e2e-common.h"

#define N 4096

struct copy_args {
	CUdeviceptr src;
	CUdeviceptr dst;
	int n;
};

int main(int argc, char **argv)
{
	int iters = argc > 1 ? atoi(argv[1]) : 3;
	CUdevice dev;
	CUcontext ctx;
	CUmodule mod;
	CUfunction vec_add, copy_struct;
	CUdeviceptr a, b, c, d;
	CUstream s1, s2;
	CUevent ev;
	static float ha[N], hb[N], hc[N], hd[N];
	int n = N;
	double sum = 0;

	for (int i = 0; i < N; i++) {
		ha[i] = (float)i;
		hb[i] = (float)(2 * i + 1);
	}
	CHECK(cuInit(0));
	CHECK(cuDeviceGet(&dev, 0));
	CHECK(cuCtxCreate(&ctx, NULL, 0, dev));
	CHECK(cuModuleLoad(&mod, e2e_module_path()));
	CHECK(cuModuleGetFunction(&vec_add, mod, "vec_add"));
	CHECK(cuModuleGetFunction(&copy_struct, mod, "copy_struct"));
	CHECK(cuMemAlloc(&a, sizeof(ha)));
	CHECK(cuMemAlloc(&b, sizeof(hb)));
	CHECK(cuMemAlloc(&c, sizeof(hc)));
	CHECK(cuMemAlloc(&d, sizeof(hd)));
	CHECK(cuStreamCreate(&s1, CU_STREAM_NON_BLOCKING));
	CHECK(cuStreamCreate(&s2, CU_STREAM_NON_BLOCKING));
	CHECK(cuEventCreate(&ev, CU_EVENT_DEFAULT));

	for (int it = 0; it < iters; it++) {
		void *params[] = { &a, &b, &c, &n };
		struct copy_args ca = { .src = c, .dst = d, .n = N };
		struct {
			CUdeviceptr a, b, c;
			int n;
		} __attribute__((aligned(8))) buf = { a, b, c, N };
		size_t bufsz = sizeof(buf);
		void *extra[] = { CU_LAUNCH_PARAM_BUFFER_POINTER, &buf,
				  CU_LAUNCH_PARAM_BUFFER_SIZE, &bufsz,
				  CU_LAUNCH_PARAM_END };
		void *cparams[] = { &ca };

		CHECK(cuMemcpyHtoD(a, ha, sizeof(ha)));
		CHECK(cuMemcpyHtoDAsync(b, hb, sizeof(hb), s1));
		CHECK(cuLaunchKernel(vec_add, N / 256, 1, 1, 256, 1, 1, 0, s1,
				     params, NULL));
		CHECK(cuEventRecord(ev, s1));
		CHECK(cuStreamWaitEvent(s2, ev, 0));
		CHECK(cuLaunchKernel(copy_struct, N / 256, 1, 1, 256, 1, 1, 0,
				     s2, cparams, NULL));
		CHECK(cuStreamSynchronize(s2));
		CHECK(cuLaunchKernel(vec_add, N / 256, 1, 1, 256, 1, 1, 0, 0,
				     NULL, extra));
		CHECK(cuCtxSynchronize());
		CHECK(cuMemcpyDtoH(hc, c, sizeof(hc)));
		CHECK(cuMemcpyDtoH(hd, d, sizeof(hd)));
		for (int i = 0; i < N; i++) {
			if (hc[i] != ha[i] + hb[i] || hd[i] != hc[i]) {
				fprintf(stderr, "wrong result at %d: %f %f\n",
					i, hc[i], hd[i]);
				return 1;
			}
			sum += hd[i];
		}
		CHECK(cuMemsetD32(d, 0, N));
	}
	CHECK(cuEventDestroy(ev));
	CHECK(cuStreamDestroy(s1));
	CHECK(cuStreamDestroy(s2));
	CHECK(cuMemFree(a));
	CHECK(cuMemFree(b));
	CHECK(cuMemFree(c));
	CHECK(cuMemFree(d));
	CHECK(cuModuleUnload(mod));
	CHECK(cuCtxDestroy(ctx));
	printf("drv-basic ok checksum=%.1f\n", sum);
	return 0;
}
