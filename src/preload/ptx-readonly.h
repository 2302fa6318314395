/*
 * ptx-readonly.h - proves kernel parameters read-only from PTX text, and
 * finds the PTX inside a module image (fatbin or plain text).
 *
 * Pure logic over untrusted bytes: no driver, no globals, libc only, so the
 * unit tests and the fuzzer reach all of it.  docs/design-streams.md,
 * "Read-only parameters from PTX", says what is proven and what is not.
 */
#ifndef KMUX_PTX_READONLY_H
#define KMUX_PTX_READONLY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ptxr_prog;

#define PTXRO_MAX_PARAMS 64	/* params past this are never proven */

/* Bytes from a pointer parameter's value: [lo, hi), lo < hi. */
struct ptxro_extent {
	int64_t lo, hi;
};

/* One .entry as analysed. */
struct ptxro_entry {
	char *name;		/* the mangled .entry name */
	int nparams;		/* in declaration order */
	uint32_t *size;		/* nparams byte sizes */
	/*
	 * Bit i: parameter i provably never reaches the address of a store,
	 * atomic, reduction or asynchronous copy destination, never escapes
	 * into memory or a call.  0 for the whole entry when anything in its
	 * body was not understood.
	 */
	uint64_t readonly;
	/*
	 * Bit i: every access through parameter i (a pointer) is at a
	 * compile-time constant offset from its value, so the kernel reaches
	 * exactly [value + ext[i].lo, value + ext[i].hi) through it (see
	 * ptx-readonly.c, "Extents").  ext has nparams entries when any bit is
	 * set, else NULL.
	 */
	uint64_t has_extent;
	struct ptxro_extent *ext;
	/*
	 * The body for ptx-range.h when some pointer parameter without an
	 * exact extent may get a range for a given launch geometry; NULL
	 * when none can.  Counted (ptxr_ref/ptxr_unref).
	 */
	struct ptxr_prog *range;
	/*
	 * The body names a module-scope .global variable of its text (a
	 * `__device__` variable; nvcc's string literals excepted), or calls a
	 * function the text defines while it has any, or the text declares
	 * one this parser does not understand: the kernel reaches memory that
	 * is in no allocation kmux tracks.  Set whatever else the entry's
	 * verdict is.
	 */
	bool globals;
	/*
	 * The body names a module-scope .const variable of its text (a
	 * `__constant__` one), or calls a function the text defines while it
	 * has any, or reaches the .global ones (one may hold a pointer to
	 * a .const one), or the text declares a .const this parser does not
	 * understand: the kernel reads memory the host may write through
	 * the variable's address (cudaMemcpyToSymbol).
	 */
	bool consts;
};

/* A module-scope variable of an analysed text, as cuModuleGetGlobal names it. */
struct ptxro_var {
	char *name;
	bool is_const;		/* .const: kernels only read it */
};

struct ptxro_module {
	struct ptxro_entry *e;
	int n, cap;
	/* Every text's .global and .const variables (string literals not). */
	struct ptxro_var *var;
	int nvar, capvar;
};

/* What ptxro_scan_image() found, added to the caller's counts. */
struct ptxro_image_stats {
	unsigned ptx;		/* PTX texts analysed */
	unsigned no_ptx;	/* images (or fatbins) without readable PTX */
	unsigned compressed;	/* PTX entries skipped: compressed, no decoder */
	unsigned decompressed;	/* PTX entries decompressed (zstd, LZ4) */
	unsigned bad;		/* malformed containers or PTX */
	unsigned calls;		/* call instructions in the PTX analysed */
};

void ptxro_module_init(struct ptxro_module *m);
void ptxro_module_release(struct ptxro_module *m);

/*
 * Analyse PTX text (len bytes, need not be NUL-terminated) and append its
 * entries to m.  Returns 0, -EINVAL on text that is not PTX as this parser
 * knows it (entries before the error are kept; an entry with an unknown
 * construct is kept with readonly 0), -ENOMEM.
 */
int ptxro_parse(const char *text, size_t len, struct ptxro_module *m);

/*
 * A module image as cuModuleLoadData gets it, of at most avail bytes:
 * a fatbin (its PTX entries that are not compressed), a fatbin wrapper
 * (only when follow_wrapper: it holds a pointer into this process), or
 * NUL-terminated PTX text.  ELF cubins have no PTX.  Returns 0 or -ENOMEM.
 * m NULL: the PTX texts are found, decompressed and counted (st->ptx,
 * st->calls), not parsed (ctx-stack.c needs no more, and a large image
 * parses slowly).
 */
int ptxro_scan_image(const void *image, size_t avail, int follow_wrapper,
		     struct ptxro_module *m, struct ptxro_image_stats *st);

/*
 * How many bytes of image to believe, from its own header: the fatbin's
 * size, the text's length up to its NUL (at most cap), 0 when unknown.
 */
size_t ptxro_image_size(const void *image, size_t cap);

#endif
