/*
 * ctx-stack.c - the context's stack reservation under a memory mode
 * (t7b-memory-ctx-stack.sh; src/preload/ctx-stack.h).  Run with
 * SIMCUDA_STACK_THREADS set, so simcuda counts the reservation as used.
 *
 *   ctx-stack ptx    the primary context, then PTX without a call, then
 *                    PTX with one; after each: "STEP free=MIB limit=BYTES"
 *   ctx-stack file   the primary context, then a module from a file
 *   ctx-stack own    the program sets the stack limit (2048) itself, then
 *                    loads PTX with a call
 *   ctx-stack two    two contexts of its own (cuCtxCreate), then PTX with
 *                    a call: both are put back
 * The PTX names simcuda's basic.so on its first line ("// simcuda-module:"),
 * which runs its kernels; kmux reads the PTX.
 */
#include <stdio.h>
#include <string.h>

#include "e2e-common.h"

static const char ptx_plain[] =
	"// simcuda-module: %s\n"
	".version 8.0\n.target sm_90\n.address_size 64\n\n"
	".visible .entry scale(\n\t.param .u64 p0,\n\t.param .u32 p1,\n"
	"\t.param .u32 p2\n)\n{\n\t.reg .b64 %%rd<3>;\n"
	"\tld.param.u64 %%rd1, [p0];\n\tret;\n}\n";

static const char ptx_call[] =
	"// simcuda-module: %s\n"
	".version 8.0\n.target sm_90\n.address_size 64\n\n"
	".func (.param .b32 r) depth(.param .b32 n)\n{\n"
	"\t.reg .b32 %%r<4>;\n\tld.param.b32 %%r1, [n];\n"
	"\tst.param.b32 [r], %%r1;\n\tret;\n}\n\n"
	".visible .entry scale(\n\t.param .u64 p0,\n\t.param .u32 p1,\n"
	"\t.param .u32 p2\n)\n{\n\t.reg .b32 %%r<3>;\n"
	"\t{\n\t.param .b32 a0;\n\t.param .b32 r0;\n"
	"\tst.param.b32 [a0], 3;\n"
	"\t@%%p1 call.uni (r0), depth, (a0);\n"
	"\t}\n\tret;\n}\n";

static void show(const char *step)
{
	size_t fr, tot, lim = 0;

	CHECK(cuMemGetInfo(&fr, &tot));
	CHECK(cuCtxGetLimit(&lim, CU_LIMIT_STACK_SIZE));
	printf("%s free=%zu limit=%zu\n", step, fr >> 20, lim);
}

static void load_ptx(const char *fmt)
{
	char text[2048];
	CUmodule m;

	snprintf(text, sizeof(text), fmt, e2e_module_path());
	CHECK(cuModuleLoadData(&m, text));
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "ptx";
	CUcontext ctx, a, b;
	CUmodule m;

	CHECK(cuInit(0));
	if (!strcmp(mode, "two")) {
		CHECK(cuCtxCreate(&a, NULL, 0, 0));
		show("a");
		CHECK(cuCtxCreate(&b, NULL, 0, 0));
		show("ab");
		load_ptx(ptx_call);
		show("call");
		CHECK(cuCtxDestroy(b));
		CHECK(cuCtxDestroy(a));
		return 0;
	}
	CHECK(cuDevicePrimaryCtxRetain(&ctx, 0));
	CHECK(cuCtxSetCurrent(ctx));
	show("ctx");
	if (!strcmp(mode, "ptx")) {
		load_ptx(ptx_plain);
		show("plain");
		load_ptx(ptx_call);
		show("call");
	} else if (!strcmp(mode, "file")) {
		CHECK(cuModuleLoad(&m, e2e_module_path()));
		show("file");
	} else if (!strcmp(mode, "own")) {
		CHECK(cuCtxSetLimit(CU_LIMIT_STACK_SIZE, 2048));
		show("own");
		load_ptx(ptx_call);
		show("call");
	} else {
		fprintf(stderr, "ctx-stack: unknown mode %s\n", mode);
		return 2;
	}
	CHECK(cuDevicePrimaryCtxRelease(0));
	return 0;
}
