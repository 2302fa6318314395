/*
 * rt_check.h - error checking for the runtime-API test programs.
 * Every CUDA call goes through CK(); any error prints where and exits 1.
 */
#ifndef KMUX_BENCH_RT_CHECK_H
#define KMUX_BENCH_RT_CHECK_H

#include <stdio.h>
#include <stdlib.h>

#include <cuda_runtime.h>

#define CK(call)                                                            \
	do {                                                                \
		cudaError_t ck_e_ = (call);                                 \
		if (ck_e_ != cudaSuccess) {                                 \
			fprintf(stderr, "%s:%d: %s failed: %s (%s)\n",      \
				__FILE__, __LINE__, #call,                  \
				cudaGetErrorName(ck_e_),                    \
				cudaGetErrorString(ck_e_));                 \
			exit(1);                                            \
		}                                                           \
	} while (0)

/* After a <<<>>> launch: launch errors now, execution errors at the sync. */
#define CK_LAUNCH() CK(cudaGetLastError())

#endif
