/*
 * ptx-table.c - the read-only verdicts of the kernels of every module
 * image the program loaded, kept per loaded module (CUmodule) or library
 * (CUlibrary) handle.  On by default under the scheduler; KMUX_PTX_READONLY=0
 * turns it off (then every kernel parameter is read-write, as before).
 *
 * Module and library loads (wrap-module.c) scan their image once
 * (ptx-readonly.h) and record its entries under the handle the driver
 * returned; unloads drop them (the driver reuses handles).  kparams asks
 * once per function handle, when it first learns the function's layout,
 * and caches the answer in its kernel_info (invalidated on every unload).
 *
 * A verdict is only ever taken from the image the launched function was
 * loaded from, never by name alone: a kernel of the same name in an image
 * kmux could not read (SASS only, compressed PTX without a decoder, a file
 * load) must stay read-write.  The owner is found by asking the driver:
 *   - a CUfunction: cuFuncGetModule, when it names a recorded module;
 *   - a CUkernel: cuKernelGetLibrary, when it names a recorded library;
 *   - otherwise (a CUfunction of a library kernel, whose per-context module
 *     kmux never saw loaded), each recorded library that has a verdict for
 *     the name is asked for that kernel (cuLibraryGetKernel) and its
 *     function in the current context (cuKernelGetFunction); only the very
 *     same handle proves the owner.
 * Module-scope variables (ptxro_entry.globals): an image whose PTX has
 * kernels that reach its `__device__` variables gets a pseudo allocation
 * id of its own (PTXTAB_GLOBALS_ID), and each such kernel is scheduled as
 * reading and writing it, so that those kernels keep their program order
 * among themselves.  Its `__constant__` variables get another id, read by
 * the kernels that read them.  When the program locates a variable
 * (cuModuleGetGlobal, cuLibraryGetGlobal: what cudaMemcpyToSymbol does),
 * its address range is kept with the id of its kind, so that a copy to or
 * from it is ordered by that id instead of being a barrier
 * (ptxtab_symbol_alloc()).  KMUX_PTX_GLOBALS=0 turns all of it off.
 * Within one image a name seen in several PTX texts keeps only the
 * parameters proven read-only in all of them, and nothing when the layouts
 * differ.  A verdict is used only when the driver's layout of the function
 * has the same parameter count and sizes as the PTX declares.  Loads and
 * first launches are rare, so one mutex is enough; the driver is never
 * called with it held.
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "ptx-range.h"
#include "ptx-readonly.h"
#include "ptx-table.h"

/* Text images are believed up to this length (the driver needs a NUL). */
#define PTXTAB_TEXT_MAX ((size_t)1 << 30)

/* Libraries probed by name for one function (more: no verdict). */
#define PTXTAB_PROBE_MAX 8

int ptxtab_on;
int ptxtab_extents_on;
int ptxtab_ranges_on;
int ptxtab_globals_on;

/* A module variable the program located: [base, base + size). */
struct ptxtab_symbol {
	uint64_t base, size, id;
};

/* The verdicts of one loaded image, one entry per kernel name. */
struct ptxtab_image {
	enum ptxtab_owner kind;
	const void *handle;
	struct ptxro_module m;
	uint64_t globals_id;	/* 0: no `__device__` variable, nobody reaches one */
	uint64_t consts_id;	/* 0: the same for `__constant__` ones */
	struct ptxtab_symbol *sym;
	int nsym, capsym;
};

static pthread_mutex_t ptxtab_mu = PTHREAD_MUTEX_INITIALIZER;
static struct ptxtab_driver ptxtab_drv;
static struct ptxtab_image *ptxtab_img;
static int ptxtab_nimg, ptxtab_capimg;
static struct ptxro_image_stats ptxtab_st;
static unsigned long ptxtab_images, ptxtab_errors, ptxtab_analysed;
static unsigned long ptxtab_unloads;
static uint64_t ptxtab_globals_next;
static bool ptxtab_told_no_codec;
static atomic_ulong ptxtab_kernels, ptxtab_params_ro, ptxtab_mismatch,
	ptxtab_unowned, ptxtab_params_ext, ptxtab_ranged, ptxtab_globals,
	ptxtab_consts, ptxtab_symbols_located;
/* Symbols recorded over all images: lookups skip the lock at 0. */
static atomic_int ptxtab_nsyms;

