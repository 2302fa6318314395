/*
 * selftest.c - simcuda's self-test (build/simcuda/selftest, run by
 * `make simcuda-selftest` and by tests/e2e/run.sh).  Exits 0 when every
 * check passed, 1 with the failed checks on stderr otherwise.
 *
 * It covers: allocation, copies, sets and launches (kernelParams, `extra`,
 * by-value structs, CUkernel handles) with their results; the legacy
 * default stream's implicit synchronization against blocking, non-blocking
 * and per-thread streams, read from the records' timestamps; events and
 * elapsed time; cuGetProcAddress variant selection against dlsym; VMM
 * faults (unmapped, no access, read-only, unmapped while in use); the
 * overlap checker in-process and as simcuda-check on the logs of a racy and
 * a correct child process; graph capture and replay.
 *
 * libcuda.so.1, kernels/basic.so and simcuda-check are found next to the
 * executable.  The environment is reset first so an outer SIMCUDA_LOG never
 * receives the deliberate races and faults below.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "simcuda.h"

int simcuda_procaddr_row(size_t i, const char **name, const char **sym,
			 int *version, int *pt, void **fn);

#define MS 1000u	/* microseconds in a millisecond */
#define PT CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM

/* Room left in the path buffers for the names appended to dir. */
static char dir[PATH_MAX - 64];
static char module_path[PATH_MAX];
static int failures, checks;

/* Report a failed check; returns nonzero when cond is false. */
static int expect_at(const char *file, int line, int cond, const char *what,
		     const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));

static int expect_at(const char *file, int line, int cond, const char *what,
		     const char *fmt, ...)
{
	va_list ap;

	checks++;
	if (cond)
		return 0;
	fprintf(stderr, "selftest: %s:%d: check failed: %s", file, line, what);
	if (fmt != NULL && fmt[0] != '\0') {
		fprintf(stderr, ": ");
		va_start(ap, fmt);
		vfprintf(stderr, fmt, ap);
		va_end(ap);
	}
	fputc('\n', stderr);
	failures++;
	return 1;
}

#define expect(c, ...) expect_at(__FILE__, __LINE__, !!(c), #c, __VA_ARGS__)

static const char *errname(CUresult r)
{
	const char *s = NULL;

	cuGetErrorName(r, &s);
	return s ? s : "?";
}

/* A driver call that must succeed. */
#define ok(call) expect_at(__FILE__, __LINE__, (call) == CUDA_SUCCESS, \
			   #call, "%s", "")
/* A driver call that must fail with err. */
static int fails_with_at(const char *file, int line, CUresult got,
			 CUresult want, const char *what)
{
	return expect_at(file, line, got == want, what, "got %s, want %s",
			 errname(got), errname(want));
}
#define fails_with(call, want) \
	fails_with_at(__FILE__, __LINE__, (call), (want), #call)

/* ---- helpers ------------------------------------------------------------- */

static CUmodule module;
static CUfunction f_vec_add, f_scale, f_fill, f_inc, f_sum, f_copy_struct,
		  f_sleep, f_touch, f_fill_slow, f_meet;

static int load_kernels(void)
{
	if (ok(cuModuleLoad(&module, module_path)))
		return -1;
	if (ok(cuModuleGetFunction(&f_vec_add, module, "vec_add")) ||
	    ok(cuModuleGetFunction(&f_scale, module, "scale")) ||
	    ok(cuModuleGetFunction(&f_fill, module, "fill_u32")) ||
	    ok(cuModuleGetFunction(&f_inc, module, "inc_u32")) ||
	    ok(cuModuleGetFunction(&f_sum, module, "sum_reduce")) ||
	    ok(cuModuleGetFunction(&f_copy_struct, module, "copy_struct")) ||
	    ok(cuModuleGetFunction(&f_sleep, module, "sleep_us")) ||
	    ok(cuModuleGetFunction(&f_touch, module, "touch")) ||
	    ok(cuModuleGetFunction(&f_fill_slow, module, "fill_slow")) ||
	    ok(cuModuleGetFunction(&f_meet, module, "rendezvous")))
		return -1;
	return 0;
}

static CUresult launch(CUfunction f, CUstream s, void **args)
{
	return cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, s, args, NULL);
}

static CUresult sleep_on(CUstream s, unsigned us)
{
	void *args[] = { &us };

	return launch(f_sleep, s, args);
}

static CUresult touch_on(CUstream s, CUdeviceptr p, size_t bytes, int rw,
			 unsigned us)
{
	void *args[] = { &p, &bytes, &rw, &us };

	return launch(f_touch, s, args);
}

/* The only record of stream sid named name (NULL: any), or -1. */
static int rec_named(uint64_t sid, const char *name,
		     struct simcuda_op_info *out)
{
	struct simcuda_op_info r;
	size_t i;
	int n = 0;

	for (i = 0; simcuda_op_get(i, &r) == 0; i++) {
		if (r.stream == sid &&
		    (name == NULL || strcmp(r.name, name) == 0)) {
			*out = r;
			n++;
		}
	}
	return n == 1 ? 0 : -1;
}

/*
 * The rendezvous kernel: touches [p, p+bytes) and then meets the launch
 * with the other `me` through the host array flags[3]; flags[2] is set
 * when they did not meet within 5 s (i.e. they were not concurrent).
 */
static CUresult meet_on(CUstream s, CUdeviceptr p, size_t bytes, int rw,
			int *flags, int me)
{
	unsigned long long f = (unsigned long long)(uintptr_t)flags;
	void *args[] = { &p, &bytes, &rw, &f, &me };

	return launch(f_meet, s, args);
}

static int met(int *flags)
{
	return __atomic_load_n(&flags[2], __ATOMIC_SEQ_CST) == 0;
}

/* The only record of stream id sid; -1 unless exactly one. */
static int rec_of(uint64_t sid, struct simcuda_op_info *out)
{
	return rec_named(sid, NULL, out);
}

static uint64_t sid(CUstream s)
{
	unsigned long long id = 0;

	cuStreamGetId(s, &id);
	return id;
}

/* ---- basic correctness --------------------------------------------------- */

static int test_device(void)
{
	char name[64];
	int n = 0, v = 0, major = 0, minor = 0;
	size_t total = 0;
	const char *s;

	if (ok(cuDeviceGetCount(&n)) || expect(n == 2, "count %d", n))
		return -1;
	ok(cuDriverGetVersion(&v));
	expect(v == 13000, "version %d", v);
	ok(cuDeviceGetName(name, sizeof(name), 1));
	expect(strcmp(name, "simcuda device 1") == 0, "name %s", name);
	ok(cuDeviceGetAttribute(
		&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, 0));
	ok(cuDeviceGetAttribute(
		&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, 0));
	expect(major == 9 && minor == 0, "cc %d.%d", major, minor);
	ok(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_WARP_SIZE, 0));
	expect(v == 32, "warp %d", v);
	ok(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING, 0));
	expect(v == 1, "uva %d", v);
	ok(cuDeviceTotalMem(&total, 0));
	expect(total == (1u << 30), "total %zu", total);
	fails_with(cuDeviceGetName(name, sizeof(name), 2),
		   CUDA_ERROR_INVALID_DEVICE);
	ok(cuGetErrorName(CUDA_ERROR_ILLEGAL_ADDRESS, &s));
	expect(strcmp(s, "CUDA_ERROR_ILLEGAL_ADDRESS") == 0, "%s", s);
	return 0;
}

/* A second device: its own address window and memory budget. */
static int test_second_device(CUcontext primary0)
{
	CUcontext c1;
	CUdeviceptr p0, p1;
	CUdevice d = -1;
	size_t f0, f1, t;

	ok(cuMemAlloc(&p0, 1 << 20));
	ok(cuMemGetInfo(&f0, &t));
	if (ok(cuDevicePrimaryCtxRetain(&c1, 1)) || ok(cuCtxSetCurrent(c1)))
		return -1;
	ok(cuCtxGetDevice(&d));
	expect(d == 1, "device %d", d);
	ok(cuMemGetInfo(&f1, &t));
	expect(f1 == t && f0 < t, "free %zu / %zu / %zu", f0, f1, t);
	ok(cuMemAlloc(&p1, 1 << 20));
	expect(p1 >> 40 != p0 >> 40, "same window 0x%llx 0x%llx",
	       (unsigned long long)p0, (unsigned long long)p1);
	ok(cuMemFree(p1));
	ok(cuCtxSetCurrent(primary0));
	ok(cuDevicePrimaryCtxRelease(1));
	ok(cuMemFree(p0));
	return 0;
}

