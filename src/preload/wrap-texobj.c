/*
 * wrap-texobj.c - texture and surface objects: handles a kernel reads or
 * writes memory through (an array, or linear memory kmux tracks) without a
 * pointer in its parameters.  texobj.h keeps the live ones; kparams.c
 * makes a launch given one (and copy.c, once one is uploaded, every
 * launch) a launch whose accesses kmux cannot see.
 */
#include "log.h"
#include "preload.h"
#include "texobj.h"

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
