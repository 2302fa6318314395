/*
 * probe_ctx.cu - two questions for the GPU machine, answered by reading:
 *
 *   probe_ctx stack BYTES   what the context costs in device memory, and how
 *                           much of it is the per-thread stack reservation:
 *                           nvidia-smi's memory.used before the context,
 *                           after it, after cudaDeviceSetLimit(StackSize,
 *                           BYTES) (BYTES < 0: left at the default), after
 *                           a launch with no local memory, one with ~1 KiB
 *                           and one with ~8 KiB of local memory per thread
 *                           (the driver grows the stack for it).
 *   probe_ctx free          whether cudaFree / cudaMalloc wait for unrelated
 *                           work: a 20 ms spin kernel on a non-blocking
 *                           stream, then the call, timed on the host.
 *   probe_ctx copy          what a 4-byte device-to-host read-back costs the
 *                           host, device idle (mean of 2000): cudaMemcpy
 *                           into pageable memory on the legacy stream,
 *                           cudaMemcpyAsync into pinned memory on a
 *                           non-blocking stream + cudaStreamSynchronize,
 *                           the same + cudaEventSynchronize.
 *   probe_ctx query         what cudaStreamQuery / cudaEventQuery cost the
 *                           host on an idle stream and on one running a
 *                           20 ms kernel (mean of 2000 calls each).
 *
 * Output: lines "PROBE key value".  Not a benchmark; docs/design-*.md cite
 * what it showed.
 */
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
	fprintf(stderr, "probe_ctx: %s: %s\n", #x, cudaGetErrorString(e_)); exit(1); } } while (0)

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static long used_mib(void)
{
	FILE *f = popen("nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -i 0", "r");
	long v = -1;

	if (f) {
		if (fscanf(f, "%ld", &v) != 1)
			v = -1;
		pclose(f);
	}
	return v;
}

__global__ void k_nop(float *p, int n)
{
	if ((int)threadIdx.x < n)
		p[threadIdx.x] = 0.f;
}

/* Dynamically indexed local arrays stay in local memory. */
__global__ void k_local1k(float *p, int n, int k)
{
	float a[256];

	for (int i = 0; i < 256; i++)
		a[i] = (float)(i * k);
	if ((int)threadIdx.x < n)
		p[threadIdx.x] = a[(threadIdx.x * 7 + k) & 255];
}

__global__ void k_local8k(float *p, int n, int k)
{
	float a[2048];

	for (int i = 0; i < 2048; i++)
		a[i] = (float)(i * k);
	if ((int)threadIdx.x < n)
		p[threadIdx.x] = a[(threadIdx.x * 7 + k) & 2047];
}

__global__ void k_spin(long long cycles, const float *p, float *out)
{
	long long t0 = clock64();
	float v = p ? p[threadIdx.x] : 0.f;

	while (clock64() - t0 < cycles)
		v += 1e-9f;
	if (out)
		out[threadIdx.x] = v;
}

static void print_limit(const char *tag)
{
	size_t v = 0;

	CK(cudaDeviceGetLimit(&v, cudaLimitStackSize));
	printf("PROBE %s.stack_limit %zu\n", tag, v);
}

static int probe_stack(long bytes)
{
	float *p;

	printf("PROBE used_mib.before_ctx %ld\n", used_mib());
	CK(cudaSetDevice(0));
	CK(cudaFree(0));
	printf("PROBE used_mib.ctx %ld\n", used_mib());
	print_limit("default");
	if (bytes >= 0) {
		CK(cudaDeviceSetLimit(cudaLimitStackSize, (size_t)bytes));
		print_limit("set");
	}
	printf("PROBE used_mib.after_limit %ld\n", used_mib());
	CK(cudaMalloc(&p, 1 << 20));
	k_nop<<<1, 32>>>(p, 32);
	CK(cudaDeviceSynchronize());
	printf("PROBE used_mib.after_nop %ld (1 MiB allocated)\n", used_mib());
	k_local1k<<<264, 256>>>(p, 32, 3);
	CK(cudaDeviceSynchronize());
	print_limit("after_1k");
	printf("PROBE used_mib.after_local1k %ld\n", used_mib());
	k_local8k<<<264, 256>>>(p, 32, 3);
	CK(cudaDeviceSynchronize());
	print_limit("after_8k");
	printf("PROBE used_mib.after_local8k %ld\n", used_mib());
	k_nop<<<1, 32>>>(p, 32);
	CK(cudaDeviceSynchronize());
	printf("PROBE used_mib.after_nop2 %ld\n", used_mib());
	return 0;
}

static long long spin_cycles(void)
{
	int khz = 0;

	CK(cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, 0));
	return (long long)khz * 20;	/* 20 ms at the reported clock */
}

static void timed(const char *tag, cudaStream_t s, long long cyc, const float *in,
		  float *out, int what, float **pp)
{
	double t0, t1;

	k_spin<<<1, 32, 0, s>>>(cyc, in, out);
	CK(cudaGetLastError());
	/* let the kernel start */
	t0 = now_us();
	while (now_us() - t0 < 200)
		;
	t0 = now_us();
	if (what == 0)
		CK(cudaFree(*pp));
	else if (what == 1)
		CK(cudaMalloc(pp, 64 << 20));
	else if (what == 2)
		CK(cudaStreamSynchronize(0));
	else
		CK(cudaMallocHost(pp, 1 << 20));
	t1 = now_us();
	printf("PROBE %s_us %.1f\n", tag, t1 - t0);
	CK(cudaStreamSynchronize(s));
}

