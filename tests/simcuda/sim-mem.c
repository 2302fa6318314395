/*
 * sim-mem.c - simulated memory: the table of allocations (a sorted array,
 * looked up by address), device allocations with their never-reused
 * simulated addresses, stream-ordered allocation (explicit pools' byte
 * accounting is sim-pool.c's), managed memory, pinned and
 * registered host memory, and the pointer queries.
 *
 * Device memory is backed by host memory the program never sees: the
 * address the program gets is simulated (see SIM_VA_* in sim.h), so host
 * code that dereferences it faults, and kernels and copies reach it only
 * through sim_exec_access(), which checks and records every use.  An
 * allocation that a running operation still uses (pins) when it is freed
 * leaves the table at once and keeps its backing until the last unpin.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "sim.h"

#define MMAP_THRESHOLD (1ULL << 20)	/* bigger backings are mmap'ed lazily */

static struct sim_alloc **tab;
static size_t ntab, captab;

static uint64_t round_up(uint64_t v, uint64_t a)
{
	return (v + a - 1) / a * a;
}

/* Index of the last allocation with base <= addr, or -1. */
static long floor_index(uint64_t addr)
{
	size_t lo = 0, hi = ntab;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (tab[mid]->base <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return (long)lo - 1;
}

struct sim_alloc *sim_alloc_find(uint64_t addr)
{
	long i = floor_index(addr);

	if (i < 0)
		return NULL;
	if (addr - tab[i]->base < tab[i]->size)
		return tab[i];
	return NULL;
}

int sim_alloc_insert(struct sim_alloc *a)
{
	long i = floor_index(a->base);
	size_t at = (size_t)(i + 1);

	if (a->size == 0 || a->base + a->size < a->base)
		return -EINVAL;
	if (i >= 0 && tab[i]->base + tab[i]->size > a->base)
		return -EEXIST;
	if (at < ntab && a->base + a->size > tab[at]->base)
		return -EEXIST;
	if (ntab == captab) {
		size_t cap = captab ? captab * 2 : 64;
		struct sim_alloc **n = realloc(tab, cap * sizeof(*n));

		if (n == NULL)
			return -ENOMEM;
		tab = n;
		captab = cap;
	}
	memmove(&tab[at + 1], &tab[at], (ntab - at) * sizeof(*tab));
	tab[at] = a;
	ntab++;
	return 0;
}

void sim_alloc_remove(struct sim_alloc *a)
{
	long i = floor_index(a->base);

	if (i < 0 || tab[i] != a)
		return;
	memmove(&tab[i], &tab[i + 1], (ntab - (size_t)i - 1) * sizeof(*tab));
	ntab--;
}

static void *backing_new(uint64_t size, size_t *map_len)
{
	void *p;

	*map_len = 0;
	if (size >= MMAP_THRESHOLD) {
		size_t len = (size_t)round_up(size, (uint64_t)getpagesize());

		/* Untouched pages cost nothing: big buffers stay cheap. */
		p = mmap(NULL, len, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (p == MAP_FAILED)
			return NULL;
		*map_len = len;
		return p;
	}
	if (posix_memalign(&p, 4096, (size_t)size) != 0)
		return NULL;
	memset(p, 0, (size_t)size);
	return p;
}

static void backing_free(struct sim_alloc *a)
{
	if (a->host == NULL || a->kind == SIM_ALLOC_REGISTERED ||
	    a->kind == SIM_ALLOC_VMM)
		return;
	if (a->map_len != 0)
		munmap(a->host, a->map_len);
	else
		free(a->host);
	a->host = NULL;
}

void sim_alloc_release(struct sim_alloc *a)
{
	a->dead = 1;
	if (a->pins > 0)
		return;
	backing_free(a);
	free(a);
}

void sim_alloc_unpin(struct sim_alloc *a)
{
	if (--a->pins == 0 && a->dead) {
		backing_free(a);
		free(a);
	}
}

/* Take a's bytes back from its device's budget and drop it. */
static void alloc_drop(struct sim_alloc *a)
{
	sim_alloc_remove(a);
	if (a->pool != NULL)
		sim_pool_put(a->pool, a->size);	/* the pool keeps the bytes */
	else if (a->kind == SIM_ALLOC_DEVICE || a->kind == SIM_ALLOC_MANAGED)
		sim.dev[a->dev].used -= a->size;
	a->pool = NULL;
	sim_alloc_release(a);
}

void sim_alloc_free_ctx(struct sim_ctx *c)
{
	size_t i = 0;

	while (i < ntab) {
		struct sim_alloc *a = tab[i];

		if (a->ctx != c) {
			i++;
			continue;
		}
		alloc_drop(a);
	}
}

CUresult sim_va_alloc(struct sim_device *d, uint64_t size, uint64_t *va)
{
	/* A gap after each allocation keeps overruns out of the next one. */
	uint64_t need = round_up(size, SIM_ALLOC_ALIGN) + SIM_ALLOC_ALIGN;

	if (need < size || d->va_end - d->va_next < need) {
		sim_warn("device %d: simulated address space exhausted "
			 "(addresses are never reused)", d->ordinal);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	*va = d->va_next;
	d->va_next += need;
	return CUDA_SUCCESS;
}

/*
 * Lock held.  A new DEVICE or MANAGED allocation of size bytes in c; from
 * pool when not NULL (its kept bytes when enough, else the device's).
 */
static CUresult device_alloc_from(struct sim_ctx *c, uint64_t size,
				  enum sim_alloc_kind kind,
				  struct sim_pool *pool, CUdeviceptr *out)
{
	struct sim_device *d = c->dev;
	struct sim_alloc *a;
	uint64_t take = 0;
	CUresult err;

	if (size == 0)
		return CUDA_ERROR_INVALID_VALUE;
	/* Kept memory serves a request only when there is enough of it. */
	if (pool != NULL && pool->kept >= size)
		take = size;
	if (size - take > d->total - d->used)
		return CUDA_ERROR_OUT_OF_MEMORY;
	a = calloc(1, sizeof(*a));
	if (a == NULL)
		return CUDA_ERROR_OUT_OF_MEMORY;
	a->id = sim_new_id();
	a->kind = kind;
	a->size = size;
	a->ctx = c;
	a->dev = d->ordinal;
	a->host = backing_new(size, &a->map_len);
	if (a->host == NULL) {
		err = CUDA_ERROR_OUT_OF_MEMORY;
		goto err_free;
	}
	if (kind == SIM_ALLOC_MANAGED) {
		/* Managed memory is one address on host and device. */
		a->base = (uint64_t)(uintptr_t)a->host;
	} else {
		err = sim_va_alloc(d, size, &a->base);
		if (err != CUDA_SUCCESS)
			goto err_backing;
	}
	if (sim_alloc_insert(a) < 0) {
		err = CUDA_ERROR_OUT_OF_MEMORY;
		goto err_backing;
	}
	d->used += size - take;
	if (pool != NULL) {
		pool->kept -= take;
		pool->live += size;
		pool->nlive++;
		a->pool = pool;
	}
	*out = a->base;
	return CUDA_SUCCESS;

err_backing:
	backing_free(a);
err_free:
	free(a);
	return err;
}

static CUresult device_alloc(struct sim_ctx *c, uint64_t size,
			     enum sim_alloc_kind kind, CUdeviceptr *out)
{
	return device_alloc_from(c, size, kind, NULL, out);
}

CUresult sim_mem_alloc_locked(struct sim_ctx *c, uint64_t size,
			      CUdeviceptr *out)
{
	return device_alloc(c, size, SIM_ALLOC_DEVICE, out);
}

SIM_API CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize)
{
	struct sim_ctx *c;
	CUresult err;

	if (dptr == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	sim_lock();
	err = sim_ctx_get(&c);
	if (err == CUDA_SUCCESS)
		err = device_alloc(c, bytesize, SIM_ALLOC_DEVICE, dptr);
	sim_unlock();
	return err;
}

SIM_API CUresult cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pPitch,
				    size_t WidthInBytes, size_t Height,
				    unsigned int ElementSizeBytes)
{
	struct sim_ctx *c;
	uint64_t pitch;
	CUresult err;

	if (dptr == NULL || pPitch == NULL || WidthInBytes == 0 ||
	    Height == 0 || (ElementSizeBytes != 4 && ElementSizeBytes != 8 &&
			    ElementSizeBytes != 16))
		return CUDA_ERROR_INVALID_VALUE;
	pitch = round_up(WidthInBytes, 512);
	if (Height > UINT64_MAX / pitch)
		return CUDA_ERROR_INVALID_VALUE;
	sim_lock();
	err = sim_ctx_get(&c);
	if (err == CUDA_SUCCESS)
		err = device_alloc(c, pitch * Height, SIM_ALLOC_DEVICE, dptr);
	if (err == CUDA_SUCCESS)
		*pPitch = (size_t)pitch;
	sim_unlock();
	return err;
}

SIM_API CUresult cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize,
				   unsigned int flags)
{
	struct sim_ctx *c;
	CUresult err;

	if (dptr == NULL || (flags != CU_MEM_ATTACH_GLOBAL &&
			     flags != CU_MEM_ATTACH_HOST))
		return CUDA_ERROR_INVALID_VALUE;
	sim_lock();
	err = sim_ctx_get(&c);
	if (err == CUDA_SUCCESS)
		err = device_alloc(c, bytesize, SIM_ALLOC_MANAGED, dptr);
	sim_unlock();
	return err;
}

/* A zero-length FREE record at the host's "stream 0" for a sync free. */
static void record_sync_free(struct sim_alloc *a)
{
	struct sim_rec *r = sim_rec_new(a->ctx, NULL, SIM_REC_FREE,
					"cuMemFree", ++sim.next_seq);

	if (r == NULL)
		return;
	r->start = r->end = sim_now();
	if (sim_rec_add_acc(r, a->id, a->base, SIM_WRITE) < 0)
		sim_warn("out of memory recording a free");
	sim_rec_commit(r);
}

CUresult sim_mem_free_locked(uint64_t p, int async_op)
{
	struct sim_alloc *a = sim_alloc_find(p);

	if (a == NULL || a->base != p || (a->kind != SIM_ALLOC_DEVICE &&
					  a->kind != SIM_ALLOC_MANAGED))
		return CUDA_ERROR_INVALID_VALUE;
	/* A graph allocation keeps its address for the next launch. */
	if (a->graph && !a->live)
		return CUDA_ERROR_INVALID_VALUE;
	if (!async_op)
		record_sync_free(a);
	if (a->graph)
		a->live = 0;
	else
		alloc_drop(a);
	return CUDA_SUCCESS;
}

CUresult sim_graph_alloc_new(struct sim_ctx *c, uint64_t size,
			     CUdeviceptr *out)
{
	CUresult err = device_alloc(c, size, SIM_ALLOC_DEVICE, out);

	if (err == CUDA_SUCCESS)
		sim_alloc_find(*out)->graph = 1;
	return err;
}

SIM_API CUresult cuMemFree_v2(CUdeviceptr dptr)
{
	struct sim_alloc *a;
	struct sim_ctx *c;
	CUresult err;

	sim_lock();
	err = sim_ctx_get(&c);
	if (err != CUDA_SUCCESS || dptr == 0)
		goto out;
	a = sim_alloc_find(dptr);
	if (a == NULL || a->base != dptr || (a->kind != SIM_ALLOC_DEVICE &&
					     a->kind != SIM_ALLOC_MANAGED)) {
		err = CUDA_ERROR_INVALID_VALUE;
		goto out;
	}
	/*
	 * cuMemFree synchronizes: work already submitted in the owning
	 * context finishes first.  Work submitted later by other threads
	 * races with the free, and the record below lets the checker see it.
	 */
	sim_ctx_drain(a->ctx);
	err = sim_mem_free_locked(dptr, 0);
out:
	sim_unlock();
	return err;
}

SIM_API CUresult cuMemGetInfo_v2(size_t *free_bytes, size_t *total)
{
	struct sim_ctx *c;
	CUresult err;

	if (free_bytes == NULL || total == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	sim_lock();
	err = sim_ctx_get(&c);
	if (err == CUDA_SUCCESS) {
		*total = c->dev->total;
		*free_bytes = c->dev->total - c->dev->used;
	}
	sim_unlock();
	return err;
}

SIM_API CUresult cuMemGetAddressRange_v2(CUdeviceptr *pbase, size_t *psize,
					 CUdeviceptr dptr)
{
	struct sim_alloc *a;
	struct sim_ctx *c;
	uint64_t base, size;
	CUresult err;

	sim_lock();
	err = sim_ctx_get(&c);
	if (err != CUDA_SUCCESS)
		goto out;
	a = sim_alloc_find(dptr);
	if (a == NULL) {
		err = CUDA_ERROR_NOT_FOUND;
		goto out;
	}
	base = a->base;
	size = a->size;
	if (a->kind == SIM_ALLOC_VMM &&
	    sim_vmm_range(a, dptr, &base, &size) < 0) {
		err = CUDA_ERROR_NOT_FOUND;
		goto out;
	}
	if (pbase != NULL)
		*pbase = base;
	if (psize != NULL)
		*psize = (size_t)size;
out:
	sim_unlock();
	return err;
}

/* ---- stream-ordered allocation ------------------------------------------ */

/*
 * The allocation is made at once: any use in stream order after this call
 * is then valid, which is all the real pool guarantees.
 */
static CUresult alloc_async(CUdeviceptr *dptr, size_t bytesize, CUstream h,
			    int pt, CUmemoryPool hpool)
{
	struct sim_pool *pool = (struct sim_pool *)hpool;
	struct sim_stream *s;
	CUresult err;

	if (dptr == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	sim_lock();
	err = sim_stream_resolve(h, pt, &s);
	if (err == CUDA_SUCCESS)
		err = s->ctx->sticky;
	if (err == CUDA_SUCCESS && pool != NULL &&
	    (!sim_handle_ok(pool, SIM_H_POOL) || pool->destroyed ||
	     pool->dev != s->ctx->dev->ordinal))
		err = CUDA_ERROR_INVALID_VALUE;
	if (err == CUDA_SUCCESS && s->cap != NULL) {
		/* Captured: an allocation node of the graph. */
		struct sim_op *op;

		err = sim_graph_alloc_new(s->ctx, bytesize, dptr);
		op = err == CUDA_SUCCESS ? sim_op_new(SIM_OP_GALLOC) : NULL;
		if (err == CUDA_SUCCESS && op == NULL)
			err = CUDA_ERROR_OUT_OF_MEMORY;
		if (op != NULL) {
			op->u.galloc.ptr = *dptr;
			err = sim_stream_submit(s, op);
		}
	} else if (err == CUDA_SUCCESS) {
		err = device_alloc_from(s->ctx, bytesize, SIM_ALLOC_DEVICE,
					pool, dptr);
	}
	sim_unlock();
	return err;
}

SIM_API CUresult cuMemAllocAsync(CUdeviceptr *dptr, size_t bytesize,
				 CUstream hStream)
{
	return alloc_async(dptr, bytesize, hStream, 0, NULL);
}

SIM_API CUresult cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t bytesize,
				      CUstream hStream)
{
	return alloc_async(dptr, bytesize, hStream, 1, NULL);
}

SIM_API CUresult cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t bytesize,
					 CUmemoryPool pool, CUstream hStream)
{
	if (pool == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	return alloc_async(dptr, bytesize, hStream, 0, pool);
}

SIM_API CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *dptr,
					      size_t bytesize,
					      CUmemoryPool pool,
					      CUstream hStream)
{
	if (pool == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	return alloc_async(dptr, bytesize, hStream, 1, pool);
}

/* The free happens when the stream reaches it (SIM_OP_FREE). */
static CUresult free_async(CUdeviceptr dptr, CUstream h, int pt)
{
	struct sim_stream *s;
	struct sim_alloc *a;
	struct sim_op *op;
	CUresult err;

	sim_lock();
	err = sim_stream_resolve(h, pt, &s);
	if (err == CUDA_SUCCESS)
		err = s->ctx->sticky;
	if (err != CUDA_SUCCESS)
		goto out;
	a = sim_alloc_find(dptr);
	if (a == NULL || a->base != dptr || a->kind != SIM_ALLOC_DEVICE) {
		err = CUDA_ERROR_INVALID_VALUE;
		goto out;
	}
	op = sim_op_new(SIM_OP_FREE);
	if (op == NULL) {
		err = CUDA_ERROR_OUT_OF_MEMORY;
		goto out;
	}
	op->u.free.ptr = dptr;
	err = sim_stream_submit(s, op);
out:
	sim_unlock();
	return err;
}

SIM_API CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream)
{
	return free_async(dptr, hStream, 0);
}

SIM_API CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream hStream)
{
	return free_async(dptr, hStream, 1);
}

