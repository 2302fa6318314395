/*
 * basic.c - the simulated kernels most tests use (build/simcuda/kernels/
 * basic.so).  Each computes its whole result in one call, whatever the
 * grid; device memory is reached only through sim_mem().
 *
 *   vec_add(const float *a, const float *b, float *c, int n)  c = a + b
 *   scale(float *x, float s, int n)                           x *= s
 *   fill_u32(unsigned *p, unsigned v, int n)                  p[i] = v
 *   inc_u32(unsigned *p, int n)                               p[i] += 1
 *   sum_reduce(const float *in, float *out, int n)            *out = sum
 *   copy_struct(struct copy_args a)       a.dst[i] = a.src[i], a.n floats;
 *                                         the pointers travel inside a
 *                                         by-value struct
 *   spin(unsigned us)                     busy-waits us microseconds
 *   sleep_us(unsigned us)                 simulated run time us, no memory
 *   touch(void *p, size_t bytes, int rw, unsigned us)
 *                                         sim_mem(p, bytes, rw), then us of
 *                                         simulated time: overlap windows
 *   fill_slow(unsigned *p, unsigned v, int n)
 *                                         fill_u32 with a 20 ms simulated
 *                                         duration set in the table
 *   rendezvous(void *p, size_t bytes, int rw, int *flags, int me)
 *                                         sim_mem(p, bytes, rw), then meets
 *                                         another launch: sets flags[me],
 *                                         waits up to 5 s for flags[1 - me]
 *                                         (flags[2] = 1 on timeout).  flags
 *                                         is a HOST address, read directly
 *                                         (test use only, not recorded):
 *                                         two launches meet only if they
 *                                         really run at the same time, so
 *                                         tests of concurrency do not depend
 *                                         on timing.
 */
#include <string.h>
#include <time.h>

#include "simcuda.h"

struct copy_args {
	CUdeviceptr src;
	CUdeviceptr dst;
	int n;
};

static void vec_add(struct sim_kctx *k, void **params)
{
	int n = SIM_ARG(params, 3, int);
	const float *a, *b;
	float *c;
	int i;

	if (n <= 0)
		return;
	a = sim_mem(k, SIM_ARG(params, 0, CUdeviceptr), (size_t)n * 4,
		    SIM_READ);
	b = sim_mem(k, SIM_ARG(params, 1, CUdeviceptr), (size_t)n * 4,
		    SIM_READ);
	c = sim_mem(k, SIM_ARG(params, 2, CUdeviceptr), (size_t)n * 4,
		    SIM_WRITE);
	if (a == NULL || b == NULL || c == NULL)
		return;
	for (i = 0; i < n; i++)
		c[i] = a[i] + b[i];
}

static void scale(struct sim_kctx *k, void **params)
{
	float s = SIM_ARG(params, 1, float);
	int n = SIM_ARG(params, 2, int);
	float *x;
	int i;

	if (n <= 0)
		return;
	x = sim_mem(k, SIM_ARG(params, 0, CUdeviceptr), (size_t)n * 4, SIM_RW);
	if (x == NULL)
		return;
	for (i = 0; i < n; i++)
		x[i] *= s;
}

static void fill_u32(struct sim_kctx *k, void **params)
{
	unsigned v = SIM_ARG(params, 1, unsigned);
	int n = SIM_ARG(params, 2, int);
	unsigned *p;
	int i;

	if (n <= 0)
		return;
	p = sim_mem(k, SIM_ARG(params, 0, CUdeviceptr), (size_t)n * 4,
		    SIM_WRITE);
	if (p == NULL)
		return;
	for (i = 0; i < n; i++)
		p[i] = v;
}

static void inc_u32(struct sim_kctx *k, void **params)
{
	int n = SIM_ARG(params, 1, int);
	unsigned *p;
	int i;

	if (n <= 0)
		return;
	p = sim_mem(k, SIM_ARG(params, 0, CUdeviceptr), (size_t)n * 4, SIM_RW);
	if (p == NULL)
		return;
	for (i = 0; i < n; i++)
		p[i]++;
}

