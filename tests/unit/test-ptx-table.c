/*
 * test-ptx-table.c - unit tests of the read-only verdicts kept per loaded
 * module or library (src/preload/ptx-table.c).
 *
 * A fake driver maps made-up function, kernel, module and library handles
 * to each other (cuFuncGetModule, cuKernelGetLibrary, cuLibraryGetKernel,
 * cuKernelGetFunction) and counts its calls.  Images are PTX text of one
 * kernel, "mix(dst, a, b, n, us)", which reads a and b (verdict 0x1e: the
 * pointers a, b and the two scalars), or also stores through b (0x1a).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "ptx-range.h"
#include "ptx-table.h"

#define RO_READS 0x1eull
#define RO_WRITES_B 0x1aull

static const char ptx_head[] =
	".version 8.0\n.target sm_90\n.address_size 64\n\n"
	".visible .entry mix(\n"
	"\t.param .u64 mix_param_0,\n"
	"\t.param .u64 mix_param_1,\n"
	"\t.param .u64 mix_param_2,\n"
	"\t.param .u32 mix_param_3,\n"
	"\t.param .u32 mix_param_4\n"
	")\n{\n"
	"\t.reg .b32 %r<8>;\n\t.reg .b64 %rd<12>;\n\n"
	"\tld.param.u64 %rd1, [mix_param_0];\n"
	"\tld.param.u64 %rd2, [mix_param_1];\n"
	"\tld.param.u64 %rd3, [mix_param_2];\n"
	"\tcvta.to.global.u64 %rd4, %rd1;\n"
	"\tcvta.to.global.u64 %rd5, %rd2;\n"
	"\tcvta.to.global.u64 %rd6, %rd3;\n"
	"\tld.global.u32 %r3, [%rd5];\n"
	"\tld.global.u32 %r4, [%rd6];\n"
	"\txor.b32 %r7, %r3, %r4;\n"
	"\tst.global.u32 [%rd4], %r7;\n";

static char img_reads[4096], img_writes[4096];
/* Text the driver would take (a cubin, say) but that holds no PTX. */
static const char img_no_ptx[] = "\x7f" "ELF not ptx";

static const uint32_t mix_size[5] = { 8, 8, 8, 4, 4 };

/* ---- the fake driver -------------------------------------------------- */

#define MAXMAP 16

struct map { const void *from, *to; const char *name; };
static struct map func_mod[MAXMAP], kern_lib[MAXMAP], lib_kern[MAXMAP],
	kern_func[MAXMAP];
static int nfunc_mod, nkern_lib, nlib_kern, nkern_func;
static int calls;

static void map_add(struct map *m, int *n, const void *from, const void *to,
		    const char *name)
{
	assert_true(*n < MAXMAP);
	m[(*n)++] = (struct map){ from, to, name };
}

static const void *map_get(const struct map *m, int n, const void *from,
			   const char *name)
{
	for (int i = 0; i < n; i++)
		if (m[i].from == from &&
		    (!name || !m[i].name || strcmp(name, m[i].name) == 0))
			return m[i].to;
	return NULL;
}