/* ---- host memory --------------------------------------------------------- */

static CUresult host_alloc(void **pp, size_t bytesize, unsigned flags)
{
	struct sim_alloc *a = NULL;
	struct sim_ctx *c;
	CUresult err;

	if (pp == NULL || bytesize == 0 ||
	    (flags & ~(unsigned)(CU_MEMHOSTALLOC_PORTABLE |
				 CU_MEMHOSTALLOC_DEVICEMAP |
				 CU_MEMHOSTALLOC_WRITECOMBINED)))
		return CUDA_ERROR_INVALID_VALUE;
	sim_lock();
	err = sim_ctx_get(&c);
	if (err != CUDA_SUCCESS)
		goto out;
	a = calloc(1, sizeof(*a));
	if (a == NULL) {
		err = CUDA_ERROR_OUT_OF_MEMORY;
		goto out;
	}
	a->id = sim_new_id();
	a->kind = SIM_ALLOC_HOST;
	a->size = bytesize;
	a->ctx = c;
	a->dev = c->dev->ordinal;
	a->flags = flags;
	a->host = backing_new(bytesize, &a->map_len);
	if (a->host == NULL) {
		err = CUDA_ERROR_OUT_OF_MEMORY;
		goto err_free;
	}
	a->base = (uint64_t)(uintptr_t)a->host;
	if (sim_alloc_insert(a) < 0) {
		err = CUDA_ERROR_OUT_OF_MEMORY;
		goto err_backing;
	}
	*pp = a->host;
	goto out;

err_backing:
	backing_free(a);
err_free:
	free(a);
out:
	sim_unlock();
	return err;
}

