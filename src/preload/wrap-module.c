/*
 * wrap-module.c - module and library loads from memory, wrapped so that
 * the PTX read-only proof (ptx-table.h; on by default under the scheduler,
 * KMUX_PTX_READONLY=0 turns it off) sees every image the program loads,
 * and unloads, which drop the image's verdicts and make kparams learn
 * every function again (the driver reuses handles).
 *
 * The image is scanned after the driver accepted it, and its verdicts kept
 * under the handle the driver returned: an image the driver refuses has no
 * kernels to launch.  Loads from files (cuModuleLoad, cuLibraryLoadFromFile)
 * pass through for the proof: their handles are never recorded, so their
 * kernels stay read-write whatever another image says about the same
 * names.  Every load, from memory or from a file, also goes to ctx-stack.h
 * (under a memory mode), which must see every image.
 *
 * Locating a module variable (what cudaMemcpyToSymbol and
 * cudaGetSymbolAddress do first) tells ptx-table.h where the variable
 * lies, so that copies to and from it, and kernels given a pointer into
 * it, are ordered with the kernels that reach it by name (copies are not
 * barriers then).
 */
#include "ctx-stack.h"
#include "kparams.h"
#include "preload.h"
#include "ptx-table.h"

KMUX_EXPORT CUresult CUDAAPI cuModuleLoad(CUmodule *module, const char *fname)
{
	CUresult r;

	if (NO_DRIVER(cuModuleLoad))
		return CUDA_ERROR_NOT_INITIALIZED;
	r = REAL(cuModuleLoad)(module, fname);
	if (unlikely(ctxstack_on) && r == CUDA_SUCCESS)
		ctxstack_image(NULL);
	return r;
}

KMUX_EXPORT CUresult CUDAAPI cuLibraryLoadFromFile(CUlibrary *library,
		const char *fileName, CUjit_option *jitOptions,
		void **jitOptionsValues, unsigned int numJitOptions,
		CUlibraryOption *libraryOptions, void **libraryOptionValues,
		unsigned int numLibraryOptions)
{
	CUresult r;

	if (NO_DRIVER(cuLibraryLoadFromFile))
		return CUDA_ERROR_NOT_INITIALIZED;
	r = REAL(cuLibraryLoadFromFile)(library, fileName, jitOptions,
					jitOptionsValues, numJitOptions,
					libraryOptions, libraryOptionValues,
					numLibraryOptions);
	if (unlikely(ctxstack_on) && r == CUDA_SUCCESS)
		ctxstack_image(NULL);
	return r;
}

KMUX_EXPORT CUresult CUDAAPI cuModuleLoadData(CUmodule *module,
					      const void *image)
{
	CUresult r;

	if (NO_DRIVER(cuModuleLoadData))
		return CUDA_ERROR_NOT_INITIALIZED;
	r = REAL(cuModuleLoadData)(module, image);
	if (unlikely(ptxtab_on) && r == CUDA_SUCCESS && module)
		ptxtab_scan(PTXTAB_MODULE, *module, image);
	if (unlikely(ctxstack_on) && r == CUDA_SUCCESS)
		ctxstack_image(image);
	return r;
}

KMUX_EXPORT CUresult CUDAAPI cuModuleLoadDataEx(CUmodule *module,
		const void *image, unsigned int numOptions,
		CUjit_option *options, void **optionValues)
{
	CUresult r;

	if (NO_DRIVER(cuModuleLoadDataEx))
		return CUDA_ERROR_NOT_INITIALIZED;
	r = REAL(cuModuleLoadDataEx)(module, image, numOptions, options,
				     optionValues);
	if (unlikely(ptxtab_on) && r == CUDA_SUCCESS && module)
		ptxtab_scan(PTXTAB_MODULE, *module, image);
	if (unlikely(ctxstack_on) && r == CUDA_SUCCESS)
		ctxstack_image(image);
	return r;
}

KMUX_EXPORT CUresult CUDAAPI cuModuleLoadFatBinary(CUmodule *module,
						   const void *fatCubin)
{
	CUresult r;

	if (NO_DRIVER(cuModuleLoadFatBinary))
		return CUDA_ERROR_NOT_INITIALIZED;
	r = REAL(cuModuleLoadFatBinary)(module, fatCubin);
	if (unlikely(ptxtab_on) && r == CUDA_SUCCESS && module)
		ptxtab_scan(PTXTAB_MODULE, *module, fatCubin);
	if (unlikely(ctxstack_on) && r == CUDA_SUCCESS)
		ctxstack_image(fatCubin);
	return r;
}

