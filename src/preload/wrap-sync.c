/*
 * wrap-sync.c - the synchronization family (context, stream and event
 * synchronization, queries, cross-stream waits, event records) and the
 * stream lifecycle (create, destroy, capture).
 *
 * Host synchronizations are where the GPU's timestamps of finished work
 * become readable, so they also resolve --timing events, and where
 * `kmux verify` learns which device-to-host copies are complete.  Under
 * KMUX_STREAMS, a synchronization of a default stream waits for the pool
 * streams with pending work (and the default stream itself, for work that
 * went there directly); an event recorded on a default stream covers all
 * earlier default-stream work (SCHED_JOIN); a default stream waiting for an
 * event is a barrier.  Creating a blocking stream switches scheduling off
 * for the context; a stream capture in progress bridges its default-stream
 * work (streams.c).
 */
#include "mm.h"
#include "preload.h"
#include "register.h"
#include "streams.h"
#include "verify.h"

void sync_done(enum trace_sync_kind kind, uint64_t obj, uint64_t t0,
	       CUresult r)
{
	trace_sync(kind, obj, t0, trace_now(), r);
	if (kind == TRACE_SYNC_CTX || kind == TRACE_SYNC_STREAM ||
	    kind == TRACE_SYNC_EVENT)
		trace_resolve_timing(0);
}

static CUresult ctx_sync(int v2, CUcontext ctx)
{
	struct streams_sync ss;
	uint64_t t0 = trace_now();
	CUresult r;

	if (kmux_streams)
		streams_ctx_sync_begin(ctx, &ss);
	r = v2 ? REAL(cuCtxSynchronize_v2)(ctx) : REAL(cuCtxSynchronize)();
	if (kmux_streams)
		streams_ctx_sync_end(&ss, r);
	if (kmux_verify && r == CUDA_SUCCESS)
		verify_done_ctx(ctx);
	sync_done(TRACE_SYNC_CTX, (uint64_t)(uintptr_t)ctx, t0, r);
	return r;
}

KMUX_EXPORT CUresult CUDAAPI cuCtxSynchronize(void)
{
	if (NO_DRIVER(cuCtxSynchronize))
		return CUDA_ERROR_NOT_INITIALIZED;
	host_wait_count();
	if (likely(!kmux_tracking))
		return REAL(cuCtxSynchronize)();
	return ctx_sync(0, NULL);
}

/* CUDA 13's cudart asks for this one: the context is explicit (NULL: current). */
KMUX_EXPORT CUresult CUDAAPI cuCtxSynchronize_v2(CUcontext ctx)
{
	if (NO_DRIVER(cuCtxSynchronize_v2))
		return CUDA_ERROR_NOT_INITIALIZED;
	host_wait_count();
	if (likely(!kmux_tracking))
		return REAL(cuCtxSynchronize_v2)(ctx);
	return ctx_sync(1, ctx);
}

static CUresult stream_sync(int per_thread, CUstream s)
{
	uint64_t t0 = trace_now();
	CUresult r = CUDA_SUCCESS;

	if (kmux_streams && streams_is_default(s))
		r = streams_sync_default(0);
	if (r == CUDA_SUCCESS)
		r = per_thread ? REAL(cuStreamSynchronize_ptsz)(s)
			       : REAL(cuStreamSynchronize)(s);
	if (kmux_verify && r == CUDA_SUCCESS)
		verify_done_stream(s, per_thread);
	sync_done(TRACE_SYNC_STREAM, stream_norm(s, per_thread), t0, r);
	return r;
}

KMUX_EXPORT CUresult CUDAAPI cuStreamSynchronize(CUstream s)
{
	if (NO_DRIVER(cuStreamSynchronize))
		return CUDA_ERROR_NOT_INITIALIZED;
	host_wait_count();
	if (likely(!kmux_tracking))
		return REAL(cuStreamSynchronize)(s);
	return stream_sync(0, s);
}

