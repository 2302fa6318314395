/*
 * rand-dag.c - a random program for the stream scheduler's tests: from a
 * seed, a random DAG of kernels (integer kernels whose results depend on
 * their order, with simulated durations so that overlap windows exist),
 * copies in every direction, memsets, frees and re-allocations, host
 * functions and every kind of host synchronization, all on the default
 * stream (legacy, and the per-thread one by its explicit handle).
 *
 *   rand-dag SEED [NOPS [THREADS]]
 *
 * Prints "rb OP BUF HASH" for every value it reads back, when it reads it,
 * and "buf I HASH" for every buffer at the end.  The output is a function
 * of the seed alone when every dependency is kept, so a scheduled run must
 * print exactly what an unscheduled one prints.  With THREADS > 1, each
 * thread runs its own program (seed + thread) on its own buffers and
 * prefixes its lines with "tN "; a stable sort on that prefix gives
 * comparable output.  With RAND_DAG_BLOCKING set (legacy build, one
 * thread), a quarter of the stream-ordered operations go to a blocking
 * stream of the program's instead, ordered with the legacy stream by CUDA's
 * implicit synchronization alone.  With RAND_DAG_PAUSE=K under the preload,
 * every thread switches kmux_streams_pause() every K operations (pause,
 * resume, ...): the output must not change.  With RAND_DAG_PHASES=K, every
 * other stretch of K operations is launch-bound (kernels of at most 2 us,
 * 300 us of host time before each operation), so that kmux passes work
 * through as submitted there and schedules it again after (the same
 * picks, so the same output).  With RAND_DAG_TABLES set, a sixth of the
 * kernels reach their three buffers only through a table of pointers
 * uploaded from the host before each launch (kmux must follow it).  With
 * RAND_DAG_UNDERSCORE_EXIT set it leaves through _exit(0) once its output
 * is flushed, as fork-started workers and os._exit() do: no atexit
 * handler of the preload runs.  Built twice: rand-dag (the default stream is the
 * legacy one) and rand-dag-pt (-DCUDA_API_PER_THREAD_DEFAULT_STREAM: the
 * _ptsz/_ptds entry points, and each thread's own default stream).
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "e2e-common.h"

#define MAXB	8
#define MAXN	1024		/* words per buffer, at most */

struct buf {
	CUdeviceptr d;
	int n;			/* words */
	unsigned *up;		/* pinned, constant: async uploads */
	unsigned *down;		/* pinned: async downloads */
	int pending;		/* an async download into down, op number + 1 */
};

struct copy_args {		/* basic.so's copy_struct */
	CUdeviceptr src;
	CUdeviceptr dst;
	int n;
};

#define MAXT	8

/* One thread's program. */
struct prog {
	int tid;
	uint64_t rng;
	struct buf b[MAXB];
	int nb;
	unsigned page[MAXN];
	unsigned host_calls;
	CUevent ev;
	CUstream blk;		/* RAND_DAG_BLOCKING: a blocking stream */
	CUdeviceptr tab;	/* RAND_DAG_TABLES: three pointers */
	int launch_bound;	/* RAND_DAG_PHASES: in a launch-bound stretch */
};

static CUfunction f_mix, f_bump, f_fill, f_copy, f_mix_via;
static int tables;		/* RAND_DAG_TABLES */
static CUcontext ctx;
static int nops = 150;
static uint64_t seed0;

/* The program of the calling thread: the helpers below use it. */
static __thread struct prog *P;
#define rng (P->rng)
#define b (P->b)
#define nb (P->nb)
#define page (P->page)

static int threads = 1;
/* RAND_DAG_PAUSE: the preload's kmux_streams_pause() and the period. */
static int (*pause_fn)(int);
static int pause_every;
/* RAND_DAG_PHASES: operations per stretch, launch-bound every other one. */
static int phase_len;

static uint64_t rnd(void)
{
	rng ^= rng >> 12;
	rng ^= rng << 25;
	rng ^= rng >> 27;
	return rng * 0x2545f4914f6cdd1dull;
}

static unsigned pick(unsigned n)
{
	return (unsigned)(rnd() % n);
}

