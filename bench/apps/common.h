/*
 * common.h - shared by the bench/apps programs (issue 3, item 6): error
 * checks, argument parsing, deterministic inputs, stream fork/join helpers
 * for the expert versions, the timing harness and the result lines.
 *
 * Every program is one source with two versions picked at run time:
 *
 *   APP [plain|expert] [--reps N] [--warmup N] [--streams N]
 *
 *   plain   everything on the legacy default stream, in program order, with
 *           the synchronous calls people write (cudaMemcpy, cudaMalloc, ...).
 *           This is what kmux reschedules.
 *   expert  the same work written by hand for concurrency: non-blocking
 *           streams (--streams, default 8 = CUDA_DEVICE_MAX_CONNECTIONS'
 *           default), events for every cross-stream dependency, no host sync
 *           that the data does not need.  This is the bar kmux is held to.
 *
 * The region of interest (ROI) is run --warmup times, then --reps times,
 * each timed with CUDA events recorded on the ROI's stream (the legacy
 * stream for plain, the expert's "main" stream for expert), with a device
 * synchronize before each rep so reps do not overlap.  Output:
 *
 *   RESULT app=NAME variant=plain|expert ms=MEDIAN wall_ms=MEDIAN min_ms=MIN reps=N
 *   CHECK ok                    (or CHECK FAIL ..., and exit status 1)
 *   CHECKSUM app=NAME value=0x<fnv1a-64 of the result bytes>
 *
 * ms is the event-timed GPU span of the ROI; wall_ms is host time from just
 * before the start event to the return of the stop event's synchronize.
 *
 * Rules the programs follow (kmux's documented assumption): kernels reach
 * device memory only through pointers passed as parameters; no __device__
 * or __constant__ globals; all device memory from cudaMalloc (or
 * cudaMallocAsync in an expert path); deterministic results (no
 * floating-point atomics), so a scheduled run's device-to-host copies are
 * bit-identical to the unscheduled run's.
 */
#ifndef KMUX_BENCH_APPS_COMMON_H
#define KMUX_BENCH_APPS_COMMON_H

#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cuda_runtime.h>

#define CK(call)                                                            \
	do {                                                                \
		cudaError_t ck_e_ = (call);                                 \
		if (ck_e_ != cudaSuccess) {                                 \
			fprintf(stderr, "%s:%d: %s failed: %s (%s)\n",      \
				__FILE__, __LINE__, #call,                  \
				cudaGetErrorName(ck_e_),                    \
				cudaGetErrorString(ck_e_));                 \
			exit(1);                                            \
		}                                                           \
	} while (0)

/* After a <<<>>> launch: launch errors now, execution errors at the sync. */
#define CK_LAUNCH() CK(cudaGetLastError())

#define APP_MAX_STREAMS 32
#define APP_THREADS 256

#define APP_UNUSED __attribute__((unused))

struct app_opts {
	const char *app;
	int expert;	/* 0 plain, 1 expert */
	int warmup;
	int reps;
	int streams;	/* expert only */
};

static void APP_UNUSED app_usage(const char *app)
{
	fprintf(stderr,
		"usage: %s [plain|expert] [--reps N] [--warmup N] [--streams N]\n"
		"  plain   default stream, program order (what kmux reschedules)\n"
		"  expert  hand-written multi-stream version with events\n",
		app);
	exit(2);
}

static int APP_UNUSED app_int_arg(const char *app, const char *s, int lo, int hi)
{
	char *end;
	long v = strtol(s, &end, 10);

	if (*s == '\0' || *end != '\0' || v < lo || v > hi) {
		fprintf(stderr, "%s: bad number '%s' (%d..%d)\n", app, s, lo, hi);
		app_usage(app);
	}
	return (int)v;
}

static void APP_UNUSED app_parse(struct app_opts *o, const char *app, int argc,
				 char **argv)
{
	o->app = app;
	o->expert = 0;
	o->warmup = 3;
	o->reps = 7;
	o->streams = 8;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "plain"))
			o->expert = 0;
		else if (!strcmp(a, "expert"))
			o->expert = 1;
		else if (!strcmp(a, "--reps") && i + 1 < argc)
			o->reps = app_int_arg(app, argv[++i], 1, 1000);
		else if (!strcmp(a, "--warmup") && i + 1 < argc)
			o->warmup = app_int_arg(app, argv[++i], 0, 1000);
		else if (!strcmp(a, "--streams") && i + 1 < argc)
			o->streams = app_int_arg(app, argv[++i], 1, APP_MAX_STREAMS);
		else
			app_usage(app);
	}
}

