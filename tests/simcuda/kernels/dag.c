/*
 * dag.c - simulated kernels for the stream scheduler's tests
 * (build/simcuda/kernels/dag.so): integer kernels whose results depend on
 * the order they run in, each with a simulated duration so that overlap
 * windows exist, and two that break the rules on purpose (store_via, and
 * mix_via where its table was not uploaded from the host).
 *
 *   mix(unsigned *dst, const unsigned *a, const unsigned *b, int n, us)
 *	dst[i] = (rotl(a[i], 5) ^ b[i] * 0x9e3779b1) + i; dst may be a or b
 *   mix_via(const CUdeviceptr *t, int n, unsigned us)	mix(t[0], t[1],
 *	t[2], n): its buffers only in a table in device memory (kmux follows
 *	tables the host uploaded: src/preload/ptrtab.h)
 *   bump(unsigned *p, int n, unsigned us)	p[i] = p[i] * 3 + 1
 *   probe(unsigned *p, int n, unsigned us)	bump under another name, for
 *						telling one launch from the rest
 *   pause0()				no parameters, 20 ms of simulated time
 *   store_via(const CUdeviceptr *pp, unsigned v, int n, unsigned ms)
 *	sleeps ms of real time, then reads a pointer from device memory
 *	(pp[0]) and writes v to n words there: it reaches memory that is not
 *	among its parameters, which kmux cannot see (`kmux verify` must)
 *   nop8(p0, ..., p7)	eight pointers, touches nothing: the host cost of
 *			a launch with many pointer parameters (launch-cost)
 *   slot(unsigned *p, unsigned v, unsigned us)	p[t] = p[t] * 3 + v for
 *			each thread t < blockDim.x: one word per thread
 *			(ptx-extents: several slots of one allocation)
 *   tex_sum(CUtexObject t, unsigned *out, unsigned us)	out[0] = the sum
 *			of the words texture object t names: memory reached
 *			through a handle, not a pointer
 *   surf_bump(CUsurfObject s, unsigned us)	w = w * 3 + 1 for every word
 *			surface object s names
 *   word(unsigned long long v, unsigned us)	touches nothing (v is data)
 *   tex_via(const CUtexObject *t, unsigned *out, unsigned us)	tex_sum of
 *			the texture object stored at t[0] in device memory
 */
#include <string.h>
#include <time.h>

#include "simcuda.h"

/* dst[i] = rotl(a[i], 5) ^ b[i] * golden + i, for n words. */
static void mix_words(struct sim_kctx *k, CUdeviceptr dp, CUdeviceptr ap,
		      CUdeviceptr bp, int n)
{
	unsigned *dst;
	const unsigned *a, *b;
	unsigned x;

	if (n <= 0)
		return;
	a = sim_mem(k, ap, (size_t)n * 4, SIM_READ);
	b = sim_mem(k, bp, (size_t)n * 4, SIM_READ);
	dst = sim_mem(k, dp, (size_t)n * 4, SIM_WRITE);
	if (!a || !b || !dst)
		return;
	for (int i = 0; i < n; i++) {
		x = (a[i] << 5 | a[i] >> 27) ^ (b[i] * 0x9e3779b1u);
		dst[i] = x + (unsigned)i;
	}
}

static void mix(struct sim_kctx *k, void **params)
{
	k->duration_us = SIM_ARG(params, 4, unsigned);
	mix_words(k, SIM_ARG(params, 0, CUdeviceptr),
		  SIM_ARG(params, 1, CUdeviceptr),
		  SIM_ARG(params, 2, CUdeviceptr), SIM_ARG(params, 3, int));
}

/* mix with its three buffers read from a table in device memory. */
static void mix_via(struct sim_kctx *k, void **params)
{
	const CUdeviceptr *t;

	k->duration_us = SIM_ARG(params, 2, unsigned);
	t = sim_mem(k, SIM_ARG(params, 0, CUdeviceptr), 3 * sizeof(*t),
		    SIM_READ);
	if (t)
		mix_words(k, t[0], t[1], t[2], SIM_ARG(params, 1, int));
}

static void bump(struct sim_kctx *k, void **params)
{
	int n = SIM_ARG(params, 1, int);
	unsigned *p;

	k->duration_us = SIM_ARG(params, 2, unsigned);
	if (n <= 0)
		return;
	p = sim_mem(k, SIM_ARG(params, 0, CUdeviceptr), (size_t)n * 4, SIM_RW);
	if (!p)
		return;
	for (int i = 0; i < n; i++)
		p[i] = p[i] * 3 + 1;
}

