/*
 * sim-procaddr.c - cuGetProcAddress and cuGetProcAddress_v2, and the one
 * table of every driver entry point simcuda exports.
 *
 * Programs ask by base name ("cuMemAlloc"), a CUDA version and per-thread
 * flags; the driver answers with the variant that version expects: the
 * newest one introduced at or before that version (cuMemAlloc ->
 * cuMemAlloc_v2 from 3020; cuCtxCreate -> _v4 from 12050), and with
 * CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM the _ptds / _ptsz variant
 * when one exists for that version.  A name the table lacks is
 * SYMBOL_NOT_FOUND; a name whose variants are all newer than the version is
 * VERSION_NOT_SUFFICIENT.  The versions are the ones cudaTypedefs.h gives
 * each PFN_ type.
 *
 * Each row is PA(base name, version, per-thread?, exported symbol).  The
 * build checks that every cu* symbol the library exports has a row here
 * (simcuda.mk), and the self-test checks every row's pointer against dlsym.
 */
#include <string.h>

#include "sim.h"

struct pa {
	const char *name;	/* base name programs ask for */
	const char *sym;	/* the exported symbol it resolves to */
	int version;		/* first CUDA version with this variant */
	int pt;			/* a per-thread default stream variant */
	void *fn;
};

#define PA(name, ver, pt, fn) { name, #fn, ver, pt, (void *)fn }
#define LEG 0
#define PT 1

