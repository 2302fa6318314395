/*
 * wrap-mem.c - the allocation family: every way a program obtains or gives
 * back memory the GPU can reach, recorded in the tracker's interval map.
 *
 * The map is kept whether or not tracing is on: it costs nothing on the
 * launch path and later parts (quotas, the memory manager) rely on it being
 * complete from the first allocation.
 */
#include <errno.h>

#include "alloc-table.h"
#include "log.h"
#include "preload.h"

static int current_device(void)
{
	CUdevice d;

	if (REAL(cuCtxGetDevice) && REAL(cuCtxGetDevice)(&d) == CUDA_SUCCESS)
		return (int)d;
	return -1;
}

static void mem_track(uint64_t base, uint64_t size, enum alloc_kind kind)
{
	struct alloc_table *t = alloc_table_global();
	struct alloc a = { .base = base, .size = size, .kind = kind };
	int err;

	if (!t || !size)
		return;
	a.device = kind == ALLOC_HOST_MAPPED ? -1 : current_device();
	err = alloc_table_insert(t, base, size, kind, a.device, &a.id);
	if (err) {
		/* The driver handed out a range we think is live: our view was
		 * stale (a free we did not see).  Replace it. */
		log_debug("tracking allocation 0x%llx+%llu: error %d",
			  (unsigned long long)base, (unsigned long long)size,
			  err);
		if (err != -EEXIST)
			return;
		alloc_table_remove(t, base, NULL);
		if (alloc_table_insert(t, base, size, kind, a.device, &a.id))
			return;
	}
	if (kmux_tracking)
		trace_alloc(&a, 0, trace_now());
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
	r = REAL(cuMemAlloc_v2)(dptr, size);
	if (r == CUDA_SUCCESS)
		mem_track(*dptr, size, ALLOC_DEVICE);
	return r;
}

KMUX_EXPORT CUresult CUDAAPI cuMemAllocPitch_v2(CUdeviceptr *dptr,
		size_t *pitch, size_t width, size_t height, unsigned elem)
{
	CUresult r;

	if (NO_DRIVER(cuMemAllocPitch_v2))
		return CUDA_ERROR_NOT_INITIALIZED;
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
	r = REAL(cuMemAllocManaged)(dptr, size, flags);
	if (r == CUDA_SUCCESS)
		mem_track(*dptr, size, ALLOC_MANAGED);
	return r;
}

KMUX_EXPORT CUresult CUDAAPI cuMemAllocAsync(CUdeviceptr *dptr, size_t size,
					     CUstream s)
{
	CUresult r;

	if (NO_DRIVER(cuMemAllocAsync))
		return CUDA_ERROR_NOT_INITIALIZED;
	r = REAL(cuMemAllocAsync)(dptr, size, s);
	if (r == CUDA_SUCCESS)
		mem_track(*dptr, size, ALLOC_DEVICE);
	return r;
}

KMUX_EXPORT CUresult CUDAAPI cuMemAllocAsync_ptsz(CUdeviceptr *dptr,
						  size_t size, CUstream s)
{
	CUresult r;

	if (NO_DRIVER(cuMemAllocAsync_ptsz))
		return CUDA_ERROR_NOT_INITIALIZED;
	r = REAL(cuMemAllocAsync_ptsz)(dptr, size, s);
	if (r == CUDA_SUCCESS)
		mem_track(*dptr, size, ALLOC_DEVICE);
	return r;
}

KMUX_EXPORT CUresult CUDAAPI cuMemAllocFromPoolAsync(CUdeviceptr *dptr,
		size_t size, CUmemoryPool pool, CUstream s)
{
	CUresult r;

	if (NO_DRIVER(cuMemAllocFromPoolAsync))
		return CUDA_ERROR_NOT_INITIALIZED;
	r = REAL(cuMemAllocFromPoolAsync)(dptr, size, pool, s);
	if (r == CUDA_SUCCESS)
		mem_track(*dptr, size, ALLOC_DEVICE);
	return r;
}

KMUX_EXPORT CUresult CUDAAPI cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *dptr,
		size_t size, CUmemoryPool pool, CUstream s)
{
	CUresult r;

	if (NO_DRIVER(cuMemAllocFromPoolAsync_ptsz))
		return CUDA_ERROR_NOT_INITIALIZED;
	r = REAL(cuMemAllocFromPoolAsync_ptsz)(dptr, size, pool, s);
	if (r == CUDA_SUCCESS)
		mem_track(*dptr, size, ALLOC_DEVICE);
	return r;
}

KMUX_EXPORT CUresult CUDAAPI cuMemFree_v2(CUdeviceptr dptr)
{
	CUresult r;

	if (NO_DRIVER(cuMemFree_v2))
		return CUDA_ERROR_NOT_INITIALIZED;
	r = REAL(cuMemFree_v2)(dptr);
	if (r == CUDA_SUCCESS)
		mem_untrack(dptr);
	return r;
}

/*
 * Stream-ordered frees: the range leaves the map at the call, because the
 * pool may hand the same address to the next cuMemAllocAsync right away.
 */
KMUX_EXPORT CUresult CUDAAPI cuMemFreeAsync(CUdeviceptr dptr, CUstream s)
{
	CUresult r;

	if (NO_DRIVER(cuMemFreeAsync))
		return CUDA_ERROR_NOT_INITIALIZED;
	r = REAL(cuMemFreeAsync)(dptr, s);
	if (r == CUDA_SUCCESS)
		mem_untrack(dptr);
	return r;
}

KMUX_EXPORT CUresult CUDAAPI cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream s)
{
	CUresult r;

	if (NO_DRIVER(cuMemFreeAsync_ptsz))
		return CUDA_ERROR_NOT_INITIALIZED;
	r = REAL(cuMemFreeAsync_ptsz)(dptr, s);
	if (r == CUDA_SUCCESS)
		mem_untrack(dptr);
	return r;
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
	CUresult r;

	if (NO_DRIVER(cuMemFreeHost))
		return CUDA_ERROR_NOT_INITIALIZED;
	r = REAL(cuMemFreeHost)(p);
	if (r == CUDA_SUCCESS)
		mem_untrack((uint64_t)(uintptr_t)p);
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
	CUresult r;

	if (NO_DRIVER(cuMemHostUnregister))
		return CUDA_ERROR_NOT_INITIALIZED;
	r = REAL(cuMemHostUnregister)(p);
	if (r == CUDA_SUCCESS)
		mem_untrack((uint64_t)(uintptr_t)p);
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
	if (NO_DRIVER(cuMemCreate))
		return CUDA_ERROR_NOT_INITIALIZED;
	return REAL(cuMemCreate)(h, size, prop, flags);
}

KMUX_EXPORT CUresult CUDAAPI cuMemRelease(CUmemGenericAllocationHandle h)
{
	if (NO_DRIVER(cuMemRelease))
		return CUDA_ERROR_NOT_INITIALIZED;
	return REAL(cuMemRelease)(h);
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
	CUresult r;

	if (NO_DRIVER(cuMemUnmap))
		return CUDA_ERROR_NOT_INITIALIZED;
	r = REAL(cuMemUnmap)(ptr, size);
	if (r == CUDA_SUCCESS)
		mem_untrack(ptr);
	return r;
}

KMUX_EXPORT CUresult CUDAAPI cuMemGetInfo_v2(size_t *free_bytes,
					     size_t *total_bytes)
{
	if (NO_DRIVER(cuMemGetInfo_v2))
		return CUDA_ERROR_NOT_INITIALIZED;
	return REAL(cuMemGetInfo_v2)(free_bytes, total_bytes);
}
