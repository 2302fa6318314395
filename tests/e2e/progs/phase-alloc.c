/*
 * phase-alloc.c - phase-local scratch buffers on the default stream, for
 * stream-ordered allocation under the scheduler (t59-stream-alloc.sh; the
 * pattern of bench/apps/phase_buffers.cu).
 *
 *   phase-alloc phases [TASKS [PHASES]]   per phase: cuMemAlloc a scratch
 *       buffer per task, fill it, scale it, sum it into the task's
 *       results (simulated durations, so the tasks can
 *       overlap), cuMemFree the scratch; then prints "sum T P VALUE" for
 *       every task and phase, and "done".
 *   phase-alloc own-stream   the same, one phase, and per task a second
 *       buffer that only a non-blocking stream of the program's writes
 *       (for 3 ms) before its cuMemFree: ordered by nothing kmux sees, only
 *       by cuMemFree's synchronization.
 *   phase-alloc quota        (run with a quota of 100 MiB) 60 MiB
 *       allocated, used, freed; prints what cuMemGetInfo says is free,
 *       then "managed err=E" for a 70 MiB managed allocation.
 *   phase-alloc oom          (run on a 1 GiB device) 600 MiB allocated,
 *       used, freed, then 700 MiB: prints "big err=E".
 *   phase-alloc defer-oom    (run on a 1 GiB device) 100 MiB allocated,
 *       used, freed, then 950 MiB: prints "big err=E" (a deferred free
 *       must give its memory back when an allocation needs it).
 *   phase-alloc defer-probe  4 buffers used and freed, then 32 short
 *       kernels each followed by 1 ms of host time, then a synchronization:
 *       with the keeping-up probe on (KMUX_DEBUG_KEEP_UP_US=5000), the
 *       deferred frees happen before the synchronization.
 *   phase-alloc defer-quota  (run with a quota of 100 MiB) 60 MiB
 *       allocated, used, freed, then 70 MiB: "big err=E"; then frees a
 *       buffer twice: "again err=E" (the driver's answer to a double free).
 */
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "e2e-common.h"

#define MIB (1024u * 1024u)
#define MAXT 8
#define MAXP 8

static CUfunction f_fill, f_scale, f_sum, f_touch;

static void launch(CUfunction f, CUstream s, void **args)
{
	CHECK(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, s, args, NULL));
}

/* A kernel that writes [p, p + bytes) for us microseconds. */
static void touch(CUdeviceptr p, uint64_t bytes, CUstream s, int us)
{
	int rw = 2;	/* SIM_WRITE (tests/simcuda/simcuda.h) */
	void *a[] = { &p, &bytes, &rw, &us };

	launch(f_touch, s, a);
}

static int phases(int nt, int np, int own)
{
	CUdeviceptr res[MAXT], scratch[MAXT], extra[MAXT];
	float out[MAXT][MAXP];
	CUstream mine = NULL;

	if (own)
		CHECK(cuStreamCreate(&mine, CU_STREAM_NON_BLOCKING));
	for (int t = 0; t < nt; t++)
		CHECK(cuMemAlloc(&res[t], MAXP * 4));
	for (int p = 0; p < np; p++) {
		for (int t = 0; t < nt; t++) {
			float x = (float)(t * 7 + p * 3 + 1), k = 2.0f + p;
			int n = 1024 << (p % 3);
			CUdeviceptr r = res[t] + (CUdeviceptr)p * 4;
			unsigned v;
			void *fa[] = { &scratch[t], &v, &n };
			void *ka[] = { &scratch[t], &k, &n };
			void *sa[] = { &scratch[t], &r, &n };

			memcpy(&v, &x, 4);
			CHECK(cuMemAlloc(&scratch[t], (size_t)n * 4));
			launch(f_fill, NULL, fa);
			touch(scratch[t], 4, NULL, 2000);
			launch(f_scale, NULL, ka);
			launch(f_sum, NULL, sa);
			if (own) {
				CHECK(cuMemAlloc(&extra[t], 4096));
				touch(extra[t], 4096, mine, 3000);
			}
		}
		for (int t = 0; t < nt; t++) {
			CHECK(cuMemFree(scratch[t]));
			if (own)
				CHECK(cuMemFree(extra[t]));
		}
	}
	for (int t = 0; t < nt; t++) {
		CHECK(cuMemcpyDtoH(out[t], res[t], (size_t)np * 4));
		CHECK(cuMemFree(res[t]));
	}
	for (int t = 0; t < nt; t++)
		for (int p = 0; p < np; p++)
			printf("sum %d %d %.1f\n", t, p, (double)out[t][p]);
	if (own)
		CHECK(cuStreamDestroy(mine));
	printf("done\n");
	return 0;
}

