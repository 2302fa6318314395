// demo-kernels.cu - the kernels of the `make demo` example, compiled to PTX
// (demo-kernels.ptx.h, committed) so the demo builds with a C compiler alone
// and the driver JIT-compiles them for whatever GPU is present.
// Regenerate: nvcc -ptx -arch=compute_75 demo-kernels.cu -o demo.ptx, then
// wrap it as a C string into demo-kernels-ptx.h (one quoted line per line).
extern "C" __global__ void vec_add(const float *a, const float *b, float *c, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		c[i] = a[i] + b[i];
}

extern "C" __global__ void scale(float *x, float s, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		x[i] *= s;
}

extern "C" __global__ void fill_u32(unsigned *p, unsigned v, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		p[i] = v;
}
