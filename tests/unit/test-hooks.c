/*
 * test-hooks.c - the hook table and its three resolution paths, linked
 * statically with the preload's objects: the cu[A-Z] matcher, the sorted
 * table, dlsym's answer for driver and non-driver names, and
 * cuGetProcAddress picking the wrapper of exactly the variant the driver
 * chose (version, per-thread stream flavour, symbolStatus).
 *
 * The real driver here is tests/simcuda, named by KMUX_REAL_LIBCUDA (the
 * .mk sets TEST_SIMCUDA); the no-driver cases run in a child process with a
 * path that does not exist, since the driver is loaded once per process.
 */
#include <dlfcn.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "real.h"

static void test_matcher(void **state)
{
	(void)state;
	assert_true(hook_name_is_driver("cuInit"));
	assert_true(hook_name_is_driver("cuMemAlloc_v2"));
	assert_true(hook_name_is_driver("cuA"));
	assert_false(hook_name_is_driver("cudnnCreate"));
	assert_false(hook_name_is_driver("cublasCreate_v2"));
	assert_false(hook_name_is_driver("cufftPlan1d"));
	assert_false(hook_name_is_driver("cudaMalloc"));
	assert_false(hook_name_is_driver("cu"));
	assert_false(hook_name_is_driver("c"));
	assert_false(hook_name_is_driver(""));
	assert_false(hook_name_is_driver(NULL));
	assert_false(hook_name_is_driver("CuInit"));
	assert_false(hook_name_is_driver("xcuInit"));
	assert_false(hook_name_is_driver("cu_init"));
}

static void test_table_sorted_and_found(void **state)
{
	(void)state;
	assert_true(hook_table_len > 100);
	for (unsigned i = 0; i < hook_table_len; i++) {
		const struct hook_entry *e = hook_table_find(hook_table[i].name);

		if (i)
			assert_true(strcmp(hook_table[i - 1].name,
					   hook_table[i].name) < 0);
		assert_ptr_equal(e, &hook_table[i]);
		assert_non_null(e->hook);
		assert_non_null(e->real);
	}
	assert_null(hook_table_find("cuNoSuchFunction"));
	assert_null(hook_table_find("cudnnCreate"));
	assert_null(hook_table_find("cuMemAlloc"));	/* the v1 ABI: not ours */
	assert_non_null(hook_table_find("cuMemAlloc_v2"));
	assert_non_null(hook_table_find("cuLaunchKernel_ptsz"));
}

static void *libcuda_handle(void)
{
	void *h = dlopen(getenv("KMUX_REAL_LIBCUDA"), RTLD_NOW | RTLD_LOCAL);

	assert_non_null(h);
	return h;
}

static void test_dlsym_layer(void **state)
{
	void *h = libcuda_handle();
	const struct hook_entry *e = hook_table_find("cuMemAlloc_v2");
	CUdevice dev;
	void *fn;

	(void)state;
	/* A hooked driver name gives kmux's wrapper... */
	assert_ptr_equal(dlsym(h, "cuMemAlloc_v2"), e->hook);
	assert_ptr_equal(dlsym(h, "cuLaunchKernel"),
			 hook_table_find("cuLaunchKernel")->hook);
	/* ...whose real function is the driver's own. */
	assert_true(real_ready());
	assert_ptr_equal(*e->real, real_dlsym(h, "cuMemAlloc_v2"));
	/* A driver name kmux does not wrap is the driver's. */
	fn = dlsym(h, "cuModuleGetFunction");
	assert_non_null(fn);
	assert_ptr_equal(fn, real_dlsym(h, "cuModuleGetFunction"));
	/* A hooked name whose wrapper only forwards is the driver's (t10
	 * checks the global scope, where kmux's export comes first); the
	 * exported wrapper still works when called. */
	e = hook_table_find("cuCtxGetDevice_v2");
	assert_true(e->forward);
	assert_false(hook_table_find("cuLaunchKernel")->forward);
	assert_ptr_equal(dlsym(h, "cuCtxGetDevice_v2"), *e->real);
	assert_ptr_not_equal(*e->real, e->hook);
	assert_int_equal(((CUresult (*)(CUdevice *, CUcontext))e->hook)(&dev, NULL),
			 ((CUresult (*)(CUdevice *, CUcontext))*e->real)(&dev, NULL));
	/* A name the handle does not have stays NULL, hooked or not. */
	assert_null(dlsym(h, "cuNoSuchFunction"));
	/* Non-driver names pass through untouched. */
	assert_ptr_equal(dlsym(RTLD_DEFAULT, "strlen"),
			 real_dlsym(RTLD_DEFAULT, "strlen"));
	/* RTLD_NEXT resolves after the caller, not after kmux. */
	assert_non_null(dlsym(RTLD_NEXT, "malloc"));
	dlclose(h);
}