KMUX_EXPORT CUresult CUDAAPI cuStreamSynchronize_ptsz(CUstream s)
{
	if (NO_DRIVER(cuStreamSynchronize_ptsz))
		return CUDA_ERROR_NOT_INITIALIZED;
	host_wait_count();
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
	host_wait_count();
	if (likely(!kmux_tracking))
		return REAL(cuEventSynchronize)(e);
	t0 = trace_now();
	r = REAL(cuEventSynchronize)(e);
	if (kmux_verify && r == CUDA_SUCCESS)
		verify_done_event(e);
	sync_done(TRACE_SYNC_EVENT, (uint64_t)(uintptr_t)e, t0, r);
	return r;
}

/*
 * Queries are polled in tight loops by some programs: record them, but they
 * resolve nothing.
 */
static CUresult stream_query(int per_thread, CUstream s)
{
	uint64_t t0 = trace_now();
	CUresult r = CUDA_SUCCESS;

	if (kmux_streams && streams_is_default(s))
		r = streams_sync_default(1);
	if (r == CUDA_SUCCESS)
		r = per_thread ? REAL(cuStreamQuery_ptsz)(s)
			       : REAL(cuStreamQuery)(s);
	if (kmux_verify && r == CUDA_SUCCESS)
		verify_done_stream(s, per_thread);
	sync_done(TRACE_SYNC_STREAM_QUERY, stream_norm(s, per_thread), t0, r);
	return r;
}

KMUX_EXPORT CUresult CUDAAPI cuStreamQuery(CUstream s)
{
	if (NO_DRIVER(cuStreamQuery))
		return CUDA_ERROR_NOT_INITIALIZED;
	if (likely(!kmux_tracking))
		return REAL(cuStreamQuery)(s);
	return stream_query(0, s);
}

KMUX_EXPORT CUresult CUDAAPI cuStreamQuery_ptsz(CUstream s)
{
	if (NO_DRIVER(cuStreamQuery_ptsz))
		return CUDA_ERROR_NOT_INITIALIZED;
	if (likely(!kmux_tracking))
		return REAL(cuStreamQuery_ptsz)(s);
	return stream_query(1, s);
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
	if (kmux_verify && r == CUDA_SUCCESS)
		verify_done_event(e);
	sync_done(TRACE_SYNC_EVENT_QUERY, (uint64_t)(uintptr_t)e, t0, r);
	return r;
}

/* The arguments of a cross-stream wait or an event record. */
struct event_args {
	CUevent e;
	CUstream s;		/* the program's */
	unsigned flags;
	int per_thread;
	int with_flags;		/* cuEventRecordWithFlags */
};

static CUresult wait_event_issue(void *arg, CUstream to)
{
	const struct event_args *a = arg;

	if (to)
		return REAL(cuStreamWaitEvent)(to, a->e, a->flags);
	if (a->per_thread)
		return REAL(cuStreamWaitEvent_ptsz)(a->s, a->e, a->flags);
	return REAL(cuStreamWaitEvent)(a->s, a->e, a->flags);
}

static CUresult wait_event(int per_thread, CUstream s, CUevent e,
			   unsigned flags)
{
	struct event_args a = { e, s, flags, per_thread, 0 };
	/*
	 * A default stream waiting for an event: every later default-stream
	 * operation must follow it, and the wait itself follows all earlier
	 * ones, as on the legacy stream.
	 */
	struct streams_req rq = {
		.flags = SCHED_BARRIER,
		.orig = streams_default_handle(s, per_thread),
		.issue = wait_event_issue,
		.arg = &a,
	};
	uint64_t t0 = trace_now();
	CUresult r;

	if (!(kmux_streams && streams_is_default(s) && streams_run(&rq, &r)))
		r = streams_pass(s, wait_event_issue, &a);
	sync_done(TRACE_SYNC_STREAM_WAIT_EVENT, stream_norm(s, per_thread),
		  t0, r);
	return r;
}

