/*
 * dlsym.c - the dlsym() override: the second of kmux's three interposition
 * layers.
 *
 * cudart, PyTorch and friends dlopen("libcuda.so.1") and look the driver up
 * by name, so exporting cu* symbols alone does not see their calls.  Any
 * lookup of a driver name ("cu" + upper case letter; cudnn*, cublas* never
 * match) for which kmux has a wrapper gets the wrapper.  Everything else is
 * glibc's answer, unchanged.  Nothing here calls into CUDA.
 */
#include <dlfcn.h>
#include <link.h>
#include <stddef.h>

#include "compiler.h"
#include "real.h"

void *hook_resolve(const char *name, void *real_fn)
{
	const struct hook_entry *e = hook_table_find(name);

	if (!e || !real_fn)
		return real_fn;	/* not ours, or not in that handle at all */
	if (!real_ready())
		/* No driver (or loading it right now): never hand out kmux's
		 * own export for a symbol the driver would not have. */
		return real_fn == e->hook ? NULL : real_fn;
	if (!*e->real)
		return real_fn == e->hook ? NULL : real_fn;
	if (e->forward)
		return *e->real;	/* nothing of kmux's in it (hooks.def) */
	return e->hook;
}

/* Ordinary handles (not RTLD_NEXT): glibc's answer, hooked for driver names. */
KMUX_HIDDEN __attribute__((used)) void *kmux_dlsym_handle(void *handle,
							  const char *name)
{
	void *fn = real_dlsym(handle, name);

	if (!hook_name_is_driver(name))
		return fn;
	return hook_resolve(name, fn);
}

/* glibc's dlsym itself, for the RTLD_NEXT trampoline below. */
KMUX_HIDDEN __attribute__((used)) void *kmux_glibc_dlsym(void)
{
	real_dlsym(RTLD_DEFAULT, "dlsym");	/* resolves the pointer */
	return real_dlsym_fn();
}

#if defined(__x86_64__)
/*
 * RTLD_NEXT means "after the object that called dlsym": glibc finds that
 * object from its return address.  Calling glibc from C here would make the
 * caller libkmux.so and break other interposers (the sanitizers among them),
 * so RTLD_NEXT lookups jump into glibc with the caller's return address still
 * on the stack.  They need no hooking: the next object after the caller is
 * kmux itself when kmux's wrappers are what comes next.
 */
__attribute__((naked)) KMUX_EXPORT void *dlsym(void *handle KMUX_UNUSED,
						const char *name KMUX_UNUSED)
{
	__asm__ volatile(
		"cmpq $-1, %rdi\n\t"		/* RTLD_NEXT */
		"jne kmux_dlsym_handle\n\t"
		"pushq %rdi\n\t"
		"pushq %rsi\n\t"
		"subq $8, %rsp\n\t"		/* keep the ABI's 16-byte alignment */
		"call kmux_glibc_dlsym\n\t"
		"addq $8, %rsp\n\t"
		"popq %rsi\n\t"
		"popq %rdi\n\t"
		"jmp *%rax\n\t");
}
#else
/*
 * Elsewhere, walk the link map after the caller, asking each object by a
 * proper handle (dlopen RTLD_NOLOAD: link_map entries such as the vDSO's
 * are not valid dlsym handles) and keeping the first that defines name.
 */
static void *dlsym_next(const void *caller, const char *name)
{
	struct link_map *lm = NULL;
	Dl_info info;

	if (!dladdr1(caller, &info, (void **)&lm, RTLD_DL_LINKMAP) || !lm)
		return NULL;
	for (struct link_map *l = lm->l_next; l; l = l->l_next) {
		struct link_map *owner = NULL;
		void *h, *sym;
		Dl_info si;

		if (!l->l_name || !l->l_name[0])
			continue;
		h = dlopen(l->l_name, RTLD_LAZY | RTLD_NOLOAD);
		if (!h)
			continue;
		sym = real_dlsym(h, name);
		dlclose(h);
		/* dlsym(h) also searches h's dependencies: keep l's own. */
		if (sym && dladdr1(sym, &si, (void **)&owner, RTLD_DL_LINKMAP) &&
		    owner == l)
			return sym;
	}
	return NULL;
}

KMUX_EXPORT void *dlsym(void *handle, const char *name)
{
	if (handle == RTLD_NEXT)
		return dlsym_next(__builtin_return_address(0), name);
	return kmux_dlsym_handle(handle, name);
}
#endif
