/*
 * sim-module.c - modules and libraries: CPU shared objects that export a
 * simcuda_kernels[] table (see simcuda.h), loaded with cuModuleLoad /
 * cuModuleLoadData(Ex) / cuLibraryLoadFromFile / cuLibraryLoadData, and the
 * CUfunction and CUkernel handles for their entries with their names,
 * parameter layout and attributes.
 *
 * cuModuleLoadData, cuModuleLoadDataEx and cuLibraryLoadData accept an
 * "image" that is the module's path as a NUL-terminated string, or PTX
 * text with a line "// simcuda-module: PATH" (for kmux's PTX analysis);
 * anything else (a real cubin or fatbin) is CUDA_ERROR_INVALID_IMAGE.
 *
 * A CUfunction and a CUkernel are both a struct sim_func, told apart by
 * their magic (and their registered handle type), so a CUkernel cast to
 * CUfunction launches as the real driver allows.  A module belongs to the
 * context it was loaded in; a library belongs to no context, and its
 * CUkernels map to one CUfunction valid in every context.
 */
#include <dlfcn.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sim.h"

#define MAX_KERNELS 4096
#define MAX_PARAM_SIZE 4096
#define MAX_ARGS_BYTES 32764	/* the driver's kernel parameter limit */

static size_t param_align(size_t size)
{
	if (size >= 8)
		return 8;
	if (size >= 4)
		return 4;
	if (size >= 2)
		return 2;
	return 1;
}

/* Offsets of f's parameters; -1 when the table entry is unusable. */
static int layout(struct sim_func *f)
{
	const struct sim_kernel *k = f->k;
	size_t off = 0;
	unsigned i;

	if (k->fn == NULL || k->nparams > SIM_MAX_PARAMS)
		return -1;
	for (i = 0; i < k->nparams; i++) {
		size_t sz = k->param_size[i], a = param_align(sz);

		if (sz == 0 || sz > MAX_PARAM_SIZE)
			return -1;
		off = (off + a - 1) / a * a;
		f->offset[i] = off;
		off += sz;
	}
	if (off > MAX_ARGS_BYTES)
		return -1;
	f->args_len = off;
	return 0;
}

/*
 * Load the module at path (no lock held: dlopen runs the module's
 * constructors).  On success *out is complete but not registered.
 */
static CUresult module_open(const char *path, struct sim_module **out)
{
	const struct sim_kernel *table;
	const struct sim_var *globals;
	struct sim_module *m;
	unsigned n, i, ng = 0;
	CUresult err;
	void *dl;

	if (path == NULL || path[0] == '\0')
		return CUDA_ERROR_INVALID_VALUE;
	if (access(path, R_OK) != 0)
		return CUDA_ERROR_FILE_NOT_FOUND;
	dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (dl == NULL) {
		sim_warn("cannot load module %s: %s", path, dlerror());
		return CUDA_ERROR_INVALID_IMAGE;
	}
	globals = dlsym(dl, SIMCUDA_VARS_SYMBOL);
	table = dlsym(dl, SIMCUDA_KERNELS_SYMBOL);
	if (table == NULL) {
		sim_warn("module %s has no %s table", path,
			 SIMCUDA_KERNELS_SYMBOL);
		err = CUDA_ERROR_INVALID_IMAGE;
		goto err_close;
	}
	for (n = 0; n < MAX_KERNELS && table[n].name != NULL; n++)
		;
	if (n == MAX_KERNELS) {
		sim_warn("module %s: kernel table not terminated", path);
		err = CUDA_ERROR_INVALID_IMAGE;
		goto err_close;
	}
	for (; globals != NULL && ng < MAX_KERNELS && globals[ng].name != NULL;
	     ng++) {
		if (globals[ng].bytes == 0) {
			sim_warn("module %s: variable %s has no size", path,
				 globals[ng].name);
			err = CUDA_ERROR_INVALID_IMAGE;
			goto err_close;
		}
	}
	if (ng == MAX_KERNELS) {
		sim_warn("module %s: variable table not terminated", path);
		err = CUDA_ERROR_INVALID_IMAGE;
		goto err_close;
	}
	m = calloc(1, sizeof(*m));
	if (m == NULL) {
		err = CUDA_ERROR_OUT_OF_MEMORY;
		goto err_close;
	}
	m->globals = globals;
	m->nglobals = ng;
	sim_list_init(&m->link);
	m->dl = dl;
	m->table = table;
	m->nfuncs = n;
	m->path = strdup(path);
	m->funcs = calloc(n ? n : 1, sizeof(*m->funcs));
	if (m->path == NULL || m->funcs == NULL) {
		err = CUDA_ERROR_OUT_OF_MEMORY;
		goto err_free;
	}
	for (i = 0; i < n; i++) {
		struct sim_func *f = &m->funcs[i];

		f->magic = SIM_MAGIC_FUNC;
		f->k = &table[i];
		f->mod = m;
		f->max_dyn_shmem = 48 << 10;
		if (layout(f) < 0) {
			sim_warn("module %s: kernel %s has a bad entry", path,
				 table[i].name);
			err = CUDA_ERROR_INVALID_IMAGE;
			goto err_free;
		}
	}
	*out = m;
	return CUDA_SUCCESS;

err_free:
	free(m->funcs);
	free(m->path);
	free(m);
err_close:
	dlclose(dl);
	return err;
}