/* ------------------------------------------------------------ inputs */

/* A 32-bit integer hash (good avalanche, no state): input i of stream seed.
 * Also on the device, so a kernel can regenerate what the CPU checks. */
static __host__ __device__ inline uint32_t APP_UNUSED app_hash(uint32_t seed,
							       uint32_t i)
{
	uint32_t x = seed * 0x9E3779B9u ^ (i + 0x7F4A7C15u);

	x ^= x >> 16;
	x *= 0x85EBCA6Bu;
	x ^= x >> 13;
	x *= 0xC2B2AE35u;
	x ^= x >> 16;
	return x;
}

/* Uniform float in [lo, hi), a function of (seed, i) only. */
static inline float APP_UNUSED app_frand(uint32_t seed, uint32_t i, float lo, float hi)
{
	return lo + (hi - lo) * (float)(app_hash(seed, i) >> 8) * (1.0f / 16777216.0f);
}

static void APP_UNUSED app_fill(float *h, size_t n, uint32_t seed, float lo, float hi)
{
	for (size_t i = 0; i < n; i++)
		h[i] = app_frand(seed, (uint32_t)i, lo, hi);
}

static void APP_UNUSED *app_xmalloc(size_t n)
{
	void *p = malloc(n);

	if (!p) {
		fprintf(stderr, "out of host memory (%zu bytes)\n", n);
		exit(1);
	}
	return p;
}

/* Upload n floats made by app_fill into a new device buffer. */
static float APP_UNUSED *app_upload_rand(size_t n, uint32_t seed, float lo, float hi)
{
	float *h = (float *)app_xmalloc(n * sizeof(float));
	float *d;

	app_fill(h, n, seed, lo, hi);
	CK(cudaMalloc(&d, n * sizeof(float)));
	CK(cudaMemcpy(d, h, n * sizeof(float), cudaMemcpyHostToDevice));
	free(h);
	return d;
}

/* Download n floats into a new host buffer (after a device synchronize). */
static float APP_UNUSED *app_download(const float *d, size_t n)
{
	float *h = (float *)app_xmalloc(n * sizeof(float));

	CK(cudaMemcpy(h, d, n * sizeof(float), cudaMemcpyDeviceToHost));
	return h;
}

/* ------------------------------------------------------------ checking */

