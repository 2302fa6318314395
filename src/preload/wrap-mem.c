/*
 * wrap-mem.c - the allocation family: every way a program obtains or gives
 * back memory the GPU can reach, recorded in the tracker's interval map.
 *
 * The map is kept whether or not tracing is on: it costs nothing on the
 * launch path and later parts (quotas, the memory manager) rely on it being
 * complete from the first allocation.
 *
 * Under KMUX_STREAMS: a synchronous free first waits for the scheduled work
 * that uses the allocation (and only that), then the scheduler forgets it;
 * stream-ordered allocations and frees on a default stream are scheduled
 * operations writing the allocation, so its users follow the allocation
 * and the free follows its users.
 *
 * Under KMUX_MEM_QUOTA (quota.h): device allocations reserve their bytes
 * before the driver is called (CUDA_ERROR_OUT_OF_MEMORY past the quota, the
 * driver untouched) and frees give back what the table recorded; VMM
 * physical memory and CUDA arrays, which no address names, are
 * remembered per handle.
 *
 * Under KMUX_STREAM_ALLOC (stream-alloc.h): cuMemAlloc comes from kmux's
 * pool, and cuMemFree of such memory is a scheduled cuMemFreeAsync after
 * the allocation's users; a pooled free keeps its bytes charged (the pool
 * keeps them) until a trim.
 *
 * Under KMUX_MEMORY=lazy|evict (mm.h): cuMemAlloc of at least KMUX_LAZY_MIN
 * bytes is a managed object, an address range backed on first touch; its
 * free goes to the memory manager.  Under evict, a pass-through
 * allocation that does not fit in the budget first evicts idle objects.
 */
#include <errno.h>

#include "alloc-table.h"
#include "graph-mem.h"
#include "log.h"
#include "mm.h"
#include "preload.h"
#include "quota.h"
#include "stream-alloc.h"
#include "streams.h"
#include "verify.h"

static int current_device(void)
{
	CUdevice d;

	if (REAL(cuCtxGetDevice) && REAL(cuCtxGetDevice)(&d) == CUDA_SUCCESS)
		return (int)d;
	return -1;
}

static void mem_untrack(uint64_t base);

/* Returns the new allocation's id, 0 when it could not be tracked. */
static uint64_t mem_track_flags(uint64_t base, uint64_t size,
				enum alloc_kind kind, unsigned flags)
{
	struct alloc_table *t = alloc_table_global();
	struct alloc a = { .base = base, .size = size, .kind = kind,
			   .flags = flags };
	int err;

	if (!t || !size)
		return 0;
	a.device = kind == ALLOC_HOST_MAPPED ? -1 : current_device();
	err = alloc_table_insert_flags(t, base, size, kind, a.device, flags,
				       &a.id);
	if (err) {
		/* The driver handed out a range we think is live: our view was
		 * stale (a free we did not see).  Replace it. */
		log_debug("tracking allocation 0x%llx+%llu: error %d",
			  (unsigned long long)base, (unsigned long long)size,
			  err);
		if (err != -EEXIST)
			return 0;
		alloc_table_remove(t, base, NULL);
		if (alloc_table_insert_flags(t, base, size, kind, a.device,
					     flags, &a.id))
			return 0;
	}
	if (kmux_tracking)
		trace_alloc(&a, 0, trace_now());
	return a.id;
}

static uint64_t mem_track(uint64_t base, uint64_t size, enum alloc_kind kind)
{
	return mem_track_flags(base, size, kind, 0);
}

/*
 * quota_reserve(n) (0 or nonzero); past the quota, memory kmux's pool
 * keeps is charged but unused: trim it and try once more.
 */
static int mem_reserve(uint64_t n)
{
	if (quota_reserve(n) == 0)
		return 0;
	if (unlikely(salloc_on) && salloc_trim_current() &&
	    quota_reserve(n) == 0)
		return 0;
	/* Deferred frees still hold their charge: give it back first. */
	return kmux_streams && streams_flush_frees() ? quota_reserve(n) : -1;
}

/*
 * What every counted allocation reserves through: the memory manager's
 * budget (evicting idle objects) or mem_reserve() (trimming kmux's pool,
 * giving back deferred frees).
 */
static int mem_reserve_any(uint64_t n)
{
	return unlikely(mm_on) ? mm_reserve(n) : mem_reserve(n);
}

/* The pooled allocation that starts at base: 1 and *a, or 0. */
static int mem_pooled(uint64_t base, struct alloc *a)
{
	struct alloc_table *t = alloc_table_global();

	return t && base && alloc_table_find(t, base, a) == 0 &&
	       a->base == base && (a->flags & ALLOC_F_POOLED);
}

