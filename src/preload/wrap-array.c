/*
 * wrap-array.c - CUDA arrays, and the texture and surface objects a kernel
 * reaches memory through.
 *
 * Arrays are device memory no address names: under KMUX_MEM_QUOTA their
 * bytes (quota_array_bytes()) are reserved before the driver is called and
 * remembered per handle until the array is destroyed, as cuMemCreate's are.
 *
 * Texture and surface objects are handles a kernel reads or writes memory
 * through (an array, or linear memory kmux tracks) without a pointer in
 * its parameters: texobj.h keeps the live ones, and kparams.c makes a
 * launch given one a launch whose accesses kmux cannot see.
 */
#include "log.h"
#include "preload.h"
#include "quota.h"
#include "texobj.h"

/* Reserve an array's bytes: 0 and *bytes, or nonzero past the quota. */
static int array_reserve(const CUDA_ARRAY3D_DESCRIPTOR *d, unsigned levels,
			 uint64_t *bytes)
{
	*bytes = 0;
	if (likely(!quota_on) || !d)
		return 0;
	*bytes = quota_array_bytes(d->Width, d->Height, d->Depth,
				   (unsigned)d->Format, d->NumChannels,
				   d->Flags, levels);
	return *bytes && quota_reserve(*bytes);
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

/*
 * A handle kmux could not remember makes every launch's words suspect
 * (texobj_is_live()): correct, and slower, so say it once.
 */
static void texobj_created(uint64_t h, const char *what)
{
	static int warned;

	if (texobj_add(h) && !__atomic_exchange_n(&warned, 1,
						  __ATOMIC_RELAXED))
		log_warn("cannot remember %s %llu (out of memory): every "
			 "launch with a nonzero parameter word is now a "
			 "barrier", what, (unsigned long long)h);
}

KMUX_EXPORT CUresult CUDAAPI cuTexObjectCreate(CUtexObject *t,
		const CUDA_RESOURCE_DESC *res, const CUDA_TEXTURE_DESC *tex,
		const CUDA_RESOURCE_VIEW_DESC *view)
{
	CUresult r;

	if (NO_DRIVER(cuTexObjectCreate))
		return CUDA_ERROR_NOT_INITIALIZED;
	r = REAL(cuTexObjectCreate)(t, res, tex, view);
	if (r == CUDA_SUCCESS)
		texobj_created((uint64_t)*t, "texture object");
	return r;
}

KMUX_EXPORT CUresult CUDAAPI cuTexObjectDestroy(CUtexObject t)
{
	CUresult r;

	if (NO_DRIVER(cuTexObjectDestroy))
		return CUDA_ERROR_NOT_INITIALIZED;
	r = REAL(cuTexObjectDestroy)(t);
	if (r == CUDA_SUCCESS)
		texobj_remove((uint64_t)t);
	return r;
}

KMUX_EXPORT CUresult CUDAAPI cuSurfObjectCreate(CUsurfObject *s,
		const CUDA_RESOURCE_DESC *res)
{
	CUresult r;

	if (NO_DRIVER(cuSurfObjectCreate))
		return CUDA_ERROR_NOT_INITIALIZED;
	r = REAL(cuSurfObjectCreate)(s, res);
	if (r == CUDA_SUCCESS)
		texobj_created((uint64_t)*s, "surface object");
	return r;
}

KMUX_EXPORT CUresult CUDAAPI cuSurfObjectDestroy(CUsurfObject s)
{
	CUresult r;

	if (NO_DRIVER(cuSurfObjectDestroy))
		return CUDA_ERROR_NOT_INITIALIZED;
	r = REAL(cuSurfObjectDestroy)(s);
	if (r == CUDA_SUCCESS)
		texobj_remove((uint64_t)s);
	return r;
}
