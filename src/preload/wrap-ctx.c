/*
 * wrap-ctx.c - driver start-up, devices and contexts.
 *
 * Pass-through except where a context goes away: --timing events live in a
 * context, so they are resolved before it is destroyed or reset; the stream
 * scheduler's pool of that context is drained and dropped; `kmux verify`
 * gives up on copies into its memory.  The device queries and
 * cuCtxSetCurrent only forward (HOOK_FORWARD): a program that links them
 * calls these wrappers, one that fetches them by name gets the driver's.
 */
#include "ctx-stack.h"
#include "kparams.h"
#include "mm.h"
#include "preload.h"
#include "ptx-table.h"
#include "region.h"
#include "register.h"
#include "stream-alloc.h"
#include "streams.h"
#include "verify.h"

/*
 * A context went away (or may have: a primary release need not be the
 * last) with its modules: their handles may be reused.
 */
static void ctx_modules_gone(void)
{
	ptxtab_modules_gone();
	kparams_invalidate();
}

/* A context is about to go away (destroy, last release or reset). */
static void ctx_going(CUcontext ctx)
{
	trace_resolve_timing(1);
	if (ctx && kmux_streams)
		streams_ctx_gone(ctx);
	if (ctx && salloc_on)
		salloc_ctx_gone(ctx);
	if (ctx && kmux_verify)
		verify_ctx_gone(ctx);
	if (ctx)
		mm_ctx_gone(ctx);
	if (ctx && ctxstack_on)
		ctxstack_ctx_gone(ctx);
}

KMUX_EXPORT CUresult CUDAAPI cuInit(unsigned flags)
{
	if (NO_DRIVER(cuInit))
		return CUDA_ERROR_NOT_INITIALIZED;
	/* kmuxd first: an admitted GPU is set in CUDA_VISIBLE_DEVICES
	 * before the driver reads it.  Fails open but for a cancel. */
	if (register_at_init())
		return CUDA_ERROR_NO_DEVICE;
	return REAL(cuInit)(flags);
}

KMUX_EXPORT CUresult CUDAAPI cuDeviceGet(CUdevice *dev, int ordinal)
{
	if (NO_DRIVER(cuDeviceGet))
		return CUDA_ERROR_NOT_INITIALIZED;
	return REAL(cuDeviceGet)(dev, ordinal);
}

KMUX_EXPORT CUresult CUDAAPI cuDeviceGetCount(int *count)
{
	if (NO_DRIVER(cuDeviceGetCount))
		return CUDA_ERROR_NOT_INITIALIZED;
	return REAL(cuDeviceGetCount)(count);
}

KMUX_EXPORT CUresult CUDAAPI cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev)
{
	if (NO_DRIVER(cuDeviceTotalMem_v2))
		return CUDA_ERROR_NOT_INITIALIZED;
	return REAL(cuDeviceTotalMem_v2)(bytes, dev);
}

KMUX_EXPORT CUresult CUDAAPI cuCtxGetDevice(CUdevice *dev)
{
	if (NO_DRIVER(cuCtxGetDevice))
		return CUDA_ERROR_NOT_INITIALIZED;
	return REAL(cuCtxGetDevice)(dev);
}

KMUX_EXPORT CUresult CUDAAPI cuCtxGetDevice_v2(CUdevice *dev, CUcontext ctx)
{
	if (NO_DRIVER(cuCtxGetDevice_v2))
		return CUDA_ERROR_NOT_INITIALIZED;
	return REAL(cuCtxGetDevice_v2)(dev, ctx);
}

/* The stack limit may be kmux's lower one (ctx-stack.h). */
KMUX_EXPORT CUresult CUDAAPI cuCtxGetLimit(size_t *pvalue, CUlimit limit)
{
	CUresult r;

	if (NO_DRIVER(cuCtxGetLimit))
		return CUDA_ERROR_NOT_INITIALIZED;
	r = REAL(cuCtxGetLimit)(pvalue, limit);
	if (unlikely(ctxstack_on) && r == CUDA_SUCCESS)
		ctxstack_get_limit(limit, pvalue);
	return r;
}

KMUX_EXPORT CUresult CUDAAPI cuCtxSetLimit(CUlimit limit, size_t value)
{
	if (NO_DRIVER(cuCtxSetLimit))
		return CUDA_ERROR_NOT_INITIALIZED;
	if (unlikely(ctxstack_on))
		ctxstack_set_limit(limit);
	return REAL(cuCtxSetLimit)(limit, value);
}

KMUX_EXPORT CUresult CUDAAPI cuCtxSetCurrent(CUcontext ctx)
{
	if (NO_DRIVER(cuCtxSetCurrent))
		return CUDA_ERROR_NOT_INITIALIZED;
	return REAL(cuCtxSetCurrent)(ctx);
}