/*
 * cuMemAlloc from kmux's pool: 1 and *r, or 0 for the real cuMemAlloc.  A
 * pointer kmux cannot flag as pooled would later reach the real cuMemFree:
 * it goes back to the pool at once instead.
 */
static int mem_alloc_pooled(CUdeviceptr *dptr, size_t size, CUresult *r)
{
	if (!salloc_alloc(dptr, size, r))
		return 0;
	if (*r != CUDA_SUCCESS ||
	    mem_track_flags(*dptr, size, ALLOC_DEVICE, ALLOC_F_POOLED))
		return 1;
	if (salloc_free_now(*dptr) == CUDA_SUCCESS)
		salloc_freed(current_device(), size, 0);
	return 0;
}

/*
 * The allocation that starts at base (0: none).  A synchronous free under
 * the stream scheduler first waits for the scheduled work that uses it;
 * pending `kmux verify` copies into it are given up.
 */
static uint64_t mem_before_free(uint64_t base)
{
	struct alloc_table *t = alloc_table_global();
	struct alloc a;

	if (!t || !base || alloc_table_find(t, base, &a) || a.base != base)
		return 0;
	if (kmux_streams)
		streams_before_free(a.id);
	if (kmux_verify && a.kind == ALLOC_HOST_MAPPED)
		verify_host_gone(a.base, a.size);
	return a.id;
}

static void mem_after_free(uint64_t base, uint64_t id)
{
	mem_untrack(base);
	if (kmux_streams)
		streams_forget(id);
}

static void mem_untrack(uint64_t base)
{
	struct alloc_table *t = alloc_table_global();
	struct alloc a;

	if (!t || !base || alloc_table_remove(t, base, &a))
		return;
	if (kmux_tracking)
		trace_alloc(&a, 1, trace_now());
}

KMUX_EXPORT CUresult CUDAAPI cuMemAlloc_v2(CUdeviceptr *dptr, size_t size)
{
	CUresult r;

	if (NO_DRIVER(cuMemAlloc_v2))
		return CUDA_ERROR_NOT_INITIALIZED;
	if (unlikely(mm_on) && size >= mm_min && size) {
		r = mm_alloc(dptr, size);
		if (r == CUDA_SUCCESS)
			mm_set_id(*dptr, mem_track(*dptr, size, ALLOC_DEVICE));
		return r;
	}
	if (unlikely(salloc_on) && mem_alloc_pooled(dptr, size, &r))
		return r;
	if (unlikely(quota_on) && mem_reserve_any(size))
		return CUDA_ERROR_OUT_OF_MEMORY;
	r = REAL(cuMemAlloc_v2)(dptr, size);
	if (r == CUDA_ERROR_OUT_OF_MEMORY && unlikely(salloc_on) &&
	    salloc_trim_current())
		r = REAL(cuMemAlloc_v2)(dptr, size);
	if (r == CUDA_ERROR_OUT_OF_MEMORY && kmux_streams &&
	    streams_flush_frees())
		r = REAL(cuMemAlloc_v2)(dptr, size);
	if (r == CUDA_SUCCESS)
		mem_track(*dptr, size, ALLOC_DEVICE);
	else if (unlikely(quota_on))
		quota_release(size);
	return r;
}

/*
 * The pitch is known only after the call: reserve width * height first, then
 * the padding; padding past the quota frees the allocation again.
 */
