/*
 * ptx-readonly.c - four default-stream kernels that read one buffer and
 * write one each, loaded as PTX text (cuModuleLoadData) that simcuda runs
 * as dag.so's `mix` (t5a-ptx-readonly.sh).
 *
 *   ptx-readonly MODE	MODE is the PTX variant of mix(dst, a, b, n, us):
 *     ro	reads a and b, stores to dst: a and b provably read-only
 *     write	also stores through b
 *     escape	also stores the pointer a into memory
 *     unknown	an instruction the analysis does not know touches a
 *   or one of these, with the ro PTX (see the functions below):
 *     same-name	the same kernel also from images kmux cannot read
 *     reload	load, unload, an image without PTX, the PTX again
 *     library	cuLibraryLoadData (CUkernel and CUfunction) beside a
 *		cuLibraryLoadFromFile of the same kernel
 *
 * Prints "overlapping pairs K" (mix kernels that ran at the same time;
 * "pairs LABEL K" per phase in the multi-image modes), "sum S" (a hash of
 * the outputs) and "conflicts none", or fails when simcuda's overlap check
 * finds conflicting operations overlapping.
 */
#include <stdio.h>
#include <string.h>

#include "e2e-common.h"
#include "sim-overlap.h"
#include "simcuda.h"

#define NW 256
#define NOUT 4

static const char ptx_head[] =
	".version 8.0\n.target sm_90\n.address_size 64\n\n"
	"\t// .globl mix\n"
	".visible .entry mix(\n"
	"\t.param .u64 mix_param_0,\n"
	"\t.param .u64 mix_param_1,\n"
	"\t.param .u64 mix_param_2,\n"
	"\t.param .u32 mix_param_3,\n"
	"\t.param .u32 mix_param_4\n"
	")\n"
	"{\n"
	"\t.reg .pred %p<2>;\n\t.reg .b32 %r<8>;\n\t.reg .b64 %rd<12>;\n\n"
	"\tld.param.u64 %rd1, [mix_param_0];\n"
	"\tld.param.u64 %rd2, [mix_param_1];\n"
	"\tld.param.u64 %rd3, [mix_param_2];\n"
	"\tld.param.u32 %r1, [mix_param_3];\n"
	"\tmov.u32 %r2, %tid.x;\n"
	"\tsetp.ge.s32 %p1, %r2, %r1;\n"
	"\t@%p1 bra $L__BB0_2;\n"
	"\tcvta.to.global.u64 %rd4, %rd1;\n"
	"\tcvta.to.global.u64 %rd5, %rd2;\n"
	"\tcvta.to.global.u64 %rd6, %rd3;\n"
	"\tmul.wide.s32 %rd7, %r2, 4;\n"
	"\tadd.s64 %rd8, %rd5, %rd7;\n"
	"\tld.global.u32 %r3, [%rd8];\n"
	"\tadd.s64 %rd9, %rd6, %rd7;\n"
	"\tld.global.nc.u32 %r4, [%rd9];\n"
	"\tshf.l.wrap.b32 %r5, %r3, %r3, 5;\n"
	"\tmul.lo.s32 %r6, %r4, -1640531535;\n"
	"\txor.b32 %r7, %r5, %r6;\n"
	"\tadd.s64 %rd10, %rd4, %rd7;\n"
	"\tst.global.u32 [%rd10], %r7;\n";

static const char ptx_tail[] = "$L__BB0_2:\n\tret;\n\n}\n";

static const char *variant(const char *mode)
{
	if (!strcmp(mode, "ro"))
		return "";
	if (!strcmp(mode, "write"))
		return "\tst.global.u32 [%rd9], %r7;\n";
	if (!strcmp(mode, "escape"))
		return "\tst.global.u64 [%rd10], %rd5;\n";
	if (!strcmp(mode, "unknown"))
		return "\tzzfrob.b64 %rd11, %rd8;\n";
	return NULL;
}

static CUdeviceptr in, out[NOUT];
static unsigned sum;
static int failed;

/*
 * Four launches of f reading `in` and writing out[k], their outputs hashed
 * into sum.  Returns how many pairs of them overlapped, after simcuda's
 * overlap check of this phase (then its records are dropped).
 */
static int phase(CUfunction f)
{
	unsigned host[NW];
	char msg[512];
	int pairs;

	for (int k = 0; k < NOUT; k++) {
		int n = NW;
		unsigned us = 20000;
		void *a[] = { &out[k], &in, &in, &n, &us };

		CHECK(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, NULL, a, NULL));
	}
	for (int k = 0; k < NOUT; k++) {
		CHECK(cuMemcpyDtoH(host, out[k], sizeof(host)));
		for (int i = 0; i < NW; i++)
			sum = sum * 31 + host[i] + (unsigned)k;
	}
	CHECK(cuCtxSynchronize());
	pairs = sim_overlapping_pairs("mix");
	if (simcuda_check(msg, sizeof(msg)) != 0) {
		fprintf(stderr, "ptx-readonly: %s\n", msg);
		failed = 1;
	}
	simcuda_records_clear();
	return pairs;
}

