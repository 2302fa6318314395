/*
 * image_pipeline.cu - a multi-branch image pipeline (issue 3, item 6, app 2).
 *
 * What it proves: a fork-join graph per frame.  Several filters read the
 * same input image (shared READ-ONLY data: a scheduler that treats every
 * kernel argument as read-write serializes the branches), one branch is a
 * two-kernel chain, and a combine kernel joins all branches.  Frames are
 * independent of each other; the second pass over the frames overwrites the
 * intermediates the first pass's combine read (write-after-read hazards that
 * a scheduler must keep).
 *
 * Per frame (2048x2048 FP32, clamp-to-edge borders, each kernel 32 blocks
 * with a grid-stride loop):
 *   g = gauss5x5(in);  s = unsharp(in, g)      branch A (a chain)
 *   e = sobel(in)                              branch B
 *   d = box7x7(in)                             branch C
 *   l = laplace(in);   t = tonemap(in)         branch D
 *   out = combine(s, e, d, l, t)               join
 * ROI: 2 passes over 4 frames (each frame its own buffers).
 *
 * plain:  the kernels above in that order on the default stream.
 * expert: frame f's branches on 4 streams (base 4f mod S), combine on the
 *         base stream after events from the other three; the next pass's
 *         branches wait for the previous combine (WAR on the
 *         intermediates) through an event.  With S >= 4 every branch has
 *         its own stream; this is the hand-written fork-join.
 *
 * Check: 2048 sampled pixels of every frame (plus the four corners)
 * recomputed on the CPU in double precision; checksum over all outputs.
 */
#include "common.h"

#ifndef W
#define W 2048
#endif
#ifndef H
#define H 2048
#endif
#define FRAMES 4
#ifndef PASSES
#define PASSES 2
#endif
#define BLOCKS 32
#define SAMPLES 2048

__device__ __forceinline__ float px(const float *img, int x, int y)
{
	x = min(max(x, 0), W - 1);
	y = min(max(y, 0), H - 1);
	return img[(size_t)y * W + x];
}

#define FOR_PIXELS(i) \
	for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < (size_t)W * H; \
	     i += (size_t)gridDim.x * blockDim.x)

__global__ void k_gauss5(const float *in, float *out)
{
	const float w[5] = { 1.f, 4.f, 6.f, 4.f, 1.f };

	FOR_PIXELS(i) {
		int x = (int)(i % W), y = (int)(i / W);
		float acc = 0.f;

		for (int dy = -2; dy <= 2; dy++)
			for (int dx = -2; dx <= 2; dx++)
				acc += w[dy + 2] * w[dx + 2] * px(in, x + dx, y + dy);
		out[i] = acc * (1.f / 256.f);
	}
}

__global__ void k_unsharp(const float *in, const float *blur, float *out)
{
	FOR_PIXELS(i) out[i] = in[i] + 1.5f * (in[i] - blur[i]);
}

__global__ void k_sobel(const float *in, float *out)
{
	FOR_PIXELS(i) {
		int x = (int)(i % W), y = (int)(i / W);
		float gx = (px(in, x + 1, y - 1) + 2.f * px(in, x + 1, y) + px(in, x + 1, y + 1)) -
			   (px(in, x - 1, y - 1) + 2.f * px(in, x - 1, y) + px(in, x - 1, y + 1));
		float gy = (px(in, x - 1, y + 1) + 2.f * px(in, x, y + 1) + px(in, x + 1, y + 1)) -
			   (px(in, x - 1, y - 1) + 2.f * px(in, x, y - 1) + px(in, x + 1, y - 1));

		out[i] = sqrtf(gx * gx + gy * gy);
	}
}

__global__ void k_box7(const float *in, float *out)
{
	FOR_PIXELS(i) {
		int x = (int)(i % W), y = (int)(i / W);
		float acc = 0.f;

		for (int dy = -3; dy <= 3; dy++)
			for (int dx = -3; dx <= 3; dx++)
				acc += px(in, x + dx, y + dy);
		out[i] = acc * (1.f / 49.f);
	}
}

__global__ void k_laplace(const float *in, float *out)
{
	FOR_PIXELS(i) {
		int x = (int)(i % W), y = (int)(i / W);

		out[i] = 4.f * px(in, x, y) - px(in, x - 1, y) - px(in, x + 1, y) -
			 px(in, x, y - 1) - px(in, x, y + 1);
	}
}

