/*
 * texobj.cu - kernels that reach memory through texture and surface
 * objects, on the default stream, under the stream scheduler; and CUDA
 * arrays under a memory quota.
 *
 * What it is for: a kernel given a cudaTextureObject_t or
 * cudaSurfaceObject_t reads or writes memory no pointer parameter names.
 * kmux makes such a launch a barrier (src/preload/texobj.h); without that
 * the reader below could run beside the kernel that writes what it reads.
 *
 *   texobj order   ROUNDS rounds: NB slow kernels each write their own
 *                  buffer, then NB kernels each read one buffer through a
 *                  texture object over it (linear memory) into an output;
 *                  then a kernel writes an array through a surface object
 *                  and one reads it through a texture object.  Every
 *                  output is read back and checked; prints one checksum a
 *                  round.  Exit 1 on a mismatch.
 *   texobj quota   cudaMalloc3DArray of 64 MiB, then of 96 MiB; what
 *                  cudaMemGetInfo says between; the first freed, the
 *                  second again.  Prints "NAME err=E" and "free MiB" lines
 *                  (run under KMUX_MEM_QUOTA=128M: the 96 MiB one must fail
 *                  with cudaErrorMemoryAllocation (2) until the first is
 *                  freed).
 */
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <cuda_runtime.h>

#define NB 8
#define N (1 << 16)
#define ROUNDS 12
#define AW 1024		/* the array: AW x N / AW (a 1D one that long is too wide) */

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
	fprintf(stderr, "texobj: %s: %s\n", #x, cudaGetErrorString(e_)); \
	exit(2); } } while (0)

__global__ void slow_write(float *p, int n, float v, long long spin)
{
	long long t0 = clock64();

	while (clock64() - t0 < spin)
		;
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n;
	     i += gridDim.x * blockDim.x)
		p[i] = v + (float)(i & 1023);
}

__global__ void tex_read(cudaTextureObject_t t, float *out, int n)
{
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n;
	     i += gridDim.x * blockDim.x)
		out[i] = 2.0f * tex1Dfetch<float>(t, i);
}

__global__ void surf_write(cudaSurfaceObject_t s, int n, float v,
			   long long spin)
{
	long long t0 = clock64();

	while (clock64() - t0 < spin)
		;
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n;
	     i += gridDim.x * blockDim.x)
		surf2Dwrite(v + (float)(i & 1023), s,
			    (i % AW) * (int)sizeof(float), i / AW);
}

__global__ void arr_read(cudaTextureObject_t t, float *out, int n)
{
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n;
	     i += gridDim.x * blockDim.x)
		out[i] = 3.0f * tex2D<float>(t, (float)(i % AW) + 0.5f,
					     (float)(i / AW) + 0.5f);
}

static cudaTextureObject_t tex_over_linear(float *p)
{
	cudaResourceDesc r;
	cudaTextureDesc td;
	cudaTextureObject_t t;

	memset(&r, 0, sizeof(r));
	memset(&td, 0, sizeof(td));
	r.resType = cudaResourceTypeLinear;
	r.res.linear.devPtr = p;
	r.res.linear.desc = cudaCreateChannelDesc<float>();
	r.res.linear.sizeInBytes = N * sizeof(float);
	td.readMode = cudaReadModeElementType;
	CK(cudaCreateTextureObject(&t, &r, &td, NULL));
	return t;
}