static CUresult alloc_pitch_quota(CUdeviceptr *dptr, size_t *pitch,
				  size_t width, size_t height, unsigned elem)
{
	uint64_t want = (uint64_t)width * height, got;
	CUresult r;

	if ((height && want / height != width) || mem_reserve(want))
		return CUDA_ERROR_OUT_OF_MEMORY;
	r = REAL(cuMemAllocPitch_v2)(dptr, pitch, width, height, elem);
	if (r != CUDA_SUCCESS) {
		quota_release(want);
		return r;
	}
	got = (uint64_t)*pitch * height;
	if (got > want && quota_reserve(got - want)) {
		REAL(cuMemFree_v2)(*dptr);
		quota_release(want);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	if (got < want)
		quota_release(want - got);
	mem_track(*dptr, got, ALLOC_DEVICE);
	return r;
}

KMUX_EXPORT CUresult CUDAAPI cuMemAllocPitch_v2(CUdeviceptr *dptr,
		size_t *pitch, size_t width, size_t height, unsigned elem)
{
	CUresult r;

	if (NO_DRIVER(cuMemAllocPitch_v2))
		return CUDA_ERROR_NOT_INITIALIZED;
	if (unlikely(quota_on))
		return alloc_pitch_quota(dptr, pitch, width, height, elem);
	r = REAL(cuMemAllocPitch_v2)(dptr, pitch, width, height, elem);
	if (r == CUDA_SUCCESS)
		mem_track(*dptr, (uint64_t)*pitch * height, ALLOC_DEVICE);
	return r;
}

KMUX_EXPORT CUresult CUDAAPI cuMemAllocManaged(CUdeviceptr *dptr, size_t size,
					       unsigned flags)
{
	CUresult r;

	if (NO_DRIVER(cuMemAllocManaged))
		return CUDA_ERROR_NOT_INITIALIZED;
	if (unlikely(quota_on) && mem_reserve(size))
		return CUDA_ERROR_OUT_OF_MEMORY;
	r = REAL(cuMemAllocManaged)(dptr, size, flags);
	if (r == CUDA_SUCCESS)
		mem_track(*dptr, size, ALLOC_MANAGED);
	else if (unlikely(quota_on))
		quota_release(size);
	return r;
}

/*
 * Stream s (the program's, 0 a default stream) is capturing into a graph:
 * a stream-ordered allocation or free there is a memory node, not memory.
 */
static int mem_capturing(CUstream s, int per_thread)
{
	CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_NONE;

	if (!REAL(cuStreamIsCapturing))
		return 0;
	/* An error here is the driver's to report, at the call itself. */
	return REAL(cuStreamIsCapturing)(streams_default_handle(s, per_thread),
					 &st) == CUDA_SUCCESS &&
	       st != CU_STREAM_CAPTURE_STATUS_NONE;
}

/*
 * What a free of ptr gives back to the quota: a live graph allocation's
 * charge, else what the table recorded (0 without a quota).  A live graph
 * allocation ends here without a quota too: the next launch of its graph
 * must track it again.
 */
static uint64_t mem_uncharge(uint64_t ptr)
{
	uint64_t charged = 0;

	if (gmem_free(ptr, &charged))
		return quota_on ? charged : 0;
	return quota_on ? quota_charged(ptr) : 0;
}

/*
 * mem_uncharge() for a stream-ordered free: nothing when captured (a free
 * node settles at its launch).
 */
static uint64_t mem_free_charge(uint64_t ptr, CUstream s, int per_thread)
{
	if ((!quota_on && !gmem_any()) || mem_capturing(s, per_thread))
		return 0;
	return mem_uncharge(ptr);
}

/*
 * A launch of executable graph g (launch(arg) makes it) with memory nodes:
 * reserve every allocation it makes, then settle the books: allocations
 * it leaves live stay charged and tracked, the ones it freed are given
 * back and forgotten.
 */
CUresult mem_graph_launch(CUgraphExec g, CUresult (*launch)(void *arg),
			  void *arg)
{
	struct alloc_table *t = alloc_table_global();
	uint64_t x = (uint64_t)(uintptr_t)g, need = 0;
	struct gmem_change c;
	struct alloc al;
	CUresult r;

	if (!gmem_launch_need(x, &need))
		return launch(arg);
	if (!quota_on)
		need = 0;
	if (need && mem_reserve_any(need)) {
		log_info("graph launch: its memory nodes allocate %llu bytes, "
			 "past KMUX_MEM_QUOTA", (unsigned long long)need);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	r = launch(arg);
	if (r != CUDA_SUCCESS) {
		if (need)
			quota_release(need);
		return r;
	}
	if (gmem_launch_done(x, need, &c))
		log_warn("graph launch: out of memory keeping the books of "
			 "its memory nodes; its allocations stay charged");
	for (uint32_t i = 0; i < c.nlive; i++)
		if (!t || alloc_table_find(t, c.live[i].va, &al) ||
		    al.base != c.live[i].va)
			mem_track_flags(c.live[i].va, c.live[i].size,
					ALLOC_DEVICE, ALLOC_F_GRAPH);
	for (uint32_t i = 0; i < c.nfreed; i++) {
		uint64_t id = t && alloc_table_find(t, c.freed[i], &al) == 0 &&
			      al.base == c.freed[i] ? al.id : 0;

		mem_after_free(c.freed[i], id);
	}
	if (quota_on && c.give_back)
		quota_release(c.give_back);
	gmem_change_free(&c);
	return r;
}

/* A stream-ordered allocation or free, for the scheduler's issue. */
struct async_args {
	int which;		/* ASYNC_* */
	int per_thread;
	CUdeviceptr *dptr;	/* allocations */
	CUdeviceptr ptr;	/* frees */
	size_t size;
	CUmemoryPool pool;	/* ASYNC_ALLOC_POOL */
	CUstream s;		/* the program's */
};

enum { ASYNC_ALLOC, ASYNC_ALLOC_POOL, ASYNC_FREE };

static CUresult async_issue(void *arg, CUstream to)
{
	const struct async_args *a = arg;
	CUstream s = to ? to : a->s;
	int pt = to ? 0 : a->per_thread;

	switch (a->which) {
	case ASYNC_ALLOC:
		return pt ? REAL(cuMemAllocAsync_ptsz)(a->dptr, a->size, s)
			  : REAL(cuMemAllocAsync)(a->dptr, a->size, s);
	case ASYNC_ALLOC_POOL:
		return pt ? REAL(cuMemAllocFromPoolAsync_ptsz)(a->dptr,
						a->size, a->pool, s)
			  : REAL(cuMemAllocFromPoolAsync)(a->dptr, a->size,
							  a->pool, s);
	default:
		return pt ? REAL(cuMemFreeAsync_ptsz)(a->ptr, s)
			  : REAL(cuMemFreeAsync)(a->ptr, s);
	}
}

/*
 * On a default stream under the scheduler, the allocation is an operation
 * writing a placeholder, renamed to the real id once the address is known.
 */
static CUresult alloc_async(struct async_args *a)
{
	uint64_t ph, id;
	struct sched_access acc;
	struct streams_req rq = {
		.acc = &acc, .nacc = 1,
		.orig = streams_default_handle(a->s, a->per_thread),
		.issue = async_issue, .arg = a,
	};
	CUresult r;

	/* Captured: a node of a graph, charged when a launch makes it live. */
	if (unlikely(quota_on) && mem_capturing(a->s, a->per_thread)) {
		r = streams_pass(a->s, async_issue, a);
		if (r == CUDA_SUCCESS)
			mem_track_flags(*a->dptr, a->size, ALLOC_DEVICE,
					ALLOC_F_GRAPH);
		return r;
	}
	if (unlikely(quota_on) && mem_reserve(a->size))
		return CUDA_ERROR_OUT_OF_MEMORY;
	if (likely(!kmux_streams) || !streams_is_default(a->s)) {
		r = streams_pass(a->s, async_issue, a);
		if (r == CUDA_SUCCESS)
			mem_track(*a->dptr, a->size, ALLOC_DEVICE);
		else if (unlikely(quota_on))
			quota_release(a->size);
		return r;
	}
	ph = streams_placeholder();
	acc = (struct sched_access){ .alloc_id = ph, .mode = SCHED_WRITE };
	if (!streams_run(&rq, &r))
		r = async_issue(a, NULL);
	id = r == CUDA_SUCCESS ? mem_track(*a->dptr, a->size, ALLOC_DEVICE)
			       : 0;
	streams_rename(ph, id);
	if (r != CUDA_SUCCESS && unlikely(quota_on))
		quota_release(a->size);
	return r;
}

KMUX_EXPORT CUresult CUDAAPI cuMemAllocAsync(CUdeviceptr *dptr, size_t size,
					     CUstream s)
{
	if (NO_DRIVER(cuMemAllocAsync))
		return CUDA_ERROR_NOT_INITIALIZED;
	return alloc_async(&(struct async_args){ .which = ASYNC_ALLOC,
			   .dptr = dptr, .size = size, .s = s });
}

KMUX_EXPORT CUresult CUDAAPI cuMemAllocAsync_ptsz(CUdeviceptr *dptr,
						  size_t size, CUstream s)
{
	if (NO_DRIVER(cuMemAllocAsync_ptsz))
		return CUDA_ERROR_NOT_INITIALIZED;
	return alloc_async(&(struct async_args){ .which = ASYNC_ALLOC,
			   .per_thread = 1, .dptr = dptr, .size = size,
			   .s = s });
}

KMUX_EXPORT CUresult CUDAAPI cuMemAllocFromPoolAsync(CUdeviceptr *dptr,
		size_t size, CUmemoryPool pool, CUstream s)
{
	if (NO_DRIVER(cuMemAllocFromPoolAsync))
		return CUDA_ERROR_NOT_INITIALIZED;
	return alloc_async(&(struct async_args){ .which = ASYNC_ALLOC_POOL,
			   .dptr = dptr, .size = size, .pool = pool, .s = s });
}

KMUX_EXPORT CUresult CUDAAPI cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *dptr,
		size_t size, CUmemoryPool pool, CUstream s)
{
	if (NO_DRIVER(cuMemAllocFromPoolAsync_ptsz))
		return CUDA_ERROR_NOT_INITIALIZED;
	return alloc_async(&(struct async_args){ .which = ASYNC_ALLOC_POOL,
			   .per_thread = 1, .dptr = dptr, .size = size,
			   .pool = pool, .s = s });
}

/* A pooled free on a pool stream (issue(arg, NULL): left to the caller). */
struct pooled_free {
	CUdeviceptr ptr;
	int issued;
};

static CUresult pooled_free_issue(void *arg, CUstream to)
{
	struct pooled_free *f = arg;

	if (!to)
		return CUDA_SUCCESS;
	f->issued = 1;
	return REAL(cuMemFreeAsync)(f->ptr, to);
}

/*
 * cuMemFree of pooled memory: an operation writing the allocation, so it
 * follows every user, and nothing waits for it.  When the scheduler does
 * not take it (capture, scheduling off) or the program has streams kmux
 * cannot see, the free is synchronous as cuMemFree's: the context first.
 */
static CUresult free_pooled(const struct alloc *al)
{
	struct pooled_free f = { .ptr = al->base };
	struct sched_access acc = { .alloc_id = al->id, .mode = SCHED_WRITE };
	struct streams_req rq = {
		.acc = &acc, .nacc = 1, .orig = CU_STREAM_LEGACY,
		.flags = STREAMS_FREES,
		.issue = pooled_free_issue, .arg = &f,
	};
	CUresult r;

	if (!atomic_load_explicit(&streams_own_nonblocking,
				  memory_order_relaxed) &&
	    streams_run(&rq, &r) && f.issued) {
		if (r == CUDA_SUCCESS) {
			mem_after_free(al->base, al->id);
			salloc_freed(al->device, al->size, 1);
		}
		return r;
	}
	mem_before_free(al->base);
	r = REAL(cuCtxSynchronize)();
	if (r == CUDA_SUCCESS)
		r = salloc_free_now(al->base);
	if (r == CUDA_SUCCESS) {
		mem_after_free(al->base, al->id);
		salloc_freed(al->device, al->size, 0);
	}
	return r;
}

/*
 * A plain device allocation freed under the scheduler: kept allocated by
 * streams.c until it is free to free (no wait for its users, no device
 * synchronization now), gone from the table and the scheduler at once.  1
 * when done so.
 */
static int mem_defer_free(uint64_t base, uint64_t charged)
{
	struct alloc_table *t = alloc_table_global();
	struct alloc a;

	/* The memory modes are about holding less: they free at once. */
	if (unlikely(mm_on) || !t || !base || alloc_table_find(t, base, &a) ||
	    a.base != base || a.kind != ALLOC_DEVICE || a.flags)
		return 0;
	/*
	 * Another device's memory: its users are another pool's work, which
	 * this context's idle point says nothing about.
	 */
	if (a.device < 0 || a.device != current_device())
		return 0;
	streams_ra_release(a.id);
	if (!streams_defer_free(base, a.size, charged))
		return 0;
	mem_after_free(base, a.id);
	return 1;
}

KMUX_EXPORT CUresult CUDAAPI cuMemFree_v2(CUdeviceptr dptr)
{
	uint64_t id = 0, charged;
	struct alloc al;
	CUresult r;

	if (NO_DRIVER(cuMemFree_v2))
		return CUDA_ERROR_NOT_INITIALIZED;
	if (unlikely(salloc_on) && mem_pooled(dptr, &al))
		return free_pooled(&al);
	if (unlikely(mm_on) && mm_owns(dptr)) {
		id = mem_before_free(dptr);
		r = mm_free(dptr);
		if (r == CUDA_SUCCESS)
			mem_after_free(dptr, id);
		return r;
	}
	charged = mem_uncharge(dptr);
	if (kmux_streams && mem_defer_free(dptr, charged))
		return CUDA_SUCCESS;
	if (unlikely(kmux_tracking))
		id = mem_before_free(dptr);
	/* Freed once already, and kept by kmux: the driver would refuse it. */
	if (kmux_streams && !id && streams_is_deferred(dptr))
		return CUDA_ERROR_INVALID_VALUE;
	r = REAL(cuMemFree_v2)(dptr);
	if (r == CUDA_SUCCESS) {
		mem_after_free(dptr, id);
		if (charged)
			quota_release(charged);
	}
	return r;
}

/*
 * Stream-ordered frees: the range leaves the map at the call, because the
 * pool may hand the same address to the next cuMemAllocAsync right away.
 * On a default stream under the scheduler the free is an operation writing
 * the allocation: it follows every user.  The driver orders a later reuse
 * of the memory on another stream itself.
 */
static CUresult free_async(struct async_args *a)
{
	struct alloc_table *t = alloc_table_global();
	struct sched_access acc;
	struct streams_req rq = {
		.flags = STREAMS_FREES,
		.orig = streams_default_handle(a->s, a->per_thread),
		.issue = async_issue, .arg = a,
	};
	struct alloc al, pal;
	uint64_t charged = 0;
	int pooled = 0;
	CUresult r;

	/*
	 * A managed object: freed at once, after the work that uses it (a
	 * host wait the stream-ordered form would not have).
	 */
	if (unlikely(mm_on) && mm_owns(a->ptr)) {
		uint64_t id = mem_before_free(a->ptr);

		r = mm_free(a->ptr);
		if (r == CUDA_SUCCESS)
			mem_after_free(a->ptr, id);
		return r;
	}
	/* kmux's pooled memory, freed by the program: the pool keeps it. */
	if (unlikely(salloc_on))
		pooled = mem_pooled(a->ptr, &pal);
	if (!pooled)
		charged = mem_free_charge(a->ptr, a->s, a->per_thread);
	if (likely(!kmux_streams) || !streams_is_default(a->s) || !t) {
		if (kmux_streams && t && alloc_table_find(t, a->ptr, &al) == 0)
			streams_ra_release(al.id);
		r = streams_pass(a->s, async_issue, a);
		if (r == CUDA_SUCCESS) {
			mem_untrack(a->ptr);
			if (charged)
				quota_release(charged);
			if (pooled)
				salloc_freed(pal.device, pal.size, 1);
		}
		return r;
	}
	if (alloc_table_find(t, a->ptr, &al) == 0 && al.base == a->ptr) {
		acc = (struct sched_access){ .alloc_id = al.id, .mode = SCHED_WRITE };
		rq.acc = &acc;
		rq.nacc = 1;
	} else {
		al.id = 0;
		rq.flags = SCHED_BARRIER;	/* memory kmux never saw */
	}
	if (!streams_run(&rq, &r))
		r = async_issue(a, NULL);
	if (r == CUDA_SUCCESS) {
		mem_after_free(a->ptr, al.id);
		if (charged)
			quota_release(charged);
		if (pooled)
			salloc_freed(pal.device, pal.size, 1);
	}
	return r;
}

KMUX_EXPORT CUresult CUDAAPI cuMemFreeAsync(CUdeviceptr dptr, CUstream s)
{
	if (NO_DRIVER(cuMemFreeAsync))
		return CUDA_ERROR_NOT_INITIALIZED;
	return free_async(&(struct async_args){ .which = ASYNC_FREE,
			  .ptr = dptr, .s = s });
}

KMUX_EXPORT CUresult CUDAAPI cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream s)
{
	if (NO_DRIVER(cuMemFreeAsync_ptsz))
		return CUDA_ERROR_NOT_INITIALIZED;
	return free_async(&(struct async_args){ .which = ASYNC_FREE,
			  .per_thread = 1, .ptr = dptr, .s = s });
}