SIM_API CUresult cuMemAllocHost_v2(void **pp, size_t bytesize)
{
	return host_alloc(pp, bytesize, CU_MEMHOSTALLOC_PORTABLE |
			  CU_MEMHOSTALLOC_DEVICEMAP);
}

SIM_API CUresult cuMemHostAlloc(void **pp, size_t bytesize,
				unsigned int Flags)
{
	return host_alloc(pp, bytesize, Flags);
}

/* Lock held.  The pinned host allocation starting at p, or NULL. */
static struct sim_alloc *host_alloc_at(void *p)
{
	struct sim_alloc *a = sim_alloc_find((uint64_t)(uintptr_t)p);

	if (a == NULL || a->kind != SIM_ALLOC_HOST ||
	    a->base != (uint64_t)(uintptr_t)p)
		return NULL;
	return a;
}

SIM_API CUresult cuMemFreeHost(void *p)
{
	struct sim_alloc *a;
	struct sim_ctx *c;
	CUresult err;

	sim_lock();
	err = sim_ctx_get(&c);
	if (err != CUDA_SUCCESS)
		goto out;
	a = host_alloc_at(p);
	if (a == NULL) {
		err = CUDA_ERROR_INVALID_VALUE;
		goto out;
	}
	/* Synchronizes like cuMemFree; look again after the wait. */
	sim_ctx_drain(a->ctx);
	a = host_alloc_at(p);
	if (a == NULL) {
		err = CUDA_ERROR_INVALID_VALUE;
		goto out;
	}
	alloc_drop(a);
out:
	sim_unlock();
	return err;
}

