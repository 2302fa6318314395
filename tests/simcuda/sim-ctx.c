/*
 * sim-ctx.c - contexts: each device's primary context (retained and released
 * by count, reset), explicit contexts (cuCtxCreate / cuCtxDestroy), the
 * per-thread stack of current contexts, and context-wide synchronization.
 *
 * A context owns its streams (with their worker threads), events, modules,
 * graphs and the memory allocated in it; tearing it down drains and joins
 * the streams, then frees all of that and writes its records to SIMCUDA_LOG.
 * A primary context's handle outlives its resources: releasing it to zero
 * (or resetting it) tears down what it owns, and the next retain brings the
 * same handle back to life, as the real driver does.
 */
#include <stdlib.h>
#include <string.h>

#include "sim.h"

#define CTX_STACK_MAX 64

static __thread struct sim_ctx *ctx_stack[CTX_STACK_MAX];
static __thread int ctx_depth;

static struct sim_ctx *ctx_new(struct sim_device *d, unsigned flags,
			       int primary)
{
	struct sim_ctx *c = calloc(1, sizeof(*c));

	if (c == NULL)
		return NULL;
	c->magic = SIM_MAGIC_CTX;
	c->id = sim_new_id();
	c->dev = d;
	c->flags = flags;
	c->is_primary = primary;
	sim_list_init(&c->streams);
	sim_list_init(&c->events);
	sim_list_init(&c->modules);
	sim_list_init(&c->graphs);
	sim_list_init(&c->gexecs);
	if (sim_handle_add(c, SIM_H_CTX) < 0) {
		free(c);
		return NULL;
	}
	sim_list_add_tail(&sim.ctxs, &c->link);
	return c;
}

/* Lock held.  c's stack limit is now v (and its reservation with it). */
static void ctx_stack_limit(struct sim_ctx *c, size_t v)
{
	c->limits[CU_LIMIT_STACK_SIZE] = v;
	c->dev->used -= c->stack_reserved;
	c->stack_reserved = (uint64_t)v * sim.stack_threads;
	c->dev->used += c->stack_reserved;
}

/* Give c its legacy default stream: it is then usable. */
static CUresult ctx_activate(struct sim_ctx *c)
{
	c->legacy = sim_stream_new(c, SIM_STREAM_LEGACY, 0, 0);
	if (c->legacy == NULL)
		return CUDA_ERROR_OUT_OF_MEMORY;
	/* A GPU's default; the reservation as a real context makes it. */
	ctx_stack_limit(c, 1024);
	c->active = 1;
	c->sticky = CUDA_SUCCESS;
	return CUDA_SUCCESS;
}

/*
 * Drain, join and free everything c owns.  Lock held; dropped while worker
 * threads are joined, with c marked dying so no new work gets in.
 */
static void ctx_teardown(struct sim_ctx *c)
{
	c->dying = 1;
	sim_ctx_drain(c);
	sim_stream_free_all(c);
	c->legacy = NULL;
	sim_graph_free_all(c);
	sim_event_free_all(c);
	sim_module_free_all(c);
	sim_alloc_free_ctx(c);
	sim_rec_flush(c->id);
	c->dev->used -= c->stack_reserved;
	c->stack_reserved = 0;
	c->active = 0;
	c->dying = 0;
	c->sticky = CUDA_SUCCESS;
}

static void ctx_free(struct sim_ctx *c)
{
	sim_handle_del(c);
	sim_list_del(&c->link);
	c->magic = 0;
	free(c);
}

/* Forget c in this thread's stack (it is going away). */
static void stack_forget(struct sim_ctx *c)
{
	int i, j;

	for (i = 0, j = 0; i < ctx_depth; i++)
		if (ctx_stack[i] != c)
			ctx_stack[j++] = ctx_stack[i];
	ctx_depth = j;
}

int sim_ctx_usable(struct sim_ctx *c)
{
	return c != NULL && sim_handle_ok(c, SIM_H_CTX) && c->active &&
	       !c->dying;
}