static const struct pa table[] = {
	/* errors, init, driver, devices */
	PA("cuGetErrorString", 6000, LEG, cuGetErrorString),
	PA("cuGetErrorName", 6000, LEG, cuGetErrorName),
	PA("cuInit", 2000, LEG, cuInit),
	PA("cuDriverGetVersion", 2020, LEG, cuDriverGetVersion),
	PA("cuDeviceGet", 2000, LEG, cuDeviceGet),
	PA("cuDeviceGetCount", 2000, LEG, cuDeviceGetCount),
	PA("cuDeviceGetName", 2000, LEG, cuDeviceGetName),
	PA("cuDeviceGetUuid", 9020, LEG, cuDeviceGetUuid),
	PA("cuDeviceGetUuid", 11040, LEG, cuDeviceGetUuid_v2),
	PA("cuDeviceTotalMem", 3020, LEG, cuDeviceTotalMem_v2),
	PA("cuDeviceGetAttribute", 2000, LEG, cuDeviceGetAttribute),
	PA("cuDeviceComputeCapability", 2000, LEG, cuDeviceComputeCapability),
	PA("cuDeviceGetPCIBusId", 4010, LEG, cuDeviceGetPCIBusId),
	PA("cuDeviceCanAccessPeer", 4000, LEG, cuDeviceCanAccessPeer),
	PA("cuGetProcAddress", 11030, LEG, cuGetProcAddress),
	PA("cuGetProcAddress", 12000, LEG, cuGetProcAddress_v2),

	/* primary contexts */
	PA("cuDevicePrimaryCtxRetain", 7000, LEG, cuDevicePrimaryCtxRetain),
	PA("cuDevicePrimaryCtxRelease", 7000, LEG, cuDevicePrimaryCtxRelease),
	PA("cuDevicePrimaryCtxRelease", 11000, LEG,
	   cuDevicePrimaryCtxRelease_v2),
	PA("cuDevicePrimaryCtxReset", 7000, LEG, cuDevicePrimaryCtxReset),
	PA("cuDevicePrimaryCtxReset", 11000, LEG, cuDevicePrimaryCtxReset_v2),
	PA("cuDevicePrimaryCtxSetFlags", 7000, LEG, cuDevicePrimaryCtxSetFlags),
	PA("cuDevicePrimaryCtxSetFlags", 11000, LEG,
	   cuDevicePrimaryCtxSetFlags_v2),
	PA("cuDevicePrimaryCtxGetState", 7000, LEG, cuDevicePrimaryCtxGetState),

	/* contexts */
	PA("cuCtxCreate", 2000, LEG, cuCtxCreate),
	PA("cuCtxCreate", 3020, LEG, cuCtxCreate_v2),
	PA("cuCtxCreate", 11040, LEG, cuCtxCreate_v3),
	PA("cuCtxCreate", 12050, LEG, cuCtxCreate_v4),
	PA("cuCtxDestroy", 2000, LEG, cuCtxDestroy),
	PA("cuCtxDestroy", 4000, LEG, cuCtxDestroy_v2),
	PA("cuCtxPushCurrent", 2000, LEG, cuCtxPushCurrent),
	PA("cuCtxPushCurrent", 4000, LEG, cuCtxPushCurrent_v2),
	PA("cuCtxPopCurrent", 2000, LEG, cuCtxPopCurrent),
	PA("cuCtxPopCurrent", 4000, LEG, cuCtxPopCurrent_v2),
	PA("cuCtxSetCurrent", 4000, LEG, cuCtxSetCurrent),
	PA("cuCtxGetCurrent", 4000, LEG, cuCtxGetCurrent),
	PA("cuCtxGetDevice", 2000, LEG, cuCtxGetDevice),
	PA("cuCtxGetDevice", 13000, LEG, cuCtxGetDevice_v2),
	PA("cuCtxSynchronize", 2000, LEG, cuCtxSynchronize),
	PA("cuCtxSynchronize", 13000, LEG, cuCtxSynchronize_v2),
	PA("cuCtxGetApiVersion", 3020, LEG, cuCtxGetApiVersion),
	PA("cuCtxGetId", 12000, LEG, cuCtxGetId),
	PA("cuCtxGetFlags", 7000, LEG, cuCtxGetFlags),
	PA("cuCtxSetFlags", 12010, LEG, cuCtxSetFlags),
	PA("cuCtxGetStreamPriorityRange", 5050, LEG,
	   cuCtxGetStreamPriorityRange),
	PA("cuCtxSetLimit", 3010, LEG, cuCtxSetLimit),
	PA("cuCtxGetLimit", 3010, LEG, cuCtxGetLimit),

	/* memory */
	PA("cuMemGetInfo", 3020, LEG, cuMemGetInfo_v2),
	PA("cuMemAlloc", 3020, LEG, cuMemAlloc_v2),
	PA("cuMemAllocPitch", 3020, LEG, cuMemAllocPitch_v2),
	PA("cuMemFree", 3020, LEG, cuMemFree_v2),
	PA("cuMemGetAddressRange", 3020, LEG, cuMemGetAddressRange_v2),
	PA("cuMemAllocManaged", 6000, LEG, cuMemAllocManaged),
	PA("cuMemAllocHost", 3020, LEG, cuMemAllocHost_v2),
	PA("cuMemHostAlloc", 2020, LEG, cuMemHostAlloc),
	PA("cuMemFreeHost", 2000, LEG, cuMemFreeHost),
	PA("cuMemHostRegister", 4000, LEG, cuMemHostRegister),
	PA("cuMemHostRegister", 6050, LEG, cuMemHostRegister_v2),
	PA("cuMemHostUnregister", 4000, LEG, cuMemHostUnregister),
	PA("cuMemHostGetDevicePointer", 3020, LEG,
	   cuMemHostGetDevicePointer_v2),
	PA("cuMemHostGetFlags", 2030, LEG, cuMemHostGetFlags),
	PA("cuPointerGetAttribute", 4000, LEG, cuPointerGetAttribute),
	PA("cuPointerGetAttributes", 7000, LEG, cuPointerGetAttributes),
	PA("cuMemAllocAsync", 11020, LEG, cuMemAllocAsync),
	PA("cuMemAllocAsync", 11020, PT, cuMemAllocAsync_ptsz),
	PA("cuMemAllocFromPoolAsync", 11020, LEG, cuMemAllocFromPoolAsync),
	PA("cuMemAllocFromPoolAsync", 11020, PT, cuMemAllocFromPoolAsync_ptsz),
	PA("cuMemFreeAsync", 11020, LEG, cuMemFreeAsync),
	PA("cuMemFreeAsync", 11020, PT, cuMemFreeAsync_ptsz),
	PA("cuMemPoolCreate", 11020, LEG, cuMemPoolCreate),
	PA("cuMemPoolDestroy", 11020, LEG, cuMemPoolDestroy),
	PA("cuMemPoolTrimTo", 11020, LEG, cuMemPoolTrimTo),
	PA("cuMemPoolSetAttribute", 11020, LEG, cuMemPoolSetAttribute),
	PA("cuMemPoolGetAttribute", 11020, LEG, cuMemPoolGetAttribute),

	/* arrays, texture and surface objects */
	PA("cuArrayCreate", 3020, LEG, cuArrayCreate_v2),
	PA("cuArray3DCreate", 3020, LEG, cuArray3DCreate_v2),
	PA("cuArrayDestroy", 2000, LEG, cuArrayDestroy),
	PA("cuMipmappedArrayCreate", 5000, LEG, cuMipmappedArrayCreate),
	PA("cuMipmappedArrayDestroy", 5000, LEG, cuMipmappedArrayDestroy),
	PA("cuTexObjectCreate", 5000, LEG, cuTexObjectCreate),
	PA("cuTexObjectDestroy", 5000, LEG, cuTexObjectDestroy),
	PA("cuSurfObjectCreate", 5000, LEG, cuSurfObjectCreate),
	PA("cuSurfObjectDestroy", 5000, LEG, cuSurfObjectDestroy),

	/* virtual memory management */
	PA("cuMemGetAllocationGranularity", 10020, LEG,
	   cuMemGetAllocationGranularity),
	PA("cuMemAddressReserve", 10020, LEG, cuMemAddressReserve),
	PA("cuMemAddressFree", 10020, LEG, cuMemAddressFree),
	PA("cuMemCreate", 10020, LEG, cuMemCreate),
	PA("cuMemRelease", 10020, LEG, cuMemRelease),
	PA("cuMemMap", 10020, LEG, cuMemMap),
	PA("cuMemUnmap", 10020, LEG, cuMemUnmap),
	PA("cuMemSetAccess", 10020, LEG, cuMemSetAccess),
	PA("cuMemGetAccess", 10020, LEG, cuMemGetAccess),
	PA("cuMemGetAllocationPropertiesFromHandle", 10020, LEG,
	   cuMemGetAllocationPropertiesFromHandle),
	PA("cuMemRetainAllocationHandle", 11000, LEG,
	   cuMemRetainAllocationHandle),

	/* copies */
	PA("cuMemcpyHtoD", 3020, LEG, cuMemcpyHtoD_v2),
	PA("cuMemcpyHtoD", 7000, PT, cuMemcpyHtoD_v2_ptds),
	PA("cuMemcpyDtoH", 3020, LEG, cuMemcpyDtoH_v2),
	PA("cuMemcpyDtoH", 7000, PT, cuMemcpyDtoH_v2_ptds),
	PA("cuMemcpyDtoD", 3020, LEG, cuMemcpyDtoD_v2),
	PA("cuMemcpyDtoD", 7000, PT, cuMemcpyDtoD_v2_ptds),
	PA("cuMemcpy", 4000, LEG, cuMemcpy),
	PA("cuMemcpy", 7000, PT, cuMemcpy_ptds),
	PA("cuMemcpyHtoDAsync", 3020, LEG, cuMemcpyHtoDAsync_v2),
	PA("cuMemcpyHtoDAsync", 7000, PT, cuMemcpyHtoDAsync_v2_ptsz),
	PA("cuMemcpyDtoHAsync", 3020, LEG, cuMemcpyDtoHAsync_v2),
	PA("cuMemcpyDtoHAsync", 7000, PT, cuMemcpyDtoHAsync_v2_ptsz),
	PA("cuMemcpyDtoDAsync", 3020, LEG, cuMemcpyDtoDAsync_v2),
	PA("cuMemcpyDtoDAsync", 7000, PT, cuMemcpyDtoDAsync_v2_ptsz),
	PA("cuMemcpyAsync", 4000, LEG, cuMemcpyAsync),
	PA("cuMemcpyAsync", 7000, PT, cuMemcpyAsync_ptsz),
	PA("cuMemcpyPeer", 4000, LEG, cuMemcpyPeer),
	PA("cuMemcpyPeer", 7000, PT, cuMemcpyPeer_ptds),
	PA("cuMemcpyPeerAsync", 4000, LEG, cuMemcpyPeerAsync),
	PA("cuMemcpyPeerAsync", 7000, PT, cuMemcpyPeerAsync_ptsz),

	/* sets */
	PA("cuMemsetD8", 3020, LEG, cuMemsetD8_v2),
	PA("cuMemsetD8", 7000, PT, cuMemsetD8_v2_ptds),
	PA("cuMemsetD16", 3020, LEG, cuMemsetD16_v2),
	PA("cuMemsetD16", 7000, PT, cuMemsetD16_v2_ptds),
	PA("cuMemsetD32", 3020, LEG, cuMemsetD32_v2),
	PA("cuMemsetD32", 7000, PT, cuMemsetD32_v2_ptds),
	PA("cuMemsetD2D8", 3020, LEG, cuMemsetD2D8_v2),
	PA("cuMemsetD2D8", 7000, PT, cuMemsetD2D8_v2_ptds),
	PA("cuMemsetD2D16", 3020, LEG, cuMemsetD2D16_v2),
	PA("cuMemsetD2D16", 7000, PT, cuMemsetD2D16_v2_ptds),
	PA("cuMemsetD2D32", 3020, LEG, cuMemsetD2D32_v2),
	PA("cuMemsetD2D32", 7000, PT, cuMemsetD2D32_v2_ptds),
	PA("cuMemsetD8Async", 3020, LEG, cuMemsetD8Async),
	PA("cuMemsetD8Async", 7000, PT, cuMemsetD8Async_ptsz),
	PA("cuMemsetD16Async", 3020, LEG, cuMemsetD16Async),
	PA("cuMemsetD16Async", 7000, PT, cuMemsetD16Async_ptsz),
	PA("cuMemsetD32Async", 3020, LEG, cuMemsetD32Async),
	PA("cuMemsetD32Async", 7000, PT, cuMemsetD32Async_ptsz),
	PA("cuMemsetD2D8Async", 3020, LEG, cuMemsetD2D8Async),
	PA("cuMemsetD2D8Async", 7000, PT, cuMemsetD2D8Async_ptsz),
	PA("cuMemsetD2D16Async", 3020, LEG, cuMemsetD2D16Async),
	PA("cuMemsetD2D16Async", 7000, PT, cuMemsetD2D16Async_ptsz),
	PA("cuMemsetD2D32Async", 3020, LEG, cuMemsetD2D32Async),
	PA("cuMemsetD2D32Async", 7000, PT, cuMemsetD2D32Async_ptsz),

	/* streams */
	PA("cuStreamCreate", 2000, LEG, cuStreamCreate),
	PA("cuStreamCreateWithPriority", 5050, LEG, cuStreamCreateWithPriority),
	PA("cuStreamDestroy", 2000, LEG, cuStreamDestroy),
	PA("cuStreamDestroy", 4000, LEG, cuStreamDestroy_v2),
	PA("cuStreamSynchronize", 2000, LEG, cuStreamSynchronize),
	PA("cuStreamSynchronize", 7000, PT, cuStreamSynchronize_ptsz),
	PA("cuStreamQuery", 2000, LEG, cuStreamQuery),
	PA("cuStreamQuery", 7000, PT, cuStreamQuery_ptsz),
	PA("cuStreamGetFlags", 5050, LEG, cuStreamGetFlags),
	PA("cuStreamGetFlags", 7000, PT, cuStreamGetFlags_ptsz),
	PA("cuStreamGetPriority", 5050, LEG, cuStreamGetPriority),
	PA("cuStreamGetPriority", 7000, PT, cuStreamGetPriority_ptsz),
	PA("cuStreamGetCtx", 9020, LEG, cuStreamGetCtx),
	PA("cuStreamGetCtx", 9020, PT, cuStreamGetCtx_ptsz),
	PA("cuStreamGetId", 12000, LEG, cuStreamGetId),
	PA("cuStreamGetId", 12000, PT, cuStreamGetId_ptsz),
	PA("cuStreamGetDevice", 12080, LEG, cuStreamGetDevice),
	PA("cuStreamGetDevice", 12080, PT, cuStreamGetDevice_ptsz),
	PA("cuStreamWaitEvent", 3020, LEG, cuStreamWaitEvent),
	PA("cuStreamWaitEvent", 7000, PT, cuStreamWaitEvent_ptsz),
	PA("cuStreamWriteValue32", 12000, LEG, cuStreamWriteValue32_v2),
	PA("cuStreamWriteValue32", 12000, PT, cuStreamWriteValue32_v2_ptsz),
	PA("cuStreamAddCallback", 5000, LEG, cuStreamAddCallback),
	PA("cuStreamAddCallback", 7000, PT, cuStreamAddCallback_ptsz),
	PA("cuLaunchHostFunc", 10000, LEG, cuLaunchHostFunc),
	PA("cuLaunchHostFunc", 10000, PT, cuLaunchHostFunc_ptsz),

	/* events */
	PA("cuEventCreate", 2000, LEG, cuEventCreate),
	PA("cuEventRecord", 2000, LEG, cuEventRecord),
	PA("cuEventRecord", 7000, PT, cuEventRecord_ptsz),
	PA("cuEventRecordWithFlags", 11010, LEG, cuEventRecordWithFlags),
	PA("cuEventRecordWithFlags", 11010, PT, cuEventRecordWithFlags_ptsz),
	PA("cuEventQuery", 2000, LEG, cuEventQuery),
	PA("cuEventSynchronize", 2000, LEG, cuEventSynchronize),
	PA("cuEventDestroy", 2000, LEG, cuEventDestroy),
	PA("cuEventDestroy", 4000, LEG, cuEventDestroy_v2),
	PA("cuEventElapsedTime", 2000, LEG, cuEventElapsedTime),
	PA("cuEventElapsedTime", 12080, LEG, cuEventElapsedTime_v2),

	/* modules, functions */
	PA("cuModuleLoad", 2000, LEG, cuModuleLoad),
	PA("cuModuleLoadData", 2000, LEG, cuModuleLoadData),
	PA("cuModuleLoadDataEx", 2010, LEG, cuModuleLoadDataEx),
	PA("cuModuleUnload", 2000, LEG, cuModuleUnload),
	PA("cuModuleGetFunction", 2000, LEG, cuModuleGetFunction),
	PA("cuModuleGetFunctionCount", 12040, LEG, cuModuleGetFunctionCount),
	PA("cuModuleGetGlobal", 3020, LEG, cuModuleGetGlobal_v2),
	PA("cuModuleEnumerateFunctions", 12040, LEG,
	   cuModuleEnumerateFunctions),
	PA("cuFuncGetAttribute", 2020, LEG, cuFuncGetAttribute),
	PA("cuFuncSetAttribute", 9000, LEG, cuFuncSetAttribute),
	PA("cuFuncSetCacheConfig", 3000, LEG, cuFuncSetCacheConfig),
	PA("cuFuncGetName", 12030, LEG, cuFuncGetName),
	PA("cuFuncGetParamInfo", 12040, LEG, cuFuncGetParamInfo),
	PA("cuFuncGetModule", 11000, LEG, cuFuncGetModule),
	PA("cuFuncIsLoaded", 12040, LEG, cuFuncIsLoaded),
	PA("cuFuncLoad", 12040, LEG, cuFuncLoad),

	/* libraries, kernels */
	PA("cuLibraryLoadData", 12000, LEG, cuLibraryLoadData),
	PA("cuLibraryLoadFromFile", 12000, LEG, cuLibraryLoadFromFile),
	PA("cuLibraryUnload", 12000, LEG, cuLibraryUnload),
	PA("cuLibraryGetKernel", 12000, LEG, cuLibraryGetKernel),
	PA("cuLibraryGetModule", 12000, LEG, cuLibraryGetModule),
	PA("cuLibraryGetKernelCount", 12040, LEG, cuLibraryGetKernelCount),
	PA("cuLibraryEnumerateKernels", 12040, LEG, cuLibraryEnumerateKernels),
	PA("cuKernelGetFunction", 12000, LEG, cuKernelGetFunction),
	PA("cuKernelGetLibrary", 12050, LEG, cuKernelGetLibrary),
	PA("cuKernelGetAttribute", 12000, LEG, cuKernelGetAttribute),
	PA("cuKernelSetAttribute", 12000, LEG, cuKernelSetAttribute),
	PA("cuKernelGetName", 12030, LEG, cuKernelGetName),
	PA("cuKernelGetParamInfo", 12040, LEG, cuKernelGetParamInfo),

	/* launches */
	PA("cuLaunchKernel", 4000, LEG, cuLaunchKernel),
	PA("cuLaunchKernel", 7000, PT, cuLaunchKernel_ptsz),
	PA("cuLaunchKernelEx", 11060, LEG, cuLaunchKernelEx),
	PA("cuLaunchKernelEx", 11060, PT, cuLaunchKernelEx_ptsz),
	PA("cuLaunchCooperativeKernel", 9000, LEG, cuLaunchCooperativeKernel),
	PA("cuLaunchCooperativeKernel", 9000, PT,
	   cuLaunchCooperativeKernel_ptsz),

	/* stream capture and graphs */
	PA("cuStreamBeginCapture", 10000, LEG, cuStreamBeginCapture),
	PA("cuStreamBeginCapture", 10000, PT, cuStreamBeginCapture_ptsz),
	PA("cuStreamBeginCapture", 10010, LEG, cuStreamBeginCapture_v2),
	PA("cuStreamBeginCapture", 10010, PT, cuStreamBeginCapture_v2_ptsz),
	PA("cuStreamEndCapture", 10000, LEG, cuStreamEndCapture),
	PA("cuStreamEndCapture", 10000, PT, cuStreamEndCapture_ptsz),
	PA("cuStreamIsCapturing", 10000, LEG, cuStreamIsCapturing),
	PA("cuStreamIsCapturing", 10000, PT, cuStreamIsCapturing_ptsz),
	PA("cuStreamGetCaptureInfo", 10010, LEG, cuStreamGetCaptureInfo),
	PA("cuStreamGetCaptureInfo", 10010, PT, cuStreamGetCaptureInfo_ptsz),
	PA("cuStreamGetCaptureInfo", 11030, LEG, cuStreamGetCaptureInfo_v2),
	PA("cuStreamGetCaptureInfo", 11030, PT,
	   cuStreamGetCaptureInfo_v2_ptsz),
	PA("cuStreamGetCaptureInfo", 12030, LEG, cuStreamGetCaptureInfo_v3),
	PA("cuStreamGetCaptureInfo", 12030, PT,
	   cuStreamGetCaptureInfo_v3_ptsz),
	PA("cuGraphCreate", 10000, LEG, cuGraphCreate),
	PA("cuGraphDestroy", 10000, LEG, cuGraphDestroy),
	PA("cuGraphInstantiate", 10000, LEG, cuGraphInstantiate),
	PA("cuGraphInstantiate", 11000, LEG, cuGraphInstantiate_v2),
	PA("cuGraphInstantiate", 12000, LEG, cuGraphInstantiateWithFlags),
	PA("cuGraphInstantiateWithFlags", 11040, LEG,
	   cuGraphInstantiateWithFlags),
	PA("cuGraphLaunch", 10000, LEG, cuGraphLaunch),
	PA("cuGraphLaunch", 10000, PT, cuGraphLaunch_ptsz),
	PA("cuGraphUpload", 11010, LEG, cuGraphUpload),
	PA("cuGraphUpload", 11010, PT, cuGraphUpload_ptsz),
	PA("cuGraphExecDestroy", 10000, LEG, cuGraphExecDestroy),
	PA("cuGraphInstantiateWithParams", 12000, LEG,
	   cuGraphInstantiateWithParams),
	PA("cuGraphInstantiateWithParams", 12000, PT,
	   cuGraphInstantiateWithParams_ptsz),
	PA("cuGraphAddMemAllocNode", 11040, LEG, cuGraphAddMemAllocNode),
	PA("cuGraphAddMemFreeNode", 11040, LEG, cuGraphAddMemFreeNode),
	PA("cuGraphGetNodes", 10000, LEG, cuGraphGetNodes),
	PA("cuGraphNodeGetType", 10000, LEG, cuGraphNodeGetType),
	PA("cuGraphMemAllocNodeGetParams", 11040, LEG,
	   cuGraphMemAllocNodeGetParams),
	PA("cuGraphMemFreeNodeGetParams", 11040, LEG,
	   cuGraphMemFreeNodeGetParams),
};

