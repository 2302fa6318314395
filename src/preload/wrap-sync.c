/*
 * wrap-sync.c - the synchronization family (context, stream and event
 * synchronization, queries, cross-stream waits, event records) and the
 * stream lifecycle (create, destroy, capture).
 *
 * Host synchronizations are where the GPU's timestamps of finished work
 * become readable, so they also resolve --timing events.
 */
#include "preload.h"

void sync_done(enum trace_sync_kind kind, uint64_t obj, uint64_t t0,
	       CUresult r)
{
	trace_sync(kind, obj, t0, trace_now(), r);
	if (kind == TRACE_SYNC_CTX || kind == TRACE_SYNC_STREAM ||
	    kind == TRACE_SYNC_EVENT)
		trace_resolve_timing(0);
}

KMUX_EXPORT CUresult CUDAAPI cuCtxSynchronize(void)
{
	uint64_t t0;
	CUresult r;

	if (NO_DRIVER(cuCtxSynchronize))
		return CUDA_ERROR_NOT_INITIALIZED;
	if (likely(!kmux_tracking))
		return REAL(cuCtxSynchronize)();
	t0 = trace_now();
	r = REAL(cuCtxSynchronize)();
	sync_done(TRACE_SYNC_CTX, 0, t0, r);
	return r;
}

/* CUDA 13's cudart asks for this one: the context is explicit (NULL: current). */
KMUX_EXPORT CUresult CUDAAPI cuCtxSynchronize_v2(CUcontext ctx)
{
	uint64_t t0;
	CUresult r;

	if (NO_DRIVER(cuCtxSynchronize_v2))
		return CUDA_ERROR_NOT_INITIALIZED;
	if (likely(!kmux_tracking))
		return REAL(cuCtxSynchronize_v2)(ctx);
	t0 = trace_now();
	r = REAL(cuCtxSynchronize_v2)(ctx);
	sync_done(TRACE_SYNC_CTX, (uint64_t)(uintptr_t)ctx, t0, r);
	return r;
}

static CUresult stream_sync(int per_thread, CUstream s)
{
	uint64_t t0 = trace_now();
	CUresult r;

	r = per_thread ? REAL(cuStreamSynchronize_ptsz)(s)
		       : REAL(cuStreamSynchronize)(s);
	sync_done(TRACE_SYNC_STREAM, stream_norm(s, per_thread), t0, r);
	return r;
}

KMUX_EXPORT CUresult CUDAAPI cuStreamSynchronize(CUstream s)
{
	if (NO_DRIVER(cuStreamSynchronize))
		return CUDA_ERROR_NOT_INITIALIZED;
	if (likely(!kmux_tracking))
		return REAL(cuStreamSynchronize)(s);
	return stream_sync(0, s);
}

KMUX_EXPORT CUresult CUDAAPI cuStreamSynchronize_ptsz(CUstream s)
{
	if (NO_DRIVER(cuStreamSynchronize_ptsz))
		return CUDA_ERROR_NOT_INITIALIZED;
	if (likely(!kmux_tracking))
		return REAL(cuStreamSynchronize_ptsz)(s);
	return stream_sync(1, s);
}

KMUX_EXPORT CUresult CUDAAPI cuEventSynchronize(CUevent e)
{
	uint64_t t0;
	CUresult r;

	if (NO_DRIVER(cuEventSynchronize))
		return CUDA_ERROR_NOT_INITIALIZED;
	if (likely(!kmux_tracking))
		return REAL(cuEventSynchronize)(e);
	t0 = trace_now();
	r = REAL(cuEventSynchronize)(e);
	sync_done(TRACE_SYNC_EVENT, (uint64_t)(uintptr_t)e, t0, r);
	return r;
}

/*
 * Queries are polled in tight loops by some programs: record them, but they
 * resolve nothing.
 */