static void pause0(struct sim_kctx *k, void **params)
{
	(void)k;
	(void)params;
}

static void store_via(struct sim_kctx *k, void **params)
{
	unsigned v = SIM_ARG(params, 1, unsigned);
	int n = SIM_ARG(params, 2, int);
	unsigned ms = SIM_ARG(params, 3, unsigned);
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
	const CUdeviceptr *pp;
	CUdeviceptr to;
	unsigned *p;

	nanosleep(&ts, NULL);
	pp = sim_mem(k, SIM_ARG(params, 0, CUdeviceptr), sizeof(*pp),
		     SIM_READ);
	if (!pp || n <= 0)
		return;
	memcpy(&to, pp, sizeof(to));
	p = sim_mem(k, to, (size_t)n * 4, SIM_WRITE);
	if (!p)
		return;
	for (int i = 0; i < n; i++)
		p[i] = v;
}

static void nop8(struct sim_kctx *k, void **params)
{
	(void)k;
	(void)params;
}

static void slot(struct sim_kctx *k, void **params)
{
	unsigned *p;

	k->duration_us = SIM_ARG(params, 2, unsigned);
	p = sim_mem(k, SIM_ARG(params, 0, CUdeviceptr),
		    sizeof(*p) * k->block[0], SIM_RW);
	for (unsigned t = 0; p && t < k->block[0]; t++)
		p[t] = p[t] * 3 + SIM_ARG(params, 1, unsigned);
}

static void tex_sum(struct sim_kctx *k, void **params)
{
	size_t bytes;
	const unsigned *w;
	unsigned *out, sum = 0;

	k->duration_us = SIM_ARG(params, 2, unsigned);
	w = sim_res(k, SIM_ARG(params, 0, unsigned long long), &bytes,
		    SIM_READ);
	for (size_t i = 0; w && i < bytes / sizeof(*w); i++)
		sum += w[i];
	out = sim_mem(k, SIM_ARG(params, 1, CUdeviceptr), sizeof(*out),
		      SIM_WRITE);
	if (out)
		*out = sum;
}

static void surf_bump(struct sim_kctx *k, void **params)
{
	size_t bytes;
	unsigned *w;

	k->duration_us = SIM_ARG(params, 1, unsigned);
	w = sim_res(k, SIM_ARG(params, 0, unsigned long long), &bytes,
		    SIM_RW);
	for (size_t i = 0; w && i < bytes / sizeof(*w); i++)
		w[i] = w[i] * 3 + 1;
}

static void tex_via(struct sim_kctx *k, void **params)
{
	const unsigned long long *t;
	size_t bytes;
	const unsigned *w;
	unsigned *out, sum = 0;

	k->duration_us = SIM_ARG(params, 2, unsigned);
	t = sim_mem(k, SIM_ARG(params, 0, CUdeviceptr), sizeof(*t), SIM_READ);
	w = t ? sim_res(k, *t, &bytes, SIM_READ) : NULL;
	for (size_t i = 0; w && i < bytes / sizeof(*w); i++)
		sum += w[i];
	out = sim_mem(k, SIM_ARG(params, 1, CUdeviceptr), sizeof(*out),
		      SIM_WRITE);
	if (out)
		*out = sum;
}

static void word(struct sim_kctx *k, void **params)
{
	k->duration_us = SIM_ARG(params, 1, unsigned);
}

const struct sim_kernel simcuda_kernels[] = {
	{ "mix", mix, 5, { 8, 8, 8, 4, 4 }, 0 },
	{ "mix_via", mix_via, 3, { 8, 4, 4 }, 0 },
	{ "bump", bump, 3, { 8, 4, 4 }, 0 },
	{ "probe", bump, 3, { 8, 4, 4 }, 0 },
	{ "pause0", pause0, 0, { 0 }, 20000 },
	{ "store_via", store_via, 4, { 8, 4, 4, 4 }, 0 },
	{ "nop8", nop8, 8, { 8, 8, 8, 8, 8, 8, 8, 8 }, 0 },
	{ "slot", slot, 3, { 8, 4, 4 }, 0 },
	{ "tex_sum", tex_sum, 3, { 8, 8, 4 }, 0 },
	{ "surf_bump", surf_bump, 2, { 8, 4 }, 0 },
	{ "word", word, 2, { 8, 4 }, 0 },
	{ "tex_via", tex_via, 3, { 8, 8, 4 }, 0 },
	{ 0 },
};