SIM_API CUresult cuMemHostRegister_v2(void *p, size_t bytesize,
				      unsigned int Flags)
{
	struct sim_alloc *a;
	struct sim_ctx *c;
	CUresult err;
	int rc;

	if (p == NULL || bytesize == 0)
		return CUDA_ERROR_INVALID_VALUE;
	sim_lock();
	err = sim_ctx_get(&c);
	if (err != CUDA_SUCCESS)
		goto out;
	a = calloc(1, sizeof(*a));
	if (a == NULL) {
		err = CUDA_ERROR_OUT_OF_MEMORY;
		goto out;
	}
	a->id = sim_new_id();
	a->kind = SIM_ALLOC_REGISTERED;
	a->base = (uint64_t)(uintptr_t)p;
	a->size = bytesize;
	a->host = p;
	a->ctx = c;
	a->dev = c->dev->ordinal;
	a->flags = Flags;
	rc = sim_alloc_insert(a);
	if (rc < 0) {
		free(a);
		err = rc == -EEXIST ? CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED
				    : CUDA_ERROR_OUT_OF_MEMORY;
	}
out:
	sim_unlock();
	return err;
}

SIM_API CUresult cuMemHostRegister(void *p, size_t bytesize,
				   unsigned int Flags)
{
	return cuMemHostRegister_v2(p, bytesize, Flags);
}

