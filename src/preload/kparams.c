/*
 * kparams.c - kernel parameter layouts and per-launch pointer decoding.
 *
 * Owns: the process-wide cache of struct kernel_info (layout and name per
 * function handle) and kparams_collect(), which turns one launch's
 * parameter bytes into the list of allocations the kernel was handed.
 *
 * Cache.  Launches look up their function on every call from any thread, so
 * the hit path takes no lock: an open-addressing hash table of pointers to
 * immutable kernel_info entries, linear probing bounded by KP_PROBE_MAX.  An
 * entry is published by one CAS of an empty slot and never changes or moves
 * afterwards; it is only ever replaced, in its slot, by a newer entry for the
 * same handle (below).  A table whose probe window for a key is full does not grow in
 * place (readers could not follow a move): the key goes to the next table of
 * a chain, each four times larger than the one before, linked by CAS.  The
 * first table is static (4096 slots, enough for most programs); a lookup
 * walks the chain, so a key costs one extra probe window per table before it.
 *
 * Because slots only ever go from empty to a handle's entry (and then keep
 * that handle), two threads learning the same function at once walk the same
 * probe sequence and meet at the same slot: the CAS loser frees its copy and
 * returns the winner's, so every caller sees one entry per handle.  Both may
 * have asked the driver, which is harmless (the answers are the same);
 * entries are never freed, because launch records keep pointers to them (and
 * to their names).
 *
 * Handles are reused: after cuModuleUnload, cuLibraryUnload or a context's
 * end, the driver may give a new function the handle of a dead one, with
 * another name, layout and read-only verdict.  Those call
 * kparams_invalidate(), which bumps a generation; an entry of an older
 * generation is learned again on its next use and replaces the old one in
 * its slot.  The hit path pays one atomic load for this.  Every unload costs
 * one re-learning (and one kept entry) per function launched afterwards.
 *
 * Decoding allocates nothing: the words that may be pointers are gathered
 * on the stack and looked up in batches (alloc_table_find_batch(): the
 * per-lookup set-up is paid once per batch), then duplicates are filtered
 * linearly while there are few results, then through a small hash on the
 * stack.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "compiler.h"
#include "kparams.h"
#include "ptx-range.h"
#include "ptrtab.h"
#include "texobj.h"

#define KP_FIRST_BITS 12
#define KP_PROBE_MAX 32

/*
 * Sanity bounds on what a driver may tell us: CUDA 12.1+ allows 32764 bytes
 * of parameters, and longer names are cut (mangled template names can be
 * long, but not this long).
 */
#define KP_PARAM_BYTES_MAX 32768
#define KP_NAME_MAX 65536

/* An extra array longer than this many key/value pairs is not believed. */
#define KP_EXTRA_PAIRS_MAX 64

/* Results deduplicated linearly up to this count, then with a hash. */
#define KP_DEDUP_LINEAR 8
#define KP_DEDUP_BITS 10
#define KP_DEDUP_SLOTS (1u << KP_DEDUP_BITS)

/* Candidate pointer words gathered before one batch of lookups. */
#define KP_BATCH 32

struct kp_table {
	unsigned bits;
	_Atomic(struct kp_table *) next;
	_Atomic(struct kernel_info *) *slot;
};

static _Atomic(struct kernel_info *) kp_first_slots[1u << KP_FIRST_BITS];
static struct kp_table kp_first = {
	.bits = KP_FIRST_BITS,
	.slot = kp_first_slots,
};

static struct kparams_driver kp_drv;
static _Atomic(kparams_readonly_fn) kp_readonly;
static _Atomic(kparams_span_fn) kp_span_filter;
static _Atomic(kparams_extra_fn) kp_extra_find;
/* Empty (lo == hi) until a variable is located: every word misses. */
static _Atomic uint64_t kp_extra_lo, kp_extra_hi;
/* Bumped by kparams_invalidate(); entries of an older one are re-learned. */
static atomic_ulong kp_gen;
/* Entries replaced in their slot, still pointed to by launch records. */
static _Atomic(struct kernel_info *) kp_retired;

/*
 * Extents further than this from the pointer are not believed: the PTX
 * analysis caps its constants well below, and the bound keeps the range
 * arithmetic of kp_range() free of overflow.
 */
#define KP_EXTENT_MAX ((int64_t)1 << 40)

/*
 * Geometry-dependent ranges (kernel_info.range): solved once per launch
 * geometry, the last one kept per kernel.  A kernel launched with ever new
 * geometries stops being solved after this many, or after a few that
 * proved nothing (a solve costs 10 us to a few ms, on the launch path:
 * 130 us for mha's GEMM tiles, 4 ms for CUB's largest reductions).
 */
