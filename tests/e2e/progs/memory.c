/*
 * memory.c - small programs for the memory manager's test (t71-memory.sh):
 * one case per run, each printing one fact a line (sizes in MiB).
 *
 *   memory unused    256 MiB allocated, never used, freed:
 *                      unused delta=D      device memory it took (cuMemGetInfo)
 *   memory touch     64 MiB, a kernel writes 1024 words:
 *                      touch delta=D sum=S
 *   memory objects   three 16 MiB objects filled with 1, 2, 3 by kernels,
 *                    used in turn, then a 64 MiB allocation, then the
 *                    three read back:
 *                      big err=E           the 64 MiB allocation's result
 *                      obj I first=F last=L
 *   memory oom       two 48 MiB objects, then a memset of each:
 *                      alloc err=E E
 *                      set0 err=E / set1 err=E / set1-after-free err=E
 *   memory keep      16 MiB filled with 7, then 16 MiB more is used:
 *                      set err=E; keep first=F last=L
 *   memory idle FILE four 16 MiB objects filled with 1..4, then idle
 *                    until FILE exists (at most 60 s), then read back
 *                    (t72: kmuxd's memory pressure meanwhile):
 *                      idle ready
 *                      obj I first=F last=L
 *   memory cycle R [MS [FILE]]  four 4 MiB objects, R rounds each filling
 *                    every object in turn (round r, object i: r * 4 + i +
 *                    1), MS ms apart (default 0); with FILE the last round
 *                    again and again until FILE exists (at most 60 s; the
 *                    output is the same); then read back (t73: a cyclic
 *                    working set larger than the evict budget thrashes;
 *                    t78: one that is all busy gives nothing):
 *                      obj I first=F last=L
 *   memory hot R     four 4 MiB objects; each of R rounds fills object 0
 *                    three times, then one of objects 1..3 in turn (t73:
 *                    under an 8 MiB LRU budget a quarter of what a round
 *                    touches comes back from the host, never half of a
 *                    window, every window):
 *                      obj I first=F last=L
 *   memory staged S R [MS]  bench/memory/staged.cu's pattern (the memory mix's
 *                    stand-in, t74): S 4 MiB "weight" objects loaded
 *                    from the host, kept to the end; R requests through
 *                    stage 0, then all through stage 1, ...; a request:
 *                    its input copied in, a kernel summing one 4 KiB slice
 *                    of the stage's weights, the result copied out (a
 *                    host sync per request), MS ms apart (default 0: t78
 *                    makes stages last seconds whatever the build):
 *                      stage S sum=X     per stage, over its requests
 *                      staged check=C    an FNV-1a of every result
 *   memory pipeline S R  staged's pattern after a warm-up that runs one
 *                    request through every stage in turn, as
 *                    bench/memory/pipeline.py does (t77: the warm-up
 *                    cycles through every stage's weights, once):
 *                    the same output as staged S R
 *   memory regrow FILE [MS]  two 4 MiB objects filled with 1 and 2; the
 *                    first refilled every MS ms (default 20) until FILE
 *                    exists (at most 60 s), the second idle meanwhile (a
 *                    budget to give back); then an 8 MiB object filled
 *                    with 3 (t7a: more than the budget given back left,
 *                    within the one it was admitted with), all read back:
 *                      regrow alloc err=E
 *                      obj I first=F last=L
 *   memory freebusy  a 4 MiB object filled and read back (backed: lazy's
 *                    fast path from then on), then a 20 ms kernel writing
 *                    it on a stream of its own and the free right after
 *                    (t71: the free must wait for that kernel, which the
 *                    fast path did not record as a user):
 *                      freebusy err=E first=F
 *   memory late      a 4 MiB object A filled with 1 and read back (lazy's
 *                    fast path from then on: launches and copies are not
 *                    even decoded), 64 more fills of A; then B allocated
 *                    (unbacked again) and filled with 2 by a kernel, C
 *                    allocated and written by a host-to-device copy of
 *                    3s, then A filled with 4 and every end read back
 *                    (t71: B and C must be backed before their first
 *                    operation although the one before was waved through):
 *                      late a=F/L b=F/L c=F/L
 *   memory quietrace T N R  T threads, each filling its own 4 KiB object N
 *                    times on a stream of its own as fast as it can (under
 *                    evict with a budget of T objects' spans: the quiet
 *                    state, most launches not even decoded), while the main
 *                    thread R times allocates a fifth object and fills it,
 *                    which must evict one of the busy ones (t71: never under
 *                    a launch already waved through, simcuda's check):
 *                      quietrace good=G/T extra=E/R
 *   memory context   the context and the module only, nothing allocated
 *                    (bench/memory.sh's dry stand-in for ctxonly.cu):
 *                      context ok
 */