/* size MiB allocated, written by a kernel, freed. */
static void use_and_free(size_t mib)
{
	CUdeviceptr p;

	CHECK(cuMemAlloc(&p, mib * MIB));
	touch(p, (uint64_t)mib * MIB, NULL, 1000);
	CHECK(cuMemFree(p));
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "phases";
	CUdeviceptr p = 0;
	CUcontext ctx;
	CUmodule mod;
	size_t fr, tot;
	int r = 0;

	CHECK(cuInit(0));
	CHECK(cuCtxCreate(&ctx, NULL, 0, 0));
	CHECK(cuModuleLoad(&mod, e2e_module_path()));
	CHECK(cuModuleGetFunction(&f_fill, mod, "fill_u32"));
	CHECK(cuModuleGetFunction(&f_scale, mod, "scale"));
	CHECK(cuModuleGetFunction(&f_sum, mod, "sum_reduce"));
	CHECK(cuModuleGetFunction(&f_touch, mod, "touch"));
	if (!strcmp(mode, "phases")) {
		int nt = argc > 2 ? atoi(argv[2]) : 4;
		int np = argc > 3 ? atoi(argv[3]) : 3;

		if (nt < 1 || nt > MAXT || np < 1 || np > MAXP) {
			fprintf(stderr, "phase-alloc: 1..%d tasks, 1..%d "
				"phases\n", MAXT, MAXP);
			return 2;
		}
		r = phases(nt, np, 0);
	} else if (!strcmp(mode, "own-stream")) {
		r = phases(4, 1, 1);
	} else if (!strcmp(mode, "quota")) {
		use_and_free(60);
		CHECK(cuMemGetInfo(&fr, &tot));
		printf("free %zu\n", fr / MIB);
		printf("managed err=%d\n", (int)cuMemAllocManaged(&p, 70 * MIB,
						CU_MEM_ATTACH_GLOBAL));
		if (p)
			CHECK(cuMemFree(p));
	} else if (!strcmp(mode, "oom")) {
		use_and_free(600);
		printf("big err=%d\n", (int)cuMemAlloc(&p, 700 * MIB));
		if (p)
			CHECK(cuMemFree(p));
	} else if (!strcmp(mode, "defer-probe")) {
		struct timespec ms = { 0, 1000000 };

		for (int i = 0; i < 4; i++)
			use_and_free(1);
		CHECK(cuMemAlloc(&p, MIB));
		for (int i = 0; i < 32; i++) {
			touch(p, MIB, NULL, 1);
			nanosleep(&ms, NULL);
		}
		CHECK(cuMemFree(p));
		p = 0;
		printf("done\n");
	} else if (!strcmp(mode, "defer-oom") || !strcmp(mode, "defer-quota")) {
		int oom = !strcmp(mode, "defer-oom");

		use_and_free(oom ? 100 : 60);
		printf("big err=%d\n", (int)cuMemAlloc(&p, (oom ? 950 : 70) * MIB));
		if (p)
			CHECK(cuMemFree(p));
		if (!oom) {
			CHECK(cuMemAlloc(&p, MIB));
			touch(p, MIB, NULL, 1000);
			CHECK(cuMemFree(p));
			printf("again err=%d\n", (int)cuMemFree(p));
		}
	} else {
		fprintf(stderr, "phase-alloc: unknown mode %s\n", mode);
		return 2;
	}
	CHECK(cuCtxSynchronize());
	CHECK(cuModuleUnload(mod));
	CHECK(cuCtxDestroy(ctx));
	return r;
}
