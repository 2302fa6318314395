/*
 * test-kparams.c - unit tests of kernel parameter layouts and decoding.
 *
 * A fake driver answers cuFuncGetParamInfo / cuKernelGetParamInfo /
 * cuFuncGetName / cuKernelGetName from a table of made-up kernels and
 * counts the calls, so that the tests can check what was learned, through
 * which entry point, and that the cache spares the driver.  The kernel
 * cache is process-wide and never emptied, so every test uses handles of
 * its own.
 */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "alloc-table.h"
#include "kparams.h"
#include "ptrtab.h"
#include "texobj.h"

#define FAKE_MAX_PARAMS 300
#define FAKE_MAX 64

struct fake_fn {
	uintptr_t handle;
	bool is_kernel;		/* answers only the cuKernel* calls */
	/* What the calls of the other type return (not CUDA_SUCCESS). */
	CUresult wrong_type;
	int nparams;		/* -1: every param call fails */
	CUresult fail_at_result;	/* with fail_at > 0 */
	int fail_at;		/* > 0: param call at this index fails */
	size_t off[FAKE_MAX_PARAMS];
	size_t size[FAKE_MAX_PARAMS];
	char name[64];		/* "" : the name calls fail */
	_Atomic int func_param_calls, kernel_param_calls;
	_Atomic int func_name_calls, kernel_name_calls;
};

static struct fake_fn *fakes[FAKE_MAX];
static int nfakes;
static uintptr_t next_handle = 0x7f0000001000;

/*
 * Generated kernels for the cache tests: handle GEN_BASE + i * GEN_STEP
 * has 1 + i % 7 eight-byte parameters and the name "gen<i>".
 */
#define GEN_BASE 0x55aa00000000ull
#define GEN_STEP 64
#define GEN_MAX 40000

static char gen_names[GEN_MAX][16];
static _Atomic int gen_param_calls[GEN_MAX];
static _Atomic int gen_name_calls[GEN_MAX];

static int gen_index(uintptr_t h)
{
	if (h < GEN_BASE || (h - GEN_BASE) % GEN_STEP != 0 ||
	    (h - GEN_BASE) / GEN_STEP >= GEN_MAX)
		return -1;
	return (int)((h - GEN_BASE) / GEN_STEP);
}

static const void *gen_handle(int i)
{
	return (const void *)(uintptr_t)(GEN_BASE + (uint64_t)i * GEN_STEP);
}

static struct fake_fn *fake_find(uintptr_t h)
{
	for (int i = 0; i < nfakes; i++)
		if (fakes[i]->handle == h)
			return fakes[i];
	return NULL;
}

/* A new kernel with a fresh handle; params given as (offset, size) pairs. */
static struct fake_fn *fake_new(const char *name, bool is_kernel, int n, ...)
{
	struct fake_fn *f;
	va_list ap;

	assert_true(nfakes < FAKE_MAX);
	f = calloc(1, sizeof(*f));
	assert_non_null(f);
	f->handle = next_handle;
	next_handle += 0x100;
	f->is_kernel = is_kernel;
	f->wrong_type = CUDA_ERROR_INVALID_HANDLE;
	f->nparams = n;
	snprintf(f->name, sizeof(f->name), "%s", name);
	va_start(ap, n);
	for (int i = 0; i < n; i++) {
		f->off[i] = va_arg(ap, size_t);
		f->size[i] = va_arg(ap, size_t);
	}
	va_end(ap);
	fakes[nfakes++] = f;
	return f;
}

static const void *H(const struct fake_fn *f)
{
	return (const void *)f->handle;
}

static CUresult fake_param_info(uintptr_t h, bool as_kernel, size_t i,
				size_t *off, size_t *size)
{
	struct fake_fn *f = fake_find(h);
	int g = gen_index(h);

	if (g >= 0) {
		atomic_fetch_add(&gen_param_calls[g], 1);
		if (as_kernel)
			return CUDA_ERROR_INVALID_HANDLE;
		if (i >= (size_t)(1 + g % 7))
			return CUDA_ERROR_INVALID_VALUE;
		*off = i * 8;
		*size = 8;
		return CUDA_SUCCESS;
	}
	if (!f)
		return CUDA_ERROR_INVALID_HANDLE;
	atomic_fetch_add(as_kernel ? &f->kernel_param_calls :
				     &f->func_param_calls, 1);
	if (f->is_kernel != as_kernel)
		return f->wrong_type;
	if (f->nparams < 0)
		return CUDA_ERROR_NOT_SUPPORTED;
	if (f->fail_at > 0 && i == (size_t)f->fail_at)
		return f->fail_at_result;
	if (i >= (size_t)f->nparams)
		return CUDA_ERROR_INVALID_VALUE;
	*off = f->off[i];
	*size = f->size[i];
	return CUDA_SUCCESS;
}

static CUresult fake_name(uintptr_t h, bool as_kernel, const char **name)
{
	struct fake_fn *f = fake_find(h);
	int g = gen_index(h);

	if (g >= 0) {
		atomic_fetch_add(&gen_name_calls[g], 1);
		if (as_kernel)
			return CUDA_ERROR_INVALID_HANDLE;
		*name = gen_names[g];
		return CUDA_SUCCESS;
	}
	if (!f)
		return CUDA_ERROR_INVALID_HANDLE;
	atomic_fetch_add(as_kernel ? &f->kernel_name_calls :
				     &f->func_name_calls, 1);
	if (f->is_kernel != as_kernel)
		return f->wrong_type;
	if (!f->name[0])
		return CUDA_ERROR_INVALID_VALUE;
	*name = f->name;
	return CUDA_SUCCESS;
}

static CUresult fake_func_get_param_info(CUfunction f, size_t i, size_t *off,
					 size_t *size)
{
	return fake_param_info((uintptr_t)f, false, i, off, size);
}

static CUresult fake_kernel_get_param_info(CUkernel k, size_t i, size_t *off,
					   size_t *size)
{
	return fake_param_info((uintptr_t)k, true, i, off, size);
}

static CUresult fake_func_get_name(const char **name, CUfunction f)
{
	return fake_name((uintptr_t)f, false, name);
}

static CUresult fake_kernel_get_name(const char **name, CUkernel k)
{
	return fake_name((uintptr_t)k, true, name);
}

static const struct kparams_driver fake_driver = {
	.func_get_param_info = fake_func_get_param_info,
	.kernel_get_param_info = fake_kernel_get_param_info,
	.func_get_name = fake_func_get_name,
	.kernel_get_name = fake_kernel_get_name,
};

/* Four allocations every decoding test can point into. */
#define A_BASE 0x7f2000000000ull
#define B_BASE 0x7f2000100000ull
#define C_BASE 0x7f2000200000ull
#define D_BASE 0x7f2000300000ull

struct fixture {
	struct alloc_table *t;
	uint64_t a, b, c, d;	/* their ids */
};

static int setup(void **state)
{
	struct fixture *fx = calloc(1, sizeof(*fx));

	if (!fx)
		return -1;
	kparams_set_driver(&fake_driver);
	fx->t = alloc_table_new();
	if (!fx->t ||
	    alloc_table_insert(fx->t, A_BASE, 0x1000, ALLOC_DEVICE, 0,
			       &fx->a) ||
	    alloc_table_insert(fx->t, B_BASE, 0x1000, ALLOC_MANAGED, 0,
			       &fx->b) ||
	    alloc_table_insert(fx->t, C_BASE, 0x1000, ALLOC_HOST_MAPPED, -1,
			       &fx->c) ||
	    alloc_table_insert(fx->t, D_BASE, 0x1000, ALLOC_VMM, 1, &fx->d))
		return -1;
	*state = fx;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *fx = *state;

	alloc_table_free(fx->t);
	free(fx);
	return 0;
}