#include <sys/stat.h>
#include <pthread.h>
#include <unistd.h>

#include <string.h>

#include "e2e-common.h"

#define MIB (1024u * 1024u)

static CUfunction f_fill, f_sum, f_fill_slow;

static size_t free_mib(void)
{
	size_t f = 0, t = 0;

	CHECK(cuMemGetInfo(&f, &t));
	return f / MIB;
}

static CUresult fill(CUdeviceptr p, unsigned v, int n)
{
	void *args[] = { &p, &v, &n };

	return cuLaunchKernel(f_fill, 1, 1, 1, 32, 1, 1, 0, NULL, args, NULL);
}

/* The first and last word of an n-word object. */
static void ends(CUdeviceptr p, size_t n, unsigned *first, unsigned *last)
{
	CHECK(cuMemcpyDtoH(first, p, 4));
	CHECK(cuMemcpyDtoH(last, p + (n - 1) * 4, 4));
}

static void c_unused(void)
{
	size_t before = free_mib();
	CUdeviceptr p;

	CHECK(cuMemAlloc(&p, 256 * MIB));
	printf("unused delta=%zu\n", before - free_mib());
	printf("free err=%d\n", (int)cuMemFree(p));
	printf("end delta=%zu\n", before - free_mib());
}

static void c_touch(void)
{
	size_t before = free_mib();
	unsigned w[1024], sum = 0;
	CUdeviceptr p;

	CHECK(cuMemAlloc(&p, 64 * MIB));
	CHECK(fill(p, 5, 1024));
	CHECK(cuMemcpyDtoH(w, p, sizeof(w)));
	for (int i = 0; i < 1024; i++)
		sum += w[i];
	printf("touch delta=%zu sum=%u\n", before - free_mib(), sum);
	CHECK(cuMemFree(p));
}

static void c_objects(void)
{
	size_t n = 16 * MIB / 4;
	CUdeviceptr o[3], big;
	unsigned f, l;

	for (int i = 0; i < 3; i++) {
		CHECK(cuMemAlloc(&o[i], 16 * MIB));
		CHECK(fill(o[i], (unsigned)i + 1, (int)n));
	}
	for (int r = 0; r < 3; r++)
		for (int i = 0; i < 3; i++)
			CHECK(fill(o[i] + 4, (unsigned)i + 1, 1));
	printf("big err=%d\n", (int)cuMemAlloc(&big, 64 * MIB));
	for (int i = 0; i < 3; i++) {
		ends(o[i], n, &f, &l);
		printf("obj %d first=%u last=%u\n", i, f, l);
		CHECK(cuMemFree(o[i]));
	}
}

static void c_oom(void)
{
	CUdeviceptr a, b;
	CUresult ra, rb;

	ra = cuMemAlloc(&a, 48 * MIB);
	rb = cuMemAlloc(&b, 48 * MIB);
	printf("alloc err=%d %d\n", (int)ra, (int)rb);
	if (ra || rb)
		return;
	printf("set0 err=%d\n", (int)cuMemsetD32(a, 1, 12 * MIB));
	printf("set1 err=%d\n", (int)cuMemsetD32(b, 2, 12 * MIB));
	CHECK(cuMemFree(a));
	printf("set1-after-free err=%d\n", (int)cuMemsetD32(b, 2, 12 * MIB));
	CHECK(cuMemFree(b));
}

static void c_keep(void)
{
	size_t n = 16 * MIB / 4;
	CUdeviceptr a, b;
	unsigned f, l;

	CHECK(cuMemAlloc(&a, 16 * MIB));
	CHECK(fill(a, 7, (int)n));
	CHECK(cuMemAlloc(&b, 16 * MIB));
	printf("set err=%d\n", (int)cuMemsetD32(b, 9, n));
	ends(a, n, &f, &l);
	printf("keep first=%u last=%u\n", f, l);
	CHECK(cuMemFree(a));
	CHECK(cuMemFree(b));
}

