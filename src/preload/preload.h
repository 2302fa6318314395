/*
 * preload.h - state shared by libkmux.so's wrappers: what is switched on,
 * and the small helpers every wrapper family uses.
 */
#ifndef KMUX_PRELOAD_H
#define KMUX_PRELOAD_H

#include <stdint.h>

#include "cuda-internal.h"
#include "compiler.h"
#include "real.h"
#include "trace.h"

/*
 * Non-zero when wrappers must look at each operation: tracing
 * (KMUX_TRACE_DIR), the stream scheduler (KMUX_STREAMS, see streams.h) or
 * `kmux verify`'s recorder (KMUX_VERIFY_LOG, see verify.h).  Written once
 * by the constructor before main(), read without synchronization
 * afterwards: when zero, every wrapper is a straight call through the real
 * table.
 */
extern int kmux_tracking;

/*
 * Non-zero when the memory manager (KMUX_MEMORY lazy or evict) is the only
 * reason for kmux_tracking; set by the constructor with it.
 */
extern int kmux_tracking_mm_only;

/*
 * mm.c: whether the memory manager lets the next operation, on stream
 * `user` (stream_norm()), go to the driver as the program made it, not
 * even decoded: 0 no (track it), else a ticket for mm_skip_end(), called
 * once the driver call returned.  See docs/design-memory.md, "Costs".
 */
int mm_skip_begin(uint64_t user);
void mm_skip_end(int ticket);
/* Environment, read once by the constructor (never on a hot path). */
struct kmux_config {
	const char *trace_dir;	/* KMUX_TRACE_DIR */
	int trace_timing;	/* KMUX_TRACE_TIMING */
	const char *streams;	/* KMUX_STREAMS */
	const char *verify_log;	/* KMUX_VERIFY_LOG */
};
extern struct kmux_config kmux_config;

/*
 * The stream an operation goes to, as kmux names it: a NULL stream is the
 * legacy default stream in the plain entry points and the calling thread's
 * per-thread default stream in the _ptsz/_ptds ones.
 */
static inline uint64_t stream_norm(CUstream s, int per_thread)
{
	if (!s)
		return per_thread ? TRACE_STREAM_PER_THREAD : TRACE_STREAM_LEGACY;
	return (uint64_t)(uintptr_t)s;
}

/*
 * In a wrapper, once kmux_tracking is known to be on: when the memory
 * manager alone tracks and waves this operation through, make the call
 * (CALL, an expression of type CUresult) as the program did and return its
 * result.  Else fall through to the tracked path.
 */
#define KMUX_MM_SKIP(stream, per_thread, call)				\
	do {								\
		if (kmux_tracking_mm_only) {				\
			int skip_ = mm_skip_begin(			\
				stream_norm((stream), (per_thread)));	\
			if (skip_) {					\
				CUresult r_ = (call);			\
				mm_skip_end(skip_);			\
				return r_;				\
			}						\
		}							\
	} while (0)

/*
 * True when the real entry point is missing (no libcuda, or a driver too old
 * to have it).  Every exported wrapper starts with
 *	if (NO_DRIVER(cuFoo)) return CUDA_ERROR_NOT_INITIALIZED;
 */
#define NO_DRIVER(name) (unlikely(!real_ready() || !REAL(name)))

/* Host-side synchronization finished: resolve timed launches. */
void sync_done(enum trace_sync_kind kind, uint64_t obj, uint64_t t0,
	       CUresult r);

unsigned procaddr_unmatched_count(void);

/*
 * wrap-mem.c: a launch of executable graph g, made by launch(arg), when
 * graph-mem.h knows memory nodes: the quota reserves what it allocates
 * first, the books and the tracker's map follow what it did.
 */
CUresult mem_graph_launch(CUgraphExec g, CUresult (*launch)(void *arg),
			  void *arg);

#endif