/* Write v at byte offset off of buf, whatever the alignment. */
static void put64(unsigned char *buf, size_t off, uint64_t v)
{
	memcpy(buf + off, &v, sizeof(v));
}

/* Launch through the extra form with a buffer of size bytes. */
static int collect_extra(struct fixture *fx, const struct kernel_info *ki,
			 void *buf, size_t size, struct access *out, int max,
			 unsigned *flags)
{
	void *extra[] = {
		CU_LAUNCH_PARAM_BUFFER_POINTER, buf,
		CU_LAUNCH_PARAM_BUFFER_SIZE, &size,
		CU_LAUNCH_PARAM_END,
	};

	return kparams_collect(fx->t, ki, NULL, extra, out, max, flags);
}

static void assert_access(const struct access *acc, uint64_t id,
			  uint64_t base, uint32_t kind, uint32_t param)
{
	assert_int_equal(acc->alloc_id, id);
	assert_int_equal(acc->base, base);
	assert_int_equal(acc->kind, kind);
	assert_int_equal(acc->param, param);
}

/* saxpy(int n, float *x, float *y) */
static struct fake_fn *fake_saxpy(void)
{
	return fake_new("saxpy", false, 3, (size_t)0, (size_t)4, (size_t)8,
			(size_t)8, (size_t)16, (size_t)8);
}

static void test_layout_learned(void **state)
{
	struct fake_fn *f = fake_saxpy();
	const struct kernel_info *ki;

	(void)state;
	ki = kparams_info(H(f));
	assert_non_null(ki);
	assert_ptr_equal(ki->func, H(f));
	assert_string_equal(ki->name, "saxpy");
	assert_int_equal(ki->nparams, 3);
	assert_int_equal(ki->param_bytes, 24);
	assert_int_equal(ki->offset[0], 0);
	assert_int_equal(ki->size[0], 4);
	assert_int_equal(ki->offset[2], 16);
	assert_int_equal(ki->size[2], 8);
	/* Learned through cuFuncGetParamInfo alone. */
	assert_int_equal(f->func_param_calls, 4);
	assert_int_equal(f->kernel_param_calls, 0);
}

static void test_kernel_params_form(void **state)
{
	struct fixture *fx = *state;
	const struct kernel_info *ki = kparams_info(H(fake_saxpy()));
	int n = 1 << 20;
	uint64_t x = A_BASE, y = B_BASE;
	void *kp[] = { &n, &x, &y };
	struct access acc[8];
	unsigned flags = ~0u;

	assert_int_equal(kparams_collect(fx->t, ki, kp, NULL, acc, 8, &flags),
			 2);
	assert_int_equal(flags, 0);
	assert_access(&acc[0], fx->a, A_BASE, ALLOC_DEVICE, 1);
	assert_access(&acc[1], fx->b, B_BASE, ALLOC_MANAGED, 2);

	/* A pointer to nothing known is no access. */
	y = 0x1234567890;
	assert_int_equal(kparams_collect(fx->t, ki, kp, NULL, acc, 8, &flags),
			 1);
	assert_access(&acc[0], fx->a, A_BASE, ALLOC_DEVICE, 1);
	/* flags may be NULL. */
	assert_int_equal(kparams_collect(fx->t, ki, kp, NULL, acc, 8, NULL),
			 1);
}

/* kparams_set_span_filter: only words inside the span are looked up. */
static uint64_t span_lo, span_hi;

static void span_of_test(uint64_t *lo, uint64_t *hi)
{
	*lo = span_lo;
	*hi = span_hi;
}

static void test_span_filter(void **state)
{
	struct fixture *fx = *state;
	const struct kernel_info *ki = kparams_info(H(fake_saxpy()));
	int n = 1 << 20;
	uint64_t x = A_BASE + 8, y = B_BASE;
	void *kp[] = { &n, &x, &y };
	struct access acc[8];

	/* The words the kernel_params form reads, from the layout: x, y. */
	assert_int_equal(ki->nwords, 2);
	assert_int_equal(ki->words[0].param, 1);
	assert_int_equal(ki->words[1].param, 2);
	kparams_set_span_filter(span_of_test);
	/* B's range only: A is not reported. */
	span_lo = B_BASE;
	span_hi = B_BASE + 0x1000;
	assert_int_equal(kparams_collect(fx->t, ki, kp, NULL, acc, 8, NULL),
			 1);
	assert_access(&acc[0], fx->b, B_BASE, ALLOC_MANAGED, 2);
	/* Both. */
	span_lo = A_BASE;
	assert_int_equal(kparams_collect(fx->t, ki, kp, NULL, acc, 8, NULL),
			 2);
	/* Empty (nothing managed yet: lo above hi): nothing at all. */
	span_lo = UINT64_MAX;
	span_hi = 0;
	assert_int_equal(kparams_collect(fx->t, ki, kp, NULL, acc, 8, NULL),
			 0);
	/* The extra form obeys it too. */
	span_lo = A_BASE;
	span_hi = A_BASE + 0x1000;
	{
		unsigned char buf[24] = { 0 };

		put64(buf, 8, x);
		put64(buf, 16, y);
		assert_int_equal(collect_extra(fx, ki, buf, sizeof(buf), acc,
					       8, NULL), 1);
		assert_access(&acc[0], fx->a, A_BASE, ALLOC_DEVICE, 1);
	}
	kparams_set_span_filter(NULL);
	assert_int_equal(kparams_collect(fx->t, ki, kp, NULL, acc, 8, NULL),
			 2);
}

/*
 * kparams_set_extra: located module variables, one outside the table's
 * span and one inside it between two allocations.
 */
#define VAR_FAR 0x7f3000000000ull
#define VAR_NEAR (A_BASE + 0x8000)
#define VAR_ID 0x100000000000099ull

static int extra_calls;

static int extra_of_test(uint64_t addr, struct alloc *a)
{
	extra_calls++;
	for (int i = 0; i < 2; i++) {
		uint64_t base = i ? VAR_NEAR : VAR_FAR;

		if (addr - base < 16) {
			*a = (struct alloc){ .base = base, .size = 16,
					     .id = VAR_ID + (uint64_t)i,
					     .kind = ALLOC_DEVICE,
					     .device = -1 };
			return 0;
		}
	}
	return -ENOENT;
}

static void test_extra_variables(void **state)
{
	struct fixture *fx = *state;
	const struct kernel_info *ki = kparams_info(H(fake_saxpy()));
	int n = 1 << 20;
	uint64_t x = A_BASE + 8, y = VAR_FAR + 8;
	void *kp[] = { &n, &x, &y };
	struct access acc[8];

	kparams_set_extra(extra_of_test);
	/* No span yet: never asked. */
	assert_int_equal(kparams_collect(fx->t, ki, kp, NULL, acc, 8, NULL),
			 1);
	assert_int_equal(extra_calls, 0);
	kparams_extra_span(VAR_FAR, VAR_FAR + 16);
	assert_int_equal(kparams_collect(fx->t, ki, kp, NULL, acc, 8, NULL),
			 2);
	assert_access(&acc[0], fx->a, A_BASE, ALLOC_DEVICE, 1);
	assert_access(&acc[1], VAR_ID, VAR_FAR, ALLOC_DEVICE, 2);
	/* Just past it: outside the span, not asked. */
	y = VAR_FAR + 16;
	assert_int_equal(kparams_collect(fx->t, ki, kp, NULL, acc, 8, NULL),
			 1);
	/* Inside the table's span, in no allocation: asked once widened. */
	y = VAR_NEAR + 4;
	kparams_extra_span(VAR_NEAR, VAR_NEAR + 16);
	assert_int_equal(kparams_collect(fx->t, ki, kp, NULL, acc, 8, NULL),
			 2);
	assert_access(&acc[1], VAR_ID + 1, VAR_NEAR, ALLOC_DEVICE, 2);
	/* The extra form too. */
	{
		unsigned char buf[24] = { 0 };

		put64(buf, 8, x);
		put64(buf, 16, VAR_FAR);
		assert_int_equal(collect_extra(fx, ki, buf, sizeof(buf), acc,
					       8, NULL), 2);
		assert_access(&acc[1], VAR_ID, VAR_FAR, ALLOC_DEVICE, 2);
	}
	/* Allocations win; a scalar outside both spans is not asked. */
	extra_calls = 0;
	y = B_BASE;
	n = 12345;
	assert_int_equal(kparams_collect(fx->t, ki, kp, NULL, acc, 8, NULL),
			 2);
	assert_int_equal(extra_calls, 0);
	kparams_set_extra(NULL);
	y = VAR_FAR;
	assert_int_equal(kparams_collect(fx->t, ki, kp, NULL, acc, 8, NULL),
			 1);
}