#define KP_GEO_SOLVES_MAX 16

struct kp_geo {
	unsigned grid[3], block[3];
	uint64_t has_extent;
	struct kp_geo *retired;		/* replaced ones, never freed */
	struct kparams_extent ext[];	/* kernel_info.nparams */
};

static bool kp_extent_ok(const struct kparams_extent *e)
{
	return e->lo < e->hi && e->lo >= -KP_EXTENT_MAX &&
	       e->hi <= KP_EXTENT_MAX;
}

static void kp_retire(struct kernel_info *e)
{
	struct kernel_info *head = atomic_load(&kp_retired);

	do
		e->retired = head;
	while (!atomic_compare_exchange_weak(&kp_retired, &head, e));
}

/* The state of one kparams_collect() call. */
struct kp_collect {
	struct alloc_table *t;
	uint64_t lo, hi;		/* alloc_table_span(): others miss */
	uint64_t xlo, xhi;		/* kp_extra_lo/hi at the start */
	/* lo, hi hold both spans then: one compare per word either way. */
	struct access *out;
	uint64_t readonly;		/* struct kernel_info.readonly */
	uint64_t has_extent;		/* struct kernel_info.has_extent */
	const struct kparams_extent *ext;	/* struct kernel_info.ext */
	int max;
	int n;
	unsigned flags;
	bool full;			/* out is full: stop looking */
	bool hashed;			/* dedup[] is in use */
	int nw;				/* words gathered, not yet looked up */
	uint64_t word[KP_BATCH];
	uint32_t wparam[KP_BATCH];	/* the parameter each word is in */
	/* Index + 1 into out, 0: empty; cleared only when first needed. */
	uint16_t dedup[KP_DEDUP_SLOTS];
};

void kparams_set_driver(const struct kparams_driver *drv)
{
	if (drv)
		kp_drv = *drv;
	else
		memset(&kp_drv, 0, sizeof(kp_drv));
}

void kparams_set_span_filter(kparams_span_fn fn)
{
	atomic_store(&kp_span_filter, fn);
}

void kparams_set_extra(kparams_extra_fn fn)
{
	atomic_store(&kp_extra_find, fn);
}

void kparams_extra_span(uint64_t lo, uint64_t hi)
{
	static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
	uint64_t l, h;

	if (hi <= lo)
		return;
	/* Rare (a variable located): writers take turns, readers do not. */
	pthread_mutex_lock(&mu);
	l = atomic_load(&kp_extra_lo);
	h = atomic_load(&kp_extra_hi);
	if (l == h || lo < l)
		l = lo;
	if (hi > h)
		h = hi;
	/*
	 * hi first: a launch between the stores sees [old lo, new hi), which
	 * holds both spans (old lo is 0 the first time).  A wider span only
	 * costs lookups that miss.
	 */
	atomic_store(&kp_extra_hi, h);
	atomic_store(&kp_extra_lo, l);
	pthread_mutex_unlock(&mu);
}

void kparams_set_readonly(kparams_readonly_fn fn)
{
	atomic_store(&kp_readonly, fn);
}

void kparams_invalidate(void)
{
	atomic_fetch_add_explicit(&kp_gen, 1, memory_order_acq_rel);
}

/* Fibonacci hashing: handles are aligned heap pointers, so mix the bits. */
static inline size_t kp_hash(const void *p, unsigned bits)
{
	return (size_t)(((uint64_t)(uintptr_t)p * 0x9e3779b97f4a7c15ull) >>
			(64 - bits));
}

static struct kernel_info *kp_lookup(const void *f)
{
	struct kp_table *tb = &kp_first;
	struct kernel_info *e;
	size_t mask, h;

	do {
		mask = ((size_t)1 << tb->bits) - 1;
		h = kp_hash(f, tb->bits);
		for (int p = 0; p < KP_PROBE_MAX; p++) {
			e = atomic_load_explicit(&tb->slot[h],
						 memory_order_acquire);
			if (!e)
				break;
			if (e->func == f)
				return e;
			h = (h + 1) & mask;
		}
		tb = atomic_load_explicit(&tb->next, memory_order_acquire);
	} while (tb);
	return NULL;
}

/* The table after tb, created (once, by CAS) when missing.  NULL: no memory. */
static struct kp_table *kp_next_table(struct kp_table *tb)
{
	struct kp_table *next, *expected = NULL;
	size_t n;