/* Host memory the device can reach: its device address is its host address. */
KMUX_EXPORT CUresult CUDAAPI cuMemAllocHost_v2(void **pp, size_t size)
{
	CUresult r;

	if (NO_DRIVER(cuMemAllocHost_v2))
		return CUDA_ERROR_NOT_INITIALIZED;
	r = REAL(cuMemAllocHost_v2)(pp, size);
	if (r == CUDA_SUCCESS)
		mem_track((uint64_t)(uintptr_t)*pp, size, ALLOC_HOST_MAPPED);
	return r;
}

KMUX_EXPORT CUresult CUDAAPI cuMemHostAlloc(void **pp, size_t size,
					    unsigned flags)
{
	CUresult r;

	if (NO_DRIVER(cuMemHostAlloc))
		return CUDA_ERROR_NOT_INITIALIZED;
	r = REAL(cuMemHostAlloc)(pp, size, flags);
	if (r == CUDA_SUCCESS)
		mem_track((uint64_t)(uintptr_t)*pp, size, ALLOC_HOST_MAPPED);
	return r;
}

KMUX_EXPORT CUresult CUDAAPI cuMemFreeHost(void *p)
{
	uint64_t id = 0;
	CUresult r;

	if (NO_DRIVER(cuMemFreeHost))
		return CUDA_ERROR_NOT_INITIALIZED;
	if (unlikely(kmux_tracking))
		id = mem_before_free((uint64_t)(uintptr_t)p);
	r = REAL(cuMemFreeHost)(p);
	if (r == CUDA_SUCCESS)
		mem_after_free((uint64_t)(uintptr_t)p, id);
	return r;
}

