/*
 * stencil_dag.cu - a DAG of stencils and reductions with real dependencies
 * (issue 3, item 6, app 4).
 *
 * What it proves: a time-stepped simulation whose kernel graph has forks,
 * joins, side branches and every kind of hazard: read-after-write (stencil
 * -> coupling), write-after-read (the next step's stencil overwrites the
 * s buffers that this step's residuals and coupling read; ping-pong u
 * buffers are rewritten two steps later) and write-after-write (the 1-block
 * residual kernels of all fields write one shared history array, as
 * programs usually keep it).  A scheduler may overlap only what is truly
 * independent; kmux verify and the CPU check catch a lost dependency.
 *
 * Work: 4 fields u_f (1024x1024 FP32, two ping-pong buffers each).  A pass:
 *   u_f[0] = u0_f                      (cudaMemcpy device-to-device)
 *   3 steps, with p = step % 2:
 *     s_f = stencil5x5(u_f[p]) + reaction            4 independent, 16 blocks
 *     res[f][step] = sum |s_f - u_f[p]|              side branch, 16 + 1 block
 *     (u_a[1-p], u_b[1-p]) = couple(s_a, s_b)        joins pairs (0,1), (2,3)
 *   total = sum of all four fields                   joins everything
 * ROI: 2 passes (both compute the same thing from the same start).
 *
 * plain:  the above in order on the default stream.
 * expert: field f's stencil and the pair's coupling on stream f, residuals
 *         on stream 4 + f (off the critical path), events for each
 *         cross-stream edge: stencil b -> couple(a, b), couple -> next
 *         stencil b, residual f -> next stencil f (WAR on s_f), and all ->
 *         total.  Needs 8 streams for the full shape (fewer: streams shared
 *         round-robin, still correct).
 *
 * Check: the whole computation repeated on the CPU (double accumulators):
 * every point of all fields, all 12 residuals and the total; checksum over
 * all of them.
 */
#include "common.h"

#ifndef G
#define G 1024
#endif
#define NF 4
#define STEPS 3
#ifndef PASSES
#define PASSES 2
#endif
#define BLOCKS 16
#define COUPLE 0.05f
#define DT 0.1f

#define FOR_POINTS(i) \
	for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < (size_t)G * G; \
	     i += (size_t)gridDim.x * blockDim.x)

__global__ void k_stencil(const float *u, float *s)
{
	const float w[5] = { 1.f, 2.f, 3.f, 2.f, 1.f };

	FOR_POINTS(i) {
		int x = (int)(i % G), y = (int)(i / G);
		float acc = 0.f, c = u[i];

		for (int dy = -2; dy <= 2; dy++) {
			int yy = min(max(y + dy, 0), G - 1);

			for (int dx = -2; dx <= 2; dx++) {
				int xx = min(max(x + dx, 0), G - 1);

				acc += w[dy + 2] * w[dx + 2] * u[(size_t)yy * G + xx];
			}
		}
		s[i] = acc * (1.f / 81.f) + DT * c * (1.f - c) * (c - 0.25f);
	}
}

__device__ float block_sum_f(float v, float *sh)
{
	for (int o = 16; o > 0; o >>= 1)
		v += __shfl_down_sync(0xffffffffu, v, o);
	if ((threadIdx.x & 31) == 0)
		sh[threadIdx.x >> 5] = v;
	__syncthreads();
	if (threadIdx.x == 0) {
		float t = 0.f;

		for (int w = 0; w < (int)(blockDim.x >> 5); w++)
			t += sh[w];
		sh[32] = t;
	}
	__syncthreads();
	return sh[32];
}

__global__ void k_absdiff_partial(const float *s, const float *u, float *part)
{
	__shared__ float sh[33];
	float v = 0.f;

	FOR_POINTS(i) v += fabsf(s[i] - u[i]);
	v = block_sum_f(v, sh);
	if (threadIdx.x == 0)
		part[blockIdx.x] = v;
}

__global__ void k_sum_final(const float *part, int np, float *out)
{
	__shared__ float sh[33];
	float v = 0.f;

	for (int i = threadIdx.x; i < np; i += blockDim.x)
		v += part[i];
	v = block_sum_f(v, sh);
	if (threadIdx.x == 0)
		*out = v;
}

__global__ void k_couple(const float *sa, const float *sb, float *ua, float *ub)
{
	FOR_POINTS(i) {
		float a = sa[i], b = sb[i];

		ua[i] = a + COUPLE * (b - a);
		ub[i] = b + COUPLE * (a - b);
	}
}

