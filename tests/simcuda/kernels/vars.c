/*
 * vars.c - simulated kernels that keep state in a module-scope variable
 * (a `__device__` variable of CUDA C), for the stream scheduler's test of
 * kernels that reach memory outside their parameters
 * (build/simcuda/kernels/vars.so, t5j-streams-globals.sh):
 *
 *   vadd(unsigned v, unsigned us)	state = state * 3 + v: the order of
 *					the launches decides the result
 *   vread(unsigned *out, unsigned us)	*out = state
 *   vreset()				state = 0, 2 ms: no parameters at all
 *   vtouch(unsigned *p, unsigned us)	p[0] = p[0] * 5 + 1: parameters only
 *   vscale(unsigned *p, unsigned us)	p[0] = p[0] * coef + 1: reads coef
 *
 * `state` (a `__device__` variable) and `coef` (a `__constant__` one, which
 * only the host writes) are the module's variables, 4 bytes each, zeroed
 * at load.
 */
#include "simcuda.h"

static unsigned *state(struct sim_kctx *k, int rw)
{
	return sim_mem(k, sim_var(k, "state"), sizeof(unsigned), rw);
}

static void vadd(struct sim_kctx *k, void **params)
{
	unsigned *s;

	k->duration_us = SIM_ARG(params, 1, unsigned);
	s = state(k, SIM_RW);
	if (s)
		*s = *s * 3 + SIM_ARG(params, 0, unsigned);
}

static void vread(struct sim_kctx *k, void **params)
{
	unsigned *s, *out;

	k->duration_us = SIM_ARG(params, 1, unsigned);
	s = state(k, SIM_READ);
	out = sim_mem(k, SIM_ARG(params, 0, CUdeviceptr), sizeof(*out),
		      SIM_WRITE);
	if (s && out)
		*out = *s;
}

static void vreset(struct sim_kctx *k, void **params)
{
	unsigned *s;

	(void)params;
	k->duration_us = 2000;
	s = state(k, SIM_WRITE);
	if (s)
		*s = 0;
}

static void vtouch(struct sim_kctx *k, void **params)
{
	unsigned *p;

	k->duration_us = SIM_ARG(params, 1, unsigned);
	p = sim_mem(k, SIM_ARG(params, 0, CUdeviceptr), sizeof(*p), SIM_RW);
	if (p)
		*p = *p * 5 + 1;
}

static void vscale(struct sim_kctx *k, void **params)
{
	unsigned *c, *p;

	k->duration_us = SIM_ARG(params, 1, unsigned);
	c = sim_mem(k, sim_var(k, "coef"), sizeof(*c), SIM_READ);
	p = sim_mem(k, SIM_ARG(params, 0, CUdeviceptr), sizeof(*p), SIM_RW);
	if (c && p)
		*p = *p * *c + 1;
}

const struct sim_var simcuda_vars[] = {
	{ "state", sizeof(unsigned) },
	{ "coef", sizeof(unsigned) },
	{ 0 },
};

const struct sim_kernel simcuda_kernels[] = {
	{ "vadd", vadd, 2, { 4, 4 }, 0 },
	{ "vread", vread, 2, { 8, 4 }, 0 },
	{ "vtouch", vtouch, 2, { 8, 4 }, 0 },
	{ "vreset", vreset, 0, { 0 }, 0 },
	{ "vscale", vscale, 2, { 8, 4 }, 0 },
	{ 0 },
};
