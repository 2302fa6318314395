/*
 * kparams.h - kernel parameter decoding for the tracker.
 *
 * The driver tells us each parameter's offset and size
 * (cuFuncGetParamInfo, or cuKernelGetParamInfo when f is really a CUkernel).
 * We cache that per function, with its name (cuFuncGetName / cuKernelGetName),
 * in a lock-free open-addressing table keyed by the function handle.  At
 * launch, every aligned 8-byte word inside the parameter bytes that points
 * into a known allocation (alloc-table.h) is an access of that allocation.
 */
#ifndef KMUX_KPARAMS_H
#define KMUX_KPARAMS_H

#include <stdatomic.h>
#include <stdint.h>

#include "cuda-internal.h"

#include "alloc-table.h"

#define KPARAMS_MAX 256	/* more parameters than this: layout unknown */

/* Bytes from a pointer parameter's value: [lo, hi), lo < hi. */
struct ptxr_prog;
struct kp_geo;

/* The pseudo allocations of the module variables a kernel reaches. */
struct kparams_vars {
	uint64_t rw;	/* `__device__` ones: read and written */
	uint64_t ro;	/* `__constant__` ones: read (the host writes them) */
};

/* One 8-byte word a pointer may sit in: bytes [off, off + 8) of param. */
struct kp_word {
	uint32_t param, off;
};

struct kparams_extent {
	int64_t lo, hi;
};

struct kernel_info {
	const void *func;	/* CUfunction or CUkernel, the cache key */
	unsigned long gen;	/* kparams_invalidate() count when learned */
	/* Replaced entries are kept on a list through this (kparams.c). */
	struct kernel_info *retired;
	const char *name;	/* never NULL; "?" when the driver has none */
	int nparams;		/* -1 when the layout could not be learned */
	uint32_t param_bytes;	/* end of the last parameter */
	uint32_t *offset;	/* nparams entries */
	uint32_t *size;		/* nparams entries */
	/*
	 * The words a launch's kernel_params form is scanned at, worked out
	 * once from offset and size (kparams.c: kp_scan's rule), in scan
	 * order: nwords of them.
	 */
	uint32_t nwords;
	const struct kp_word *words;
	/*
	 * Bit i: parameter i is proven read-only (the readonly callback,
	 * ptx-table.h); 0 when nothing is proven.
	 */
	uint64_t readonly;
	/*
	 * Bit i: parameter i (a pointer) reaches exactly [value + ext[i].lo,
	 * value + ext[i].hi) (the same callback, ptx-table.h); ext has
	 * nparams entries when any bit is set, else NULL.
	 */
	uint64_t has_extent;
	const struct kparams_extent *ext;
	/*
	 * The kernel's body for ranges that depend on the launch geometry
	 * (ptx-range.h), NULL when none; kparams_collect_at() solves it once
	 * per geometry and keeps the last answer in geo (kparams.c).  geo and
	 * geo_solves change after publication (atomically), as sched_class.
	 */
	struct ptxr_prog *range;
	/*
	 * The kernel reaches its module's variables, which no allocation
	 * holds: the scheduler orders it as reading and writing vars.rw (its
	 * `__device__` ones) and reading vars.ro (its `__constant__` ones),
	 * pseudo allocation ids (ptx-table.h, PTXTAB_GLOBALS_ID).  0: its
	 * image's PTX shows it reaches none of that kind;
	 * KPARAMS_GLOBALS_UNKNOWN (both): nobody could tell (then a kernel
	 * without parameters is a barrier: it can reach nothing else).
	 */
	struct kparams_vars vars;
	_Atomic(struct kp_geo *) geo;
	atomic_uint geo_solves;
	/*
	 * Changes after publication too: the stream scheduler's cached
	 * KMUX_BARRIER_KERNELS verdict (KPARAMS_CLASS_*),
	 * so the regex runs once per kernel, not per launch.
	 */
	atomic_int sched_class;
};

#define KPARAMS_CLASS_UNKNOWN	0
#define KPARAMS_CLASS_PLAIN	1
#define KPARAMS_CLASS_BARRIER	2

/*
 * The driver entry points kparams needs, passed in so the module is testable
 * without a driver.  Any may be NULL.
 */
struct kparams_driver {
	CUresult (*func_get_param_info)(CUfunction, size_t, size_t *, size_t *);
	CUresult (*kernel_get_param_info)(CUkernel, size_t, size_t *, size_t *);
	CUresult (*func_get_name)(const char **, CUfunction);
	CUresult (*kernel_get_name)(const char **, CUkernel);
};

/* Copied.  Call at init, before any kparams_info(); NULL: no driver. */
void kparams_set_driver(const struct kparams_driver *drv);

/*
 * Who proves parameters read-only (ptx-table.h), asked once per function
 * when it is learned, with the handle (a CUkernel when is_kernel: the
 * kernel API answered its layout), its name and driver layout.  Returns
 * the read-only mask; sets bit i of *has_ext and ext[i] (ext has nparams
 * entries, i < 64) for each pointer parameter with an exact extent, and
 * clears the other bits; *range gets a counted reference to the kernel's
 * body for geometry-dependent ranges, or NULL; *vars the pseudo
 * allocation ids of the module variables it reaches (kernel_info.vars).
 * Asked for kernels without parameters too.
 * NULL: nobody.
 */