static void test_extra_form(void **state)
{
	struct fixture *fx = *state;
	const struct kernel_info *ki = kparams_info(H(fake_saxpy()));
	unsigned char buf[24] = { 0 };
	size_t size = sizeof(buf);
	struct access acc[8];
	unsigned flags = ~0u;

	put64(buf, 0, 7);
	put64(buf, 8, C_BASE + 0x10);
	put64(buf, 16, D_BASE);
	assert_int_equal(collect_extra(fx, ki, buf, sizeof(buf), acc, 8,
				       &flags), 2);
	assert_int_equal(flags, 0);
	assert_access(&acc[0], fx->c, C_BASE, ALLOC_HOST_MAPPED, 1);
	assert_access(&acc[1], fx->d, D_BASE, ALLOC_VMM, 2);

	/* Size before pointer: the order of the pairs does not matter. */
	void *extra[] = {
		CU_LAUNCH_PARAM_BUFFER_SIZE, &size,
		CU_LAUNCH_PARAM_BUFFER_POINTER, buf,
		CU_LAUNCH_PARAM_END,
	};
	assert_int_equal(kparams_collect(fx->t, ki, NULL, extra, acc, 8,
					 &flags), 2);
	assert_int_equal(flags, 0);
	assert_int_equal(acc[1].alloc_id, fx->d);
}

/*
 * A word that is a live texture or surface object: the launch reaches
 * memory through it (KPARAMS_OPAQUE_HANDLE, one of KPARAMS_NOT_ALL), in
 * either form; its pointers are still found.  Destroyed, it is data again.
 */
static void test_opaque_handle(void **state)
{
	struct fixture *fx = *state;
	const struct kernel_info *ki = kparams_info(H(fake_saxpy()));
	int n = 5;
	uint64_t x = A_BASE, y = 3;
	void *kp[] = { &n, &x, &y };
	unsigned char buf[24] = { 0 };
	struct access acc[8];
	unsigned flags = ~0u;

	assert_false(texobj_any());
	assert_int_equal(kparams_collect(fx->t, ki, kp, NULL, acc, 8, &flags),
			 1);
	assert_int_equal(flags, 0);
	assert_int_equal(texobj_add(3), 0);
	assert_int_equal(texobj_add(9), 0);
	assert_true(texobj_any());
	assert_int_equal(texobj_count(), 2);
	assert_int_equal(kparams_collect(fx->t, ki, kp, NULL, acc, 8, &flags),
			 1);
	assert_int_equal(flags, KPARAMS_OPAQUE_HANDLE);
	assert_true(flags & KPARAMS_NOT_ALL);
	assert_access(&acc[0], fx->a, A_BASE, ALLOC_DEVICE, 1);
	/* The extra form: every aligned word of the buffer. */
	put64(buf, 0, 7);
	put64(buf, 8, A_BASE);
	put64(buf, 16, 9);
	assert_int_equal(collect_extra(fx, ki, buf, sizeof(buf), acc, 8,
				       &flags), 1);
	assert_int_equal(flags, KPARAMS_OPAQUE_HANDLE);
	put64(buf, 16, 10);
	assert_int_equal(collect_extra(fx, ki, buf, sizeof(buf), acc, 8,
				       &flags), 1);
	assert_int_equal(flags, 0);
	/* A destroyed object is data; the last one gone, nothing is looked up. */
	texobj_remove(3);
	assert_int_equal(kparams_collect(fx->t, ki, kp, NULL, acc, 8, &flags),
			 1);
	assert_int_equal(flags, 0);
	texobj_remove(9);
	assert_false(texobj_any());
	assert_int_equal(texobj_count(), 0);
	/*
	 * A handle uploaded into device memory: every launch is opaque while
	 * one lives, and no longer once none does.
	 */
	assert_int_equal(texobj_add(9), 0);
	texobj_escape();
	assert_true(texobj_escaped());
	y = 0;
	assert_int_equal(kparams_collect(fx->t, ki, kp, NULL, acc, 8, &flags),
			 1);
	assert_int_equal(flags, KPARAMS_OPAQUE_HANDLE);
	texobj_remove(9);
	assert_false(texobj_escaped());
	assert_int_equal(kparams_collect(fx->t, ki, kp, NULL, acc, 8, &flags),
			 1);
	assert_int_equal(flags, 0);
	/* Outside the live handles' range: answered without a lookup. */
	assert_int_equal(texobj_add(100), 0);
	assert_false(texobj_is_live(99));
	assert_false(texobj_is_live(101));
	assert_true(texobj_is_live(100));
	texobj_remove(100);
	/* A handle added twice (reused by the driver) is live until both go. */
	assert_int_equal(texobj_add(3), 0);
	assert_int_equal(texobj_add(3), 0);
	texobj_remove(3);
	assert_true(texobj_is_live(3));
	texobj_remove(3);
	assert_false(texobj_is_live(3));
	assert_false(texobj_is_live(0));
}

/* k(int x, struct { int a, b; float *p; float *q; } s, int z) */
static void test_struct_with_two_pointers(void **state)
{
	struct fixture *fx = *state;
	struct fake_fn *f = fake_new("by_value", false, 3, (size_t)0,
				     (size_t)4, (size_t)8, (size_t)24,
				     (size_t)32, (size_t)4);
	const struct kernel_info *ki = kparams_info(H(f));
	struct {
		int a, b;
		uint64_t p, q;
	} s = { 1, 2, A_BASE + 8, B_BASE + 0xff8 };
	int x = 3, z = 4;
	void *kp[] = { &x, &s, &z };
	unsigned char buf[36] = { 0 };
	struct access acc[8];
	unsigned flags;

	assert_int_equal(ki->nparams, 3);
	assert_int_equal(kparams_collect(fx->t, ki, kp, NULL, acc, 8, &flags),
			 2);
	assert_int_equal(flags, 0);
	assert_access(&acc[0], fx->a, A_BASE, ALLOC_DEVICE, 1);
	assert_access(&acc[1], fx->b, B_BASE, ALLOC_MANAGED, 1);

	memcpy(buf + 8, &s, sizeof(s));
	assert_int_equal(collect_extra(fx, ki, buf, sizeof(buf), acc, 8,
				       &flags), 2);
	assert_access(&acc[0], fx->a, A_BASE, ALLOC_DEVICE, 1);
	assert_access(&acc[1], fx->b, B_BASE, ALLOC_MANAGED, 1);
}

/*
 * k(char c, packed8 u @4, struct { int i; void *p; } s @12, int lo @24,
 *   int hi @28): the pointer in u sits at offset 4, not 8-aligned in the
 * layout: ignored.  s's pointer is at offset 16: found.  lo and hi together
 * spell a pointer in the aligned word at 24, but it is a word of neither
 * parameter: ignored.
 */
