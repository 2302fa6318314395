/*
 * reductions.cu - several independent reductions and scans (issue 3, item
 * 6, app 3).
 *
 * What it proves: many short, memory-bound kernels, each on 16 of 132 SMs,
 * in 8 independent tasks of 7 kernels (two 2-kernel reductions and a
 * 3-kernel scan per array), including 1-block "finalize" kernels that leave
 * the GPU almost empty.  As programs usually do, the final sums and maxima
 * of all arrays go into ONE results array each (d_sums[a], d_maxs[a]): the
 * tasks are independent in fact, but at allocation granularity their 1-block
 * finalize kernels all write the same allocation.  A scheduler must keep
 * those writes ordered (it cannot know the slots are disjoint) and should
 * still overlap everything else.
 *
 * Work: 8 int32 arrays of 4-8 Mi elements (values 0..15).  Per array a:
 *   sum:  k_sum_partial (16 blocks)  -> k_sum_final (1 block)  -> d_sums[a]
 *   max:  k_max_partial (16 blocks)  -> k_max_final (1 block)  -> d_maxs[a]
 *   scan: k_scan_sums (16 blocks) -> k_scan_offsets (1 block) -> k_scan_apply
 *         (16 blocks): inclusive prefix sum y = scan(x)
 * ROI: 2 passes (each overwrites all outputs).  Integer arithmetic: exact
 * and order-independent, so results are bit-identical however it is run.
 *
 * plain:  per pass, per array, the 7 kernels in order, default stream.
 * expert: array a's kernels on stream a % S; the expert knows the result
 *         slots are disjoint, so needs no cross-stream event at all; one
 *         fork and one join per ROI.
 *
 * Check: sums, maxima and every element of every scan against the CPU.
 */
#include "common.h"

#define NA 8
#define BLOCKS 16
#ifndef PASSES
#define PASSES 2
#endif
#define TILE (APP_THREADS * 4)
#ifndef SIZE_SHIFT
#define SIZE_SHIFT 20	/* array sizes in Mi elements */
#endif

/* ---------------------------------------------------------------- block helpers */

/* Sum of v over the block (every thread gets it); fixed order. */
__device__ long long block_sum_ll(long long v, long long *sh)
{
	for (int o = 16; o > 0; o >>= 1)
		v += __shfl_down_sync(0xffffffffu, v, o);
	if ((threadIdx.x & 31) == 0)
		sh[threadIdx.x >> 5] = v;
	__syncthreads();
	if (threadIdx.x == 0) {
		long long t = 0;

		for (int w = 0; w < (int)(blockDim.x >> 5); w++)
			t += sh[w];
		sh[32] = t;
	}
	__syncthreads();
	v = sh[32];
	__syncthreads();
	return v;
}

__device__ int block_max_i(int v, int *sh)
{
	for (int o = 16; o > 0; o >>= 1)
		v = max(v, __shfl_down_sync(0xffffffffu, v, o));
	if ((threadIdx.x & 31) == 0)
		sh[threadIdx.x >> 5] = v;
	__syncthreads();
	if (threadIdx.x == 0) {
		int t = sh[0];

		for (int w = 1; w < (int)(blockDim.x >> 5); w++)
			t = max(t, sh[w]);
		sh[32] = t;
	}
	__syncthreads();
	v = sh[32];
	__syncthreads();
	return v;
}

/* Inclusive scan of v over the block; *total gets the block's sum. */
__device__ int block_scan_i(int v, int *sh, int *total)
{
	int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;

	for (int o = 1; o < 32; o <<= 1) {
		int u = __shfl_up_sync(0xffffffffu, v, o);

		if (lane >= o)
			v += u;
	}
	if (lane == 31)
		sh[warp] = v;
	__syncthreads();
	if (warp == 0) {
		int nw = blockDim.x >> 5;
		int w = lane < nw ? sh[lane] : 0;

		for (int o = 1; o < 32; o <<= 1) {
			int u = __shfl_up_sync(0xffffffffu, w, o);

			if (lane >= o)
				w += u;
		}
		if (lane < nw)
			sh[lane] = w;	/* inclusive warp prefix */
	}
	__syncthreads();
	if (warp > 0)
		v += sh[warp - 1];
	*total = sh[(blockDim.x >> 5) - 1];
	__syncthreads();
	return v;
}

/* ---------------------------------------------------------------- kernels */