int ptxtab_init(const char *value, int scheduling)
{
	ptxtab_on = kmux_log_switch("KMUX_PTX_READONLY", value,
				    "the read-only proof") && scheduling;
	return 0;
}

int ptxtab_extents_init(const char *value)
{
	ptxtab_extents_on = kmux_log_switch("KMUX_PTX_EXTENTS", value,
					    "the exact extents") && ptxtab_on;
	return 0;
}

int ptxtab_ranges_init(const char *value)
{
	ptxtab_ranges_on = kmux_log_switch("KMUX_PTX_RANGES", value,
					   "the ranges") && ptxtab_extents_on;
	return 0;
}

int ptxtab_globals_init(const char *value)
{
	ptxtab_globals_on = kmux_log_switch("KMUX_PTX_GLOBALS", value,
					    "ordering by module globals") &&
			    ptxtab_on;
	return 0;
}

void ptxtab_set_driver(const struct ptxtab_driver *drv)
{
	pthread_mutex_lock(&ptxtab_mu);
	if (drv)
		ptxtab_drv = *drv;
	else
		memset(&ptxtab_drv, 0, sizeof(ptxtab_drv));
	pthread_mutex_unlock(&ptxtab_mu);
}

static struct ptxro_entry *ptxtab_entry(struct ptxro_module *m,
					const char *name)
{
	for (int i = 0; i < m->n; i++)
		if (strcmp(m->e[i].name, name) == 0)
			return &m->e[i];
	return NULL;
}

static bool ptxtab_same_layout(const struct ptxro_entry *a, int n,
			       const uint32_t *size)
{
	return a->nparams == n &&
	       (n == 0 || memcmp(a->size, size, (size_t)n * sizeof(*size)) == 0);
}

/* Lock held.  The recorded image of handle, or NULL. */
static struct ptxtab_image *ptxtab_find(enum ptxtab_owner kind,
					const void *handle)
{
	for (int i = 0; i < ptxtab_nimg; i++)
		if (ptxtab_img[i].kind == kind &&
		    ptxtab_img[i].handle == handle)
			return &ptxtab_img[i];
	return NULL;
}

/* Lock held.  Forget the variables image i had located. */
static void ptxtab_forget_symbols(struct ptxtab_image *img)
{
	atomic_fetch_sub(&ptxtab_nsyms, img->nsym);
	free(img->sym);
	img->sym = NULL;
	img->nsym = img->capsym = 0;
}

/* Lock held.  Forget image i (the last one takes its place). */
static void ptxtab_drop(int i)
{
	ptxro_module_release(&ptxtab_img[i].m);
	ptxtab_forget_symbols(&ptxtab_img[i]);
	ptxtab_img[i] = ptxtab_img[--ptxtab_nimg];
}

/*
 * Merge the entries of m into one entry per name; m is emptied.  Returns
 * the merged module (its own allocation).
 */
static struct ptxro_module ptxtab_merge(struct ptxro_module *m)
{
	struct ptxro_module out;

	ptxro_module_init(&out);
	for (int i = 0; i < m->n; i++) {
		struct ptxro_entry *e = &m->e[i], *old = ptxtab_entry(&out,
								     e->name);

		if (old) {
			/* Either text may be the one the driver runs. */
			old->globals |= e->globals;
			old->consts |= e->consts;
			if (!ptxtab_same_layout(old, e->nparams, e->size))
				old->readonly = 0;
			else
				old->readonly &= e->readonly;
			/*
			 * Which text the driver runs is unknown: no
			 * extents for a name seen twice in one image.
			 */
			old->has_extent = 0;
			ptxr_unref(old->range);
			old->range = NULL;
			free(e->name);
			free(e->size);
			free(e->ext);
			ptxr_unref(e->range);
			continue;
		}
		/* Names are few per image: out grows to at most m->n. */
		if (!out.e) {
			out.e = malloc((size_t)m->n * sizeof(*out.e));
			if (!out.e) {
				/* No entries is no verdicts: read-write. */
				ptxtab_errors++;
				for (int j = i; j < m->n; j++) {
					free(m->e[j].name);
					free(m->e[j].size);
					free(m->e[j].ext);
					ptxr_unref(m->e[j].range);
				}
				break;
			}
			out.cap = m->n;
		}
		out.e[out.n++] = *e;
	}
	m->n = 0;
	out.var = m->var;
	out.nvar = m->nvar;
	out.capvar = m->capvar;
	m->var = NULL;
	m->nvar = m->capvar = 0;
	return out;
}

