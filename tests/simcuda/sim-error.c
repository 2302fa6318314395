/*
 * sim-error.c - cuGetErrorName and cuGetErrorString for every CUresult that
 * cuda.h 13.0 defines.  The strings are simcuda's own short descriptions.
 */
#include <stddef.h>

#include "sim.h"

struct err {
	CUresult code;
	const char *name;
	const char *str;
};

/* The name is the enumerator itself, so it cannot drift from cuda.h. */
#define E(code, str) { code, #code, str }

static const struct err errs[] = {
	E(CUDA_SUCCESS, "no error"),
	E(CUDA_ERROR_INVALID_VALUE, "invalid argument"),
	E(CUDA_ERROR_OUT_OF_MEMORY, "out of memory"),
	E(CUDA_ERROR_NOT_INITIALIZED, "initialization error"),
	E(CUDA_ERROR_DEINITIALIZED, "driver shutting down"),
	E(CUDA_ERROR_PROFILER_DISABLED, "profiler disabled"),
	E(CUDA_ERROR_PROFILER_NOT_INITIALIZED, "profiler not initialized"),
	E(CUDA_ERROR_PROFILER_ALREADY_STARTED, "profiler already started"),
	E(CUDA_ERROR_PROFILER_ALREADY_STOPPED, "profiler already stopped"),
	E(CUDA_ERROR_STUB_LIBRARY, "stub library"),
	E(CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER, "call requires newer driver"),
	E(CUDA_ERROR_DEVICE_UNAVAILABLE, "device unavailable"),
	E(CUDA_ERROR_NO_DEVICE, "no CUDA-capable device is detected"),
	E(CUDA_ERROR_INVALID_DEVICE, "invalid device ordinal"),
	E(CUDA_ERROR_DEVICE_NOT_LICENSED, "device not licensed"),
	E(CUDA_ERROR_INVALID_IMAGE, "device kernel image is invalid"),
	E(CUDA_ERROR_INVALID_CONTEXT, "invalid device context"),
	E(CUDA_ERROR_CONTEXT_ALREADY_CURRENT, "context already current"),
	E(CUDA_ERROR_MAP_FAILED, "map failed"),
	E(CUDA_ERROR_UNMAP_FAILED, "unmap failed"),
	E(CUDA_ERROR_ARRAY_IS_MAPPED, "array is mapped"),
	E(CUDA_ERROR_ALREADY_MAPPED, "already mapped"),
	E(CUDA_ERROR_NO_BINARY_FOR_GPU, "no binary for gpu"),
	E(CUDA_ERROR_ALREADY_ACQUIRED, "already acquired"),
	E(CUDA_ERROR_NOT_MAPPED, "not mapped"),
	E(CUDA_ERROR_NOT_MAPPED_AS_ARRAY, "not mapped as array"),
	E(CUDA_ERROR_NOT_MAPPED_AS_POINTER, "not mapped as pointer"),
	E(CUDA_ERROR_ECC_UNCORRECTABLE, "ecc uncorrectable"),
	E(CUDA_ERROR_UNSUPPORTED_LIMIT, "unsupported limit"),
	E(CUDA_ERROR_CONTEXT_ALREADY_IN_USE, "context already in use"),
	E(CUDA_ERROR_PEER_ACCESS_UNSUPPORTED, "peer access unsupported"),
	E(CUDA_ERROR_INVALID_PTX, "invalid ptx"),
	E(CUDA_ERROR_INVALID_GRAPHICS_CONTEXT, "invalid graphics context"),
	E(CUDA_ERROR_NVLINK_UNCORRECTABLE, "nvlink uncorrectable"),
	E(CUDA_ERROR_JIT_COMPILER_NOT_FOUND, "jit compiler not found"),
	E(CUDA_ERROR_UNSUPPORTED_PTX_VERSION, "unsupported ptx version"),
	E(CUDA_ERROR_JIT_COMPILATION_DISABLED, "jit compilation disabled"),
	E(CUDA_ERROR_UNSUPPORTED_EXEC_AFFINITY, "unsupported exec affinity"),
	E(CUDA_ERROR_UNSUPPORTED_DEVSIDE_SYNC, "unsupported devside sync"),
	E(CUDA_ERROR_CONTAINED, "contained"),
	E(CUDA_ERROR_INVALID_SOURCE, "invalid source"),
	E(CUDA_ERROR_FILE_NOT_FOUND, "file not found"),
	E(CUDA_ERROR_SHARED_OBJECT_SYMBOL_NOT_FOUND,
	  "shared object symbol not found"),
	E(CUDA_ERROR_SHARED_OBJECT_INIT_FAILED, "shared object init failed"),
	E(CUDA_ERROR_OPERATING_SYSTEM, "operating system"),
	E(CUDA_ERROR_INVALID_HANDLE, "invalid resource handle"),
	E(CUDA_ERROR_ILLEGAL_STATE, "illegal state"),
	E(CUDA_ERROR_LOSSY_QUERY, "lossy query"),
	E(CUDA_ERROR_NOT_FOUND, "named symbol not found"),
	E(CUDA_ERROR_NOT_READY, "device not ready"),
	E(CUDA_ERROR_ILLEGAL_ADDRESS,
	  "an illegal memory access was encountered"),
	E(CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, "launch out of resources"),
	E(CUDA_ERROR_LAUNCH_TIMEOUT, "launch timeout"),
	E(CUDA_ERROR_LAUNCH_INCOMPATIBLE_TEXTURING,
	  "launch incompatible texturing"),
	E(CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED,
	  "peer access already enabled"),
	E(CUDA_ERROR_PEER_ACCESS_NOT_ENABLED, "peer access not enabled"),
	E(CUDA_ERROR_PRIMARY_CONTEXT_ACTIVE, "primary context active"),
	E(CUDA_ERROR_CONTEXT_IS_DESTROYED, "context is destroyed"),
	E(CUDA_ERROR_ASSERT, "assert"),
	E(CUDA_ERROR_TOO_MANY_PEERS, "too many peers"),
	E(CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED,
	  "host memory already registered"),
	E(CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED, "host memory not registered"),
	E(CUDA_ERROR_HARDWARE_STACK_ERROR, "hardware stack error"),
	E(CUDA_ERROR_ILLEGAL_INSTRUCTION, "illegal instruction"),
	E(CUDA_ERROR_MISALIGNED_ADDRESS, "misaligned address"),
	E(CUDA_ERROR_INVALID_ADDRESS_SPACE, "invalid address space"),
	E(CUDA_ERROR_INVALID_PC, "invalid pc"),
	E(CUDA_ERROR_LAUNCH_FAILED, "launch failed"),
	E(CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE,
	  "cooperative launch too large"),
	E(CUDA_ERROR_TENSOR_MEMORY_LEAK, "tensor memory leak"),
	E(CUDA_ERROR_NOT_PERMITTED, "operation not permitted"),
	E(CUDA_ERROR_NOT_SUPPORTED, "operation not supported"),
	E(CUDA_ERROR_SYSTEM_NOT_READY, "system not ready"),
	E(CUDA_ERROR_SYSTEM_DRIVER_MISMATCH, "system driver mismatch"),
	E(CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE,
	  "compat not supported on device"),
	E(CUDA_ERROR_MPS_CONNECTION_FAILED, "mps connection failed"),
	E(CUDA_ERROR_MPS_RPC_FAILURE, "mps rpc failure"),
	E(CUDA_ERROR_MPS_SERVER_NOT_READY, "mps server not ready"),
	E(CUDA_ERROR_MPS_MAX_CLIENTS_REACHED, "mps max clients reached"),
	E(CUDA_ERROR_MPS_MAX_CONNECTIONS_REACHED,
	  "mps max connections reached"),
	E(CUDA_ERROR_MPS_CLIENT_TERMINATED, "mps client terminated"),
	E(CUDA_ERROR_CDP_NOT_SUPPORTED, "cdp not supported"),
	E(CUDA_ERROR_CDP_VERSION_MISMATCH, "cdp version mismatch"),
	E(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED,
	  "operation not permitted when stream is capturing"),
	E(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED,
	  "operation failed due to a previous error during capture"),
	E(CUDA_ERROR_STREAM_CAPTURE_MERGE, "stream capture merge"),
	E(CUDA_ERROR_STREAM_CAPTURE_UNMATCHED, "stream capture unmatched"),
	E(CUDA_ERROR_STREAM_CAPTURE_UNJOINED, "stream capture unjoined"),
	E(CUDA_ERROR_STREAM_CAPTURE_ISOLATION, "stream capture isolation"),
	E(CUDA_ERROR_STREAM_CAPTURE_IMPLICIT, "stream capture implicit"),
	E(CUDA_ERROR_CAPTURED_EVENT, "captured event"),
	E(CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD,
	  "stream capture wrong thread"),
	E(CUDA_ERROR_TIMEOUT, "timeout"),
	E(CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE, "graph exec update failure"),
	E(CUDA_ERROR_EXTERNAL_DEVICE, "external device"),
	E(CUDA_ERROR_INVALID_CLUSTER_SIZE, "invalid cluster size"),
	E(CUDA_ERROR_FUNCTION_NOT_LOADED, "function not loaded"),
	E(CUDA_ERROR_INVALID_RESOURCE_TYPE, "invalid resource type"),
	E(CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION,
	  "invalid resource configuration"),
	E(CUDA_ERROR_KEY_ROTATION, "key rotation"),
	E(CUDA_ERROR_UNKNOWN, "unknown error"),
};

#undef E

static const struct err *lookup(CUresult e)
{
	size_t i;

	for (i = 0; i < sizeof(errs) / sizeof(errs[0]); i++)
		if (errs[i].code == e)
			return &errs[i];
	return NULL;
}

SIM_API CUresult cuGetErrorName(CUresult error, const char **pStr)
{
	const struct err *e = lookup(error);

	if (pStr == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if (e == NULL) {
		*pStr = NULL;
		return CUDA_ERROR_INVALID_VALUE;
	}
	*pStr = e->name;
	return CUDA_SUCCESS;
}

SIM_API CUresult cuGetErrorString(CUresult error, const char **pStr)
{
	const struct err *e = lookup(error);

	if (pStr == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if (e == NULL) {
		*pStr = NULL;
		return CUDA_ERROR_INVALID_VALUE;
	}
	*pStr = e->str;
	return CUDA_SUCCESS;
}