static void c_idle(const char *go)
{
	size_t n = 16 * MIB / 4;
	CUdeviceptr o[4];
	struct stat st;
	unsigned f, l;

	for (int i = 0; i < 4; i++) {
		CHECK(cuMemAlloc(&o[i], 16 * MIB));
		CHECK(fill(o[i], (unsigned)i + 1, (int)n));
	}
	CHECK(cuCtxSynchronize());
	printf("idle ready\n");
	fflush(stdout);
	for (int t = 0; t < 600 && stat(go, &st); t++)
		usleep(100000);
	for (int i = 0; i < 4; i++) {
		ends(o[i], n, &f, &l);
		printf("obj %d first=%u last=%u\n", i, f, l);
		CHECK(cuMemFree(o[i]));
	}
}

/* Four 4 MiB objects: cycle's and hot's, read back and freed at the end. */
#define FOUR_WORDS (4 * MIB / 4)

static void four_alloc(CUdeviceptr o[4])
{
	for (int i = 0; i < 4; i++)
		CHECK(cuMemAlloc(&o[i], 4 * MIB));
}

static void four_report(CUdeviceptr o[4])
{
	unsigned f, l;

	for (int i = 0; i < 4; i++) {
		ends(o[i], FOUR_WORDS, &f, &l);
		printf("obj %d first=%u last=%u\n", i, f, l);
		CHECK(cuMemFree(o[i]));
	}
}

static void c_cycle(int rounds, int ms, const char *go)
{
	long held = 0, cap = 60000L / (ms > 0 ? ms : 1);
	CUdeviceptr o[4];
	struct stat st;

	four_alloc(o);
	for (int r = 0; r < rounds || (go && stat(go, &st) && held++ < cap);
	     r++) {
		int k = r < rounds ? r : rounds - 1;

		for (int i = 0; i < 4; i++)
			CHECK(fill(o[i], (unsigned)(k * 4 + i + 1),
				   (int)FOUR_WORDS));
		if (ms)
			usleep((useconds_t)ms * 1000);
	}
	four_report(o);
}

static void c_hot(int rounds)
{
	CUdeviceptr o[4];

	four_alloc(o);
	for (int r = 0; r < rounds; r++) {
		for (int k = 0; k < 3; k++)
			CHECK(fill(o[0], (unsigned)(r * 4 + k + 1),
				   (int)FOUR_WORDS));
		CHECK(fill(o[1 + r % 3], (unsigned)(r + 1000), (int)FOUR_WORDS));
	}
	four_report(o);
}

static void c_staged(int stages, int reqs, int ms, int warm)
{
	const size_t n = 4 * MIB / 4, slice = 1024;
	CUdeviceptr w[8], in, out;
	float *h = malloc(n * sizeof(float)), x, res;
	uint64_t fnv = 0xcbf29ce484222325ull;

	if (!h || stages > 8) {
		fprintf(stderr, "memory staged: at most 8 stages\n");
		exit(2);
	}
	for (int s = 0; s < stages; s++) {
		for (size_t i = 0; i < n; i++)
			h[i] = (float)(s + 1) + (float)(i % 977) / 1024.0f;
		CHECK(cuMemAlloc(&w[s], n * sizeof(float)));
		CHECK(cuMemcpyHtoD(w[s], h, n * sizeof(float)));
	}
	/* Small: passes through the memory manager. */
	CHECK(cuMemAlloc(&in, 4));
	CHECK(cuMemAlloc(&out, 4));
	for (int s = 0; warm && s < stages; s++) {
		int cnt = (int)slice;
		void *args[] = { &w[s], &out, &cnt };

		CHECK(cuLaunchKernel(f_sum, 1, 1, 1, 32, 1, 1, 0, NULL, args, NULL));
		CHECK(cuMemcpyDtoH(&res, out, 4));
	}
	for (int s = 0; s < stages; s++) {
		double sum = 0;

		for (int r = 0; r < reqs; r++) {
			CUdeviceptr src = w[s] + (size_t)(r % (int)(n / slice)) * slice * 4;
			int cnt = (int)slice;
			void *args[] = { &src, &out, &cnt };

			x = (float)r;
			CHECK(cuMemcpyHtoD(in, &x, 4));
			CHECK(cuLaunchKernel(f_sum, 1, 1, 1, 32, 1, 1, 0, NULL, args, NULL));
			CHECK(cuMemcpyDtoH(&res, out, 4));
			sum += res;
			if (ms)
				usleep((useconds_t)ms * 1000);
			for (int b = 0; b < 4; b++) {
				fnv ^= ((unsigned char *)&res)[b];
				fnv *= 0x100000001b3ull;
			}
		}
		printf("stage %d sum=%.1f\n", s, sum);
	}
	printf("staged check=0x%016llx\n", (unsigned long long)fnv);
	for (int s = 0; s < stages; s++)
		CHECK(cuMemFree(w[s]));
	CHECK(cuMemFree(in));
	CHECK(cuMemFree(out));
	free(h);
}