	next = atomic_load_explicit(&tb->next, memory_order_acquire);
	if (next)
		return next;
	next = malloc(sizeof(*next));
	if (!next)
		return NULL;
	next->bits = tb->bits + 2;
	n = (size_t)1 << next->bits;
	next->slot = malloc(n * sizeof(*next->slot));
	if (!next->slot) {
		free(next);
		return NULL;
	}
	for (size_t i = 0; i < n; i++)
		atomic_init(&next->slot[i], NULL);
	atomic_init(&next->next, NULL);
	if (!atomic_compare_exchange_strong_explicit(&tb->next, &expected,
						     next,
						     memory_order_acq_rel,
						     memory_order_acquire)) {
		free(next->slot);
		free(next);
		next = expected;
	}
	return next;
}

/*
 * Publish ki, or find the entry another thread published for the same
 * function first (then ki is freed).  An entry of an older generation is
 * replaced in its slot (so the key keeps its place in the probe sequence);
 * the old entry is kept, since launch records may point to it.  Returns
 * the entry in the cache, or NULL when a new table was needed and could
 * not be allocated.
 */
static struct kernel_info *kp_insert(struct kernel_info *ki)
{
	struct kp_table *tb = &kp_first;
	struct kernel_info *e;
	size_t mask, h;

	for (;;) {
		mask = ((size_t)1 << tb->bits) - 1;
		h = kp_hash(ki->func, tb->bits);
		for (int p = 0; p < KP_PROBE_MAX; p++) {
			e = NULL;
			if (atomic_compare_exchange_strong_explicit(
				    &tb->slot[h], &e, ki,
				    memory_order_acq_rel,
				    memory_order_acquire))
				return ki;
			/* e is now what occupies the slot: never NULL again. */
			while (e->func == ki->func) {
				if (e->gen >= ki->gen) {
					ptxr_unref(ki->range);
					free(ki);
					return e;
				}
				if (atomic_compare_exchange_strong_explicit(
					    &tb->slot[h], &e, ki,
					    memory_order_acq_rel,
					    memory_order_acquire)) {
					kp_retire(e);
					return ki;
				}
			}
			h = (h + 1) & mask;
		}
		tb = kp_next_table(tb);
		if (!tb) {
			ptxr_unref(ki->range);
			free(ki);
			return NULL;
		}
	}
}

enum kp_via { KP_VIA_FUNC, KP_VIA_KERNEL };

static CUresult kp_param_info(enum kp_via via, const void *f, size_t i,
			      size_t *off, size_t *size)
{
	if (via == KP_VIA_FUNC) {
		if (!kp_drv.func_get_param_info)
			return CUDA_ERROR_NOT_SUPPORTED;
		return kp_drv.func_get_param_info((CUfunction)f, i, off, size);
	}
	if (!kp_drv.kernel_get_param_info)
		return CUDA_ERROR_NOT_SUPPORTED;
	return kp_drv.kernel_get_param_info((CUkernel)f, i, off, size);
}

/*
 * Ask for parameters 0, 1, ... until the driver says there are no more
 * (CUDA_ERROR_INVALID_VALUE).  Returns the count, or -1 when the layout is
 * unusable: an error at index 0 (*first says which), any other error, more
 * than KPARAMS_MAX parameters, or offsets and sizes no kernel can have.
 */
static int kp_read_layout(enum kp_via via, const void *f, uint32_t *off,
			  uint32_t *size, CUresult *first)
{
	size_t o, s;
	CUresult r;

	for (size_t i = 0;; i++) {
		o = 0;
		s = 0;
		r = kp_param_info(via, f, i, &o, &s);
		if (i == 0)
			*first = r;
		if (r == CUDA_ERROR_INVALID_VALUE && i > 0)
			return (int)i;
		if (r != CUDA_SUCCESS || i == KPARAMS_MAX)
			return -1;
		if (s == 0 || o > KP_PARAM_BYTES_MAX ||
		    s > KP_PARAM_BYTES_MAX - o)
			return -1;
		off[i] = (uint32_t)o;
		size[i] = (uint32_t)s;
	}
}

static const char *kp_name(enum kp_via via, const void *f)
{
	const char *name = NULL;
	CUresult r = CUDA_ERROR_NOT_SUPPORTED;

	if (via == KP_VIA_FUNC && kp_drv.func_get_name)
		r = kp_drv.func_get_name(&name, (CUfunction)f);
	else if (via == KP_VIA_KERNEL && kp_drv.kernel_get_name)
		r = kp_drv.kernel_get_name(&name, (CUkernel)f);
	return r == CUDA_SUCCESS ? name : NULL;
}

/*
 * The words of one parameter at layout offset off, size bytes, that a
 * scan reads (kp_scan's rule: at a layout offset that is a multiple of 8,
 * wholly inside the parameter); written to w (when not NULL) for
 * parameter param.  How many.
 */
