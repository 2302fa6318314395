/*
 * phase_buffers.cu - phase-local temporary buffers (issue 3, item 6, app 9;
 * also the input for the later memory-manager work).
 *
 * What it proves: programs allocate scratch memory for a phase and free it
 * at the phase's end.  cudaFree synchronizes the whole device, so on the
 * default stream each phase ends in a full drain; the tasks inside a phase
 * are independent and can overlap.  A scheduler must order each cudaFree
 * after the kernels that use the buffer (and may let it wait for those
 * alone); a memory manager can bound the footprint by these lifetimes.
 *
 * Work: 4 tasks, 3 phases with 32, 64 and 16 MB of scratch per task.  Per
 * phase: cudaMalloc a scratch buffer per task; per task k_expand (input ->
 * scratch, 16 blocks, 8 FMAs per element) and a 16-block + 1-block
 * reduction of the scratch into that task's results; then cudaFree all
 * scratch buffers.  The ROI is the 3 phases, allocations and frees included.
 *
 * plain:  cudaMalloc / launches / cudaFree on the default stream.
 * expert: task t on stream t with the stream-ordered allocator
 *         (cudaMallocAsync / cudaFreeAsync on that stream, pool release
 *         threshold raised so freed memory is reused, not returned), so no
 *         call in the ROI synchronizes the host; one fork and one join.
 *
 * Check: for every (task, phase) one block's partial sum recomputed on the
 * CPU (double) and every final sum equal to the float sum of the partials
 * in the kernel's order; checksum over all partials and sums.
 */
#include "common.h"

#define NT 4
#define NPH 3
#define BLOCKS 16
#ifndef SIZE_SHIFT
#define SIZE_SHIFT 20	/* sizes in Mi elements */
#endif
#define NIN (4L << SIZE_SHIFT)	/* input elements per task, a power of two */

static const long phase_n[NPH] = { 8L << SIZE_SHIFT, 16L << SIZE_SHIFT, 4L << SIZE_SHIFT };

__device__ __host__ inline float expand(float v, long i)
{
	float acc = v;

	for (int j = 0; j < 8; j++)
		acc = fmaf(acc, 0.97f, 0.01f * (float)((i >> (3 * j)) & 7));
	return acc;
}

