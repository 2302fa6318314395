/*
 * drv_check.h - error checking for the driver-API test programs.
 * Every driver call goes through CU(); any error prints where and exits 1.
 */
#ifndef KMUX_BENCH_DRV_CHECK_H
#define KMUX_BENCH_DRV_CHECK_H

#include <stdio.h>
#include <stdlib.h>

#include <cuda.h>

#define CU(call)                                                            \
	do {                                                                \
		CUresult cu_r_ = (call);                                    \
		if (cu_r_ != CUDA_SUCCESS) {                                \
			const char *cu_n_ = "?", *cu_s_ = "?";              \
			cuGetErrorName(cu_r_, &cu_n_);                      \
			cuGetErrorString(cu_r_, &cu_s_);                    \
			fprintf(stderr, "%s:%d: %s failed: %d %s (%s)\n",   \
				__FILE__, __LINE__, #call, (int)cu_r_,      \
				cu_n_, cu_s_);                              \
			exit(1);                                            \
		}                                                           \
	} while (0)

/* Read a whole file (a cubin, fatbin or PTX), NUL-terminated; exits on error. */
static void *read_file_or_die(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	long n;
	char *buf;

	if (!f || fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 ||
	    fseek(f, 0, SEEK_SET) != 0) {
		perror(path);
		exit(1);
	}
	buf = (char *)malloc((size_t)n + 1);
	if (!buf || fread(buf, 1, (size_t)n, f) != (size_t)n) {
		fprintf(stderr, "%s: read failed\n", path);
		exit(1);
	}
	buf[n] = 0;
	fclose(f);
	if (len)
		*len = (size_t)n;
	return buf;
}

#endif
