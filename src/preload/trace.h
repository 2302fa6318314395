/*
 * trace.h - the preload's event recorder behind `kmux trace`.
 *
 * Enabled when KMUX_TRACE_DIR is set in the environment (the CLI sets it).
 * Each process writes its own file, <dir>/kmux-trace.<pid>.jsonl, one JSON
 * object per line; `kmux trace` merges the files of every process of the
 * command into one Chrome/Perfetto trace and prints the summary.  The line
 * format is documented in docs/kmux-trace.1 and trace.c.
 *
 * Recording is per thread (no lock on the hot path); buffers are flushed when
 * full, every ~100 ms at the next event, at thread exit and at process exit,
 * so a process that is killed loses only its last moments.
 */
#ifndef KMUX_TRACE_H
#define KMUX_TRACE_H

#include <stddef.h>
#include <stdint.h>

#include "cuda-internal.h"

#include "alloc-table.h"
#include "kparams.h"

/* Set once by trace_init(); read without locks everywhere else. */
extern int trace_enabled;
extern int trace_timing;

/*
 * Streams as the trace names them: the handle value, except the two default
 * streams, which the wrappers normalize to these (a NULL stream becomes one
 * of them according to the _ptsz/_ptds form that was called).
 */
#define TRACE_STREAM_LEGACY ((uint64_t)(uintptr_t)CU_STREAM_LEGACY)
#define TRACE_STREAM_PER_THREAD ((uint64_t)(uintptr_t)CU_STREAM_PER_THREAD)

enum trace_api {
	TRACE_API_LAUNCH = 0,		/* cuLaunchKernel */
	TRACE_API_LAUNCH_EX = 1,	/* cuLaunchKernelEx */
	TRACE_API_LAUNCH_COOP = 2,	/* cuLaunchCooperativeKernel */
	TRACE_API_GRAPH = 3,		/* cuGraphLaunch (ki == NULL) */
	TRACE_API_HOST_FUNC = 4,	/* cuLaunchHostFunc (ki == NULL) */
};

struct trace_launch {
	const struct kernel_info *ki;	/* NULL for graph / host func */
	uint64_t stream;		/* normalized, see above */
	unsigned grid[3];
	unsigned block[3];
	unsigned shmem;
	enum trace_api api;
	const struct access *acc;
	int nacc;
	unsigned kflags;		/* KPARAMS_* from kparams_collect() */
	uint64_t t_begin, t_end;	/* trace_now() around the real call */
	CUresult result;
};

enum trace_copy_kind {
	TRACE_COPY_HTOD, TRACE_COPY_DTOH, TRACE_COPY_DTOD, TRACE_COPY_ANY,
	TRACE_COPY_PEER, TRACE_COPY_2D, TRACE_COPY_3D, TRACE_COPY_ARRAY,
	TRACE_MEMSET,
};

struct trace_copy {
	enum trace_copy_kind kind;
	uint64_t dst, src;		/* src 0 for memset */
	uint64_t bytes;
	uint64_t stream;		/* normalized */
	int async;
	uint64_t t_begin, t_end;
	CUresult result;
};

enum trace_sync_kind {
	TRACE_SYNC_CTX,			/* cuCtxSynchronize */
	TRACE_SYNC_STREAM,		/* cuStreamSynchronize, obj = stream */
	TRACE_SYNC_EVENT,		/* cuEventSynchronize, obj = event */
	TRACE_SYNC_STREAM_WAIT_EVENT,	/* cuStreamWaitEvent, obj = stream */
	TRACE_SYNC_EVENT_RECORD,	/* cuEventRecord(WithFlags), obj = stream */
	TRACE_SYNC_STREAM_QUERY,	/* cuStreamQuery */
	TRACE_SYNC_EVENT_QUERY,		/* cuEventQuery */
};

/*
 * Called once by the preload's configuration step, before any other trace_*
 * function.  dir NULL: tracing stays off.  Returns 0 or -errno (dir is not
 * a writable directory: tracing stays off, the program runs on).  The file
 * itself is created at the first flush, so a process that records nothing
 * (a shell, a compiler) leaves no file.
 */
int trace_init(const char *dir, int timing);

/* Monotonic nanoseconds (vDSO clock, no syscall). */
uint64_t trace_now(void);

/*
 * trace_now() while tracing, 0 otherwise: the timestamps of launches and
 * copies are read only by the trace, and two clock reads were a tenth of
 * what a scheduled launch cost the host (bench/launch-cost.sh).
 */
static inline uint64_t trace_stamp(void)
{
	return __atomic_load_n(&trace_enabled, __ATOMIC_RELAXED) ? trace_now()
								  : 0;
}

/*
 * --timing: record a start event on stream s before the real launch; returns
 * a token for trace_launch_end() (NULL when timing is off or failed).
 */
void *trace_launch_begin(CUstream s);
void trace_launch_end(void *token, CUstream s, const struct trace_launch *l);

void trace_copy(const struct trace_copy *c);
void trace_sync(enum trace_sync_kind kind, uint64_t obj, uint64_t t_begin,
		uint64_t t_end, CUresult result);
/* is_free: 0 for an allocation, 1 for its release. */
void trace_alloc(const struct alloc *a, int is_free, uint64_t t);
/* The memory manager's totals after a change (mm.c, its lock held). */
void trace_mm(uint64_t resident, uint64_t evicted, uint64_t reserved,
	      uint64_t t);

/*
 * wait == 0, after a host synchronization: resolve the timed launches that
 * have finished.  wait != 0, before a context is destroyed, reset or
 * released: wait for every timed launch, then destroy all of the recorder's
 * CUDA events (it is not told which context goes; the others set themselves
 * up again on their next timed launch).
 */
void trace_resolve_timing(int wait);

/*
 * Set (before exit) by a part that has counts to add to the process's
 * "exit" line: writes ',"key":value' pairs into buf, at most len bytes,
 * and returns how many (the stream scheduler's waits issued and pruned).
 */
extern int (*trace_exit_fields)(char *buf, size_t len);

/* Write out every buffered event (process exit, fork). */
void trace_flush_all(void);

/* In a forked child: drop the parent's buffers; the child gets its own file. */
void trace_atfork_child(void);

#endif