static int test_memory_and_launch(void)
{
	enum { N = 1000 };
	static float a[N], b[N], c[N];
	CUdeviceptr da, db, dc, big, dsum;
	size_t freeb, total, off, size;
	unsigned char buf[64];
	unsigned *hp, hv[4];
	CUdeviceptr dh;
	CUmemorytype mt;
	float sum = 0, s = 2.0f;
	int n = N, i;
	void *args[] = { &da, &db, &dc, &n };

	for (i = 0; i < N; i++) {
		a[i] = (float)i;
		b[i] = 2.0f * (float)i;
	}
	if (ok(cuMemAlloc(&da, N * 4)) || ok(cuMemAlloc(&db, N * 4)) ||
	    ok(cuMemAlloc(&dc, N * 4)))
		return -1;
	expect(da % 256 == 0 && da >= 0x600000000000ULL, "address 0x%llx",
	       (unsigned long long)da);
	ok(cuMemGetInfo(&freeb, &total));
	expect(total - freeb >= 3 * N * 4, "free %zu total %zu", freeb, total);
	fails_with(cuMemAlloc(&big, (size_t)2 << 30), CUDA_ERROR_OUT_OF_MEMORY);
	ok(cuMemcpyHtoD(da, a, sizeof(a)));
	ok(cuMemcpyHtoD(db, b, sizeof(b)));
	ok(launch(f_vec_add, NULL, args));
	ok(cuMemcpyDtoH(c, dc, sizeof(c)));
	for (i = 0; i < N; i++)
		if (expect(c[i] == 3.0f * (float)i, "c[%d] = %f", i, c[i]))
			break;

	/* `extra`: the caller packs by cuFuncGetParamInfo's layout. */
	memset(buf, 0, sizeof(buf));
	ok(cuFuncGetParamInfo(f_scale, 0, &off, &size));
	memcpy(buf + off, &dc, size);
	ok(cuFuncGetParamInfo(f_scale, 1, &off, &size));
	memcpy(buf + off, &s, size);
	ok(cuFuncGetParamInfo(f_scale, 2, &off, &size));
	memcpy(buf + off, &n, size);
	expect(off == 12 && size == 4, "offset %zu size %zu", off, size);
	size = off + size;
	{
		void *extra[] = { CU_LAUNCH_PARAM_BUFFER_POINTER, buf,
				  CU_LAUNCH_PARAM_BUFFER_SIZE, &size,
				  CU_LAUNCH_PARAM_END };

		ok(cuLaunchKernel(f_scale, 1, 1, 1, 1, 1, 1, 0, NULL, NULL,
				  extra));
		fails_with(cuLaunchKernel(f_scale, 1, 1, 1, 1, 1, 1, 0, NULL,
					  args, extra),
			   CUDA_ERROR_INVALID_VALUE);
	}
	ok(cuMemcpyDtoH(c, dc, sizeof(c)));
	expect(c[10] == 60.0f, "scaled %f", c[10]);

	/* Pointers inside a by-value struct. */
	{
		struct { CUdeviceptr src, dst; int n; } cs = { dc, da, N };
		void *sargs[] = { &cs };

		ok(cuFuncGetParamInfo(f_copy_struct, 0, &off, &size));
		expect(size == sizeof(cs), "struct size %zu", size);
		ok(launch(f_copy_struct, NULL, sargs));
		ok(cuMemcpyDtoH(a, da, sizeof(a)));
		expect(a[7] == c[7], "copied %f %f", a[7], c[7]);
	}

	/* sum_reduce, memsets, cuMemcpy */
	ok(cuMemAlloc(&dsum, 4));
	{
		void *rargs[] = { &db, &dsum, &n };

		ok(launch(f_sum, NULL, rargs));
		ok(cuMemcpyDtoH(&sum, dsum, 4));
		expect(sum == (float)(N - 1) * N, "sum %f", sum);
	}
	ok(cuMemsetD32(dc, 0xdeadbeef, N));
	ok(cuMemsetD16(dc, 0x1234, 2));
	ok(cuMemsetD8(dc, 0xab, 1));
	ok(cuMemcpy((CUdeviceptr)(uintptr_t)hv, dc, sizeof(hv)));
	expect(hv[0] == 0x123412abu, "%x", hv[0]);
	expect(hv[2] == 0xdeadbeefu, "%x", hv[2]);

	/* Freed memory is gone: the address is never handed out again. */
	ok(cuMemFree(dsum));
	fails_with(cuMemcpyHtoD(dsum, &sum, 4), CUDA_ERROR_INVALID_VALUE);
	ok(cuMemGetAddressRange(&big, &size, db + 8));
	expect(big == db && size == N * 4, "range 0x%llx %zu",
	       (unsigned long long)big, size);

	/* Pinned host memory, used by a kernel through its UVA address. */
	ok(cuMemAllocHost((void **)&hp, 4 * sizeof(*hp)));
	ok(cuMemHostGetDevicePointer(&dh, hp, 0));
	expect(dh == (CUdeviceptr)(uintptr_t)hp, "uva");
	{
		unsigned v = 77;
		int four = 4;
		void *fargs[] = { &dh, &v, &four };

		ok(launch(f_fill, NULL, fargs));
		ok(cuCtxSynchronize());
		expect(hp[3] == 77, "pinned %u", hp[3]);
	}
	ok(cuPointerGetAttribute(&mt, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, dh));
	expect(mt == CU_MEMORYTYPE_HOST, "type %d", mt);
	ok(cuPointerGetAttribute(&mt, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, da));
	expect(mt == CU_MEMORYTYPE_DEVICE, "type %d", mt);
	ok(cuMemFreeHost(hp));
	ok(cuMemFree(da));
	ok(cuMemFree(db));
	ok(cuMemFree(dc));
	return 0;
}

/* Libraries and CUkernel handles, module images given as paths. */
static int test_library(void)
{
	CUlibrary lib;
	CUkernel k;
	CUfunction f;
	CUmodule m;
	CUdeviceptr p;
	const char *name;
	size_t off, size;
	unsigned v = 5, out[8];
	int n = 8;
	void *args[] = { &p, &v, &n };

	if (ok(cuLibraryLoadFromFile(&lib, module_path, NULL, NULL, 0, NULL,
				     NULL, 0)))
		return -1;
	ok(cuLibraryGetKernel(&k, lib, "fill_u32"));
	ok(cuKernelGetName(&name, k));
	expect(strcmp(name, "fill_u32") == 0, "%s", name);
	ok(cuKernelGetParamInfo(k, 2, &off, &size));
	expect(off == 12 && size == 4, "%zu %zu", off, size);
	fails_with(cuKernelGetParamInfo(k, 3, &off, &size),
		   CUDA_ERROR_INVALID_VALUE);
	ok(cuKernelGetFunction(&f, k));
	ok(cuMemAlloc(&p, sizeof(out)));
	/* A CUkernel cast to CUfunction launches, as on the driver. */
	ok(launch((CUfunction)k, NULL, args));
	ok(cuMemcpyDtoH(out, p, sizeof(out)));
	expect(out[7] == 5, "%u", out[7]);
	ok(cuFuncGetName(&name, (CUfunction)k));
	ok(cuMemFree(p));
	ok(cuLibraryUnload(lib));
	fails_with(cuLibraryGetKernel(&k, lib, "fill_u32"),
		   CUDA_ERROR_INVALID_HANDLE);

	ok(cuModuleLoadData(&m, module_path));
	ok(cuModuleGetFunction(&f, m, "vec_add"));
	fails_with(cuModuleGetFunction(&f, m, "nope"), CUDA_ERROR_NOT_FOUND);
	ok(cuModuleUnload(m));
	{
		static const unsigned char fatbin[] = { 0x50, 0xed, 0x55, 0xba,
							0, 0, 0, 0 };

		fails_with(cuModuleLoadData(&m, fatbin),
			   CUDA_ERROR_INVALID_IMAGE);
	}
	return 0;
}

static void CUDA_CB host_fn(void *data)
{
	(*(int *)data)++;
}

