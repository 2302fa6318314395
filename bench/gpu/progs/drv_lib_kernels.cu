/*
 * drv_lib_kernels.cu - device code for drv_api.c, built with `nvcc -ptx` and
 * loaded (JIT-compiled by the driver) with cuLibraryLoadData: the launch
 * then passes a CUkernel, not a CUfunction, to cuLaunchKernel.
 */
extern "C" __global__ void drv_iota(unsigned *out, unsigned n, unsigned mul)
{
	unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		out[i] = (i * mul) ^ (i >> 3);
}