struct sim_ctx *sim_ctx_current(void)
{
	struct sim_ctx *c;

	if (ctx_depth == 0)
		return NULL;
	c = ctx_stack[ctx_depth - 1];
	/* Destroyed from another thread: the stack entry is stale. */
	if (!sim_handle_ok(c, SIM_H_CTX))
		return NULL;
	return c;
}

CUresult sim_ctx_get(struct sim_ctx **out)
{
	CUresult err = sim_check_init();
	struct sim_ctx *c;

	if (err != CUDA_SUCCESS)
		return err;
	c = sim_ctx_current();
	if (!sim_ctx_usable(c))
		return CUDA_ERROR_INVALID_CONTEXT;
	*out = c;
	return CUDA_SUCCESS;
}

void sim_ctx_set_sticky(struct sim_ctx *c, CUresult err)
{
	if (c->sticky == CUDA_SUCCESS)
		c->sticky = err;
}

void sim_ctx_drain(struct sim_ctx *c)
{
	struct sim_list *l;

	/*
	 * Streams are only unlinked at teardown, so walking the list across
	 * the waits (which drop the lock) is safe; ones created meanwhile are
	 * appended and drained too.
	 */
	for (l = c->streams.next; l != &c->streams; l = l->next) {
		struct sim_stream *s = sim_container_of(l, struct sim_stream,
							link);

		sim_stream_wait_pos(s, s->submitted);
	}
}

/* ---- primary contexts ---------------------------------------------------- */

SIM_API CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev)
{
	struct sim_device *d;
	struct sim_ctx *c;
	CUresult err = sim_device_check(dev);

	if (err != CUDA_SUCCESS)
		return err;
	if (pctx == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	sim_lock();
	d = &sim.dev[dev];
	if (d->primary == NULL) {
		d->primary = ctx_new(d, d->primary_flags, 1);
		if (d->primary == NULL) {
			err = CUDA_ERROR_OUT_OF_MEMORY;
			goto out;
		}
	}
	c = d->primary;
	if (c->dying) {
		err = CUDA_ERROR_INVALID_CONTEXT;
		goto out;
	}
	if (!c->active) {
		c->flags = d->primary_flags;
		err = ctx_activate(c);
		if (err != CUDA_SUCCESS)
			goto out;
	}
	c->refs++;
	*pctx = (CUcontext)c;
out:
	sim_unlock();
	return err;
}

SIM_API CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev)
{
	struct sim_ctx *c;
	CUresult err = sim_device_check(dev);

	if (err != CUDA_SUCCESS)
		return err;
	sim_lock();
	c = sim.dev[dev].primary;
	if (c == NULL || c->refs == 0 || c->dying) {
		err = CUDA_ERROR_INVALID_CONTEXT;
		goto out;
	}
	if (--c->refs == 0)
		ctx_teardown(c);
out:
	sim_unlock();
	return err;
}

SIM_API CUresult cuDevicePrimaryCtxRelease(CUdevice dev)
{
	return cuDevicePrimaryCtxRelease_v2(dev);
}

SIM_API CUresult cuDevicePrimaryCtxReset_v2(CUdevice dev)
{
	struct sim_ctx *c;
	CUresult err = sim_device_check(dev);

	if (err != CUDA_SUCCESS)
		return err;
	sim_lock();
	c = sim.dev[dev].primary;
	if (c == NULL || !c->active)
		goto out;
	if (c->dying) {
		err = CUDA_ERROR_INVALID_CONTEXT;
		goto out;
	}
	ctx_teardown(c);
	/* Retainers keep a usable, fresh context. */
	if (c->refs > 0)
		err = ctx_activate(c);
out:
	sim_unlock();
	return err;
}

SIM_API CUresult cuDevicePrimaryCtxReset(CUdevice dev)
{
	return cuDevicePrimaryCtxReset_v2(dev);
}

