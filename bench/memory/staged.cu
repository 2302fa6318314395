/*
 * staged.cu - a multi-stage inference pipeline at batch 1: the workload the
 * memory manager is for (issue 5 (b); bench/memory-mix.sh's "staged" mix).
 *
 * What it models: pipelines that keep every stage's weights resident but
 * use them one stage after another (text encoder -> UNet -> VAE in a
 * diffusion pipeline; retrieval encoder -> reranker -> generator), each
 * stage at small batch.  Such a process holds all of its weights for its
 * whole life, yet at any moment only one stage's weights are in use: the
 * others are idle for long stretches.  That is what `kmux run
 * --memory=evict` can take away without a cost per request (one eviction
 * and one restore per stage boundary), unlike the bench/apps programs,
 * which touch every buffer in every repetition.  And at batch 1 each stage
 * is latency-bound (small kernels, a host round trip per request), which
 * is why such processes leave most of a GPU idle and gain from sharing it.
 *
 * Work: S stages (--stages, 3), each owning a weight buffer of W MiB
 * (--weights-mib, 512) allocated and filled by a kernel at start and kept
 * to the end.  R requests (--reps, 32768), processed phase-major: all R
 * through stage 0, then all through stage 1, ...  One request at one stage:
 * cudaMemcpy of its D-float activation to the device, L = 4 layers (each a
 * 32-block kernel: a D x D matrix-vector product over one 256 KiB slice of
 * the stage's weights, then softsign), cudaMemcpy of the result back to
 * the host, which keeps it for the next stage (a host sync per request,
 * as a server answering requests has).  Consecutive requests walk through
 * the slices, so each stage reads all of its weights over its phase.  The
 * ROI is the S phases.
 *
 * Sizing (estimated, not measured): a layer kernel reads 256 KiB with 32
 * blocks, a few microseconds; a request at one stage is 2 small copies and
 * 4 launches, about 30-60 us on an H200; 3 x 32768 of them: about 3-6 s.
 *
 * plain only: each request is one dependency chain that ends in a host
 * read, so there is nothing for a hand-written multi-stream version to
 * overlap inside the process; what the program offers a multiplexer is the
 * GPU's idle time between its requests and its idle memory between its
 * stages.  `expert` is refused.
 *
 * Output (bench/apps conventions, common.h):
 *   RESULT app=staged variant=plain ms=ROI wall_ms=ROI min_ms=ROI reps=R
 *   STAGE s ms=M us_per_request=U        (host time, one line per stage)
 *   CHECK ok (N values) / CHECK FAIL ..., exit 1
 *   CHECKSUM app=staged value=0x...      (FNV-1a of every final activation)
 * Check: 64 requests spread over R recomputed on the CPU through all
 * stages and layers (double accumulators, the same float weights), every
 * value within tolerance.  Deterministic: fixed reduction order, so any
 * correct run (with or without kmux) gives the same checksum.
 */
#include "../apps/common.h"

#define D 256			/* activation width */
#define LAYERS 4		/* kernels per request and stage */
#define BLOCKS 32		/* D rows, one warp each: D / 8 blocks of 8 warps */
#define SLICE ((size_t)D * D)	/* floats per layer's weight slice (256 KiB) */
#define NCHECK 64		/* requests checked on the CPU */
#define WGAIN 2.0f		/* keeps activations O(0.5) through the layers */

/* The same hash on both sides, so the CPU check regenerates the weights. */
__host__ __device__ inline float st_rand(uint32_t seed, uint32_t i)
{
	return (float)(app_hash(seed, i) >> 8) * (1.0f / 16777216.0f) * 2.0f -
	       1.0f;
}

__host__ __device__ inline float st_weight(int stage, size_t i)
{
	const float a = WGAIN * 1.7320508f / 16.0f;	/* gain * sqrt(3 / D) */

	return a * st_rand(5000u + (uint32_t)stage, (uint32_t)i);
}

__global__ void k_init(float *w, size_t n, int stage)
{
	for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
	     i += (size_t)gridDim.x * blockDim.x)
		w[i] = st_weight(stage, i);
}

/* y = softsign(W x), W a D x D row-major slice; warp r computes row r. */
__global__ void k_layer(const float *w, const float *x, float *y)
{
	int row = (int)((blockIdx.x * blockDim.x + threadIdx.x) >> 5);
	int lane = (int)(threadIdx.x & 31);
	float acc = 0.f;

	if (row >= D)
		return;
	for (int j = lane; j < D; j += 32)
		acc = fmaf(w[(size_t)row * D + j], x[j], acc);
	for (int o = 16; o > 0; o >>= 1)
		acc += __shfl_down_sync(0xffffffffu, acc, o);
	if (lane == 0)
		y[row] = acc / (1.f + fabsf(acc));
}

struct opts {
	int reps, stages, weights_mib;
};

static void usage(void)
{
	fprintf(stderr,
		"usage: staged [plain] [--reps R (32768)] [--stages S (3)] "
		"[--weights-mib W (512)]\n"
		"  S stages of W MiB of weights each; R requests through every "
		"stage, stage after stage\n");
	exit(2);
}