static void CUDA_CB callback(CUstream s, CUresult status, void *data)
{
	(void)s;
	if (status == CUDA_SUCCESS)
		(*(int *)data) += 10;
}

/* The less common entry points, once each. */
static int test_misc_api(CUcontext primary)
{
	CUdeviceptr pitched, managed, reg_d;
	CUcontext c, popped;
	CUstream s;
	size_t pitch;
	unsigned *m, hv[8], v = 3;
	static unsigned reg[64];
	int n = 8, hits = 0;
	unsigned long long bid = 0;
	int ordinal = -1;
	CUpointer_attribute attrs[] = { CU_POINTER_ATTRIBUTE_BUFFER_ID,
					CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL };
	void *data[] = { &bid, &ordinal };
	void *margs[] = { &managed, &v, &n };
	CUlaunchConfig cfg;

	ok(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));

	/* Pitched memory and a 2D memset. */
	ok(cuMemAllocPitch(&pitched, &pitch, 100, 4, 4));
	expect(pitch >= 100 && pitch % 256 == 0, "pitch %zu", pitch);
	ok(cuMemsetD2D32(pitched, pitch, 0x5, 25, 4));
	ok(cuMemcpyDtoH(hv, pitched + 3 * pitch, sizeof(hv)));
	expect(hv[7] == 5, "2d memset %u", hv[7]);
	ok(cuMemFree(pitched));

	/* Managed memory: one address, seen by kernels and the host. */
	ok(cuMemAllocManaged(&managed, 64, CU_MEM_ATTACH_GLOBAL));
	ok(launch(f_fill, s, margs));
	ok(cuStreamSynchronize(s));
	m = (unsigned *)(uintptr_t)managed;
	expect(m[7] == 3, "managed %u", m[7]);
	ok(cuPointerGetAttributes(2, attrs, data, managed));
	expect(bid != 0 && ordinal == 0, "attributes %llu %d", bid, ordinal);
	ok(cuMemFree(managed));

	/* Registered host memory, launched on through cuLaunchKernelEx. */
	ok(cuMemHostRegister(reg, sizeof(reg), 0));
	fails_with(cuMemHostRegister(reg + 4, 16, 0),
		   CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED);
	ok(cuMemHostGetDevicePointer(&reg_d, reg, 0));
	memset(&cfg, 0, sizeof(cfg));
	cfg.gridDimX = cfg.gridDimY = cfg.gridDimZ = 1;
	cfg.blockDimX = 64;
	cfg.blockDimY = cfg.blockDimZ = 1;
	cfg.hStream = s;
	{
		void *rargs[] = { &reg_d, &v, &n };

		ok(cuLaunchKernelEx(&cfg, f_fill, rargs, NULL));
		ok(cuLaunchCooperativeKernel(f_inc, 1, 1, 1, 1, 1, 1, 0, s,
					     (void *[]){ &reg_d, &n }));
	}
	ok(cuLaunchHostFunc(s, host_fn, &hits));
	ok(cuStreamAddCallback(s, callback, &hits, 0));
	ok(cuStreamSynchronize(s));
	expect(reg[7] == 4 && reg[8] == 0, "registered %u %u", reg[7], reg[8]);
	expect(hits == 11, "host work ran %d", hits);
	ok(cuMemHostUnregister(reg));
	fails_with(cuMemHostUnregister(reg),
		   CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED);

	/* Context stack. */
	ok(cuCtxCreate(&c, NULL, 0, 1));
	ok(cuCtxPopCurrent(&popped));
	expect(popped == c, "popped");
	ok(cuCtxPushCurrent(c));
	ok(cuCtxDestroy(c));
	fails_with(cuCtxPushCurrent(c), CUDA_ERROR_INVALID_CONTEXT);
	ok(cuCtxSetCurrent(primary));

	ok(cuStreamDestroy(s));
	return 0;
}

/* ---- stream semantics ---------------------------------------------------- */

static int test_legacy_stream(void)
{
	struct simcuda_op_info lo, bo, no, po;
	CUresult (*launch_pt)(CUfunction, unsigned, unsigned, unsigned,
			      unsigned, unsigned, unsigned, unsigned,
			      CUstream, void **, void **);
	CUdriverProcAddressQueryResult st;
	CUstream blk, nb;
	unsigned us;
	int flags[3] = { 0, 0, 0 };
	void *sargs[] = { &us };

	ok(cuStreamCreate(&blk, CU_STREAM_DEFAULT));
	ok(cuStreamCreate(&nb, CU_STREAM_NON_BLOCKING));

	/* legacy op, then blocking-stream op: the second waits. */
	simcuda_records_clear();
	ok(sleep_on(NULL, 40 * MS));
	ok(sleep_on(blk, 5 * MS));
	ok(cuCtxSynchronize());
	if (expect(rec_of(sid(NULL), &lo) == 0 && rec_of(sid(blk), &bo) == 0,
		   "records"))
		return -1;
	expect(bo.start_ns >= lo.end_ns, "blocking op started %lld ns before "
	       "the legacy op ended", (long long)(lo.end_ns - bo.start_ns));

	/* blocking-stream op, then legacy op: the legacy one waits. */
	simcuda_records_clear();
	ok(sleep_on(blk, 40 * MS));
	ok(sleep_on(NULL, 5 * MS));
	ok(cuStreamSynchronize(NULL));
	if (expect(rec_of(sid(NULL), &lo) == 0 && rec_of(sid(blk), &bo) == 0,
		   "records"))
		return -1;
	expect(lo.start_ns >= bo.end_ns, "legacy op did not wait");

	/* legacy op, then non-blocking op: they run at the same time. */
	simcuda_records_clear();
	ok(meet_on(NULL, 0, 0, 0, flags, 0));
	ok(meet_on(nb, 0, 0, 0, flags, 1));
	ok(cuCtxSynchronize());
	expect(met(flags), "non-blocking op waited for the legacy one");
	if (expect(rec_of(sid(NULL), &lo) == 0 && rec_of(sid(nb), &no) == 0,
		   "records"))
		return -1;
	expect(no.start_ns < lo.end_ns && lo.start_ns < no.end_ns,
	       "no overlap");

	/* The per-thread default stream is a blocking stream. */
	ok(cuGetProcAddress("cuLaunchKernel", (void **)&launch_pt, 12000, PT,
			    &st));
	simcuda_records_clear();
	ok(sleep_on(NULL, 40 * MS));
	us = 5 * MS;
	ok(launch_pt(f_sleep, 1, 1, 1, 1, 1, 1, 0, NULL, sargs, NULL));
	ok(cuCtxSynchronize());
	if (expect(rec_of(sid(NULL), &lo) == 0 &&
		   rec_of(sid(CU_STREAM_PER_THREAD), &po) == 0, "records"))
		return -1;
	expect(po.start_ns >= lo.end_ns, "per-thread op did not wait");
	expect(sid(CU_STREAM_PER_THREAD) != sid(NULL) &&
	       sid(CU_STREAM_LEGACY) == sid(NULL), "stream ids");

	/* A legacy-stream sync waits for blocking streams' work too. */
	simcuda_records_clear();
	ok(sleep_on(blk, 30 * MS));
	ok(cuStreamSynchronize(NULL));
	fails_with(cuStreamQuery(blk), CUDA_SUCCESS);
	ok(cuStreamQuery(NULL));

	ok(cuStreamDestroy(blk));
	ok(cuStreamDestroy(nb));
	fails_with(cuStreamQuery(blk), CUDA_ERROR_INVALID_HANDLE);
	return 0;
}

struct thr {
	CUcontext ctx;
	CUresult (*launch_pt)(CUfunction, unsigned, unsigned, unsigned,
			      unsigned, unsigned, unsigned, unsigned,
			      CUstream, void **, void **);
	int *flags;
	int me;
	CUresult err;
};

static void *ptds_thread(void *arg)
{
	struct thr *t = arg;
	CUdeviceptr p = 0;
	size_t bytes = 0;
	int rw = 0;
	unsigned long long f = (unsigned long long)(uintptr_t)t->flags;
	void *args[] = { &p, &bytes, &rw, &f, &t->me };

	t->err = cuCtxSetCurrent(t->ctx);
	if (t->err == CUDA_SUCCESS)
		t->err = t->launch_pt(f_meet, 1, 1, 1, 1, 1, 1, 0, NULL, args,
				      NULL);
	return NULL;
}