typedef uint64_t (*kparams_readonly_fn)(const void *f, int is_kernel,
					const char *name, int nparams,
					const uint32_t *size, uint64_t *has_ext,
					struct kparams_extent *ext,
					struct ptxr_prog **range,
					struct kparams_vars *vars);
void kparams_set_readonly(kparams_readonly_fn fn);

/*
 * Narrow what a collection looks for to [*lo, *hi) (the allocation
 * table's span is intersected with it): for a caller that needs only some
 * allocations (the memory manager alone: its managed objects, mm_span()).
 * Words outside are not looked up, so their allocations are not reported.
 * NULL: everything.  Set at init.
 */
typedef void (*kparams_span_fn)(uint64_t *lo, uint64_t *hi);
void kparams_set_span_filter(kparams_span_fn fn);

/*
 * Memory in no allocation that a parameter may still point into: the
 * module variables the program located (ptx-table.h).  fn fills *a (a
 * pseudo allocation: id, base, size, ALLOC_DEVICE) and returns 0, or
 * returns -ENOENT.  Only words the allocation table does not know and that
 * lie in the span kparams_extra_span() widened are looked up (none until
 * then).  NULL: none.  Set at init.
 */
typedef int (*kparams_extra_fn)(uint64_t addr, struct alloc *a);
void kparams_set_extra(kparams_extra_fn fn);

/* Widen the span kparams_set_extra()'s lookups cover to hold [lo, hi). */
void kparams_extra_span(uint64_t lo, uint64_t hi);

/*
 * A module, library or context went away: the driver may hand its
 * function handles out again for other code, so every cached entry is
 * learned again on its next use (the old entries stay valid for whoever
 * holds them).
 */
void kparams_invalidate(void);

/*
 * Cached info for f; learned from the driver on first sight.  Never NULL
 * unless out of memory.  Lock-free on the hit path.  A kernel whose handle
 * both GetParamInfo calls reject at index 0 with CUDA_ERROR_INVALID_VALUE
 * ("no parameter 0") has nparams 0; any other failure gives -1.
 */
const struct kernel_info *kparams_info(const void *f);

struct access {
	uint64_t alloc_id;
	uint64_t base;		/* of the allocation */
	uint32_t kind;		/* enum alloc_kind */
	uint32_t param;		/* index of the parameter holding the pointer */
	/*
	 * 1 when every parameter pointing into the allocation is proven
	 * read-only (struct kernel_info.readonly).
	 */
	uint32_t readonly;
	/*
	 * The bytes [base + off, base + off + len) are all the kernel can
	 * reach in the allocation: every parameter pointing into it has an
	 * extent (struct kernel_info.ext), and their hull lies inside it.
	 * len 0: the whole allocation.
	 */
	uint64_t off, len;
};

/* kernel_info.vars' ids when no image's PTX spoke for the kernel. */
#define KPARAMS_GLOBALS_UNKNOWN UINT64_MAX
#define KPARAMS_VARS_UNKNOWN \
	((struct kparams_vars){ KPARAMS_GLOBALS_UNKNOWN, KPARAMS_GLOBALS_UNKNOWN })

/* access.param when the layout is unknown (whole extra buffer scanned). */
#define KPARAMS_PARAM_UNKNOWN	UINT32_MAX

/*
 * Result flags of kparams_collect().  KPARAMS_UNKNOWN_LAYOUT: no param info;
 * with kernelParams nothing could be decoded, with an extra buffer of known
 * size every aligned word of the whole buffer was looked up instead.
 */
#define KPARAMS_UNKNOWN_LAYOUT	0x1	/* no param info: see above */
#define KPARAMS_EXTRA_OPAQUE	0x2	/* extra blob without a usable size */
#define KPARAMS_TRUNCATED	0x4	/* more accesses than max */
/* A pointer table (ptrtab.h) it was given points to more than kmux kept. */
#define KPARAMS_TABLE_OPAQUE	0x8
/*
 * A word of its parameters is a live texture or surface object (texobj.h):
 * it reaches memory through the handle.
 */
#define KPARAMS_OPAQUE_HANDLE	0x10
/* Any of these: the accesses are not all the kernel reaches. */
#define KPARAMS_NOT_ALL		(KPARAMS_UNKNOWN_LAYOUT | KPARAMS_EXTRA_OPAQUE | \
				 KPARAMS_TRUNCATED | KPARAMS_TABLE_OPAQUE | \
				 KPARAMS_OPAQUE_HANDLE)

/*
 * Decode one launch.  Exactly one of kernel_params / extra is used, as the
 * driver does (kernel_params wins when both are set).  Fills at most max
 * accesses, each allocation at most once, and returns the number filled;
 * *flags gets KPARAMS_* bits.  An allocation found there that is a pointer
 * table (ptrtab.h) adds the allocations it points to, read-write and whole,
 * with param KPARAMS_PARAM_UNKNOWN.
 */
int kparams_collect(struct alloc_table *t, const struct kernel_info *ki,
		    void **kernel_params, void **extra, struct access *out,
		    int max, unsigned *flags);

/*
 * The same for a launch of grid x block threads: a parameter whose range
 * the kernel's body bounds for that geometry (kernel_info.range) counts
 * only the bytes of its allocation in that range.  grid or block NULL:
 * kparams_collect().
 */
int kparams_collect_at(struct alloc_table *t, const struct kernel_info *ki,
		       const unsigned grid[3], const unsigned block[3],
		       void **kernel_params, void **extra, struct access *out,
		       int max, unsigned *flags);

#endif