static CUresult fk_func_get_module(CUmodule *m, CUfunction f)
{
	calls++;
	*m = (CUmodule)map_get(func_mod, nfunc_mod, f, NULL);
	return *m ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

static CUresult fk_kernel_get_library(CUlibrary *l, CUkernel k)
{
	calls++;
	*l = (CUlibrary)map_get(kern_lib, nkern_lib, k, NULL);
	return *l ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

static CUresult fk_library_get_kernel(CUkernel *k, CUlibrary l,
				      const char *name)
{
	calls++;
	*k = (CUkernel)map_get(lib_kern, nlib_kern, l, name);
	return *k ? CUDA_SUCCESS : CUDA_ERROR_NOT_FOUND;
}

static CUresult fk_kernel_get_function(CUfunction *f, CUkernel k)
{
	calls++;
	*f = (CUfunction)map_get(kern_func, nkern_func, k, NULL);
	return *f ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

static const struct ptxtab_driver fake_driver = {
	.func_get_module = fk_func_get_module,
	.kernel_get_library = fk_kernel_get_library,
	.library_get_kernel = fk_library_get_kernel,
	.kernel_get_function = fk_kernel_get_function,
};

/* Distinct made-up handles. */
static char h_mod_a, h_mod_b, h_mod_file, h_lib, h_lib_file, h_libmod,
	h_libfilemod;
static char h_fa, h_fb, h_ffile, h_k, h_kf, h_kfile, h_kfilef;

/* The kernels here have constant offsets only: ranges are not asked. */
static struct ptxr_prog *range_none;

static uint64_t ro(const void *f, int is_kernel)
{
	struct kparams_extent ext[5];
	uint64_t has_ext;

	struct kparams_vars vars;

	return ptxtab_readonly(f, is_kernel, "mix", 5, mix_size, &has_ext,
			       ext, &range_none, &vars);
}

static int setup(void **state)
{
	(void)state;
	snprintf(img_reads, sizeof(img_reads), "%s\tret;\n}\n", ptx_head);
	snprintf(img_writes, sizeof(img_writes),
		 "%s\tst.global.u32 [%%rd6], %%r7;\n\tret;\n}\n", ptx_head);
	nfunc_mod = nkern_lib = nlib_kern = nkern_func = 0;
	calls = 0;
	ptxtab_init("1", 1);
	ptxtab_set_driver(&fake_driver);
	/* Modules a (readable), b (no PTX), file (never scanned). */
	map_add(func_mod, &nfunc_mod, &h_fa, &h_mod_a, NULL);
	map_add(func_mod, &nfunc_mod, &h_fb, &h_mod_b, NULL);
	map_add(func_mod, &nfunc_mod, &h_ffile, &h_mod_file, NULL);
	/* Library lib (readable) and lib_file (never scanned). */
	map_add(kern_lib, &nkern_lib, &h_k, &h_lib, NULL);
	map_add(kern_lib, &nkern_lib, &h_kfile, &h_lib_file, NULL);
	map_add(lib_kern, &nlib_kern, &h_lib, &h_k, "mix");
	map_add(lib_kern, &nlib_kern, &h_lib_file, &h_kfile, "mix");
	map_add(kern_func, &nkern_func, &h_k, &h_kf, NULL);
	map_add(kern_func, &nkern_func, &h_kfile, &h_kfilef, NULL);
	/* Their per-context functions live in modules kmux never saw. */
	map_add(func_mod, &nfunc_mod, &h_kf, &h_libmod, NULL);
	map_add(func_mod, &nfunc_mod, &h_kfilef, &h_libfilemod, NULL);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	ptxtab_unload(PTXTAB_MODULE, &h_mod_a);
	ptxtab_unload(PTXTAB_MODULE, &h_mod_b);
	ptxtab_unload(PTXTAB_LIBRARY, &h_lib);
	ptxtab_set_driver(NULL);
	ptxtab_init("0", 1);
	return 0;
}

static void test_module_verdict_is_its_own(void **state)
{
	(void)state;
	ptxtab_scan(PTXTAB_MODULE, &h_mod_a, img_reads);
	ptxtab_scan(PTXTAB_MODULE, &h_mod_b, img_no_ptx);
	assert_int_equal(ro(&h_fa, 0), RO_READS);
	/* Same name, from an image without PTX, or from a file: nothing. */
	assert_int_equal(ro(&h_fb, 0), 0);
	assert_int_equal(ro(&h_ffile, 0), 0);
	/* A function the driver cannot place: nothing either. */
	assert_int_equal(ro((const void *)"stray", 0), 0);
}

static void test_layout_must_match(void **state)
{
	const uint32_t other[5] = { 8, 8, 8, 8, 4 };

	(void)state;
	ptxtab_scan(PTXTAB_MODULE, &h_mod_a, img_reads);
	struct kparams_extent ext[5];
	struct kparams_vars g;
	uint64_t he;

	assert_int_equal(ptxtab_readonly(&h_fa, 0, "mix", 5, other, &he, ext,
					 &range_none, &g),
			 0);
	assert_int_equal(he, 0);
	assert_int_equal(ptxtab_readonly(&h_fa, 0, "mix", 4, mix_size, &he,
					 ext, &range_none, &g), 0);
	assert_int_equal(he, 0);
	assert_int_equal(ptxtab_readonly(&h_fa, 0, "nope", 5, mix_size, &he,
					 ext, &range_none, &g), 0);
	assert_int_equal(he, 0);
	assert_int_equal(ro(&h_fa, 0), RO_READS);
}

static void test_unload_and_reuse(void **state)
{
	(void)state;
	ptxtab_scan(PTXTAB_MODULE, &h_mod_a, img_reads);
	assert_int_equal(ro(&h_fa, 0), RO_READS);
	ptxtab_unload(PTXTAB_MODULE, &h_mod_a);
	assert_int_equal(ro(&h_fa, 0), 0);
	/* The handle comes back for an image that writes b. */
	ptxtab_scan(PTXTAB_MODULE, &h_mod_a, img_writes);
	assert_int_equal(ro(&h_fa, 0), RO_WRITES_B);
	/* ...and again, unload unseen: the new image replaces the old. */
	ptxtab_scan(PTXTAB_MODULE, &h_mod_a, img_no_ptx);
	assert_int_equal(ro(&h_fa, 0), 0);
	/* Unloading a library handle leaves a module of the same value. */
	ptxtab_scan(PTXTAB_MODULE, &h_mod_a, img_reads);
	ptxtab_unload(PTXTAB_LIBRARY, &h_mod_a);
	assert_int_equal(ro(&h_fa, 0), RO_READS);
}

static void test_context_end_drops_modules_only(void **state)
{
	(void)state;
	ptxtab_scan(PTXTAB_MODULE, &h_mod_a, img_reads);
	ptxtab_scan(PTXTAB_LIBRARY, &h_lib, img_reads);
	ptxtab_modules_gone();
	assert_int_equal(ro(&h_fa, 0), 0);
	assert_int_equal(ro(&h_k, 1), RO_READS);
}

static void test_library_kernel_and_function(void **state)
{
	(void)state;
	ptxtab_scan(PTXTAB_LIBRARY, &h_lib, img_reads);
	/* The CUkernel: cuKernelGetLibrary names the library. */
	calls = 0;
	assert_int_equal(ro(&h_k, 1), RO_READS);
	assert_int_equal(calls, 1);
	/* Its CUfunction: proven by the same handle coming back. */
	assert_int_equal(ro(&h_kf, 0), RO_READS);
	/* A CUkernel answered through the function calls still matches. */
	assert_int_equal(ro(&h_k, 0), RO_READS);
	/* The same name from a library loaded from a file: nothing. */
	assert_int_equal(ro(&h_kfile, 1), 0);
	assert_int_equal(ro(&h_kfilef, 0), 0);
	ptxtab_unload(PTXTAB_LIBRARY, &h_lib);
	assert_int_equal(ro(&h_k, 1), 0);
	assert_int_equal(ro(&h_kf, 0), 0);
}

static void test_no_driver_no_verdict(void **state)
{
	(void)state;
	ptxtab_scan(PTXTAB_MODULE, &h_mod_a, img_reads);
	ptxtab_set_driver(NULL);
	assert_int_equal(ro(&h_fa, 0), 0);
	ptxtab_set_driver(&fake_driver);
	assert_int_equal(ro(&h_fa, 0), RO_READS);
	/* Off: nothing recorded, nothing proven. */
	ptxtab_unload(PTXTAB_MODULE, &h_mod_a);
	ptxtab_init("0", 1);
	ptxtab_scan(PTXTAB_MODULE, &h_mod_a, img_reads);
	ptxtab_init("1", 1);
	assert_int_equal(ro(&h_fa, 0), 0);
}

/*
 * The default: on under the scheduler unless KMUX_PTX_READONLY is "0";
 * never without the scheduler (nothing would read the verdicts).
 */
static void test_on_by_default(void **state)
{
	static const struct {
		const char *value;
		int scheduling, on;
	} c[] = {
		{ NULL, 1, 1 }, { "", 1, 1 }, { "1", 1, 1 }, { "yes", 1, 1 },
		{ "0", 1, 0 }, { NULL, 0, 0 }, { "1", 0, 0 }, { "0", 0, 0 },
	};

	(void)state;
	for (unsigned i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		ptxtab_init(c[i].value, c[i].scheduling);
		assert_int_equal(ptxtab_on, c[i].on);
	}
	/* Unset: an image loaded now gives its verdict. */
	ptxtab_init(NULL, 1);
	ptxtab_scan(PTXTAB_MODULE, &h_mod_a, img_reads);
	assert_int_equal(ro(&h_fa, 0), RO_READS);
	ptxtab_unload(PTXTAB_MODULE, &h_mod_a);
	/* "0": nothing recorded, nothing proven. */
	ptxtab_init("0", 1);
	ptxtab_scan(PTXTAB_MODULE, &h_mod_a, img_reads);
	ptxtab_init(NULL, 1);
	assert_int_equal(ro(&h_fa, 0), 0);
}

/* Extents of f's three pointers (mix: [0, 4) each), into *he. */
static void ext_of(const void *f, int is_kernel, uint64_t *he,
		   struct kparams_extent *ext)
{
	struct kparams_vars g;

	ptxtab_readonly(f, is_kernel, "mix", 5, mix_size, he, ext,
			&range_none, &g);
}

static void test_extents(void **state)
{
	struct kparams_extent ext[5];
	static char img_twice[8192];
	uint64_t he;

	(void)state;
	ptxtab_extents_init(NULL);
	assert_int_equal(ptxtab_extents_on, 1);
	ptxtab_scan(PTXTAB_MODULE, &h_mod_a, img_reads);
	ptxtab_scan(PTXTAB_MODULE, &h_mod_b, img_no_ptx);
	ptxtab_scan(PTXTAB_LIBRARY, &h_lib, img_reads);
	ext_of(&h_fa, 0, &he, ext);
	assert_int_equal(he, 0x7);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(ext[i].lo, 0);
		assert_int_equal(ext[i].hi, 4);
	}
	/* Only from the function's own image, as the read-only verdict. */
	ext_of(&h_fb, 0, &he, ext);
	assert_int_equal(he, 0);
	ext_of(&h_ffile, 0, &he, ext);
	assert_int_equal(he, 0);
	/* A library's kernel, and its function found by probing. */
	ext_of(&h_k, 1, &he, ext);
	assert_int_equal(he, 0x7);
	ext_of(&h_kf, 0, &he, ext);
	assert_int_equal(he, 0x7);
	ext_of(&h_kfile, 1, &he, ext);
	assert_int_equal(he, 0);

	/* KMUX_PTX_EXTENTS=0: the read-only verdict stays, no extents. */
	ptxtab_extents_init("0");
	assert_int_equal(ptxtab_extents_on, 0);
	assert_int_equal(ro(&h_fa, 0), RO_READS);
	ext_of(&h_fa, 0, &he, ext);
	assert_int_equal(he, 0);
	ext_of(&h_kf, 0, &he, ext);
	assert_int_equal(he, 0);
	/* Anything but "0" keeps them on. */
	ptxtab_extents_init("yes");
	assert_int_equal(ptxtab_extents_on, 1);

	/* One image with the name twice: no extents (read-only: both). */
	snprintf(img_twice, sizeof(img_twice), "%s%s", img_reads, img_reads);
	ptxtab_scan(PTXTAB_MODULE, &h_mod_a, img_twice);
	assert_int_equal(ro(&h_fa, 0), RO_READS);
	ext_of(&h_fa, 0, &he, ext);
	assert_int_equal(he, 0);

	/* KMUX_PTX_READONLY=0 turns the extents off with the scan. */
	ptxtab_init("0", 1);
	ptxtab_extents_init(NULL);
	assert_int_equal(ptxtab_extents_on, 0);
	ptxtab_init("1", 1);
	ptxtab_extents_init(NULL);
	ptxtab_unload(PTXTAB_MODULE, &h_mod_a);
	ptxtab_scan(PTXTAB_MODULE, &h_mod_a, img_reads);
	ext_of(&h_fa, 0, &he, ext);
	assert_int_equal(he, 0x7);
	ptxtab_extents_init("0");
}

/* The variable ids ptxtab_readonly() gives f as "mix", n params. */
static struct kparams_vars vars_of(const void *f, int is_kernel, int n,
				   const uint32_t *size)
{
	struct kparams_extent ext[5];
	struct ptxr_prog *range = NULL;
	struct kparams_vars g = { 0xdead, 0xdead };
	uint64_t he;

	ptxtab_readonly(f, is_kernel, "mix", n, size, &he, ext, &range, &g);
	ptxr_unref(range);
	return g;
}

/* The `__device__` variables' id of f as "mix". */
static uint64_t globals_of(const void *f, int is_kernel, int n,
			   const uint32_t *size)
{
	return vars_of(f, is_kernel, n, size).rw;
}

/*
 * Module-scope variables: a kernel whose PTX names one gets its image's
 * pseudo allocation id, one per image, above every allocation id; the
 * same name from another image, or without PTX, gets none.
 */
static void test_globals(void **state)
{
	static char img_glob[8192];
	const uint32_t other[5] = { 8, 8, 8, 8, 4 };
	uint64_t a, a2, k;

	(void)state;
	snprintf(img_glob, sizeof(img_glob),
		 ".version 8.0\n.target sm_90\n.address_size 64\n"
		 ".global .align 4 .u32 count;\n%s"
		 "\tatom.global.add.u32 %%r1, [count], 1;\n\tret;\n}\n",
		 ptx_head + strlen(".version 8.0\n.target sm_90\n"
				   ".address_size 64\n\n"));
	ptxtab_globals_init(NULL);
	assert_int_equal(ptxtab_globals_on, 1);
	ptxtab_scan(PTXTAB_MODULE, &h_mod_a, img_glob);
	ptxtab_scan(PTXTAB_MODULE, &h_mod_b, img_reads);
	ptxtab_scan(PTXTAB_LIBRARY, &h_lib, img_glob);
	a = globals_of(&h_fa, 0, 5, mix_size);
	assert_true(a > PTXTAB_GLOBALS_ID);
	assert_true(a < (uint64_t)1 << 57);
	/* Its read-only verdict is the one it always had. */
	assert_int_equal(ro(&h_fa, 0), RO_READS);
	/* Another layout: still the same kernel's globals. */
	assert_int_equal(globals_of(&h_fa, 0, 5, other), a);
	/* Without parameters too (a reset kernel has none). */
	assert_int_equal(globals_of(&h_fa, 0, 0, NULL), a);
	/* Same name, its own PTX without the variable: none, known. */
	assert_int_equal(globals_of(&h_fb, 0, 5, mix_size), 0);
	assert_int_equal(globals_of(&h_fb, 0, 0, NULL), 0);
	/* From a file (never scanned): nobody can tell. */
	assert_int_equal(globals_of(&h_ffile, 0, 5, mix_size),
			 KPARAMS_GLOBALS_UNKNOWN);
	assert_int_equal(globals_of(&h_ffile, 0, 0, NULL),
			 KPARAMS_GLOBALS_UNKNOWN);
	/* The library's image is another image: its own id. */
	k = globals_of(&h_k, 1, 5, mix_size);
	assert_true(k > PTXTAB_GLOBALS_ID);
	assert_int_not_equal(k, a);
	assert_int_equal(globals_of(&h_kf, 0, 5, mix_size), k);
	/* Loaded again under the same handle: a new id, never reused. */
	ptxtab_unload(PTXTAB_MODULE, &h_mod_a);
	assert_int_equal(globals_of(&h_fa, 0, 5, mix_size),
			 KPARAMS_GLOBALS_UNKNOWN);
	ptxtab_scan(PTXTAB_MODULE, &h_mod_a, img_glob);
	a2 = globals_of(&h_fa, 0, 5, mix_size);
	assert_true(a2 > PTXTAB_GLOBALS_ID);
	assert_int_not_equal(a2, a);
	assert_int_not_equal(a2, k);
	/* KMUX_PTX_GLOBALS=0: nobody tells, the verdict stays. */
	ptxtab_globals_init("0");
	assert_int_equal(ptxtab_globals_on, 0);
	assert_int_equal(globals_of(&h_fa, 0, 5, mix_size),
			 KPARAMS_GLOBALS_UNKNOWN);
	assert_int_equal(globals_of(&h_kf, 0, 5, mix_size),
			 KPARAMS_GLOBALS_UNKNOWN);
	assert_int_equal(ro(&h_fa, 0), RO_READS);
	/* KMUX_PTX_READONLY=0 turns it off with the scan. */
	ptxtab_init("0", 1);
	ptxtab_globals_init(NULL);
	assert_int_equal(ptxtab_globals_on, 0);
	ptxtab_init("1", 1);
	ptxtab_globals_init(NULL);
	assert_int_equal(globals_of(&h_fa, 0, 5, mix_size), a2);
}

/* The id of the variable located at addr, 0 when none. */
static uint64_t symbol_at(uint64_t addr)
{
	struct alloc a = { 0 };

	if (ptxtab_symbol_alloc(addr, &a) < 0)
		return 0;
	assert_true(addr >= a.base && addr - a.base < a.size);
	assert_int_equal(a.kind, ALLOC_DEVICE);
	return a.id;
}

/*
 * `__constant__` variables: kernels that read one get their image's
 * second id, read-only; a variable the program locates is kept with its
 * kind's id until its image or (for a library) its context goes.
 */
static void test_constants_and_symbols(void **state)
{
	static char img_vars[8192], img_cread[8192], img_opaque[8192];
	const char *head = ptx_head + strlen(".version 8.0\n.target sm_90\n"
					     ".address_size 64\n\n");
	struct kparams_vars v, vk;

	(void)state;
	/* mix bumps a counter and reads a constant. */
	snprintf(img_vars, sizeof(img_vars),
		 ".version 8.0\n.target sm_90\n.address_size 64\n"
		 ".global .align 4 .u32 count;\n"
		 ".const .align 4 .f32 coef[4];\n%s"
		 "\tatom.global.add.u32 %%r1, [count], 1;\n"
		 "\tld.const.u32 %%r2, [coef+4];\n\tret;\n}\n", head);
	/* mix only reads a constant; the counter is there, unused. */
	snprintf(img_cread, sizeof(img_cread),
		 ".version 8.0\n.target sm_90\n.address_size 64\n"
		 ".global .align 4 .u32 count;\n"
		 ".const .align 4 .f32 coef[4];\n%s"
		 "\tld.const.u32 %%r2, [coef];\n\tret;\n}\n", head);
	/* A .const declaration this parser cannot read. */
	snprintf(img_opaque, sizeof(img_opaque),
		 ".version 8.0\n.target sm_90\n.address_size 64\n"
		 ".const .align 4 .f32 %%odd;\n%s\tret;\n}\n", head);
	ptxtab_globals_init(NULL);
	ptxtab_scan(PTXTAB_MODULE, &h_mod_a, img_vars);
	ptxtab_scan(PTXTAB_MODULE, &h_mod_b, img_cread);
	ptxtab_scan(PTXTAB_LIBRARY, &h_lib, img_vars);
	v = vars_of(&h_fa, 0, 5, mix_size);
	assert_true(v.rw > PTXTAB_GLOBALS_ID && v.ro > PTXTAB_GLOBALS_ID);
	assert_int_not_equal(v.rw, v.ro);
	/* Reading a constant only: the image's counter is not reached. */
	vk = vars_of(&h_fb, 0, 5, mix_size);
	assert_int_equal(vk.rw, 0);
	assert_true(vk.ro > PTXTAB_GLOBALS_ID);
	assert_int_not_equal(vk.ro, v.ro);
	/* Not from a file. */
	assert_int_equal(vars_of(&h_ffile, 0, 5, mix_size).ro,
			 KPARAMS_GLOBALS_UNKNOWN);

	/* Located: each variable with its kind's id. */
	assert_int_equal(symbol_at(0x7000), 0);
	ptxtab_symbol_add(PTXTAB_MODULE, &h_mod_a, "count", 0x7000, 4);
	ptxtab_symbol_add(PTXTAB_MODULE, &h_mod_a, "coef", 0x7100, 16);
	ptxtab_symbol_add(PTXTAB_MODULE, &h_mod_b, "coef", 0x8100, 16);
	assert_int_equal(symbol_at(0x7000), v.rw);
	assert_int_equal(symbol_at(0x7003), v.rw);
	assert_int_equal(symbol_at(0x7004), 0);
	assert_int_equal(symbol_at(0x7100), v.ro);
	assert_int_equal(symbol_at(0x710f), v.ro);
	assert_int_equal(symbol_at(0x7110), 0);
	assert_int_equal(symbol_at(0x8108), vk.ro);
	/* A name its PTX does not declare, an unknown image: not kept. */
	ptxtab_symbol_add(PTXTAB_MODULE, &h_mod_a, "nope", 0x9000, 8);
	ptxtab_symbol_add(PTXTAB_MODULE, &h_mod_file, "coef", 0x9100, 8);
	assert_int_equal(symbol_at(0x9000), 0);
	assert_int_equal(symbol_at(0x9100), 0);
	/* Nothing from an empty or wrapping range. */
	ptxtab_symbol_add(PTXTAB_MODULE, &h_mod_a, "coef", 0x9200, 0);
	ptxtab_symbol_add(PTXTAB_MODULE, &h_mod_a, "coef", UINT64_MAX - 4, 16);
	assert_int_equal(symbol_at(0x9200), 0);
	assert_int_equal(symbol_at(UINT64_MAX - 2), 0);
	/* The library's variable, then its context goes: forgotten. */
	ptxtab_symbol_add(PTXTAB_LIBRARY, &h_lib, "coef", 0xa000, 16);
	assert_int_equal(symbol_at(0xa000), vars_of(&h_k, 1, 5, mix_size).ro);
	/* A range given to another variable replaces the older claim. */
	ptxtab_symbol_add(PTXTAB_MODULE, &h_mod_b, "count", 0x7100, 4);
	assert_true(symbol_at(0x7100) > PTXTAB_GLOBALS_ID);
	assert_int_not_equal(symbol_at(0x7100), v.ro);
	assert_int_not_equal(symbol_at(0x7100), v.rw);
	ptxtab_modules_gone();
	assert_int_equal(symbol_at(0xa000), 0);
	assert_int_equal(symbol_at(0x7000), 0);
	assert_int_equal(symbol_at(0x8108), 0);
	/* Unloaded: forgotten. */
	ptxtab_scan(PTXTAB_MODULE, &h_mod_a, img_vars);
	ptxtab_symbol_add(PTXTAB_MODULE, &h_mod_a, "coef", 0x7100, 16);
	assert_true(symbol_at(0x7100) > PTXTAB_GLOBALS_ID);
	ptxtab_unload(PTXTAB_MODULE, &h_mod_a);
	assert_int_equal(symbol_at(0x7100), 0);
	/* An unreadable .const: every kernel of the text reads constants. */
	ptxtab_scan(PTXTAB_MODULE, &h_mod_a, img_opaque);
	v = vars_of(&h_fa, 0, 5, mix_size);
	assert_int_equal(v.rw, 0);
	assert_true(v.ro > PTXTAB_GLOBALS_ID);
	/*
	 * A kernel its image has no PTX for (a fatbin whose PTX covers other
	 * kernels) may name the variables the PTX declares: ordered by both
	 * ids.  An image without any PTX declares nothing: nobody can tell.
	 */
	ptxtab_scan(PTXTAB_MODULE, &h_mod_a,
		    ".version 8.0\n.target sm_90\n.address_size 64\n"
		    ".global .align 4 .u32 count;\n"
		    ".const .align 4 .u32 coef;\n"
		    ".visible .entry other()\n{\n\tret;\n}\n");
	ptxtab_scan(PTXTAB_MODULE, &h_mod_b, img_no_ptx);
	v = vars_of(&h_fa, 0, 5, mix_size);
	assert_true(v.rw > PTXTAB_GLOBALS_ID && v.ro > PTXTAB_GLOBALS_ID);
	assert_int_not_equal(v.rw, v.ro);
	ptxtab_symbol_add(PTXTAB_MODULE, &h_mod_a, "coef", 0x7100, 4);
	assert_int_equal(symbol_at(0x7100), v.ro);
	v = vars_of(&h_fb, 0, 5, mix_size);
	assert_int_equal(v.rw, KPARAMS_GLOBALS_UNKNOWN);
	assert_int_equal(v.ro, KPARAMS_GLOBALS_UNKNOWN);
	ptxtab_unload(PTXTAB_MODULE, &h_mod_b);
	/* KMUX_PTX_GLOBALS=0: nothing is located. */
	ptxtab_scan(PTXTAB_MODULE, &h_mod_a, img_vars);
	ptxtab_globals_init("0");
	ptxtab_symbol_add(PTXTAB_MODULE, &h_mod_a, "coef", 0x7100, 16);
	assert_int_equal(symbol_at(0x7100), 0);
	ptxtab_globals_init(NULL);
	ptxtab_unload(PTXTAB_MODULE, &h_mod_a);
	ptxtab_unload(PTXTAB_MODULE, &h_mod_b);
	ptxtab_unload(PTXTAB_LIBRARY, &h_lib);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
		T(test_on_by_default),
		T(test_module_verdict_is_its_own),
		T(test_layout_must_match),
		T(test_unload_and_reuse),
		T(test_context_end_drops_modules_only),
		T(test_library_kernel_and_function),
		T(test_no_driver_no_verdict),
		T(test_extents),
		T(test_globals),
		T(test_constants_and_symbols),
#undef T
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