__global__ void k_total_partial(const float *u0, const float *u1, const float *u2,
				const float *u3, float *part)
{
	__shared__ float sh[33];
	float v = 0.f;

	FOR_POINTS(i) v += u0[i] + u1[i] + u2[i] + u3[i];
	v = block_sum_f(v, sh);
	if (threadIdx.x == 0)
		part[blockIdx.x] = v;
}

struct ctx {
	float *u0[NF];		/* initial state */
	float *u[NF][2];	/* ping-pong */
	float *s[NF];
	float *part[NF];	/* residual partials, per field */
	float *tpart;		/* total partials */
	float *d_res;		/* [NF][STEPS]: one history array for all fields */
	float *d_total;
	struct app_streams st;
	cudaStream_t roi;
	/* expert: after stencil f, after the couple on stream f (f even), after
	 * residual f of an even / odd step */
	cudaEvent_t ev_stencil[NF], ev_couple[NF], ev_resid[NF][2];
};

static const size_t FBYTES = (size_t)G * G * sizeof(float);

static void roi_plain(void *p)
{
	struct ctx *x = (struct ctx *)p;

	for (int pass = 0; pass < PASSES; pass++) {
		for (int f = 0; f < NF; f++)
			CK(cudaMemcpy(x->u[f][0], x->u0[f], FBYTES, cudaMemcpyDeviceToDevice));
		for (int step = 0; step < STEPS; step++) {
			int q = step % 2;

			for (int f = 0; f < NF; f++) {
				k_stencil<<<BLOCKS, APP_THREADS>>>(x->u[f][q], x->s[f]);
				CK_LAUNCH();
			}
			for (int f = 0; f < NF; f++) {
				k_absdiff_partial<<<BLOCKS, APP_THREADS>>>(x->s[f], x->u[f][q], x->part[f]);
				CK_LAUNCH();
				k_sum_final<<<1, APP_THREADS>>>(x->part[f], BLOCKS, &x->d_res[f * STEPS + step]);
				CK_LAUNCH();
			}
			for (int f = 0; f < NF; f += 2) {
				k_couple<<<BLOCKS, APP_THREADS>>>(x->s[f], x->s[f + 1], x->u[f][1 - q],
								  x->u[f + 1][1 - q]);
				CK_LAUNCH();
			}
		}
		int q = STEPS % 2;

		k_total_partial<<<BLOCKS, APP_THREADS>>>(x->u[0][q], x->u[1][q], x->u[2][q], x->u[3][q],
							 x->tpart);
		CK_LAUNCH();
		k_sum_final<<<1, APP_THREADS>>>(x->tpart, BLOCKS, x->d_total);
		CK_LAUNCH();
	}
}