__global__ void k_sum_partial(const int *x, long n, long long *part)
{
	__shared__ long long sh[33];
	long long v = 0;

	for (long i = (long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
	     i += (long)gridDim.x * blockDim.x)
		v += x[i];
	v = block_sum_ll(v, sh);
	if (threadIdx.x == 0)
		part[blockIdx.x] = v;
}

__global__ void k_sum_final(const long long *part, int np, long long *out)
{
	__shared__ long long sh[33];
	long long v = 0;

	for (int i = threadIdx.x; i < np; i += blockDim.x)
		v += part[i];
	v = block_sum_ll(v, sh);
	if (threadIdx.x == 0)
		*out = v;
}

__global__ void k_max_partial(const int *x, long n, int *part)
{
	__shared__ int sh[33];
	int v = INT_MIN;

	for (long i = (long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
	     i += (long)gridDim.x * blockDim.x)
		v = max(v, x[i]);
	v = block_max_i(v, sh);
	if (threadIdx.x == 0)
		part[blockIdx.x] = v;
}

__global__ void k_max_final(const int *part, int np, int *out)
{
	__shared__ int sh[33];
	int v = INT_MIN;

	for (int i = threadIdx.x; i < np; i += blockDim.x)
		v = max(v, part[i]);
	v = block_max_i(v, sh);
	if (threadIdx.x == 0)
		*out = v;
}

/* Block b owns x[b*chunk, min(n, (b+1)*chunk)): its sum -> bsum[b]. */
__global__ void k_scan_sums(const int *x, long n, long chunk, int *bsum)
{
	__shared__ long long sh[33];
	long lo = blockIdx.x * chunk, hi = min(n, lo + chunk);
	long long v = 0;

	for (long i = lo + threadIdx.x; i < hi; i += blockDim.x)
		v += x[i];
	v = block_sum_ll(v, sh);
	if (threadIdx.x == 0)
		bsum[blockIdx.x] = (int)v;
}

/* Exclusive scan of the (<= 32) block sums, one warp. */
__global__ void k_scan_offsets(const int *bsum, int nb, int *boff)
{
	int lane = threadIdx.x, v, inc;

	if (lane >= 32)
		return;
	v = lane < nb ? bsum[lane] : 0;
	inc = v;
	for (int o = 1; o < 32; o <<= 1) {
		int u = __shfl_up_sync(0xffffffffu, inc, o);

		if (lane >= o)
			inc += u;
	}
	if (lane < nb)
		boff[lane] = inc - v;
}

/* Block b scans its chunk in tiles of 4 elements per thread, from boff[b]. */
__global__ void k_scan_apply(const int *x, long n, long chunk, const int *boff, int *y)
{
	__shared__ int sh[33];
	long lo = blockIdx.x * chunk, hi = min(n, lo + chunk);
	int carry = boff[blockIdx.x];

	for (long t = lo; t < hi; t += TILE) {
		long i0 = t + 4L * threadIdx.x;
		int v[4], run = 0, total, excl;

		for (int j = 0; j < 4; j++) {
			v[j] = i0 + j < hi ? x[i0 + j] : 0;
			run += v[j];
			v[j] = run;	/* inclusive within the thread */
		}
		excl = block_scan_i(run, sh, &total) - run;
		for (int j = 0; j < 4; j++)
			if (i0 + j < hi)
				y[i0 + j] = carry + excl + v[j];
		carry += total;
	}
}

/* ---------------------------------------------------------------- program */

struct task {
	long n, chunk;
	int *x, *y;
	long long *part_sum;
	int *part_max, *bsum, *boff;
};

struct ctx {
	struct task t[NA];
	long long *d_sums;	/* one results array for all tasks */
	int *d_maxs;
	struct app_streams st;
	cudaStream_t roi;
};

static void task_launch(struct ctx *x, int a, cudaStream_t s)
{
	struct task *t = &x->t[a];

	k_sum_partial<<<BLOCKS, APP_THREADS, 0, s>>>(t->x, t->n, t->part_sum);
	CK_LAUNCH();
	k_sum_final<<<1, APP_THREADS, 0, s>>>(t->part_sum, BLOCKS, &x->d_sums[a]);
	CK_LAUNCH();
	k_max_partial<<<BLOCKS, APP_THREADS, 0, s>>>(t->x, t->n, t->part_max);
	CK_LAUNCH();
	k_max_final<<<1, APP_THREADS, 0, s>>>(t->part_max, BLOCKS, &x->d_maxs[a]);
	CK_LAUNCH();
	k_scan_sums<<<BLOCKS, APP_THREADS, 0, s>>>(t->x, t->n, t->chunk, t->bsum);
	CK_LAUNCH();
	k_scan_offsets<<<1, 32, 0, s>>>(t->bsum, BLOCKS, t->boff);
	CK_LAUNCH();
	k_scan_apply<<<BLOCKS, APP_THREADS, 0, s>>>(t->x, t->n, t->chunk, t->boff, t->y);
	CK_LAUNCH();
}

/* What people write: stream 0 everywhere (task_launch with s = 0). */
static void roi_plain(void *p)
{
	struct ctx *x = (struct ctx *)p;

	for (int pass = 0; pass < PASSES; pass++)
		for (int a = 0; a < NA; a++)
			task_launch(x, a, 0);
}

static void roi_expert(void *p)
{
	struct ctx *x = (struct ctx *)p;
	int used = x->st.n < NA ? x->st.n : NA;

	app_fork(&x->st, x->roi, used);
	for (int pass = 0; pass < PASSES; pass++)
		for (int a = 0; a < NA; a++)
			task_launch(x, a, x->st.s[a % x->st.n]);
	app_join(&x->st, x->roi, used);
}

int main(int argc, char **argv)
{
	static const long mi[NA] = { 8, 6, 8, 4, 8, 6, 8, 4 };
	struct app_opts o;
	struct ctx x;
	struct app_check chk = { 0, 0, "" };
	uint64_t hash = 0;
	long long hs[NA];
	int hm[NA];

	app_parse(&o, "reductions", argc, argv);
	CK(cudaSetDevice(0));
	memset(&x, 0, sizeof(x));
	for (int a = 0; a < NA; a++) {
		struct task *t = &x.t[a];
		int *h;

		t->n = mi[a] << SIZE_SHIFT;
		t->chunk = (t->n + BLOCKS - 1) / BLOCKS;
		h = (int *)app_xmalloc(t->n * sizeof(int));
		for (long i = 0; i < t->n; i++)
			h[i] = (int)(app_hash(500 + a, (uint32_t)i) & 15);
		CK(cudaMalloc(&t->x, t->n * sizeof(int)));
		CK(cudaMemcpy(t->x, h, t->n * sizeof(int), cudaMemcpyHostToDevice));
		free(h);
		CK(cudaMalloc(&t->y, t->n * sizeof(int)));
		CK(cudaMalloc(&t->part_sum, BLOCKS * sizeof(long long)));
		CK(cudaMalloc(&t->part_max, BLOCKS * sizeof(int)));
		CK(cudaMalloc(&t->bsum, BLOCKS * sizeof(int)));
		CK(cudaMalloc(&t->boff, BLOCKS * sizeof(int)));
	}
	CK(cudaMalloc(&x.d_sums, NA * sizeof(long long)));
	CK(cudaMalloc(&x.d_maxs, NA * sizeof(int)));
	x.roi = app_main_stream(&o);
	if (o.expert)
		app_streams_init(&x.st, o.streams);

	app_time(&o, o.expert ? roi_expert : roi_plain, &x, x.roi);

	CK(cudaDeviceSynchronize());
	CK(cudaMemcpy(hs, x.d_sums, sizeof(hs), cudaMemcpyDeviceToHost));
	CK(cudaMemcpy(hm, x.d_maxs, sizeof(hm), cudaMemcpyDeviceToHost));
	hash = app_fnv1a(hs, sizeof(hs), hash);
	hash = app_fnv1a(hm, sizeof(hm), hash);
	for (int a = 0; a < NA; a++) {
		struct task *t = &x.t[a];
		int *y = (int *)app_xmalloc(t->n * sizeof(int));
		long long run = 0;
		int mx = INT_MIN;
		long bad_scan = 0;

		CK(cudaMemcpy(y, t->y, t->n * sizeof(int), cudaMemcpyDeviceToHost));
		hash = app_fnv1a(y, t->n * sizeof(int), hash);
		for (long i = 0; i < t->n; i++) {
			int v = (int)(app_hash(500 + a, (uint32_t)i) & 15);

			run += v;
			mx = v > mx ? v : mx;
			if (y[i] != (int)run && bad_scan++ == 0)
				app_expect(&chk, 0, "scan", a * 100000000L + i, y[i], (double)run);
		}
		app_expect(&chk, bad_scan == 0, "scan_all", a, (double)bad_scan, 0);
		app_expect(&chk, hs[a] == run, "sum", a, (double)hs[a], (double)run);
		app_expect(&chk, hm[a] == mx, "max", a, hm[a], mx);
		chk.checked += t->n;
		free(y);
		CK(cudaFree(t->x));
		CK(cudaFree(t->y));
		CK(cudaFree(t->part_sum));
		CK(cudaFree(t->part_max));
		CK(cudaFree(t->bsum));
		CK(cudaFree(t->boff));
	}
	CK(cudaFree(x.d_sums));
	CK(cudaFree(x.d_maxs));
	if (o.expert)
		app_streams_destroy(&x.st);
	app_finish(&o, &chk, hash);
	return 0;
}
