/*
 * ctxonly.cu - the CUDA context's own device footprint, for bench/memory.sh
 * (issue 5 (a)): its peaks are nvidia-smi's memory.used during a run minus
 * the idle value, which includes the context that no memory mode can
 * remove.  This program is measured the same way so the script can report
 * the memory objects' peak beside the whole-process one.
 *
 * It does what every bench/apps program does before its first allocation,
 * and allocates nothing: cudaSetDevice(0), the runtime's context created
 * by cudaFree(0), the embedded module (nvcc's fatbin, built with the apps'
 * flags) loaded by launching one of its kernels (lazy module loading loads
 * a module at its first launch), the timing harness's two events recorded
 * and synchronized; then it holds the context --hold-ms (500) so a 20 ms
 * sampler sees it, and exits.
 *
 *   ctxonly [--hold-ms N]
 *   Output: CTXONLY ok hold_ms=N
 */
#include "../apps/common.h"

#include <time.h>

/* Reads and writes nothing when n is 0; its launch loads the module. */
__global__ void k_nop(float *p, int n)
{
	if ((int)threadIdx.x < n)
		p[threadIdx.x] = 0.f;
}

int main(int argc, char **argv)
{
	int hold_ms = 500;
	cudaEvent_t a, b;
	struct timespec ts;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--hold-ms") && i + 1 < argc) {
			hold_ms = app_int_arg("ctxonly", argv[++i], 0, 60000);
		} else {
			fprintf(stderr, "usage: ctxonly [--hold-ms N]\n");
			return 2;
		}
	}
	CK(cudaSetDevice(0));
	CK(cudaFree(0));
	CK(cudaEventCreate(&a));
	CK(cudaEventCreate(&b));
	CK(cudaEventRecord(a, 0));
	k_nop<<<1, 32>>>(NULL, 0);
	CK_LAUNCH();
	CK(cudaEventRecord(b, 0));
	CK(cudaEventSynchronize(b));
	CK(cudaDeviceSynchronize());
	ts.tv_sec = hold_ms / 1000;
	ts.tv_nsec = (long)(hold_ms % 1000) * 1000000L;
	nanosleep(&ts, NULL);
	CK(cudaEventDestroy(a));
	CK(cudaEventDestroy(b));
	printf("CTXONLY ok hold_ms=%d\n", hold_ms);
	return 0;
}