static int order(void)
{
	float *buf[NB], *out[NB + 1];
	cudaTextureObject_t tex[NB], atex;
	cudaSurfaceObject_t surf;
	cudaChannelFormatDesc cd = cudaCreateChannelDesc<float>();
	cudaArray_t arr;
	cudaResourceDesc r;
	cudaTextureDesc td;
	std::vector<float> h(N);
	long long spin = 200000;	/* about 0.1 ms at 1.98 GHz */
	int bad = 0;

	for (int i = 0; i <= NB; i++) {
		CK(cudaMalloc(&out[i], N * sizeof(float)));
		if (i < NB) {
			CK(cudaMalloc(&buf[i], N * sizeof(float)));
			CK(cudaMemset(buf[i], 0, N * sizeof(float)));
			tex[i] = tex_over_linear(buf[i]);
		}
	}
	CK(cudaMallocArray(&arr, &cd, AW, N / AW, cudaArraySurfaceLoadStore));
	memset(&r, 0, sizeof(r));
	r.resType = cudaResourceTypeArray;
	r.res.array.array = arr;
	CK(cudaCreateSurfaceObject(&surf, &r));
	memset(&td, 0, sizeof(td));
	td.readMode = cudaReadModeElementType;
	td.filterMode = cudaFilterModePoint;
	td.addressMode[0] = cudaAddressModeClamp;
	td.addressMode[1] = cudaAddressModeClamp;
	CK(cudaCreateTextureObject(&atex, &r, &td, NULL));
	CK(cudaDeviceSynchronize());

	for (int round = 0; round < ROUNDS; round++) {
		double sum = 0;

		for (int i = 0; i < NB; i++)
			slow_write<<<4, 256>>>(buf[i], N,
					       (float)(round * 100 + i), spin);
		for (int i = 0; i < NB; i++)
			tex_read<<<32, 256>>>(tex[i], out[i], N);
		surf_write<<<4, 256>>>(surf, N, (float)(round * 100 + 50),
				       spin);
		arr_read<<<32, 256>>>(atex, out[NB], N);
		for (int i = 0; i <= NB; i++) {
			float v = i < NB ? (float)(round * 100 + i) :
				  (float)(round * 100 + 50);
			float k = i < NB ? 2.0f : 3.0f;

			CK(cudaMemcpy(h.data(), out[i], N * sizeof(float),
				      cudaMemcpyDeviceToHost));
			for (int j = 0; j < N; j++) {
				float want = k * (v + (float)(j & 1023));

				if (h[j] != want) {
					if (bad < 5)
						fprintf(stderr, "texobj: round "
							"%d output %d word %d: "
							"%g, want %g\n", round,
							i, j, h[j], want);
					bad++;
				}
				sum += h[j];
			}
		}
		printf("round %d sum %.6g\n", round, sum);
	}
	CK(cudaDestroyTextureObject(atex));
	CK(cudaDestroySurfaceObject(surf));
	CK(cudaFreeArray(arr));
	for (int i = 0; i <= NB; i++) {
		if (i < NB) {
			CK(cudaDestroyTextureObject(tex[i]));
			CK(cudaFree(buf[i]));
		}
		CK(cudaFree(out[i]));
	}
	printf("%s (%d wrong words)\n", bad ? "MISMATCH" : "ok", bad);
	return bad ? 1 : 0;
}

static void free_line(const char *tag)
{
	size_t f = 0, t = 0;

	CK(cudaMemGetInfo(&f, &t));
	printf("%s free %zu MiB of %zu\n", tag, f >> 20, t >> 20);
}

static int quota(void)
{
	cudaChannelFormatDesc cd = cudaCreateChannelDesc<float4>();
	cudaArray_t a = NULL, b = NULL;
	cudaError_t e;

	free_line("start");
	/* float4 1024 x 1024 x 4: 64 MiB; x 6: 96 MiB. */
	e = cudaMalloc3DArray(&a, &cd, make_cudaExtent(1024, 1024, 4));
	printf("array64 err=%d\n", (int)e);
	free_line("after64");
	e = cudaMalloc3DArray(&b, &cd, make_cudaExtent(1024, 1024, 6));
	printf("array96 err=%d\n", (int)e);
	(void)cudaGetLastError();
	if (e == cudaSuccess)
		CK(cudaFreeArray(b));
	if (a)
		CK(cudaFreeArray(a));
	free_line("freed");
	e = cudaMalloc3DArray(&b, &cd, make_cudaExtent(1024, 1024, 6));
	printf("array96-again err=%d\n", (int)e);
	if (e == cudaSuccess)
		CK(cudaFreeArray(b));
	free_line("end");
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 2 && !strcmp(argv[1], "order"))
		return order();
	if (argc == 2 && !strcmp(argv[1], "quota"))
		return quota();
	fprintf(stderr, "usage: texobj order|quota\n");
	return 2;
}