static void roi_expert(void *p)
{
	struct ctx *x = (struct ctx *)p;
	int n = x->st.n;
	int used = n < 2 * NF ? n : 2 * NF;
	cudaStream_t sf[NF], sr[NF];

	for (int f = 0; f < NF; f++) {
		sf[f] = x->st.s[f % n];		/* stencil f; couple(f, f+1) for even f */
		sr[f] = x->st.s[(NF + f) % n];	/* residual f */
	}
	app_fork(&x->st, x->roi, used);
	for (int pass = 0; pass < PASSES; pass++) {
		/* a pass restarts the simulation: one barrier between passes */
		if (pass > 0) {
			app_join(&x->st, sf[0], used);
			app_fork(&x->st, sf[0], used);
		}
		for (int f = 0; f < NF; f++)
			CK(cudaMemcpyAsync(x->u[f][0], x->u0[f], FBYTES, cudaMemcpyDeviceToDevice, sf[f]));
		for (int step = 0; step < STEPS; step++) {
			int q = step % 2, prev = (step + 1) % 2;

			for (int f = 0; f < NF; f++) {
				if (step > 0) {
					/* RAW u[f][q] from the last couple of f's pair,
					 * which was also the last reader of s[f] there */
					if (sf[f & ~1] != sf[f])
						CK(cudaStreamWaitEvent(sf[f], x->ev_couple[f & ~1], 0));
					/* WAR s[f]: the last residual of f read it */
					if (sr[f] != sf[f])
						CK(cudaStreamWaitEvent(sf[f], x->ev_resid[f][prev], 0));
				}
				k_stencil<<<BLOCKS, APP_THREADS, 0, sf[f]>>>(x->u[f][q], x->s[f]);
				CK_LAUNCH();
				CK(cudaEventRecord(x->ev_stencil[f], sf[f]));
			}
			for (int f = 0; f < NF; f++) {
				/* RAW s[f] (and, through it, u[f][q]) */
				if (sr[f] != sf[f])
					CK(cudaStreamWaitEvent(sr[f], x->ev_stencil[f], 0));
				k_absdiff_partial<<<BLOCKS, APP_THREADS, 0, sr[f]>>>(x->s[f], x->u[f][q],
										  x->part[f]);
				CK_LAUNCH();
				/* d_res slots are disjoint: no ordering between fields */
				k_sum_final<<<1, APP_THREADS, 0, sr[f]>>>(x->part[f], BLOCKS,
									  &x->d_res[f * STEPS + step]);
				CK_LAUNCH();
				CK(cudaEventRecord(x->ev_resid[f][q], sr[f]));
			}
			for (int f = 0; f < NF; f += 2) {
				/* RAW s[f+1].  The WAR on u[.][1-q] against the previous
				 * step's stencils and residuals needs no event of its
				 * own: both stencils of this step waited for those
				 * residuals, and this couple follows both stencils. */
				if (sf[f + 1] != sf[f])
					CK(cudaStreamWaitEvent(sf[f], x->ev_stencil[f + 1], 0));
				k_couple<<<BLOCKS, APP_THREADS, 0, sf[f]>>>(x->s[f], x->s[f + 1],
									    x->u[f][1 - q], x->u[f + 1][1 - q]);
				CK_LAUNCH();
				CK(cudaEventRecord(x->ev_couple[f], sf[f]));
			}
		}
		int q = STEPS % 2;

		/* RAW u[.][q] from the last couples (pair 0's ran on sf[0]) */
		for (int f = 2; f < NF; f += 2)
			if (sf[f] != sf[0])
				CK(cudaStreamWaitEvent(sf[0], x->ev_couple[f], 0));
		k_total_partial<<<BLOCKS, APP_THREADS, 0, sf[0]>>>(x->u[0][q], x->u[1][q], x->u[2][q],
								   x->u[3][q], x->tpart);
		CK_LAUNCH();
		k_sum_final<<<1, APP_THREADS, 0, sf[0]>>>(x->tpart, BLOCKS, x->d_total);
		CK_LAUNCH();
	}
	app_join(&x->st, x->roi, used);
}

/* ---------------------------------------------------------------- check */

static void ref_stencil(const float *u, float *s)
{
	static const double w[5] = { 1, 2, 3, 2, 1 };

	for (int y = 0; y < G; y++) {
		const float *row[5];

		for (int d = 0; d < 5; d++) {
			int yy = y + d - 2;

			yy = yy < 0 ? 0 : yy >= G ? G - 1 : yy;
			row[d] = u + (size_t)yy * G;
		}
		for (int x = 0; x < G; x++) {
			double acc = 0, c = u[(size_t)y * G + x];

			if (x >= 2 && x < G - 2) {	/* interior: no clamping */
				for (int dy = 0; dy < 5; dy++) {
					const float *r = row[dy] + x - 2;

					acc += w[dy] * (r[0] + 2.0 * r[1] + 3.0 * r[2] + 2.0 * r[3] + r[4]);
				}
			} else {
				for (int dy = 0; dy < 5; dy++)
					for (int dx = 0; dx < 5; dx++) {
						int xx = x + dx - 2;

						xx = xx < 0 ? 0 : xx >= G ? G - 1 : xx;
						acc += w[dy] * w[dx] * row[dy][xx];
					}
			}
			s[(size_t)y * G + x] = (float)(acc / 81 + DT * c * (1 - c) * (c - 0.25));
		}
	}
}

/* The whole pass on the host; fills res[NF * STEPS], *total and u (final). */
static void reference(float *u[NF], double *res, double *total)
{
	const size_t np = (size_t)G * G;
	float *s[NF];

	for (int f = 0; f < NF; f++)
		s[f] = (float *)app_xmalloc(FBYTES);
	for (int step = 0; step < STEPS; step++) {
		for (int f = 0; f < NF; f++) {
			double r = 0;

			ref_stencil(u[f], s[f]);
			for (size_t i = 0; i < np; i++)
				r += fabs((double)s[f][i] - u[f][i]);
			res[f * STEPS + step] = r;
		}
		for (int f = 0; f < NF; f += 2)
			for (size_t i = 0; i < np; i++) {
				float a = s[f][i], b = s[f + 1][i];

				u[f][i] = a + COUPLE * (b - a);
				u[f + 1][i] = b + COUPLE * (a - b);
			}
	}
	*total = 0;
	for (int f = 0; f < NF; f++) {
		for (size_t i = 0; i < np; i++)
			*total += u[f][i];
		free(s[f]);
	}
}