static void test_unaligned_pointer_ignored(void **state)
{
	struct fixture *fx = *state;
	struct fake_fn *f = fake_new("packed", false, 5, (size_t)0, (size_t)1,
				     (size_t)4, (size_t)8, (size_t)12,
				     (size_t)12, (size_t)24, (size_t)4,
				     (size_t)28, (size_t)4);
	const struct kernel_info *ki = kparams_info(H(f));
	unsigned char storage[16] = { 0 }, buf[32] = { 0 };
	unsigned char *u = storage + 1;		/* odd host address too */
	unsigned char s[12] = { 0 };
	uint64_t straddle = C_BASE;
	uint32_t lo = (uint32_t)straddle, hi = (uint32_t)(straddle >> 32);
	char c = 'x';
	void *kp[] = { &c, u, s, &lo, &hi };
	struct access acc[8];
	unsigned flags;

	put64(u, 0, A_BASE);
	put64(s, 4, B_BASE + 0x20);
	assert_int_equal(kparams_collect(fx->t, ki, kp, NULL, acc, 8, &flags),
			 1);
	assert_int_equal(flags, 0);
	assert_access(&acc[0], fx->b, B_BASE, ALLOC_MANAGED, 2);

	put64(buf, 4, A_BASE);
	put64(buf, 16, B_BASE + 0x20);
	memcpy(buf + 24, &lo, 4);
	memcpy(buf + 28, &hi, 4);
	assert_int_equal(collect_extra(fx, ki, buf, sizeof(buf), acc, 8,
				       &flags), 1);
	assert_int_equal(flags, 0);
	assert_access(&acc[0], fx->b, B_BASE, ALLOC_MANAGED, 2);

	/* The same bytes without a layout: the word at 24 is found. */
	assert_int_equal(collect_extra(fx, NULL, buf, sizeof(buf), acc, 8,
				       &flags), 2);
	assert_int_equal(acc[1].alloc_id, fx->c);
}

static void test_pointer_into_middle(void **state)
{
	struct fixture *fx = *state;
	const struct kernel_info *ki = kparams_info(H(fake_saxpy()));
	int n = 0;
	uint64_t x = A_BASE + 100, y = A_BASE + 0xfff;
	void *kp[] = { &n, &x, &y };
	struct access acc[8];
	unsigned flags;

	assert_int_equal(kparams_collect(fx->t, ki, kp, NULL, acc, 8, &flags),
			 1);
	assert_access(&acc[0], fx->a, A_BASE, ALLOC_DEVICE, 1);
	/* One past the end is not inside. */
	x = A_BASE + 0x1000;
	y = 0;
	assert_int_equal(kparams_collect(fx->t, ki, kp, NULL, acc, 8, &flags),
			 0);
}

/* k(float *p0, float *p1, float *p2, float *p3) */
static void test_dedup(void **state)
{
	struct fixture *fx = *state;
	struct fake_fn *f = fake_new("dedup", false, 4, (size_t)0, (size_t)8,
				     (size_t)8, (size_t)8, (size_t)16,
				     (size_t)8, (size_t)24, (size_t)8);
	const struct kernel_info *ki = kparams_info(H(f));
	uint64_t p[4] = { A_BASE, A_BASE + 8, B_BASE, A_BASE + 16 };
	void *kp[] = { &p[0], &p[1], &p[2], &p[3] };
	struct access acc[8];
	unsigned flags;

	assert_int_equal(kparams_collect(fx->t, ki, kp, NULL, acc, 8, &flags),
			 2);
	assert_int_equal(flags, 0);
	/* Reported once, at the first parameter pointing into it. */
	assert_access(&acc[0], fx->a, A_BASE, ALLOC_DEVICE, 0);
	assert_access(&acc[1], fx->b, B_BASE, ALLOC_MANAGED, 2);

	/* Repeats do not count against max. */
	p[2] = A_BASE + 24;
	assert_int_equal(kparams_collect(fx->t, ki, kp, NULL, acc, 1, &flags),
			 1);
	assert_int_equal(flags, 0);
}

/*
 * Pointer tables (ptrtab.h): a kernel given A, a table pointing into B
 * and D, reaches B and D too, read-write, whole, the parameter unknown;
 * one also given D directly keeps one access for it; an opaque table
 * makes the launch's accesses incomplete.
 */
static void test_pointer_table(void **state)
{
	struct fixture *fx = *state;
	const struct kernel_info *ki = kparams_info(H(fake_saxpy()));
	struct ptrtab_ref ref[] = { { fx->b, B_BASE + 64 }, { fx->d, D_BASE } };
	struct ptrtab_ref wide[PTRTAB_REFS + 1];
	int n = 1;
	uint64_t x = A_BASE, y = 0;
	void *kp[] = { &n, &x, &y };
	struct access acc[8];
	unsigned flags = ~0u;

	ptrtab_reset();
	assert_int_equal(ptrtab_note(fx->a, A_BASE, ref, 2, NULL, NULL), 0);
	assert_int_equal(kparams_collect(fx->t, ki, kp, NULL, acc, 8, &flags),
			 3);
	assert_int_equal(flags, 0);
	assert_access(&acc[0], fx->a, A_BASE, ALLOC_DEVICE, 1);
	assert_access(&acc[1], fx->b, B_BASE, ALLOC_MANAGED,
		      KPARAMS_PARAM_UNKNOWN);
	assert_access(&acc[2], fx->d, D_BASE, ALLOC_VMM, KPARAMS_PARAM_UNKNOWN);
	assert_int_equal(acc[1].readonly, 0);
	assert_int_equal(acc[1].len, 0);
	/* Named directly too: one access, at the parameter. */
	y = D_BASE + 8;
	assert_int_equal(kparams_collect(fx->t, ki, kp, NULL, acc, 8, &flags),
			 3);
	assert_access(&acc[1], fx->d, D_BASE, ALLOC_VMM, 2);
	assert_access(&acc[2], fx->b, B_BASE, ALLOC_MANAGED,
		      KPARAMS_PARAM_UNKNOWN);
	/* Not given the table: nothing through it. */
	x = 0;
	assert_int_equal(kparams_collect(fx->t, ki, kp, NULL, acc, 8, &flags),
			 1);
	/* Reached allocations count against max like the others. */
	x = A_BASE;
	y = 0;
	assert_int_equal(kparams_collect(fx->t, ki, kp, NULL, acc, 2, &flags),
			 2);
	assert_true(flags & KPARAMS_TRUNCATED);
	/* Wider than kept: the launch's accesses are not all it reaches. */
	for (int i = 0; i <= PTRTAB_REFS; i++)
		wide[i] = (struct ptrtab_ref){ 1000 + (uint64_t)i, C_BASE };
	assert_int_equal(ptrtab_note(fx->c, C_BASE, wide, PTRTAB_REFS + 1,
				     NULL, NULL), -E2BIG);
	y = C_BASE;
	kparams_collect(fx->t, ki, kp, NULL, acc, 8, &flags);
	assert_true(flags & KPARAMS_TABLE_OPAQUE);
	assert_true(KPARAMS_NOT_ALL & KPARAMS_TABLE_OPAQUE);
	ptrtab_reset();
}

static void test_truncated(void **state)
{
	struct fixture *fx = *state;
	struct fake_fn *f = fake_new("four", false, 4, (size_t)0, (size_t)8,
				     (size_t)8, (size_t)8, (size_t)16,
				     (size_t)8, (size_t)24, (size_t)8);
	const struct kernel_info *ki = kparams_info(H(f));
	uint64_t p[4] = { A_BASE, B_BASE, C_BASE, A_BASE };
	void *kp[] = { &p[0], &p[1], &p[2], &p[3] };
	struct access acc[8];
	unsigned flags;

	assert_int_equal(kparams_collect(fx->t, ki, kp, NULL, acc, 2, &flags),
			 2);
	assert_int_equal(flags, KPARAMS_TRUNCATED);
	assert_int_equal(acc[0].alloc_id, fx->a);
	assert_int_equal(acc[1].alloc_id, fx->b);
	assert_int_equal(kparams_collect(fx->t, ki, kp, NULL, acc, 3, &flags),
			 3);
	assert_int_equal(flags, 0);
	assert_int_equal(kparams_collect(fx->t, ki, kp, NULL, acc, 0, &flags),
			 0);
	assert_int_equal(flags, KPARAMS_TRUNCATED);
}

