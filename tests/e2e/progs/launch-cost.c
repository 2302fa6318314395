/*
 * launch-cost.c - host time per default-stream kernel launch, for measuring
 * what kmux's stream scheduler adds per operation (issue 3: PyTorch is bound
 * by the host's launch rate).  Run it plain and under the preload and
 * subtract; bench/launch-cost.sh does that (t58 checks it still runs).
 *
 *   launch-cost PATTERN [OPS [TRIALS]]
 *
 * Patterns (kernel nop8 of dag.so: eight pointer parameters, no work):
 *   indep  each launch writes its own buffer, 64 rotating: no dependencies
 *   chain  every launch touches the same buffer: a chain
 *   torch  PyTorch-like: 321 allocations (64 weights, 64 biases, a ring of
 *          192 activations, one unused), 6 pointers per launch: the
 *          previous output, a skip connection 4 back, a weight, a bias,
 *          the output and a second weight, then 2 unused (NULL)
 *   fork   PyTorch-like with branches: every 4 launches read one input and
 *          write 4 outputs (an Inception module), then a concat reads them
 *   cudart the torch pattern called the way cudart calls the driver: both
 *          entry points fetched through cuGetProcAddress, and
 *          cuCtxGetDevice_v2 called 10 times before each launch (PyTorch
 *          under cudart 13 made 10.3 such calls per launch, run 24)
 *   staged bench/memory/staged.cu's request (issue 5 (c)): a synchronous
 *          1 KiB host-to-device copy, 4 launches each reading a slice of
 *          one of 3 stage weights (4 MiB each: above KMUX_LAZY_MIN's
 *          default, so managed) and a 1 KiB activation, writing the next,
 *          then a synchronous 1 KiB device-to-host copy: 6 operations, each
 *          counted as a "launch" (the copies are timed too)
 *
 * A cuCtxSynchronize ends every 1000 launches (an iteration); only the
 * launch calls are timed.  Prints the best trial's ns per launch (least
 * disturbed by the simulated driver's worker threads and other load).
 */
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "e2e-common.h"

#define NWEIGHT 64
#define NACT 192
#define ITER 1000

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

#define NSTAGE 3
#define STAGE_BYTES (4u << 20)
#define SLICE_BYTES (256u << 10)

static CUdeviceptr w[NWEIGHT], bias[NWEIGHT], act[NACT], ws, stage_w[NSTAGE];
static unsigned char host_act[1024];

/* The eight pointer parameters of launch i for the pattern. */
static void args_for(const char *pat, long i, CUdeviceptr p[8])
{
	memset(p, 0, 8 * sizeof(p[0]));
	if (!strcmp(pat, "indep")) {
		p[0] = act[i % 64];
	} else if (!strcmp(pat, "chain")) {
		p[0] = act[0];
	} else if (!strcmp(pat, "torch") || !strcmp(pat, "cudart")) {
		p[0] = act[(i + NACT - 1) % NACT];
		p[1] = act[(i + NACT - 4) % NACT];
		p[2] = w[i % NWEIGHT];
		p[3] = bias[i % NWEIGHT];
		p[4] = act[i % NACT];
		p[5] = w[(i + 32) % NWEIGHT];
	} else { /* fork: module m = i / 5, launch k = i % 5 */
		long m = i / 5, k = i % 5;

		if (k < 4) {
			p[0] = act[(5 * m + NACT - 1) % NACT];
			p[1] = w[(4 * m + k) % NWEIGHT];
			p[2] = act[(5 * m + k) % NACT];
		} else {
			for (int j = 0; j < 4; j++)
				p[j] = act[(5 * m + j) % NACT];
			p[4] = act[(5 * m + 4) % NACT];
		}
	}
}

/*
 * staged: operation i of request i / 6.  The copies are made here (1);
 * a launch's pointers are left in p (0).  Stage s = request / 1000 % 3,
 * so each stage's weights are used for a stretch, as staged.cu's phases.
 */
static int staged_op(long i, CUdeviceptr p[8])
{
	long req = i / 6, k = i % 6;
	int s = (int)(req / 1000 % NSTAGE);

	if (k == 0) {
		CHECK(cuMemcpyHtoD(act[0], host_act, sizeof(host_act)));
		return 1;
	}
	if (k == 5) {
		CHECK(cuMemcpyDtoH(host_act, act[4], sizeof(host_act)));
		return 1;
	}
	memset(p, 0, 8 * sizeof(p[0]));
	p[0] = stage_w[s] + (CUdeviceptr)((req * 4 + k - 1) %
					  (STAGE_BYTES / SLICE_BYTES)) *
				   SLICE_BYTES;
	p[1] = act[k - 1];
	p[2] = act[k];
	return 0;
}