KMUX_EXPORT CUresult CUDAAPI cuStreamWaitEvent(CUstream s, CUevent e,
					       unsigned flags)
{
	if (NO_DRIVER(cuStreamWaitEvent))
		return CUDA_ERROR_NOT_INITIALIZED;
	if (likely(!kmux_tracking))
		return REAL(cuStreamWaitEvent)(s, e, flags);
	return wait_event(0, s, e, flags);
}

KMUX_EXPORT CUresult CUDAAPI cuStreamWaitEvent_ptsz(CUstream s, CUevent e,
						    unsigned flags)
{
	if (NO_DRIVER(cuStreamWaitEvent_ptsz))
		return CUDA_ERROR_NOT_INITIALIZED;
	if (likely(!kmux_tracking))
		return REAL(cuStreamWaitEvent_ptsz)(s, e, flags);
	return wait_event(1, s, e, flags);
}

static CUresult record_issue(void *arg, CUstream to)
{
	const struct event_args *a = arg;
	CUstream s = to ? to : a->s;
	int pt = to ? 0 : a->per_thread;

	if (a->with_flags)
		return pt ? REAL(cuEventRecordWithFlags_ptsz)(a->e, s, a->flags)
			  : REAL(cuEventRecordWithFlags)(a->e, s, a->flags);
	return pt ? REAL(cuEventRecord_ptsz)(a->e, s)
		  : REAL(cuEventRecord)(a->e, s);
}

static CUresult event_record(int per_thread, int with_flags, CUevent e,
			     CUstream s, unsigned flags)
{
	struct event_args a = { e, s, flags, per_thread, with_flags };
	/*
	 * An event recorded on a default stream must cover all earlier
	 * default-stream work: it is recorded on the stream of a join.
	 */
	struct streams_req rq = {
		.flags = SCHED_JOIN,
		.orig = streams_default_handle(s, per_thread),
		.issue = record_issue,
		.arg = &a,
	};
	uint64_t t0 = trace_now();
	CUresult r;

	if (!(kmux_streams && streams_is_default(s) && streams_run(&rq, &r)))
		r = streams_pass(s, record_issue, &a);
	if (kmux_verify && r == CUDA_SUCCESS)
		verify_event_recorded(e, s, per_thread);
	sync_done(TRACE_SYNC_EVENT_RECORD, stream_norm(s, per_thread), t0, r);
	return r;
}

KMUX_EXPORT CUresult CUDAAPI cuEventRecord(CUevent e, CUstream s)
{
	if (NO_DRIVER(cuEventRecord))
		return CUDA_ERROR_NOT_INITIALIZED;
	if (likely(!kmux_tracking))
		return REAL(cuEventRecord)(e, s);
	return event_record(0, 0, e, s, 0);
}

KMUX_EXPORT CUresult CUDAAPI cuEventRecord_ptsz(CUevent e, CUstream s)
{
	if (NO_DRIVER(cuEventRecord_ptsz))
		return CUDA_ERROR_NOT_INITIALIZED;
	if (likely(!kmux_tracking))
		return REAL(cuEventRecord_ptsz)(e, s);
	return event_record(1, 0, e, s, 0);
}

KMUX_EXPORT CUresult CUDAAPI cuEventRecordWithFlags(CUevent e, CUstream s,
						    unsigned flags)
{
	if (NO_DRIVER(cuEventRecordWithFlags))
		return CUDA_ERROR_NOT_INITIALIZED;
	if (likely(!kmux_tracking))
		return REAL(cuEventRecordWithFlags)(e, s, flags);
	return event_record(0, 1, e, s, flags);
}

KMUX_EXPORT CUresult CUDAAPI cuEventRecordWithFlags_ptsz(CUevent e,
		CUstream s, unsigned flags)
{
	if (NO_DRIVER(cuEventRecordWithFlags_ptsz))
		return CUDA_ERROR_NOT_INITIALIZED;
	if (likely(!kmux_tracking))
		return REAL(cuEventRecordWithFlags_ptsz)(e, s, flags);
	return event_record(1, 1, e, s, flags);
}

