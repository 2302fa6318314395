/*
 * cuda-internal.h - include cuda.h so that every ABI version of each entry
 * point keeps its own literal name.
 *
 * Without __CUDA_API_VERSION_INTERNAL, cuda.h renames cuMemAlloc to
 * cuMemAlloc_v2, cuLaunchKernel to cuLaunchKernel_ptsz, ... by macro, and we
 * could not define both the legacy and the per-thread-stream symbols.
 */
#ifndef KMUX_CUDA_INTERNAL_H
#define KMUX_CUDA_INTERNAL_H

#ifndef __CUDA_API_VERSION_INTERNAL
#define __CUDA_API_VERSION_INTERNAL 1
#endif
#include <cuda.h>

#endif
