/*
 * demangle.c - turns mangled C++ kernel names into readable ones through
 * the C++ runtime's __cxa_demangle (looked up once, with dlopen).
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "demangle.h"

typedef char *(*cxa_demangle_fn)(const char *, char *, size_t *, int *);

static cxa_demangle_fn cxa_demangle;
static pthread_once_t demangle_once = PTHREAD_ONCE_INIT;

static void demangle_load(void)
{
	void *h = dlopen("libstdc++.so.6", RTLD_LAZY | RTLD_LOCAL);

	if (h)
		cxa_demangle = (cxa_demangle_fn)dlsym(h, "__cxa_demangle");
	/* h stays open: the function lives in it. */
}

char *demangle_dup(const char *name)
{
	char *out;
	int status = -1;

	if (strncmp(name, "_Z", 2) == 0) {
		pthread_once(&demangle_once, demangle_load);
		if (cxa_demangle) {
			out = cxa_demangle(name, NULL, NULL, &status);
			if (out && status == 0)
				return out;
			free(out);
		}
	}
	return strdup(name);
}
