/*
 * ptx-extents.c - default-stream kernels that each update one 4-byte slot
 * of one shared allocation (out = &arr[k]), loaded as PTX text that
 * simcuda runs as dag.so's `slot` (t5b-ptx-extents.sh).
 *
 *   ptx-extents MODE
 *     slots	four launches, four distinct slots: the PTX reaches exactly
 *		[out, out + 4), so they may run side by side
 *     same	slots 0, 1, 0, 1: the two launches on one slot stay ordered,
 *		those on different slots may overlap
 *     indexed	four distinct slots, but the PTX indexes the pointer with
 *		the thread id: no exact extent; one thread per launch, so
 *		the range for that geometry is [out, out + 4) again
 *     wide	as indexed with four threads: each launch reaches 16
 *		bytes, so launches on neighbouring slots (8 bytes apart)
 *		overlap and stay ordered
 *
 * Prints "overlapping pairs K" (slot kernels that ran at the same time),
 * "sum S" (a hash of the slots: their order-dependent updates) and
 * "conflicts none", or fails when simcuda's overlap check finds two
 * overlapping operations that touch a common byte with a write.
 */
#include <stdio.h>
#include <string.h>

#include "e2e-common.h"
#include "sim-overlap.h"
#include "simcuda.h"

#define NLAUNCH 4
#define NSLOT 16

static const char ptx_head[] =
	".version 8.0\n.target sm_90\n.address_size 64\n\n"
	"\t// .globl slot\n"
	".visible .entry slot(\n"
	"\t.param .u64 slot_param_0,\n"
	"\t.param .u32 slot_param_1,\n"
	"\t.param .u32 slot_param_2\n"
	")\n"
	"{\n"
	"\t.reg .b32 %r<8>;\n\t.reg .b64 %rd<8>;\n\n"
	"\tld.param.u64 %rd1, [slot_param_0];\n"
	"\tld.param.u32 %r1, [slot_param_1];\n"
	"\tcvta.to.global.u64 %rd2, %rd1;\n";

/* *out = v: one store at offset 0 of the parameter's value. */
static const char ptx_exact[] = "\tst.global.u32 [%rd2], %r1;\n";

/* out[tid.x] = v: index arithmetic, a range by the block size. */
static const char ptx_indexed[] =
	"\tmov.u32 %r2, %tid.x;\n"
	"\tmul.wide.u32 %rd3, %r2, 4;\n"
	"\tadd.s64 %rd4, %rd2, %rd3;\n"
	"\tst.global.u32 [%rd4], %r1;\n";

static const char ptx_tail[] = "\tret;\n\n}\n";

int main(int argc, char **argv)
{
	const char *mod = e2e_module_path(), *slash, *body;
	const char *mode = argc == 2 ? argv[1] : "";
	static char image[8192], so[4096];
	static const int same[NLAUNCH] = { 0, 1, 0, 1 };
	unsigned host[NSLOT] = { 0 }, sum = 0;
	CUdeviceptr arr;
	CUcontext ctx;
	CUdevice dev;
	CUmodule m;
	CUfunction f;
	char msg[512];
	int pairs;
	unsigned threads = !strcmp(mode, "wide") ? 4 : 1;

	if (!strcmp(mode, "slots") || !strcmp(mode, "same"))
		body = ptx_exact;
	else if (!strcmp(mode, "indexed") || !strcmp(mode, "wide"))
		body = ptx_indexed;
	else {
		fprintf(stderr, "usage: ptx-extents slots|same|indexed|wide\n");
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
	for (int i = 0; i < NSLOT; i++)
		host[i] = (unsigned)i * 2654435761u;
	CHECK(cuMemAlloc(&arr, sizeof(host)));
	CHECK(cuMemcpyHtoD(arr, host, sizeof(host)));
	CHECK(cuModuleLoadData(&m, image));
	CHECK(cuModuleGetFunction(&f, m, "slot"));
	/* Twice over, so that each slot's updates have an order to keep. */
	for (int r = 0; r < 2; r++) {
		for (int k = 0; k < NLAUNCH; k++) {
			int s = !strcmp(mode, "same") ? same[k] : 2 * k;
			CUdeviceptr out = arr + (CUdeviceptr)s * 4;
			unsigned v = (unsigned)(r * NLAUNCH + k + 1) * 7919u;
			unsigned us = 20000;
			void *a[] = { &out, &v, &us };

			CHECK(cuLaunchKernel(f, 1, 1, 1, threads, 1, 1, 0,
					     NULL, a, NULL));
		}
	}
	CHECK(cuMemcpyDtoH(host, arr, sizeof(host)));
	for (int i = 0; i < NSLOT; i++)
		sum = sum * 31 + host[i];
	CHECK(cuCtxSynchronize());
	pairs = sim_overlapping_pairs("slot");
	printf("overlapping pairs %d\n", pairs);
	printf("sum %08x\n", sum);
	if (simcuda_check(msg, sizeof(msg)) != 0) {
		fprintf(stderr, "ptx-extents: %s\n", msg);
		return 1;
	}
	printf("conflicts none\n");
	return 0;
}