static size_t kp_words_in(uint32_t off, uint32_t size, struct kp_word *w,
			  uint32_t param)
{
	size_t k = 0;

	for (uint32_t j = (8 - (off & 7)) & 7; j + 8 <= size; j += 8, k++)
		if (w)
			w[k] = (struct kp_word){ .param = param, .off = j };
	return k;
}

/* Build the (not yet published) entry for f from the driver's answers. */
static struct kernel_info *kp_learn(const void *f, unsigned long gen)
{
	uint32_t off[KPARAMS_MAX], size[KPARAMS_MAX], end, pb = 0;
	struct kparams_extent *ext;
	CUresult first_func, first_kernel = CUDA_ERROR_NOT_SUPPORTED;
	enum kp_via via = KP_VIA_FUNC;
	kparams_readonly_fn ro = atomic_load(&kp_readonly);
	uint64_t has_ext = 0;
	struct kernel_info *ki;
	const char *name;
	size_t namelen, cnt, next, nw = 0;
	struct kp_word *words;
	bool asks;
	char *copy;
	int n;

	n = kp_read_layout(KP_VIA_FUNC, f, off, size, &first_func);
	if (n < 0 && first_func != CUDA_SUCCESS) {
		/* cudart and PyTorch hand cuLaunchKernel CUkernel handles. */
		n = kp_read_layout(KP_VIA_KERNEL, f, off, size, &first_kernel);
		if (n >= 0 || first_kernel == CUDA_SUCCESS)
			via = KP_VIA_KERNEL;
		/*
		 * Whichever type f really is, that call's INVALID_VALUE at
		 * index 0 can only mean "no parameter 0".
		 */
		if (n < 0 && first_func == CUDA_ERROR_INVALID_VALUE &&
		    first_kernel == CUDA_ERROR_INVALID_VALUE)
			n = 0;
		/*
		 * On the real driver the kernel calls answer for every
		 * launched handle and cuFuncGetParamInfo for none
		 * (GPU-FACTS.md): when the kernel calls know f's name, their
		 * "no parameter 0" stands alone.  Otherwise a kernel without
		 * parameters (a counter's reset) would be a barrier.
		 */
		if (n < 0 && first_kernel == CUDA_ERROR_INVALID_VALUE &&
		    kp_name(KP_VIA_KERNEL, f)) {
			n = 0;
			via = KP_VIA_KERNEL;
		}
	}

	/* Ask for the name the way the layout was answered, then the other. */
	name = kp_name(via, f);
	if (!name)
		name = kp_name(via == KP_VIA_FUNC ? KP_VIA_KERNEL : KP_VIA_FUNC,
			       f);
	if (!name)
		name = "?";
	namelen = strnlen(name, KP_NAME_MAX - 1);

	cnt = n > 0 ? (size_t)n : 0;
	for (size_t i = 0; i < cnt; i++)
		nw += kp_words_in(off[i], size[i], NULL, 0);
	asks = ro && n >= 0 && strcmp(name, "?") != 0;
	/* Room for extents whenever the prover is asked (they are few). */
	next = asks ? cnt * sizeof(struct kparams_extent) : 0;
	ki = malloc(sizeof(*ki) + next + 2 * cnt * sizeof(uint32_t) +
		    nw * sizeof(struct kp_word) + namelen + 1);
	if (!ki)
		return NULL;
	/* ext first: it needs 8-byte alignment, as ki has. */
	ext = asks ? (struct kparams_extent *)(ki + 1) : NULL;
	ki->offset = (uint32_t *)((char *)(ki + 1) + next);
	ki->size = ki->offset + cnt;
	words = (struct kp_word *)(ki->size + cnt);
	ki->words = words;
	ki->nwords = (uint32_t)nw;
	nw = 0;
	for (size_t i = 0; i < cnt; i++) {
		ki->offset[i] = off[i];
		ki->size[i] = size[i];
		end = off[i] + size[i];
		if (end > pb)
			pb = end;
		nw += kp_words_in(off[i], size[i], words + nw, (uint32_t)i);
	}
	/* Copied: the driver's string dies with its module. */
	copy = (char *)(words + ki->nwords);
	memcpy(copy, name, namelen);
	copy[namelen] = '\0';
	ki->name = copy;
	ki->func = f;
	ki->gen = gen;
	ki->retired = NULL;
	ki->nparams = n;
	ki->param_bytes = pb;
	ki->readonly = 0;
	ki->range = NULL;
	ki->vars = KPARAMS_VARS_UNKNOWN;
	atomic_init(&ki->geo, NULL);
	atomic_init(&ki->geo_solves, 0);
	if (asks) {
		if (ext)
			memset(ext, 0, next);
		ki->readonly = ro(f, via == KP_VIA_KERNEL, copy, n, ki->size,
				  &has_ext, ext, &ki->range, &ki->vars);
		if (n < 64)
			has_ext &= ((uint64_t)1 << n) - 1;
		for (int i = 0; i < n && i < 64; i++)
			if ((has_ext >> i & 1) && !kp_extent_ok(&ext[i]))
				has_ext &= ~((uint64_t)1 << i);
	}
	ki->has_extent = has_ext;
	ki->ext = has_ext ? ext : NULL;
	atomic_init(&ki->sched_class, KPARAMS_CLASS_UNKNOWN);
	return ki;
}

