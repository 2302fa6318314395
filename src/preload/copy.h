/*
 * copy.h - what every generated memcpy/memset wrapper (wrap-copy.c) calls
 * on its slow path: describe the operation, then run it through
 * copy_run(), which records it for the trace and `kmux verify` and, for
 * default-stream work under KMUX_STREAMS, hands it to the stream scheduler.
 */
#ifndef KMUX_COPY_H
#define KMUX_COPY_H

#include "preload.h"
#include "streams.h"

struct copy_call {
	struct trace_copy c;	/* kind, dst, src, bytes, stream, async */
	int per_thread;		/* a _ptsz / _ptds entry point */
	CUstream orig;		/* the stream argument; NULL for sync forms */
	const void *desc;	/* CUDA_MEMCPY2D / CUDA_MEMCPY3D, or NULL */
	CUcontext peer[2];	/* a peer copy's dst and src contexts */
};

void copy_begin(struct copy_call *cc, enum trace_copy_kind kind,
		uint64_t dst, uint64_t src, uint64_t bytes, CUstream s,
		int per_thread, int async);

/*
 * Run the operation: issue(arg, NULL) makes the call as the program made
 * it, issue(arg, s) its asynchronous form on stream s.  Returns its result.
 */
CUresult copy_run(struct copy_call *cc, streams_issue_fn issue, void *arg);

/*
 * Bench knob KMUX_DEBUG_SYNC_WAIT=1: every synchronous copy and memset is
 * waited for, as before copy_sync_waits() (the A/B baseline of
 * bench/streams.sh's KMUX_STREAMS_AB_OFF).  From the constructor.
 */
void copy_debug_sync_wait(const char *value);

/*
 * KMUX_PTRTAB: "0" stops noting pointer tables in uploads (ptrtab.h), so
 * that kernels given one are scheduled by their parameters alone.  From
 * the constructor.
 */
void copy_tables_init(const char *value);

/* Host or device address of one side of a 2D/3D copy. */
static inline uint64_t copy_side(CUmemorytype type, const void *host,
				 CUdeviceptr dev)
{
	if (type == CU_MEMORYTYPE_HOST)
		return (uint64_t)(uintptr_t)host;
	return dev;
}

#endif