/*
 * Two images define mix: the PTX one kmux reads, and the same module
 * loaded by path (no PTX: simcuda's stand-in for SASS only) and from a
 * file.  Only the first may run its readers side by side.
 */
static void same_name(const char *image, const char *so)
{
	CUmodule ma, mb, mc;
	CUfunction fa, fb, fc;

	CHECK(cuModuleLoadData(&ma, image));
	CHECK(cuModuleLoadData(&mb, so));
	CHECK(cuModuleLoad(&mc, so));
	CHECK(cuModuleGetFunction(&fa, ma, "mix"));
	CHECK(cuModuleGetFunction(&fb, mb, "mix"));
	CHECK(cuModuleGetFunction(&fc, mc, "mix"));
	/* The unreadable ones first, then in the other order. */
	printf("pairs noptx %d\n", phase(fb));
	printf("pairs file %d\n", phase(fc));
	printf("pairs ptx %d\n", phase(fa));
	printf("pairs noptx-after %d\n", phase(fb));
	printf("pairs file-after %d\n", phase(fc));
}

/*
 * Load, launch, unload; an image without PTX (possibly under the same
 * handles), then the PTX image again.
 */
static void reload(const char *image, const char *so)
{
	CUmodule m;
	CUfunction f, g;

	CHECK(cuModuleLoadData(&m, image));
	CHECK(cuModuleGetFunction(&f, m, "mix"));
	printf("pairs first %d\n", phase(f));
	CHECK(cuModuleUnload(m));
	CHECK(cuModuleLoadData(&m, so));
	CHECK(cuModuleGetFunction(&g, m, "mix"));
	printf("handle reused %d\n", f == g);
	printf("pairs noptx %d\n", phase(g));
	CHECK(cuModuleUnload(m));
	CHECK(cuModuleLoadData(&m, image));
	CHECK(cuModuleGetFunction(&f, m, "mix"));
	printf("pairs again %d\n", phase(f));
	CHECK(cuModuleUnload(m));
}

/* A library from PTX (kernel and function handles) beside one from a file. */
static void library(const char *image, const char *so)
{
	CUlibrary la, lb;
	CUkernel ka, kb;
	CUfunction fa;

	CHECK(cuLibraryLoadData(&la, image, NULL, NULL, 0, NULL, NULL, 0));
	CHECK(cuLibraryLoadFromFile(&lb, so, NULL, NULL, 0, NULL, NULL, 0));
	CHECK(cuLibraryGetKernel(&ka, la, "mix"));
	CHECK(cuLibraryGetKernel(&kb, lb, "mix"));
	CHECK(cuKernelGetFunction(&fa, ka));
	printf("pairs file %d\n", phase((CUfunction)kb));
	printf("pairs kernel %d\n", phase((CUfunction)ka));
	printf("pairs function %d\n", phase(fa));
	CHECK(cuLibraryUnload(la));
	CHECK(cuLibraryUnload(lb));
}

int main(int argc, char **argv)
{
	const char *mod = e2e_module_path(), *slash, *body;
	const char *mode = argc == 2 ? argv[1] : "";
	static char image[8192], so[4096];
	unsigned host[NW];
	CUcontext ctx;
	CUdevice dev;
	CUmodule m;
	CUfunction f;
	int multi = !strcmp(mode, "same-name") || !strcmp(mode, "reload") ||
		    !strcmp(mode, "library");

	if (argc != 2 || !(body = variant(multi ? "ro" : mode))) {
		fprintf(stderr, "usage: ptx-readonly ro|write|escape|unknown|"
			"same-name|reload|library\n");
		return 2;
	}
	slash = strrchr(mod, '/');
	snprintf(so, sizeof(so), "%.*s/dag.so", slash ? (int)(slash - mod) : 1,
		 slash ? mod : ".");
	snprintf(image, sizeof(image), "// simcuda-module: %s\n%s%s%s", so,
		 ptx_head, body, ptx_tail);
	CHECK(cuInit(0));
	CHECK(cuDeviceGet(&dev, 0));
	CHECK(cuCtxCreate(&ctx, NULL, 0, dev));
	for (int i = 0; i < NW; i++)
		host[i] = (unsigned)i * 2654435761u;
	CHECK(cuMemAlloc(&in, sizeof(host)));
	CHECK(cuMemcpyHtoD(in, host, sizeof(host)));
	for (int k = 0; k < NOUT; k++)
		CHECK(cuMemAlloc(&out[k], sizeof(host)));
	if (!strcmp(mode, "same-name")) {
		same_name(image, so);
	} else if (!strcmp(mode, "reload")) {
		reload(image, so);
	} else if (!strcmp(mode, "library")) {
		library(image, so);
	} else {
		CHECK(cuModuleLoadData(&m, image));
		CHECK(cuModuleGetFunction(&f, m, "mix"));
		printf("overlapping pairs %d\n", phase(f));
	}
	printf("sum %08x\n", sum);
	if (failed)
		return 1;
	printf("conflicts none\n");
	return 0;
}