const struct kernel_info *kparams_info(const void *f)
{
	struct kernel_info *ki;
	/*
	 * Read before asking the driver: an unload racing with the learning
	 * leaves the entry already stale.
	 */
	unsigned long gen = atomic_load_explicit(&kp_gen,
						 memory_order_acquire);

	ki = kp_lookup(f);
	if (likely(ki && ki->gen == gen))
		return ki;
	ki = kp_learn(f, gen);
	if (!ki)
		return NULL;
	return kp_insert(ki);
}

/*
 * The index in c->out of allocation id, or -1 (then index n is added to
 * the hash).
 */
static int kp_seen(struct kp_collect *c, uint64_t id)
{
	size_t h;

	if (!c->hashed) {
		for (int i = 0; i < c->n; i++)
			if (c->out[i].alloc_id == id)
				return i;
		if (c->n < KP_DEDUP_LINEAR || c->n >= (int)KP_DEDUP_SLOTS / 2)
			return -1;
		/* Enough results to make a hash pay: build it once. */
		memset(c->dedup, 0, sizeof(c->dedup));
		for (int i = 0; i < c->n; i++) {
			h = kp_hash((void *)(uintptr_t)c->out[i].alloc_id,
				    KP_DEDUP_BITS);
			while (c->dedup[h])
				h = (h + 1) & (KP_DEDUP_SLOTS - 1);
			c->dedup[h] = (uint16_t)(i + 1);
		}
		c->hashed = true;
	}
	h = kp_hash((void *)(uintptr_t)id, KP_DEDUP_BITS);
	while (c->dedup[h]) {
		if (c->out[c->dedup[h] - 1].alloc_id == id)
			return c->dedup[h] - 1;
		h = (h + 1) & (KP_DEDUP_SLOTS - 1);
	}
	/* Keep the load at most one half; beyond that go back to linear. */
	if (c->n >= (int)KP_DEDUP_SLOTS / 2)
		c->hashed = false;
	else if (c->n < c->max)
		c->dedup[h] = (uint16_t)(c->n + 1);
	return -1;
}

/*
 * The bytes of allocation a that parameter param, holding pointer w into
 * it, can reach: 1 with [*off, *off + *len) when the parameter has an
 * extent and [w + lo, w + hi) lies inside the allocation; 0: all of it
 * (no extent, or the kernel may reach past either end, where kmux does
 * not know what it touches).
 */
static bool kp_range(const struct kp_collect *c, const struct alloc *a,
		     uint64_t w, uint32_t param, uint64_t *off,
		     uint64_t *len)
{
	const struct kparams_extent *e;
	uint64_t rel = w - a->base;
	int64_t lo, hi;

	if (param >= 64 || !(c->has_extent >> param & 1) || !c->ext)
		return false;
	/* w is inside a (the table found it there); be sure anyway. */
	if (w < a->base || rel >= a->size || rel > (uint64_t)KP_EXTENT_MAX)
		return false;
	e = &c->ext[param];
	lo = (int64_t)rel + e->lo;
	hi = (int64_t)rel + e->hi;
	if (lo < 0 || hi <= lo || (uint64_t)hi > a->size)
		return false;
	*off = (uint64_t)lo;
	*len = (uint64_t)(hi - lo);
	return true;
}

/*
 * One found allocation, in the order the words were scanned: w, in
 * parameter param, points into a.
 */
static void kp_add(struct kp_collect *c, const struct alloc *a, uint64_t w,
		   uint32_t param)
{
	uint32_t ro = param < 64 && (c->readonly >> param & 1);
	uint64_t off = 0, len = 0;
	bool ranged = kp_range(c, a, w, param, &off, &len);
	int i;

	i = kp_seen(c, a->id);
	if (i >= 0) {
		struct access *x = &c->out[i];

		/* One writing parameter makes the allocation written. */
		x->readonly &= ro;
		/*
		 * A range only while every parameter pointing into the
		 * allocation has one: their hull (len 0 stays whole).
		 */
		if (!ranged || !x->len) {
			x->off = 0;
			x->len = 0;
		} else {
			uint64_t end = x->off + x->len;

			if (off + len > end)
				end = off + len;
			if (off < x->off)
				x->off = off;
			x->len = end - x->off;
		}
		return;
	}
	if (c->n >= c->max) {
		c->flags |= KPARAMS_TRUNCATED;
		c->full = true;
		return;
	}
	c->out[c->n++] = (struct access){
		.alloc_id = a->id,
		.base = a->base,
		.kind = (uint32_t)a->kind,
		.param = param,
		.readonly = ro,
		.off = off,
		.len = len,
	};
}

