/*
 * cublas_batched.cu - cuBLAS's batched GEMM, which takes its matrices
 * through arrays of pointers in device memory, under the stream scheduler.
 *
 * What it is for: the kernel cublasSgemmBatched launches is given the three
 * pointer arrays, not the matrices; it loads the matrices' addresses from
 * them.  kmux orders kernels by what their parameters point to, so unless
 * it follows the arrays (src/preload/ptrtab.h: tables the host uploaded) it
 * may run the GEMM beside, or before, the kernels that write its inputs.
 * `kmux verify --streams N` against `KMUX_PTRTAB=0 kmux verify ...` shows
 * which.
 *
 * Work: NB pairs of N x N matrices, each its own cudaMalloc; the pointer
 * arrays uploaded once with cudaMemcpy.  Each round: a slow kernel per
 * matrix rewrites A[i] (one launch each, independent of one another), one
 * cublasSgemmBatched C[i] = A[i] B[i], a kernel per matrix rewrites B[i]
 * from C[i] (so the next GEMM must also wait for it), and the host reads
 * every C[i] back.  Checked against a float64 CPU replay; prints each
 * round's sum with 6 significant digits.  Exits nonzero on a mismatch or
 * a CUDA/cuBLAS error.
 *
 * CUBLAS_BATCHED_TABLE says how the arrays reach the device:
 *   upload  (default) one cudaMemcpy from the host each
 *   staged  uploaded into staging buffers, then copied device to device
 *           into the arrays the GEMM is given
 *   large   each array LARGE entries (80 KiB: a batch of 10,240's size),
 *           the NB pointers repeated; the GEMM uses the first NB
 */
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <cublas_v2.h>
#include <cuda_runtime.h>

#define NB 16
#define N 128
#define ROUNDS 4
#define LARGE 10240
#define SPIN_CYCLES 2000000LL	/* ~1.1 ms at the H200's 1.76 GHz */

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
	fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(e_)); \
	exit(2); } } while (0)
#define CB(x) do { cublasStatus_t s_ = (x); if (s_ != CUBLAS_STATUS_SUCCESS) { \
	fprintf(stderr, "%s:%d: cuBLAS status %d\n", __FILE__, __LINE__, (int)s_); \
	exit(2); } } while (0)

/*
 * a = 0.5 a + r / (i % 97 + 1), one block, after spinning SPIN_CYCLES (about
 * a millisecond): a writer slow enough that a GEMM not ordered after it
 * reads a half-written A.
 */
__global__ void k_rewrite_a(float *a, int n, float r)
{
	long long t0 = clock64();

	while (clock64() - t0 < SPIN_CYCLES)
		;
	for (int i = threadIdx.x; i < n; i += blockDim.x)
		a[i] = 0.5f * a[i] + r / (float)(i % 97 + 1);
}

/* b = 0.25 tanh(c) */
__global__ void k_rewrite_b(float *b, const float *c, int n)
{
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n;
	     i += gridDim.x * blockDim.x)
		b[i] = 0.25f * tanhf(c[i]);
}

