/*
 * sim-array.c - CUDA arrays and mipmapped arrays, and the texture and
 * surface objects kernels reach memory through.
 *
 * An array is a device allocation the program never sees the address of:
 * its texels' bytes (width x height x depth x element, every level of a
 * mipmapped one) count against the device's memory like any allocation.
 * A texture or surface object is a small integer (as the driver's are)
 * naming a range of device memory: an array's, or the linear or pitched
 * memory it was created over.  A kernel reaches that range only through
 * sim_kctx.res() and sim_mem(), so every use is checked and recorded like
 * a pointer's.
 */
#include <stdlib.h>

#include "sim.h"

struct sim_array {
	CUdeviceptr base;	/* its storage, a device allocation */
	uint64_t size;
	int mipmapped;
};

struct sim_texobj {
	uint64_t id;		/* the handle */
	uint64_t base, size;
	int surface;
	struct sim_texobj *next;
};

static struct sim_texobj *texobjs;
static uint64_t next_texobj = 1;

static uint64_t element_bytes(CUarray_format f, unsigned channels)
{
	switch (f) {
	case CU_AD_FORMAT_UNSIGNED_INT8:
	case CU_AD_FORMAT_SIGNED_INT8:
		return channels;
	case CU_AD_FORMAT_UNSIGNED_INT16:
	case CU_AD_FORMAT_SIGNED_INT16:
	case CU_AD_FORMAT_HALF:
		return 2ULL * channels;
	case CU_AD_FORMAT_UNSIGNED_INT32:
	case CU_AD_FORMAT_SIGNED_INT32:
	case CU_AD_FORMAT_FLOAT:
		return 4ULL * channels;
	default:
		return 0;	/* not simulated */
	}
}

/* The bytes of levels levels, or 0 when the descriptor is invalid here. */
static uint64_t array_size(const CUDA_ARRAY3D_DESCRIPTOR *d, unsigned levels)
{
	uint64_t e, total = 0;
	int layered = d->Flags & (CUDA_ARRAY3D_LAYERED | CUDA_ARRAY3D_CUBEMAP);

	if (d->Width == 0 || (d->Height == 0 && d->Depth != 0) ||
	    (d->NumChannels != 1 && d->NumChannels != 2 &&
	     d->NumChannels != 4) || d->Flags & ~(unsigned)(
		     CUDA_ARRAY3D_LAYERED | CUDA_ARRAY3D_CUBEMAP |
		     CUDA_ARRAY3D_SURFACE_LDST) || levels == 0 || levels > 32)
		return 0;
	e = element_bytes(d->Format, d->NumChannels);
	for (unsigned l = 0; e && l < levels; l++) {
		uint64_t w = d->Width >> l, h = d->Height >> l;
		uint64_t z = layered ? d->Depth : d->Depth >> l, b;

		w = w ? w : 1;
		h = h ? h : 1;
		z = z ? z : 1;
		if (__builtin_mul_overflow(w, h, &b) ||
		    __builtin_mul_overflow(b, z, &b) ||
		    __builtin_mul_overflow(b, e, &b) ||
		    __builtin_add_overflow(total, b, &total))
			return 0;
	}
	return e ? total : 0;
}