/*
 * The words of a batch that no allocation holds but that lie in the
 * located variables' span: looked up there (kparams_set_extra()), into a.
 * Returns how many were found.  Out of the launch path's way: only a
 * program that located a variable gets here.
 */
static __attribute__((noinline, cold)) int
kp_extra_fill(const struct kp_collect *c, struct alloc *a, int nw)
{
	kparams_extra_fn fn = atomic_load_explicit(&kp_extra_find,
						   memory_order_relaxed);
	int found = 0;

	if (!fn)
		return 0;
	for (int i = 0; i < nw; i++) {
		if (a[i].id || c->word[i] - c->xlo >= c->xhi - c->xlo)
			continue;
		if (fn(c->word[i], &a[i]) == 0 && a[i].id)
			found++;
		else
			a[i].id = 0;
	}
	return found;
}

/*
 * Look up the gathered words and add what they point into, in scan order,
 * so that the result (and where a full out stops it) is the same as word
 * by word.
 */
static void kp_flush(struct kp_collect *c)
{
	struct alloc a[KP_BATCH];
	int nw = c->nw, found;

	c->nw = 0;
	if (nw == 0)
		return;
	found = alloc_table_find_batch(c->t, c->word, nw, a);
	if (unlikely(c->xhi != c->xlo) && found >= 0 && found < nw)
		found += kp_extra_fill(c, a, nw);
	if (found <= 0)
		return;
	for (int i = 0; i < nw && !c->full; i++)
		if (a[i].id)
			kp_add(c, &a[i], c->word[i], c->wparam[i]);
}

/*
 * Gather every 8-byte word of one parameter whose offset in the parameter
 * layout (off + j) is a multiple of 8 and that lies wholly inside it; p
 * holds the parameter's bytes (any alignment), len of them readable.
 */
static inline void kp_scan(struct kp_collect *c, const unsigned char *p,
			   uint32_t off, uint32_t len, uint32_t param)
{
	uint64_t w;

	for (uint32_t j = (8 - (off & 7)) & 7; j + 8 <= len && !c->full;
	     j += 8) {
		memcpy(&w, p + j, sizeof(w));
		/* Most words (NULLs, sizes, scalars) are no pointer at all. */
		if (w - c->lo >= c->hi - c->lo)
			continue;
		c->word[c->nw] = w;
		c->wparam[c->nw] = param;
		if (++c->nw == KP_BATCH)
			kp_flush(c);
	}
}

/*
 * The kernel_params form, word by word from the kernel's list: what
 * kp_scan() over each parameter in turn would read, without working out
 * the words again at every launch.
 */
static inline void kp_scan_words(struct kp_collect *c,
				 const struct kernel_info *ki,
				 void **kernel_params)
{
	const struct kp_word *wd = ki->words, *end = wd + ki->nwords;
	uint64_t w, lo = c->lo, span = c->hi - c->lo;

	for (; wd < end && !c->full; wd++) {
		const unsigned char *p = kernel_params[wd->param];

		if (!p)
			continue;
		memcpy(&w, p + wd->off, sizeof(w));
		/* Most words (NULLs, sizes, scalars) are no pointer at all. */
		if (w - lo >= span)
			continue;
		c->word[c->nw] = w;
		c->wparam[c->nw] = wd->param;
		if (++c->nw == KP_BATCH)
			kp_flush(c);
	}
}

/*
 * Whether a word of the launch's parameters is a live texture or surface
 * object: kernel_params word by word as kp_scan_words() reads them, an
 * extra buffer every aligned word of it (a superset of its parameters'
 * words: a wrong match only adds order).  Off the launch path: only a
 * program that holds such objects gets here.
 */
static __attribute__((noinline, cold)) bool
kp_any_handle(const struct kernel_info *ki, void **kernel_params,
	      const unsigned char *buf, size_t size)
{
	uint64_t w;

	if (kernel_params) {
		for (uint32_t i = 0; i < ki->nwords; i++) {
			const unsigned char *p =
				kernel_params[ki->words[i].param];

			if (!p)
				continue;
			memcpy(&w, p + ki->words[i].off, sizeof(w));
			if (texobj_is_live(w))
				return true;
		}
		return false;
	}
	for (size_t j = 0; j + sizeof(w) <= size; j += sizeof(w)) {
		memcpy(&w, buf + j, sizeof(w));
		if (texobj_is_live(w))
			return true;
	}
	return false;
}