KMUX_EXPORT CUresult CUDAAPI cuMemHostRegister_v2(void *p, size_t size,
						  unsigned flags)
{
	CUresult r;

	if (NO_DRIVER(cuMemHostRegister_v2))
		return CUDA_ERROR_NOT_INITIALIZED;
	r = REAL(cuMemHostRegister_v2)(p, size, flags);
	if (r == CUDA_SUCCESS)
		mem_track((uint64_t)(uintptr_t)p, size, ALLOC_HOST_MAPPED);
	return r;
}

KMUX_EXPORT CUresult CUDAAPI cuMemHostUnregister(void *p)
{
	uint64_t id = 0;
	CUresult r;

	if (NO_DRIVER(cuMemHostUnregister))
		return CUDA_ERROR_NOT_INITIALIZED;
	if (unlikely(kmux_tracking))
		id = mem_before_free((uint64_t)(uintptr_t)p);
	r = REAL(cuMemHostUnregister)(p);
	if (r == CUDA_SUCCESS)
		mem_after_free((uint64_t)(uintptr_t)p, id);
	return r;
}

/*
 * Virtual memory management.  A reserved range holds nothing until a
 * physical allocation is mapped into it, so only mappings are tracked.
 */
KMUX_EXPORT CUresult CUDAAPI cuMemAddressReserve(CUdeviceptr *ptr, size_t size,
		size_t align, CUdeviceptr addr, unsigned long long flags)
{
	if (NO_DRIVER(cuMemAddressReserve))
		return CUDA_ERROR_NOT_INITIALIZED;
	return REAL(cuMemAddressReserve)(ptr, size, align, addr, flags);
}