static void parse(struct opts *o, int argc, char **argv)
{
	o->reps = 32768;
	o->stages = 3;
	o->weights_mib = 512;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "plain"))
			continue;
		if (!strcmp(a, "expert")) {
			fprintf(stderr, "staged: no expert version (see the "
				"header comment: nothing to overlap in-process)\n");
			exit(2);
		}
		if (!strcmp(a, "--reps") && i + 1 < argc)
			o->reps = app_int_arg("staged", argv[++i], 1, 1 << 24);
		else if (!strcmp(a, "--stages") && i + 1 < argc)
			o->stages = app_int_arg("staged", argv[++i], 1, 64);
		else if (!strcmp(a, "--weights-mib") && i + 1 < argc)
			/* at least one slice; at most 2^32 floats (the hash index) */
			o->weights_mib = app_int_arg("staged", argv[++i], 1, 16383);
		else
			usage();
	}
}

/* The CPU reference for request r: every stage and layer, double sums. */
static void reference(const struct opts *o, size_t nslices, long r, double *out)
{
	double x[D], y[D];

	for (int j = 0; j < D; j++)
		x[j] = st_rand(77u, (uint32_t)(r * D + j));
	for (int s = 0; s < o->stages; s++)
		for (int l = 0; l < LAYERS; l++) {
			size_t base = (((size_t)r * LAYERS + l) % nslices) * SLICE;

			for (int i = 0; i < D; i++) {
				double acc = 0;

				for (int j = 0; j < D; j++)
					acc += (double)st_weight(s, base + (size_t)i * D + j) * x[j];
				y[i] = acc / (1.0 + fabs(acc));
			}
			memcpy(x, y, sizeof(x));
		}
	memcpy(out, x, sizeof(x));
}

int main(int argc, char **argv)
{
	struct opts o;
	struct app_opts ao = { "staged", 0, 0, 1, 0 };
	struct app_check chk = { 0, 0, "" };
	size_t wfloats, nslices;
	float **w, *x, *y, *host;
	double t0, roi;

	parse(&o, argc, argv);
	ao.reps = o.reps;
	wfloats = (size_t)o.weights_mib << 18;	/* MiB -> floats */
	nslices = wfloats / SLICE;
	if (nslices == 0) {
		fprintf(stderr, "staged: --weights-mib must hold one %zu KiB slice\n",
			SLICE * sizeof(float) / 1024);
		return 2;
	}
	CK(cudaSetDevice(0));

	/* The weights: allocated and filled at start, kept to the end. */
	w = (float **)app_xmalloc(sizeof(float *) * (size_t)o.stages);
	for (int s = 0; s < o.stages; s++) {
		CK(cudaMalloc(&w[s], wfloats * sizeof(float)));
		k_init<<<264, APP_THREADS>>>(w[s], wfloats, s);
		CK_LAUNCH();
	}
	/* Small activations: pass through the memory manager (< 2 MiB). */
	CK(cudaMalloc(&x, D * sizeof(float)));
	CK(cudaMalloc(&y, D * sizeof(float)));
	host = (float *)app_xmalloc((size_t)o.reps * D * sizeof(float));
	for (long r = 0; r < o.reps; r++)
		for (int j = 0; j < D; j++)
			host[r * D + j] = st_rand(77u, (uint32_t)(r * D + j));
	CK(cudaDeviceSynchronize());

	t0 = app_now_ms();
	for (int s = 0; s < o.stages; s++) {
		double s0 = app_now_ms(), ms;

		for (long r = 0; r < o.reps; r++) {
			float *act = host + r * D;

			CK(cudaMemcpy(x, act, D * sizeof(float), cudaMemcpyHostToDevice));
			for (int l = 0; l < LAYERS; l++) {
				size_t base = (((size_t)r * LAYERS + l) % nslices) * SLICE;

				/* ping-pong: even layers x -> y, odd y -> x */
				k_layer<<<BLOCKS, APP_THREADS>>>(w[s] + base, l % 2 ? y : x,
								 l % 2 ? x : y);
				CK_LAUNCH();
			}
			CK(cudaMemcpy(act, LAYERS % 2 ? y : x, D * sizeof(float),
				      cudaMemcpyDeviceToHost));
		}
		ms = app_now_ms() - s0;
		printf("STAGE %d ms=%.3f us_per_request=%.2f\n", s, ms,
		       ms * 1e3 / o.reps);
	}
	roi = app_now_ms() - t0;
	printf("RESULT app=staged variant=plain ms=%.4f wall_ms=%.4f min_ms=%.4f reps=%d\n",
	       roi, roi, roi, o.reps);
	fflush(stdout);

	for (int k = 0; k < NCHECK; k++) {
		long r = (long)((double)k * (o.reps - 1) / (NCHECK - 1));
		double want[D];

		if (k > 0 && r == (long)((double)(k - 1) * (o.reps - 1) / (NCHECK - 1)))
			continue;	/* fewer requests than checks */
		reference(&o, nslices, r, want);
		for (int i = 0; i < D; i++) {
			float got = host[r * D + i];

			app_expect(&chk, app_close(got, want[i], fabs(want[i]), 1e-3, 1e-4),
				   "act", r * D + i, got, want[i]);
		}
	}
	for (int s = 0; s < o.stages; s++)
		CK(cudaFree(w[s]));
	CK(cudaFree(x));
	CK(cudaFree(y));
	app_finish(&ao, &chk, app_fnv1a(host, (size_t)o.reps * D * sizeof(float), 0));
	free(host);
	free(w);
	return 0;
}