__global__ void k_tonemap(const float *in, float *out)
{
	FOR_PIXELS(i) out[i] = in[i] / (1.f + fabsf(in[i]));
}

__global__ void k_combine(const float *s, const float *e, const float *d, const float *l,
			  const float *t, float *out)
{
	FOR_PIXELS(i) out[i] = 0.4f * s[i] + 0.2f * e[i] + 0.2f * d[i] + 0.1f * l[i] + 0.1f * t[i];
}

struct frame {
	float *in, *g, *s, *e, *d, *l, *t, *out;
};

struct ctx {
	struct frame f[FRAMES];
	struct app_streams st;
	cudaStream_t roi;
	cudaEvent_t ev[FRAMES][4];	/* branch ends; [f][0] = combine done */
};

static void roi_plain(void *p)
{
	struct ctx *x = (struct ctx *)p;

	for (int pass = 0; pass < PASSES; pass++)
		for (int i = 0; i < FRAMES; i++) {
			struct frame *f = &x->f[i];

			k_gauss5<<<BLOCKS, APP_THREADS>>>(f->in, f->g);
			CK_LAUNCH();
			k_unsharp<<<BLOCKS, APP_THREADS>>>(f->in, f->g, f->s);
			CK_LAUNCH();
			k_sobel<<<BLOCKS, APP_THREADS>>>(f->in, f->e);
			CK_LAUNCH();
			k_box7<<<BLOCKS, APP_THREADS>>>(f->in, f->d);
			CK_LAUNCH();
			k_laplace<<<BLOCKS, APP_THREADS>>>(f->in, f->l);
			CK_LAUNCH();
			k_tonemap<<<BLOCKS, APP_THREADS>>>(f->in, f->t);
			CK_LAUNCH();
			k_combine<<<BLOCKS, APP_THREADS>>>(f->s, f->e, f->d, f->l, f->t, f->out);
			CK_LAUNCH();
		}
}

static void roi_expert(void *p)
{
	struct ctx *x = (struct ctx *)p;
	int n = x->st.n;
	int used = n < 4 * FRAMES ? n : 4 * FRAMES;

	app_fork(&x->st, x->roi, used);
	for (int pass = 0; pass < PASSES; pass++)
		for (int i = 0; i < FRAMES; i++) {
			struct frame *f = &x->f[i];
			cudaStream_t s[4];

			for (int b = 0; b < 4; b++)
				s[b] = x->st.s[(4 * i + b) % n];
			/* pass > 0: the branches overwrite what the last combine read */
			if (pass > 0)
				for (int b = 1; b < 4; b++)
					if (s[b] != s[0])
						CK(cudaStreamWaitEvent(s[b], x->ev[i][0], 0));
			k_gauss5<<<BLOCKS, APP_THREADS, 0, s[0]>>>(f->in, f->g);
			CK_LAUNCH();
			k_unsharp<<<BLOCKS, APP_THREADS, 0, s[0]>>>(f->in, f->g, f->s);
			CK_LAUNCH();
			k_sobel<<<BLOCKS, APP_THREADS, 0, s[1]>>>(f->in, f->e);
			CK_LAUNCH();
			k_box7<<<BLOCKS, APP_THREADS, 0, s[2]>>>(f->in, f->d);
			CK_LAUNCH();
			k_laplace<<<BLOCKS, APP_THREADS, 0, s[3]>>>(f->in, f->l);
			CK_LAUNCH();
			k_tonemap<<<BLOCKS, APP_THREADS, 0, s[3]>>>(f->in, f->t);
			CK_LAUNCH();
			for (int b = 1; b < 4; b++)
				app_dep(s[0], s[b], x->ev[i][b]);
			k_combine<<<BLOCKS, APP_THREADS, 0, s[0]>>>(f->s, f->e, f->d, f->l, f->t, f->out);
			CK_LAUNCH();
			CK(cudaEventRecord(x->ev[i][0], s[0]));
		}
	app_join(&x->st, x->roi, used);
}

/* ---------------------------------------------------------------- check */

static double hpx(const float *img, int x, int y)
{
	x = x < 0 ? 0 : x >= W ? W - 1 : x;
	y = y < 0 ? 0 : y >= H ? H - 1 : y;
	return img[(size_t)y * W + x];
}