static void c_regrow(const char *go, int ms)
{
	size_t n = 4 * MIB / 4;
	CUdeviceptr o[3];
	struct stat st;
	unsigned f, l;
	CUresult r;

	for (int i = 0; i < 2; i++) {
		CHECK(cuMemAlloc(&o[i], 4 * MIB));
		CHECK(fill(o[i], (unsigned)i + 1, (int)n));
	}
	CHECK(cuCtxSynchronize());
	for (int t = 0; t < 60000 / ms && stat(go, &st); t++) {
		CHECK(fill(o[0], 1, (int)n));
		CHECK(cuCtxSynchronize());
		usleep((useconds_t)ms * 1000);
	}
	r = cuMemAlloc(&o[2], 8 * MIB);
	printf("regrow alloc err=%d\n", (int)r);
	if (r == CUDA_SUCCESS)
		CHECK(fill(o[2], 3, (int)(2 * n)));
	for (int i = 0; i < 3; i++) {
		if (i == 2 && r != CUDA_SUCCESS)
			break;
		ends(o[i], i == 2 ? 2 * n : n, &f, &l);
		printf("obj %d first=%u last=%u\n", i, f, l);
		CHECK(cuMemFree(o[i]));
	}
}

static void c_freebusy(void)
{
	size_t n = 4 * MIB / 4;
	CUdeviceptr p;
	CUstream s;
	unsigned v = 9, f;
	int nn = (int)n;
	void *args[] = { &p, &v, &nn };

	CHECK(cuMemAlloc(&p, 4 * MIB));
	CHECK(fill(p, 1, (int)n));
	CHECK(cuMemcpyDtoH(&f, p, 4));
	CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	CHECK(cuLaunchKernel(f_fill_slow, 1, 1, 1, 32, 1, 1, 0, s, args, NULL));
	printf("freebusy err=%d first=%u\n", (int)cuMemFree(p), f);
	CHECK(cuStreamSynchronize(s));
	CHECK(cuStreamDestroy(s));
}

static void c_late(void)
{
	size_t n = 4 * MIB / 4;
	CUdeviceptr a, b, c;
	unsigned fa, la, fb, lb, fc, lc, *h;

	CHECK(cuMemAlloc(&a, 4 * MIB));
	CHECK(fill(a, 1, (int)n));
	ends(a, n, &fa, &la);
	for (int i = 0; i < 64; i++)
		CHECK(fill(a, 1, (int)n));
	CHECK(cuMemAlloc(&b, 4 * MIB));
	CHECK(fill(b, 2, (int)n));
	CHECK(cuMemAlloc(&c, 4 * MIB));
	h = malloc(4 * MIB);
	if (!h)
		exit(1);
	for (size_t i = 0; i < n; i++)
		h[i] = 3;
	CHECK(cuMemcpyHtoD(c, h, 4 * MIB));
	free(h);
	CHECK(fill(a, 4, (int)n));
	ends(a, n, &fa, &la);
	ends(b, n, &fb, &lb);
	ends(c, n, &fc, &lc);
	printf("late a=%u/%u b=%u/%u c=%u/%u\n", fa, la, fb, lb, fc, lc);
	CHECK(cuMemFree(a));
	CHECK(cuMemFree(b));
	CHECK(cuMemFree(c));
}

struct quiet_thread {
	CUcontext ctx;
	CUdeviceptr p;
	int n;
};

static void *quiet_worker(void *arg)
{
	struct quiet_thread *q = arg;
	CUstream s;
	int words = 1024;

	CHECK(cuCtxSetCurrent(q->ctx));
	CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	for (int i = 1; i <= q->n; i++) {
		unsigned v = (unsigned)i;
		void *args[] = { &q->p, &v, &words };

		CHECK(cuLaunchKernel(f_fill, 1, 1, 1, 32, 1, 1, 0, s, args,
				     NULL));
	}
	CHECK(cuStreamSynchronize(s));
	CHECK(cuStreamDestroy(s));
	return NULL;
}