KMUX_EXPORT CUresult CUDAAPI cuStreamQuery(CUstream s)
{
	uint64_t t0;
	CUresult r;

	if (NO_DRIVER(cuStreamQuery))
		return CUDA_ERROR_NOT_INITIALIZED;
	if (likely(!kmux_tracking))
		return REAL(cuStreamQuery)(s);
	t0 = trace_now();
	r = REAL(cuStreamQuery)(s);
	sync_done(TRACE_SYNC_STREAM_QUERY, stream_norm(s, 0), t0, r);
	return r;
}

KMUX_EXPORT CUresult CUDAAPI cuStreamQuery_ptsz(CUstream s)
{
	uint64_t t0;
	CUresult r;

	if (NO_DRIVER(cuStreamQuery_ptsz))
		return CUDA_ERROR_NOT_INITIALIZED;
	if (likely(!kmux_tracking))
		return REAL(cuStreamQuery_ptsz)(s);
	t0 = trace_now();
	r = REAL(cuStreamQuery_ptsz)(s);
	sync_done(TRACE_SYNC_STREAM_QUERY, stream_norm(s, 1), t0, r);
	return r;
}

KMUX_EXPORT CUresult CUDAAPI cuEventQuery(CUevent e)
{
	uint64_t t0;
	CUresult r;

	if (NO_DRIVER(cuEventQuery))
		return CUDA_ERROR_NOT_INITIALIZED;
	if (likely(!kmux_tracking))
		return REAL(cuEventQuery)(e);
	t0 = trace_now();
	r = REAL(cuEventQuery)(e);
	sync_done(TRACE_SYNC_EVENT_QUERY, (uint64_t)(uintptr_t)e, t0, r);
	return r;
}

KMUX_EXPORT CUresult CUDAAPI cuStreamWaitEvent(CUstream s, CUevent e,
					       unsigned flags)
{
	uint64_t t0;
	CUresult r;

	if (NO_DRIVER(cuStreamWaitEvent))
		return CUDA_ERROR_NOT_INITIALIZED;
	if (likely(!kmux_tracking))
		return REAL(cuStreamWaitEvent)(s, e, flags);
	t0 = trace_now();
	r = REAL(cuStreamWaitEvent)(s, e, flags);
	sync_done(TRACE_SYNC_STREAM_WAIT_EVENT, stream_norm(s, 0), t0, r);
	return r;
}

KMUX_EXPORT CUresult CUDAAPI cuStreamWaitEvent_ptsz(CUstream s, CUevent e,
						    unsigned flags)
{
	uint64_t t0;
	CUresult r;

	if (NO_DRIVER(cuStreamWaitEvent_ptsz))
		return CUDA_ERROR_NOT_INITIALIZED;
	if (likely(!kmux_tracking))
		return REAL(cuStreamWaitEvent_ptsz)(s, e, flags);
	t0 = trace_now();
	r = REAL(cuStreamWaitEvent_ptsz)(s, e, flags);
	sync_done(TRACE_SYNC_STREAM_WAIT_EVENT, stream_norm(s, 1), t0, r);
	return r;
}

KMUX_EXPORT CUresult CUDAAPI cuEventRecord(CUevent e, CUstream s)
{
	uint64_t t0;
	CUresult r;

	if (NO_DRIVER(cuEventRecord))
		return CUDA_ERROR_NOT_INITIALIZED;
	if (likely(!kmux_tracking))
		return REAL(cuEventRecord)(e, s);
	t0 = trace_now();
	r = REAL(cuEventRecord)(e, s);
	sync_done(TRACE_SYNC_EVENT_RECORD, stream_norm(s, 0), t0, r);
	return r;
}

KMUX_EXPORT CUresult CUDAAPI cuEventRecord_ptsz(CUevent e, CUstream s)
{
	uint64_t t0;
	CUresult r;

	if (NO_DRIVER(cuEventRecord_ptsz))
		return CUDA_ERROR_NOT_INITIALIZED;
	if (likely(!kmux_tracking))
		return REAL(cuEventRecord_ptsz)(e, s);
	t0 = trace_now();
	r = REAL(cuEventRecord_ptsz)(e, s);
	sync_done(TRACE_SYNC_EVENT_RECORD, stream_norm(s, 1), t0, r);
	return r;
}

