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

#include "ptx-range.h"
#include "ptx-readonly.h"

/* The ranges of e for a geometry taken from the input's first bytes. */
static void solve_ranges(const struct ptxro_entry *e, const uint8_t *data,
			 size_t size)
{
	struct ptxr_geom g = { { 1, 1, 1 }, { 1, 1, 1 } };
	int64_t lo[PTXR_MAX_PARAMS], hi[PTXR_MAX_PARAMS];
	uint64_t has;

	if (!e->range)
		return;
	if (size >= 2) {
		g.grid[0] = 1u + data[0] * 97u;
		g.block[0] = 1u + data[1] * 4u;
	}
	if (ptxr_solve(e->range, &g, &has, lo, hi) < 0)
		return;
	if (has & ~ptxr_candidates(e->range))
		abort();
	for (int j = 0; j < PTXR_MAX_PARAMS; j++)
		if ((has >> j & 1) && lo[j] >= hi[j])
			abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ptxro_image_stats st = { 0 };
	struct ptxro_module m;
	int r;

	ptxro_module_init(&m);
	(void)ptxro_image_size(data, size);
	/* Never follow a wrapper's pointer: it points anywhere. */
	r = ptxro_scan_image(data, size, 0, &m, &st);
	if (r == 0) {
		for (int i = 0; i < m.n; i++) {
			const struct ptxro_entry *e = &m.e[i];

			if (!e->name || e->nparams < 0)
				abort();
			if (e->nparams < 64 &&
			    (e->readonly >> e->nparams) != 0)
				abort();
			solve_ranges(e, data, size);
		}
	}
	ptxro_module_release(&m);
	/* Found and counted only (ctx-stack.c): the same count of texts. */
	{
		struct ptxro_image_stats st2 = { 0 };

		if (ptxro_scan_image(data, size, 0, NULL, &st2) == 0 &&
		    r == 0 && (st2.ptx != st.ptx || st2.calls != st.calls))
			abort();
	}
	/* The same bytes as text, whatever they start with. */
	ptxro_module_init(&m);
	(void)ptxro_parse((const char *)data, size, &m);
	for (int i = 0; i < m.n; i++)
		solve_ranges(&m.e[i], data, size);
	ptxro_module_release(&m);
	return 0;
}
