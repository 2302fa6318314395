/*
 * real.h - the real driver: libcuda.so.1, opened by kmux itself, and a
 * table of its entry points.
 *
 * Real functions come from dlopen("libcuda.so.1") through glibc's own dlsym
 * (found with dlvsym(RTLD_NEXT, ...)), never RTLD_DEFAULT, which would find
 * kmux's own exports.  The table is filled once, lazily, on the first driver
 * call or driver-symbol lookup, so processes that never touch CUDA never load
 * libcuda.  A missing libcuda leaves every slot NULL and wrappers return what
 * the program would see without kmux.
 */
#ifndef KMUX_REAL_H
#define KMUX_REAL_H

#include <stdatomic.h>

#include "cuda-internal.h"

struct kmux_real_table {
#define HOOK(name) __typeof__(&name) name;
#define HOOK_FORWARD(name) HOOK(name)
#define REAL(name) __typeof__(&name) name;
#include "hooks.def"
#undef HOOK
#undef HOOK_FORWARD
#undef REAL
};

extern struct kmux_real_table kmux_real;
extern atomic_int kmux_real_state;	/* 0 not yet, 1 loaded, -1 no libcuda */

#define REAL(name) (kmux_real.name)

/* Load libcuda.so.1 and fill kmux_real; idempotent and thread-safe. */
void real_init_slow(void);

static inline int real_ready(void)
{
	int s = atomic_load_explicit(&kmux_real_state, memory_order_acquire);

	if (__builtin_expect(s == 0, 0)) {
		real_init_slow();
		s = atomic_load_explicit(&kmux_real_state, memory_order_acquire);
	}
	return s > 0;
}

/* glibc's dlsym, never NULL after the first call. */
void *real_dlsym(void *handle, const char *name);

/* glibc's dlsym function itself (after a first real_dlsym call). */
void *real_dlsym_fn(void);

/* The handle of libcuda.so.1, or NULL. */
void *real_libcuda(void);

/* The hook table: exported wrappers and where their real pointers live. */
struct hook_entry {
	const char *name;
	void *hook;		/* kmux's wrapper */
	void **real;		/* slot in kmux_real */
	int forward;		/* HOOK_FORWARD: hand out the driver's own */
};

extern const struct hook_entry hook_table[];
extern const unsigned hook_table_len;

/* True when name is a driver API symbol: "cu" followed by an upper case letter. */
static inline int hook_name_is_driver(const char *name)
{
	return name && name[0] == 'c' && name[1] == 'u' &&
	       name[2] >= 'A' && name[2] <= 'Z';
}

/* Entry for an exact exported name, or NULL (binary search). */
const struct hook_entry *hook_table_find(const char *name);

/* Entry whose real function is at addr, or NULL (after real_init). */
const struct hook_entry *hook_table_find_real(const void *addr);

/* The wrapper to hand out for a driver symbol the program asked for. */
void *hook_resolve(const char *name, void *real_fn);

#endif