/*
 * Stream lifecycle and capture: pass-through, but the stream scheduler
 * learns of blocking streams (they end scheduling in their context) and of
 * captures in progress (default-stream work is then bridged, or left to the
 * capture when it is the default stream being captured).
 */
KMUX_EXPORT CUresult CUDAAPI cuStreamCreate(CUstream *s, unsigned flags)
{
	CUresult r;

	if (NO_DRIVER(cuStreamCreate))
		return CUDA_ERROR_NOT_INITIALIZED;
	r = REAL(cuStreamCreate)(s, flags);
	if (unlikely(kmux_streams) && r == CUDA_SUCCESS)
		streams_stream_created(*s, flags);
	return r;
}

KMUX_EXPORT CUresult CUDAAPI cuStreamCreateWithPriority(CUstream *s,
		unsigned flags, int priority)
{
	CUresult r;

	if (NO_DRIVER(cuStreamCreateWithPriority))
		return CUDA_ERROR_NOT_INITIALIZED;
	r = REAL(cuStreamCreateWithPriority)(s, flags, priority);
	if (unlikely(kmux_streams) && r == CUDA_SUCCESS)
		streams_stream_created(*s, flags);
	return r;
}

static CUresult stream_destroy(CUstream s, CUresult (*real)(CUstream))
{
	if (unlikely(kmux_streams))
		streams_stream_destroying(s);
	/* Its pending work can no longer be waited for by name. */
	if (unlikely(mm_on))
		mm_stream_gone(s);
	return real(s);
}

KMUX_EXPORT CUresult CUDAAPI cuStreamDestroy_v2(CUstream s)
{
	if (NO_DRIVER(cuStreamDestroy_v2))
		return CUDA_ERROR_NOT_INITIALIZED;
	return stream_destroy(s, REAL(cuStreamDestroy_v2));
}

/* The CUDA 3.x ABI, for programs built against it. */
KMUX_EXPORT CUresult CUDAAPI cuStreamDestroy(CUstream s)
{
	if (NO_DRIVER(cuStreamDestroy))
		return CUDA_ERROR_NOT_INITIALIZED;
	return stream_destroy(s, REAL(cuStreamDestroy));
}

/*
 * The CUDA 10.0 ABI of cuStreamBeginCapture (no mode: global), still
 * exported by the driver: the scheduler must learn of these captures too.
 */
static CUresult capture_begin_v1(CUstream s, int per_thread,
				 CUresult (*real)(CUstream))
{
	CUresult r;

	if (likely(!kmux_streams))
		return real(s);
	streams_capture_begin(s, per_thread);
	r = real(s);
	if (r != CUDA_SUCCESS)
		streams_capture_end(s, per_thread);
	return r;
}

KMUX_EXPORT CUresult CUDAAPI cuStreamBeginCapture(CUstream s)
{
	if (NO_DRIVER(cuStreamBeginCapture))
		return CUDA_ERROR_NOT_INITIALIZED;
	return capture_begin_v1(s, 0, REAL(cuStreamBeginCapture));
}

KMUX_EXPORT CUresult CUDAAPI cuStreamBeginCapture_ptsz(CUstream s)
{
	if (NO_DRIVER(cuStreamBeginCapture_ptsz))
		return CUDA_ERROR_NOT_INITIALIZED;
	return capture_begin_v1(s, 1, REAL(cuStreamBeginCapture_ptsz));
}

