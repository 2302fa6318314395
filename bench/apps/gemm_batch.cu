/*
 * gemm_batch.cu - a batch of independent small GEMMs (issue 3, item 6, app 1).
 *
 * What it proves: independent kernels that each fill only 16-64 of the
 * H200's 132 SMs run one after another on the default stream and leave most
 * of the GPU idle; spreading them over streams should approach the
 * hand-written version.  This is the textbook case of HuntKTm/KeSCo.
 *
 * Work: 12 GEMMs C_g = A_g * B_g (row-major, FP32, hand-written 32x32-tile
 * kernel, 256 threads, 2x2 outputs per thread), K = 8192, shapes
 * 4 x (256x256: 64 blocks), 4 x (128x256: 32 blocks), 4 x (128x128: 16
 * blocks).  Every block does the same work (32x32 outputs over K), so all
 * kernels take about as long.  Each GEMM has its own A, B and C
 * allocations: the tasks share nothing.  The ROI runs the batch 3 times
 * (each pass overwrites C: the same GEMM of consecutive passes conflicts).
 *
 * plain:  for pass: for g: gemm<<<>>>(A_g, B_g, C_g) on the default stream.
 * expert: GEMM g always on stream g % S (S = --streams, default 8), so the
 *         passes of one GEMM stay ordered on one stream without events;
 *         one fork from and one join into the ROI stream.  This is how one
 *         writes a batch of independent tasks by hand; nothing is left to
 *         gain but the launch order (kept the same as plain).
 *
 * Check: 48 entries of every C against a double-precision CPU dot product
 * (relative to sum |a_k b_k|); checksum over all C.
 */
#include "common.h"

#define NG 12
#ifndef KDIM
#define KDIM 8192
#endif
#ifndef PASSES
#define PASSES 3
#endif
#define TILE 32
#define SAMPLES 48

/*
 * C[M x N] = A[M x K] * B[K x N]; M, N multiples of 32, K a multiple of 32.
 * Block (16x16 threads) computes the 32x32 tile at (blockIdx.y, blockIdx.x);
 * thread (ty, tx) owns rows ty, ty+16 and columns tx, tx+16 of it.
 */
__global__ void gemm_tile32(const float *A, const float *B, float *C, int M, int N, int K)
{
	__shared__ float As[TILE][TILE + 1];	/* As[k][m] */
	__shared__ float Bs[TILE][TILE + 1];	/* Bs[k][n] */
	int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
	int row0 = blockIdx.y * TILE, col0 = blockIdx.x * TILE;
	float c00 = 0.f, c01 = 0.f, c10 = 0.f, c11 = 0.f;

	(void)M;
	for (int k0 = 0; k0 < K; k0 += TILE) {
		for (int i = threadIdx.x; i < TILE * TILE; i += blockDim.x) {
			int r = i / TILE, c = i % TILE;

			As[c][r] = A[(size_t)(row0 + r) * K + k0 + c];
			Bs[r][c] = B[(size_t)(k0 + r) * N + col0 + c];
		}
		__syncthreads();
#pragma unroll 8
		for (int k = 0; k < TILE; k++) {
			float a0 = As[k][ty], a1 = As[k][ty + 16];
			float b0 = Bs[k][tx], b1 = Bs[k][tx + 16];

			c00 = fmaf(a0, b0, c00);
			c01 = fmaf(a0, b1, c01);
			c10 = fmaf(a1, b0, c10);
			c11 = fmaf(a1, b1, c11);
		}
		__syncthreads();
	}
	C[(size_t)(row0 + ty) * N + col0 + tx] = c00;
	C[(size_t)(row0 + ty) * N + col0 + tx + 16] = c01;
	C[(size_t)(row0 + ty + 16) * N + col0 + tx] = c10;
	C[(size_t)(row0 + ty + 16) * N + col0 + tx + 16] = c11;
}

struct gemm {
	int m, n;
	float *a, *b, *c;
};