SIM_API CUresult cuMemHostUnregister(void *p)
{
	struct sim_alloc *a;
	struct sim_ctx *c;
	CUresult err;

	sim_lock();
	err = sim_ctx_get(&c);
	if (err != CUDA_SUCCESS)
		goto out;
	a = sim_alloc_find((uint64_t)(uintptr_t)p);
	if (a == NULL || a->kind != SIM_ALLOC_REGISTERED ||
	    a->base != (uint64_t)(uintptr_t)p) {
		err = CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
		goto out;
	}
	/* The memory is the program's: nothing may still be copying it. */
	sim_alloc_remove(a);
	sim_exec_wait_unpinned(a);
	sim_alloc_release(a);
out:
	sim_unlock();
	return err;
}

SIM_API CUresult cuMemHostGetDevicePointer_v2(CUdeviceptr *pdptr, void *p,
					      unsigned int Flags)
{
	struct sim_alloc *a;
	struct sim_ctx *c;
	CUresult err;

	if (pdptr == NULL || Flags != 0)
		return CUDA_ERROR_INVALID_VALUE;
	sim_lock();
	err = sim_ctx_get(&c);
	if (err != CUDA_SUCCESS)
		goto out;
	a = sim_alloc_find((uint64_t)(uintptr_t)p);
	if (a == NULL || (a->kind != SIM_ALLOC_HOST &&
			  a->kind != SIM_ALLOC_REGISTERED)) {
		err = CUDA_ERROR_INVALID_VALUE;
		goto out;
	}
	/* Unified addressing: the device sees host memory at its address. */
	*pdptr = (CUdeviceptr)(uintptr_t)p;
out:
	sim_unlock();
	return err;
}