KMUX_EXPORT CUresult CUDAAPI cuCtxCreate_v2(CUcontext *ctx, unsigned flags,
					    CUdevice dev)
{
	if (NO_DRIVER(cuCtxCreate_v2))
		return CUDA_ERROR_NOT_INITIALIZED;
	CUresult r;

	r = REAL(cuCtxCreate_v2)(ctx, flags, dev);
	/* For a region's drain (rare call: a lock is fine here). */
	if (r == CUDA_SUCCESS && ctx)
		region_ctx_seen(*ctx);
	if (unlikely(ctxstack_on) && r == CUDA_SUCCESS && ctx)
		ctxstack_ctx_made(*ctx);
	return r;
}

KMUX_EXPORT CUresult CUDAAPI cuCtxCreate_v3(CUcontext *ctx,
		CUexecAffinityParam *params, int nparams, unsigned flags,
		CUdevice dev)
{
	if (NO_DRIVER(cuCtxCreate_v3))
		return CUDA_ERROR_NOT_INITIALIZED;
	CUresult r;

	r = REAL(cuCtxCreate_v3)(ctx, params, nparams, flags, dev);
	/* For a region's drain (rare call: a lock is fine here). */
	if (r == CUDA_SUCCESS && ctx)
		region_ctx_seen(*ctx);
	if (unlikely(ctxstack_on) && r == CUDA_SUCCESS && ctx)
		ctxstack_ctx_made(*ctx);
	return r;
}

KMUX_EXPORT CUresult CUDAAPI cuCtxCreate_v4(CUcontext *ctx,
		CUctxCreateParams *params, unsigned flags, CUdevice dev)
{
	if (NO_DRIVER(cuCtxCreate_v4))
		return CUDA_ERROR_NOT_INITIALIZED;
	CUresult r;

	r = REAL(cuCtxCreate_v4)(ctx, params, flags, dev);
	/* For a region's drain (rare call: a lock is fine here). */
	if (r == CUDA_SUCCESS && ctx)
		region_ctx_seen(*ctx);
	if (unlikely(ctxstack_on) && r == CUDA_SUCCESS && ctx)
		ctxstack_ctx_made(*ctx);
	return r;
}

KMUX_EXPORT CUresult CUDAAPI cuCtxDestroy_v2(CUcontext ctx)
{
	CUresult r;

	if (NO_DRIVER(cuCtxDestroy_v2))
		return CUDA_ERROR_NOT_INITIALIZED;
	if (kmux_tracking)
		ctx_going(ctx);
	region_ctx_gone(ctx);
	r = REAL(cuCtxDestroy_v2)(ctx);
	ctx_modules_gone();
	return r;
}

KMUX_EXPORT CUresult CUDAAPI cuDevicePrimaryCtxRetain(CUcontext *ctx,
						      CUdevice dev)
{
	CUresult r;

	if (NO_DRIVER(cuDevicePrimaryCtxRetain))
		return CUDA_ERROR_NOT_INITIALIZED;
	r = REAL(cuDevicePrimaryCtxRetain)(ctx, dev);
	if (unlikely(kmux_tracking) && r == CUDA_SUCCESS)
		streams_primary_retained(dev, *ctx);
	if (unlikely(ctxstack_on) && r == CUDA_SUCCESS)
		ctxstack_ctx_made(*ctx);
	if (r == CUDA_SUCCESS)
		region_ctx_seen(*ctx);
	return r;
}

KMUX_EXPORT CUresult CUDAAPI cuDevicePrimaryCtxRelease_v2(CUdevice dev)
{
	CUresult r;

	if (NO_DRIVER(cuDevicePrimaryCtxRelease_v2))
		return CUDA_ERROR_NOT_INITIALIZED;
	if (kmux_tracking) {
		/* Maybe not the last release: an "off" context stays off. */
		trace_resolve_timing(1);
		if (kmux_streams)
			streams_primary_gone(dev, 0);
		if (kmux_verify && streams_primary_ctx(dev))
			verify_ctx_gone(streams_primary_ctx(dev));
	}
	r = REAL(cuDevicePrimaryCtxRelease_v2)(dev);
	ctx_modules_gone();
	return r;
}

KMUX_EXPORT CUresult CUDAAPI cuDevicePrimaryCtxReset_v2(CUdevice dev)
{
	CUresult r;

	if (NO_DRIVER(cuDevicePrimaryCtxReset_v2))
		return CUDA_ERROR_NOT_INITIALIZED;
	if (kmux_tracking) {
		trace_resolve_timing(1);
		if (kmux_streams)
			streams_primary_gone(dev, 1);
		if (kmux_verify && streams_primary_ctx(dev))
			verify_ctx_gone(streams_primary_ctx(dev));
	}
	r = REAL(cuDevicePrimaryCtxReset_v2)(dev);
	ctx_modules_gone();
	return r;
}
