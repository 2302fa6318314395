/*
 * drv-dlopen.c - loads the driver the way cudart does: dlopen("libcuda.so.1"),
 * dlsym("cuGetProcAddress_v2"), then every entry point through
 * cuGetProcAddress by base name, CUDA version and default-stream flavour.
 *
 * With E2E_EXPECT_HOOKED=1 it also checks, with dladdr, that what it was
 * handed for hooked functions lives in libkmux.so and what it was handed for
 * the rest, and for hooks that only forward (HOOK_FORWARD), lives in the
 * driver: the test that all three interposition layers answer the way they
 * should.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <string.h>

#include "e2e-common.h"

typedef CUresult (*gpa_fn)(const char *, void **, int, cuuint64_t,
			   CUdriverProcAddressQueryResult *);

static gpa_fn gpa;
static int expect_hooked;
static int failures;

static void *get(const char *name, int version, cuuint64_t flags,
		 int want_hooked)
{
	CUdriverProcAddressQueryResult st;
	void *fn = NULL;
	Dl_info info;
	int hooked;

	if (gpa(name, &fn, version, flags, &st) != CUDA_SUCCESS ||
	    st != CU_GET_PROC_ADDRESS_SUCCESS || !fn) {
		fprintf(stderr, "cuGetProcAddress(%s) failed\n", name);
		exit(1);
	}
	if (!dladdr(fn, &info) || !info.dli_fname) {
		fprintf(stderr, "dladdr(%s) failed\n", name);
		exit(1);
	}
	hooked = strstr(info.dli_fname, "libkmux") != NULL;
	if (expect_hooked && hooked != want_hooked) {
		fprintf(stderr, "%s: got %s from %s, wanted %s\n", name,
			info.dli_sname ? info.dli_sname : "?", info.dli_fname,
			want_hooked ? "kmux's wrapper" : "the driver's own");
		failures++;
	}
	return fn;
}

int main(void)
{
	void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	const cuuint64_t PT = CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;
	const cuuint64_t LEG = CU_GET_PROC_ADDRESS_LEGACY_STREAM;
	CUresult (*init)(unsigned);
	CUresult (*dev_get)(CUdevice *, int);
	CUresult (*retain)(CUcontext *, CUdevice);
	CUresult (*set_cur)(CUcontext);
	CUresult (*mod_load)(CUmodule *, const char *);
	CUresult (*get_fn)(CUfunction *, CUmodule, const char *);
	CUresult (*mem_alloc)(CUdeviceptr *, size_t);
	CUresult (*mem_free)(CUdeviceptr);
	CUresult (*htod)(CUdeviceptr, const void *, size_t);
	CUresult (*dtoh)(void *, CUdeviceptr, size_t);
	CUresult (*launch)(CUfunction, unsigned, unsigned, unsigned, unsigned,
			   unsigned, unsigned, unsigned, CUstream, void **,
			   void **);
	CUresult (*ssync)(CUstream);
	CUresult (*release)(CUdevice);
	enum { N = 1024 };
	static float x[N], y[N], z[N];
	CUdeviceptr a, b, c;
	CUdevice dev;
	CUcontext ctx;
	CUmodule mod;
	CUfunction f;
	int n = N;
	void *self;

	if (!h) {
		fprintf(stderr, "cannot load libcuda.so.1: %s\n", dlerror());
		return 3;
	}
	expect_hooked = getenv("E2E_EXPECT_HOOKED") != NULL;
	gpa = (gpa_fn)dlsym(h, "cuGetProcAddress_v2");
	if (!gpa) {
		fprintf(stderr, "no cuGetProcAddress_v2\n");
		return 1;
	}
	/* Asking for cuGetProcAddress itself must give back the hooked one. */
	self = get("cuGetProcAddress", 12000, LEG, 1);
	gpa = (gpa_fn)self;
	/* Names kmux must not touch pass through unchanged. */
	if (dlsym(h, "cudnnCreate") != NULL) {
		fprintf(stderr, "dlsym invented cudnnCreate\n");
		failures++;
	}
	init = get("cuInit", 2000, LEG, 1);
	/* Wrappers that only forward (HOOK_FORWARD): the driver's own. */
	dev_get = get("cuDeviceGet", 2000, LEG, 0);
	retain = get("cuDevicePrimaryCtxRetain", 7000, LEG, 1);
	set_cur = get("cuCtxSetCurrent", 4000, LEG, 0);
	get("cuCtxGetDevice", 13000, LEG, 0);
	if (expect_hooked) {
		/* The global scope finds kmux's export first: still the driver's. */
		Dl_info info;
		void *fn = dlsym(RTLD_DEFAULT, "cuCtxGetDevice_v2");

		if (!fn || !dladdr(fn, &info) || !info.dli_fname ||
		    strstr(info.dli_fname, "libkmux")) {
			fprintf(stderr, "dlsym(RTLD_DEFAULT, cuCtxGetDevice_v2): not the driver's\n");
			failures++;
		}
	}
	mod_load = get("cuModuleLoad", 2000, LEG, 1);
	get_fn = get("cuModuleGetFunction", 2000, LEG, 0);
	mem_alloc = get("cuMemAlloc", 12000, LEG, 1);
	mem_free = get("cuMemFree", 12000, LEG, 1);
	htod = get("cuMemcpyHtoD", 12000, PT, 1);
	dtoh = get("cuMemcpyDtoH", 12000, PT, 1);
	launch = get("cuLaunchKernel", 12000, PT, 1);
	ssync = get("cuStreamSynchronize", 12000, PT, 1);
	release = get("cuDevicePrimaryCtxRelease", 11000, LEG, 1);

	for (int i = 0; i < N; i++) {
		x[i] = (float)i * 0.5f;
		y[i] = 3.0f;
	}
	CHECK(init(0));
	CHECK(dev_get(&dev, 0));
	CHECK(retain(&ctx, dev));
	CHECK(set_cur(ctx));
	CHECK(mod_load(&mod, e2e_module_path()));
	CHECK(get_fn(&f, mod, "vec_add"));
	CHECK(mem_alloc(&a, sizeof(x)));
	CHECK(mem_alloc(&b, sizeof(y)));
	CHECK(mem_alloc(&c, sizeof(z)));
	CHECK(htod(a, x, sizeof(x)));
	CHECK(htod(b, y, sizeof(y)));
	{
		void *params[] = { &a, &b, &c, &n };

		CHECK(launch(f, N / 128, 1, 1, 128, 1, 1, 0, NULL, params,
			     NULL));
	}
	CHECK(ssync(NULL));
	CHECK(dtoh(z, c, sizeof(z)));
	for (int i = 0; i < N; i++) {
		if (z[i] != x[i] + y[i]) {
			fprintf(stderr, "wrong result at %d\n", i);
			return 1;
		}
	}
	CHECK(mem_free(a));
	CHECK(mem_free(b));
	CHECK(mem_free(c));
	CHECK(release(dev));
	if (failures)
		return 1;
	printf("drv-dlopen ok\n");
	return 0;
}