/* Two threads' per-thread streams are distinct streams: they overlap. */
static int test_ptds_threads(void)
{
	struct simcuda_op_info r[2];
	CUdriverProcAddressQueryResult st;
	int flags[3] = { 0, 0, 0 };
	struct thr t[2];
	pthread_t th[2];
	int i;

	memset(t, 0, sizeof(t));
	for (i = 0; i < 2; i++) {
		ok(cuCtxGetCurrent(&t[i].ctx));
		ok(cuGetProcAddress("cuLaunchKernel", (void **)&t[i].launch_pt,
				    12000, PT, &st));
		t[i].flags = flags;
		t[i].me = i;
	}
	simcuda_records_clear();
	for (i = 0; i < 2; i++)
		pthread_create(&th[i], NULL, ptds_thread, &t[i]);
	for (i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	ok(t[0].err);
	ok(t[1].err);
	ok(cuCtxSynchronize());
	expect(met(flags), "per-thread streams of two threads serialized");
	if (expect(simcuda_op_count() == 2, "%zu ops", simcuda_op_count()))
		return -1;
	simcuda_op_get(0, &r[0]);
	simcuda_op_get(1, &r[1]);
	expect(r[0].stream != r[1].stream, "same stream");
	return 0;
}

static int test_events(void)
{
	int gate[3] = { 0, 0, 0 };
	struct simcuda_op_info a, b;
	CUevent e0, e1, nt;
	CUstream s1, s2;
	float ms = 0;

	ok(cuStreamCreate(&s1, CU_STREAM_NON_BLOCKING));
	ok(cuStreamCreate(&s2, CU_STREAM_NON_BLOCKING));
	ok(cuEventCreate(&e0, CU_EVENT_DEFAULT));
	ok(cuEventCreate(&e1, CU_EVENT_DEFAULT));
	ok(cuEventCreate(&nt, CU_EVENT_DISABLE_TIMING));
	fails_with(cuEventElapsedTime(&ms, e0, e1), CUDA_ERROR_INVALID_HANDLE);

	/* s1 is held at a gate (a rendezvous the host completes). */
	simcuda_records_clear();
	ok(cuEventRecord(e0, s1));
	ok(meet_on(s1, 0, 0, 0, gate, 0));
	ok(sleep_on(s1, 30 * MS));
	ok(cuEventRecord(e1, s1));
	ok(cuEventRecord(nt, s1));
	fails_with(cuEventQuery(e1), CUDA_ERROR_NOT_READY);
	fails_with(cuEventElapsedTime(&ms, e0, e1), CUDA_ERROR_NOT_READY);
	/* s2 waits for e1: its op starts after s1's ended. */
	ok(cuStreamWaitEvent(s2, e1, 0));
	ok(sleep_on(s2, 1 * MS));
	__atomic_store_n(&gate[1], 1, __ATOMIC_SEQ_CST);
	ok(cuEventSynchronize(e1));
	expect(met(gate), "gate");
	ok(cuEventQuery(e1));
	ok(cuEventElapsedTime(&ms, e0, e1));
	expect(ms >= 29.0f && ms < 10000.0f, "elapsed %f ms", ms);
	fails_with(cuEventElapsedTime(&ms, e0, nt), CUDA_ERROR_INVALID_HANDLE);
	ok(cuStreamSynchronize(s2));
	if (!expect(rec_named(sid(s1), "sleep_us", &a) == 0 &&
		    rec_of(sid(s2), &b) == 0, "records"))
		expect(b.start_ns >= a.end_ns, "wait-event did not order");
	ok(cuEventDestroy(e0));
	ok(cuEventDestroy(e1));
	ok(cuEventDestroy(nt));
	ok(cuStreamDestroy(s1));
	ok(cuStreamDestroy(s2));
	return 0;
}

/* ---- cuGetProcAddress ---------------------------------------------------- */

static int pa_is(const char *name, int ver, cuuint64_t flags,
		 const char *want, void *lib, int line)
{
	CUdriverProcAddressQueryResult st = -1;
	void *fn = NULL, *expect_fn = dlsym(lib, want);
	CUresult r = cuGetProcAddress(name, &fn, ver, flags, &st);

	return expect_at(__FILE__, line,
			 r == CUDA_SUCCESS &&
			 st == CU_GET_PROC_ADDRESS_SUCCESS &&
			 fn != NULL && fn == expect_fn,
			 name, "version %d flags %llu: want %s", ver,
			 (unsigned long long)flags, want);
}

static int test_procaddr(void)
{
	CUdriverProcAddressQueryResult st;
	CUresult (*v1)(const char *, void **, int, cuuint64_t);
	const char *name, *sym;
	void *lib, *fn;
	int ver, pt;
	size_t i;

	lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
	if (expect(lib != NULL, "%s", dlerror()))
		return -1;
	pa_is("cuMemAlloc", 12000, 0, "cuMemAlloc_v2", lib, __LINE__);
	pa_is("cuMemAlloc", 12000, PT, "cuMemAlloc_v2", lib, __LINE__);
	pa_is("cuCtxCreate", 13000, 0, "cuCtxCreate_v4", lib, __LINE__);
	pa_is("cuCtxCreate", 12000, 0, "cuCtxCreate_v3", lib, __LINE__);
	pa_is("cuCtxCreate", 4000, 0, "cuCtxCreate_v2", lib, __LINE__);
	pa_is("cuLaunchKernel", 12000, 0, "cuLaunchKernel", lib, __LINE__);
	pa_is("cuLaunchKernel", 12000, PT, "cuLaunchKernel_ptsz", lib,
	      __LINE__);
	pa_is("cuLaunchKernel", 6050, PT, "cuLaunchKernel", lib, __LINE__);
	pa_is("cuMemcpyHtoD", 12000, PT, "cuMemcpyHtoD_v2_ptds", lib,
	      __LINE__);
	pa_is("cuMemcpyHtoDAsync", 12000, PT, "cuMemcpyHtoDAsync_v2_ptsz",
	      lib, __LINE__);
	pa_is("cuMemsetD32", 12000, 0, "cuMemsetD32_v2", lib, __LINE__);
	pa_is("cuStreamGetCaptureInfo", 12030, PT,
	      "cuStreamGetCaptureInfo_v3_ptsz", lib, __LINE__);
	pa_is("cuStreamBeginCapture", 12000, 0, "cuStreamBeginCapture_v2", lib,
	      __LINE__);
	pa_is("cuGraphInstantiate", 12000, 0, "cuGraphInstantiateWithFlags",
	      lib, __LINE__);
	pa_is("cuEventElapsedTime", 13000, 0, "cuEventElapsedTime_v2", lib,
	      __LINE__);
	pa_is("cuGetProcAddress", 12000, 0, "cuGetProcAddress_v2", lib,
	      __LINE__);
	pa_is("cuGetProcAddress", 11030, 0, "cuGetProcAddress", lib, __LINE__);

	fails_with(cuGetProcAddress("cuMemAlloc", &fn, 2000, 0, &st),
		   CUDA_ERROR_NOT_FOUND);
	expect(st == CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT && fn == NULL,
	       "status %d", st);
	fails_with(cuGetProcAddress("cuNoSuchFunction", &fn, 13000, 0, &st),
		   CUDA_ERROR_NOT_FOUND);
	expect(st == CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND, "status %d", st);
	fails_with(cuGetProcAddress("cuMemAlloc_v2", &fn, 13000, 0, &st),
		   CUDA_ERROR_NOT_FOUND);

	v1 = (CUresult (*)(const char *, void **, int, cuuint64_t))
		dlsym(lib, "cuGetProcAddress");
	if (!expect(v1 != NULL, "no cuGetProcAddress") &&
	    !ok(v1("cuMemFree", &fn, 12000, 0)))
		expect(fn == dlsym(lib, "cuMemFree_v2"), "v1 lookup");

	/* Every row resolves to the symbol of that name. */
	for (i = 0; simcuda_procaddr_row(i, &name, &sym, &ver, &pt, &fn) == 0;
	     i++)
		expect(fn == dlsym(lib, sym), "row %s -> %s", name, sym);
	expect(i > 150, "%zu rows", i);
	/* Unimplemented means absent. */
	expect(dlsym(lib, "cuMemAlloc") == NULL, "32-bit cuMemAlloc exported");
	dlclose(lib);
	return 0;
}

/* ---- VMM and faults ------------------------------------------------------ */

static int test_vmm(void)
{
	CUmemAllocationProp prop;
	CUmemAccessDesc acc;
	CUmemGenericAllocationHandle h1, h2;
	CUcontext c;
	CUdeviceptr va;
	size_t g;
	char msg[2048];
	unsigned v = 9, out[4];
	int n = 1024;
	CUdeviceptr p2;
	void *args[] = { &va, &v, &n };
	void *args2[] = { &p2, &v, &n };

	memset(&prop, 0, sizeof(prop));
	prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
	prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	prop.location.id = 0;
	memset(&acc, 0, sizeof(acc));
	acc.location = prop.location;
	acc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;

	ok(cuMemGetAllocationGranularity(&g, &prop,
					 CU_MEM_ALLOC_GRANULARITY_MINIMUM));
	expect(g == 2u << 20, "granularity %zu", g);
	if (ok(cuCtxCreate(&c, NULL, 0, 0)))
		return -1;
	ok(cuMemAddressReserve(&va, 4 * g, 0, 0, 0));
	ok(cuMemCreate(&h1, g, &prop, 0));
	ok(cuMemCreate(&h2, g, &prop, 0));
	ok(cuMemMap(va, g, 0, h1, 0));
	ok(cuMemSetAccess(va, g, &acc, 1));

	/* Mapped with access: fine, and visible through an alias. */
	simcuda_records_clear();
	ok(launch(f_fill, NULL, args));
	ok(cuMemMap(va + 2 * g, g, 0, h1, 0));
	ok(cuMemSetAccess(va + 2 * g, g, &acc, 1));
	ok(cuMemcpyDtoH(out, va + 2 * g, sizeof(out)));
	expect(out[3] == 9, "alias %u", out[3]);
	expect(simcuda_check(msg, sizeof(msg)) == 0, "%s", msg);
	ok(cuMemUnmap(va + 2 * g, g));

	/* Unmapped page: the fault is reported at the next sync. */
	p2 = va + g;
	ok(launch(f_fill, NULL, args2));
	fails_with(cuCtxSynchronize(), CUDA_ERROR_ILLEGAL_ADDRESS);
	expect(simcuda_check(msg, sizeof(msg)) == 1 &&
	       strstr(msg, "unmapped") != NULL, "check said: %s", msg);
	/* Sticky: the context is done for. */
	fails_with(launch(f_fill, NULL, args), CUDA_ERROR_ILLEGAL_ADDRESS);
	ok(cuCtxDestroy(c));

	/* Mapped without access rights. */
	ok(cuCtxCreate(&c, NULL, 0, 0));
	simcuda_records_clear();
	ok(cuMemMap(va + g, g, 0, h2, 0));
	ok(launch(f_fill, NULL, args2));
	fails_with(cuCtxSynchronize(), CUDA_ERROR_ILLEGAL_ADDRESS);
	expect(simcuda_check(msg, sizeof(msg)) == 1 &&
	       strstr(msg, "no-access") != NULL, "check said: %s", msg);
	ok(cuCtxDestroy(c));

	/* Read-only access, then a write. */
	ok(cuCtxCreate(&c, NULL, 0, 0));
	simcuda_records_clear();
	acc.flags = CU_MEM_ACCESS_FLAGS_PROT_READ;
	ok(cuMemSetAccess(va + g, g, &acc, 1));
	ok(cuMemcpyDtoH(out, va + g, sizeof(out)));
	fails_with(cuMemcpyHtoD(va + g, out, sizeof(out)),
		   CUDA_ERROR_ILLEGAL_ADDRESS);
	ok(cuCtxDestroy(c));

	/*
	 * Unmapping under a kernel faults it: while it runs
	 * ("unmapped-in-use") or, should it start late, when it runs.
	 */
	ok(cuCtxCreate(&c, NULL, 0, 0));
	simcuda_records_clear();
	ok(touch_on(NULL, va, 4096, SIM_WRITE, 60 * MS));
	usleep(20 * 1000);
	ok(cuMemUnmap(va, g));
	fails_with(cuCtxSynchronize(), CUDA_ERROR_ILLEGAL_ADDRESS);
	expect(simcuda_check(msg, sizeof(msg)) == 1 &&
	       strstr(msg, "unmapped") != NULL, "check said: %s", msg);
	ok(cuCtxDestroy(c));

	ok(cuMemUnmap(va + g, g));
	ok(cuMemRelease(h1));
	ok(cuMemRelease(h2));
	ok(cuMemAddressFree(va, 4 * g));
	simcuda_records_clear();
	return 0;
}

/* Use after cuMemFreeAsync, seen when the kernel runs. */
/*
 * Arrays take device memory (cuMemGetInfo sees their texels) until
 * destroyed; texture and surface objects name live ranges only; stale or
 * made-up handles and bad descriptors are errors, not crashes.
 */
static int test_arrays(void)
{
	CUDA_ARRAY3D_DESCRIPTOR d = { .Width = 1024, .Height = 256,
				      .Format = CU_AD_FORMAT_FLOAT,
				      .NumChannels = 4 };
	CUDA_ARRAY_DESCRIPTOR d2 = { .Width = 64, .Height = 0,
				     .Format = CU_AD_FORMAT_HALF,
				     .NumChannels = 2 };
	CUDA_RESOURCE_DESC res = { .resType = CU_RESOURCE_TYPE_ARRAY };
	CUDA_TEXTURE_DESC tex = { 0 };
	size_t f0, f1, f2, t;
	CUmipmappedArray m;
	CUsurfObject so;
	CUtexObject to, to2;
	CUarray a, b;
	CUdeviceptr p;

	ok(cuMemGetInfo(&f0, &t));
	ok(cuArray3DCreate(&a, &d));
	ok(cuMemGetInfo(&f1, &t));
	expect(f0 - f1 == 1024 * 256 * 16, "a 4 MiB array took %zu", f0 - f1);
	ok(cuArrayCreate(&b, &d2));
	ok(cuMipmappedArrayCreate(&m, &d, 3));
	ok(cuMemGetInfo(&f2, &t));
	expect(f1 - f2 == 64 * 4 + 4194304 + 1048576 + 262144,
	       "1D array and 3 levels took %zu", f1 - f2);
	d.NumChannels = 3;
	fails_with(cuArray3DCreate(&b, &d), CUDA_ERROR_INVALID_VALUE);
	d.NumChannels = 4;
	fails_with(cuMipmappedArrayCreate(&m, &d, 0), CUDA_ERROR_INVALID_VALUE);

	res.res.array.hArray = a;
	ok(cuSurfObjectCreate(&so, &res));
	ok(cuTexObjectCreate(&to, &res, &tex, NULL));
	expect(so != 0 && to != 0 && so != to, "handles %llu %llu",
	       (unsigned long long)so, (unsigned long long)to);
	ok(cuMemAlloc(&p, 4096));
	res = (CUDA_RESOURCE_DESC){ .resType = CU_RESOURCE_TYPE_LINEAR };
	res.res.linear.devPtr = p;
	res.res.linear.format = CU_AD_FORMAT_FLOAT;
	res.res.linear.numChannels = 1;
	res.res.linear.sizeInBytes = 4096;
	ok(cuTexObjectCreate(&to2, &res, &tex, NULL));
	fails_with(cuSurfObjectCreate(&so, &res), CUDA_ERROR_INVALID_VALUE);
	res.res.linear.sizeInBytes = 8192;	/* past the allocation */
	fails_with(cuTexObjectCreate(&to2, &res, &tex, NULL),
		   CUDA_ERROR_INVALID_VALUE);
	res = (CUDA_RESOURCE_DESC){ .resType = CU_RESOURCE_TYPE_ARRAY };
	res.res.array.hArray = (CUarray)(uintptr_t)&d;	/* made up */
	fails_with(cuTexObjectCreate(&to2, &res, &tex, NULL),
		   CUDA_ERROR_INVALID_HANDLE);
	ok(cuTexObjectDestroy(to2));
	fails_with(cuTexObjectDestroy(so), CUDA_ERROR_INVALID_VALUE);
	ok(cuSurfObjectDestroy(so));
	fails_with(cuSurfObjectDestroy(so), CUDA_ERROR_INVALID_VALUE);
	ok(cuTexObjectDestroy(to));
	ok(cuArrayDestroy(a));
	fails_with(cuArrayDestroy(a), CUDA_ERROR_INVALID_HANDLE);
	fails_with(cuArrayDestroy((CUarray)m), CUDA_ERROR_INVALID_HANDLE);
	ok(cuMipmappedArrayDestroy(m));
	ok(cuArrayDestroy(b));
	ok(cuMemFree(p));
	ok(cuMemGetInfo(&f2, &t));
	expect(f2 == f0, "free %zu after, %zu before", f2, f0);
	simcuda_records_clear();
	return 0;
}

static int test_use_after_free(void)
{
	CUcontext c;
	CUdeviceptr p;
	CUstream s;
	char msg[2048];
	unsigned v = 1;
	int n = 4;
	void *args[] = { &p, &v, &n };

	if (ok(cuCtxCreate(&c, NULL, 0, 0)))
		return -1;
	simcuda_records_clear();
	ok(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	ok(cuMemAllocAsync(&p, 64, s));
	ok(launch(f_fill, s, args));
	ok(cuMemFreeAsync(p, s));
	ok(launch(f_fill, s, args));
	fails_with(cuStreamSynchronize(s), CUDA_ERROR_ILLEGAL_ADDRESS);
	expect(simcuda_check(msg, sizeof(msg)) == 1, "no fault seen");
	ok(cuCtxDestroy(c));
	simcuda_records_clear();
	return 0;
}

/*
 * An explicit pool keeps freed bytes (cuMemGetInfo sees them used) up to its
 * release threshold, hands them to its next allocation, gives them back on
 * cuMemPoolTrimTo; a pool allocation past what the device has left fails
 * until the pool is trimmed; addresses are still never reused.
 */
static int test_pools(void)
{
	CUmemPoolProps props = { .allocType = CU_MEM_ALLOCATION_TYPE_PINNED,
		.location = { .type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0 } };
	uint64_t max = UINT64_MAX, v = 0;
	size_t free0, free1, total;
	CUdeviceptr p, q, r;
	CUmemoryPool pool;
	CUcontext c;
	CUstream s;
	int sup = 0;

	if (ok(cuCtxCreate(&c, NULL, 0, 0)))
		return -1;
	ok(cuDeviceGetAttribute(&sup, CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED,
				0));
	expect(sup == 1, "pools supported: %d", sup);
	ok(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	if (ok(cuMemPoolCreate(&pool, &props)))
		return -1;
	fails_with(cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_USED_MEM_HIGH + 100,
					 &v), CUDA_ERROR_INVALID_VALUE);
	ok(cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &max));
	ok(cuMemGetInfo(&free0, &total));
	ok(cuMemAllocFromPoolAsync(&p, 600 << 20, pool, s));
	ok(cuMemFreeAsync(p, s));
	ok(cuStreamSynchronize(s));
	ok(cuMemGetInfo(&free1, &total));
	expect(free0 - free1 == 600u << 20, "kept: %zu", free0 - free1);
	ok(cuMemPoolGetAttribute(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &v));
	expect(v == 600u << 20, "reserved %llu", (unsigned long long)v);
	/* The device (1 GiB) has no room for 600 MiB more except the kept. */
	fails_with(cuMemAlloc(&r, 600 << 20), CUDA_ERROR_OUT_OF_MEMORY);
	ok(cuMemAllocFromPoolAsync(&q, 500 << 20, pool, s));
	expect(q != p, "address reused");
	ok(cuMemGetInfo(&free1, &total));
	expect(free0 - free1 == 600u << 20, "reuse took new memory");
	ok(cuMemFree(q));	/* a synchronous free goes back to the pool */
	/* 700 MiB: more than the pool keeps, more than the device has left. */
	fails_with(cuMemAllocFromPoolAsync(&r, 700 << 20, pool, s),
		   CUDA_ERROR_OUT_OF_MEMORY);
	ok(cuMemPoolTrimTo(pool, 0));
	ok(cuMemGetInfo(&free1, &total));
	expect(free1 == free0, "trim gave back %zu of 600 MiB", free1 - free0);
	/* Threshold 0: nothing kept. */
	v = 0;
	ok(cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &v));
	ok(cuMemAllocFromPoolAsync(&p, 1 << 20, pool, s));
	ok(cuMemFreeAsync(p, s));
	ok(cuStreamSynchronize(s));
	ok(cuMemGetInfo(&free1, &total));
	expect(free1 == free0, "threshold 0 kept %zu", free0 - free1);
	/* Destroyed with a live allocation: gone at its free. */
	ok(cuMemAllocFromPoolAsync(&p, 1 << 20, pool, s));
	ok(cuMemPoolDestroy(pool));
	fails_with(cuMemPoolTrimTo(pool, 0), CUDA_ERROR_INVALID_VALUE);
	ok(cuMemFreeAsync(p, s));
	ok(cuStreamSynchronize(s));
	ok(cuMemGetInfo(&free1, &total));
	expect(free1 == free0, "destroyed pool kept %zu", free0 - free1);
	ok(cuStreamDestroy(s));
	ok(cuCtxDestroy(c));
	return 0;
}