KMUX_EXPORT CUresult CUDAAPI cuLibraryLoadData(CUlibrary *library,
		const void *code, CUjit_option *jitOptions,
		void **jitOptionsValues, unsigned int numJitOptions,
		CUlibraryOption *libraryOptions, void **libraryOptionValues,
		unsigned int numLibraryOptions)
{
	CUresult r;

	if (NO_DRIVER(cuLibraryLoadData))
		return CUDA_ERROR_NOT_INITIALIZED;
	r = REAL(cuLibraryLoadData)(library, code, jitOptions,
				    jitOptionsValues, numJitOptions,
				    libraryOptions, libraryOptionValues,
				    numLibraryOptions);
	if (unlikely(ptxtab_on) && r == CUDA_SUCCESS && library)
		ptxtab_scan(PTXTAB_LIBRARY, *library, code);
	if (unlikely(ctxstack_on) && r == CUDA_SUCCESS)
		ctxstack_image(code);
	return r;
}

/*
 * After the real unload: until it returns the handle is not free for
 * reuse, and a verdict dropped early would only be a lost one.
 */
KMUX_EXPORT CUresult CUDAAPI cuModuleUnload(CUmodule hmod)
{
	CUresult r;

	if (NO_DRIVER(cuModuleUnload))
		return CUDA_ERROR_NOT_INITIALIZED;
	r = REAL(cuModuleUnload)(hmod);
	if (r == CUDA_SUCCESS) {
		ptxtab_unload(PTXTAB_MODULE, hmod);
		kparams_invalidate();
	}
	return r;
}

KMUX_EXPORT CUresult CUDAAPI cuLibraryUnload(CUlibrary library)
{
	CUresult r;

	if (NO_DRIVER(cuLibraryUnload))
		return CUDA_ERROR_NOT_INITIALIZED;
	r = REAL(cuLibraryUnload)(library);
	if (r == CUDA_SUCCESS) {
		ptxtab_unload(PTXTAB_LIBRARY, library);
		kparams_invalidate();
	}
	return r;
}

/*
 * The driver located variable name of (kind, handle) at p, n bytes: keep
 * where it lies, then give the caller what it asked for (either pointer
 * may be NULL; kmux asked for both).
 */
static CUresult module_var_located(enum ptxtab_owner kind, const void *handle,
				   const char *name, CUdeviceptr p, size_t n,
				   CUdeviceptr *dptr, size_t *bytes)
{
	if (ptxtab_symbol_add(kind, handle, name, p, n) == 0)
		kparams_extra_span(p, p + n);
	if (dptr)
		*dptr = p;
	if (bytes)
		*bytes = n;
	return CUDA_SUCCESS;
}

KMUX_EXPORT CUresult CUDAAPI cuModuleGetGlobal_v2(CUdeviceptr *dptr,
						  size_t *bytes, CUmodule hmod,
						  const char *name)
{
	CUdeviceptr p = 0;
	size_t n = 0;
	CUresult r;

	if (NO_DRIVER(cuModuleGetGlobal_v2))
		return CUDA_ERROR_NOT_INITIALIZED;
	if (likely(!ptxtab_globals_on))
		return REAL(cuModuleGetGlobal_v2)(dptr, bytes, hmod, name);
	r = REAL(cuModuleGetGlobal_v2)(&p, &n, hmod, name);
	if (r != CUDA_SUCCESS)
		return r;
	return module_var_located(PTXTAB_MODULE, hmod, name, p, n, dptr, bytes);
}

KMUX_EXPORT CUresult CUDAAPI cuLibraryGetGlobal(CUdeviceptr *dptr,
						size_t *bytes,
						CUlibrary library,
						const char *name)
{
	CUdeviceptr p = 0;
	size_t n = 0;
	CUresult r;

	if (NO_DRIVER(cuLibraryGetGlobal))
		return CUDA_ERROR_NOT_INITIALIZED;
	if (likely(!ptxtab_globals_on))
		return REAL(cuLibraryGetGlobal)(dptr, bytes, library, name);
	r = REAL(cuLibraryGetGlobal)(&p, &n, library, name);
	if (r != CUDA_SUCCESS)
		return r;
	return module_var_located(PTXTAB_LIBRARY, library, name, p, n, dptr,
				  bytes);
}