/* Lock held.  Give img the pseudo ids its variables and kernels need. */
static void ptxtab_assign_ids(struct ptxtab_image *img)
{
	bool g = false, c = false;

	for (int i = 0; i < img->m.n; i++) {
		g |= img->m.e[i].globals;
		c |= img->m.e[i].consts;
	}
	for (int i = 0; i < img->m.nvar; i++) {
		g |= !img->m.var[i].is_const;
		c |= img->m.var[i].is_const;
	}
	/* Never reused: a stale id orders nothing wrongly. */
	if (g)
		img->globals_id = PTXTAB_GLOBALS_ID + ++ptxtab_globals_next;
	if (c)
		img->consts_id = PTXTAB_GLOBALS_ID + ++ptxtab_globals_next;
}

void ptxtab_scan(enum ptxtab_owner kind, const void *handle,
		 const void *image)
{
	struct ptxro_module m, merged;
	struct ptxro_image_stats st = { 0 };
	struct ptxtab_image *img;
	bool tell_no_codec = false;
	size_t n;
	int r;

	if (!ptxtab_on || !image || !handle)
		return;
	ptxro_module_init(&m);
	n = ptxro_image_size(image, PTXTAB_TEXT_MAX);
	r = ptxro_scan_image(image, n, 1, &m, &st);
	pthread_mutex_lock(&ptxtab_mu);
	ptxtab_images++;
	ptxtab_st.ptx += st.ptx;
	ptxtab_st.no_ptx += st.no_ptx;
	ptxtab_st.compressed += st.compressed;
	ptxtab_st.decompressed += st.decompressed;
	ptxtab_st.bad += st.bad;
	if (r < 0)
		ptxtab_errors++;
	if (st.compressed && !ptxtab_told_no_codec)
		tell_no_codec = ptxtab_told_no_codec = true;
	merged = ptxtab_merge(&m);
	ptxtab_analysed += (unsigned long)merged.n;
	/* A stale record of a reused handle whose unload was not seen. */
	img = ptxtab_find(kind, handle);
	if (img)
		ptxtab_drop((int)(img - ptxtab_img));
	if (ptxtab_nimg == ptxtab_capimg) {
		int cap = ptxtab_capimg ? 2 * ptxtab_capimg : 16;
		struct ptxtab_image *ni = realloc(ptxtab_img,
						  (size_t)cap * sizeof(*ni));

		if (!ni) {
			/* Unrecorded is unknown, and unknown is read-write. */
			ptxtab_errors++;
			ptxro_module_release(&merged);
			goto out;
		}
		ptxtab_img = ni;
		ptxtab_capimg = cap;
	}
	ptxtab_img[ptxtab_nimg++] = (struct ptxtab_image){
		.kind = kind, .handle = handle, .m = merged,
	};
	ptxtab_assign_ids(&ptxtab_img[ptxtab_nimg - 1]);
out:
	pthread_mutex_unlock(&ptxtab_mu);
	ptxro_module_release(&m);
	/*
	 * Once per process, and not a warning: the default must not make
	 * every program on a system without the libraries complain.
	 */
	if (tell_no_codec)
		log_info("ptx-readonly: compressed PTX without a decoder "
			 "(libzstd.so.1 or liblz4.so.1 not loadable): those "
			 "kernels stay read-write");
	log_debug("ptx-readonly: %s %p: %u PTX (%u decompressed), %u "
		  "without, %u compressed skipped, %u malformed",
		  kind == PTXTAB_MODULE ? "module" : "library", handle, st.ptx,
		  st.decompressed, st.no_ptx, st.compressed, st.bad);
}

void ptxtab_unload(enum ptxtab_owner kind, const void *handle)
{
	struct ptxtab_image *img;

	if (!ptxtab_on)
		return;
	pthread_mutex_lock(&ptxtab_mu);
	img = ptxtab_find(kind, handle);
	if (img) {
		ptxtab_drop((int)(img - ptxtab_img));
		ptxtab_unloads++;
	}
	pthread_mutex_unlock(&ptxtab_mu);
}

