/*
 * mixed_pairs.cu - compute-bound and memory-bound kernels side by side
 * (issue 3, item 6, app 6).
 *
 * What it proves: a compute-bound kernel (a long FMA recurrence on a little
 * data, 32 blocks) and a memory-bound one (a float4 triad streaming 96 MB,
 * 16 blocks) use different parts of an SM; run concurrently they overlap
 * almost perfectly, run in order each leaves the other resource idle.  Six
 * independent pairs (each kernel its own buffers) give a scheduler plenty
 * to overlap; which kernels land together decides how well.
 *
 * Work per pair p (ROI: 2 passes over the 6 pairs, each overwriting):
 *   k_compute(cin_p -> cout_p): 32 blocks x 256 threads x 4 elements, 3000
 *       iterations of a coupled FMA recurrence per element
 *   k_triad(x_p, y_p -> z_p): z = x + 0.5 y over 8 Mi floats, float4, 16 blocks
 *
 * plain:  C0 M0 C1 M1 ... C5 M5 per pass on the default stream.
 * expert: kernel k of the 12 always on stream k % S (S = 8 by default), so
 *         a compute kernel's neighbours are memory kernels; no cross-stream
 *         dependency exists, one fork and one join per ROI.
 *
 * Check: 256 sampled elements of every cout (the recurrence replayed on the
 * CPU with fmaf) and 65536 sampled elements of every z; checksum over all
 * outputs.
 */
#include "common.h"

#define NP 6
#define CBLOCKS 32
#define MBLOCKS 16
#define CN (CBLOCKS * APP_THREADS * 4)
#ifndef ITERS
#define ITERS 3000
#endif
#ifndef MN
#define MN (8L << 20)
#endif
#ifndef PASSES
#define PASSES 2
#endif

__global__ void k_compute(const float *in, float *out, int n, int iters)
{
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
		float a = in[i], b = fmaf(in[i], 0.5f, 0.25f);

		for (int it = 0; it < iters; it++) {
			a = fmaf(a, 0.9995f, 0.0003f * b);
			b = fmaf(b, 0.9993f, 0.0004f * a);
		}
		out[i] = a + b;
	}
}

__global__ void k_triad(const float4 *x, const float4 *y, float4 *z, long n4)
{
	for (long i = (long)blockIdx.x * blockDim.x + threadIdx.x; i < n4;
	     i += (long)gridDim.x * blockDim.x) {
		float4 a = x[i], b = y[i], c;

		c.x = fmaf(0.5f, b.x, a.x);
		c.y = fmaf(0.5f, b.y, a.y);
		c.z = fmaf(0.5f, b.z, a.z);
		c.w = fmaf(0.5f, b.w, a.w);
		z[i] = c;
	}
}

struct pair {
	float *cin, *cout, *x, *y, *z;
};

struct ctx {
	struct pair p[NP];
	struct app_streams st;
	cudaStream_t roi;
};

static void launch(struct pair *p, int which, cudaStream_t s)
{
	if (which == 0)
		k_compute<<<CBLOCKS, APP_THREADS, 0, s>>>(p->cin, p->cout, CN, ITERS);
	else
		k_triad<<<MBLOCKS, APP_THREADS, 0, s>>>((const float4 *)p->x, (const float4 *)p->y,
							(float4 *)p->z, MN / 4);
	CK_LAUNCH();
}

/* What people write: default stream (s = 0), pairs in order. */
static void roi_plain(void *p)
{
	struct ctx *x = (struct ctx *)p;

	for (int pass = 0; pass < PASSES; pass++)
		for (int i = 0; i < NP; i++) {
			launch(&x->p[i], 0, 0);
			launch(&x->p[i], 1, 0);
		}
}

static void roi_expert(void *p)
{
	struct ctx *x = (struct ctx *)p;
	int used = x->st.n < 2 * NP ? x->st.n : 2 * NP;

	app_fork(&x->st, x->roi, used);
	for (int pass = 0; pass < PASSES; pass++)
		for (int k = 0; k < 2 * NP; k++)
			launch(&x->p[k / 2], k % 2, x->st.s[k % x->st.n]);
	app_join(&x->st, x->roi, used);
}

static float ref_compute(float v)
{
	float a = v, b = fmaf(v, 0.5f, 0.25f);

	for (int it = 0; it < ITERS; it++) {
		a = fmaf(a, 0.9995f, 0.0003f * b);
		b = fmaf(b, 0.9993f, 0.0004f * a);
	}
	return a + b;
}

int main(int argc, char **argv)
{
	struct app_opts o;
	struct ctx x;
	struct app_check chk = { 0, 0, "" };
	uint64_t hash = 0;

	app_parse(&o, "mixed_pairs", argc, argv);
	CK(cudaSetDevice(0));
	memset(&x, 0, sizeof(x));
	for (int i = 0; i < NP; i++) {
		struct pair *p = &x.p[i];

		p->cin = app_upload_rand(CN, 800 + i, -1.f, 1.f);
		p->x = app_upload_rand(MN, 810 + i, -1.f, 1.f);
		p->y = app_upload_rand(MN, 820 + i, -1.f, 1.f);
		CK(cudaMalloc(&p->cout, CN * sizeof(float)));
		CK(cudaMalloc(&p->z, MN * sizeof(float)));
	}
	x.roi = app_main_stream(&o);
	if (o.expert)
		app_streams_init(&x.st, o.streams);

	app_time(&o, o.expert ? roi_expert : roi_plain, &x, x.roi);

	CK(cudaDeviceSynchronize());
	for (int i = 0; i < NP; i++) {
		struct pair *p = &x.p[i];
		float *c = app_download(p->cout, CN), *z = app_download(p->z, MN);

		hash = app_fnv1a(c, CN * sizeof(float), hash);
		hash = app_fnv1a(z, MN * sizeof(float), hash);
		for (int s = 0; s < 256; s++) {
			uint32_t j = app_hash(830 + i, s) % CN;
			float want = ref_compute(app_frand(800 + i, j, -1.f, 1.f));

			app_expect(&chk, app_close(c[j], want, fabs(want), 1e-5, 1e-6), "cout", j, c[j],
				   want);
		}
		for (int s = 0; s < 65536; s++) {
			uint32_t j = app_hash(840 + i, s) % MN;
			float want = fmaf(0.5f, app_frand(820 + i, j, -1.f, 1.f),
					  app_frand(810 + i, j, -1.f, 1.f));

			app_expect(&chk, z[j] == want, "z", j, z[j], want);
		}
		free(c);
		free(z);
		CK(cudaFree(p->cin));
		CK(cudaFree(p->cout));
		CK(cudaFree(p->x));
		CK(cudaFree(p->y));
		CK(cudaFree(p->z));
	}
	if (o.expert)
		app_streams_destroy(&x.st);
	app_finish(&o, &chk, hash);
	return 0;
}