static int probe_free(void)
{
	cudaStream_t s;
	float *a, *b, *c, *h, *out;
	long long cyc;

	CK(cudaSetDevice(0));
	CK(cudaFree(0));
	CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
	cyc = spin_cycles();
	CK(cudaMalloc(&out, 4096));
	k_spin<<<1, 32, 0, s>>>(1000, NULL, out);	/* load the module */
	CK(cudaDeviceSynchronize());
	for (int rep = 0; rep < 3; rep++) {
		CK(cudaMalloc(&a, 64 << 20));
		CK(cudaMalloc(&b, 64 << 20));
		CK(cudaDeviceSynchronize());
		timed("free_unrelated", s, cyc, NULL, out, 0, &a);
		timed("free_in_use", s, cyc, b, out, 0, &b);
		timed("malloc_64m", s, cyc, NULL, out, 1, &c);
		timed("legacy_sync", s, cyc, NULL, out, 2, NULL);
		timed("malloc_host", s, cyc, NULL, out, 3, &h);
		CK(cudaFree(c));
		CK(cudaFreeHost(h));
	}
	return 0;
}

static void query_cost(const char *tag, cudaStream_t s, cudaEvent_t e)
{
	double t0 = now_us();
	int n = 2000;

	for (int i = 0; i < n; i++) {
		if (e)
			(void)cudaEventQuery(e);
		else
			(void)cudaStreamQuery(s);
	}
	printf("PROBE %s_ns %.0f\n", tag, (now_us() - t0) * 1000.0 / n);
}

static int probe_query(void)
{
	cudaStream_t s;
	cudaEvent_t e;
	float *out;
	long long cyc;

	CK(cudaSetDevice(0));
	CK(cudaFree(0));
	CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
	CK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
	CK(cudaMalloc(&out, 4096));
	cyc = spin_cycles();
	k_spin<<<1, 32, 0, s>>>(1000, NULL, out);
	CK(cudaDeviceSynchronize());
	for (int rep = 0; rep < 2; rep++) {
		CK(cudaEventRecord(e, s));
		CK(cudaStreamSynchronize(s));
		query_cost("stream_query_idle", s, NULL);
		query_cost("event_query_done", s, e);
		k_spin<<<1, 32, 0, s>>>(cyc * 2, NULL, out);	/* 40 ms */
		CK(cudaEventRecord(e, s));
		query_cost("stream_query_busy", s, NULL);
		query_cost("event_query_pending", s, e);
		CK(cudaStreamSynchronize(s));
	}
	return 0;
}

static int probe_copy(void)
{
	cudaStream_t s;
	cudaEvent_t e;
	float *d, *pin, pageable[4];
	double t0;
	int n = 2000;

	CK(cudaSetDevice(0));
	CK(cudaFree(0));
	CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
	CK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
	CK(cudaMalloc(&d, 4096));
	CK(cudaMallocHost(&pin, 4096));
	CK(cudaMemset(d, 0, 4096));
	CK(cudaDeviceSynchronize());
	for (int rep = 0; rep < 2; rep++) {
		t0 = now_us();
		for (int i = 0; i < n; i++)
			CK(cudaMemcpy(pageable, d, 4, cudaMemcpyDeviceToHost));
		printf("PROBE dtoh_pageable_ns %.0f\n", (now_us() - t0) * 1000.0 / n);
		t0 = now_us();
		for (int i = 0; i < n; i++) {
			CK(cudaMemcpyAsync(pin, d, 4, cudaMemcpyDeviceToHost, s));
			CK(cudaStreamSynchronize(s));
			memcpy(pageable, pin, 4);
		}
		printf("PROBE dtoh_pinned_streamsync_ns %.0f\n", (now_us() - t0) * 1000.0 / n);
		t0 = now_us();
		for (int i = 0; i < n; i++) {
			CK(cudaMemcpyAsync(pin, d, 4, cudaMemcpyDeviceToHost, s));
			CK(cudaEventRecord(e, s));
			CK(cudaEventSynchronize(e));
			memcpy(pageable, pin, 4);
		}
		printf("PROBE dtoh_pinned_eventsync_ns %.0f\n", (now_us() - t0) * 1000.0 / n);
		t0 = now_us();
		for (int i = 0; i < n; i++) {
			CK(cudaEventRecord(e, s));
			CK(cudaEventSynchronize(e));
		}
		printf("PROBE record_eventsync_idle_ns %.0f\n", (now_us() - t0) * 1000.0 / n);
		t0 = now_us();
		for (int i = 0; i < n; i++)
			CK(cudaStreamSynchronize(s));
		printf("PROBE streamsync_idle_ns %.0f\n", (now_us() - t0) * 1000.0 / n);
		t0 = now_us();
		for (int i = 0; i < n; i++)
			CK(cudaDeviceSynchronize());
		printf("PROBE devicesync_idle_ns %.0f\n", (now_us() - t0) * 1000.0 / n);
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 2 && !strcmp(argv[1], "copy"))
		return probe_copy();
	if (argc == 2 && !strcmp(argv[1], "query"))
		return probe_query();
	if (argc == 3 && !strcmp(argv[1], "stack"))
		return probe_stack(atol(argv[2]));
	if (argc == 2 && !strcmp(argv[1], "free"))
		return probe_free();
	fprintf(stderr, "usage: probe_ctx stack BYTES | probe_ctx free\n");
	return 2;
}