void ptxtab_modules_gone(void)
{
	if (!ptxtab_on)
		return;
	pthread_mutex_lock(&ptxtab_mu);
	for (int i = ptxtab_nimg - 1; i >= 0; i--) {
		if (ptxtab_img[i].kind == PTXTAB_MODULE) {
			ptxtab_drop(i);
			ptxtab_unloads++;
		} else {
			/* A library's variables lived in that context. */
			ptxtab_forget_symbols(&ptxtab_img[i]);
		}
	}
	pthread_mutex_unlock(&ptxtab_mu);
}

/*
 * Lock held.  The id of img's variable `name`: its kind's id when the
 * image's PTX declares it, as one kind only; 0 when not (a variable kmux
 * did not see declared may be reached by kernels it has no PTX for).
 */
static uint64_t ptxtab_symbol_id(const struct ptxtab_image *img,
				 const char *name)
{
	int kinds = 0;

	for (int i = 0; i < img->m.nvar; i++)
		if (strcmp(img->m.var[i].name, name) == 0)
			kinds |= img->m.var[i].is_const ? 2 : 1;
	if (kinds == 1)
		return img->globals_id;
	if (kinds == 2)
		return img->consts_id;
	return 0;
}

/* Lock held.  Forget every located range overlapping [base, end). */
static void ptxtab_symbols_overlapping_drop(uint64_t base, uint64_t end)
{
	for (int i = 0; i < ptxtab_nimg; i++) {
		struct ptxtab_image *img = &ptxtab_img[i];

		for (int j = img->nsym - 1; j >= 0; j--) {
			const struct ptxtab_symbol *y = &img->sym[j];

			if (y->base < end && base < y->base + y->size) {
				img->sym[j] = img->sym[--img->nsym];
				atomic_fetch_sub(&ptxtab_nsyms, 1);
			}
		}
	}
}

int ptxtab_symbol_add(enum ptxtab_owner kind, const void *handle,
		      const char *name, uint64_t base, uint64_t size)
{
	struct ptxtab_image *img;
	uint64_t id;
	int r = -ENOENT;

	if (!ptxtab_globals_on || !name || !base || !size ||
	    base + size < base)
		return -ENOENT;
	pthread_mutex_lock(&ptxtab_mu);
	/* The driver just gave this range to the variable: older claims go. */
	ptxtab_symbols_overlapping_drop(base, base + size);
	img = ptxtab_find(kind, handle);
	id = img ? ptxtab_symbol_id(img, name) : 0;
	if (!id)
		goto out;
	if (img->nsym == img->capsym) {
		int cap = img->capsym ? 2 * img->capsym : 4;
		struct ptxtab_symbol *ns = realloc(img->sym,
						   (size_t)cap * sizeof(*ns));

		if (!ns) {
			/* Not located is unknown memory: a barrier. */
			ptxtab_errors++;
			r = -ENOMEM;
			goto out;
		}
		img->sym = ns;
		img->capsym = cap;
	}
	img->sym[img->nsym++] = (struct ptxtab_symbol){ base, size, id };
	atomic_fetch_add(&ptxtab_nsyms, 1);
	atomic_fetch_add(&ptxtab_symbols_located, 1);
	r = 0;
out:
	pthread_mutex_unlock(&ptxtab_mu);
	return r;
}

int ptxtab_symbol_alloc(uint64_t addr, struct alloc *a)
{
	int r = -ENOENT;

	if (atomic_load_explicit(&ptxtab_nsyms, memory_order_relaxed) == 0)
		return -ENOENT;
	pthread_mutex_lock(&ptxtab_mu);
	for (int i = 0; i < ptxtab_nimg && r; i++) {
		const struct ptxtab_image *img = &ptxtab_img[i];

		for (int j = 0; j < img->nsym; j++) {
			const struct ptxtab_symbol *y = &img->sym[j];

			if (addr - y->base < y->size) {
				*a = (struct alloc){
					.base = y->base, .size = y->size,
					.id = y->id, .kind = ALLOC_DEVICE,
					.device = -1,
				};
				r = 0;
				break;
			}
		}
	}
	pthread_mutex_unlock(&ptxtab_mu);
	return r;
}

/*
 * The verdict of the image recorded under (kind, handle) for name: 1 with
 * *ro set when that image is recorded (it is f's owner), 0 when not.
 */