KMUX_EXPORT CUresult CUDAAPI cuMemAddressFree(CUdeviceptr ptr, size_t size)
{
	if (NO_DRIVER(cuMemAddressFree))
		return CUDA_ERROR_NOT_INITIALIZED;
	return REAL(cuMemAddressFree)(ptr, size);
}

KMUX_EXPORT CUresult CUDAAPI cuMemCreate(CUmemGenericAllocationHandle *h,
		size_t size, const CUmemAllocationProp *prop,
		unsigned long long flags)
{
	CUresult r;

	if (NO_DRIVER(cuMemCreate))
		return CUDA_ERROR_NOT_INITIALIZED;
	if (likely(!quota_on))
		return REAL(cuMemCreate)(h, size, prop, flags);
	if (mem_reserve_any(size))
		return CUDA_ERROR_OUT_OF_MEMORY;
	r = REAL(cuMemCreate)(h, size, prop, flags);
	if (r != CUDA_SUCCESS || quota_handle_add(QUOTA_H_VMM, (uint64_t)*h, size))
		quota_release(size);	/* no room to remember it: uncounted */
	return r;
}

KMUX_EXPORT CUresult CUDAAPI cuMemRelease(CUmemGenericAllocationHandle h)
{
	uint64_t size;
	CUresult r;

	if (NO_DRIVER(cuMemRelease))
		return CUDA_ERROR_NOT_INITIALIZED;
	if (likely(!quota_on))
		return REAL(cuMemRelease)(h);
	/* Out of the map first: the driver may hand the handle out again. */
	size = quota_handle_take(QUOTA_H_VMM, (uint64_t)h);
	r = REAL(cuMemRelease)(h);
	if (r == CUDA_SUCCESS)
		quota_release(size);
	else if (size && quota_handle_add(QUOTA_H_VMM, (uint64_t)h, size))
		quota_release(size);
	return r;
}

