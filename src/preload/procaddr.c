/*
 * procaddr.c - cuGetProcAddress / cuGetProcAddress_v2: the third
 * interposition layer.
 *
 * cudart (and so PyTorch, CuPy, JAX, Triton) fetches nearly every driver entry
 * point through cuGetProcAddress, by base name plus the CUDA version it was
 * built for and the default-stream flavour.  Only the driver knows which
 * versioned variant (cuMemAlloc_v2, cuLaunchKernel_ptsz, ...) that means, so
 * kmux asks it, then swaps the returned address for the wrapper of that exact
 * variant: version, per-thread flags and symbolStatus are the driver's own.
 * An address kmux has no wrapper for is handed back unchanged, never guessed
 * at by name (variants of one name differ in ABI); so is one whose wrapper
 * only forwards (HOOK_FORWARD in hooks.def).
 */
#include <stdatomic.h>

#include "compiler.h"
#include "log.h"
#include "real.h"

static atomic_uint procaddr_unmatched;

static void *procaddr_wrap(const char *symbol, void *fn)
{
	const struct hook_entry *e = hook_table_find_real(fn);

	if (e)
		return e->forward ? fn : e->hook;	/* hooks.def */
	/* Unwrapped variants of hooked names are worth knowing about. */
	if (kmux_log_level >= KMUX_LOG_INFO && symbol) {
		char base[64];
		unsigned n = 0;

		while (symbol[n] && n < sizeof(base) - 1) {
			base[n] = symbol[n];
			n++;
		}
		base[n] = '\0';
		if (hook_table_find(base))
			log_info("cuGetProcAddress(%s): driver returned a variant kmux does not wrap; passing it through",
				 symbol);
	}
	atomic_fetch_add_explicit(&procaddr_unmatched, 1, memory_order_relaxed);
	return fn;
}

KMUX_EXPORT CUresult CUDAAPI cuGetProcAddress_v2(const char *symbol, void **pfn,
						 int cudaVersion, cuuint64_t flags,
						 CUdriverProcAddressQueryResult *symbolStatus)
{
	CUresult r;

	if (!real_ready() || !REAL(cuGetProcAddress_v2))
		return CUDA_ERROR_NOT_INITIALIZED;
	r = REAL(cuGetProcAddress_v2)(symbol, pfn, cudaVersion, flags,
				      symbolStatus);
	if (r == CUDA_SUCCESS && pfn && *pfn)
		*pfn = procaddr_wrap(symbol, *pfn);
	return r;
}

KMUX_EXPORT CUresult CUDAAPI cuGetProcAddress(const char *symbol, void **pfn,
					      int cudaVersion, cuuint64_t flags)
{
	CUresult r;

	if (!real_ready() || !REAL(cuGetProcAddress))
		return CUDA_ERROR_NOT_INITIALIZED;
	r = REAL(cuGetProcAddress)(symbol, pfn, cudaVersion, flags);
	if (r == CUDA_SUCCESS && pfn && *pfn)
		*pfn = procaddr_wrap(symbol, *pfn);
	return r;
}

unsigned procaddr_unmatched_count(void)
{
	return atomic_load_explicit(&procaddr_unmatched, memory_order_relaxed);
}
