/*
 * globals.c - default-stream kernels that share state through a module-
 * scope variable (`__device__ unsigned state` in CUDA C), not through any
 * parameter, with independent kernels between them (t5j-streams-globals.sh).
 * simcuda runs vars.so's kernels (tests/simcuda/kernels/vars.c).
 *
 *   globals ptx|noptx|const|ptr
 *     ptx	the module loaded as PTX text that declares `state` and
 *		names it in vadd and vread (what nvcc emits): kmux reads it
 *     noptx	the same module loaded by path (simcuda's stand-in for an
 *		image with SASS only): kmux cannot see the variable
 *     const	a `__constant__ coef` the host sets before each round
 *		(cudaMemcpyToSymbol), read by vscale on a buffer of the
 *		round's own, with a long vtouch per round beside it (see
 *		run_const())
 *     ptr	the PTX module; vadd reaches `state` by name and vtouch is
 *		given its address (cudaGetSymbolAddress) as a parameter,
 *		in turns (see run_ptr())
 *
 * The program sets `state` with a copy to the address cuModuleGetGlobal
 * gives (as cudaMemcpyToSymbol does), then launches, eight times, vadd
 * (state = state * 3 + i) and vtouch on a buffer of its own, reading the
 * state back with vread every fourth round; then sets it again (a copy),
 * resets it with vreset (a kernel without parameters), adds and reads once
 * more.  Prints the values read ("state ..."), whether they are
 * the ones the program order gives ("order ok"), how many pairs of the
 * state's kernels overlapped in time ("state pairs K"), how many vtouch
 * ran beside one of them ("beside K"), and "conflicts none", or exits 1
 * with simcuda's overlap check's message.
 */
#include <stdio.h>
#include <string.h>

#include "e2e-common.h"
#include "simcuda.h"

#define ROUNDS 8
#define NREAD (ROUNDS / 4 + 2)

/* vtouch reaches its parameter only (both modules have it). */
#define PTX_VTOUCH \
	".visible .entry vtouch(\n" \
	"\t.param .u64 vtouch_param_0,\n\t.param .u32 vtouch_param_1\n)\n{\n" \
	"\t.reg .b32 %r<4>;\n\t.reg .b64 %rd<3>;\n\n" \
	"\tld.param.u64 %rd1, [vtouch_param_0];\n" \
	"\tcvta.to.global.u64 %rd2, %rd1;\n" \
	"\tld.global.u32 %r1, [%rd2];\n" \
	"\tmad.lo.s32 %r2, %r1, 5, 1;\n" \
	"\tst.global.u32 [%rd2], %r2;\n\tret;\n}\n"

static const char ptx[] =
	".version 8.0\n.target sm_90\n.address_size 64\n\n"
	".global .align 4 .u32 state;\n\n"
	".visible .entry vadd(\n"
	"\t.param .u32 vadd_param_0,\n\t.param .u32 vadd_param_1\n)\n{\n"
	"\t.reg .b32 %r<5>;\n\n"
	"\tld.param.u32 %r1, [vadd_param_0];\n"
	"\tld.global.u32 %r2, [state];\n"
	"\tmad.lo.s32 %r3, %r2, 3, %r1;\n"
	"\tst.global.u32 [state], %r3;\n\tret;\n}\n\n"
	".visible .entry vread(\n"
	"\t.param .u64 vread_param_0,\n\t.param .u32 vread_param_1\n)\n{\n"
	"\t.reg .b32 %r<3>;\n\t.reg .b64 %rd<3>;\n\n"
	"\tld.param.u64 %rd1, [vread_param_0];\n"
	"\tcvta.to.global.u64 %rd2, %rd1;\n"
	"\tld.global.u32 %r1, [state];\n"
	"\tst.global.u32 [%rd2], %r1;\n\tret;\n}\n\n"
	PTX_VTOUCH "\n"
	".visible .entry vreset()\n{\n\t.reg .b32 %r<2>;\n\n"
	"\tmov.u32 %r1, 0;\n\tst.global.u32 [state], %r1;\n\tret;\n}\n";

