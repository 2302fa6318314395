/*
 * fuzz-ptx.c - libFuzzer harness for the PTX analysis and the fatbin walk
 * (src/preload/ptx-readonly.c): module images are untrusted bytes.
 *
 * Invariants checked beyond memory safety: every entry has a name and a
 * parameter count, and no bit at or past the count is proven read-only.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ptx-readonly.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ptxro_image_stats st = { 0 };
	struct ptxro_module m;

	ptxro_module_init(&m);
	(void)ptxro_image_size(data, size);
	/* Never follow a wrapper's pointer: it points anywhere. */
	if (ptxro_scan_image(data, size, 0, &m, &st) == 0) {
		for (int i = 0; i < m.n; i++) {
			const struct ptxro_entry *e = &m.e[i];

			if (!e->name || e->nparams < 0)
				abort();
			if (e->nparams < 64 &&
			    (e->readonly >> e->nparams) != 0)
				abort();
		}
	}
	ptxro_module_release(&m);
	/* The same bytes as text, whatever they start with. */
	ptxro_module_init(&m);
	(void)ptxro_parse((const char *)data, size, &m);
	ptxro_module_release(&m);
	return 0;
}
