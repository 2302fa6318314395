/*
 * drv-threads.c - several threads, each on its own per-thread default
 * stream: compiled with CUDA_API_PER_THREAD_DEFAULT_STREAM so the program
 * calls the _ptsz/_ptds entry points, as nvcc --default-stream per-thread
 * code does.  Each thread checks its own results.
 *
 * `drv-threads mark`: the odd threads also launch fill_u32 (on a buffer
 * of their own) after each vec_add, and every thread waits for all to have
 * launched before it copies back, so that the newest launches before any
 * copy are other threads' too: t55 checks that `kmux verify` names each
 * copy's own thread's kernels.
 */
#include <pthread.h>
#include <string.h>

#include "e2e-common.h"

#define NTHREADS 4
#define N 2048

static CUcontext ctx;
static CUfunction vec_add, fill_u32;
static int mark;
static pthread_barrier_t launched;

static void *worker(void *arg)
{
	int id = (int)(intptr_t)arg, n = N;
	float *x = malloc(N * sizeof(float)), *y = malloc(N * sizeof(float));
	float *z = malloc(N * sizeof(float));
	CUdeviceptr a, b, c, d = 0;

	CHECK(cuCtxSetCurrent(ctx));
	for (int i = 0; i < N; i++) {
		x[i] = (float)(i + id);
		y[i] = (float)id;
	}
	CHECK(cuMemAlloc(&a, N * sizeof(float)));
	CHECK(cuMemAlloc(&b, N * sizeof(float)));
	CHECK(cuMemAlloc(&c, N * sizeof(float)));
	if (mark)
		CHECK(cuMemAlloc(&d, N * sizeof(unsigned)));
	for (int it = 0; it < 5; it++) {
		void *params[] = { &a, &b, &c, &n };
		unsigned v = (unsigned)id;
		void *fparams[] = { &d, &v, &n };

		CHECK(cuMemcpyHtoDAsync(a, x, N * sizeof(float), 0));
		CHECK(cuMemcpyHtoDAsync(b, y, N * sizeof(float), 0));
		CHECK(cuLaunchKernel(vec_add, N / 256, 1, 1, 256, 1, 1, 0, 0,
				     params, NULL));
		if (mark && (id & 1))
			CHECK(cuLaunchKernel(fill_u32, N / 256, 1, 1, 256, 1,
					     1, 0, 0, fparams, NULL));
		if (mark)
			pthread_barrier_wait(&launched);
		CHECK(cuStreamSynchronize(0));
		CHECK(cuMemcpyDtoH(z, c, N * sizeof(float)));
		for (int i = 0; i < N; i++) {
			if (z[i] != x[i] + y[i]) {
				fprintf(stderr, "thread %d: wrong result\n", id);
				exit(1);
			}
		}
	}
	CHECK(cuMemFree(a));
	CHECK(cuMemFree(b));
	CHECK(cuMemFree(c));
	if (mark)
		CHECK(cuMemFree(d));
	free(x);
	free(y);
	free(z);
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t t[NTHREADS];
	CUdevice dev;
	CUmodule mod;

	CHECK(cuInit(0));
	CHECK(cuDeviceGet(&dev, 0));
	CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
	CHECK(cuCtxSetCurrent(ctx));
	CHECK(cuModuleLoad(&mod, e2e_module_path()));
	CHECK(cuModuleGetFunction(&vec_add, mod, "vec_add"));
	CHECK(cuModuleGetFunction(&fill_u32, mod, "fill_u32"));
	mark = argc > 1 && strcmp(argv[1], "mark") == 0;
	if (mark)
		pthread_barrier_init(&launched, NULL, NTHREADS);
	for (int i = 0; i < NTHREADS; i++)
		pthread_create(&t[i], NULL, worker, (void *)(intptr_t)i);
	for (int i = 0; i < NTHREADS; i++)
		pthread_join(t[i], NULL);
	CHECK(cuModuleUnload(mod));
	CHECK(cuDevicePrimaryCtxRelease(dev));
	printf("drv-threads ok\n");
	return 0;
}
