/*
 * chain.cu - a single dependent chain: the control (issue 3, item 6, app 7).
 *
 * What it proves: nothing can overlap here.  Every kernel reads the outputs
 * of the two kernels before it (x_{k+1} = f_k(x_k, x_{k-1}), three rotating
 * buffers), so the best any scheduler can do is to run the chain as the
 * default stream does.  kmux must not make it slower than plain by more
 * than 2% (issue 3's target): no waits should be issued (the chain stays on
 * one stream) and no event should be recorded; what remains is kmux's
 * per-launch cost.
 *
 * Work: x_0, x_{-1} (2 Mi floats each) copied device-to-device from their
 * initial values, then 48 kernels (16 blocks each, a degree-16 polynomial
 * per element), ROI = the copies + the 48 kernels.
 *
 * plain:  on the default stream.
 * expert: on one created non-blocking stream (forked from and joined into
 *         the ROI stream): a good programmer does not split a chain, since
 *         more streams can only add waits.  Expert and plain should time
 *         the same; the difference is the noise floor.
 *
 * Check: 4096 sampled elements replayed on the CPU through all 48 steps;
 * checksum over the final buffer.
 */
#include "common.h"

#ifndef N
#define N (2L << 20)
#endif
#ifndef NK
#define NK 48
#endif
#define BLOCKS 16

/* Polynomial coefficient j of step k: computed, never read from memory. */
__host__ __device__ inline float coef(int k, int j)
{
	return 0.05f * (float)((j + k) % 7 - 3) / (float)(j + 1);
}

__global__ void k_step(const float *cur, const float *prev, float *next, long n, int k)
{
	for (long i = (long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
	     i += (long)gridDim.x * blockDim.x) {
		float a = cur[i], b = prev[i], p = 0.f;

		for (int j = 0; j < 16; j++)
			p = fmaf(p, a, coef(k, j));
		next[i] = fmaf(0.1f, p, fmaf(0.3f, b, 0.6f * a));
	}
}

struct ctx {
	float *init_cur, *init_prev;
	float *buf[3];
	struct app_streams st;
	cudaStream_t roi;
};

static void chain(struct ctx *x, cudaStream_t s)
{
	const size_t bytes = N * sizeof(float);

	CK(cudaMemcpyAsync(x->buf[0], x->init_cur, bytes, cudaMemcpyDeviceToDevice, s));
	CK(cudaMemcpyAsync(x->buf[2], x->init_prev, bytes, cudaMemcpyDeviceToDevice, s));
	for (int k = 0; k < NK; k++) {
		k_step<<<BLOCKS, APP_THREADS, 0, s>>>(x->buf[k % 3], x->buf[(k + 2) % 3],
						      x->buf[(k + 1) % 3], N, k);
		CK_LAUNCH();
	}
}

static void roi_plain(void *p)
{
	struct ctx *x = (struct ctx *)p;
	const size_t bytes = N * sizeof(float);

	/* what people write: cudaMemcpy and <<<>>> without a stream */
	CK(cudaMemcpy(x->buf[0], x->init_cur, bytes, cudaMemcpyDeviceToDevice));
	CK(cudaMemcpy(x->buf[2], x->init_prev, bytes, cudaMemcpyDeviceToDevice));
	for (int k = 0; k < NK; k++) {
		k_step<<<BLOCKS, APP_THREADS>>>(x->buf[k % 3], x->buf[(k + 2) % 3],
						x->buf[(k + 1) % 3], N, k);
		CK_LAUNCH();
	}
}

static void roi_expert(void *p)
{
	struct ctx *x = (struct ctx *)p;

	app_fork(&x->st, x->roi, 1);
	chain(x, x->st.s[0]);
	app_join(&x->st, x->roi, 1);
}

int main(int argc, char **argv)
{
	struct app_opts o;
	struct ctx x;
	struct app_check chk = { 0, 0, "" };
	uint64_t hash;
	float *out;

	app_parse(&o, "chain", argc, argv);
	CK(cudaSetDevice(0));
	memset(&x, 0, sizeof(x));
	x.init_cur = app_upload_rand(N, 1000, -1.f, 1.f);
	x.init_prev = app_upload_rand(N, 1001, -1.f, 1.f);
	for (int b = 0; b < 3; b++)
		CK(cudaMalloc(&x.buf[b], N * sizeof(float)));
	x.roi = app_main_stream(&o);
	if (o.expert)
		app_streams_init(&x.st, 1);	/* one stream: see the header */

	app_time(&o, o.expert ? roi_expert : roi_plain, &x, x.roi);

	CK(cudaDeviceSynchronize());
	out = app_download(x.buf[NK % 3], N);
	hash = app_fnv1a(out, N * sizeof(float), 0);
	for (int s = 0; s < 4096; s++) {
		uint32_t i = app_hash(1002, s) % N;
		float a = app_frand(1000, i, -1.f, 1.f), b = app_frand(1001, i, -1.f, 1.f);

		for (int k = 0; k < NK; k++) {
			float p = 0.f, nx;

			for (int j = 0; j < 16; j++)
				p = fmaf(p, a, coef(k, j));
			nx = fmaf(0.1f, p, fmaf(0.3f, b, 0.6f * a));
			b = a;
			a = nx;
		}
		app_expect(&chk, app_close(out[i], a, 1.0, 0, 1e-5), "x48", i, out[i], a);
	}
	free(out);
	CK(cudaFree(x.init_cur));
	CK(cudaFree(x.init_prev));
	for (int b = 0; b < 3; b++)
		CK(cudaFree(x.buf[b]));
	if (o.expert)
		app_streams_destroy(&x.st);
	app_finish(&o, &chk, hash);
	return 0;
}