SIM_API CUresult cuMemHostGetFlags(unsigned int *pFlags, void *p)
{
	struct sim_alloc *a;
	struct sim_ctx *c;
	CUresult err;

	if (pFlags == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	sim_lock();
	err = sim_ctx_get(&c);
	if (err != CUDA_SUCCESS)
		goto out;
	a = sim_alloc_find((uint64_t)(uintptr_t)p);
	if (a == NULL || a->kind != SIM_ALLOC_HOST)
		err = CUDA_ERROR_INVALID_VALUE;
	else
		*pFlags = a->flags;
out:
	sim_unlock();
	return err;
}

/* ---- pointer attributes ------------------------------------------------- */

/* Lock held.  One attribute of ptr into data. */
static CUresult pointer_attribute(void *data, CUpointer_attribute attr,
				  CUdeviceptr ptr)
{
	struct sim_alloc *a = sim_alloc_find(ptr);
	int host_kind;

	if (data == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if (a == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	host_kind = a->kind == SIM_ALLOC_HOST ||
		    a->kind == SIM_ALLOC_REGISTERED;
	switch (attr) {
	case CU_POINTER_ATTRIBUTE_CONTEXT:
		*(CUcontext *)data = (CUcontext)a->ctx;
		break;
	case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
		*(unsigned int *)data = host_kind ? CU_MEMORYTYPE_HOST
						  : CU_MEMORYTYPE_DEVICE;
		break;
	case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
		*(CUdeviceptr *)data = ptr;
		break;
	case CU_POINTER_ATTRIBUTE_HOST_POINTER:
		if (!host_kind && a->kind != SIM_ALLOC_MANAGED)
			return CUDA_ERROR_INVALID_VALUE;
		*(void **)data = (void *)(uintptr_t)ptr;
		break;
	case CU_POINTER_ATTRIBUTE_SYNC_MEMOPS:
		*(int *)data = 0;
		break;
	case CU_POINTER_ATTRIBUTE_BUFFER_ID:
		*(unsigned long long *)data = a->id;
		break;
	case CU_POINTER_ATTRIBUTE_IS_MANAGED:
		*(int *)data = a->kind == SIM_ALLOC_MANAGED;
		break;
	case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
		*(int *)data = a->dev;
		break;
	case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
		*(CUdeviceptr *)data = a->base;
		break;
	case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
		*(size_t *)data = (size_t)a->size;
		break;
	case CU_POINTER_ATTRIBUTE_MAPPED:
		*(int *)data = 1;
		break;
	default:
		return CUDA_ERROR_INVALID_VALUE;
	}
	return CUDA_SUCCESS;
}

SIM_API CUresult cuPointerGetAttribute(void *data,
				       CUpointer_attribute attribute,
				       CUdeviceptr ptr)
{
	CUresult err = sim_check_init();

	if (err != CUDA_SUCCESS)
		return err;
	sim_lock();
	err = pointer_attribute(data, attribute, ptr);
	sim_unlock();
	return err;
}

SIM_API CUresult cuPointerGetAttributes(unsigned int numAttributes,
					CUpointer_attribute *attributes,
					void **data, CUdeviceptr ptr)
{
	CUresult err = sim_check_init();
	unsigned i;

	if (err != CUDA_SUCCESS)
		return err;
	if (numAttributes == 0 || attributes == NULL || data == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	sim_lock();
	for (i = 0; i < numAttributes; i++) {
		if (data[i] == NULL)
			continue;
		err = pointer_attribute(data[i], attributes[i], ptr);
		if (err != CUDA_SUCCESS)
			break;
	}
	sim_unlock();
	return err;
}

void sim_mem_fini(void)
{
	if (ntab == 0) {
		free(tab);
		tab = NULL;
		captab = 0;
	}
}