int main(int argc, char **argv)
{
	const size_t np = (size_t)G * G;
	struct app_opts o;
	struct ctx x;
	struct app_check chk = { 0, 0, "" };
	uint64_t hash = 0;
	float *ref_u[NF], hres[NF * STEPS], htotal;
	double rres[NF * STEPS], rtotal;

	app_parse(&o, "stencil_dag", argc, argv);
	CK(cudaSetDevice(0));
	memset(&x, 0, sizeof(x));
	for (int f = 0; f < NF; f++) {
		x.u0[f] = app_upload_rand(np, 600 + f, 0.f, 1.f);
		CK(cudaMalloc(&x.u[f][0], FBYTES));
		CK(cudaMalloc(&x.u[f][1], FBYTES));
		CK(cudaMalloc(&x.s[f], FBYTES));
		CK(cudaMalloc(&x.part[f], BLOCKS * sizeof(float)));
	}
	CK(cudaMalloc(&x.tpart, BLOCKS * sizeof(float)));
	CK(cudaMalloc(&x.d_res, NF * STEPS * sizeof(float)));
	CK(cudaMalloc(&x.d_total, sizeof(float)));
	x.roi = app_main_stream(&o);
	if (o.expert) {
		app_streams_init(&x.st, o.streams);
		for (int f = 0; f < NF; f++) {
			CK(cudaEventCreateWithFlags(&x.ev_stencil[f], cudaEventDisableTiming));
			CK(cudaEventCreateWithFlags(&x.ev_couple[f], cudaEventDisableTiming));
			CK(cudaEventCreateWithFlags(&x.ev_resid[f][0], cudaEventDisableTiming));
			CK(cudaEventCreateWithFlags(&x.ev_resid[f][1], cudaEventDisableTiming));
		}
	}

	app_time(&o, o.expert ? roi_expert : roi_plain, &x, x.roi);

	CK(cudaDeviceSynchronize());
	CK(cudaMemcpy(hres, x.d_res, sizeof(hres), cudaMemcpyDeviceToHost));
	CK(cudaMemcpy(&htotal, x.d_total, sizeof(htotal), cudaMemcpyDeviceToHost));
	hash = app_fnv1a(hres, sizeof(hres), hash);
	hash = app_fnv1a(&htotal, sizeof(htotal), hash);
	for (int f = 0; f < NF; f++) {
		ref_u[f] = (float *)app_xmalloc(FBYTES);
		app_fill(ref_u[f], np, 600 + f, 0.f, 1.f);
	}
	reference(ref_u, rres, &rtotal);
	for (int i = 0; i < NF * STEPS; i++)
		app_expect(&chk, app_close(hres[i], rres[i], fabs(rres[i]), 1e-4, 1e-3), "res", i,
			   hres[i], rres[i]);
	app_expect(&chk, app_close(htotal, rtotal, fabs(rtotal), 1e-4, 1e-3), "total", 0, htotal,
		   rtotal);
	for (int f = 0; f < NF; f++) {
		float *u = app_download(x.u[f][STEPS % 2], np);

		hash = app_fnv1a(u, FBYTES, hash);
		for (size_t i = 0; i < np; i++)
			if (!app_close(u[i], ref_u[f][i], 1.0, 0, 1e-4) || i % 4096 == 0)
				app_expect(&chk, app_close(u[i], ref_u[f][i], 1.0, 0, 1e-4), "u",
					   (long)(f * np + i), u[i], ref_u[f][i]);
		free(u);
		free(ref_u[f]);
		CK(cudaFree(x.u0[f]));
		CK(cudaFree(x.u[f][0]));
		CK(cudaFree(x.u[f][1]));
		CK(cudaFree(x.s[f]));
		CK(cudaFree(x.part[f]));
	}
	CK(cudaFree(x.tpart));
	CK(cudaFree(x.d_res));
	CK(cudaFree(x.d_total));
	if (o.expert) {
		for (int f = 0; f < NF; f++) {
			CK(cudaEventDestroy(x.ev_stencil[f]));
			CK(cudaEventDestroy(x.ev_couple[f]));
			CK(cudaEventDestroy(x.ev_resid[f][0]));
			CK(cudaEventDestroy(x.ev_resid[f][1]));
		}
		app_streams_destroy(&x.st);
	}
	app_finish(&o, &chk, hash);
	return 0;
}