static uint64_t APP_UNUSED app_fnv1a(const void *p, size_t n, uint64_t h)
{
	const unsigned char *b = (const unsigned char *)p;

	if (h == 0)
		h = 0xcbf29ce484222325ull;
	for (size_t i = 0; i < n; i++) {
		h ^= b[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

/* |got - want| within atol + rtol * scale (scale: a magnitude of the terms) */
static int APP_UNUSED app_close(double got, double want, double scale, double rtol,
				double atol)
{
	double d = fabs(got - want);

	return isfinite(got) && d <= atol + rtol * scale;
}

struct app_check {
	long checked;
	long bad;
	char first[256];
};

static void APP_UNUSED app_expect(struct app_check *c, int ok, const char *what,
				  long idx, double got, double want)
{
	c->checked++;
	if (ok)
		return;
	if (c->bad++ == 0)
		snprintf(c->first, sizeof(c->first), "%s[%ld] = %.9g, want %.9g",
			 what, idx, got, want);
}

/* Prints CHECK and CHECKSUM; exits 1 on a mismatch. */
static void APP_UNUSED app_finish(const struct app_opts *o, const struct app_check *c,
				  uint64_t hash)
{
	if (c->checked == 0 || c->bad) {
		printf("CHECK FAIL app=%s variant=%s: %ld of %ld values wrong; first: %s\n",
		       o->app, o->expert ? "expert" : "plain", c->bad, c->checked,
		       c->checked ? c->first : "nothing checked");
		fflush(stdout);
		exit(1);
	}
	printf("CHECK ok (%ld values)\n", c->checked);
	printf("CHECKSUM app=%s value=0x%016llx\n", o->app, (unsigned long long)hash);
	fflush(stdout);
}

/* ------------------------------------------------------------ streams */

/*
 * The expert's streams: n non-blocking streams and the events that fork
 * work out of the ROI's main stream and join it back.
 */
struct app_streams {
	int n;
	cudaStream_t s[APP_MAX_STREAMS];
	cudaEvent_t fork;
	cudaEvent_t done[APP_MAX_STREAMS];
};

static void APP_UNUSED app_streams_init(struct app_streams *g, int n)
{
	if (n < 1 || n > APP_MAX_STREAMS) {
		fprintf(stderr, "app_streams_init: bad stream count %d\n", n);
		exit(2);
	}
	g->n = n;
	CK(cudaEventCreateWithFlags(&g->fork, cudaEventDisableTiming));
	for (int i = 0; i < n; i++) {
		CK(cudaStreamCreateWithFlags(&g->s[i], cudaStreamNonBlocking));
		CK(cudaEventCreateWithFlags(&g->done[i], cudaEventDisableTiming));
	}
}

static void APP_UNUSED app_streams_destroy(struct app_streams *g)
{
	for (int i = 0; i < g->n; i++) {
		CK(cudaStreamDestroy(g->s[i]));
		CK(cudaEventDestroy(g->done[i]));
	}
	CK(cudaEventDestroy(g->fork));
	g->n = 0;
}

/* Streams 0..k-1 start after everything queued on `from` so far. */
static void APP_UNUSED app_fork(struct app_streams *g, cudaStream_t from, int k)
{
	CK(cudaEventRecord(g->fork, from));
	for (int i = 0; i < k && i < g->n; i++)
		CK(cudaStreamWaitEvent(g->s[i], g->fork, 0));
}

/* `into` continues after everything queued on streams 0..k-1 so far. */
static void APP_UNUSED app_join(struct app_streams *g, cudaStream_t into, int k)
{
	for (int i = 0; i < k && i < g->n; i++) {
		if (g->s[i] == into)
			continue;
		CK(cudaEventRecord(g->done[i], g->s[i]));
		CK(cudaStreamWaitEvent(into, g->done[i], 0));
	}
}

/* `to` waits for what is queued on `from` so far, through `ev`. */
static void APP_UNUSED app_dep(cudaStream_t to, cudaStream_t from, cudaEvent_t ev)
{
	if (to == from)
		return;
	CK(cudaEventRecord(ev, from));
	CK(cudaStreamWaitEvent(to, ev, 0));
}

/* ------------------------------------------------------------ timing */

static double APP_UNUSED app_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int app_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double APP_UNUSED app_median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(double), app_cmp_double);
	return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/*
 * Runs the ROI warmup + reps times; `roi(ctx)` enqueues one ROI, starting
 * after and ending before events recorded on `roi_stream` (0 = the legacy default
 * stream, which is what the plain versions use).  Prints the RESULT line.
 */
static void APP_UNUSED app_time(const struct app_opts *o, void (*roi)(void *ctx),
				void *ctx, cudaStream_t roi_stream)
{
	cudaEvent_t t0, t1;
	double *gpu = (double *)app_xmalloc(sizeof(double) * (size_t)o->reps);
	double *wall = (double *)app_xmalloc(sizeof(double) * (size_t)o->reps);
	double gmin;

	CK(cudaEventCreate(&t0));
	CK(cudaEventCreate(&t1));
	for (int i = 0; i < o->warmup; i++)
		roi(ctx);
	CK(cudaDeviceSynchronize());
	for (int r = 0; r < o->reps; r++) {
		float ms;
		double w0;

		CK(cudaDeviceSynchronize());
		w0 = app_now_ms();
		CK(cudaEventRecord(t0, roi_stream));
		roi(ctx);
		CK(cudaEventRecord(t1, roi_stream));
		CK(cudaEventSynchronize(t1));
		wall[r] = app_now_ms() - w0;
		CK(cudaEventElapsedTime(&ms, t0, t1));
		gpu[r] = ms;
	}
	CK(cudaDeviceSynchronize());
	gmin = gpu[0];
	for (int r = 1; r < o->reps; r++)
		gmin = gpu[r] < gmin ? gpu[r] : gmin;
	printf("RESULT app=%s variant=%s ms=%.4f wall_ms=%.4f min_ms=%.4f reps=%d\n",
	       o->app, o->expert ? "expert" : "plain", app_median(gpu, o->reps),
	       app_median(wall, o->reps), gmin, o->reps);
	fflush(stdout);
	CK(cudaEventDestroy(t0));
	CK(cudaEventDestroy(t1));
	free(gpu);
	free(wall);
}

/* For the expert versions: the ROI's own stream (non-blocking, like the rest). */
static cudaStream_t APP_UNUSED app_main_stream(const struct app_opts *o)
{
	cudaStream_t s = 0;

	if (o->expert)
		CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
	return s;
}

#endif
