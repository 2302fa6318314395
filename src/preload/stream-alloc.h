/*
 * stream-alloc.h - stream-ordered allocation under the scheduler
 * (KMUX_STREAM_ALLOC=1, `kmux run --streams N --stream-alloc`; issue 3).
 *
 * A synchronous cuMemFree synchronizes the device, so a program that frees
 * per phase drains every pool stream at each phase's end.  With this on,
 * cuMemAlloc is served from a kmux-owned memory pool per device (release
 * threshold raised, so freed memory is kept for reuse) on a kmux-owned
 * idle stream per context, which is synchronized before the call returns:
 * the pointer is valid on every stream, as cuMemAlloc promises.  cuMemFree
 * of such a pointer becomes a scheduled operation writing the allocation,
 * a cuMemFreeAsync on a pool stream after every user, with no host or
 * device synchronization (wrap-mem.c).
 *
 * Only while the scheduler is on for the context, no capture is in
 * progress and the memory manager is off; each allocation that cannot use
 * the pool is an ordinary cuMemAlloc, and the allocation table's
 * ALLOC_F_POOLED says which way each pointer must be freed.  A free is
 * stream-ordered only while the program has never created a non-blocking
 * stream (whose users kmux cannot see); otherwise it is synchronous: the
 * context is synchronized first, as cuMemFree would.
 *
 * Quota: a freed block the pool keeps is still the task's memory (it stays
 * charged, counted here as kept bytes).  An allocation past the quota or
 * failing with out of memory first trims the pool (after the current
 * context's pool streams have finished their frees) and is retried once.
 * docs/design-streams.md ("Stream-ordered allocation") has the rest.
 */
#ifndef KMUX_STREAM_ALLOC_H
#define KMUX_STREAM_ALLOC_H

#include <stddef.h>
#include <stdint.h>

#include "cuda-internal.h"

/* Set by the constructor (after streams_init and mm_init). */
extern int salloc_on;

/*
 * From the constructor: KMUX_STREAM_ALLOC's value ("1": on), and
 * KMUX_STREAM_ALLOC_KEEP's (the pool's release threshold, a quota_parse
 * size; NULL: keep everything).  Off, with a warning for KMUX_LOG, without
 * the scheduler or with the memory manager.
 */
void salloc_init(const char *on, const char *keep);

/*
 * cuMemAlloc through the pool: 1 and *res (CUDA_SUCCESS: *dptr is pooled
 * memory, its quota charged; CUDA_ERROR_OUT_OF_MEMORY past the quota even
 * after a trim), or 0 when the caller must make the real cuMemAlloc (the
 * pool path does not apply or failed: counted as a fallback).
 */
int salloc_alloc(CUdeviceptr *dptr, size_t size, CUresult *res);

/*
 * A real allocation failed with out of memory: trim the current device's
 * pool.  1 when something was given back (retry once), 0 otherwise.
 */
int salloc_trim_current(void);

/*
 * Freeing a pooled allocation of device dev, size bytes.  _ordered: after
 * its users on a pool stream, _sync: at once on kmux's stream of the
 * current context, after a context synchronization (the caller has done
 * it).  The bytes stay the pool's (and the quota's) until a trim.
 */
CUresult salloc_free_now(CUdeviceptr p);
void salloc_freed(int dev, uint64_t size, int ordered);

/* Before the context goes away: kmux's stream in it is destroyed. */
void salloc_ctx_gone(CUcontext ctx);

/* The exit log line (from the scheduler's report). */
void salloc_report(void);

void salloc_atfork_child(void);

#endif