/*
 * The extra form: the buffer and its size.  -ENODATA when no size was given
 * (the driver then ignores the buffer), -EINVAL on anything we cannot
 * interpret safely.
 */
static int kp_parse_extra(void **extra, const unsigned char **buf,
			  size_t *size)
{
	bool have_size = false;
	int k;

	*buf = NULL;
	*size = 0;
	for (k = 0; k < 2 * KP_EXTRA_PAIRS_MAX; k += 2) {
		if (extra[k] == CU_LAUNCH_PARAM_END)
			break;
		if (extra[k] == CU_LAUNCH_PARAM_BUFFER_POINTER) {
			*buf = extra[k + 1];
		} else if (extra[k] == CU_LAUNCH_PARAM_BUFFER_SIZE) {
			if (!extra[k + 1])
				return -EINVAL;
			memcpy(size, extra[k + 1], sizeof(*size));
			have_size = true;
		} else {
			/* Unknown key: its value's meaning is unknown too. */
			return -EINVAL;
		}
	}
	if (k >= 2 * KP_EXTRA_PAIRS_MAX)
		return -EINVAL;
	if (!have_size)
		return -ENODATA;
	if (*size != 0 && !*buf)
		return -EINVAL;
	return 0;
}

/*
 * Pointer tables (ptrtab.h): each allocation found so far that the host
 * filled with pointers makes the kernel reach the allocations they point
 * into, read and written, whole (no parameter's proof or extent covers a
 * pointer loaded from memory).  One level: the tables among the direct
 * finds, not tables reached through a table.
 */
static void kp_add_tables(struct kp_collect *c)
{
	uint64_t p[PTRTAB_REFS];
	int direct = c->n, k;

	if (ptrtab_lost()) {
		c->flags |= KPARAMS_TABLE_OPAQUE;
		return;
	}
	for (int i = 0; i < direct && !c->full; i++) {
		k = ptrtab_get(c->out[i].alloc_id, p, PTRTAB_REFS);
		if (k == -ENOENT)
			continue;
		if (k < 0) {
			c->flags |= KPARAMS_TABLE_OPAQUE;
			return;
		}
		for (int j = 0; j < k && !c->full; j++) {
			/* Outside every allocation now: nothing to order. */
			if (p[j] - c->lo >= c->hi - c->lo)
				continue;
			c->word[c->nw] = p[j];
			c->wparam[c->nw] = KPARAMS_PARAM_UNKNOWN;
			if (++c->nw == KP_BATCH)
				kp_flush(c);
		}
	}
	kp_flush(c);
}

/* The extents of ki for one geometry: cached, solved, or NULL. */
static const struct kp_geo *kp_geo_for(const struct kernel_info *ki,
				       const unsigned grid[3],
				       const unsigned block[3])
{
	struct kernel_info *mki = (struct kernel_info *)ki;
	struct kp_geo *g = atomic_load_explicit(&mki->geo,
						memory_order_acquire);
	struct ptxr_geom pg;
	int64_t lo[PTXR_MAX_PARAMS], hi[PTXR_MAX_PARAMS];
	uint64_t has = 0;
	int n = ki->nparams;

	if (g && memcmp(g->grid, grid, sizeof(g->grid)) == 0 &&
	    memcmp(g->block, block, sizeof(g->block)) == 0)
		return g;
	if (n <= 0 || atomic_fetch_add(&mki->geo_solves, 1) >=
			      KP_GEO_SOLVES_MAX)
		return NULL;
	for (int d = 0; d < 3; d++) {
		pg.grid[d] = grid[d];
		pg.block[d] = block[d];
	}
	if (ptxr_solve(ki->range, &pg, &has, lo, hi) < 0)
		has = 0;
	/* Nothing for this geometry: likely none for any; stop sooner. */
	if (!has)
		atomic_fetch_add(&mki->geo_solves, KP_GEO_SOLVES_MAX / 4);
	g = calloc(1, sizeof(*g) + (size_t)n * sizeof(g->ext[0]));
	if (!g)
		return NULL;
	memcpy(g->grid, grid, sizeof(g->grid));
	memcpy(g->block, block, sizeof(g->block));
	/* Exact extents stand; ranges fill in the parameters without one. */
	for (int i = 0; i < n && i < 64; i++) {
		uint64_t bit = (uint64_t)1 << i;

		if (ki->has_extent & bit) {
			g->ext[i] = ki->ext[i];
			g->has_extent |= bit;
		} else if (has & bit) {
			g->ext[i] = (struct kparams_extent){ lo[i], hi[i] };
			if (kp_extent_ok(&g->ext[i]))
				g->has_extent |= bit;
		}
	}
	/* Whoever holds the old one keeps it: replaced, never freed. */
	g->retired = atomic_exchange_explicit(&mki->geo, g,
					      memory_order_acq_rel);
	return g;
}

