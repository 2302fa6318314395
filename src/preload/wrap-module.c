/*
 * wrap-module.c - module and library loads from memory, wrapped so that
 * KMUX_PTX_READONLY=1 sees every image the program loads (ptx-table.h).
 *
 * The image is scanned after the driver accepted it: an image the driver
 * refuses has no kernels to launch.  Loads from files (cuModuleLoad,
 * cuLibraryLoadFromFile) are not wrapped: their kernels stay read-write.
 */
#include "preload.h"
#include "ptx-table.h"

KMUX_EXPORT CUresult CUDAAPI cuModuleLoadData(CUmodule *module,
					      const void *image)
{
	CUresult r;

	if (NO_DRIVER(cuModuleLoadData))
		return CUDA_ERROR_NOT_INITIALIZED;
	r = REAL(cuModuleLoadData)(module, image);
	if (unlikely(ptxtab_on) && r == CUDA_SUCCESS)
		ptxtab_scan(image);
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
	if (unlikely(ptxtab_on) && r == CUDA_SUCCESS)
		ptxtab_scan(image);
	return r;
}

KMUX_EXPORT CUresult CUDAAPI cuModuleLoadFatBinary(CUmodule *module,
						   const void *fatCubin)
{
	CUresult r;

	if (NO_DRIVER(cuModuleLoadFatBinary))
		return CUDA_ERROR_NOT_INITIALIZED;
	r = REAL(cuModuleLoadFatBinary)(module, fatCubin);
	if (unlikely(ptxtab_on) && r == CUDA_SUCCESS)
		ptxtab_scan(fatCubin);
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
	if (unlikely(ptxtab_on) && r == CUDA_SUCCESS)
		ptxtab_scan(code);
	return r;
}