static double ref_pixel(const float *in, int x, int y)
{
	static const double w[5] = { 1, 4, 6, 4, 1 };
	double c = hpx(in, x, y), g = 0, d = 0, gx, gy;

	for (int dy = -2; dy <= 2; dy++)
		for (int dx = -2; dx <= 2; dx++)
			g += w[dy + 2] * w[dx + 2] * hpx(in, x + dx, y + dy);
	g /= 256;
	for (int dy = -3; dy <= 3; dy++)
		for (int dx = -3; dx <= 3; dx++)
			d += hpx(in, x + dx, y + dy);
	d /= 49;
	gx = (hpx(in, x + 1, y - 1) + 2 * hpx(in, x + 1, y) + hpx(in, x + 1, y + 1)) -
	     (hpx(in, x - 1, y - 1) + 2 * hpx(in, x - 1, y) + hpx(in, x - 1, y + 1));
	gy = (hpx(in, x - 1, y + 1) + 2 * hpx(in, x, y + 1) + hpx(in, x + 1, y + 1)) -
	     (hpx(in, x - 1, y - 1) + 2 * hpx(in, x, y - 1) + hpx(in, x + 1, y - 1));
	double s = c + 1.5 * (c - g);
	double e = sqrt(gx * gx + gy * gy);
	double l = 4 * c - hpx(in, x - 1, y) - hpx(in, x + 1, y) - hpx(in, x, y - 1) -
		   hpx(in, x, y + 1);
	double t = c / (1 + fabs(c));

	return 0.4 * s + 0.2 * e + 0.2 * d + 0.1 * l + 0.1 * t;
}

int main(int argc, char **argv)
{
	const size_t npx = (size_t)W * H, bytes = npx * sizeof(float);
	struct app_opts o;
	struct ctx x;
	struct app_check chk = { 0, 0, "" };
	uint64_t hash = 0;

	app_parse(&o, "image_pipeline", argc, argv);
	CK(cudaSetDevice(0));
	memset(&x, 0, sizeof(x));
	for (int i = 0; i < FRAMES; i++) {
		struct frame *f = &x.f[i];

		f->in = app_upload_rand(npx, 300 + i, 0.f, 1.f);
		CK(cudaMalloc(&f->g, bytes));
		CK(cudaMalloc(&f->s, bytes));
		CK(cudaMalloc(&f->e, bytes));
		CK(cudaMalloc(&f->d, bytes));
		CK(cudaMalloc(&f->l, bytes));
		CK(cudaMalloc(&f->t, bytes));
		CK(cudaMalloc(&f->out, bytes));
	}
	x.roi = app_main_stream(&o);
	if (o.expert) {
		app_streams_init(&x.st, o.streams);
		for (int i = 0; i < FRAMES; i++)
			for (int b = 0; b < 4; b++)
				CK(cudaEventCreateWithFlags(&x.ev[i][b], cudaEventDisableTiming));
	}

	app_time(&o, o.expert ? roi_expert : roi_plain, &x, x.roi);

	CK(cudaDeviceSynchronize());
	for (int i = 0; i < FRAMES; i++) {
		struct frame *f = &x.f[i];
		float *in = app_download(f->in, npx);
		float *out = app_download(f->out, npx);

		hash = app_fnv1a(out, bytes, hash);
		for (int s = 0; s < SAMPLES + 4; s++) {
			uint32_t h = app_hash(400 + i, s);
			int px_ = (int)(h % W), py_ = (int)((h >> 11) % H);

			if (s >= SAMPLES) {	/* the corners */
				px_ = (s - SAMPLES) & 1 ? W - 1 : 0;
				py_ = (s - SAMPLES) & 2 ? H - 1 : 0;
			}
			double want = ref_pixel(in, px_, py_);
			double got = out[(size_t)py_ * W + px_];

			app_expect(&chk, app_close(got, want, 1.0, 1e-5, 1e-4), "out",
				   (long)py_ * W + px_, got, want);
		}
		free(in);
		free(out);
		CK(cudaFree(f->in));
		CK(cudaFree(f->g));
		CK(cudaFree(f->s));
		CK(cudaFree(f->e));
		CK(cudaFree(f->d));
		CK(cudaFree(f->l));
		CK(cudaFree(f->t));
		CK(cudaFree(f->out));
	}
	if (o.expert) {
		for (int i = 0; i < FRAMES; i++)
			for (int b = 0; b < 4; b++)
				CK(cudaEventDestroy(x.ev[i][b]));
		app_streams_destroy(&x.st);
	}
	app_finish(&o, &chk, hash);
	return 0;
}