static void sum_reduce(struct sim_kctx *k, void **params)
{
	int n = SIM_ARG(params, 2, int);
	const float *in;
	float *out;
	double sum = 0;
	int i;

	out = sim_mem(k, SIM_ARG(params, 1, CUdeviceptr), 4, SIM_WRITE);
	if (out == NULL)
		return;
	if (n > 0) {
		in = sim_mem(k, SIM_ARG(params, 0, CUdeviceptr), (size_t)n * 4,
			     SIM_READ);
		if (in == NULL)
			return;
		for (i = 0; i < n; i++)
			sum += in[i];
	}
	*out = (float)sum;
}

static void copy_struct(struct sim_kctx *k, void **params)
{
	struct copy_args a;
	const float *src;
	float *dst;

	memcpy(&a, params[0], sizeof(a));
	if (a.n <= 0)
		return;
	src = sim_mem(k, a.src, (size_t)a.n * 4, SIM_READ);
	dst = sim_mem(k, a.dst, (size_t)a.n * 4, SIM_WRITE);
	if (src == NULL || dst == NULL)
		return;
	memmove(dst, src, (size_t)a.n * 4);
}

static unsigned long long now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (unsigned long long)ts.tv_sec * 1000000ULL +
	       (unsigned long long)ts.tv_nsec / 1000;
}

static void spin(struct sim_kctx *k, void **params)
{
	unsigned long long end = now_us() + SIM_ARG(params, 0, unsigned);

	(void)k;
	while (now_us() < end)
		;
}

static void sleep_us(struct sim_kctx *k, void **params)
{
	k->duration_us = SIM_ARG(params, 0, unsigned);
}

static void touch(struct sim_kctx *k, void **params)
{
	size_t bytes = SIM_ARG(params, 1, size_t);
	int rw = SIM_ARG(params, 2, int);

	sim_mem(k, SIM_ARG(params, 0, CUdeviceptr), bytes, rw);
	k->duration_us = SIM_ARG(params, 3, unsigned);
}

static void rendezvous(struct sim_kctx *k, void **params)
{
	int *flags = (int *)(uintptr_t)SIM_ARG(params, 3, unsigned long long);
	int me = SIM_ARG(params, 4, int) ? 1 : 0;
	unsigned long long deadline = now_us() + 5000000ULL;
	struct timespec ms = { 0, 1000000 };

	sim_mem(k, SIM_ARG(params, 0, CUdeviceptr), SIM_ARG(params, 1, size_t),
		SIM_ARG(params, 2, int));
	if (flags == NULL)
		return;
	__atomic_store_n(&flags[me], 1, __ATOMIC_SEQ_CST);
	while (!__atomic_load_n(&flags[1 - me], __ATOMIC_SEQ_CST)) {
		if (now_us() > deadline) {
			__atomic_store_n(&flags[2], 1, __ATOMIC_SEQ_CST);
			return;
		}
		nanosleep(&ms, NULL);
	}
}

const struct sim_kernel simcuda_kernels[] = {
	{ "vec_add", vec_add, 4, { 8, 8, 8, 4 }, 0 },
	{ "scale", scale, 3, { 8, 4, 4 }, 0 },
	{ "fill_u32", fill_u32, 3, { 8, 4, 4 }, 0 },
	{ "inc_u32", inc_u32, 2, { 8, 4 }, 0 },
	{ "sum_reduce", sum_reduce, 3, { 8, 8, 4 }, 0 },
	{ "copy_struct", copy_struct, 1, { sizeof(struct copy_args) }, 0 },
	{ "spin", spin, 1, { 4 }, 0 },
	{ "sleep_us", sleep_us, 1, { 4 }, 0 },
	{ "touch", touch, 4, { 8, 8, 4, 4 }, 0 },
	{ "fill_slow", fill_u32, 3, { 8, 4, 4 }, 20000 },
	{ "rendezvous", rendezvous, 5, { 8, 8, 4, 8, 4 }, 0 },
	{ 0 },
};