/* What nvcc emits for vscale and vtouch beside `__constant__ unsigned coef`. */
static const char ptx_const[] =
	".version 8.0\n.target sm_90\n.address_size 64\n\n"
	".const .align 4 .u32 coef;\n\n"
	".visible .entry vscale(\n"
	"\t.param .u64 vscale_param_0,\n\t.param .u32 vscale_param_1\n)\n{\n"
	"\t.reg .b32 %r<4>;\n\t.reg .b64 %rd<3>;\n\n"
	"\tld.param.u64 %rd1, [vscale_param_0];\n"
	"\tcvta.to.global.u64 %rd2, %rd1;\n"
	"\tld.const.u32 %r1, [coef];\n"
	"\tld.global.u32 %r2, [%rd2];\n"
	"\tmad.lo.s32 %r3, %r2, %r1, 1;\n"
	"\tst.global.u32 [%rd2], %r3;\n\tret;\n}\n\n"
	PTX_VTOUCH;

static int is(const struct simcuda_op_info *o, const char *name)
{
	return o->kind == SIMCUDA_OP_KERNEL && !strcmp(o->name, name);
}

static int uses_state(const struct simcuda_op_info *o)
{
	return is(o, "vadd") || is(o, "vread") || is(o, "vreset");
}

static int overlap(const struct simcuda_op_info *a,
		   const struct simcuda_op_info *b)
{
	return a->start_ns < b->end_ns && b->start_ns < a->end_ns;
}

/* Pairs of the state's kernels that overlapped; vtouch beside one. */
static void count_pairs(int *pairs, int *beside)
{
	struct simcuda_op_info a, b;
	size_t n = simcuda_op_count();

	*pairs = *beside = 0;
	for (size_t i = 0; i < n; i++) {
		int near = 0;

		if (simcuda_op_get(i, &a))
			continue;
		for (size_t j = 0; j < n; j++) {
			if (j == i || simcuda_op_get(j, &b))
				continue;
			if (uses_state(&a) && uses_state(&b) && j > i)
				*pairs += overlap(&a, &b);
			if (is(&a, "vtouch") && uses_state(&b))
				near |= overlap(&a, &b);
		}
		*beside += near;
	}
}

/* Copies that ran while a vtouch did. */
static int copies_beside_touch(void)
{
	struct simcuda_op_info a, b;
	size_t n = simcuda_op_count();
	int k = 0;

	for (size_t i = 0; i < n; i++) {
		int near = 0;

		if (simcuda_op_get(i, &a) || a.kind != SIMCUDA_OP_MEMCPY)
			continue;
		for (size_t j = 0; j < n; j++)
			if (!simcuda_op_get(j, &b) && is(&b, "vtouch"))
				near |= overlap(&a, &b);
		k += near;
	}
	return k;
}

/*
 * Each round: set coef (a copy to the address cuModuleGetGlobal gives),
 * vscale a buffer of the round's own by it (3 ms), and vtouch another
 * (8 ms), which reaches neither.  Prints the scaled values ("scaled ..."),
 * "scale ok" when each is the one its round's coef gives, how many coef
 * copies ran beside a vtouch ("copies beside K"), "conflicts none".  A
 * copy that overtook the previous round's vscale would change its value
 * (and simcuda's check would find the overlap); a copy that waited for
 * everything (a barrier) never runs beside a vtouch.
 */
static int run_const(const char *so)
{
	static char image[8192];
	CUdeviceptr coef, buf[ROUNDS], touch[ROUNDS];
	unsigned got[ROUNDS], c[ROUNDS];
	CUfunction vscale, vtouch;
	size_t bytes = 0;
	char msg[512];
	int ok = 1, beside;
	CUmodule m;

	snprintf(image, sizeof(image), "// simcuda-module: %s\n%s", so,
		 ptx_const);
	CHECK(cuModuleLoadData(&m, image));
	CHECK(cuModuleGetFunction(&vscale, m, "vscale"));
	CHECK(cuModuleGetFunction(&vtouch, m, "vtouch"));
	CHECK(cuModuleGetGlobal(&coef, &bytes, m, "coef"));
	for (int i = 0; i < ROUNDS; i++) {
		CHECK(cuMemAlloc(&buf[i], sizeof(unsigned)));
		CHECK(cuMemAlloc(&touch[i], sizeof(unsigned)));
		CHECK(cuMemsetD32(buf[i], (unsigned)i + 2, 1));
		CHECK(cuMemsetD32(touch[i], 0, 1));
	}
	CHECK(cuCtxSynchronize());
	simcuda_records_clear();
	for (int i = 0; i < ROUNDS; i++) {
		unsigned us = 3000, tus = 8000;
		void *as[] = { &buf[i], &us }, *at[] = { &touch[i], &tus };

		c[i] = (unsigned)i * 7 + 3;
		CHECK(cuMemcpyHtoD(coef, &c[i], sizeof(c[i])));
		CHECK(cuLaunchKernel(vscale, 1, 1, 1, 1, 1, 1, 0, NULL, as,
				     NULL));
		CHECK(cuLaunchKernel(vtouch, 1, 1, 1, 1, 1, 1, 0, NULL, at,
				     NULL));
	}
	CHECK(cuCtxSynchronize());
	beside = copies_beside_touch();
	if (simcuda_check(msg, sizeof(msg)) != 0) {
		fprintf(stderr, "globals: %s\n", msg);
		return 1;
	}
	printf("scaled");
	for (int i = 0; i < ROUNDS; i++) {
		CHECK(cuMemcpyDtoH(&got[i], buf[i], sizeof(got[i])));
		printf(" %u", got[i]);
		ok &= got[i] == ((unsigned)i + 2) * c[i] + 1;
	}
	printf("\n");
	if (ok)
		printf("scale ok\n");
	printf("copies beside %d\nconflicts none\n", beside);
	return ok ? 0 : 1;
}

