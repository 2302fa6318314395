/*
 * symbol_ptr.cu - a `__device__` variable reached two ways, for
 * bench/gpu/symbols-check.sh: k_name names it, k_ptr is given its address
 * (cudaGetSymbolAddress) as a parameter.  They alternate on the default
 * stream, ROUNDS times each, each spinning first so that two of them side
 * by side would overlap; the result depends on their order:
 *   k_name: state = state * 3 + i      k_ptr: *p = *p * 5 + 1
 * Prints "state S" and "order ok" when S is what program order gives
 * (computed on the host), else "order WRONG" (exit 1).
 */
#include <cstdio>
#include <cstdlib>

#define ROUNDS 24
#define SPIN 200000

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
	fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, \
		cudaGetErrorString(e_)); exit(1); } } while (0)

__device__ unsigned state;

__device__ void spin(void)
{
	long long t0 = clock64();

	while (clock64() - t0 < SPIN)
		;
}

__global__ void k_name(unsigned i)
{
	spin();
	state = state * 3 + i;
}

__global__ void k_ptr(unsigned *p)
{
	spin();
	*p = *p * 5 + 1;
}

int main(void)
{
	unsigned seed = 7, s = seed, got = 0, *p = NULL;

	CK(cudaGetSymbolAddress((void **)&p, state));
	CK(cudaMemcpyToSymbol(state, &seed, sizeof(seed)));
	for (unsigned i = 0; i < ROUNDS; i++) {
		k_name<<<1, 1>>>(i + 1);
		k_ptr<<<1, 1>>>(p);
		s = (s * 3 + i + 1) * 5 + 1;
	}
	CK(cudaGetLastError());
	CK(cudaMemcpyFromSymbol(&got, state, sizeof(got)));
	printf("state %u\n", got);
	printf(got == s ? "order ok\n" : "order WRONG\n");
	return got == s ? 0 : 1;
}