/* Lock held.  Publish m's handles; -1 on ENOMEM (nothing published). */
static int module_register(struct sim_module *m)
{
	unsigned i;

	if (sim_handle_add(m, SIM_H_MODULE) < 0)
		return -1;
	for (i = 0; i < m->nfuncs; i++) {
		if (sim_handle_add(&m->funcs[i], SIM_H_FUNC) < 0) {
			while (i-- > 0)
				sim_handle_del(&m->funcs[i]);
			sim_handle_del(m);
			return -1;
		}
	}
	return 0;
}

/* Lock held for registered modules; unregisters, unloads and frees. */
static void module_close(struct sim_module *m, int registered)
{
	unsigned i;

	if (registered) {
		for (i = 0; i < m->nfuncs; i++)
			sim_handle_del(&m->funcs[i]);
		sim_handle_del(m);
		sim_list_del(&m->link);
	}
	dlclose(m->dl);
	free(m->gaddr);
	free(m->funcs);
	free(m->path);
	free(m);
}

/*
 * Lock held.  Allocate m's variables in c, zeroed, as loading a module
 * does; -1 when out of memory (none is left allocated).
 */
static int module_globals_alloc(struct sim_module *m, struct sim_ctx *c)
{
	unsigned i;

	if (m->nglobals == 0)
		return 0;
	m->gaddr = calloc(m->nglobals, sizeof(*m->gaddr));
	if (m->gaddr == NULL)
		return -1;
	for (i = 0; i < m->nglobals; i++) {
		if (sim_mem_alloc_locked(c, m->globals[i].bytes,
					 &m->gaddr[i]) != CUDA_SUCCESS) {
			while (i-- > 0)
				sim_mem_free_locked(m->gaddr[i], 1);
			free(m->gaddr);
			m->gaddr = NULL;
			return -1;
		}
	}
	return 0;
}

/* Lock held.  Free m's variables (an unload frees them, unrecorded). */
static void module_globals_free(struct sim_module *m)
{
	for (unsigned i = 0; m->gaddr != NULL && i < m->nglobals; i++)
		if (sim_alloc_find(m->gaddr[i]) != NULL)
			sim_mem_free_locked(m->gaddr[i], 1);
	free(m->gaddr);
	m->gaddr = NULL;
}

CUdeviceptr sim_module_var(const struct sim_module *m, const char *name,
			      size_t *bytes)
{
	for (unsigned i = 0; m != NULL && m->gaddr != NULL && name != NULL &&
			     i < m->nglobals; i++) {
		if (strcmp(m->globals[i].name, name) == 0) {
			if (bytes != NULL)
				*bytes = m->globals[i].bytes;
			return m->gaddr[i];
		}
	}
	return 0;
}