/*
 * ROUNDS times: vadd (state = state * 3 + v, by name), then vtouch on the
 * state's own address (state = state * 5 + 1, through its parameter);
 * then vread.  Prints "state S", "order ok" when S is program order's,
 * and "conflicts none", or exits 1 with simcuda's message.
 */
static int run_ptr(const char *image)
{
	CUdeviceptr var, out;
	CUfunction vadd, vtouch, vread;
	unsigned seed = 7, s, got = 0;
	size_t bytes = 0;
	char msg[512];
	CUmodule m;

	CHECK(cuModuleLoadData(&m, image));
	CHECK(cuModuleGetFunction(&vadd, m, "vadd"));
	CHECK(cuModuleGetFunction(&vtouch, m, "vtouch"));
	CHECK(cuModuleGetFunction(&vread, m, "vread"));
	CHECK(cuModuleGetGlobal(&var, &bytes, m, "state"));
	CHECK(cuMemAlloc(&out, sizeof(unsigned)));
	CHECK(cuMemcpyHtoD(var, &seed, sizeof(seed)));
	CHECK(cuCtxSynchronize());
	simcuda_records_clear();
	s = seed;
	for (int i = 0; i < ROUNDS; i++) {
		unsigned v = (unsigned)i + 1, us = 2000;
		void *aa[] = { &v, &us }, *at[] = { &var, &us };

		CHECK(cuLaunchKernel(vadd, 1, 1, 1, 1, 1, 1, 0, NULL, aa, NULL));
		CHECK(cuLaunchKernel(vtouch, 1, 1, 1, 1, 1, 1, 0, NULL, at,
				     NULL));
		s = (s * 3 + v) * 5 + 1;
	}
	{
		unsigned us = 1000;
		void *ar[] = { &out, &us };

		CHECK(cuLaunchKernel(vread, 1, 1, 1, 1, 1, 1, 0, NULL, ar,
				     NULL));
	}
	CHECK(cuMemcpyDtoH(&got, out, sizeof(got)));
	CHECK(cuCtxSynchronize());
	printf("state %u\n", got);
	if (got == s)
		printf("order ok\n");
	if (simcuda_check(msg, sizeof(msg)) != 0) {
		fprintf(stderr, "globals: %s\n", msg);
		return 1;
	}
	printf("conflicts none\n");
	return got == s ? 0 : 1;
}

