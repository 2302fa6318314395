/*
 * call_cost.c - the host cost of a driver call, with and without kmux
 * (issue 2, item 8).
 *
 * The launch loops (launch_loop*.c) run back-to-back empty kernels, which
 * the GPU retires at ~3.7 us each on an H200: the loop is GPU-bound and a
 * fraction of a microsecond of host overhead disappears in its noise.  Here
 * the queue never fills: 32 launches are submitted and timed, then the stream
 * is synchronized outside the timed region, thousands of times; the median
 * per-launch submit time is the host cost of cuLaunchKernel.  Measured both
 * through the exported symbol (-lcuda) and through a pointer from
 * cuGetProcAddress (how cudart, PyTorch, CuPy and Triton call), plus two
 * hooked calls that never touch the GPU's queue: cuCtxGetDevice and
 * cuStreamQuery on an idle stream.
 *
 * Usage: call_cost KERNEL.cubin [BATCHES=4000]
 * Prints: RESULT launch_ns=.. launch_gpa_ns=.. ctxgetdevice_ns=.. streamquery_ns=..
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "drv_check.h"

#define BATCH 32

typedef CUresult (*launch_fn)(CUfunction, unsigned, unsigned, unsigned,
			      unsigned, unsigned, unsigned, unsigned, CUstream,
			      void **, void **);

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
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

/* Median per-launch submit time over `batches` batches of BATCH launches. */
static double launch_cost(launch_fn launch, CUfunction f, CUstream st,
			  void **args, long batches, double *samples)
{
	for (long b = 0; b < batches; b++) {
		double t0 = now_ns();

		for (int i = 0; i < BATCH; i++)
			CU(launch(f, 1, 1, 1, 32, 1, 1, 0, st, args, NULL));
		samples[b] = (now_ns() - t0) / BATCH;
		CU(cuStreamSynchronize(st));
	}
	return median(samples, batches);
}

int main(int argc, char **argv)
{
	long batches = argc > 2 ? atol(argv[2]) : 4000;
	CUdriverProcAddressQueryResult qr;
	launch_fn gpa_launch = NULL;
	double *samples, t0, q_ctx, q_stream;
	CUdevice dev, d2;
	CUcontext ctx;
	CUmodule mod;
	CUfunction f;
	CUstream st;
	CUdeviceptr p;
	size_t len;
	void *image;
	int n = 1;
	void *args[] = { &p, &n };
	const long queries = 1000000;

	if (argc < 2 || batches < 10) {
		fprintf(stderr, "usage: %s KERNEL.cubin [BATCHES>=10]\n", argv[0]);
		return 2;
	}
	samples = malloc(sizeof(double) * (size_t)batches);
	if (!samples)
		return 1;
	image = read_file_or_die(argv[1], &len);
	CU(cuInit(0));
	CU(cuDeviceGet(&dev, 0));
	CU(cuDevicePrimaryCtxRetain(&ctx, dev));
	CU(cuCtxSetCurrent(ctx));
	CU(cuModuleLoadData(&mod, image));
	CU(cuModuleGetFunction(&f, mod, "loop_empty"));
	CU(cuMemAlloc(&p, 4096));
	CU(cuStreamCreate(&st, CU_STREAM_NON_BLOCKING));
	CU(cuGetProcAddress("cuLaunchKernel", (void **)&gpa_launch, 12000,
			    CU_GET_PROC_ADDRESS_LEGACY_STREAM, &qr));

	/* Warm-up: module load, first launches, clocks. */
	launch_cost(cuLaunchKernel, f, st, args, batches / 4 + 1, samples);
	printf("RESULT launch_ns=%.1f", launch_cost(cuLaunchKernel, f, st,
						   args, batches, samples));
	printf(" launch_gpa_ns=%.1f", launch_cost(gpa_launch, f, st, args,
						  batches, samples));
	t0 = now_ns();
	for (long i = 0; i < queries; i++)
		CU(cuCtxGetDevice(&d2));
	q_ctx = (now_ns() - t0) / queries;
	t0 = now_ns();
	for (long i = 0; i < queries; i++)
		CU(cuStreamQuery(st));
	q_stream = (now_ns() - t0) / queries;
	printf(" ctxgetdevice_ns=%.1f streamquery_ns=%.1f\n", q_ctx, q_stream);
	CU(cuStreamDestroy(st));
	CU(cuMemFree(p));
	CU(cuModuleUnload(mod));
	CU(cuDevicePrimaryCtxRelease(dev));
	free(samples);
	free(image);
	return 0;
}
