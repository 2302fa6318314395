/* Fixture for test-ptx-readonly (module-scope variables); see README. */
#include <cstdio>
__device__ unsigned int retirement;
__device__ float table[64] = {1.f, 2.f};
__device__ int *slot_ptr;
__constant__ float coef[4];
__device__ __noinline__ void bump_slot(int v) { *slot_ptr += v; }
extern "C" __global__ void uses_counter(float *out, const float *in, int n)
{
	unsigned t = atomicInc(&retirement, gridDim.x);
	if (t == gridDim.x - 1) out[0] = in[0];
}
extern "C" __global__ void reads_table(float *out, int i) { out[i] = table[i] * coef[0]; }
extern "C" __global__ void plain(float *out, const float *in) { out[threadIdx.x] = in[threadIdx.x] * coef[1]; }
extern "C" __global__ void prints(int v) { printf("v=%d\n", v); }
extern "C" __global__ void calls_helper(int v) { bump_slot(v); }
extern "C" __global__ void reset() { retirement = 0; }
