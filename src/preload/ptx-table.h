/*
 * ptx-table.h - kernel parameters proven read-only from the PTX of the
 * images the program loads, kept per loaded module or library (see
 * ptx-table.c).  On by default under the stream scheduler;
 * KMUX_PTX_READONLY=0 turns it off.
 */
#ifndef KMUX_PTX_TABLE_H
#define KMUX_PTX_TABLE_H

#include <stdint.h>

#include "cuda-internal.h"
#include "kparams.h"

/*
 * Non-zero when images are scanned and verdicts given: the scheduler is on
 * and KMUX_PTX_READONLY is not "0".
 */
extern int ptxtab_on;
/*
 * Non-zero when the verdicts include exact extents (ptx-readonly.h): the
 * scan is on and KMUX_PTX_EXTENTS is not "0".
 */
extern int ptxtab_extents_on;

/*
 * From the constructor, after the scheduler's: value is KMUX_PTX_READONLY
 * (unset, empty or anything but "0": on), scheduling whether the stream
 * scheduler is on (it is the only reader of the verdicts, so without it
 * images are not scanned at all).  Returns 0.
 */
int ptxtab_init(const char *value, int scheduling);

/*
 * After ptxtab_init(): value is KMUX_PTX_EXTENTS (unset, empty or anything
 * but "0": on, when the scan is).  Off, launches keep whole-allocation
 * accesses.  Returns 0.
 */
int ptxtab_extents_init(const char *value);

/*
 * Non-zero when launches also get ranges that depend on their geometry
 * (ptx-range.h): extents are on and KMUX_PTX_RANGES is not "0".
 */
extern int ptxtab_ranges_on;

/* After ptxtab_extents_init(): value is KMUX_PTX_RANGES.  Returns 0. */
int ptxtab_ranges_init(const char *value);

/*
 * Non-zero when a kernel whose PTX reaches its module's `__device__`
 * variables is ordered with the others that do (ptxtab_readonly()'s
 * *vars): the scan is on and KMUX_PTX_GLOBALS is not "0".
 */
extern int ptxtab_globals_on;

/* After ptxtab_init(): value is KMUX_PTX_GLOBALS.  Returns 0. */
int ptxtab_globals_init(const char *value);

/*
 * The pseudo allocation ids of images' module globals: PTXTAB_GLOBALS_ID
 * plus a serial.  Above every alloc-table id (a counter from 1) and below
 * the scheduler's sub-state ids (bits 57-63, sched-internal.h).
 */
#define PTXTAB_GLOBALS_ID ((uint64_t)1 << 56)

/*
 * The driver entry points used to find which loaded image a launched
 * function comes from, passed in so the table is testable without a
 * driver.  Any may be NULL (that way of finding the owner is skipped).
 */
struct ptxtab_driver {
	CUresult (*func_get_module)(CUmodule *, CUfunction);
	CUresult (*kernel_get_library)(CUlibrary *, CUkernel);
	CUresult (*library_get_kernel)(CUkernel *, CUlibrary, const char *);
	CUresult (*kernel_get_function)(CUfunction *, CUkernel);
};

/* Copied.  NULL: no driver (then nothing is ever matched). */
void ptxtab_set_driver(const struct ptxtab_driver *drv);

enum ptxtab_owner { PTXTAB_MODULE, PTXTAB_LIBRARY };

/*
 * The driver accepted image as module (CUmodule) or library (CUlibrary)
 * handle: scan it and keep its verdicts under that handle, replacing any
 * the handle had (a handle the driver just returned is not loaded twice).
 */
void ptxtab_scan(enum ptxtab_owner kind, const void *handle,
		 const void *image);

/* The handle was unloaded: forget its verdicts (handles are reused). */
void ptxtab_unload(enum ptxtab_owner kind, const void *handle);

/* A context went away with its modules: forget every module's verdicts. */
void ptxtab_modules_gone(void);

/*
 * Bit i: parameter i of launched function f (a CUkernel when is_kernel,
 * else a CUfunction), whose driver name and layout are given, is proven
 * read-only by the PTX of the very image f was loaded from.  0 when that
 * image is unknown or unreadable, the option is off, or the layout
 * differs.  The same image's extents go to *has_ext (bit i) and ext[i]
 * (nparams entries), none when KMUX_PTX_EXTENTS=0 or the image has the
 * name twice.  *range: a counted reference to the image's body of f for
 * geometry-dependent ranges (ptx-range.h), or NULL, on the same terms as
 * extents.  *vars: the pseudo allocation ids (PTXTAB_GLOBALS_ID + n) of
 * the module-scope variables f reaches in that image, `__device__` ones
 * (rw) and `__constant__` ones (ro), whatever its layout (nparams may be
 * 0); 0 when that image's PTX shows it reaches none of the kind;
 * KPARAMS_GLOBALS_UNKNOWN (both) when the image is unknown or has no PTX
 * for it, or KMUX_PTX_GLOBALS is 0.  Asks the driver; callers cache the answer
 * (kparams.h).
 */
uint64_t ptxtab_readonly(const void *f, int is_kernel, const char *name,
			 int nparams, const uint32_t *size, uint64_t *has_ext,
			 struct kparams_extent *ext, struct ptxr_prog **range,
			 struct kparams_vars *vars);

/*
 * The program located module variable `name` of the image recorded under
 * (kind, handle) at [base, base + size) (cuModuleGetGlobal,
 * cuLibraryGetGlobal).  When that image's PTX declares it, the range is
 * kept with the pseudo id of its kind (the one the kernels reaching it
 * use) until the image goes (ptxtab_unload()) or, for a library, its
 * context (ptxtab_modules_gone()); any other located range it overlaps is
 * forgotten.  Nothing when KMUX_PTX_GLOBALS is 0.  Returns 0 when the
 * range is kept, else -ENOENT (or -ENOMEM).
 */
int ptxtab_symbol_add(enum ptxtab_owner kind, const void *handle,
		      const char *name, uint64_t base, uint64_t size);

/*
 * The located variable addr lies in, as a pseudo allocation (its id and
 * range, kind ALLOC_DEVICE, device -1): 0, or -ENOENT.  Lock-free when
 * none is located.  For copies (copy.c) and kernel parameters
 * (kparams_set_extra()).
 */
int ptxtab_symbol_alloc(uint64_t addr, struct alloc *a);

/* KMUX_LOG=info counters, at exit. */
void ptxtab_report(void);

#endif
