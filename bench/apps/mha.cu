/*
 * mha.cu - multi-head attention built from small kernels (issue 3, item 6,
 * app 5).
 *
 * What it proves: the per-head kernels of attention (QK^T, softmax, AV) are
 * independent across heads, each fills 32 of 132 SMs, and a merge over all
 * heads joins them.  As attention code is written, the heads are slices of
 * packed tensors: Q, K, V and O are each ONE allocation [H][L][D], the
 * scores ONE allocation [H][L][L], and each head's kernels get pointers to
 * their slices.  Q, K and V are read-only.  A scheduler that tracks
 * dependencies per allocation (and treats kernel arguments as read-write)
 * sees every head conflict with every other and serializes them; one that
 * uses the pointer values (sub-allocation ranges) or proves read-only
 * arguments can overlap the heads.  The expert knows the slices are
 * disjoint.
 *
 * Work: H = 16 heads, L = 2048 tokens, D = 64, FP32.  Per head h:
 *   S_h = (Q_h K_h^T) / sqrt(D)   k_qk: 64x64 tiles, 32 blocks
 *   P_h = softmax_rows(S_h)       k_softmax: one warp per row, in place, 32 blocks
 *   O_h = P_h V_h                 k_av: 64x64 tiles over K = L, 32 blocks
 * then out = sum_h O_h / (h + 1)  k_merge (joins all heads), 32 blocks.
 * ROI: 2 forward passes (the same inputs; the second overwrites the first).
 *
 * plain:  per pass: for h: qk, softmax, av; then merge; default stream.
 * expert: head h on stream h % S; fork from / join into the ROI stream
 *         around the heads of each pass; merge on the ROI stream (the next
 *         pass's heads start after it: they overwrite O, which it reads).
 *
 * Check: 8 rows of `out` recomputed on the CPU in double precision (all 16
 * heads, full softmax); checksum over `out`.
 */
#include "common.h"

#define NH 16
#ifndef L
#define L 2048
#endif
#define D 64
#define BLOCKS 32
#ifndef PASSES
#define PASSES 2
#endif
#define T 64		/* output tile */
#define BK 16		/* k tile */
#define CHECK_ROWS 8

/*
 * One 64x64 tile of C = alpha * A * op(B), A row-major [M][K] (lda), op(B) =
 * B^T for B row-major [N][K] (BT) or B row-major [K][N].  256 threads;
 * thread (ty, tx) owns rows ty + 16i and columns tx + 16j, i, j < 4.
 */
template <bool BT>
__device__ void tile64(const float *A, int lda, const float *B, int ldb, float *C, int ldc,
		       int K, int tm, int tn, float alpha, float (*As)[T + 4], float (*Bs)[T + 4])
{
	int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
	float acc[4][4] = { { 0.f } };

	for (int k0 = 0; k0 < K; k0 += BK) {
		for (int i = threadIdx.x; i < T * BK; i += blockDim.x) {
			int r = i / BK, c = i % BK;	/* row r of the tile, k c */

			As[c][r] = A[(size_t)(tm * T + r) * lda + k0 + c];
			if (BT) {
				Bs[c][r] = B[(size_t)(tn * T + r) * ldb + k0 + c];
			} else {
				int kr = i / T, nc = i % T;

				Bs[kr][nc] = B[(size_t)(k0 + kr) * ldb + tn * T + nc];
			}
		}
		__syncthreads();
#pragma unroll
		for (int k = 0; k < BK; k++) {
			float a[4], b[4];

			for (int i = 0; i < 4; i++) {
				a[i] = As[k][ty + 16 * i];
				b[i] = Bs[k][tx + 16 * i];
			}
			for (int i = 0; i < 4; i++)
				for (int j = 0; j < 4; j++)
					acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
		}
		__syncthreads();
	}
	for (int i = 0; i < 4; i++)
		for (int j = 0; j < 4; j++)
			C[(size_t)(tm * T + ty + 16 * i) * ldc + tn * T + tx + 16 * j] = alpha * acc[i][j];
}