int kparams_collect(struct alloc_table *t, const struct kernel_info *ki,
		    void **kernel_params, void **extra, struct access *out,
		    int max, unsigned *flags)
{
	return kparams_collect_at(t, ki, NULL, NULL, kernel_params, extra,
				  out, max, flags);
}

int kparams_collect_at(struct alloc_table *t, const struct kernel_info *ki,
		       const unsigned grid[3], const unsigned block[3],
		       void **kernel_params, void **extra, struct access *out,
		       int max, unsigned *flags)
{
	struct kp_collect c;
	const unsigned char *buf;
	uint32_t off, len;
	size_t size;
	int nparams = ki ? ki->nparams : -1;
	kparams_span_fn span_fn;

	/* Field by field: an initializer would clear dedup[] every launch. */
	c.t = t;
	alloc_table_span(t, &c.lo, &c.hi);
	c.xlo = atomic_load_explicit(&kp_extra_lo, memory_order_relaxed);
	c.xhi = atomic_load_explicit(&kp_extra_hi, memory_order_relaxed);
	span_fn = atomic_load_explicit(&kp_span_filter, memory_order_relaxed);
	if (span_fn) {
		uint64_t lo, hi;

		span_fn(&lo, &hi);
		if (lo > c.lo)
			c.lo = lo;
		if (hi < c.hi)
			c.hi = hi;
		if (c.hi <= c.lo)
			c.lo = c.hi = 0;	/* empty: every word misses */
	}
	/* Located variables: the one filter must let their words through. */
	if (unlikely(c.xhi != c.xlo)) {
		if (c.hi <= c.lo) {
			c.lo = c.xlo;
			c.hi = c.xhi;
		} else {
			if (c.xlo < c.lo)
				c.lo = c.xlo;
			if (c.xhi > c.hi)
				c.hi = c.xhi;
		}
	}
	c.out = out;
	c.readonly = ki ? ki->readonly : 0;
	c.has_extent = ki ? ki->has_extent : 0;
	c.ext = ki ? ki->ext : NULL;
	if (ki && ki->range && grid && block) {
		const struct kp_geo *g = kp_geo_for(ki, grid, block);

		if (g) {
			c.has_extent = g->has_extent;
			c.ext = g->ext;
		}
	}
	c.max = max < 0 ? 0 : max;
	c.n = 0;
	c.flags = 0;
	c.full = false;
	c.hashed = false;
	c.nw = 0;

	if (kernel_params) {
		if (nparams < 0) {
			/* Parameter sizes unknown: cannot even read them. */
			c.flags |= KPARAMS_UNKNOWN_LAYOUT;
			goto out;
		}
		kp_scan_words(&c, ki, kernel_params);
		if (unlikely(texobj_any()) &&
		    (texobj_escaped() ||
		     kp_any_handle(ki, kernel_params, NULL, 0)))
			c.flags |= KPARAMS_OPAQUE_HANDLE;
		goto out;
	}
	if (!extra)
		goto out;
	if (kp_parse_extra(extra, &buf, &size) != 0) {
		c.flags |= KPARAMS_EXTRA_OPAQUE;
		goto out;
	}
	if (unlikely(texobj_any()) &&
	    (texobj_escaped() ||
	     kp_any_handle(ki, NULL, buf, size < KP_PARAM_BYTES_MAX ? size :
			   KP_PARAM_BYTES_MAX)))
		c.flags |= KPARAMS_OPAQUE_HANDLE;
	if (nparams < 0) {
		c.flags |= KPARAMS_UNKNOWN_LAYOUT;
		/* A size beyond any kernel's limit would only make us fault. */
		if (size > KP_PARAM_BYTES_MAX) {
			c.flags |= KPARAMS_EXTRA_OPAQUE;
			goto out;
		}
		kp_scan(&c, buf, 0, (uint32_t)size, KPARAMS_PARAM_UNKNOWN);
		goto out;
	}
	for (int i = 0; i < nparams && !c.full; i++) {
		/* Read nothing past the buffer the program said it passed. */
		off = ki->offset[i];
		if (off >= size)
			continue;
		len = ki->size[i];
		if (len > size - off)
			len = (uint32_t)(size - off);
		kp_scan(&c, buf + off, off, len, (uint32_t)i);
	}
out:
	kp_flush(&c);
	if (ptrtab_any() && !c.full)
		kp_add_tables(&c);
	if (flags)
		*flags = c.flags;
	return c.n;
}