__global__ void k_expand(const float *in, float *tmp, long n)
{
	for (long i = (long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
	     i += (long)gridDim.x * blockDim.x)
		tmp[i] = expand(in[i & (NIN - 1)], i);
}

__global__ void k_sum_partial(const float *tmp, long n, float *part)
{
	__shared__ float sh[32];
	float v = 0.f;

	for (long i = (long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
	     i += (long)gridDim.x * blockDim.x)
		v += tmp[i];
	for (int o = 16; o > 0; o >>= 1)
		v += __shfl_down_sync(0xffffffffu, v, o);
	if ((threadIdx.x & 31) == 0)
		sh[threadIdx.x >> 5] = v;
	__syncthreads();
	if (threadIdx.x == 0) {
		float t = 0.f;

		for (int w = 0; w < (int)(blockDim.x >> 5); w++)
			t += sh[w];
		part[blockIdx.x] = t;
	}
}

__global__ void k_sum_final(const float *part, int np, float *out)
{
	if (threadIdx.x == 0 && blockIdx.x == 0) {
		float t = 0.f;

		for (int i = 0; i < np; i++)
			t += part[i];
		*out = t;
	}
}

struct task {
	float *in;
	float *part;	/* [NPH][BLOCKS] */
	float *sum;	/* [NPH] */
};

struct ctx {
	struct task t[NT];
	struct app_streams st;
	cudaStream_t roi;
};

static void work(struct task *t, int ph, float *tmp, cudaStream_t s)
{
	long n = phase_n[ph];

	k_expand<<<BLOCKS, APP_THREADS, 0, s>>>(t->in, tmp, n);
	CK_LAUNCH();
	k_sum_partial<<<BLOCKS, APP_THREADS, 0, s>>>(tmp, n, t->part + ph * BLOCKS);
	CK_LAUNCH();
	k_sum_final<<<1, 32, 0, s>>>(t->part + ph * BLOCKS, BLOCKS, t->sum + ph);
	CK_LAUNCH();
}

/* What people write: malloc the phase's scratch, work, free (syncs). */
static void roi_plain(void *p)
{
	struct ctx *x = (struct ctx *)p;

	for (int ph = 0; ph < NPH; ph++) {
		float *tmp[NT];

		for (int t = 0; t < NT; t++)
			CK(cudaMalloc(&tmp[t], phase_n[ph] * sizeof(float)));
		for (int t = 0; t < NT; t++)
			work(&x->t[t], ph, tmp[t], 0);
		for (int t = 0; t < NT; t++)
			CK(cudaFree(tmp[t]));
	}
}

static void roi_expert(void *p)
{
	struct ctx *x = (struct ctx *)p;
	int used = x->st.n < NT ? x->st.n : NT;

	app_fork(&x->st, x->roi, used);
	for (int ph = 0; ph < NPH; ph++)
		for (int t = 0; t < NT; t++) {
			cudaStream_t s = x->st.s[t % x->st.n];
			float *tmp;

			CK(cudaMallocAsync((void **)&tmp, phase_n[ph] * sizeof(float), s));
			work(&x->t[t], ph, tmp, s);
			CK(cudaFreeAsync(tmp, s));
		}
	app_join(&x->st, x->roi, used);
}

int main(int argc, char **argv)
{
	struct app_opts o;
	struct ctx x;
	struct app_check chk = { 0, 0, "" };
	uint64_t hash = 0;

	app_parse(&o, "phase_buffers", argc, argv);
	CK(cudaSetDevice(0));
	memset(&x, 0, sizeof(x));
	for (int t = 0; t < NT; t++) {
		x.t[t].in = app_upload_rand(NIN, 1200 + t, -1.f, 1.f);
		CK(cudaMalloc(&x.t[t].part, NPH * BLOCKS * sizeof(float)));
		CK(cudaMalloc(&x.t[t].sum, NPH * sizeof(float)));
	}
	x.roi = app_main_stream(&o);
	if (o.expert) {
		cudaMemPool_t pool;
		uint64_t keep = UINT64_MAX;

		CK(cudaDeviceGetDefaultMemPool(&pool, 0));
		CK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep));
		app_streams_init(&x.st, o.streams);
	}

	app_time(&o, o.expert ? roi_expert : roi_plain, &x, x.roi);

	CK(cudaDeviceSynchronize());
	for (int t = 0; t < NT; t++) {
		float part[NPH * BLOCKS], sum[NPH];
		float *in = (float *)app_xmalloc(NIN * sizeof(float));

		CK(cudaMemcpy(part, x.t[t].part, sizeof(part), cudaMemcpyDeviceToHost));
		CK(cudaMemcpy(sum, x.t[t].sum, sizeof(sum), cudaMemcpyDeviceToHost));
		hash = app_fnv1a(part, sizeof(part), hash);
		hash = app_fnv1a(sum, sizeof(sum), hash);
		app_fill(in, NIN, 1200 + t, -1.f, 1.f);
		for (int ph = 0; ph < NPH; ph++) {
			int b = (t * NPH + ph) % BLOCKS;
			long stride = (long)BLOCKS * APP_THREADS;
			double want = 0, mag = 0;
			float fsum = 0.f;

			for (long base = (long)b * APP_THREADS; base < phase_n[ph]; base += stride)
				for (long i = base; i < base + APP_THREADS && i < phase_n[ph]; i++) {
					double v = expand(in[i & (NIN - 1)], i);

					want += v;
					mag += fabs(v);
				}
			app_expect(&chk, app_close(part[ph * BLOCKS + b], want, mag, 1e-3, 1e-6),
				   "partial", t * 100 + ph * BLOCKS + b, part[ph * BLOCKS + b], want);
			for (int i = 0; i < BLOCKS; i++)
				fsum += part[ph * BLOCKS + i];
			app_expect(&chk, sum[ph] == fsum, "sum", t * 10 + ph, sum[ph], fsum);
		}
		free(in);
		CK(cudaFree(x.t[t].in));
		CK(cudaFree(x.t[t].part));
		CK(cudaFree(x.t[t].sum));
	}
	if (o.expert)
		app_streams_destroy(&x.st);
	app_finish(&o, &chk, hash);
	return 0;
}