/* ---- the checker --------------------------------------------------------- */

/*
 * Two non-blocking streams writing one buffer: at the same time (racy), or
 * ordered by an event (clean).
 */
static int race_scenario(int racy)
{
	int flags[3] = { 0, 0, 0 };
	CUdeviceptr p;
	CUstream s1, s2;
	CUevent e;

	if (ok(cuMemAlloc(&p, 4096)) ||
	    ok(cuStreamCreate(&s1, CU_STREAM_NON_BLOCKING)) ||
	    ok(cuStreamCreate(&s2, CU_STREAM_NON_BLOCKING)) ||
	    ok(cuEventCreate(&e, CU_EVENT_DISABLE_TIMING)))
		return -1;
	if (racy) {
		/* Both write p and meet while running: they must overlap. */
		ok(meet_on(s1, p, 4096, SIM_WRITE, flags, 0));
		ok(meet_on(s2, p, 4096, SIM_WRITE, flags, 1));
	} else {
		ok(touch_on(s1, p, 4096, SIM_WRITE, 10 * MS));
		ok(cuEventRecord(e, s1));
		ok(cuStreamWaitEvent(s2, e, 0));
		ok(touch_on(s2, p, 4096, SIM_WRITE, 1 * MS));
	}
	ok(cuCtxSynchronize());
	expect(!racy || met(flags), "racy launches did not meet");
	ok(cuEventDestroy(e));
	ok(cuStreamDestroy(s1));
	ok(cuStreamDestroy(s2));
	ok(cuMemFree(p));
	return 0;
}