KMUX_EXPORT CUresult CUDAAPI cuStreamBeginCapture_v2(CUstream s,
		CUstreamCaptureMode mode)
{
	CUresult r;

	if (NO_DRIVER(cuStreamBeginCapture_v2))
		return CUDA_ERROR_NOT_INITIALIZED;
	if (likely(!kmux_streams))
		return REAL(cuStreamBeginCapture_v2)(s, mode);
	streams_capture_begin(s, 0);
	r = REAL(cuStreamBeginCapture_v2)(s, mode);
	if (r != CUDA_SUCCESS)
		streams_capture_end(s, 0);
	return r;
}

KMUX_EXPORT CUresult CUDAAPI cuStreamBeginCapture_v2_ptsz(CUstream s,
		CUstreamCaptureMode mode)
{
	CUresult r;

	if (NO_DRIVER(cuStreamBeginCapture_v2_ptsz))
		return CUDA_ERROR_NOT_INITIALIZED;
	if (likely(!kmux_streams))
		return REAL(cuStreamBeginCapture_v2_ptsz)(s, mode);
	streams_capture_begin(s, 1);
	r = REAL(cuStreamBeginCapture_v2_ptsz)(s, mode);
	if (r != CUDA_SUCCESS)
		streams_capture_end(s, 1);
	return r;
}

KMUX_EXPORT CUresult CUDAAPI cuStreamBeginCaptureToGraph(CUstream s,
		CUgraph g, const CUgraphNode *deps,
		const CUgraphEdgeData *edges, size_t ndeps,
		CUstreamCaptureMode mode)
{
	CUresult r;

	if (NO_DRIVER(cuStreamBeginCaptureToGraph))
		return CUDA_ERROR_NOT_INITIALIZED;
	if (likely(!kmux_streams))
		return REAL(cuStreamBeginCaptureToGraph)(s, g, deps, edges,
							  ndeps, mode);
	streams_capture_begin(s, 0);
	r = REAL(cuStreamBeginCaptureToGraph)(s, g, deps, edges, ndeps, mode);
	if (r != CUDA_SUCCESS)
		streams_capture_end(s, 0);
	return r;
}

KMUX_EXPORT CUresult CUDAAPI cuStreamBeginCaptureToGraph_ptsz(CUstream s,
		CUgraph g, const CUgraphNode *deps,
		const CUgraphEdgeData *edges, size_t ndeps,
		CUstreamCaptureMode mode)
{
	CUresult r;

	if (NO_DRIVER(cuStreamBeginCaptureToGraph_ptsz))
		return CUDA_ERROR_NOT_INITIALIZED;
	if (likely(!kmux_streams))
		return REAL(cuStreamBeginCaptureToGraph_ptsz)(s, g, deps, edges,
							       ndeps, mode);
	streams_capture_begin(s, 1);
	r = REAL(cuStreamBeginCaptureToGraph_ptsz)(s, g, deps, edges, ndeps,
						   mode);
	if (r != CUDA_SUCCESS)
		streams_capture_end(s, 1);
	return r;
}

KMUX_EXPORT CUresult CUDAAPI cuStreamEndCapture(CUstream s, CUgraph *g)
{
	CUresult r;
	int was;

	if (NO_DRIVER(cuStreamEndCapture))
		return CUDA_ERROR_NOT_INITIALIZED;
	if (likely(!kmux_streams))
		return REAL(cuStreamEndCapture)(s, g);
	was = streams_capture_active(s, 0);
	r = REAL(cuStreamEndCapture)(s, g);
	if (was)
		streams_capture_end(s, 0);
	return r;
}

KMUX_EXPORT CUresult CUDAAPI cuStreamEndCapture_ptsz(CUstream s, CUgraph *g)
{
	CUresult r;
	int was;

	if (NO_DRIVER(cuStreamEndCapture_ptsz))
		return CUDA_ERROR_NOT_INITIALIZED;
	if (likely(!kmux_streams))
		return REAL(cuStreamEndCapture_ptsz)(s, g);
	was = streams_capture_active(s, 1);
	r = REAL(cuStreamEndCapture_ptsz)(s, g);
	if (was)
		streams_capture_end(s, 1);
	return r;
}