static void c_quietrace(int nt, int n, int rounds)
{
	struct quiet_thread q[8];
	pthread_t th[8];
	CUcontext ctx;
	int good = 0, extra = 0;

	if (nt > 8)
		nt = 8;
	CHECK(cuCtxGetCurrent(&ctx));
	for (int t = 0; t < nt; t++) {
		q[t] = (struct quiet_thread){ .ctx = ctx, .n = n };
		CHECK(cuMemAlloc(&q[t].p, 4096));
		CHECK(fill(q[t].p, 0, 1024));
	}
	CHECK(cuCtxSynchronize());
	for (int t = 0; t < nt; t++)
		if (pthread_create(&th[t], NULL, quiet_worker, &q[t]))
			exit(1);
	for (int r = 0; r < rounds; r++) {
		CUdeviceptr x;
		unsigned f, l;

		usleep(2000);
		CHECK(cuMemAlloc(&x, 4096));
		CHECK(fill(x, 7, 1024));
		ends(x, 1024, &f, &l);
		extra += f == 7 && l == 7;
		CHECK(cuMemFree(x));
	}
	for (int t = 0; t < nt; t++) {
		unsigned f, l;

		pthread_join(th[t], NULL);
		ends(q[t].p, 1024, &f, &l);
		good += f == (unsigned)n && l == (unsigned)n;
		CHECK(cuMemFree(q[t].p));
	}
	printf("quietrace good=%d/%d extra=%d/%d\n", good, nt, extra, rounds);
}

int main(int argc, char **argv)
{
	CUcontext ctx;
	CUmodule mod;
	CUdevice dev;
	const char *c = argc > 1 ? argv[1] : "";

	CHECK(cuInit(0));
	CHECK(cuDeviceGet(&dev, 0));
	CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
	CHECK(cuCtxSetCurrent(ctx));
	CHECK(cuModuleLoad(&mod, e2e_module_path()));
	CHECK(cuModuleGetFunction(&f_fill, mod, "fill_u32"));
	CHECK(cuModuleGetFunction(&f_sum, mod, "sum_reduce"));
	CHECK(cuModuleGetFunction(&f_fill_slow, mod, "fill_slow"));
	if (!strcmp(c, "context"))
		printf("context ok\n");
	else if (!strcmp(c, "unused"))
		c_unused();
	else if (!strcmp(c, "touch"))
		c_touch();
	else if (!strcmp(c, "objects"))
		c_objects();
	else if (!strcmp(c, "freebusy"))
		c_freebusy();
	else if (!strcmp(c, "late"))
		c_late();
	else if (!strcmp(c, "quietrace") && argc > 4 && atoi(argv[2]) > 0 &&
		 atoi(argv[3]) > 0 && atoi(argv[4]) > 0)
		c_quietrace(atoi(argv[2]), atoi(argv[3]), atoi(argv[4]));
	else if (!strcmp(c, "oom"))
		c_oom();
	else if (!strcmp(c, "keep"))
		c_keep();
	else if (!strcmp(c, "idle") && argc > 2)
		c_idle(argv[2]);
	else if (!strcmp(c, "regrow") && argc > 2)
		c_regrow(argv[2], argc > 3 && atoi(argv[3]) > 0 ?
				  atoi(argv[3]) : 20);
	else if (!strcmp(c, "cycle") && argc > 2 && atoi(argv[2]) > 0)
		c_cycle(atoi(argv[2]), argc > 3 ? atoi(argv[3]) : 0,
			argc > 4 ? argv[4] : NULL);
	else if (!strcmp(c, "hot") && argc > 2 && atoi(argv[2]) > 0)
		c_hot(atoi(argv[2]));
	else if (!strcmp(c, "staged") && argc > 3 && atoi(argv[2]) > 0 &&
		 atoi(argv[3]) > 0)
		c_staged(atoi(argv[2]), atoi(argv[3]),
			 argc > 4 ? atoi(argv[4]) : 0, 0);
	else if (!strcmp(c, "pipeline") && argc > 3 && atoi(argv[2]) > 0 &&
		 atoi(argv[3]) > 0)
		c_staged(atoi(argv[2]), atoi(argv[3]), 0, 1);
	else {
		fprintf(stderr, "usage: memory context|unused|touch|objects|oom|keep|"
			"freebusy|late|quietrace T N R|idle FILE|regrow FILE [MS]|cycle ROUNDS [MS [FILE]]|hot ROUNDS|\n"
			"staged STAGES REQUESTS [MS]|pipeline STAGES REQUESTS\n");
		return 2;
	}
	CHECK(cuCtxSynchronize());
	CHECK(cuDevicePrimaryCtxRelease(dev));
	return 0;
}
