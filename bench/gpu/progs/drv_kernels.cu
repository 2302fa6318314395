/*
 * drv_kernels.cu - device code for drv_api.c, built with `nvcc -fatbin`
 * (and `-cubin`) and loaded with cuModuleLoadData.  extern "C" keeps the
 * names unmangled so the trace check can look for them exactly.
 */

/* y = a*x + y: launched with kernelParams. */
extern "C" __global__ void drv_saxpy(float a, const float *x, float *y, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		y[i] = a * x[i] + y[i];
}

/*
 * y = y*s - x: launched with the `extra` CU_LAUNCH_PARAM_BUFFER_POINTER form.
 * The layout has padding on purpose: n @0, x @8, s @16, y @24 (32 bytes).
 */
extern "C" __global__ void drv_mix(int n, const float *x, float s, float *y)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		y[i] = y[i] * s - x[i];
}