#define PTX_MODULE_TAG "// simcuda-module: "

/*
 * PTX text naming its simulated module on a line "// simcuda-module: PATH"
 * (so that kmux's PTX analysis reads real PTX while simcuda runs the CPU
 * kernels): the path, copied into buf, or NULL.
 */
static const char *image_ptx_path(const char *s, char *buf, size_t len)
{
	const char *t = strstr(s, PTX_MODULE_TAG), *e;

	if (t == NULL || strstr(s, ".entry") == NULL)
		return NULL;
	t += strlen(PTX_MODULE_TAG);
	e = strchr(t, '\n');
	if (e == NULL || e == t || (size_t)(e - t) >= len)
		return NULL;
	memcpy(buf, t, (size_t)(e - t));
	buf[e - t] = '\0';
	return buf;
}

/*
 * An image for cuModuleLoadData: a printable NUL-terminated path, or PTX
 * text with a simcuda-module line (buf holds the path then).  A real
 * cubin/fatbin starts with binary magic and is refused at its first byte.
 */
static const char *image_path(const void *image, char *buf, size_t len)
{
	const char *s = image;
	size_t i;

	if (s == NULL)
		return NULL;
	if (s[0] == '/' && s[1] == '/')
		return image_ptx_path(s, buf, len);
	for (i = 0; i < PATH_MAX; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c == '\0')
			return i > 0 ? s : NULL;
		if (c < 0x20 || c >= 0x7f)
			return NULL;
	}
	return NULL;
}