KMUX_EXPORT CUresult CUDAAPI cuMemMap(CUdeviceptr ptr, size_t size,
		size_t offset, CUmemGenericAllocationHandle h,
		unsigned long long flags)
{
	CUresult r;

	if (NO_DRIVER(cuMemMap))
		return CUDA_ERROR_NOT_INITIALIZED;
	r = REAL(cuMemMap)(ptr, size, offset, h, flags);
	if (r == CUDA_SUCCESS)
		mem_track(ptr, size, ALLOC_VMM);
	return r;
}

KMUX_EXPORT CUresult CUDAAPI cuMemUnmap(CUdeviceptr ptr, size_t size)
{
	uint64_t id = 0;
	CUresult r;

	if (NO_DRIVER(cuMemUnmap))
		return CUDA_ERROR_NOT_INITIALIZED;
	if (unlikely(kmux_tracking))
		id = mem_before_free(ptr);
	r = REAL(cuMemUnmap)(ptr, size);
	if (r == CUDA_SUCCESS)
		mem_after_free(ptr, id);
	return r;
}

/*
 * CUDA arrays: device memory no address names.  Their bytes
 * (quota_array_bytes()) are reserved before the driver is called and
 * remembered per handle until the array is destroyed, as cuMemCreate's are.
 * array_reserve: 0 and *bytes, or nonzero past the quota.
 */
static int array_reserve(const CUDA_ARRAY3D_DESCRIPTOR *d, unsigned levels,
			 uint64_t *bytes)
{
	*bytes = 0;
	if (likely(!quota_on) || !d)
		return 0;
	*bytes = quota_array_bytes(d->Width, d->Height, d->Depth,
				   (unsigned)d->Format, d->NumChannels,
				   d->Flags, levels);
	return *bytes && mem_reserve_any(*bytes);
}

/* After the driver's call: remember the bytes, or give them back. */
static void array_created(CUresult r, enum quota_handle_kind kind,
			  uint64_t h, uint64_t bytes)
{
	if (!bytes)
		return;
	/* No room to remember it: uncounted, as cuMemCreate's. */
	if (r != CUDA_SUCCESS || quota_handle_add(kind, h, bytes))
		quota_release(bytes);
}

