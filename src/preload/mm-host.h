/*
 * mm-host.h - pinned host buffers for evicted objects, kept for reuse.
 */
#ifndef KMUX_MM_HOST_H
#define KMUX_MM_HOST_H

#include <stdint.h>

#include "cuda-internal.h"

/*
 * A pinned buffer of at least size bytes for an object of context ctx:
 * one kept from an earlier restore when one fits, else a new one.  *got
 * is its real size (give it back with that).  0 or -ENOMEM.  The caller
 * serializes calls (mm_mu).
 */
int mm_host_take(CUcontext ctx, uint64_t size, void **p, uint64_t *got);

/* Done with a buffer from mm_host_take: kept for the next eviction or freed. */
void mm_host_give(CUcontext ctx, void *p, uint64_t size);

/* The context is going away: its buffers go with it (the driver frees them). */
void mm_host_ctx_gone(CUcontext ctx);

/*
 * How many bytes may be kept: KMUX_MM_HOST_KEEP (a size; 0 turns keeping
 * off), else -1: up to the most the process ever had pinned at once.
 * Returns 0 or -EINVAL for a bad size.
 */
int mm_host_init(const char *keep);

struct mm_host_stats {
	uint64_t allocs, reuses, frees;	/* cuMemAllocHost, kept ones, cuMemFreeHost */
	uint64_t kept, out, peak_out;	/* bytes now, bytes now, bytes */
};
void mm_host_get_stats(struct mm_host_stats *st);

#endif
