/*
 * ptx-table.c - KMUX_PTX_READONLY=1: the read-only verdicts of every kernel
 * in the module images the program loaded, by kernel name.
 *
 * Module loads (wrap-module.c) scan their image once (ptx-readonly.h) and
 * merge the entries here; kparams asks once per function handle, when it
 * first learns the function's layout, and keeps the answer in its
 * kernel_info.  A name seen in several images keeps only the parameters
 * proven read-only in all of them, and nothing when the layouts differ.
 * A verdict is used only when the driver's layout of the function has the
 * same parameter count and sizes as the PTX declares.  Loads and first
 * launches are rare, so one mutex is enough.
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "ptx-readonly.h"
#include "ptx-table.h"

/* Text images are believed up to this length (the driver needs a NUL). */
#define PTXTAB_TEXT_MAX ((size_t)1 << 30)

int ptxtab_on;

static pthread_mutex_t ptxtab_mu = PTHREAD_MUTEX_INITIALIZER;
static struct ptxro_module ptxtab;	/* merged, one entry per name */
static struct ptxro_image_stats ptxtab_st;
static unsigned long ptxtab_images, ptxtab_errors;
static atomic_ulong ptxtab_kernels, ptxtab_params_ro, ptxtab_mismatch;

int ptxtab_init(const char *value)
{
	ptxtab_on = value && *value && strcmp(value, "0") != 0;
	return 0;
}

static struct ptxro_entry *ptxtab_find(const char *name)
{
	for (int i = 0; i < ptxtab.n; i++)
		if (strcmp(ptxtab.e[i].name, name) == 0)
			return &ptxtab.e[i];
	return NULL;
}

static bool ptxtab_same_layout(const struct ptxro_entry *a, int n,
			       const uint32_t *size)
{
	return a->nparams == n &&
	       (n == 0 || memcmp(a->size, size, (size_t)n * sizeof(*size)) == 0);
}

/* Lock held.  Move the entries of m into the table; m is emptied. */
static void ptxtab_merge(struct ptxro_module *m)
{
	for (int i = 0; i < m->n; i++) {
		struct ptxro_entry *e = &m->e[i], *old = ptxtab_find(e->name);

		if (old) {
			if (!ptxtab_same_layout(old, e->nparams, e->size))
				old->readonly = 0;
			else
				old->readonly &= e->readonly;
			free(e->name);
			free(e->size);
			continue;
		}
		if (ptxtab.n == ptxtab.cap) {
			int cap = ptxtab.cap ? 2 * ptxtab.cap : 64;
			struct ptxro_entry *ne = realloc(ptxtab.e,
					(size_t)cap * sizeof(*ne));

			if (!ne) {
				/*
				 * Unrecorded is unknown, and unknown is
				 * read-write: dropping the entry is safe.
				 */
				ptxtab_errors++;
				free(e->name);
				free(e->size);
				continue;
			}
			ptxtab.e = ne;
			ptxtab.cap = cap;
		}
		ptxtab.e[ptxtab.n++] = *e;
	}
	m->n = 0;
}

void ptxtab_scan(const void *image)
{
	struct ptxro_module m;
	struct ptxro_image_stats st = { 0 };
	size_t n;
	int r;

	if (!ptxtab_on || !image)
		return;
	ptxro_module_init(&m);
	n = ptxro_image_size(image, PTXTAB_TEXT_MAX);
	r = ptxro_scan_image(image, n, 1, &m, &st);
	pthread_mutex_lock(&ptxtab_mu);
	ptxtab_images++;
	ptxtab_st.ptx += st.ptx;
	ptxtab_st.no_ptx += st.no_ptx;
	ptxtab_st.compressed += st.compressed;
	ptxtab_st.decompressed += st.decompressed;
	ptxtab_st.bad += st.bad;
	if (r < 0)
		ptxtab_errors++;
	ptxtab_merge(&m);
	pthread_mutex_unlock(&ptxtab_mu);
	ptxro_module_release(&m);
	log_debug("ptx-readonly: image %p: %u PTX (%u decompressed), %u "
		  "without, %u compressed skipped, %u malformed", image, st.ptx,
		  st.decompressed, st.no_ptx, st.compressed, st.bad);
}

uint64_t ptxtab_readonly(const char *name, int nparams, const uint32_t *size)
{
	const struct ptxro_entry *e;
	uint64_t ro = 0;

	if (!ptxtab_on || !name || nparams <= 0)
		return 0;
	pthread_mutex_lock(&ptxtab_mu);
	e = ptxtab_find(name);
	if (e && ptxtab_same_layout(e, nparams, size))
		ro = e->readonly;
	else if (e)
		atomic_fetch_add(&ptxtab_mismatch, 1);
	pthread_mutex_unlock(&ptxtab_mu);
	if (e) {
		atomic_fetch_add(&ptxtab_kernels, 1);
		atomic_fetch_add(&ptxtab_params_ro,
				 (unsigned long)__builtin_popcountll(ro));
	}
	return ro;
}

void ptxtab_report(void)
{
	if (!ptxtab_on)
		return;
	pthread_mutex_lock(&ptxtab_mu);
	log_info("ptx-readonly: pid %d: %lu images, %u PTX texts (%u "
		 "decompressed), %u without PTX, %u compressed PTX skipped, %u "
		 "malformed, %d kernels "
		 "analysed; %lu launched kernels matched, %lu parameters "
		 "proven read-only, %lu layout mismatches, %lu errors",
		 (int)getpid(), ptxtab_images, ptxtab_st.ptx,
		 ptxtab_st.decompressed, ptxtab_st.no_ptx, ptxtab_st.compressed, ptxtab_st.bad,
		 ptxtab.n, atomic_load(&ptxtab_kernels),
		 atomic_load(&ptxtab_params_ro),
		 atomic_load(&ptxtab_mismatch), ptxtab_errors);
	pthread_mutex_unlock(&ptxtab_mu);
}