SIM_API CUresult cuDevicePrimaryCtxSetFlags_v2(CUdevice dev, unsigned int flags)
{
	CUresult err = sim_device_check(dev);

	if (err != CUDA_SUCCESS)
		return err;
	if (flags & ~(unsigned)CU_CTX_FLAGS_MASK)
		return CUDA_ERROR_INVALID_VALUE;
	sim_lock();
	sim.dev[dev].primary_flags = flags;
	if (sim.dev[dev].primary != NULL)
		sim.dev[dev].primary->flags = flags;
	sim_unlock();
	return CUDA_SUCCESS;
}

SIM_API CUresult cuDevicePrimaryCtxSetFlags(CUdevice dev, unsigned int flags)
{
	return cuDevicePrimaryCtxSetFlags_v2(dev, flags);
}

SIM_API CUresult cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int *flags,
					    int *active)
{
	CUresult err = sim_device_check(dev);

	if (err != CUDA_SUCCESS)
		return err;
	if (flags == NULL || active == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	sim_lock();
	*flags = sim.dev[dev].primary_flags;
	*active = sim.dev[dev].primary != NULL && sim.dev[dev].primary->active;
	sim_unlock();
	return CUDA_SUCCESS;
}

/* ---- explicit contexts --------------------------------------------------- */

static CUresult ctx_create(CUcontext *pctx, unsigned int flags, CUdevice dev)
{
	struct sim_ctx *c;
	CUresult err = sim_device_check(dev);

	if (err != CUDA_SUCCESS)
		return err;
	if (pctx == NULL || (flags & ~(unsigned)CU_CTX_FLAGS_MASK))
		return CUDA_ERROR_INVALID_VALUE;
	sim_lock();
	if (ctx_depth == CTX_STACK_MAX) {
		err = CUDA_ERROR_OUT_OF_MEMORY;
		goto out;
	}
	c = ctx_new(&sim.dev[dev], flags, 0);
	if (c == NULL) {
		err = CUDA_ERROR_OUT_OF_MEMORY;
		goto out;
	}
	err = ctx_activate(c);
	if (err != CUDA_SUCCESS) {
		ctx_teardown(c);
		ctx_free(c);
		goto out;
	}
	c->refs = 1;
	ctx_stack[ctx_depth++] = c;
	*pctx = (CUcontext)c;
out:
	sim_unlock();
	return err;
}

SIM_API CUresult cuCtxCreate_v2(CUcontext *pctx, unsigned int flags,
				CUdevice dev)
{
	return ctx_create(pctx, flags, dev);
}

SIM_API CUresult cuCtxCreate(CUcontext *pctx, unsigned int flags, CUdevice dev)
{
	return ctx_create(pctx, flags, dev);
}

/* Execution affinity (SM limits) is accepted and has no effect here. */
SIM_API CUresult cuCtxCreate_v3(CUcontext *pctx,
				CUexecAffinityParam *paramsArray,
				int numParams, unsigned int flags,
				CUdevice dev)
{
	if (numParams < 0 || (numParams > 0 && paramsArray == NULL))
		return CUDA_ERROR_INVALID_VALUE;
	return ctx_create(pctx, flags, dev);
}

SIM_API CUresult cuCtxCreate_v4(CUcontext *pctx,
				CUctxCreateParams *ctxCreateParams,
				unsigned int flags, CUdevice dev)
{
	if (ctxCreateParams != NULL &&
	    ctxCreateParams->numExecAffinityParams > 0 &&
	    ctxCreateParams->execAffinityParams == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	return ctx_create(pctx, flags, dev);
}

SIM_API CUresult cuCtxDestroy_v2(CUcontext ctx)
{
	struct sim_ctx *c = (struct sim_ctx *)ctx;
	CUresult err = sim_check_init();

	if (err != CUDA_SUCCESS)
		return err;
	sim_lock();
	if (!sim_handle_ok(c, SIM_H_CTX) || c->is_primary || c->dying) {
		err = CUDA_ERROR_INVALID_CONTEXT;
		goto out;
	}
	ctx_teardown(c);
	stack_forget(c);
	ctx_free(c);
out:
	sim_unlock();
	return err;
}

SIM_API CUresult cuCtxDestroy(CUcontext ctx)
{
	return cuCtxDestroy_v2(ctx);
}

/* ---- the current context ------------------------------------------------- */

SIM_API CUresult cuCtxSetCurrent(CUcontext ctx)
{
	struct sim_ctx *c = (struct sim_ctx *)ctx;
	CUresult err = sim_check_init();

	if (err != CUDA_SUCCESS)
		return err;
	sim_lock();
	if (c == NULL) {
		if (ctx_depth > 0)
			ctx_depth--;
		goto out;
	}
	if (!sim_handle_ok(c, SIM_H_CTX)) {
		err = CUDA_ERROR_INVALID_CONTEXT;
		goto out;
	}
	if (ctx_depth == 0)
		ctx_depth = 1;
	ctx_stack[ctx_depth - 1] = c;
out:
	sim_unlock();
	return err;
}

SIM_API CUresult cuCtxGetCurrent(CUcontext *pctx)
{
	CUresult err = sim_check_init();

	if (err != CUDA_SUCCESS)
		return err;
	if (pctx == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	sim_lock();
	*pctx = (CUcontext)sim_ctx_current();
	sim_unlock();
	return CUDA_SUCCESS;
}

SIM_API CUresult cuCtxPushCurrent_v2(CUcontext ctx)
{
	struct sim_ctx *c = (struct sim_ctx *)ctx;
	CUresult err = sim_check_init();

	if (err != CUDA_SUCCESS)
		return err;
	sim_lock();
	if (!sim_handle_ok(c, SIM_H_CTX))
		err = CUDA_ERROR_INVALID_CONTEXT;
	else if (ctx_depth == CTX_STACK_MAX)
		err = CUDA_ERROR_OUT_OF_MEMORY;
	else
		ctx_stack[ctx_depth++] = c;
	sim_unlock();
	return err;
}

SIM_API CUresult cuCtxPushCurrent(CUcontext ctx)
{
	return cuCtxPushCurrent_v2(ctx);
}

SIM_API CUresult cuCtxPopCurrent_v2(CUcontext *pctx)
{
	CUresult err = sim_check_init();
	struct sim_ctx *c;

	if (err != CUDA_SUCCESS)
		return err;
	sim_lock();
	c = sim_ctx_current();
	if (c == NULL) {
		err = CUDA_ERROR_INVALID_CONTEXT;
		goto out;
	}
	ctx_depth--;
	if (pctx != NULL)
		*pctx = (CUcontext)c;
out:
	sim_unlock();
	return err;
}

SIM_API CUresult cuCtxPopCurrent(CUcontext *pctx)
{
	return cuCtxPopCurrent_v2(pctx);
}

/* ctx, or the current context when ctx is NULL; lock held. */
static CUresult ctx_or_current(CUcontext ctx, struct sim_ctx **out)
{
	struct sim_ctx *c = (struct sim_ctx *)ctx;

	if (c == NULL)
		return sim_ctx_get(out);
	if (!sim_ctx_usable(c))
		return CUDA_ERROR_INVALID_CONTEXT;
	*out = c;
	return CUDA_SUCCESS;
}

SIM_API CUresult cuCtxGetDevice_v2(CUdevice *device, CUcontext ctx)
{
	struct sim_ctx *c;
	CUresult err;

	if (device == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	sim_lock();
	err = ctx_or_current(ctx, &c);
	if (err == CUDA_SUCCESS)
		*device = c->dev->ordinal;
	sim_unlock();
	return err;
}

SIM_API CUresult cuCtxGetDevice(CUdevice *device)
{
	return cuCtxGetDevice_v2(device, NULL);
}

SIM_API CUresult cuCtxSynchronize_v2(CUcontext ctx)
{
	struct sim_ctx *c;
	CUresult err;

	sim_lock();
	err = ctx_or_current(ctx, &c);
	if (err == CUDA_SUCCESS) {
		sim_ctx_drain(c);
		err = c->sticky;
	}
	sim_unlock();
	return err;
}

SIM_API CUresult cuCtxSynchronize(void)
{
	return cuCtxSynchronize_v2(NULL);
}

SIM_API CUresult cuCtxGetApiVersion(CUcontext ctx, unsigned int *version)
{
	struct sim_ctx *c;
	CUresult err;

	if (version == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	sim_lock();
	err = ctx_or_current(ctx, &c);
	if (err == CUDA_SUCCESS)
		*version = SIM_DRIVER_VERSION;
	sim_unlock();
	return err;
}

SIM_API CUresult cuCtxGetId(CUcontext ctx, unsigned long long *ctxId)
{
	struct sim_ctx *c;
	CUresult err;

	if (ctxId == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	sim_lock();
	err = ctx_or_current(ctx, &c);
	if (err == CUDA_SUCCESS)
		*ctxId = c->id;
	sim_unlock();
	return err;
}

SIM_API CUresult cuCtxGetFlags(unsigned int *flags)
{
	struct sim_ctx *c;
	CUresult err;

	if (flags == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	sim_lock();
	err = sim_ctx_get(&c);
	if (err == CUDA_SUCCESS)
		*flags = c->flags;
	sim_unlock();
	return err;
}

SIM_API CUresult cuCtxSetFlags(unsigned int flags)
{
	struct sim_ctx *c;
	CUresult err;

	if (flags & ~(unsigned)CU_CTX_FLAGS_MASK)
		return CUDA_ERROR_INVALID_VALUE;
	sim_lock();
	err = sim_ctx_get(&c);
	if (err == CUDA_SUCCESS)
		c->flags = flags;
	sim_unlock();
	return err;
}

SIM_API CUresult cuCtxGetStreamPriorityRange(int *leastPriority,
					     int *greatestPriority)
{
	CUresult err = sim_check_init();

	if (err != CUDA_SUCCESS)
		return err;
	if (leastPriority != NULL)
		*leastPriority = 0;
	if (greatestPriority != NULL)
		*greatestPriority = -5;
	return CUDA_SUCCESS;
}

/*
 * Limits are remembered and reported back; none changes behaviour but the
 * stack size, whose reservation counts as used memory with
 * SIMCUDA_STACK_THREADS.
 */
SIM_API CUresult cuCtxSetLimit(CUlimit limit, size_t value)
{
	struct sim_ctx *c;
	CUresult err;

	if ((unsigned)limit >= 16)
		return CUDA_ERROR_UNSUPPORTED_LIMIT;
	sim_lock();
	err = sim_ctx_get(&c);
	if (err == CUDA_SUCCESS && limit == CU_LIMIT_STACK_SIZE)
		ctx_stack_limit(c, value);
	else if (err == CUDA_SUCCESS)
		c->limits[limit] = value;
	sim_unlock();
	return err;
}

SIM_API CUresult cuCtxGetLimit(size_t *pvalue, CUlimit limit)
{
	struct sim_ctx *c;
	CUresult err;

	if (pvalue == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((unsigned)limit >= 16)
		return CUDA_ERROR_UNSUPPORTED_LIMIT;
	sim_lock();
	err = sim_ctx_get(&c);
	if (err == CUDA_SUCCESS)
		*pvalue = c->limits[limit];
	sim_unlock();
	return err;
}

/*
 * Process exit: free what no thread can use any more, so leak checkers see
 * a clean heap.  Contexts still active keep their streams (worker threads
 * may be running); inactive primary contexts are just memory.
 */
void sim_ctx_fini(void)
{
	int i;

	for (i = 0; i < sim.ndev; i++) {
		struct sim_ctx *c = sim.dev[i].primary;

		if (c != NULL && !c->active && !c->dying) {
			ctx_free(c);
			sim.dev[i].primary = NULL;
		}
	}
}