KMUX_EXPORT CUresult CUDAAPI cuEventRecordWithFlags(CUevent e, CUstream s,
						    unsigned flags)
{
	uint64_t t0;
	CUresult r;

	if (NO_DRIVER(cuEventRecordWithFlags))
		return CUDA_ERROR_NOT_INITIALIZED;
	if (likely(!kmux_tracking))
		return REAL(cuEventRecordWithFlags)(e, s, flags);
	t0 = trace_now();
	r = REAL(cuEventRecordWithFlags)(e, s, flags);
	sync_done(TRACE_SYNC_EVENT_RECORD, stream_norm(s, 0), t0, r);
	return r;
}

KMUX_EXPORT CUresult CUDAAPI cuEventRecordWithFlags_ptsz(CUevent e,
		CUstream s, unsigned flags)
{
	uint64_t t0;
	CUresult r;

	if (NO_DRIVER(cuEventRecordWithFlags_ptsz))
		return CUDA_ERROR_NOT_INITIALIZED;
	if (likely(!kmux_tracking))
		return REAL(cuEventRecordWithFlags_ptsz)(e, s, flags);
	t0 = trace_now();
	r = REAL(cuEventRecordWithFlags_ptsz)(e, s, flags);
	sync_done(TRACE_SYNC_EVENT_RECORD, stream_norm(s, 1), t0, r);
	return r;
}

/*
 * Stream lifecycle and capture: pass-through today.  They are wrapped so the
 * stream scheduler can learn which streams the program owns and when it is
 * capturing a graph (work then must not be moved).
 */
KMUX_EXPORT CUresult CUDAAPI cuStreamCreate(CUstream *s, unsigned flags)
{
	if (NO_DRIVER(cuStreamCreate))
		return CUDA_ERROR_NOT_INITIALIZED;
	return REAL(cuStreamCreate)(s, flags);
}

KMUX_EXPORT CUresult CUDAAPI cuStreamCreateWithPriority(CUstream *s,
		unsigned flags, int priority)
{
	if (NO_DRIVER(cuStreamCreateWithPriority))
		return CUDA_ERROR_NOT_INITIALIZED;
	return REAL(cuStreamCreateWithPriority)(s, flags, priority);
}

KMUX_EXPORT CUresult CUDAAPI cuStreamDestroy_v2(CUstream s)
{
	if (NO_DRIVER(cuStreamDestroy_v2))
		return CUDA_ERROR_NOT_INITIALIZED;
	return REAL(cuStreamDestroy_v2)(s);
}

KMUX_EXPORT CUresult CUDAAPI cuStreamBeginCapture_v2(CUstream s,
		CUstreamCaptureMode mode)
{
	if (NO_DRIVER(cuStreamBeginCapture_v2))
		return CUDA_ERROR_NOT_INITIALIZED;
	return REAL(cuStreamBeginCapture_v2)(s, mode);
}

KMUX_EXPORT CUresult CUDAAPI cuStreamBeginCapture_v2_ptsz(CUstream s,
		CUstreamCaptureMode mode)
{
	if (NO_DRIVER(cuStreamBeginCapture_v2_ptsz))
		return CUDA_ERROR_NOT_INITIALIZED;
	return REAL(cuStreamBeginCapture_v2_ptsz)(s, mode);
}

KMUX_EXPORT CUresult CUDAAPI cuStreamEndCapture(CUstream s, CUgraph *g)
{
	if (NO_DRIVER(cuStreamEndCapture))
		return CUDA_ERROR_NOT_INITIALIZED;
	return REAL(cuStreamEndCapture)(s, g);
}

KMUX_EXPORT CUresult CUDAAPI cuStreamEndCapture_ptsz(CUstream s, CUgraph *g)
{
	if (NO_DRIVER(cuStreamEndCapture_ptsz))
		return CUDA_ERROR_NOT_INITIALIZED;
	return REAL(cuStreamEndCapture_ptsz)(s, g);
}