static int ptxtab_owner_verdict(enum ptxtab_owner kind, const void *handle,
				const char *name, int nparams,
				const uint32_t *size, uint64_t *ro,
				uint64_t *has_ext, struct kparams_extent *ext,
				struct ptxr_prog **range, struct kparams_vars *vars)
{
	struct ptxtab_image *img;
	struct ptxro_entry *e;

	pthread_mutex_lock(&ptxtab_mu);
	img = ptxtab_find(kind, handle);
	e = img ? ptxtab_entry(&img->m, name) : NULL;
	*ro = 0;
	*has_ext = 0;
	*vars = KPARAMS_VARS_UNKNOWN;
	/*
	 * Whatever the layout: the name in its own image is the kernel, and
	 * an order too many is never wrong.
	 */
	if (e && ptxtab_globals_on) {
		vars->rw = e->globals ? img->globals_id : 0;
		vars->ro = e->consts ? img->consts_id : 0;
		if (e->globals)
			atomic_fetch_add(&ptxtab_globals, 1);
		if (e->consts)
			atomic_fetch_add(&ptxtab_consts, 1);
	}
	if (e && ptxtab_same_layout(e, nparams, size)) {
		*ro = e->readonly;
		if (ptxtab_extents_on && e->ext) {
			*has_ext = e->has_extent;
			for (int i = 0; i < nparams && i < 64; i++)
				if (*has_ext >> i & 1)
					ext[i] = (struct kparams_extent){
						e->ext[i].lo, e->ext[i].hi };
		}
		if (ptxtab_ranges_on && e->range) {
			ptxr_unref(*range);
			ptxr_ref(e->range);
			*range = e->range;
			atomic_fetch_add(&ptxtab_ranged, 1);
		}
		atomic_fetch_add(&ptxtab_kernels, 1);
	} else if (e) {
		atomic_fetch_add(&ptxtab_mismatch, 1);
	} else if (img) {
		/* Its own image has no PTX for it: no verdict by name. */
		atomic_fetch_add(&ptxtab_unowned, 1);
		/*
		 * But it is the image's code, and may name any variable the
		 * image's other PTX declares, which copies are ordered by
		 * (ptxtab_symbol_add()): order it by them too.  Variables no
		 * PTX declared stay unseen (their copies are barriers).
		 */
		if (ptxtab_globals_on) {
			if (img->globals_id)
				vars->rw = img->globals_id;
			if (img->consts_id)
				vars->ro = img->consts_id;
		}
	}
	pthread_mutex_unlock(&ptxtab_mu);
	return img != NULL;
}

/*
 * f is neither a function of a recorded module nor a kernel of a recorded
 * library the driver named: it may be the per-context function of a
 * library kernel.  Returns 1 with the verdict of the library whose kernel
 * `name` is f itself (asked again once the owner is proven: it may have
 * been unloaded meanwhile), or 0.
 */
static int ptxtab_probe_libraries(const void *f, const char *name,
				  int nparams, const uint32_t *size,
				  const struct ptxtab_driver *drv,
				  uint64_t *ro, uint64_t *has_ext,
				  struct kparams_extent *ext,
				  struct ptxr_prog **range, struct kparams_vars *vars)
{
	const void *lib[PTXTAB_PROBE_MAX];
	int n = 0;

	*ro = 0;
	*has_ext = 0;
	*vars = KPARAMS_VARS_UNKNOWN;
	if (!drv->library_get_kernel)
		return 0;
	pthread_mutex_lock(&ptxtab_mu);
	for (int i = 0; i < ptxtab_nimg && n < PTXTAB_PROBE_MAX; i++) {
		struct ptxro_entry *e;

		if (ptxtab_img[i].kind != PTXTAB_LIBRARY)
			continue;
		e = ptxtab_entry(&ptxtab_img[i].m, name);
		/* Nothing to gain from proving an owner with no verdict. */
		if (!e)
			continue;
		/* Without parameters, "no globals" is a verdict too. */
		if (!(ptxtab_globals_on &&
		      (e->globals || e->consts || nparams == 0)) &&
		    (!(e->readonly || (ptxtab_extents_on && e->has_extent) ||
		       (ptxtab_ranges_on && e->range)) ||
		     !ptxtab_same_layout(e, nparams, size)))
			continue;
		lib[n++] = ptxtab_img[i].handle;
	}
	pthread_mutex_unlock(&ptxtab_mu);
	for (int i = 0; i < n; i++) {
		CUkernel k = NULL;
		CUfunction g = NULL;

		if (drv->library_get_kernel(&k, (CUlibrary)lib[i], name) !=
		    CUDA_SUCCESS || !k)
			continue;
		if ((const void *)k == f ||
		    (drv->kernel_get_function &&
		     drv->kernel_get_function(&g, k) == CUDA_SUCCESS &&
		     (const void *)g == f))
			return ptxtab_owner_verdict(PTXTAB_LIBRARY, lib[i],
						    name, nparams, size, ro,
						    has_ext, ext, range,
						    vars);
	}
	return 0;
}