/*
 * 120 pointer parameters into 50 allocations, with repeats: past a few
 * results the dedup switches to its hash; the answer must not change.
 */
static void test_many_pointers(void **state)
{
	struct fixture *fx = *state;
	struct fake_fn *f = fake_new("many", false, 0);
	const struct kernel_info *ki;
	uint64_t p[120], ids[50], s = 88172645463325252ull;
	void *kp[120];
	struct access acc[64];
	int first[50], expect = 0;
	unsigned flags;

	f->nparams = 120;
	for (int i = 0; i < 120; i++) {
		f->off[i] = (size_t)i * 8;
		f->size[i] = 8;
	}
	for (int k = 0; k < 50; k++) {
		assert_int_equal(alloc_table_insert(fx->t, 0x7f4000000000ull +
						    (uint64_t)k * 0x10000,
						    0x1000, ALLOC_DEVICE, 0,
						    &ids[k]), 0);
		first[k] = -1;
	}
	for (int i = 0; i < 120; i++) {
		int k;

		s ^= s << 13;
		s ^= s >> 7;
		s ^= s << 17;
		k = (int)(s % 50);
		p[i] = 0x7f4000000000ull + (uint64_t)k * 0x10000 + s % 0x1000;
		kp[i] = &p[i];
		if (first[k] < 0) {
			first[k] = i;
			expect++;
		}
	}
	ki = kparams_info(H(f));
	assert_int_equal(ki->nparams, 120);
	assert_int_equal(kparams_collect(fx->t, ki, kp, NULL, acc, 64, &flags),
			 expect);
	assert_int_equal(flags, 0);
	for (int j = 0; j < expect; j++) {
		int k = (int)((acc[j].base - 0x7f4000000000ull) / 0x10000);

		assert_int_equal(acc[j].alloc_id, ids[k]);
		assert_int_equal(acc[j].param, (uint32_t)first[k]);
		/* In parameter order. */
		if (j > 0)
			assert_true(acc[j].param > acc[j - 1].param);
	}
	/* Truncated in the hashed phase: still no duplicate. */
	assert_int_equal(kparams_collect(fx->t, ki, kp, NULL, acc, 20, &flags),
			 20);
	assert_int_equal(flags, KPARAMS_TRUNCATED);
	for (int j = 0; j < 20; j++)
		for (int l = 0; l < j; l++)
			assert_true(acc[j].alloc_id != acc[l].alloc_id);
}

static void test_unknown_layout(void **state)
{
	struct fixture *fx = *state;
	/* The driver knows nothing of this handle, under either type. */
	const void *h = (const void *)(uintptr_t)0x7f00000abc00;
	const struct kernel_info *ki = kparams_info(h);
	uint64_t x = A_BASE;
	void *kp[] = { &x };
	unsigned char buf[40] = { 0 };
	struct access acc[8];
	unsigned flags;

	assert_non_null(ki);
	assert_int_equal(ki->nparams, -1);
	assert_string_equal(ki->name, "?");
	assert_ptr_equal(kparams_info(h), ki);

	/* kernelParams: the sizes are unknown, nothing can be read. */
	assert_int_equal(kparams_collect(fx->t, ki, kp, NULL, acc, 8, &flags),
			 0);
	assert_int_equal(flags, KPARAMS_UNKNOWN_LAYOUT);

	/* extra with a size: every aligned word of the buffer. */
	put64(buf, 0, B_BASE);
	put64(buf, 12, A_BASE);		/* unaligned: ignored */
	put64(buf, 24, C_BASE + 8);
	put64(buf, 32, B_BASE + 8);	/* same allocation as word 0 */
	assert_int_equal(collect_extra(fx, ki, buf, sizeof(buf), acc, 8,
				       &flags), 2);
	assert_int_equal(flags, KPARAMS_UNKNOWN_LAYOUT);
	assert_access(&acc[0], fx->b, B_BASE, ALLOC_MANAGED,
		      KPARAMS_PARAM_UNKNOWN);
	assert_access(&acc[1], fx->c, C_BASE, ALLOC_HOST_MAPPED,
		      KPARAMS_PARAM_UNKNOWN);
	/* A trailing partial word is not read. */
	assert_int_equal(collect_extra(fx, ki, buf, 31, acc, 8, &flags), 1);

	/* No layout and a size beyond any kernel's: not believed. */
	assert_int_equal(collect_extra(fx, ki, buf, 1 << 20, acc, 8, &flags),
			 0);
	assert_int_equal(flags, KPARAMS_UNKNOWN_LAYOUT | KPARAMS_EXTRA_OPAQUE);

	/* No kernel_info at all (out of memory upstream): same answers. */
	assert_int_equal(kparams_collect(fx->t, NULL, kp, NULL, acc, 8,
					 &flags), 0);
	assert_int_equal(flags, KPARAMS_UNKNOWN_LAYOUT);
	assert_int_equal(collect_extra(fx, NULL, buf, sizeof(buf), acc, 8,
				       &flags), 2);
	assert_int_equal(flags, KPARAMS_UNKNOWN_LAYOUT);
}

static void test_extra_opaque(void **state)
{
	struct fixture *fx = *state;
	const struct kernel_info *ki = kparams_info(H(fake_saxpy()));
	unsigned char buf[24] = { 0 };
	size_t size = sizeof(buf), zero = 0;
	struct access acc[8];
	unsigned flags;

	put64(buf, 8, A_BASE);
	void *no_size[] = {
		CU_LAUNCH_PARAM_BUFFER_POINTER, buf, CU_LAUNCH_PARAM_END,
	};
	assert_int_equal(kparams_collect(fx->t, ki, NULL, no_size, acc, 8,
					 &flags), 0);
	assert_int_equal(flags, KPARAMS_EXTRA_OPAQUE);

	void *empty[] = { CU_LAUNCH_PARAM_END };
	assert_int_equal(kparams_collect(fx->t, ki, NULL, empty, acc, 8,
					 &flags), 0);
	assert_int_equal(flags, KPARAMS_EXTRA_OPAQUE);

	/* An otherwise complete array with a key we do not know. */
	void *unknown_key[] = {
		CU_LAUNCH_PARAM_BUFFER_POINTER, buf, (void *)0x77, buf,
		CU_LAUNCH_PARAM_BUFFER_SIZE, &size, CU_LAUNCH_PARAM_END,
	};
	assert_int_equal(kparams_collect(fx->t, ki, NULL, unknown_key, acc, 8,
					 &flags), 0);
	assert_int_equal(flags, KPARAMS_EXTRA_OPAQUE);

	void *null_buf[] = {
		CU_LAUNCH_PARAM_BUFFER_POINTER, NULL,
		CU_LAUNCH_PARAM_BUFFER_SIZE, &size, CU_LAUNCH_PARAM_END,
	};
	assert_int_equal(kparams_collect(fx->t, ki, NULL, null_buf, acc, 8,
					 &flags), 0);
	assert_int_equal(flags, KPARAMS_EXTRA_OPAQUE);

	void *null_size[] = {
		CU_LAUNCH_PARAM_BUFFER_POINTER, buf,
		CU_LAUNCH_PARAM_BUFFER_SIZE, NULL, CU_LAUNCH_PARAM_END,
	};
	assert_int_equal(kparams_collect(fx->t, ki, NULL, null_size, acc, 8,
					 &flags), 0);
	assert_int_equal(flags, KPARAMS_EXTRA_OPAQUE);

	/* A size of zero with no buffer is a valid empty launch. */
	void *zero_size[] = {
		CU_LAUNCH_PARAM_BUFFER_SIZE, &zero, CU_LAUNCH_PARAM_END,
	};
	assert_int_equal(kparams_collect(fx->t, ki, NULL, zero_size, acc, 8,
					 &flags), 0);
	assert_int_equal(flags, 0);

	/* Neither form: nothing, and nothing flagged. */
	assert_int_equal(kparams_collect(fx->t, ki, NULL, NULL, acc, 8,
					 &flags), 0);
	assert_int_equal(flags, 0);
}

