/*
 * real.c - owns the connection to the real driver: glibc's dlsym, the
 * libcuda.so.1 handle, the table of real entry points, and the hook table
 * that maps exported names (and real addresses) to kmux's wrappers.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "compiler.h"
#include "kparams.h"
#include "log.h"
#include "ptx-table.h"
#include "real.h"

struct kmux_real_table kmux_real;
_Static_assert(sizeof(struct kmux_real_table) % sizeof(void *) == 0,
	       "the real table is an array of function pointers");
atomic_int kmux_real_state;

/* The wrappers, declared by cuda.h; listed here to build the table. */
#undef REAL
#define HOOK(name) { #name, (void *)name, (void **)&kmux_real.name, 0 },
#define HOOK_FORWARD(name) { #name, (void *)name, (void **)&kmux_real.name, 1 },
#define REAL(name)
const struct hook_entry hook_table[] = {
#include "hooks.def"
};
#undef HOOK
#undef HOOK_FORWARD
#undef REAL
#define REAL(name) (kmux_real.name)

const unsigned hook_table_len = KMUX_ARRAY_SIZE(hook_table);

static const char *const real_only_names[] = {
#define HOOK(name)
#define HOOK_FORWARD(name)
#undef REAL
#define REAL(name) #name,
#include "hooks.def"
#undef HOOK
#undef HOOK_FORWARD
#undef REAL
#define REAL(name) (kmux_real.name)
};

typedef void *(*dlsym_fn)(void *, const char *);
static _Atomic(dlsym_fn) glibc_dlsym;
static void *libcuda;

/* Sorted (real address, entry) pairs for cuGetProcAddress. */
struct real_addr {
	const void *addr;
	const struct hook_entry *entry;
};
static struct real_addr *real_addrs;
static unsigned real_addrs_len;

static pthread_once_t real_once = PTHREAD_ONCE_INIT;
/* Set while this thread loads libcuda: its constructors may call dlsym. */
static __thread int real_loading;

void *real_dlsym(void *handle, const char *name)
{
	dlsym_fn fn = atomic_load_explicit(&glibc_dlsym, memory_order_acquire);

	if (unlikely(!fn)) {
		/* glibc >= 2.34 moved dlsym into libc; try both versions. */
		fn = (dlsym_fn)dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
		if (!fn)
			fn = (dlsym_fn)dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5");
		if (!fn)
			return NULL;
		atomic_store_explicit(&glibc_dlsym, fn, memory_order_release);
	}
	return fn(handle, name);
}

void *real_dlsym_fn(void)
{
	return (void *)atomic_load_explicit(&glibc_dlsym, memory_order_acquire);
}

void *real_libcuda(void)
{
	return real_ready() ? libcuda : NULL;
}

static int real_addr_cmp(const void *a, const void *b)
{
	const struct real_addr *x = a, *y = b;

	if (x->addr == y->addr)
		return 0;
	return (uintptr_t)x->addr < (uintptr_t)y->addr ? -1 : 1;
}

static void real_build_addr_map(void)
{
	unsigned n = 0;

	real_addrs = calloc(hook_table_len, sizeof(*real_addrs));
	if (!real_addrs)
		return;	/* cuGetProcAddress falls back to names */
	for (unsigned i = 0; i < hook_table_len; i++) {
		if (!*hook_table[i].real)
			continue;
		real_addrs[n].addr = *hook_table[i].real;
		real_addrs[n].entry = &hook_table[i];
		n++;
	}
	qsort(real_addrs, n, sizeof(*real_addrs), real_addr_cmp);
	real_addrs_len = n;
}

static void real_load(void)
{
	const char *path = getenv("KMUX_REAL_LIBCUDA");
	/* The table is all HOOK slots, then all REAL slots, in hooks.def order. */
	void **slot = (void **)&kmux_real;
	unsigned i;

	if (!path || !*path)
		path = "libcuda.so.1";
	libcuda = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!libcuda) {
		log_info("cannot load %s: %s; passing through", path, dlerror());
		atomic_store_explicit(&kmux_real_state, -1, memory_order_release);
		return;
	}
	for (i = 0; i < hook_table_len; i++)
		*hook_table[i].real = real_dlsym(libcuda, hook_table[i].name);
	for (unsigned j = 0; j < KMUX_ARRAY_SIZE(real_only_names); j++)
		slot[i + j] = real_dlsym(libcuda, real_only_names[j]);
	real_build_addr_map();
	kparams_set_driver(&(struct kparams_driver){
		.func_get_param_info = kmux_real.cuFuncGetParamInfo,
		.kernel_get_param_info = kmux_real.cuKernelGetParamInfo,
		.func_get_name = kmux_real.cuFuncGetName,
		.kernel_get_name = kmux_real.cuKernelGetName,
	});
	ptxtab_set_driver(&(struct ptxtab_driver){
		.func_get_module = kmux_real.cuFuncGetModule,
		.kernel_get_library = kmux_real.cuKernelGetLibrary,
		.library_get_kernel = kmux_real.cuLibraryGetKernel,
		.kernel_get_function = kmux_real.cuKernelGetFunction,
	});
	if (ptxtab_on) {
		kparams_set_readonly(ptxtab_readonly);
		kparams_set_extra(ptxtab_symbol_alloc);
	}
	atomic_store_explicit(&kmux_real_state, 1, memory_order_release);
}

void real_init_slow(void)
{
	if (real_loading)
		return;	/* libcuda's own start-up asked for a symbol */
	real_loading = 1;
	pthread_once(&real_once, real_load);
	real_loading = 0;
}

static int hook_name_cmp(const void *key, const void *elem)
{
	return strcmp(key, ((const struct hook_entry *)elem)->name);
}

const struct hook_entry *hook_table_find(const char *name)
{
	if (!hook_name_is_driver(name))
		return NULL;
	return bsearch(name, hook_table, hook_table_len, sizeof(hook_table[0]),
		       hook_name_cmp);
}

const struct hook_entry *hook_table_find_real(const void *addr)
{
	unsigned lo = 0, hi = real_addrs_len;

	while (lo < hi) {
		unsigned mid = lo + (hi - lo) / 2;

		if (real_addrs[mid].addr == addr)
			return real_addrs[mid].entry;
		if ((uintptr_t)real_addrs[mid].addr < (uintptr_t)addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}