/*
 * Run argv to completion, with SIMCUDA_LOG=log when log is set: its exit
 * status, or -1.  quiet: no output.  *child gets its pid.
 */
static int run(char *const argv[], const char *log, int quiet, pid_t *child)
{
	pid_t pid;
	int status;

	pid = fork();
	if (child != NULL)
		*child = pid;
	if (pid < 0)
		return -1;
	if (pid == 0) {
		int null = quiet ? open("/dev/null", O_WRONLY) : -1;

		if (null >= 0) {
			dup2(null, 1);
			dup2(null, 2);
		}
		if (log != NULL)
			setenv("SIMCUDA_LOG", log, 1);
		execv(argv[0], argv);
		_exit(127);
	}
	if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status))
		return -1;
	return WEXITSTATUS(status);
}

static int test_checker(const char *self)
{
	char log_racy[PATH_MAX], log_clean[PATH_MAX], bad[PATH_MAX];
	char checker[PATH_MAX], msg[4096];
	char *child_racy[] = { (char *)self, "child", "racy", NULL };
	char *child_clean[] = { (char *)self, "child", "clean", NULL };
	char *check_racy[] = { checker, "-q", log_racy, NULL };
	char *check_clean[] = { checker, "-q", log_clean, NULL };
	char *check_bad[] = { checker, "-q", bad, NULL };
	const char *tmp = getenv("TMPDIR");
	pid_t pid;
	int rc;
	FILE *f;

	/* In-process first. */
	simcuda_records_clear();
	race_scenario(1);
	expect(simcuda_check(msg, sizeof(msg)) == 1 &&
	       strstr(msg, "conflict") != NULL, "racy program passed: %s",
	       msg);
	simcuda_records_clear();
	race_scenario(0);
	expect(simcuda_check(msg, sizeof(msg)) == 0, "clean program: %s", msg);
	simcuda_records_clear();

	/* Then through logs and the simcuda-check tool. */
	if (tmp == NULL || tmp[0] != '/' || strlen(tmp) > PATH_MAX / 2)
		tmp = "/tmp";
	snprintf(checker, sizeof(checker), "%s/simcuda-check", dir);
	snprintf(msg, sizeof(msg), "%s/simcuda-selftest-%d-racy.%%p.log", tmp,
		 (int)getpid());
	rc = run(child_racy, msg, 0, &pid);
	expect(rc == 0, "racy child exited %d", rc);
	/* The child's pid replaced %p. */
	snprintf(log_racy, sizeof(log_racy),
		 "%s/simcuda-selftest-%d-racy.%d.log", tmp, (int)getpid(),
		 (int)pid);
	rc = run(check_racy, NULL, 1, NULL);
	expect(rc == 1, "simcuda-check on the racy log %s: %d", log_racy, rc);
	unlink(log_racy);

	snprintf(log_clean, sizeof(log_clean),
		 "%s/simcuda-selftest-%d-clean.log", tmp, (int)getpid());
	unlink(log_clean);
	rc = run(child_clean, log_clean, 0, NULL);
	expect(rc == 0, "clean child exited %d", rc);
	rc = run(check_clean, NULL, 1, NULL);
	expect(rc == 0, "simcuda-check on the clean log %s: %d", log_clean,
	       rc);
	unlink(log_clean);

	snprintf(bad, sizeof(bad), "%s/simcuda-selftest-%d-bad.log", tmp,
		 (int)getpid());
	f = fopen(bad, "w");
	if (!expect(f != NULL, "%s: %s", bad, strerror(errno))) {
		fprintf(f, "op v=1 seq=1 pid=1 stream=1 kind=kernel start=5 "
			"end=4 acc=-\n");
		fclose(f);
		rc = run(check_bad, NULL, 1, NULL);
		expect(rc == 2, "simcuda-check on a malformed log: %d", rc);
		unlink(bad);
	}
	/*
	 * Byte ranges (":lo:hi" after the mode): two overlapping writers of
	 * one allocation conflict only where their ranges share a byte.
	 */
	{
		static const struct {
			const char *a, *b;
			int rc;
		} rg[] = {
			{ ":0x0:0x4", ":0x4:0x8", 0 },
			{ ":0x0:0x5", ":0x4:0x8", 1 },
			{ "", ":0x40:0x44", 1 },	/* whole vs range */
			{ ":0x8:0x4", ":0x0:0x4", 2 },	/* lo >= hi */
			{ ":0x0", ":0x0:0x4", 2 },	/* hi missing */
		};

		for (unsigned i = 0; i < sizeof(rg) / sizeof(rg[0]); i++) {
			f = fopen(bad, "w");
			if (expect(f != NULL, "%s: %s", bad, strerror(errno)))
				break;
			fprintf(f, "op v=1 seq=1 pid=1 stream=1 kind=kernel "
				"name=a start=1 end=10 acc=1:0x1000:w%s\n"
				"op v=1 seq=2 pid=1 stream=2 kind=kernel "
				"name=b start=2 end=11 acc=1:0x1000:w%s\n",
				rg[i].a, rg[i].b);
			fclose(f);
			rc = run(check_bad, NULL, 1, NULL);
			expect(rc == rg[i].rc, "simcuda-check, ranges '%s' "
			       "'%s': %d, not %d", rg[i].a, rg[i].b, rc,
			       rg[i].rc);
			unlink(bad);
		}
	}
	return 0;
}