static uint64_t hash(const unsigned *p, int n)
{
	const unsigned char *c = (const unsigned char *)p;
	uint64_t h = 0xcbf29ce484222325ull;

	for (size_t i = 0; i < (size_t)n * 4; i++) {
		h ^= c[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

/*
 * The default stream an operation goes to: mostly NULL (legacy, or the
 * thread's own with -DCUDA_API_PER_THREAD_DEFAULT_STREAM), sometimes the
 * other one by its explicit handle.
 */
static CUstream dflt(void)
{
#ifdef CUDA_API_PER_THREAD_DEFAULT_STREAM
	/* The legacy stream is shared: only when one thread runs. */
	return pick(5) == 0 && threads == 1 ? CU_STREAM_LEGACY : NULL;
#else
	/*
	 * A blocking stream is ordered with the legacy stream only, not with
	 * the per-thread one: one or the other, or the output would race.
	 */
	if (P->blk)
		return pick(4) == 0 ? P->blk : NULL;
	return pick(5) == 0 ? CU_STREAM_PER_THREAD : NULL;
#endif
}

static int min3(int a, int c, int d)
{
	int m = a < c ? a : c;

	return m < d ? m : d;
}

static unsigned dur(void)
{
	/* Mostly short, some long: windows where reordering would show. */
	unsigned us = pick(4) == 0 ? 200 + pick(400) : pick(60);

	/* RAND_DAG_PHASES: launch-bound stretches (the same picks). */
	return P->launch_bound ? us % 3 : us;
}

static void host_fn(void *arg)
{
	struct prog *p = arg;

	__atomic_add_fetch(&p->host_calls, 1, __ATOMIC_SEQ_CST);
}

static void buf_init(int i, int n)
{
	b[i].n = n;
	for (int k = 0; k < n; k++)
		page[k] = (unsigned)rnd();
	CHECK(cuMemcpyHtoD(b[i].d, page, (size_t)n * 4));
}

static void print_pending(void)
{
	for (int i = 0; i < nb; i++) {
		if (!b[i].pending)
			continue;
		printf("t%d rb %d %d %016llx\n", P->tid, b[i].pending - 1, i,
		       (unsigned long long)hash(b[i].down, b[i].n));
		b[i].pending = 0;
	}
}

static void op_kernel(int op)
{
	int x = (int)pick((unsigned)nb), y = (int)pick((unsigned)nb);
	int z = (int)pick((unsigned)nb);
	int n = min3(b[x].n, b[y].n, b[z].n);
	unsigned us = dur(), v = (unsigned)rnd();
	CUstream s = dflt();

	(void)op;
	switch (pick(tables ? 6 : 5)) {
	case 0: {
		void *p[] = { &b[x].d, &b[y].d, &b[z].d, &n, &us };

		CHECK(cuLaunchKernel(f_mix, 1, 1, 1, 32, 1, 1, 0, s, p, NULL));
		break;
	}
	case 1: {
		/* The same kernel through the packed `extra` buffer. */
		struct {
			CUdeviceptr d, a, c;
			int n;
			unsigned us;
		} pk = { b[x].d, b[y].d, b[z].d, n, us };
		size_t sz = sizeof(pk);
		void *e[] = { CU_LAUNCH_PARAM_BUFFER_POINTER, &pk,
			      CU_LAUNCH_PARAM_BUFFER_SIZE, &sz,
			      CU_LAUNCH_PARAM_END };

		CHECK(cuLaunchKernel(f_mix, 1, 1, 1, 32, 1, 1, 0, s, NULL, e));
		break;
	}
	case 2: {
		void *p[] = { &b[x].d, &b[x].n, &us };

		CHECK(cuLaunchKernel(f_bump, 2, 1, 1, 64, 1, 1, 0, s, p, NULL));
		break;
	}
	case 3: {
		void *p[] = { &b[x].d, &v, &b[x].n };

		CHECK(cuLaunchKernel(f_fill, 1, 1, 1, 32, 1, 1, 0, s, p, NULL));
		break;
	}
	case 4: {
		/* Pointers inside a by-value struct. */
		struct copy_args ca;
		void *p[] = { &ca };

		if (x == y)
			return;
		/* Padding included: kmux (and memcheck) read every byte. */
		memset(&ca, 0, sizeof(ca));
		ca.src = b[y].d;
		ca.dst = b[x].d;
		ca.n = b[x].n < b[y].n ? b[x].n : b[y].n;
		CHECK(cuLaunchKernel(f_copy, 1, 1, 1, 32, 1, 1, 0, s, p, NULL));
		break;
	}
	default: {
		/*
		 * RAND_DAG_TABLES: mix through a table of pointers uploaded
		 * from the host, as cuBLAS's batched calls are given theirs.
		 */
		CUdeviceptr t[3] = { b[x].d, b[y].d, b[z].d };
		void *p[] = { &P->tab, &n, &us };

		CHECK(cuMemcpyHtoD(P->tab, t, sizeof(t)));
		CHECK(cuLaunchKernel(f_mix_via, 1, 1, 1, 32, 1, 1, 0, s, p,
				     NULL));
		break;
	}
	}
}

static void op_copy(int op)
{
	int x = (int)pick((unsigned)nb), y = (int)pick((unsigned)nb);
	int n = b[x].n < b[y].n ? b[x].n : b[y].n;
	unsigned v = (unsigned)rnd();

	switch (pick(9)) {
	case 0:
		CHECK(cuMemsetD32(b[x].d, v, (size_t)b[x].n));
		break;
	case 1:
		CHECK(cuMemsetD32Async(b[x].d, v, (size_t)b[x].n, dflt()));
		break;
	case 2:
		for (int k = 0; k < b[x].n; k++)
			page[k] = (unsigned)rnd();
		CHECK(cuMemcpyHtoD(b[x].d, page, (size_t)b[x].n * 4));
		break;
	case 3:
		CHECK(cuMemcpyHtoDAsync(b[x].d, b[x].up, (size_t)b[x].n * 4,
					dflt()));
		break;
	case 4:
		if (x != y)
			CHECK(cuMemcpyDtoD(b[x].d, b[y].d, (size_t)n * 4));
		break;
	case 5:
		if (x != y)
			CHECK(cuMemcpyDtoDAsync(b[x].d, b[y].d, (size_t)n * 4,
						dflt()));
		break;
	case 6:
		CHECK(cuMemcpyDtoH(page, b[x].d, (size_t)b[x].n * 4));
		printf("t%d rb %d %d %016llx\n", P->tid, op, x,
		       (unsigned long long)hash(page, b[x].n));
		break;
	case 7:
		/* Unified cuMemcpy, device to device. */
		if (x != y)
			CHECK(cuMemcpy(b[x].d, b[y].d, (size_t)n * 4));
		break;
	default:
		if (b[x].pending)
			break;
		CHECK(cuMemcpyDtoHAsync(b[x].down, b[x].d, (size_t)b[x].n * 4,
					NULL));
		b[x].pending = op + 1;
		break;
	}
}

static void op_sync(CUevent ev)
{
	CUresult r;

	switch (pick(5)) {
	case 0:
		CHECK(cuCtxSynchronize());
		break;
	case 1:
		CHECK(cuStreamSynchronize(NULL));
		break;
	case 2:
		CHECK(cuEventRecord(ev, NULL));
		CHECK(cuEventSynchronize(ev));
		break;
	case 3:
		while ((r = cuStreamQuery(NULL)) == CUDA_ERROR_NOT_READY)
			;
		CHECK(r);
		break;
	default:
		/* Legacy-stream sync covers the per-thread stream's work too:
		 * the latter is a blocking stream. */
		CHECK(cuEventRecord(ev, NULL));
		while ((r = cuEventQuery(ev)) == CUDA_ERROR_NOT_READY)
			;
		CHECK(r);
		break;
	}
	print_pending();
}

static void op_realloc(void)
{
	int x = (int)pick((unsigned)nb), n = 64 + (int)pick(MAXN - 64);

	if (b[x].pending)
		return;		/* its download must be read first */
	if (pick(2)) {
		CHECK(cuMemFree(b[x].d));
		CHECK(cuMemAlloc(&b[x].d, (size_t)n * 4));
		buf_init(x, n);
	} else {
		CHECK(cuMemFreeAsync(b[x].d, NULL));
		CHECK(cuMemAllocAsync(&b[x].d, (size_t)n * 4, NULL));
		b[x].n = n;
		CHECK(cuMemsetD32Async(b[x].d, (unsigned)rnd(), (size_t)n,
				       NULL));
	}
}

static void *prog_run(void *arg)
{
	P = arg;
	CHECK(cuCtxSetCurrent(ctx));
	rng = (seed0 + (uint64_t)P->tid) * 0x9e3779b97f4a7c15ull + 1;
	CHECK(cuEventCreate(&P->ev, CU_EVENT_DISABLE_TIMING));
#ifndef CUDA_API_PER_THREAD_DEFAULT_STREAM
	if (getenv("RAND_DAG_BLOCKING") && threads == 1)
		CHECK(cuStreamCreate(&P->blk, 0));
#endif
	if (tables)
		CHECK(cuMemAlloc(&P->tab, 3 * sizeof(CUdeviceptr)));
	nb = 3 + (int)pick(MAXB - 2);
	for (int i = 0; i < nb; i++) {
		int n = 64 + (int)pick(MAXN - 64);

		CHECK(cuMemAllocHost((void **)&b[i].up, MAXN * 4));
		CHECK(cuMemAllocHost((void **)&b[i].down, MAXN * 4));
		for (int k = 0; k < MAXN; k++)
			b[i].up[k] = (unsigned)rnd();
		CHECK(cuMemAlloc(&b[i].d, (size_t)n * 4));
		buf_init(i, n);
	}
	for (int op = 0; op < nops; op++) {
		unsigned r = pick(100);

		if (pause_fn && op && op % pause_every == 0)
			pause_fn((op / pause_every) & 1);
		if (phase_len) {
			struct timespec ts = { 0, 300000 };

			P->launch_bound = (op / phase_len) & 1;
			/* The host is slow there: the GPU keeps up. */
			if (P->launch_bound)
				nanosleep(&ts, NULL);
		}

		if (r < 55)
			op_kernel(op);
		else if (r < 85)
			op_copy(op);
		else if (r < 93)
			op_sync(P->ev);
		else if (r < 97)
			op_realloc();
		else
			CHECK(cuLaunchHostFunc(NULL, host_fn, P));
	}
	CHECK(cuStreamSynchronize(NULL));
	print_pending();
	for (int i = 0; i < nb; i++) {
		CHECK(cuMemcpyDtoH(page, b[i].d, (size_t)b[i].n * 4));
		printf("t%d buf %d %016llx\n", P->tid, i,
		       (unsigned long long)hash(page, b[i].n));
		CHECK(cuMemFree(b[i].d));
		CHECK(cuMemFreeHost(b[i].up));
		CHECK(cuMemFreeHost(b[i].down));
	}
	CHECK(cuStreamSynchronize(NULL));
	printf("t%d host functions %u\n", P->tid, P->host_calls);
	CHECK(cuEventDestroy(P->ev));
	if (P->tab)
		CHECK(cuMemFree(P->tab));
	if (P->blk)
		CHECK(cuStreamDestroy(P->blk));
	return NULL;
}

int main(int argc, char **argv)
{
	static struct prog progs[MAXT];
	pthread_t th[MAXT];
	char path[4096];
	const char *mod = e2e_module_path(), *slash;
	int nthreads = argc > 3 ? atoi(argv[3]) : 1;
	CUmodule basic, dag;
	CUdevice dev;

	if (argc < 2 || nthreads < 1 || nthreads > MAXT) {
		fprintf(stderr, "usage: rand-dag SEED [NOPS [THREADS]]\n");
		return 2;
	}
	seed0 = strtoull(argv[1], NULL, 0);
	if (argc > 2)
		nops = atoi(argv[2]);
	threads = nthreads;
	if (getenv("RAND_DAG_PHASES"))
		phase_len = atoi(getenv("RAND_DAG_PHASES"));
	if (phase_len < 0)
		phase_len = 0;
	if (getenv("RAND_DAG_PAUSE")) {
		pause_every = atoi(getenv("RAND_DAG_PAUSE"));
		*(void **)&pause_fn = dlsym(RTLD_DEFAULT, "kmux_streams_pause");
		if (pause_every < 1)
			pause_fn = NULL;
	}
	slash = strrchr(mod, '/');
	snprintf(path, sizeof(path), "%.*s/dag.so",
		 slash ? (int)(slash - mod) : 1, slash ? mod : ".");
	CHECK(cuInit(0));
	CHECK(cuDeviceGet(&dev, 0));
	CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
	CHECK(cuCtxSetCurrent(ctx));
	CHECK(cuModuleLoad(&basic, mod));
	CHECK(cuModuleLoad(&dag, path));
	CHECK(cuModuleGetFunction(&f_mix, dag, "mix"));
	CHECK(cuModuleGetFunction(&f_bump, dag, "bump"));
	CHECK(cuModuleGetFunction(&f_mix_via, dag, "mix_via"));
	tables = getenv("RAND_DAG_TABLES") != NULL;
	CHECK(cuModuleGetFunction(&f_fill, basic, "fill_u32"));
	CHECK(cuModuleGetFunction(&f_copy, basic, "copy_struct"));
	for (int t = 0; t < nthreads; t++) {
		progs[t].tid = t;
		if (nthreads == 1)
			prog_run(&progs[t]);
		else
			pthread_create(&th[t], NULL, prog_run, &progs[t]);
	}
	for (int t = 0; nthreads > 1 && t < nthreads; t++)
		pthread_join(th[t], NULL);
	CHECK(cuCtxSynchronize());
	CHECK(cuModuleUnload(dag));
	CHECK(cuModuleUnload(basic));
	CHECK(cuDevicePrimaryCtxRelease(dev));
	if (getenv("RAND_DAG_UNDERSCORE_EXIT")) {
		fflush(NULL);
		_exit(0);
	}
	return 0;
}