int main(int argc, char **argv)
{
	const char *pat = argc > 1 ? argv[1] : "torch";
	long ops = argc > 2 ? atol(argv[2]) : 20000;
	int trials = argc > 3 ? atoi(argv[3]) : 5;
	const char *mod = e2e_module_path(), *slash;
	char path[4096];
	CUcontext ctx;
	CUmodule m;
	CUfunction f;
	CUdeviceptr p[8];
	void *params[8];
	uint64_t best = UINT64_MAX, t0, sum;
	int staged = !strcmp(pat, "staged"), cudart = !strcmp(pat, "cudart");
	CUresult (*launch)(CUfunction, unsigned, unsigned, unsigned, unsigned,
			   unsigned, unsigned, unsigned, CUstream, void **,
			   void **) = cuLaunchKernel;
	CUresult (*ctx_dev)(CUdevice *, CUcontext) = cuCtxGetDevice_v2;
	CUdevice dev;

	if (strcmp(pat, "indep") && strcmp(pat, "chain") &&
	    strcmp(pat, "torch") && strcmp(pat, "fork") &&
	    strcmp(pat, "staged") && !cudart) {
		fprintf(stderr, "usage: launch-cost indep|chain|torch|cudart|"
				"fork|staged [OPS [TRIALS]]\n");
		return 2;
	}
	if (ops < ITER || trials < 1) {
		fprintf(stderr, "launch-cost: OPS >= %d, TRIALS >= 1\n", ITER);
		return 2;
	}
	slash = strrchr(mod, '/');
	snprintf(path, sizeof(path), "%.*s/dag.so",
		 slash ? (int)(slash - mod) : 1, slash ? mod : ".");
	CHECK(cuInit(0));
	CHECK(cuDevicePrimaryCtxRetain(&ctx, 0));
	CHECK(cuCtxSetCurrent(ctx));
	CHECK(cuModuleLoad(&m, path));
	CHECK(cuModuleGetFunction(&f, m, "nop8"));
	if (cudart) {
		CUdriverProcAddressQueryResult st;

		CHECK(cuGetProcAddress_v2("cuLaunchKernel", (void **)&launch,
					  13000, CU_GET_PROC_ADDRESS_LEGACY_STREAM,
					  &st));
		CHECK(cuGetProcAddress_v2("cuCtxGetDevice", (void **)&ctx_dev,
					  13000, CU_GET_PROC_ADDRESS_LEGACY_STREAM,
					  &st));
	}
	for (int i = 0; i < NWEIGHT; i++) {
		CHECK(cuMemAlloc(&w[i], 256));
		CHECK(cuMemAlloc(&bias[i], 256));
	}
	for (int i = 0; i < NACT; i++)
		CHECK(cuMemAlloc(&act[i], sizeof(host_act)));
	CHECK(cuMemAlloc(&ws, 4096));
	for (int i = 0; staged && i < NSTAGE; i++) {
		CHECK(cuMemAlloc(&stage_w[i], STAGE_BYTES));
		CHECK(cuMemsetD8(stage_w[i], 0, STAGE_BYTES));
	}
	for (int i = 0; i < 8; i++)
		params[i] = &p[i];
	for (int t = 0; t < trials; t++) {
		sum = 0;
		for (long i = 0; i < ops; i += ITER) {
			t0 = now_ns();
			for (long j = i; j < i + ITER; j++) {
				if (staged && staged_op(j, p))
					continue;
				args_for(pat, j, p);
				for (int k = 0; cudart && k < 10; k++)
					CHECK(ctx_dev(&dev, NULL));
				CHECK(launch(f, 1, 1, 1, 32, 1, 1, 0, NULL,
					     params, NULL));
			}
			sum += now_ns() - t0;
			CHECK(cuCtxSynchronize());
		}
		if (sum < best)
			best = sum;
	}
	printf("%s ns/launch %.1f\n", pat,
	       (double)best / (double)(ops / ITER * ITER));
	return 0;
}