/* Around a destroy: the driver may hand the handle out again at once. */
static CUresult array_destroyed(enum quota_handle_kind kind, uint64_t h,
				CUresult (*destroy)(uint64_t))
{
	uint64_t bytes = likely(!quota_on) ? 0 : quota_handle_take(kind, h);
	CUresult r = destroy(h);

	if (r == CUDA_SUCCESS)
		quota_release(bytes);
	else if (bytes && quota_handle_add(kind, h, bytes))
		quota_release(bytes);
	return r;
}

KMUX_EXPORT CUresult CUDAAPI cuArrayCreate_v2(CUarray *h,
		const CUDA_ARRAY_DESCRIPTOR *desc)
{
	CUDA_ARRAY3D_DESCRIPTOR d3;
	uint64_t bytes = 0;
	CUresult r;

	if (NO_DRIVER(cuArrayCreate_v2))
		return CUDA_ERROR_NOT_INITIALIZED;
	if (desc) {
		d3 = (CUDA_ARRAY3D_DESCRIPTOR){
			.Width = desc->Width, .Height = desc->Height,
			.Format = desc->Format,
			.NumChannels = desc->NumChannels,
		};
		if (array_reserve(&d3, 1, &bytes))
			return CUDA_ERROR_OUT_OF_MEMORY;
	}
	r = REAL(cuArrayCreate_v2)(h, desc);
	array_created(r, QUOTA_H_ARRAY, r == CUDA_SUCCESS ?
		      (uint64_t)(uintptr_t)*h : 0, bytes);
	return r;
}

KMUX_EXPORT CUresult CUDAAPI cuArray3DCreate_v2(CUarray *h,
		const CUDA_ARRAY3D_DESCRIPTOR *desc)
{
	uint64_t bytes;
	CUresult r;

	if (NO_DRIVER(cuArray3DCreate_v2))
		return CUDA_ERROR_NOT_INITIALIZED;
	if (array_reserve(desc, 1, &bytes))
		return CUDA_ERROR_OUT_OF_MEMORY;
	r = REAL(cuArray3DCreate_v2)(h, desc);
	array_created(r, QUOTA_H_ARRAY, r == CUDA_SUCCESS ?
		      (uint64_t)(uintptr_t)*h : 0, bytes);
	return r;
}

KMUX_EXPORT CUresult CUDAAPI cuMipmappedArrayCreate(CUmipmappedArray *h,
		const CUDA_ARRAY3D_DESCRIPTOR *desc, unsigned levels)
{
	uint64_t bytes;
	CUresult r;

	if (NO_DRIVER(cuMipmappedArrayCreate))
		return CUDA_ERROR_NOT_INITIALIZED;
	if (array_reserve(desc, levels, &bytes))
		return CUDA_ERROR_OUT_OF_MEMORY;
	r = REAL(cuMipmappedArrayCreate)(h, desc, levels);
	array_created(r, QUOTA_H_MIPMAP, r == CUDA_SUCCESS ?
		      (uint64_t)(uintptr_t)*h : 0, bytes);
	return r;
}

static CUresult array_destroy_real(uint64_t h)
{
	return REAL(cuArrayDestroy)((CUarray)(uintptr_t)h);
}

static CUresult mipmap_destroy_real(uint64_t h)
{
	return REAL(cuMipmappedArrayDestroy)((CUmipmappedArray)(uintptr_t)h);
}

KMUX_EXPORT CUresult CUDAAPI cuArrayDestroy(CUarray h)
{
	if (NO_DRIVER(cuArrayDestroy))
		return CUDA_ERROR_NOT_INITIALIZED;
	return array_destroyed(QUOTA_H_ARRAY, (uint64_t)(uintptr_t)h,
			       array_destroy_real);
}

KMUX_EXPORT CUresult CUDAAPI cuMipmappedArrayDestroy(CUmipmappedArray h)
{
	if (NO_DRIVER(cuMipmappedArrayDestroy))
		return CUDA_ERROR_NOT_INITIALIZED;
	return array_destroyed(QUOTA_H_MIPMAP, (uint64_t)(uintptr_t)h,
			       mipmap_destroy_real);
}

KMUX_EXPORT CUresult CUDAAPI cuMemGetInfo_v2(size_t *free_bytes,
					     size_t *total_bytes)
{
	CUresult r;

	if (NO_DRIVER(cuMemGetInfo_v2))
		return CUDA_ERROR_NOT_INITIALIZED;
	/* The program freed them: it expects their memory free. */
	if (kmux_streams)
		streams_flush_frees();
	r = REAL(cuMemGetInfo_v2)(free_bytes, total_bytes);
	if (unlikely(quota_on) && r == CUDA_SUCCESS)
		quota_clamp_info(&quota_global, free_bytes, total_bytes);
	return r;
}