static void test_extra_shorter_than_layout(void **state)
{
	struct fixture *fx = *state;
	const struct kernel_info *ki = kparams_info(H(fake_saxpy()));
	unsigned char *buf;
	struct access acc[8];
	unsigned flags;

	/* Exactly 16 bytes on the heap: ASan catches any read past them. */
	buf = calloc(1, 16);
	assert_non_null(buf);
	put64(buf, 8, A_BASE);
	assert_int_equal(collect_extra(fx, ki, buf, 16, acc, 8, &flags), 1);
	assert_access(&acc[0], fx->a, A_BASE, ALLOC_DEVICE, 1);
	assert_int_equal(collect_extra(fx, ki, buf, 12, acc, 8, &flags), 0);
	free(buf);
}

static void test_kernel_params_win(void **state)
{
	struct fixture *fx = *state;
	const struct kernel_info *ki = kparams_info(H(fake_saxpy()));
	unsigned char buf[24] = { 0 };
	size_t size = sizeof(buf);
	int n = 0;
	uint64_t x = A_BASE, y = 0;
	void *kp[] = { &n, &x, &y };
	void *extra[] = {
		CU_LAUNCH_PARAM_BUFFER_POINTER, buf,
		CU_LAUNCH_PARAM_BUFFER_SIZE, &size, CU_LAUNCH_PARAM_END,
	};
	struct access acc[8];
	unsigned flags;

	put64(buf, 8, D_BASE);
	assert_int_equal(kparams_collect(fx->t, ki, kp, extra, acc, 8,
					 &flags), 1);
	assert_int_equal(acc[0].alloc_id, fx->a);
}

/* cudart and PyTorch launch with CUkernel handles. */
static void test_cukernel_fallback(void **state)
{
	struct fixture *fx = *state;
	struct fake_fn *f = fake_new("from_cudart", true, 2, (size_t)0,
				     (size_t)8, (size_t)8, (size_t)4);
	const struct kernel_info *ki = kparams_info(H(f));
	uint64_t p = C_BASE;
	int i = 0;
	void *kp[] = { &p, &i };
	struct access acc[8];
	unsigned flags;

	assert_int_equal(ki->nparams, 2);
	assert_int_equal(ki->offset[1], 8);
	assert_int_equal(ki->size[1], 4);
	assert_int_equal(ki->param_bytes, 12);
	assert_string_equal(ki->name, "from_cudart");
	assert_int_equal(f->func_param_calls, 1);	/* index 0, refused */
	assert_int_equal(f->kernel_param_calls, 3);
	/* The name asked the way the layout was answered. */
	assert_int_equal(f->kernel_name_calls, 1);
	assert_int_equal(f->func_name_calls, 0);

	assert_int_equal(kparams_collect(fx->t, ki, kp, NULL, acc, 8, &flags),
			 1);
	assert_access(&acc[0], fx->c, C_BASE, ALLOC_HOST_MAPPED, 0);

	/* Without cuKernelGetParamInfo in the driver: unknown. */
	struct kparams_driver d = fake_driver;
	d.kernel_get_param_info = NULL;
	kparams_set_driver(&d);
	f = fake_new("old_driver", true, 1, (size_t)0, (size_t)8);
	ki = kparams_info(H(f));
	kparams_set_driver(&fake_driver);
	assert_int_equal(ki->nparams, -1);
	assert_string_equal(ki->name, "old_driver");
}

/* Only a failure of the very first call means "try the other type". */
static void test_no_fallback_after_first_param(void **state)
{
	struct fake_fn *f = fake_saxpy();
	const struct kernel_info *ki;

	(void)state;
	f->fail_at = 2;
	f->fail_at_result = CUDA_ERROR_UNKNOWN;
	ki = kparams_info(H(f));
	assert_int_equal(ki->nparams, -1);
	assert_string_equal(ki->name, "saxpy");
	assert_int_equal(f->func_param_calls, 3);
	assert_int_equal(f->kernel_param_calls, 0);
}

static void test_zero_params(void **state)
{
	struct fixture *fx = *state;
	struct fake_fn *f = fake_new("noargs", false, 0);
	struct fake_fn *g = fake_new("noargs_kernel", true, 0);
	struct fake_fn *u = fake_new("ambiguous", false, 0);
	struct fake_fn *k = fake_new("noargs_refused", true, 0);
	const struct kernel_info *ki;
	struct access acc[4];
	unsigned flags;

	/*
	 * Both calls say "no parameter 0" (the wrong-typed one happens to
	 * answer INVALID_VALUE as well): zero parameters, either way round.
	 */
	f->wrong_type = CUDA_ERROR_INVALID_VALUE;
	ki = kparams_info(H(f));
	assert_int_equal(ki->nparams, 0);
	assert_int_equal(ki->param_bytes, 0);
	assert_string_equal(ki->name, "noargs");
	assert_int_equal(kparams_collect(fx->t, ki, NULL, NULL, acc, 4,
					 &flags), 0);
	assert_int_equal(flags, 0);
	g->wrong_type = CUDA_ERROR_INVALID_VALUE;
	assert_int_equal(kparams_info(H(g))->nparams, 0);

	/*
	 * A kernel the function calls refuse (as the real driver's do for
	 * every handle): the kernel calls know its name and say "no
	 * parameter 0", so it has none.
	 */
	ki = kparams_info(H(k));
	assert_int_equal(ki->nparams, 0);
	assert_string_equal(ki->name, "noargs_refused");

	/* The other call refused the handle: cannot tell, so unknown. */
	ki = kparams_info(H(u));
	assert_int_equal(ki->nparams, -1);
	assert_int_equal(kparams_collect(fx->t, ki, (void *[]){ NULL }, NULL,
					 acc, 4, &flags), 0);
	assert_int_equal(flags, KPARAMS_UNKNOWN_LAYOUT);
}

static void test_too_many_params(void **state)
{
	struct fake_fn *max = fake_new("max", false, 0);
	struct fake_fn *over = fake_new("over", false, 0);

	(void)state;
	max->nparams = KPARAMS_MAX;
	over->nparams = KPARAMS_MAX + 1;
	for (int i = 0; i < KPARAMS_MAX + 1; i++) {
		max->off[i] = over->off[i] = (size_t)i * 4;
		max->size[i] = over->size[i] = 4;
	}
	assert_int_equal(kparams_info(H(max))->nparams, KPARAMS_MAX);
	assert_int_equal(kparams_info(H(max))->param_bytes, KPARAMS_MAX * 4);
	assert_int_equal(kparams_info(H(over))->nparams, -1);
	assert_string_equal(kparams_info(H(over))->name, "over");
}

static void test_absurd_layout(void **state)
{
	struct fake_fn *zero = fake_new("zero_size", false, 2, (size_t)0,
					(size_t)8, (size_t)8, (size_t)0);
	struct fake_fn *far = fake_new("far", false, 1, (size_t)1 << 40,
				       (size_t)8);
	struct fake_fn *huge = fake_new("huge", false, 1, (size_t)0,
					SIZE_MAX);

	(void)state;
	assert_int_equal(kparams_info(H(zero))->nparams, -1);
	assert_int_equal(kparams_info(H(far))->nparams, -1);
	assert_int_equal(kparams_info(H(huge))->nparams, -1);
}