static CUresult array_new(void **out, const CUDA_ARRAY3D_DESCRIPTOR *d,
			  unsigned levels, int mipmapped)
{
	struct sim_array *a;
	struct sim_ctx *c;
	uint64_t size;
	CUresult err;

	if (out == NULL || d == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	size = array_size(d, levels);
	if (size == 0)
		return CUDA_ERROR_INVALID_VALUE;
	a = calloc(1, sizeof(*a));
	if (a == NULL)
		return CUDA_ERROR_OUT_OF_MEMORY;
	a->size = size;
	a->mipmapped = mipmapped;
	sim_lock();
	err = sim_ctx_get(&c);
	if (err == CUDA_SUCCESS)
		err = sim_mem_alloc_locked(c, size, &a->base);
	if (err == CUDA_SUCCESS &&
	    sim_handle_add(a, mipmapped ? SIM_H_MIPMAP : SIM_H_ARRAY) < 0) {
		sim_mem_free_locked(a->base, 1);
		err = CUDA_ERROR_OUT_OF_MEMORY;
	}
	sim_unlock();
	if (err != CUDA_SUCCESS) {
		free(a);
		return err;
	}
	*out = a;
	return CUDA_SUCCESS;
}

static CUresult array_free(void *h, int mipmapped)
{
	struct sim_array *a = h;

	sim_lock();
	if (!sim_handle_ok(a, mipmapped ? SIM_H_MIPMAP : SIM_H_ARRAY)) {
		sim_unlock();
		return CUDA_ERROR_INVALID_HANDLE;
	}
	sim_handle_del(a);
	sim_mem_free_locked(a->base, 0);
	sim_unlock();
	free(a);
	return CUDA_SUCCESS;
}

SIM_API CUresult cuArrayCreate_v2(CUarray *pHandle,
				  const CUDA_ARRAY_DESCRIPTOR *p)
{
	CUDA_ARRAY3D_DESCRIPTOR d;

	if (p == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	d = (CUDA_ARRAY3D_DESCRIPTOR){ .Width = p->Width, .Height = p->Height,
				       .Format = p->Format,
				       .NumChannels = p->NumChannels };
	return array_new((void **)pHandle, &d, 1, 0);
}

SIM_API CUresult cuArray3DCreate_v2(CUarray *pHandle,
				    const CUDA_ARRAY3D_DESCRIPTOR *p)
{
	return array_new((void **)pHandle, p, 1, 0);
}

SIM_API CUresult cuMipmappedArrayCreate(CUmipmappedArray *pHandle,
					const CUDA_ARRAY3D_DESCRIPTOR *p,
					unsigned int numMipmapLevels)
{
	return array_new((void **)pHandle, p, numMipmapLevels, 1);
}

SIM_API CUresult cuArrayDestroy(CUarray hArray)
{
	return array_free(hArray, 0);
}

SIM_API CUresult cuMipmappedArrayDestroy(CUmipmappedArray hMipmappedArray)
{
	return array_free(hMipmappedArray, 1);
}

/* Lock held.  The device range a resource descriptor names. */
static CUresult resource_range(const CUDA_RESOURCE_DESC *r, int surface,
			       uint64_t *base, uint64_t *size)
{
	const struct sim_array *a;
	struct sim_alloc *al;

	switch (r->resType) {
	case CU_RESOURCE_TYPE_ARRAY:
	case CU_RESOURCE_TYPE_MIPMAPPED_ARRAY:
		a = r->resType == CU_RESOURCE_TYPE_ARRAY ?
		    (const void *)r->res.array.hArray :
		    (const void *)r->res.mipmap.hMipmappedArray;
		if (!sim_handle_ok(a, r->resType == CU_RESOURCE_TYPE_ARRAY ?
				   SIM_H_ARRAY : SIM_H_MIPMAP))
			return CUDA_ERROR_INVALID_HANDLE;
		*base = a->base;
		*size = a->size;
		return CUDA_SUCCESS;
	case CU_RESOURCE_TYPE_LINEAR:
		if (surface)
			return CUDA_ERROR_INVALID_VALUE;
		*base = r->res.linear.devPtr;
		*size = r->res.linear.sizeInBytes;
		break;
	case CU_RESOURCE_TYPE_PITCH2D:
		if (surface ||
		    __builtin_mul_overflow((uint64_t)r->res.pitch2D.pitchInBytes,
					   (uint64_t)r->res.pitch2D.height,
					   size))
			return CUDA_ERROR_INVALID_VALUE;
		*base = r->res.pitch2D.devPtr;
		break;
	default:
		return CUDA_ERROR_INVALID_VALUE;
	}
	al = sim_alloc_find(*base);
	if (al == NULL || *size == 0 || *size > al->size - (*base - al->base))
		return CUDA_ERROR_INVALID_VALUE;
	return CUDA_SUCCESS;
}

static CUresult texobj_new(uint64_t *out, const CUDA_RESOURCE_DESC *r,
			   int surface)
{
	struct sim_texobj *t;
	struct sim_ctx *c;
	CUresult err;

	if (out == NULL || r == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	t = calloc(1, sizeof(*t));
	if (t == NULL)
		return CUDA_ERROR_OUT_OF_MEMORY;
	sim_lock();
	err = sim_ctx_get(&c);
	if (err == CUDA_SUCCESS)
		err = resource_range(r, surface, &t->base, &t->size);
	if (err == CUDA_SUCCESS) {
		t->id = next_texobj++;
		t->surface = surface;
		t->next = texobjs;
		texobjs = t;
		*out = t->id;
	}
	sim_unlock();
	if (err != CUDA_SUCCESS)
		free(t);
	return err;
}

static CUresult texobj_free(uint64_t id, int surface)
{
	struct sim_texobj **p, *t = NULL;

	sim_lock();
	for (p = &texobjs; *p; p = &(*p)->next) {
		if ((*p)->id == id && (*p)->surface == surface) {
			t = *p;
			*p = t->next;
			break;
		}
	}
	sim_unlock();
	if (t == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	free(t);
	return CUDA_SUCCESS;
}

CUdeviceptr sim_texobj_range(uint64_t id, size_t *bytes)
{
	for (struct sim_texobj *t = texobjs; t; t = t->next) {
		if (t->id == id) {
			if (bytes)
				*bytes = (size_t)t->size;
			return t->base;
		}
	}
	return 0;
}

SIM_API CUresult cuTexObjectCreate(CUtexObject *pTexObject,
				   const CUDA_RESOURCE_DESC *pResDesc,
				   const CUDA_TEXTURE_DESC *pTexDesc,
				   const CUDA_RESOURCE_VIEW_DESC *pResViewDesc)
{
	(void)pResViewDesc;
	if (pTexDesc == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	return texobj_new((uint64_t *)pTexObject, pResDesc, 0);
}

SIM_API CUresult cuTexObjectDestroy(CUtexObject texObject)
{
	return texobj_free(texObject, 0);
}

SIM_API CUresult cuSurfObjectCreate(CUsurfObject *pSurfObject,
				    const CUDA_RESOURCE_DESC *pResDesc)
{
	return texobj_new((uint64_t *)pSurfObject, pResDesc, 1);
}

SIM_API CUresult cuSurfObjectDestroy(CUsurfObject surfObject)
{
	return texobj_free(surfObject, 1);
}

void sim_array_fini(void)
{
	while (texobjs) {
		struct sim_texobj *t = texobjs;

		texobjs = t->next;
		free(t);
	}
}