struct ctx {
	struct gemm g[NG];
	struct app_streams st;
	cudaStream_t roi;
};

static void launch_gemm(const struct gemm *g, cudaStream_t s)
{
	dim3 grid(g->n / TILE, g->m / TILE);

	gemm_tile32<<<grid, APP_THREADS, 0, s>>>(g->a, g->b, g->c, g->m, g->n, KDIM);
	CK_LAUNCH();
}

/* What people write: one loop, default stream. */
static void roi_plain(void *p)
{
	struct ctx *x = (struct ctx *)p;

	for (int pass = 0; pass < PASSES; pass++)
		for (int i = 0; i < NG; i++) {
			struct gemm *g = &x->g[i];

			gemm_tile32<<<dim3(g->n / TILE, g->m / TILE), APP_THREADS>>>(
				g->a, g->b, g->c, g->m, g->n, KDIM);
			CK_LAUNCH();
		}
}

/* By hand: GEMM i on stream i % S for every pass; fork once, join once. */
static void roi_expert(void *p)
{
	struct ctx *x = (struct ctx *)p;
	int used = x->st.n < NG ? x->st.n : NG;

	app_fork(&x->st, x->roi, used);
	for (int pass = 0; pass < PASSES; pass++)
		for (int i = 0; i < NG; i++)
			launch_gemm(&x->g[i], x->st.s[i % x->st.n]);
	app_join(&x->st, x->roi, used);
}

int main(int argc, char **argv)
{
	static const int shape[3][2] = { { 256, 256 }, { 128, 256 }, { 128, 128 } };
	struct app_opts o;
	struct ctx x;
	struct app_check chk = { 0, 0, "" };
	uint64_t hash = 0;

	app_parse(&o, "gemm_batch", argc, argv);
	CK(cudaSetDevice(0));
	memset(&x, 0, sizeof(x));
	for (int i = 0; i < NG; i++) {
		struct gemm *g = &x.g[i];

		g->m = shape[i / 4][0];
		g->n = shape[i / 4][1];
		g->a = app_upload_rand((size_t)g->m * KDIM, 100 + i, -1.f, 1.f);
		g->b = app_upload_rand((size_t)KDIM * g->n, 200 + i, -1.f, 1.f);
		CK(cudaMalloc(&g->c, (size_t)g->m * g->n * sizeof(float)));
	}
	x.roi = app_main_stream(&o);
	if (o.expert)
		app_streams_init(&x.st, o.streams);

	app_time(&o, o.expert ? roi_expert : roi_plain, &x, x.roi);

	CK(cudaDeviceSynchronize());
	for (int i = 0; i < NG; i++) {
		struct gemm *g = &x.g[i];
		size_t nc = (size_t)g->m * g->n;
		float *c = app_download(g->c, nc);

		hash = app_fnv1a(c, nc * sizeof(float), hash);
		for (int s = 0; s < SAMPLES; s++) {
			uint32_t h = app_hash(900 + i, s);
			int r = (int)(h % (uint32_t)g->m), col = (int)((h >> 12) % (uint32_t)g->n);
			double want = 0, mag = 0;

			/* A and B regenerated on the host from their seeds */
			for (int k = 0; k < KDIM; k++) {
				double a = app_frand(100 + i, (uint32_t)((size_t)r * KDIM + k), -1.f, 1.f);
				double b = app_frand(200 + i, (uint32_t)((size_t)k * g->n + col), -1.f, 1.f);

				want += a * b;
				mag += fabs(a * b);
			}
			double got = c[(size_t)r * g->n + col];
			app_expect(&chk, app_close(got, want, mag, 1e-4, 1e-6), "C", i * 100000L + r * 1000 + col,
				   got, want);
		}
		free(c);
		CK(cudaFree(g->a));
		CK(cudaFree(g->b));
		CK(cudaFree(g->c));
	}
	if (o.expert)
		app_streams_destroy(&x.st);
	app_finish(&o, &chk, hash);
	return 0;
}
