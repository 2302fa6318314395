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

/*
 * RTLD_NEXT means "after the object that called dlsym".  Forwarding it from
 * here would search after libkmux.so instead, breaking other interposers
 * (the sanitizers among them), so walk the link map after the caller.
 */
static void *dlsym_next(const void *caller, const char *name)
{
	struct link_map *lm = NULL;
	Dl_info info;

	if (!dladdr1(caller, &info, (void **)&lm, RTLD_DL_LINKMAP) || !lm)
		return NULL;
	for (struct link_map *l = lm->l_next; l; l = l->l_next) {
		struct link_map *owner = NULL;
		Dl_info si;
		void *sym = real_dlsym(l, name);

		if (!sym)
			continue;
		/* dlsym(l) also searches l's dependencies: keep l's own. */
		if (dladdr1(sym, &si, (void **)&owner, RTLD_DL_LINKMAP) &&
		    owner == l)
			return sym;
	}
	return NULL;
}

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
	return e->hook;
}

KMUX_EXPORT void *dlsym(void *handle, const char *name)
{
	void *fn;

	if (handle == RTLD_NEXT)
		fn = dlsym_next(__builtin_return_address(0), name);
	else
		fn = real_dlsym(handle, name);
	if (!hook_name_is_driver(name))
		return fn;
	return hook_resolve(name, fn);
}