int main()
{
	const int nn = N * N;
	std::vector<float *> a(NB), b(NB), c(NB);
	std::vector<std::vector<double>> ha(NB), hb(NB), hc(NB);
	std::vector<float> tmp(nn);
	float **da, **db, **dc, one = 1.f, zero = 0.f;
	cublasHandle_t h;
	int bad = 0;

	CK(cudaSetDevice(0));
	CB(cublasCreate(&h));
	srand(77);
	for (int i = 0; i < NB; i++) {
		CK(cudaMalloc(&a[i], nn * sizeof(float)));
		CK(cudaMalloc(&b[i], nn * sizeof(float)));
		CK(cudaMalloc(&c[i], nn * sizeof(float)));
		ha[i].resize(nn);
		hb[i].resize(nn);
		hc[i].resize(nn);
		for (int j = 0; j < nn; j++) {
			tmp[j] = (float)(rand() % 2001 - 1000) / 8000.f;
			ha[i][j] = tmp[j];
		}
		CK(cudaMemcpy(a[i], tmp.data(), nn * sizeof(float), cudaMemcpyHostToDevice));
		for (int j = 0; j < nn; j++) {
			tmp[j] = (float)(rand() % 2001 - 1000) / 8000.f;
			hb[i][j] = tmp[j];
		}
		CK(cudaMemcpy(b[i], tmp.data(), nn * sizeof(float), cudaMemcpyHostToDevice));
	}
	/* The pointer arrays, built on the host. */
	const char *how = getenv("CUBLAS_BATCHED_TABLE");
	int len = NB;

	if (!how)
		how = "upload";
	if (!strcmp(how, "large"))
		len = LARGE;
	else if (strcmp(how, "upload") && strcmp(how, "staged")) {
		fprintf(stderr, "CUBLAS_BATCHED_TABLE=%s: upload, staged or large\n", how);
		return 2;
	}
	std::vector<float *> ta(len), tb(len), tc(len);
	for (int i = 0; i < len; i++) {
		ta[i] = a[i % NB];
		tb[i] = b[i % NB];
		tc[i] = c[i % NB];
	}
	size_t bytes = len * sizeof(float *);
	CK(cudaMalloc(&da, bytes));
	CK(cudaMalloc(&db, bytes));
	CK(cudaMalloc(&dc, bytes));
	if (!strcmp(how, "staged")) {
		float **sa, **sb, **sc;

		CK(cudaMalloc(&sa, bytes));
		CK(cudaMalloc(&sb, bytes));
		CK(cudaMalloc(&sc, bytes));
		CK(cudaMemcpy(sa, ta.data(), bytes, cudaMemcpyHostToDevice));
		CK(cudaMemcpy(sb, tb.data(), bytes, cudaMemcpyHostToDevice));
		CK(cudaMemcpy(sc, tc.data(), bytes, cudaMemcpyHostToDevice));
		CK(cudaMemcpy(da, sa, bytes, cudaMemcpyDeviceToDevice));
		CK(cudaMemcpy(db, sb, bytes, cudaMemcpyDeviceToDevice));
		CK(cudaMemcpy(dc, sc, bytes, cudaMemcpyDeviceToDevice));
	} else {
		CK(cudaMemcpy(da, ta.data(), bytes, cudaMemcpyHostToDevice));
		CK(cudaMemcpy(db, tb.data(), bytes, cudaMemcpyHostToDevice));
		CK(cudaMemcpy(dc, tc.data(), bytes, cudaMemcpyHostToDevice));
	}

	for (int r = 0; r < ROUNDS; r++) {
		double sum = 0, want = 0;

		for (int i = 0; i < NB; i++)
			k_rewrite_a<<<1, 128>>>(a[i], nn, (float)(r + 1));
		CK(cudaGetLastError());
		/* Column-major C = A B for every i, through the arrays. */
		CB(cublasSgemmBatched(h, CUBLAS_OP_N, CUBLAS_OP_N, N, N, N, &one,
				      (const float **)da, N, (const float **)db, N,
				      &zero, dc, N, NB));
		for (int i = 0; i < NB; i++)
			k_rewrite_b<<<8, 256>>>(b[i], c[i], nn);
		CK(cudaGetLastError());
		for (int i = 0; i < NB; i++) {
			CK(cudaMemcpy(tmp.data(), c[i], nn * sizeof(float),
				      cudaMemcpyDeviceToHost));
			for (int j = 0; j < nn; j++)
				sum += tmp[j];
			/* The same on the CPU, in float64. */
			for (int j = 0; j < nn; j++)
				ha[i][j] = 0.5 * ha[i][j] + (r + 1) / (double)(j % 97 + 1);
			for (int col = 0; col < N; col++)
				for (int row = 0; row < N; row++) {
					double s = 0;

					for (int k = 0; k < N; k++)
						s += ha[i][k * N + row] * hb[i][col * N + k];
					hc[i][col * N + row] = s;
				}
			for (int j = 0; j < nn; j++) {
				want += hc[i][j];
				if (fabs(tmp[j] - hc[i][j]) > 1e-3 * (1 + fabs(hc[i][j])))
					bad++;
				hb[i][j] = 0.25 * tanh(hc[i][j]);
			}
		}
		printf("round %d sum %.6e (cpu %.6e)\n", r, sum, want);
	}
	CK(cudaDeviceSynchronize());
	printf("cublas_batched nb=%d n=%d rounds=%d\n", NB, N, ROUNDS);
	if (bad) {
		printf("cublas_batched: MISMATCH in %d elements\n", bad);
		return 1;
	}
	printf("cublas_batched: reference check OK\n");
	return 0;
}