/* S = scale * Q K^T for one head: L x L, tiles spread over the grid. */
__global__ void k_qk(const float *Q, const float *K, float *S, float scale)
{
	__shared__ float As[BK][T + 4], Bs[BK][T + 4];
	const int nt = L / T;

	for (int t = blockIdx.x; t < nt * nt; t += gridDim.x)
		tile64<true>(Q, D, K, D, S, L, D, t / nt, t % nt, scale, As, Bs);
}

/* Row-wise softmax of an L x L matrix, in place; one warp per row. */
__global__ void k_softmax(float *S)
{
	int lane = threadIdx.x & 31;
	int warp = (blockIdx.x * blockDim.x + threadIdx.x) >> 5;
	int nwarps = (gridDim.x * blockDim.x) >> 5;

	for (int r = warp; r < L; r += nwarps) {
		float *row = S + (size_t)r * L;
		float m = -INFINITY, s = 0.f;

		for (int j = lane; j < L; j += 32)
			m = fmaxf(m, row[j]);
		for (int o = 16; o > 0; o >>= 1)
			m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
		for (int j = lane; j < L; j += 32)
			s += expf(row[j] - m);
		for (int o = 16; o > 0; o >>= 1)
			s += __shfl_xor_sync(0xffffffffu, s, o);
		for (int j = lane; j < L; j += 32)
			row[j] = expf(row[j] - m) / s;
	}
}

/* O = P V for one head: L x D (32 tiles of 64x64), K = L. */
__global__ void k_av(const float *P, const float *V, float *O)
{
	__shared__ float As[BK][T + 4], Bs[BK][T + 4];
	const int nt = (L / T) * (D / T);

	for (int t = blockIdx.x; t < nt; t += gridDim.x)
		tile64<false>(P, L, V, D, O, D, L, t / (D / T), t % (D / T), 1.f, As, Bs);
}

/* out = sum_h O_h / (h + 1), in head order. */
__global__ void k_merge(const float *O, float *out)
{
	for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < (size_t)L * D;
	     i += (size_t)gridDim.x * blockDim.x) {
		float acc = 0.f;

		for (int h = 0; h < NH; h++)
			acc += O[(size_t)h * L * D + i] / (float)(h + 1);
		out[i] = acc;
	}
}

struct ctx {
	float *q, *k, *v;	/* [NH][L][D] each, one allocation each */
	float *s;		/* [NH][L][L] */
	float *o;		/* [NH][L][D] */
	float *out;		/* [L][D] */
	struct app_streams st;
	cudaStream_t roi;
};

static const float SCALE = 0.125f;	/* 1 / sqrt(D) */

static void head(struct ctx *x, int h, cudaStream_t s)
{
	size_t qo = (size_t)h * L * D, so = (size_t)h * L * L;

	k_qk<<<BLOCKS, APP_THREADS, 0, s>>>(x->q + qo, x->k + qo, x->s + so, SCALE);
	CK_LAUNCH();
	k_softmax<<<BLOCKS, APP_THREADS, 0, s>>>(x->s + so);
	CK_LAUNCH();
	k_av<<<BLOCKS, APP_THREADS, 0, s>>>(x->s + so, x->v + qo, x->o + qo);
	CK_LAUNCH();
}

/* What people write: every launch on the default stream (s = 0). */
static void roi_plain(void *p)
{
	struct ctx *x = (struct ctx *)p;

	for (int pass = 0; pass < PASSES; pass++) {
		for (int h = 0; h < NH; h++)
			head(x, h, 0);
		k_merge<<<BLOCKS, APP_THREADS>>>(x->o, x->out);
		CK_LAUNCH();
	}
}

static void roi_expert(void *p)
{
	struct ctx *x = (struct ctx *)p;
	int used = x->st.n < NH ? x->st.n : NH;

	for (int pass = 0; pass < PASSES; pass++) {
		app_fork(&x->st, x->roi, used);
		for (int h = 0; h < NH; h++)
			head(x, h, x->st.s[h % x->st.n]);
		app_join(&x->st, x->roi, used);
		k_merge<<<BLOCKS, APP_THREADS, 0, x->roi>>>(x->o, x->out);
		CK_LAUNCH();
	}
}