/* ---- graphs -------------------------------------------------------------- */

static int test_graph(void)
{
	CUstream s;
	CUgraph g;
	CUgraphExec x;
	CUdeviceptr p;
	CUstreamCaptureStatus cs;
	struct simcuda_op_info r;
	unsigned *host, v = 40;
	size_t before, i;
	int n = 16, graph_ops = 0;
	void *fargs[] = { &p, &v, &n };
	void *iargs[] = { &p, &n };

	ok(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	ok(cuMemAlloc(&p, 64));
	ok(cuMemAllocHost((void **)&host, 64));
	fails_with(cuStreamBeginCapture(NULL, CU_STREAM_CAPTURE_MODE_GLOBAL),
		   CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);

	simcuda_records_clear();
	ok(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
	ok(cuStreamIsCapturing(s, &cs));
	expect(cs == CU_STREAM_CAPTURE_STATUS_ACTIVE, "status %d", cs);
	ok(launch(f_fill, s, fargs));
	ok(launch(f_inc, s, iargs));
	ok(cuMemcpyDtoHAsync(host, p, 64, s));
	before = simcuda_op_count();
	ok(cuStreamEndCapture(s, &g));
	expect(before == 0, "captured work ran");
	ok(cuGraphInstantiate(&x, g, 0));
	ok(cuGraphLaunch(x, s));
	ok(cuGraphLaunch(x, s));
	ok(cuStreamSynchronize(s));
	expect(host[15] == 41, "replay result %u", host[15]);
	for (i = 0; simcuda_op_get(i, &r) == 0; i++)
		graph_ops += r.graph != 0;
	expect(graph_ops == 6, "%d replayed ops", graph_ops);
	ok(cuGraphExecDestroy(x));
	ok(cuGraphDestroy(g));

	/* Fork/join: a second stream joins through an event, then rejoins. */
	{
		CUstream s2;
		CUevent e0, e1;

		ok(cuStreamCreate(&s2, CU_STREAM_NON_BLOCKING));
		ok(cuEventCreate(&e0, CU_EVENT_DISABLE_TIMING));
		ok(cuEventCreate(&e1, CU_EVENT_DISABLE_TIMING));
		v = 7;
		ok(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
		ok(launch(f_fill, s, fargs));
		ok(cuEventRecord(e0, s));
		ok(cuStreamWaitEvent(s2, e0, 0));
		ok(cuStreamIsCapturing(s2, &cs));
		expect(cs == CU_STREAM_CAPTURE_STATUS_ACTIVE, "joined %d", cs);
		ok(launch(f_inc, s2, iargs));
		ok(launch(f_inc, s2, iargs));
		ok(cuEventRecord(e1, s2));
		ok(cuStreamWaitEvent(s, e1, 0));
		ok(cuMemcpyDtoHAsync(host, p, 64, s));
		ok(cuStreamEndCapture(s, &g));
		ok(cuStreamIsCapturing(s2, &cs));
		expect(cs == CU_STREAM_CAPTURE_STATUS_NONE, "still %d", cs);
		ok(cuGraphInstantiate(&x, g, 0));
		ok(cuGraphLaunch(x, s));
		ok(cuStreamSynchronize(s));
		expect(host[0] == 9, "fork/join replay %u", host[0]);
		ok(cuGraphExecDestroy(x));
		ok(cuGraphDestroy(g));
		ok(cuEventDestroy(e0));
		ok(cuEventDestroy(e1));
		ok(cuStreamDestroy(s2));
	}

	/* Synchronizing a capturing stream breaks the capture. */
	ok(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
	ok(launch(f_fill, s, fargs));
	fails_with(cuStreamSynchronize(s),
		   CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
	fails_with(cuStreamEndCapture(s, &g),
		   CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);

	ok(cuMemFreeHost(host));
	ok(cuMemFree(p));
	ok(cuStreamDestroy(s));
	simcuda_records_clear();
	return 0;
}

/*
 * Graph memory nodes: the address is fixed at the node, the memory live
 * from a launch to a free; the node getters see them; a graph that leaves
 * its allocation live cannot launch again until it is freed, unless
 * instantiated with auto-free.
 */
static int test_graph_mem(void)
{
	CUDA_MEM_ALLOC_NODE_PARAMS ap = { 0 }, got;
	CUgraphNode an, fn, nodes[3];
	CUgraphNodeType t;
	CUdeviceptr va, fva = 0;
	CUgraphExec x;
	CUstream s;
	CUgraph g;
	size_t n;
	unsigned host[16], v = 5;
	int cnt = 16;
	void *fargs[] = { &va, &v, &cnt };
	CUcontext c;

	if (ok(cuCtxCreate(&c, NULL, 0, 0)))
		return -1;
	ok(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	ap.poolProps.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
	ap.poolProps.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	ap.bytesize = 64;
	ok(cuGraphCreate(&g, 0));
	ok(cuGraphAddMemAllocNode(&an, g, NULL, 0, &ap));
	va = ap.dptr;
	expect(va != 0, "no address at the node");
	ok(cuGraphAddMemFreeNode(&fn, g, &an, 1, va));
	fails_with(cuGraphAddMemFreeNode(&fn, g, NULL, 0, va + 4),
		   CUDA_ERROR_INVALID_VALUE);
	n = 0;
	ok(cuGraphGetNodes(g, NULL, &n));
	expect(n == 2, "%zu nodes", n);
	n = 3;
	ok(cuGraphGetNodes(g, nodes, &n));
	expect(n == 2 && nodes[2] == NULL, "%zu nodes, tail not cleared", n);
	ok(cuGraphNodeGetType(nodes[0], &t));
	expect(t == CU_GRAPH_NODE_TYPE_MEM_ALLOC, "type %d", (int)t);
	ok(cuGraphNodeGetType(nodes[1], &t));
	expect(t == CU_GRAPH_NODE_TYPE_MEM_FREE, "type %d", (int)t);
	ok(cuGraphMemAllocNodeGetParams(nodes[0], &got));
	expect(got.dptr == va && got.bytesize == 64, "alloc params");
	ok(cuGraphMemFreeNodeGetParams(nodes[1], &fva));
	expect(fva == va, "free params");
	fails_with(cuGraphMemFreeNodeGetParams(nodes[0], &fva),
		   CUDA_ERROR_INVALID_VALUE);
	/* Freed by the graph itself: it launches again and again. */
	ok(cuGraphInstantiate(&x, g, 0));
	ok(cuGraphLaunch(x, s));
	ok(cuGraphLaunch(x, s));
	ok(cuStreamSynchronize(s));
	ok(cuGraphExecDestroy(x));
	ok(cuGraphDestroy(g));

	/* Left live: usable after the launch, freed by the program. */
	ok(cuGraphCreate(&g, 0));
	ok(cuGraphAddMemAllocNode(&an, g, NULL, 0, &ap));
	va = ap.dptr;
	ok(cuGraphInstantiate(&x, g, 0));
	ok(cuGraphLaunch(x, s));
	ok(launch(f_fill, s, fargs));
	ok(cuMemcpyDtoHAsync(host, va, 64, s));
	ok(cuStreamSynchronize(s));
	expect(host[15] == 5, "graph allocation holds %u", host[15]);
	ok(cuMemFreeAsync(va, s));
	ok(cuStreamSynchronize(s));
	fails_with(cuMemFree(va), CUDA_ERROR_INVALID_VALUE);
	ok(cuGraphLaunch(x, s));
	ok(cuStreamSynchronize(s));
	ok(cuMemFree(va));
	/* Launched twice without a free: the second launch faults. */
	ok(cuGraphLaunch(x, s));
	ok(cuGraphLaunch(x, s));
	fails_with(cuStreamSynchronize(s), CUDA_ERROR_ILLEGAL_ADDRESS);
	ok(cuCtxDestroy(c));
	simcuda_records_clear();
	return 0;
}

/* Auto-free, and memory nodes made by stream capture. */
static int test_graph_mem_auto(void)
{
	CUDA_MEM_ALLOC_NODE_PARAMS ap = { 0 };
	CUgraphNode an, nodes[4];
	CUgraphNodeType t;
	CUgraphExec x;
	CUstream s;
	CUgraph g;
	CUdeviceptr e;
	size_t n = 4;

	ok(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	ap.poolProps.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
	ap.poolProps.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	ap.bytesize = 64;
	ok(cuGraphCreate(&g, 0));
	ok(cuGraphAddMemAllocNode(&an, g, NULL, 0, &ap));
	ok(cuGraphInstantiate(&x, g,
			      CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH));
	ok(cuGraphLaunch(x, s));
	ok(cuGraphLaunch(x, s));
	ok(cuStreamSynchronize(s));
	ok(cuMemFree(ap.dptr));
	ok(cuGraphExecDestroy(x));
	ok(cuGraphDestroy(g));

	/* Captured cuMemAllocAsync / cuMemFreeAsync are memory nodes. */
	ok(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_RELAXED));
	ok(cuMemAllocAsync(&e, 64, s));
	ok(cuMemsetD8Async(e, 1, 64, s));
	ok(cuMemFreeAsync(e, s));
	ok(cuStreamEndCapture(s, &g));
	ok(cuGraphGetNodes(g, nodes, &n));
	expect(n == 3, "%zu captured nodes", n);
	ok(cuGraphNodeGetType(nodes[0], &t));
	expect(t == CU_GRAPH_NODE_TYPE_MEM_ALLOC, "captured type %d", (int)t);
	ok(cuGraphNodeGetType(nodes[2], &t));
	expect(t == CU_GRAPH_NODE_TYPE_MEM_FREE, "captured type %d", (int)t);
	ok(cuGraphInstantiate(&x, g, 0));
	ok(cuGraphLaunch(x, s));
	ok(cuGraphLaunch(x, s));
	ok(cuStreamSynchronize(s));
	ok(cuGraphExecDestroy(x));
	ok(cuGraphDestroy(g));
	ok(cuStreamDestroy(s));
	simcuda_records_clear();
	return 0;
}

/* ---- main ---------------------------------------------------------------- */

static int child(const char *what)
{
	CUcontext c;

	if (ok(cuInit(0)) || ok(cuDevicePrimaryCtxRetain(&c, 0)) ||
	    ok(cuCtxSetCurrent(c)) || load_kernels() < 0)
		return 1;
	race_scenario(strcmp(what, "racy") == 0);
	ok(cuModuleUnload(module));
	ok(cuDevicePrimaryCtxRelease(0));
	return failures ? 1 : 0;
}

static int find_self(char *self, size_t len)
{
	ssize_t n = readlink("/proc/self/exe", dir, sizeof(dir) - 1);
	char *slash;

	if (n <= 0)
		return -1;
	dir[n] = '\0';
	snprintf(self, len, "%s", dir);
	slash = strrchr(dir, '/');
	if (slash == NULL)
		return -1;
	*slash = '\0';
	snprintf(module_path, sizeof(module_path), "%s/kernels/basic.so", dir);
	return 0;
}

int main(int argc, char **argv)
{
	char self[PATH_MAX];
	CUcontext c;

	unsetenv("SIMCUDA_KERNEL_US");
	setenv("SIMCUDA_DEVICES", "2", 1);
	setenv("SIMCUDA_MEM_BYTES", "1G", 1);
	if (find_self(self, sizeof(self)) < 0) {
		fprintf(stderr, "selftest: cannot find my own path\n");
		return 1;
	}
	if (argc == 3 && strcmp(argv[1], "child") == 0)
		return child(argv[2]);
	unsetenv("SIMCUDA_LOG");

	fails_with(cuDeviceGetCount(&(int){ 0 }), CUDA_ERROR_NOT_INITIALIZED);
	if (ok(cuInit(0)) || ok(cuDevicePrimaryCtxRetain(&c, 0)) ||
	    ok(cuCtxSetCurrent(c)) || load_kernels() < 0) {
		fprintf(stderr, "selftest: FAILED (setup)\n");
		return 1;
	}
	test_device();
	test_memory_and_launch();
	test_second_device(c);
	test_misc_api(c);
	test_library();
	test_legacy_stream();
	test_ptds_threads();
	test_events();
	test_procaddr();
	test_graph();
	test_graph_mem();
	test_graph_mem_auto();
	test_checker(self);
	test_use_after_free();
	test_arrays();
	test_pools();
	test_vmm();

	ok(cuCtxSetCurrent(c));
	ok(cuModuleUnload(module));
	ok(cuDevicePrimaryCtxRelease(0));
	if (failures) {
		fprintf(stderr, "selftest: FAILED (%d checks)\n", failures);
		return 1;
	}
	printf("simcuda selftest: ok (%d checks)\n", checks);
	return 0;
}