static CUresult module_load(CUmodule *module, const char *path)
{
	struct sim_module *m;
	struct sim_ctx *c;
	CUresult err;

	if (module == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	sim_lock();
	err = sim_ctx_get(&c);
	sim_unlock();
	if (err != CUDA_SUCCESS)
		return err;
	err = module_open(path, &m);
	if (err != CUDA_SUCCESS)
		return err;
	sim_lock();
	if (!sim_ctx_usable(c)) {
		err = CUDA_ERROR_INVALID_CONTEXT;
		goto err_close;
	}
	if (module_globals_alloc(m, c) < 0) {
		err = CUDA_ERROR_OUT_OF_MEMORY;
		goto err_close;
	}
	if (module_register(m) < 0) {
		module_globals_free(m);
		err = CUDA_ERROR_OUT_OF_MEMORY;
		goto err_close;
	}
	m->ctx = c;
	sim_list_add_tail(&c->modules, &m->link);
	*module = (CUmodule)m;
	sim_unlock();
	return CUDA_SUCCESS;

err_close:
	sim_unlock();
	module_close(m, 0);
	return err;
}

SIM_API CUresult cuModuleLoad(CUmodule *module, const char *fname)
{
	return module_load(module, fname);
}

SIM_API CUresult cuModuleLoadData(CUmodule *module, const void *image)
{
	char buf[PATH_MAX];
	const char *path = image_path(image, buf, sizeof(buf));

	if (path == NULL)
		return CUDA_ERROR_INVALID_IMAGE;
	return module_load(module, path);
}

SIM_API CUresult cuModuleLoadDataEx(CUmodule *module, const void *image,
				    unsigned int numOptions,
				    CUjit_option *options, void **optionValues)
{
	char buf[PATH_MAX];
	const char *path = image_path(image, buf, sizeof(buf));

	/* JIT options have nothing to act on here. */
	(void)numOptions;
	(void)options;
	(void)optionValues;
	if (path == NULL)
		return CUDA_ERROR_INVALID_IMAGE;
	return module_load(module, path);
}

SIM_API CUresult cuModuleUnload(CUmodule hmod)
{
	struct sim_module *m = (struct sim_module *)hmod;
	CUresult err = sim_check_init();
	unsigned i;

	if (err != CUDA_SUCCESS)
		return err;
	sim_lock();
	if (!sim_handle_ok(m, SIM_H_MODULE) || m->ctx == NULL)
		goto err_handle;
	/* Queued launches may still call into it; look again after. */
	sim_ctx_drain(m->ctx);
	if (!sim_handle_ok(m, SIM_H_MODULE))
		goto err_handle;
	for (i = 0; i < m->nfuncs; i++)
		sim_handle_del(&m->funcs[i]);
	sim_handle_del(m);
	sim_list_del(&m->link);
	module_globals_free(m);
	sim_unlock();
	/* dlclose outside the lock: module destructors may run. */
	module_close(m, 0);
	return CUDA_SUCCESS;

err_handle:
	sim_unlock();
	return CUDA_ERROR_INVALID_HANDLE;
}

void sim_module_free_all(struct sim_ctx *c)
{
	while (!sim_list_empty(&c->modules)) {
		struct sim_module *m = sim_container_of(c->modules.next,
							struct sim_module,
							link);

		module_globals_free(m);
		module_close(m, 1);
	}
}

static struct sim_func *find_func(struct sim_module *m, const char *name)
{
	unsigned i;

	for (i = 0; i < m->nfuncs; i++)
		if (strcmp(m->funcs[i].k->name, name) == 0)
			return &m->funcs[i];
	return NULL;
}

SIM_API CUresult cuModuleGetFunction(CUfunction *hfunc, CUmodule hmod,
				     const char *name)
{
	struct sim_module *m = (struct sim_module *)hmod;
	struct sim_func *f;
	CUresult err = sim_check_init();

	if (err != CUDA_SUCCESS)
		return err;
	if (hfunc == NULL || name == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	sim_lock();
	if (!sim_handle_ok(m, SIM_H_MODULE)) {
		err = CUDA_ERROR_INVALID_HANDLE;
	} else {
		f = find_func(m, name);
		if (f == NULL)
			err = CUDA_ERROR_NOT_FOUND;
		else
			*hfunc = (CUfunction)f;
	}
	sim_unlock();
	return err;
}

SIM_API CUresult cuModuleGetGlobal_v2(CUdeviceptr *dptr, size_t *bytes,
				      CUmodule hmod, const char *name)
{
	struct sim_module *m = (struct sim_module *)hmod;
	CUdeviceptr p;
	size_t n = 0;
	CUresult err = sim_check_init();

	if (err != CUDA_SUCCESS)
		return err;
	if (name == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	sim_lock();
	if (!sim_handle_ok(m, SIM_H_MODULE)) {
		err = CUDA_ERROR_INVALID_HANDLE;
	} else if ((p = sim_module_var(m, name, &n)) == 0) {
		err = CUDA_ERROR_NOT_FOUND;
	} else {
		if (dptr != NULL)
			*dptr = p;
		if (bytes != NULL)
			*bytes = n;
	}
	sim_unlock();
	return err;
}

SIM_API CUresult cuModuleGetFunctionCount(unsigned int *count, CUmodule mod)
{
	struct sim_module *m = (struct sim_module *)mod;
	CUresult err = sim_check_init();

	if (err != CUDA_SUCCESS)
		return err;
	if (count == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	sim_lock();
	if (!sim_handle_ok(m, SIM_H_MODULE))
		err = CUDA_ERROR_INVALID_HANDLE;
	else
		*count = m->nfuncs;
	sim_unlock();
	return err;
}

SIM_API CUresult cuModuleEnumerateFunctions(CUfunction *functions,
					    unsigned int numFunctions,
					    CUmodule mod)
{
	struct sim_module *m = (struct sim_module *)mod;
	CUresult err = sim_check_init();
	unsigned i;

	if (err != CUDA_SUCCESS)
		return err;
	if (functions == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	sim_lock();
	if (!sim_handle_ok(m, SIM_H_MODULE))
		err = CUDA_ERROR_INVALID_HANDLE;
	else
		for (i = 0; i < numFunctions && i < m->nfuncs; i++)
			functions[i] = (CUfunction)&m->funcs[i];
	sim_unlock();
	return err;
}

/* ---- functions and kernels ----------------------------------------------- */

struct sim_func *sim_func_resolve(CUfunction f)
{
	struct sim_func *p = (struct sim_func *)f;

	if (sim_handle_ok(p, SIM_H_FUNC) && p->magic == SIM_MAGIC_FUNC)
		return p;
	if (sim_handle_ok(p, SIM_H_KERNEL) && p->magic == SIM_MAGIC_KERNEL)
		return p->func;
	return NULL;
}

static CUresult get_name(const char **name, void *h)
{
	struct sim_func *f;
	CUresult err = sim_check_init();

	if (err != CUDA_SUCCESS)
		return err;
	if (name == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	sim_lock();
	f = sim_func_resolve((CUfunction)h);
	if (f == NULL)
		err = CUDA_ERROR_INVALID_HANDLE;
	else
		*name = f->k->name;
	sim_unlock();
	return err;
}

SIM_API CUresult cuFuncGetName(const char **name, CUfunction hfunc)
{
	return get_name(name, hfunc);
}

SIM_API CUresult cuKernelGetName(const char **name, CUkernel hfunc)
{
	return get_name(name, hfunc);
}

static CUresult param_info(void *h, size_t idx, size_t *off, size_t *size)
{
	struct sim_func *f;
	CUresult err = sim_check_init();

	if (err != CUDA_SUCCESS)
		return err;
	sim_lock();
	f = sim_func_resolve((CUfunction)h);
	if (f == NULL) {
		err = CUDA_ERROR_INVALID_HANDLE;
	} else if (sim.no_param_info[0] &&
		   strcmp(f->k->name, sim.no_param_info) == 0) {
		err = CUDA_ERROR_NOT_SUPPORTED;
	} else if (idx >= f->k->nparams) {
		err = CUDA_ERROR_INVALID_VALUE;
	} else {
		if (off != NULL)
			*off = f->offset[idx];
		if (size != NULL)
			*size = f->k->param_size[idx];
	}
	sim_unlock();
	return err;
}

SIM_API CUresult cuFuncGetParamInfo(CUfunction func, size_t paramIndex,
				    size_t *paramOffset, size_t *paramSize)
{
	return param_info(func, paramIndex, paramOffset, paramSize);
}

SIM_API CUresult cuKernelGetParamInfo(CUkernel kernel, size_t paramIndex,
				      size_t *paramOffset, size_t *paramSize)
{
	return param_info(kernel, paramIndex, paramOffset, paramSize);
}

static CUresult func_attribute(int *pi, CUfunction_attribute attrib, void *h)
{
	struct sim_func *f;
	CUresult err = sim_check_init();

	if (err != CUDA_SUCCESS)
		return err;
	if (pi == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	sim_lock();
	f = sim_func_resolve((CUfunction)h);
	if (f == NULL) {
		err = CUDA_ERROR_INVALID_HANDLE;
		goto out;
	}
	switch (attrib) {
	case CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK:
		*pi = 1024;
		break;
	case CU_FUNC_ATTRIBUTE_NUM_REGS:
		*pi = 32;
		break;
	case CU_FUNC_ATTRIBUTE_PTX_VERSION:
	case CU_FUNC_ATTRIBUTE_BINARY_VERSION:
		*pi = 90;
		break;
	case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES:
		*pi = f->max_dyn_shmem;
		break;
	case CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES:
	case CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES:
	case CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES:
	case CU_FUNC_ATTRIBUTE_CACHE_MODE_CA:
		*pi = 0;
		break;
	default:
		if ((int)attrib < 0 || attrib >= CU_FUNC_ATTRIBUTE_MAX)
			err = CUDA_ERROR_INVALID_VALUE;
		else
			*pi = 0;
		break;
	}
out:
	sim_unlock();
	return err;
}

SIM_API CUresult cuFuncGetAttribute(int *pi, CUfunction_attribute attrib,
				    CUfunction hfunc)
{
	return func_attribute(pi, attrib, hfunc);
}

SIM_API CUresult cuKernelGetAttribute(int *pi, CUfunction_attribute attrib,
				      CUkernel kernel, CUdevice dev)
{
	CUresult err = sim_device_check(dev);

	if (err != CUDA_SUCCESS)
		return err;
	return func_attribute(pi, attrib, kernel);
}

/* Setting attributes: remembered where reported, otherwise accepted. */
static CUresult func_set_attribute(void *h, CUfunction_attribute attrib,
				   int value)
{
	struct sim_func *f;
	CUresult err = sim_check_init();

	if (err != CUDA_SUCCESS)
		return err;
	sim_lock();
	f = sim_func_resolve((CUfunction)h);
	if (f == NULL)
		err = CUDA_ERROR_INVALID_HANDLE;
	else if (attrib == CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES)
		f->max_dyn_shmem = value;
	sim_unlock();
	return err;
}

SIM_API CUresult cuFuncSetAttribute(CUfunction hfunc,
				    CUfunction_attribute attrib, int value)
{
	return func_set_attribute(hfunc, attrib, value);
}

SIM_API CUresult cuKernelSetAttribute(CUfunction_attribute attrib, int val,
				      CUkernel kernel, CUdevice dev)
{
	CUresult err = sim_device_check(dev);

	if (err != CUDA_SUCCESS)
		return err;
	return func_set_attribute(kernel, attrib, val);
}

SIM_API CUresult cuFuncSetCacheConfig(CUfunction hfunc, CUfunc_cache config)
{
	(void)config;
	return func_set_attribute(hfunc, CU_FUNC_ATTRIBUTE_CACHE_MODE_CA, 0);
}

SIM_API CUresult cuFuncGetModule(CUmodule *hmod, CUfunction hfunc)
{
	struct sim_func *f;
	CUresult err = sim_check_init();

	if (err != CUDA_SUCCESS)
		return err;
	if (hmod == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	sim_lock();
	f = sim_func_resolve(hfunc);
	if (f == NULL)
		err = CUDA_ERROR_INVALID_HANDLE;
	else
		*hmod = (CUmodule)f->mod;
	sim_unlock();
	return err;
}

SIM_API CUresult cuFuncIsLoaded(CUfunctionLoadingState *state,
				CUfunction function)
{
	CUresult err = sim_check_init();

	if (err != CUDA_SUCCESS)
		return err;
	if (state == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	sim_lock();
	if (sim_func_resolve(function) == NULL)
		err = CUDA_ERROR_INVALID_HANDLE;
	else
		*state = CU_FUNCTION_LOADING_STATE_LOADED;
	sim_unlock();
	return err;
}

SIM_API CUresult cuFuncLoad(CUfunction function)
{
	CUresult err = sim_check_init();

	if (err != CUDA_SUCCESS)
		return err;
	sim_lock();
	if (sim_func_resolve(function) == NULL)
		err = CUDA_ERROR_INVALID_HANDLE;
	sim_unlock();
	return err;
}

/* ---- libraries ----------------------------------------------------------- */

static CUresult library_load(CUlibrary *library, const char *path)
{
	struct sim_library *lib;
	struct sim_module *m;
	CUresult err = sim_check_init();
	unsigned i;

	if (err != CUDA_SUCCESS)
		return err;
	if (library == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	err = module_open(path, &m);
	if (err != CUDA_SUCCESS)
		return err;
	lib = calloc(1, sizeof(*lib));
	if (lib == NULL)
		goto err_module;
	lib->mod = m;
	lib->kernels = calloc(m->nfuncs ? m->nfuncs : 1, sizeof(*lib->kernels));
	if (lib->kernels == NULL)
		goto err_lib;
	for (i = 0; i < m->nfuncs; i++) {
		lib->kernels[i] = m->funcs[i];
		lib->kernels[i].magic = SIM_MAGIC_KERNEL;
		lib->kernels[i].func = &m->funcs[i];
	}
	sim_lock();
	if (module_register(m) < 0 || sim_handle_add(lib, SIM_H_LIBRARY) < 0)
		goto err_unlock;
	for (i = 0; i < m->nfuncs; i++) {
		if (sim_handle_add(&lib->kernels[i], SIM_H_KERNEL) < 0) {
			while (i-- > 0)
				sim_handle_del(&lib->kernels[i]);
			sim_handle_del(lib);
			goto err_unlock;
		}
	}
	sim_list_add_tail(&sim.libraries, &lib->link);
	*library = (CUlibrary)lib;
	sim_unlock();
	return CUDA_SUCCESS;

err_unlock:
	if (sim_handle_ok(m, SIM_H_MODULE)) {
		for (i = 0; i < m->nfuncs; i++)
			sim_handle_del(&m->funcs[i]);
		sim_handle_del(m);
	}
	sim_unlock();
	free(lib->kernels);
err_lib:
	free(lib);
err_module:
	module_close(m, 0);
	return CUDA_ERROR_OUT_OF_MEMORY;
}

SIM_API CUresult cuLibraryLoadFromFile(CUlibrary *library,
				       const char *fileName,
				       CUjit_option *jitOptions,
				       void **jitOptionsValues,
				       unsigned int numJitOptions,
				       CUlibraryOption *libraryOptions,
				       void **libraryOptionValues,
				       unsigned int numLibraryOptions)
{
	(void)jitOptions;
	(void)jitOptionsValues;
	(void)numJitOptions;
	(void)libraryOptions;
	(void)libraryOptionValues;
	(void)numLibraryOptions;
	return library_load(library, fileName);
}

SIM_API CUresult cuLibraryLoadData(CUlibrary *library, const void *code,
				   CUjit_option *jitOptions,
				   void **jitOptionsValues,
				   unsigned int numJitOptions,
				   CUlibraryOption *libraryOptions,
				   void **libraryOptionValues,
				   unsigned int numLibraryOptions)
{
	char buf[PATH_MAX];
	const char *path = image_path(code, buf, sizeof(buf));

	(void)jitOptions;
	(void)jitOptionsValues;
	(void)numJitOptions;
	(void)libraryOptions;
	(void)libraryOptionValues;
	(void)numLibraryOptions;
	if (path == NULL)
		return CUDA_ERROR_INVALID_IMAGE;
	return library_load(library, path);
}

/* Lock held.  Unregister lib and its module (it is then unreachable). */
static void library_unpublish(struct sim_library *lib)
{
	unsigned i;

	for (i = 0; i < lib->mod->nfuncs; i++) {
		sim_handle_del(&lib->kernels[i]);
		sim_handle_del(&lib->mod->funcs[i]);
	}
	sim_handle_del(lib->mod);
	sim_handle_del(lib);
	sim_list_del(&lib->link);
}

static void library_free(struct sim_library *lib)
{
	module_close(lib->mod, 0);
	free(lib->kernels);
	free(lib);
}

SIM_API CUresult cuLibraryUnload(CUlibrary library)
{
	struct sim_library *lib = (struct sim_library *)library;
	struct sim_list *l;
	CUresult err = sim_check_init();

	if (err != CUDA_SUCCESS)
		return err;
	sim_lock();
	if (!sim_handle_ok(lib, SIM_H_LIBRARY)) {
		sim_unlock();
		return CUDA_ERROR_INVALID_HANDLE;
	}
	library_unpublish(lib);
	/* Its kernels may be queued in any context. */
	for (l = sim.ctxs.next; l != &sim.ctxs; l = l->next) {
		struct sim_ctx *c = sim_container_of(l, struct sim_ctx, link);

		if (c->active)
			sim_ctx_drain(c);
	}
	sim_unlock();
	library_free(lib);
	return CUDA_SUCCESS;
}

void sim_library_fini(void)
{
	while (!sim_list_empty(&sim.libraries)) {
		struct sim_library *lib = sim_container_of(
			sim.libraries.next, struct sim_library, link);

		library_unpublish(lib);
		library_free(lib);
	}
}

SIM_API CUresult cuLibraryGetKernel(CUkernel *pKernel, CUlibrary library,
				    const char *name)
{
	struct sim_library *lib = (struct sim_library *)library;
	struct sim_func *f;
	CUresult err = sim_check_init();

	if (err != CUDA_SUCCESS)
		return err;
	if (pKernel == NULL || name == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	sim_lock();
	if (!sim_handle_ok(lib, SIM_H_LIBRARY)) {
		err = CUDA_ERROR_INVALID_HANDLE;
	} else {
		f = find_func(lib->mod, name);
		if (f == NULL)
			err = CUDA_ERROR_NOT_FOUND;
		else
			*pKernel = (CUkernel)&lib->kernels[f - lib->mod->funcs];
	}
	sim_unlock();
	return err;
}

SIM_API CUresult cuLibraryGetModule(CUmodule *pMod, CUlibrary library)
{
	struct sim_library *lib = (struct sim_library *)library;
	CUresult err = sim_check_init();

	if (err != CUDA_SUCCESS)
		return err;
	if (pMod == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	sim_lock();
	if (!sim_handle_ok(lib, SIM_H_LIBRARY))
		err = CUDA_ERROR_INVALID_HANDLE;
	else
		*pMod = (CUmodule)lib->mod;
	sim_unlock();
	return err;
}

SIM_API CUresult cuLibraryGetKernelCount(unsigned int *count, CUlibrary lib)
{
	struct sim_library *l = (struct sim_library *)lib;
	CUresult err = sim_check_init();

	if (err != CUDA_SUCCESS)
		return err;
	if (count == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	sim_lock();
	if (!sim_handle_ok(l, SIM_H_LIBRARY))
		err = CUDA_ERROR_INVALID_HANDLE;
	else
		*count = l->mod->nfuncs;
	sim_unlock();
	return err;
}

SIM_API CUresult cuLibraryEnumerateKernels(CUkernel *kernels,
					   unsigned int numKernels,
					   CUlibrary lib)
{
	struct sim_library *l = (struct sim_library *)lib;
	CUresult err = sim_check_init();
	unsigned i;

	if (err != CUDA_SUCCESS)
		return err;
	if (kernels == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	sim_lock();
	if (!sim_handle_ok(l, SIM_H_LIBRARY))
		err = CUDA_ERROR_INVALID_HANDLE;
	else
		for (i = 0; i < numKernels && i < l->mod->nfuncs; i++)
			kernels[i] = (CUkernel)&l->kernels[i];
	sim_unlock();
	return err;
}

SIM_API CUresult cuKernelGetFunction(CUfunction *pFunc, CUkernel kernel)
{
	struct sim_func *k = (struct sim_func *)kernel;
	struct sim_ctx *c;
	CUresult err;

	if (pFunc == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	sim_lock();
	err = sim_ctx_get(&c);
	if (err == CUDA_SUCCESS && !sim_handle_ok(k, SIM_H_KERNEL))
		err = CUDA_ERROR_INVALID_HANDLE;
	if (err == CUDA_SUCCESS)
		*pFunc = (CUfunction)k->func;
	sim_unlock();
	return err;
}

SIM_API CUresult cuKernelGetLibrary(CUlibrary *pLib, CUkernel kernel)
{
	struct sim_func *k = (struct sim_func *)kernel;
	struct sim_list *l;
	CUresult err = sim_check_init();

	if (err != CUDA_SUCCESS)
		return err;
	if (pLib == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	sim_lock();
	err = CUDA_ERROR_INVALID_HANDLE;
	if (sim_handle_ok(k, SIM_H_KERNEL)) {
		for (l = sim.libraries.next; l != &sim.libraries; l = l->next) {
			struct sim_library *lib = sim_container_of(
				l, struct sim_library, link);

			if (lib->mod == k->mod) {
				*pLib = (CUlibrary)lib;
				err = CUDA_SUCCESS;
				break;
			}
		}
	}
	sim_unlock();
	return err;
}