int main(int argc, char **argv)
{
	const char *mod = e2e_module_path(), *slash, *mode = argc == 2 ?
							    argv[1] : "";
	static char image[8192], so[4096];
	unsigned seed = 7, again = 11, got[NREAD], want[NREAD], s;
	CUdeviceptr var, out, touch[ROUNDS];
	CUfunction vadd, vread, vtouch, vreset;
	int pairs, beside, k = 0, ok = 1;
	size_t bytes = 0;
	char msg[512];
	CUcontext ctx;
	CUdevice dev;
	CUmodule m;

	if (strcmp(mode, "ptx") && strcmp(mode, "noptx") &&
	    strcmp(mode, "const") && strcmp(mode, "ptr")) {
		fprintf(stderr, "usage: globals ptx|noptx|const|ptr\n");
		return 2;
	}
	slash = strrchr(mod, '/');
	snprintf(so, sizeof(so), "%.*s/vars.so", slash ? (int)(slash - mod) : 1,
		 slash ? mod : ".");
	snprintf(image, sizeof(image), "// simcuda-module: %s\n%s", so, ptx);
	CHECK(cuInit(0));
	CHECK(cuDeviceGet(&dev, 0));
	CHECK(cuCtxCreate(&ctx, NULL, 0, dev));
	if (!strcmp(mode, "const"))
		return run_const(so);
	if (!strcmp(mode, "ptr"))
		return run_ptr(image);
	CHECK(cuModuleLoadData(&m, strcmp(mode, "ptx") ? so : image));
	CHECK(cuModuleGetFunction(&vadd, m, "vadd"));
	CHECK(cuModuleGetFunction(&vread, m, "vread"));
	CHECK(cuModuleGetFunction(&vtouch, m, "vtouch"));
	CHECK(cuModuleGetFunction(&vreset, m, "vreset"));
	CHECK(cuModuleGetGlobal(&var, &bytes, m, "state"));
	if (bytes != sizeof(unsigned)) {
		fprintf(stderr, "globals: state is %zu bytes\n", bytes);
		return 1;
	}
	CHECK(cuMemAlloc(&out, sizeof(got)));
	CHECK(cuMemsetD32(out, 0, NREAD));
	for (int i = 0; i < ROUNDS; i++) {
		CHECK(cuMemAlloc(&touch[i], sizeof(unsigned)));
		CHECK(cuMemsetD32(touch[i], (unsigned)i, 1));
	}
	CHECK(cuCtxSynchronize());
	simcuda_records_clear();

	CHECK(cuMemcpyHtoD(var, &seed, sizeof(seed)));
	s = seed;
	for (int i = 0; i < ROUNDS; i++) {
		unsigned v = (unsigned)i + 1, us = 3000, rus = 1000;
		CUdeviceptr o = out + (CUdeviceptr)k * sizeof(unsigned);
		void *aa[] = { &v, &us }, *at[] = { &touch[i], &us };
		void *ar[] = { &o, &rus };

		CHECK(cuLaunchKernel(vadd, 1, 1, 1, 1, 1, 1, 0, NULL, aa, NULL));
		s = s * 3 + v;
		CHECK(cuLaunchKernel(vtouch, 1, 1, 1, 1, 1, 1, 0, NULL, at,
				     NULL));
		if (i % 4 == 3) {
			CHECK(cuLaunchKernel(vread, 1, 1, 1, 1, 1, 1, 0, NULL,
					     ar, NULL));
			want[k++] = s;
		}
	}
	/*
	 * cudaMemcpyToSymbol between kernels, read back; then a reset by a
	 * kernel without parameters, and one more round.
	 */
	CHECK(cuMemcpyHtoD(var, &again, sizeof(again)));
	{
		unsigned v = 5, us = 3000;
		CUdeviceptr o = out + (CUdeviceptr)k * sizeof(unsigned);
		CUdeviceptr o2 = o + sizeof(unsigned);
		void *aa[] = { &v, &us }, *ar[] = { &o, &us };
		void *ar2[] = { &o2, &us };

		CHECK(cuLaunchKernel(vadd, 1, 1, 1, 1, 1, 1, 0, NULL, aa, NULL));
		CHECK(cuLaunchKernel(vread, 1, 1, 1, 1, 1, 1, 0, NULL, ar,
				     NULL));
		want[k++] = again * 3 + v;
		CHECK(cuLaunchKernel(vreset, 1, 1, 1, 1, 1, 1, 0, NULL, NULL,
				     NULL));
		CHECK(cuLaunchKernel(vadd, 1, 1, 1, 1, 1, 1, 0, NULL, aa, NULL));
		CHECK(cuLaunchKernel(vread, 1, 1, 1, 1, 1, 1, 0, NULL, ar2,
				     NULL));
		want[k++] = v;
	}
	CHECK(cuMemcpyDtoH(got, out, sizeof(got)));
	CHECK(cuCtxSynchronize());
	printf("state");
	for (int i = 0; i < k; i++) {
		printf(" %u", got[i]);
		ok &= got[i] == want[i];
	}
	printf("\n");
	if (ok)
		printf("order ok\n");
	count_pairs(&pairs, &beside);
	printf("state pairs %d\nbeside %d\n", pairs, beside);
	if (simcuda_check(msg, sizeof(msg)) != 0) {
		fprintf(stderr, "globals: %s\n", msg);
		return 1;
	}
	printf("conflicts none\n");
	return ok ? 0 : 1;
}
