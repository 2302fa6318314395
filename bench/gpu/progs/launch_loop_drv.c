/*
 * launch_loop_drv.c - overhead benchmark, driver-API variant (issue item 8).
 *
 * The same loop as launch_loop.cu, but calling cuLaunchKernel directly (the
 * program links -lcuda, so with kmux preloaded the call lands on kmux's
 * exported symbol): this measures the interposer alone, without cudart and
 * its cuGetProcAddress-resolved entry points.  The kernel comes from
 * `nvcc -cubin launch_loop.cu` (argv[1]).  Same output format (submit,
 * total, gpu per launch).  Exits nonzero on any CUDA error.
 *
 * Usage: launch_loop_drv KERNEL.cubin [CHUNK=50000] [CHUNKS=5] [WARMUP=20000]
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "drv_check.h"

static double now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec * 1e-3;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double median(double *v, long n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

int main(int argc, char **argv)
{
	long chunk = argc > 2 ? atol(argv[2]) : 50000;
	long chunks = argc > 3 ? atol(argv[3]) : 5;
	long warmup = argc > 4 ? atol(argv[4]) : 20000;
	CUdevice dev;
	CUcontext ctx;
	CUmodule mod;
	CUfunction f;
	CUstream st;
	CUdeviceptr d;
	int n = 1;
	void *args[] = { &d, &n };
	double *submit, *total, *gpu;
	CUevent e0, e1;
	void *image;

	if (argc < 2 || chunk < 1 || chunks < 1 || warmup < 0) {
		fprintf(stderr, "usage: %s KERNEL.cubin [CHUNK] [CHUNKS] [WARMUP]\n",
			argv[0]);
		return 2;
	}
	submit = malloc(sizeof(double) * (size_t)chunks);
	total = malloc(sizeof(double) * (size_t)chunks);
	gpu = malloc(sizeof(double) * (size_t)chunks);
	if (!submit || !total || !gpu)
		return 1;
	image = read_file_or_die(argv[1], NULL);

	CU(cuInit(0));
	CU(cuDeviceGet(&dev, 0));
	CU(cuDevicePrimaryCtxRetain(&ctx, dev));
	CU(cuCtxSetCurrent(ctx));
	CU(cuModuleLoadData(&mod, image));
	CU(cuModuleGetFunction(&f, mod, "loop_empty"));
	CU(cuStreamCreate(&st, CU_STREAM_NON_BLOCKING));
	CU(cuMemAlloc(&d, 32 * sizeof(int)));
	CU(cuEventCreate(&e0, CU_EVENT_DEFAULT));
	CU(cuEventCreate(&e1, CU_EVENT_DEFAULT));

	for (long i = 0; i < warmup; i++)
		CU(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, st, args, NULL));
	CU(cuStreamSynchronize(st));

	for (long c = 0; c < chunks; c++) {
		double t0, t1, t2;
		float ms = 0;
		CU(cuEventRecord(e0, st));
		t0 = now_us();
		for (long i = 0; i < chunk; i++)
			CU(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, st, args, NULL));
		t1 = now_us();
		CU(cuEventRecord(e1, st));
		CU(cuStreamSynchronize(st));
		t2 = now_us();
		CU(cuEventElapsedTime(&ms, e0, e1));
		submit[c] = (t1 - t0) / chunk;
		total[c] = (t2 - t0) / chunk;
		gpu[c] = ms * 1e3 / chunk;
		printf("chunk %ld launches=%ld submit_us=%.4f total_us=%.4f gpu_us=%.4f\n",
		       c, chunk, submit[c], total[c], gpu[c]);
	}
	printf("RESULT api=driver launches=%ld submit_us=%.4f total_us=%.4f gpu_us=%.4f\n",
	       chunk * chunks, median(submit, chunks), median(total, chunks),
	       median(gpu, chunks));
	CU(cuEventDestroy(e0));
	CU(cuEventDestroy(e1));
	CU(cuMemFree(d));
	CU(cuStreamDestroy(st));
	CU(cuModuleUnload(mod));
	CU(cuDevicePrimaryCtxRelease(dev));
	free(submit);
	free(total);
	free(gpu);
	free(image);
	return 0;
}