/* Row i of out on the host; *mag gets sum of |terms| for the tolerance. */
static void ref_row(const float *q, const float *k, const float *v, int i, double *row,
		    double *mag)
{
	double *p = (double *)app_xmalloc(L * sizeof(double));

	for (int d = 0; d < D; d++)
		row[d] = mag[d] = 0;
	for (int h = 0; h < NH; h++) {
		const float *qh = q + (size_t)h * L * D, *kh = k + (size_t)h * L * D,
			    *vh = v + (size_t)h * L * D;
		double m = -INFINITY, s = 0;

		for (int j = 0; j < L; j++) {
			double acc = 0;

			for (int d = 0; d < D; d++)
				acc += (double)qh[(size_t)i * D + d] * kh[(size_t)j * D + d];
			p[j] = acc * SCALE;
			m = p[j] > m ? p[j] : m;
		}
		for (int j = 0; j < L; j++) {
			p[j] = exp(p[j] - m);
			s += p[j];
		}
		for (int d = 0; d < D; d++) {
			double acc = 0, a = 0;

			for (int j = 0; j < L; j++) {
				acc += p[j] / s * vh[(size_t)j * D + d];
				a += fabs(p[j] / s * vh[(size_t)j * D + d]);
			}
			row[d] += acc / (h + 1);
			mag[d] += a / (h + 1);
		}
	}
	free(p);
}

int main(int argc, char **argv)
{
	const size_t nqkv = (size_t)NH * L * D;
	static const int rows[CHECK_ROWS] = { 0, 1, 2, L / 3 + 1, L / 2, 3 * L / 4 - 3, L - 2, L - 1 };
	struct app_opts o;
	struct ctx x;
	struct app_check chk = { 0, 0, "" };
	uint64_t hash;
	float *hq, *hk, *hv, *out;

	app_parse(&o, "mha", argc, argv);
	CK(cudaSetDevice(0));
	memset(&x, 0, sizeof(x));
	x.q = app_upload_rand(nqkv, 700, -1.f, 1.f);
	x.k = app_upload_rand(nqkv, 701, -1.f, 1.f);
	x.v = app_upload_rand(nqkv, 702, -1.f, 1.f);
	CK(cudaMalloc(&x.s, (size_t)NH * L * L * sizeof(float)));
	CK(cudaMalloc(&x.o, nqkv * sizeof(float)));
	CK(cudaMalloc(&x.out, (size_t)L * D * sizeof(float)));
	x.roi = app_main_stream(&o);
	if (o.expert)
		app_streams_init(&x.st, o.streams);

	app_time(&o, o.expert ? roi_expert : roi_plain, &x, x.roi);

	CK(cudaDeviceSynchronize());
	out = app_download(x.out, (size_t)L * D);
	hash = app_fnv1a(out, (size_t)L * D * sizeof(float), 0);
	hq = (float *)app_xmalloc(nqkv * sizeof(float));
	hk = (float *)app_xmalloc(nqkv * sizeof(float));
	hv = (float *)app_xmalloc(nqkv * sizeof(float));
	app_fill(hq, nqkv, 700, -1.f, 1.f);
	app_fill(hk, nqkv, 701, -1.f, 1.f);
	app_fill(hv, nqkv, 702, -1.f, 1.f);
	for (int r = 0; r < CHECK_ROWS; r++) {
		double want[D], mag[D];

		ref_row(hq, hk, hv, rows[r], want, mag);
		for (int d = 0; d < D; d++) {
			double got = out[(size_t)rows[r] * D + d];

			app_expect(&chk, app_close(got, want[d], mag[d], 1e-4, 1e-6), "out",
				   (long)rows[r] * D + d, got, want[d]);
		}
	}
	free(hq);
	free(hk);
	free(hv);
	free(out);
	CK(cudaFree(x.q));
	CK(cudaFree(x.k));
	CK(cudaFree(x.v));
	CK(cudaFree(x.s));
	CK(cudaFree(x.o));
	CK(cudaFree(x.out));
	if (o.expert)
		app_streams_destroy(&x.st);
	app_finish(&o, &chk, hash);
	return 0;
}