uint64_t ptxtab_readonly(const void *f, int is_kernel, const char *name,
			 int nparams, const uint32_t *size, uint64_t *has_ext,
			 struct kparams_extent *ext, struct ptxr_prog **range,
			 struct kparams_vars *vars)
{
	struct ptxtab_driver drv;
	uint64_t ro = 0;
	int owned = 0;

	*has_ext = 0;
	*range = NULL;
	*vars = KPARAMS_VARS_UNKNOWN;
	/* A kernel without parameters may still reach the globals. */
	if (!ptxtab_on || !f || !name || nparams < 0)
		return 0;
	pthread_mutex_lock(&ptxtab_mu);
	drv = ptxtab_drv;
	pthread_mutex_unlock(&ptxtab_mu);
	if (!is_kernel && drv.func_get_module) {
		CUmodule m = NULL;

		if (drv.func_get_module(&m, (CUfunction)f) == CUDA_SUCCESS && m)
			owned = ptxtab_owner_verdict(PTXTAB_MODULE, m, name,
						     nparams, size, &ro,
						     has_ext, ext, range,
						     vars);
	}
	if (!owned && is_kernel && drv.kernel_get_library) {
		CUlibrary l = NULL;

		if (drv.kernel_get_library(&l, (CUkernel)f) == CUDA_SUCCESS &&
		    l)
			owned = ptxtab_owner_verdict(PTXTAB_LIBRARY, l, name,
						     nparams, size, &ro,
						     has_ext, ext, range,
						     vars);
	}
	if (!owned &&
	    !ptxtab_probe_libraries(f, name, nparams, size, &drv, &ro,
				    has_ext, ext, range, vars))
		atomic_fetch_add(&ptxtab_unowned, 1);
	atomic_fetch_add(&ptxtab_params_ro,
			 (unsigned long)__builtin_popcountll(ro));
	atomic_fetch_add(&ptxtab_params_ext,
			 (unsigned long)__builtin_popcountll(*has_ext));
	return ro;
}

void ptxtab_report(void)
{
	if (!ptxtab_on)
		return;
	pthread_mutex_lock(&ptxtab_mu);
	log_info("ptx-readonly: pid %d: %lu images, %u PTX texts (%u "
		 "decompressed), %u without PTX, %u compressed PTX skipped, %u "
		 "malformed, %lu kernels "
		 "analysed; %lu launched kernels matched, %lu parameters "
		 "proven read-only, %lu with exact extents, %lu kernels "
		 "with ranges by geometry, %lu layout mismatches, %lu launched "
		 "kernels without a readable image, %lu images unloaded, "
		 "%lu errors; %lu launched kernels ordered by their module's "
		 "globals, %lu by its constants; %lu module variables located",
		 (int)getpid(), ptxtab_images, ptxtab_st.ptx,
		 ptxtab_st.decompressed, ptxtab_st.no_ptx, ptxtab_st.compressed,
		 ptxtab_st.bad, ptxtab_analysed, atomic_load(&ptxtab_kernels),
		 atomic_load(&ptxtab_params_ro),
		 atomic_load(&ptxtab_params_ext), atomic_load(&ptxtab_ranged),
		 atomic_load(&ptxtab_mismatch), atomic_load(&ptxtab_unowned),
		 ptxtab_unloads, ptxtab_errors, atomic_load(&ptxtab_globals),
		 atomic_load(&ptxtab_consts),
		 atomic_load(&ptxtab_symbols_located));
	pthread_mutex_unlock(&ptxtab_mu);
}
