/*
 * ptx-text.h - two helpers the PTX parser (ptx-readonly.c) and the range
 * analysis (ptx-range.c) share: growing an array, and reading an opcode's
 * dot-separated components.  Header-only, libc only.
 */
#ifndef KMUX_PTX_TEXT_H
#define KMUX_PTX_TEXT_H

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* Room for need elements of elem bytes in *p (capacity *cap): 0, -ENOMEM. */
static inline int ptx_grow(void **p, int *cap, int need, size_t elem)
{
	void *q;
	int nc;

	if (need <= *cap)
		return 0;
	nc = *cap ? *cap * 2 : 16;
	while (nc < need)
		nc *= 2;
	q = realloc(*p, (size_t)nc * elem);
	if (!q)
		return -ENOMEM;
	*p = q;
	*cap = nc;
	return 0;
}

/* Opcode op (n bytes) has the whole component w (".param" in ld.param.u64). */
static inline bool ptx_op_has(const char *op, size_t n, const char *w)
{
	size_t wl = strlen(w);

	for (size_t i = 0; i + wl <= n; i++)
		if (op[i] == '.' && memcmp(op + i, w, wl) == 0 &&
		    (i + wl == n || op[i + wl] == '.'))
			return true;
	return false;
}

#endif