#define TABLE_LEN (sizeof(table) / sizeof(table[0]))

CUresult sim_procaddr(const char *symbol, void **pfn, int version,
		      cuuint64_t flags, CUdriverProcAddressQueryResult *status)
{
	const struct pa *best = NULL, *best_pt = NULL, *pick;
	int want_pt = !!(flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM);
	int known = 0;
	size_t i;

	if (symbol == NULL || pfn == NULL ||
	    (flags & ~(cuuint64_t)(CU_GET_PROC_ADDRESS_LEGACY_STREAM |
			CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM)))
		return CUDA_ERROR_INVALID_VALUE;
	*pfn = NULL;
	for (i = 0; i < TABLE_LEN; i++) {
		const struct pa *e = &table[i];

		if (strcmp(e->name, symbol) != 0)
			continue;
		known = 1;
		if (e->version > version)
			continue;
		if (e->pt) {
			if (best_pt == NULL || e->version > best_pt->version)
				best_pt = e;
		} else if (best == NULL || e->version > best->version) {
			best = e;
		}
	}
	pick = (want_pt && best_pt != NULL) ? best_pt : best;
	if (pick == NULL) {
		if (status != NULL)
			*status = known ?
				CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT :
				CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
		return CUDA_ERROR_NOT_FOUND;
	}
	*pfn = pick->fn;
	if (status != NULL)
		*status = CU_GET_PROC_ADDRESS_SUCCESS;
	return CUDA_SUCCESS;
}

SIM_API CUresult cuGetProcAddress_v2(const char *symbol, void **pfn,
		int cudaVersion, cuuint64_t flags,
		CUdriverProcAddressQueryResult *symbolStatus)
{
	return sim_procaddr(symbol, pfn, cudaVersion, flags, symbolStatus);
}

SIM_API CUresult cuGetProcAddress(const char *symbol, void **pfn,
				  int cudaVersion, cuuint64_t flags)
{
	return sim_procaddr(symbol, pfn, cudaVersion, flags, NULL);
}

/*
 * Test hook for the self-test: row i of the table.  0, or -1 past the end.
 * Not in simcuda.h: only the self-test has reason to walk the table.
 */
SIM_API int simcuda_procaddr_row(size_t i, const char **name,
				 const char **sym, int *version, int *pt,
				 void **fn);
SIM_API int simcuda_procaddr_row(size_t i, const char **name,
				 const char **sym, int *version, int *pt,
				 void **fn)
{
	if (i >= TABLE_LEN)
		return -1;
	*name = table[i].name;
	*sym = table[i].sym;
	*version = table[i].version;
	*pt = table[i].pt;
	*fn = table[i].fn;
	return 0;
}