static void test_name_cached_and_copied(void **state)
{
	struct fake_fn *f = fake_saxpy();
	struct fake_fn *anon = fake_new("", false, 1, (size_t)0, (size_t)8);
	const struct kernel_info *ki, *again;

	(void)state;
	ki = kparams_info(H(f));
	for (int i = 0; i < 100; i++) {
		again = kparams_info(H(f));
		assert_ptr_equal(again, ki);
	}
	assert_int_equal(f->func_name_calls, 1);
	assert_int_equal(f->func_param_calls, 4);
	/* The module goes away and its string with it: ours stays. */
	memset(f->name, 'X', sizeof(f->name) - 1);
	assert_string_equal(kparams_info(H(f))->name, "saxpy");
	assert_ptr_not_equal(ki->name, f->name);

	/* Neither name call answers: "?", asked once each. */
	assert_string_equal(kparams_info(H(anon))->name, "?");
	assert_string_equal(kparams_info(H(anon))->name, "?");
	assert_int_equal(anon->func_name_calls, 1);
	assert_int_equal(anon->kernel_name_calls, 1);
	assert_int_equal(kparams_info(H(anon))->nparams, 1);
}

static const void *ro_seen_f;
static int ro_seen_kernel = -1;

/* A readonly prover that proves parameter 1 of kernels named "other". */
static uint64_t fake_readonly(const void *f, int is_kernel, const char *name,
			      int nparams, const uint32_t *size,
			      uint64_t *has_ext, struct kparams_extent *ext,
			      struct ptxr_prog **range, struct kparams_vars *vars)
{
	(void)size;
	(void)ext;
	*range = NULL;
	*vars = strcmp(name, "other") == 0 ?
		(struct kparams_vars){ 0x100000000000007ull, 0x100000000000008ull } :
		(struct kparams_vars){ 0, 0 };
	*has_ext = 0;
	ro_seen_f = f;
	ro_seen_kernel = is_kernel;
	return strcmp(name, "other") == 0 && nparams == 2 ? 0x2 : 0;
}

/*
 * An unload lets the driver give a dead function's handle to new code: the
 * cached entry must be learned again, name, layout and verdict.
 */
static void test_invalidate_relearns(void **state)
{
	struct fake_fn *f = fake_saxpy();
	struct fake_fn *k = fake_new("other", true, 2, (size_t)0, (size_t)8,
				     (size_t)8, (size_t)8);
	const struct kernel_info *ki, *again;

	(void)state;
	kparams_set_readonly(fake_readonly);
	ki = kparams_info(H(f));
	assert_ptr_equal(ro_seen_f, H(f));
	assert_int_equal(ro_seen_kernel, 0);
	assert_int_equal(ki->readonly, 0);
	assert_int_equal(ki->vars.rw, 0);
	assert_int_equal(ki->vars.ro, 0);
	assert_int_equal(kparams_info(H(k))->readonly, 0x2);
	/* The prover's variable ids are kept with the verdict. */
	assert_int_equal(kparams_info(H(k))->vars.rw, 0x100000000000007ull);
	assert_int_equal(kparams_info(H(k))->vars.ro, 0x100000000000008ull);
	assert_int_equal(ro_seen_kernel, 1);
	/* The handle now belongs to another kernel: not seen until told. */
	snprintf(f->name, sizeof(f->name), "other");
	f->nparams = 2;
	f->off[1] = 8;
	assert_ptr_equal(kparams_info(H(f)), ki);
	kparams_invalidate();
	again = kparams_info(H(f));
	assert_ptr_not_equal(again, ki);
	assert_string_equal(again->name, "other");
	assert_int_equal(again->nparams, 2);
	assert_int_equal(again->readonly, 0x2);
	/* The old entry stays whole for launch records holding it. */
	assert_string_equal(ki->name, "saxpy");
	assert_int_equal(ki->nparams, 3);
	/* Learned once per generation: cached again. */
	assert_int_equal(f->func_name_calls, 2);
	assert_ptr_equal(kparams_info(H(f)), again);
	assert_int_equal(f->func_name_calls, 2);
	kparams_set_readonly(NULL);
}

/*
 * An extent prover for kernels named "ext3": parameters 0 and 1 reach
 * [0, 8) and [-4, 4) from their value, parameter 2 has none; parameter 3
 * claims a range no kernel has (dropped).
 */
static uint64_t fake_extents(const void *f, int is_kernel, const char *name,
			     int nparams, const uint32_t *size,
			     uint64_t *has_ext, struct kparams_extent *ext,
			     struct ptxr_prog **range, struct kparams_vars *vars)
{
	*range = NULL;
	*vars = (struct kparams_vars){ 0, 0 };
	(void)f;
	(void)is_kernel;
	(void)size;
	*has_ext = 0;
	if (strcmp(name, "ext3") != 0 || nparams != 4)
		return 0;
	ext[0] = (struct kparams_extent){ 0, 8 };
	ext[1] = (struct kparams_extent){ -4, 4 };
	ext[3] = (struct kparams_extent){ 0, (int64_t)1 << 50 };
	*has_ext = 0xb;
	return 0;
}

/* ext3(u64 *p0, u64 *p1, u64 *p2, u64 *p3): kp_add's range decision. */
static void test_extent_ranges(void **state)
{
	struct fixture *fx = *state;
	struct fake_fn *f = fake_new("ext3", false, 4, (size_t)0, (size_t)8,
				     (size_t)8, (size_t)8, (size_t)16,
				     (size_t)8, (size_t)24, (size_t)8);
	const struct kernel_info *ki;
	uint64_t p[4] = { A_BASE + 16, 0, 0, 0 };
	void *kp[] = { &p[0], &p[1], &p[2], &p[3] };
	struct access acc[8];
	unsigned flags;

	kparams_set_readonly(fake_extents);
	ki = kparams_info(H(f));
	kparams_set_readonly(NULL);
	assert_non_null(ki);
	/* The absurd extent of parameter 3 is not kept. */
	assert_int_equal(ki->has_extent, 0x3);
	assert_non_null(ki->ext);

	/* Inside the allocation: exactly [16, 24). */
	assert_int_equal(kparams_collect(fx->t, ki, kp, NULL, acc, 8, &flags),
			 1);
	assert_access(&acc[0], fx->a, A_BASE, ALLOC_DEVICE, 0);
	assert_int_equal(acc[0].off, 16);
	assert_int_equal(acc[0].len, 8);
	/* Ending exactly at the end is inside. */
	p[0] = A_BASE + 0x1000 - 8;
	kparams_collect(fx->t, ki, kp, NULL, acc, 8, &flags);
	assert_int_equal(acc[0].off, 0x1000 - 8);
	assert_int_equal(acc[0].len, 8);
	/* Straddling the end: the whole allocation. */
	p[0] = A_BASE + 0x1000 - 4;
	kparams_collect(fx->t, ki, kp, NULL, acc, 8, &flags);
	assert_int_equal(acc[0].alloc_id, fx->a);
	assert_int_equal(acc[0].off, 0);
	assert_int_equal(acc[0].len, 0);
	/* Reaching below the base (p1 reaches 4 bytes back): whole. */
	p[0] = 0;
	p[1] = A_BASE;
	assert_int_equal(kparams_collect(fx->t, ki, kp, NULL, acc, 8, &flags),
			 1);
	assert_int_equal(acc[0].len, 0);
	p[1] = A_BASE + 4;
	kparams_collect(fx->t, ki, kp, NULL, acc, 8, &flags);
	assert_int_equal(acc[0].off, 0);
	assert_int_equal(acc[0].len, 8);

	/* Two parameters with extents into one allocation: their hull. */
	p[0] = A_BASE + 64;
	p[1] = A_BASE + 8;
	assert_int_equal(kparams_collect(fx->t, ki, kp, NULL, acc, 8, &flags),
			 1);
	assert_int_equal(acc[0].param, 0);
	assert_int_equal(acc[0].off, 4);
	assert_int_equal(acc[0].len, 72 - 4);
	/* Another allocation keeps its own range. */
	p[1] = B_BASE + 8;
	assert_int_equal(kparams_collect(fx->t, ki, kp, NULL, acc, 8, &flags),
			 2);
	assert_int_equal(acc[0].off, 64);
	assert_int_equal(acc[0].len, 8);
	assert_int_equal(acc[1].alloc_id, fx->b);
	assert_int_equal(acc[1].off, 4);
	assert_int_equal(acc[1].len, 8);

	/*
	 * One parameter without an extent into it (scanned after those
	 * with one): whole.
	 */
	p[1] = 0;
	p[2] = A_BASE + 128;
	assert_int_equal(kparams_collect(fx->t, ki, kp, NULL, acc, 8, &flags),
			 1);
	assert_int_equal(acc[0].param, 0);
	assert_int_equal(acc[0].len, 0);
	/* And scanned before one with an extent: whole too. */
	p[0] = 0;
	p[1] = 0;
	p[2] = A_BASE + 128;
	p[3] = A_BASE + 256;	/* its extent was dropped: none */
	assert_int_equal(kparams_collect(fx->t, ki, kp, NULL, acc, 8, &flags),
			 1);
	assert_int_equal(acc[0].param, 2);
	assert_int_equal(acc[0].len, 0);
	p[2] = 0;
	p[1] = A_BASE + 512;
	kparams_collect(fx->t, ki, kp, NULL, acc, 8, &flags);
	assert_int_equal(acc[0].param, 1);
	assert_int_equal(acc[0].len, 0);

	/* The extra form decodes the same parameters the same way. */
	{
		unsigned char buf[32] = { 0 };

		put64(buf, 0, A_BASE + 32);
		assert_int_equal(collect_extra(fx, ki, buf, sizeof(buf), acc,
					       8, &flags), 1);
		assert_int_equal(acc[0].off, 32);
		assert_int_equal(acc[0].len, 8);
		/* Without a layout nothing is known per parameter: whole. */
		assert_int_equal(collect_extra(fx, NULL, buf, sizeof(buf),
					       acc, 8, &flags), 1);
		assert_int_equal(acc[0].len, 0);
	}
}

