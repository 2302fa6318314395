/*
 * e2e-common.h - helpers shared by the end-to-end test programs: checked
 * driver calls and the path of the simulated kernel module.
 *
 * The programs are ordinary driver-API programs; the tests run them with and
 * without libkmux.so preloaded, on tests/simcuda, and compare.
 */
#ifndef E2E_COMMON_H
#define E2E_COMMON_H

#include <stdio.h>
#include <stdlib.h>

#include <cuda.h>

#define CHECK(call)                                                          \
	do {                                                                 \
		CUresult check_r_ = (call);                                  \
		if (check_r_ != CUDA_SUCCESS) {                              \
			fprintf(stderr, "%s:%d: %s failed: %d\n", __FILE__,  \
				__LINE__, #call, (int)check_r_);             \
			exit(1);                                             \
		}                                                            \
	} while (0)

/* The simulated module with vec_add, scale, fill_u32, copy_struct, ... */
static inline const char *e2e_module_path(void)
{
	const char *p = getenv("E2E_MODULE");

	if (!p) {
		fprintf(stderr, "E2E_MODULE is not set\n");
		exit(2);
	}
	return p;
}

#endif
