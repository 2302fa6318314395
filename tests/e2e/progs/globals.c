/*
 * globals.c - default-stream kernels that share state through a module-
 * scope variable (`__device__ unsigned state` in CUDA C), not through any
 * parameter, with independent kernels between them (t5j-streams-globals.sh).
 * simcuda runs vars.so's kernels (tests/simcuda/kernels/vars.c).
 *
 *   globals ptx|noptx
 *     ptx	the module loaded as PTX text that declares `state` and
 *		names it in vadd and vread (what nvcc emits): kmux reads it
 *     noptx	the same module loaded by path (simcuda's stand-in for an
 *		image with SASS only): kmux cannot see the variable
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
	".visible .entry vtouch(\n"
	"\t.param .u64 vtouch_param_0,\n\t.param .u32 vtouch_param_1\n)\n{\n"
	"\t.reg .b32 %r<4>;\n\t.reg .b64 %rd<3>;\n\n"
	"\tld.param.u64 %rd1, [vtouch_param_0];\n"
	"\tcvta.to.global.u64 %rd2, %rd1;\n"
	"\tld.global.u32 %r1, [%rd2];\n"
	"\tmad.lo.s32 %r2, %r1, 5, 1;\n"
	"\tst.global.u32 [%rd2], %r2;\n\tret;\n}\n\n"
	".visible .entry vreset()\n{\n\t.reg .b32 %r<2>;\n\n"
	"\tmov.u32 %r1, 0;\n\tst.global.u32 [state], %r1;\n\tret;\n}\n";

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

	if (strcmp(mode, "ptx") && strcmp(mode, "noptx")) {
		fprintf(stderr, "usage: globals ptx|noptx\n");
		return 2;
	}
	slash = strrchr(mod, '/');
	snprintf(so, sizeof(so), "%.*s/vars.so", slash ? (int)(slash - mod) : 1,
		 slash ? mod : ".");
	snprintf(image, sizeof(image), "// simcuda-module: %s\n%s", so, ptx);
	CHECK(cuInit(0));
	CHECK(cuDeviceGet(&dev, 0));
	CHECK(cuCtxCreate(&ctx, NULL, 0, dev));
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