static void test_no_driver(void **state)
{
	struct fake_fn *f = fake_saxpy();
	const struct kernel_info *ki;

	(void)state;
	kparams_set_driver(NULL);
	ki = kparams_info(H(f));
	kparams_set_driver(&fake_driver);
	assert_non_null(ki);
	assert_int_equal(ki->nparams, -1);
	assert_string_equal(ki->name, "?");
	assert_int_equal(f->func_param_calls, 0);
}

/*
 * Many threads meet the same new functions at the same moment: each
 * function ends up with exactly one cache entry, the one every thread got.
 */
#define RACE_THREADS 8
#define RACE_FUNCS 3000
#define RACE_FIRST 1000		/* gen indexes [1000, 4000) */

struct race {
	pthread_barrier_t start;
	const struct kernel_info *got[RACE_THREADS][RACE_FUNCS];
};

struct race_arg {
	struct race *r;
	int id;
};

static void *race_thread(void *arg)
{
	struct race_arg *ra = arg;
	int i;

	pthread_barrier_wait(&ra->r->start);
	/* Half walk up, half walk down, from different starting points. */
	for (int k = 0; k < RACE_FUNCS; k++) {
		i = (ra->id * 397 + k) % RACE_FUNCS;
		if (ra->id & 1)
			i = RACE_FUNCS - 1 - i;
		ra->r->got[ra->id][i] = kparams_info(gen_handle(RACE_FIRST +
								 i));
	}
	return NULL;
}

static void check_gen_entry(const struct kernel_info *ki, int g)
{
	assert_non_null(ki);
	assert_ptr_equal(ki->func, gen_handle(g));
	assert_int_equal(ki->nparams, 1 + g % 7);
	assert_int_equal(ki->param_bytes, 8 * (1 + g % 7));
	assert_int_equal(ki->offset[ki->nparams - 1], 8 * (ki->nparams - 1));
	assert_string_equal(ki->name, gen_names[g]);
}

static void test_concurrent_first_use(void **state)
{
	struct race *r = calloc(1, sizeof(*r));
	struct race_arg ra[RACE_THREADS];
	pthread_t th[RACE_THREADS];
	int dup = 0;

	(void)state;
	assert_non_null(r);
	pthread_barrier_init(&r->start, NULL, RACE_THREADS);
	for (int t = 0; t < RACE_THREADS; t++) {
		ra[t] = (struct race_arg){ r, t };
		assert_int_equal(pthread_create(&th[t], NULL, race_thread,
						&ra[t]), 0);
	}
	for (int t = 0; t < RACE_THREADS; t++)
		pthread_join(th[t], NULL);
	pthread_barrier_destroy(&r->start);

	for (int i = 0; i < RACE_FUNCS; i++) {
		check_gen_entry(r->got[0][i], RACE_FIRST + i);
		for (int t = 1; t < RACE_THREADS; t++)
			assert_ptr_equal(r->got[t][i], r->got[0][i]);
		assert_ptr_equal(kparams_info(gen_handle(RACE_FIRST + i)),
				 r->got[0][i]);
		/* Learned at least once; losers' copies were dropped. */
		assert_true(gen_name_calls[RACE_FIRST + i] >= 1);
		dup += gen_name_calls[RACE_FIRST + i] > 1;
	}
	print_message("  %d of %d functions learned by more than one thread\n",
		      dup, RACE_FUNCS);
	free(r);
}

/* Far more functions than the first table holds: the chain takes them. */
static void test_cache_growth(void **state)
{
	const int first = 5000, n = 30000;
	const struct kernel_info **got;
	int calls;

	(void)state;
	got = calloc((size_t)n, sizeof(*got));
	assert_non_null(got);
	for (int i = 0; i < n; i++) {
		got[i] = kparams_info(gen_handle(first + i));
		check_gen_entry(got[i], first + i);
	}
	/* All still there, same entries, and the driver is not asked again. */
	calls = 0;
	for (int i = 0; i < n; i++)
		calls += gen_param_calls[first + i];
	for (int i = n - 1; i >= 0; i--)
		assert_ptr_equal(kparams_info(gen_handle(first + i)), got[i]);
	for (int i = 0; i < n; i++)
		calls -= gen_param_calls[first + i];
	assert_int_equal(calls, 0);
	for (int i = 0; i < n; i++)
		assert_int_equal(gen_name_calls[first + i], 1);
	free(got);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_extent_ranges, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_invalidate_relearns,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_layout_learned, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_span_filter, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_extra_variables, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_kernel_params_form, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_extra_form, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_opaque_handle, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_struct_with_two_pointers,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_unaligned_pointer_ignored,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_pointer_into_middle,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_dedup, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pointer_table, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_truncated, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_many_pointers, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_unknown_layout, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_extra_opaque, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_extra_shorter_than_layout,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_kernel_params_win, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_cukernel_fallback, setup,
						teardown),
		cmocka_unit_test_setup_teardown(
			test_no_fallback_after_first_param, setup, teardown),
		cmocka_unit_test_setup_teardown(test_zero_params, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_too_many_params, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_absurd_layout, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_name_cached_and_copied,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_no_driver, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_concurrent_first_use,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_cache_growth, setup,
						teardown),
	};

	for (int i = 0; i < GEN_MAX; i++)
		snprintf(gen_names[i], sizeof(gen_names[i]), "gen%d", i);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