typedef CUresult (*gpa_fn)(const char *, void **, int, cuuint64_t,
			   CUdriverProcAddressQueryResult *);

static void *gpa(const char *name, int version, cuuint64_t flags,
		 CUdriverProcAddressQueryResult *st, CUresult *r)
{
	void *fn = NULL;

	*r = cuGetProcAddress_v2(name, &fn, version, flags, st);
	return fn;
}

static void test_procaddr_layer(void **state)
{
	const cuuint64_t PT = CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;
	const cuuint64_t LEG = CU_GET_PROC_ADDRESS_LEGACY_STREAM;
	CUdriverProcAddressQueryResult st;
	void *h = libcuda_handle();
	CUresult r;
	void *fn;

	(void)state;
	fn = gpa("cuMemAlloc", 12000, LEG, &st, &r);
	assert_int_equal(r, CUDA_SUCCESS);
	assert_int_equal(st, CU_GET_PROC_ADDRESS_SUCCESS);
	assert_ptr_equal(fn, hook_table_find("cuMemAlloc_v2")->hook);

	fn = gpa("cuLaunchKernel", 12000, PT, &st, &r);
	assert_ptr_equal(fn, hook_table_find("cuLaunchKernel_ptsz")->hook);
	fn = gpa("cuLaunchKernel", 12000, LEG, &st, &r);
	assert_ptr_equal(fn, hook_table_find("cuLaunchKernel")->hook);
	fn = gpa("cuMemcpyHtoD", 12000, PT, &st, &r);
	assert_ptr_equal(fn, hook_table_find("cuMemcpyHtoD_v2_ptds")->hook);

	/* Asked for itself, it hands back the hooked cuGetProcAddress. */
	fn = gpa("cuGetProcAddress", 12000, LEG, &st, &r);
	assert_ptr_equal(fn, hook_table_find("cuGetProcAddress_v2")->hook);

	/* Unwrapped names: the driver's own function. */
	fn = gpa("cuModuleGetFunction", 12000, LEG, &st, &r);
	assert_int_equal(r, CUDA_SUCCESS);
	assert_ptr_equal(fn, real_dlsym(h, "cuModuleGetFunction"));

	/* A wrapper that only forwards: the driver's own, either way. */
	fn = gpa("cuCtxGetDevice", 13000, LEG, &st, &r);
	assert_int_equal(r, CUDA_SUCCESS);
	assert_ptr_equal(fn, real_dlsym(h, "cuCtxGetDevice_v2"));
	fn = gpa("cuCtxGetDevice", 2000, LEG, &st, &r);
	assert_ptr_equal(fn, real_dlsym(h, "cuCtxGetDevice"));

	/* The driver's symbolStatus comes back unchanged. */
	fn = gpa("cuNoSuchFunction", 12000, LEG, &st, &r);
	assert_int_not_equal(r, CUDA_SUCCESS);
	assert_int_equal(st, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
	dlclose(h);
}

/* With no driver, dlsym must not invent kmux's exports. */
static void test_no_driver(void **state)
{
	pid_t pid;
	int status;

	(void)state;
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		setenv("KMUX_REAL_LIBCUDA", "/nonexistent/libcuda.so.1", 1);
		/* This process already loaded the driver: ask a fresh one. */
		execl("/proc/self/exe", "test-hooks", "--no-driver-child",
		      (char *)NULL);
		_exit(99);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

static int no_driver_child(void)
{
	void *fn = NULL;

	if (real_ready())
		return 1;
	if (dlsym(RTLD_DEFAULT, "cuInit") != NULL)
		return 2;
	if (cuInit(0) != CUDA_ERROR_NOT_INITIALIZED)
		return 3;
	if (cuGetProcAddress_v2("cuInit", &fn, 12000, 0, NULL) ==
	    CUDA_SUCCESS)
		return 4;
	return 0;
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_matcher),
		cmocka_unit_test(test_table_sorted_and_found),
		cmocka_unit_test(test_dlsym_layer),
		cmocka_unit_test(test_procaddr_layer),
		cmocka_unit_test(test_no_driver),
	};

	if (argc > 1 && strcmp(argv[1], "--no-driver-child") == 0)
		return no_driver_child();
	if (!getenv("KMUX_REAL_LIBCUDA") && getenv("TEST_SIMCUDA"))
		setenv("KMUX_REAL_LIBCUDA", getenv("TEST_SIMCUDA"), 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
