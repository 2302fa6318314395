/*
 * alloc-table.c - the tracker's interval map of a process's GPU allocations.
 *
 * Owns: the table (insert/remove/find), the epoch-based reclamation (EBR)
 * that lets lookups run without a lock, and the process-wide table.
 *
 * Why this shape.  alloc_table_find() runs for every 8-byte parameter word
 * of every launch, from any thread, so it must not lock, call the kernel or
 * allocate.  Insert and remove follow the program's allocation calls and are
 * rare by comparison, so they may be slow-ish and serialize on a mutex.
 *
 * Snapshots.  The table is an immutable two-level structure: a root holding
 * the first base address of each chunk (a sorted key array, searched first)
 * and pointers to chunks of at most CHUNK_MAX sorted, disjoint allocations.
 * A writer copies the root and only the one or two chunks it changes (copy on
 * write), then publishes the new root with a single atomic store.  A flat
 * sorted array would copy all n entries on every alloc: 100k live
 * allocations would mean 3.2 MB copied per cuMemAlloc, O(n^2) to build the
 * table.  With chunks a write copies about n/CHUNK_MAX root slots plus
 * CHUNK_MAX entries (~20 KB at 100k) and a lookup is still two binary
 * searches, O(log n).
 *
 * Reclamation.  A reader may still be walking a snapshot after a writer
 * replaced it, so replaced pieces are retired, tagged with the global epoch,
 * and freed only when no reader can still hold them.  Each reader thread owns
 * one of EBR_SLOTS cache-line-sized slots (claimed once by CAS, kept in a
 * thread-local index, given back by a pthread key destructor at thread exit)
 * and, for the duration of one lookup, announces in it the epoch it read.  A
 * piece retired at epoch E is freed once every announced epoch is > E: such
 * readers started after the piece was unlinked (see ebr_enter()).
 *
 * Threads that find every slot taken (more than EBR_SLOTS threads reading at
 * once) are counted instead in one of two global counters chosen by the
 * parity of the epoch they read.  The epoch only advances from c to c+1 when
 * no counted reader of epoch c-1 remains, so counted readers always belong to
 * the current or the previous epoch, and a writer seeing any counted reader
 * keeps everything retired at or after the previous epoch.  New counted
 * readers join the current parity, so the old one always drains: unlike a
 * single counter, continuous overflow traffic cannot stall reclamation.
 *
 * Every atomic in the reader/writer handshake is seq_cst (on x86 that costs
 * one xchg per lookup): the reader's "announce, then load the root" and the
 * writer's "publish, then scan the slots" are a Dekker pair, and at least one
 * side must see the other.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "compiler.h"
#include "alloc-table.h"

/*
 * Chunk sizing: a write copies ~CHUNK_MAX entries (32 bytes each) plus the
 * root (16 bytes per chunk); 256 keeps both near 10 KB at 100k allocations.
 * A chunk left with fewer than CHUNK_MIN entries is merged into a neighbour
 * so that frees cannot leave a root full of nearly empty chunks.
 */
#define CHUNK_MAX 256
#define CHUNK_MIN (CHUNK_MAX / 4)

#define EBR_SLOTS 256
#define EBR_CACHELINE 64

/* Slotless threads try again to claim a slot after this many lookups. */
#define EBR_CLAIM_RETRY 4096

/* ebr_my_slot values other than a slot index. */
#define EBR_NONE -1		/* not claimed yet, or none was free */
#define EBR_EXITING -2		/* thread is exiting: never claim again */

struct at_chunk {
	uint32_t n;
	struct alloc e[];		/* n entries sorted by base, disjoint */
};

struct at_root {
	size_t nchunks;
	struct at_chunk **chunks;	/* points into the same allocation */
	uint64_t keys[];		/* keys[i] == chunks[i]->e[0].base */
};

struct at_retired {
	void *p;
	uint64_t epoch;			/* global epoch when it was unlinked */
};

struct alloc_table {
	/* Read by every lookup; written only by writers. */
	_Atomic(struct at_root *) root;
	/*
	 * [lo, hi) covers every live allocation (empty: lo > hi), so that words
	 * that are plainly not device pointers (small integers, floats) miss
	 * without entering a read section at all.
	 */
	_Atomic uint64_t lo;
	_Atomic uint64_t hi;

	/* Writers' side, on its own cache lines. */
	_Alignas(EBR_CACHELINE) pthread_mutex_t lock;
	_Atomic size_t count;
	_Atomic uint64_t bytes[ALLOC_KIND_COUNT];
	struct at_retired *retired;	/* ordered by epoch */
	size_t nretired;
	size_t retired_cap;
	/* Work area for rebuilding chunks: one or two chunks plus one entry. */
	struct alloc scratch[2 * CHUNK_MAX + 1];
};

struct ebr_slot {
	_Atomic uint64_t epoch;		/* 0: not inside a lookup */
	_Atomic int owned;
	char pad[EBR_CACHELINE - sizeof(uint64_t) - sizeof(int)];
} __attribute__((aligned(EBR_CACHELINE)));

_Static_assert(sizeof(struct ebr_slot) == EBR_CACHELINE,
	       "one reader slot per cache line");

/*
 * The EBR domain is process-wide (every table shares the slots and the
 * epoch): a thread's slot index is thread-local, and a reader of one table
 * only delays, never endangers, the reclamation of another.  Epochs start at
 * 2 so that "previous epoch" is never the idle value 0.
 */
static struct ebr_slot ebr_slot[EBR_SLOTS];
static _Atomic int ebr_hwm;		/* slots [0, hwm) were ever owned */
static _Atomic uint64_t ebr_epoch = 2;
static _Atomic unsigned long ebr_unslotted[2];
static pthread_key_t ebr_key;
static pthread_once_t ebr_key_once = PTHREAD_ONCE_INIT;
static bool ebr_key_ok;

static __thread int ebr_my_slot = EBR_NONE;
static __thread unsigned ebr_retry;

/*
 * alloc_table_find_cached(): a per-thread direct-mapped memo of recent
 * lookups.  Programs pass the same pointers launch after launch (weights,
 * a caching allocator's recycled blocks), and a lookup is two binary
 * searches whose dependent loads were a fifth of a scheduled launch's host
 * time.  at_gen moves after every change of any table (after the new root
 * is published), so a memo entry is exactly as fresh as a lookup made
 * when it was filled: a reader racing a writer may see either state, as
 * with alloc_table_find() itself.
 */
#define AT_MEMO_BITS 10
#define AT_MEMO (1u << AT_MEMO_BITS)	/* 48 KiB a thread, touched lazily */
struct at_memo {
	uint64_t addr;
	uint64_t gen;		/* at_gen when filled; 0: never */
	struct alloc a;		/* a.id 0: addr is in no allocation */
};
static _Atomic uint64_t at_gen = 1;
static __thread struct at_memo at_memo[AT_MEMO];

/*
 * The calling thread's memo.  Out of line so that a batch computes the TLS
 * address once: inlined, the compiler re-derives it (a __tls_get_addr call
 * in a shared object) at every use inside the loop.
 */
static __attribute__((noinline)) struct at_memo *at_memo_mine(void)
{
	return at_memo;
}

/* Ids are unique across every table of the process and never reused. */
static _Atomic uint64_t at_next_id = 1;

static _Atomic(struct alloc_table *) at_global;

/* What a reader must remember between ebr_enter() and ebr_exit(). */
struct ebr_guard {
	int slot;			/* >= 0, or -1 when counted */
	int parity;			/* counter used when slot < 0 */
};

static void ebr_thread_exit(void *arg)
{
	int s = (int)(uintptr_t)arg - 1;

	if (s >= 0 && s < EBR_SLOTS) {
		atomic_store(&ebr_slot[s].epoch, 0);
		atomic_store_explicit(&ebr_slot[s].owned, 0,
				      memory_order_release);
	}
	/* Later TSD destructors may still launch: they read slotless. */
	ebr_my_slot = EBR_EXITING;
}

static void ebr_key_init(void)
{
	ebr_key_ok = pthread_key_create(&ebr_key, ebr_thread_exit) == 0;
}

/*
 * Claim a free slot for this thread; once per thread (or, for a thread that
 * found none, once per EBR_CLAIM_RETRY lookups).  Returns the slot or -1.
 */
static int ebr_claim(void)
{
	int hwm;

	if (ebr_my_slot == EBR_EXITING)
		return -1;
	if (ebr_retry != 0) {
		ebr_retry--;
		return -1;
	}
	pthread_once(&ebr_key_once, ebr_key_init);
	/* Without the key a slot could not be given back at thread exit. */
	if (!ebr_key_ok)
		goto none;
	for (int s = 0; s < EBR_SLOTS; s++) {
		int zero = 0;

		if (atomic_load_explicit(&ebr_slot[s].owned,
					 memory_order_relaxed) != 0)
			continue;
		if (!atomic_compare_exchange_strong(&ebr_slot[s].owned, &zero,
						    1))
			continue;
		if (pthread_setspecific(ebr_key, (void *)(uintptr_t)(s + 1))) {
			atomic_store(&ebr_slot[s].owned, 0);
			goto none;
		}
		/*
		 * Raise the high-water mark before the first announcement, so
		 * that a writer scanning [0, hwm) cannot miss this slot.
		 */
		hwm = atomic_load(&ebr_hwm);
		while (hwm < s + 1 &&
		       !atomic_compare_exchange_weak(&ebr_hwm, &hwm, s + 1))
			;
		ebr_my_slot = s;
		return s;
	}
none:
	ebr_retry = EBR_CLAIM_RETRY;
	return -1;
}

/*
 * Enter a read section.  Slotted: announce the epoch, then (Dekker) the
 * caller loads the root.  A writer that unlinked a piece and then scanned
 * either sees this announcement, or this reader's root load sees the new
 * root; and an announced epoch newer than the piece's retire epoch was read
 * after the writer's unlink, so that reader sees the new root too.
 */
static inline void ebr_enter(struct ebr_guard *g)
{
	int s = ebr_my_slot;
	uint64_t e;

	if (unlikely(s < 0))
		s = ebr_claim();
	g->slot = s;
	if (likely(s >= 0)) {
		e = atomic_load(&ebr_epoch);
		atomic_store(&ebr_slot[s].epoch, e);
		return;
	}
	/*
	 * Counted reader.  Re-check the epoch after counting: if it moved, a
	 * writer may already have checked this parity's counter, so count
	 * again under the new epoch.
	 */
	for (;;) {
		e = atomic_load(&ebr_epoch);
		g->parity = (int)(e & 1);
		atomic_fetch_add(&ebr_unslotted[g->parity], 1);
		if (atomic_load(&ebr_epoch) == e)
			return;
		atomic_fetch_sub(&ebr_unslotted[g->parity], 1);
	}
}

static inline void ebr_exit(struct ebr_guard *g)
{
	if (likely(g->slot >= 0))
		atomic_store_explicit(&ebr_slot[g->slot].epoch, 0,
				      memory_order_release);
	else
		atomic_fetch_sub_explicit(&ebr_unslotted[g->parity], 1,
					  memory_order_release);
}

/*
 * Move the epoch on, unless counted readers of the previous epoch remain:
 * they share the next epoch's counter, and must drain first.
 */
static void ebr_advance(void)
{
	uint64_t c = atomic_load(&ebr_epoch);

	if (atomic_load(&ebr_unslotted[(c + 1) & 1]) != 0)
		return;
	atomic_compare_exchange_strong(&ebr_epoch, &c, c + 1);
}

/* Oldest epoch a reader may be in right now; UINT64_MAX when none. */
static uint64_t ebr_oldest(void)
{
	uint64_t min = UINT64_MAX;
	int hwm = atomic_load(&ebr_hwm);
	uint64_t c, e;

	for (int s = 0; s < hwm; s++) {
		e = atomic_load(&ebr_slot[s].epoch);
		if (e != 0 && e < min)
			min = e;
	}
	c = atomic_load(&ebr_epoch);
	if (atomic_load(&ebr_unslotted[0]) != 0 ||
	    atomic_load(&ebr_unslotted[1]) != 0) {
		if (c - 1 < min)
			min = c - 1;
	}
	return min;
}

/* Make room to retire n more pieces, before anything is published. */
static int table_reserve_retired(struct alloc_table *t, size_t n)
{
	struct at_retired *r;
	size_t cap;

	if (t->nretired + n <= t->retired_cap)
		return 0;
	cap = t->retired_cap ? t->retired_cap * 2 : 16;
	while (cap < t->nretired + n)
		cap *= 2;
	r = realloc(t->retired, cap * sizeof(*r));
	if (!r)
		return -ENOMEM;
	t->retired = r;
	t->retired_cap = cap;
	return 0;
}

/* Free every retired piece no reader can hold any more.  Under t->lock. */
static void table_reclaim(struct alloc_table *t)
{
	uint64_t oldest = ebr_oldest();
	size_t i = 0;

	while (i < t->nretired && t->retired[i].epoch < oldest)
		free(t->retired[i++].p);
	if (i == 0)
		return;
	memmove(t->retired, t->retired + i,
		(t->nretired - i) * sizeof(*t->retired));
	t->nretired -= i;
}

static struct at_root *root_alloc(size_t nchunks)
{
	struct at_root *r;

	r = malloc(sizeof(*r) + nchunks * (sizeof(uint64_t) +
					   sizeof(struct at_chunk *)));
	if (!r)
		return NULL;
	r->nchunks = nchunks;
	r->chunks = (struct at_chunk **)(r->keys + nchunks);
	return r;
}

/*
 * The two searches are branchless (the ternaries become cmov), so that a
 * lookup costs the same however unpredictable the launch's pointers are:
 * about ten dependent loads, ~15 ns at 1000 allocations.  The range
 * [k, k + n) always holds the last key <= addr when there is one, and
 * everything past it is > addr.
 */

/* Index of the last chunk whose first base is <= addr, or -1. */
static inline long root_chunk_for(const struct at_root *r, uint64_t addr)
{
	const uint64_t *k = r->keys;
	size_t n = r->nchunks, half;

	if (n == 0)
		return -1;
	while (n > 1) {
		half = n / 2;
		k = k[half] <= addr ? k + half : k;
		n -= half;
	}
	return *k <= addr ? (long)(k - r->keys) : -1;
}

/* Index of the last entry whose base is <= addr, or -1. */
static inline long chunk_entry_for(const struct at_chunk *c, uint64_t addr)
{
	const struct alloc *e = c->e;
	size_t n = c->n, half;

	if (n == 0)
		return -1;
	while (n > 1) {
		half = n / 2;
		e = e[half].base <= addr ? e + half : e;
		n -= half;
	}
	return e->base <= addr ? (long)(e - c->e) : -1;
}

struct alloc_table *alloc_table_new(void)
{
	struct alloc_table *t;
	struct at_root *r;
	void *p;

	/* malloc only promises 16-byte alignment; the struct asks for 64. */
	if (posix_memalign(&p, _Alignof(struct alloc_table), sizeof(*t)) != 0)
		return NULL;
	t = memset(p, 0, sizeof(*t));
	r = root_alloc(0);
	if (!r)
		goto err_free_table;
	if (pthread_mutex_init(&t->lock, NULL) != 0)
		goto err_free_root;
	atomic_init(&t->root, r);
	atomic_init(&t->lo, UINT64_MAX);
	atomic_init(&t->hi, 0);
	atomic_init(&t->count, 0);
	for (int k = 0; k < ALLOC_KIND_COUNT; k++)
		atomic_init(&t->bytes[k], 0);
	return t;

err_free_root:
	free(r);
err_free_table:
	free(t);
	return NULL;
}

/* The caller guarantees that no other thread uses t any more. */
void alloc_table_free(struct alloc_table *t)
{
	struct at_root *r;

	if (!t)
		return;
	r = atomic_load_explicit(&t->root, memory_order_relaxed);
	for (size_t i = 0; i < r->nchunks; i++)
		free(r->chunks[i]);
	free(r);
	for (size_t i = 0; i < t->nretired; i++)
		free(t->retired[i].p);
	free(t->retired);
	pthread_mutex_destroy(&t->lock);
	free(t);
}

/*
 * Publish a new root in which chunks [lo, hi) of old are replaced by the m
 * sorted entries in t->scratch, cut into as few even chunks as fit, and
 * retire what was replaced.  Under t->lock.  Nothing is published on error.
 */
static int table_replace(struct alloc_table *t, struct at_root *old,
			 size_t lo, size_t hi, size_t m, bool grows)
{
	struct at_chunk *nc[3] = { NULL, NULL, NULL };
	size_t k = (m + CHUNK_MAX - 1) / CHUNK_MAX, nn, first, last;
	struct at_root *r;
	struct at_chunk *tail;
	uint64_t epoch;
	int ret = -ENOMEM;

	if (table_reserve_retired(t, 1 + (hi - lo)) != 0)
		return -ENOMEM;
	for (size_t j = 0; j < k; j++) {
		first = m * j / k;
		last = m * (j + 1) / k;
		nc[j] = malloc(sizeof(*nc[j]) +
			       (last - first) * sizeof(struct alloc));
		if (!nc[j])
			goto err_free_chunks;
		nc[j]->n = (uint32_t)(last - first);
		memcpy(nc[j]->e, t->scratch + first,
		       (last - first) * sizeof(struct alloc));
	}
	nn = old->nchunks - (hi - lo) + k;
	r = root_alloc(nn);
	if (!r)
		goto err_free_chunks;
	memcpy(r->chunks, old->chunks, lo * sizeof(*r->chunks));
	memcpy(r->chunks + lo, nc, k * sizeof(*r->chunks));
	memcpy(r->chunks + lo + k, old->chunks + hi,
	       (old->nchunks - hi) * sizeof(*r->chunks));
	memcpy(r->keys, old->keys, lo * sizeof(*r->keys));
	for (size_t j = 0; j < k; j++)
		r->keys[lo + j] = nc[j]->e[0].base;
	memcpy(r->keys + lo + k, old->keys + hi,
	       (old->nchunks - hi) * sizeof(*r->keys));

	/*
	 * Bounds: an insert widens them before the new root is visible, a
	 * remove narrows them after, so they always cover every allocation a
	 * reader could otherwise have found.
	 */
	if (grows) {
		atomic_store(&t->lo, r->keys[0]);
		tail = r->chunks[nn - 1];
		atomic_store(&t->hi, tail->e[tail->n - 1].base +
			     tail->e[tail->n - 1].size);
	}
	atomic_store(&t->root, r);
	if (!grows) {
		if (nn == 0) {
			atomic_store(&t->lo, UINT64_MAX);
			atomic_store(&t->hi, 0);
		} else {
			tail = r->chunks[nn - 1];
			atomic_store(&t->lo, r->keys[0]);
			atomic_store(&t->hi, tail->e[tail->n - 1].base +
				     tail->e[tail->n - 1].size);
		}
	}

	atomic_fetch_add_explicit(&at_gen, 1, memory_order_release);
	/* The new root is visible: read the epoch the old pieces die in. */
	epoch = atomic_load(&ebr_epoch);
	t->retired[t->nretired++] = (struct at_retired){ old, epoch };
	for (size_t i = lo; i < hi; i++)
		t->retired[t->nretired++] =
			(struct at_retired){ old->chunks[i], epoch };
	ebr_advance();
	table_reclaim(t);
	return 0;

err_free_chunks:
	for (size_t j = 0; j < k; j++)
		free(nc[j]);
	return ret;
}

int alloc_table_insert(struct alloc_table *t, uint64_t base, uint64_t size,
		       enum alloc_kind kind, int device, uint64_t *id_out)
{
	return alloc_table_insert_flags(t, base, size, kind, device, 0,
					id_out);
}

int alloc_table_insert_flags(struct alloc_table *t, uint64_t base,
			     uint64_t size, enum alloc_kind kind, int device,
			     unsigned flags, uint64_t *id_out)
{
	const struct alloc *pred = NULL, *succ = NULL;
	const struct at_chunk *ch = NULL;
	struct at_root *r;
	size_t lo, hi, m = 0, pos = 0;
	long c, i = -1;
	uint64_t id;
	int ret;

	if (!t || size == 0 || size > UINT64_MAX - base ||
	    (unsigned)kind >= ALLOC_KIND_COUNT)
		return -EINVAL;

	pthread_mutex_lock(&t->lock);
	r = atomic_load_explicit(&t->root, memory_order_relaxed);

	/* Neighbours: the last entry starting at or before base, the next. */
	c = root_chunk_for(r, base);
	if (c >= 0) {
		ch = r->chunks[c];
		/* keys[c] <= base, so i >= 0; checked all the same. */
		i = chunk_entry_for(ch, base);
		if (i >= 0)
			pred = &ch->e[i];
		if ((size_t)(i + 1) < ch->n)
			succ = &ch->e[i + 1];
		else if ((size_t)(c + 1) < r->nchunks)
			succ = &r->chunks[c + 1]->e[0];
	} else if (r->nchunks > 0) {
		succ = &r->chunks[0]->e[0];
	}
	if ((pred && pred->base + pred->size > base) ||
	    (succ && succ->base < base + size)) {
		ret = -EEXIST;
		goto out;
	}

	/* New entry goes into chunk c (or the first chunk, or a new one). */
	if (r->nchunks == 0) {
		lo = hi = 0;
	} else {
		lo = c >= 0 ? (size_t)c : 0;
		hi = lo + 1;
		ch = r->chunks[lo];
		pos = c >= 0 ? (size_t)i + 1 : 0;
		memcpy(t->scratch, ch->e, pos * sizeof(struct alloc));
		memcpy(t->scratch + pos + 1, ch->e + pos,
		       (ch->n - pos) * sizeof(struct alloc));
		m = ch->n;
	}
	id = atomic_fetch_add(&at_next_id, 1);
	t->scratch[pos] = (struct alloc){
		.base = base, .size = size, .id = id,
		.kind = kind, .device = device, .flags = flags,
	};
	ret = table_replace(t, r, lo, hi, m + 1, true);
	if (ret != 0)
		goto out;
	atomic_fetch_add_explicit(&t->count, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&t->bytes[kind], size, memory_order_relaxed);
	if (id_out)
		*id_out = id;
out:
	pthread_mutex_unlock(&t->lock);
	return ret;
}

int alloc_table_remove(struct alloc_table *t, uint64_t base,
		       struct alloc *removed)
{
	const struct at_chunk *ch, *nb;
	struct at_root *r;
	struct alloc gone;
	size_t lo, hi, m = 0;
	long c, i;
	int ret = -ENOENT;

	if (!t)
		return -EINVAL;
	pthread_mutex_lock(&t->lock);
	r = atomic_load_explicit(&t->root, memory_order_relaxed);
	c = root_chunk_for(r, base);
	if (c < 0)
		goto out;
	ch = r->chunks[c];
	i = chunk_entry_for(ch, base);
	if (i < 0 || ch->e[i].base != base)
		goto out;
	gone = ch->e[i];

	/*
	 * Rebuild chunk c without the entry; when that leaves it too small,
	 * take a neighbour along (the right one if any) and re-split.
	 */
	lo = (size_t)c;
	hi = lo + 1;
	if (ch->n - 1 < CHUNK_MIN && r->nchunks > 1) {
		if (hi < r->nchunks)
			hi++;
		else
			lo--;
	}
	for (size_t j = lo; j < hi; j++) {
		nb = r->chunks[j];
		for (size_t x = 0; x < nb->n; x++)
			if (nb != ch || x != (size_t)i)
				t->scratch[m++] = nb->e[x];
	}
	ret = table_replace(t, r, lo, hi, m, false);
	if (ret != 0)
		goto out;
	atomic_fetch_sub_explicit(&t->count, 1, memory_order_relaxed);
	atomic_fetch_sub_explicit(&t->bytes[gone.kind], gone.size,
				  memory_order_relaxed);
	if (removed)
		*removed = gone;
out:
	pthread_mutex_unlock(&t->lock);
	return ret;
}

int alloc_table_find(struct alloc_table *t, uint64_t addr, struct alloc *out)
{
	const struct at_root *r;
	const struct at_chunk *ch;
	const struct alloc *a;
	struct ebr_guard g = { -1, 0 };
	long c, i;
	int ret = -ENOENT;

	if (unlikely(!t))
		return -EINVAL;
	if (addr < atomic_load_explicit(&t->lo, memory_order_relaxed) ||
	    addr >= atomic_load_explicit(&t->hi, memory_order_relaxed))
		return -ENOENT;

	ebr_enter(&g);
	r = atomic_load(&t->root);
	c = root_chunk_for(r, addr);
	if (c >= 0) {
		ch = r->chunks[c];
		i = chunk_entry_for(ch, addr);
		a = &ch->e[i >= 0 ? i : 0];
		if (i >= 0 && addr - a->base < a->size) {
			if (out)
				*out = *a;
			ret = 0;
		}
	}
	ebr_exit(&g);
	return ret;
}

int alloc_table_find_cached(struct alloc_table *t, uint64_t addr,
			    struct alloc *out)
{
	struct alloc a;
	int found = alloc_table_find_batch(t, &addr, 1, &a);

	if (found <= 0)
		return found < 0 ? found : -ENOENT;
	if (out)
		*out = a;
	return 0;
}

int alloc_table_find_batch(struct alloc_table *t, const uint64_t *addr,
			   int n, struct alloc *out)
{
	struct at_memo *memo, *m;
	uint64_t gen, lo, hi, x;
	int found = 0;

	if (unlikely(!t))
		return -EINVAL;
	/* Only the process-wide table is memoized (ids are never reused). */
	if (unlikely(t != atomic_load_explicit(&at_global,
					       memory_order_relaxed))) {
		for (int i = 0; i < n; i++) {
			if (alloc_table_find(t, addr[i], &out[i]) == 0)
				found++;
			else
				out[i].id = 0;
		}
		return found;
	}
	lo = atomic_load_explicit(&t->lo, memory_order_relaxed);
	hi = atomic_load_explicit(&t->hi, memory_order_relaxed);
	/*
	 * Read before any lookup, as each alloc_table_find_cached() did: an
	 * entry filled after a concurrent change carries the older
	 * generation, so the next batch looks it up again.
	 */
	gen = atomic_load_explicit(&at_gen, memory_order_acquire);
	memo = at_memo_mine();
	for (int i = 0; i < n; i++) {
		x = addr[i];
		if (x < lo || x >= hi) {
			out[i].id = 0;
			continue;
		}
		m = &memo[(x * 0x9e3779b97f4a7c15ull) >> (64 - AT_MEMO_BITS)];
		if (unlikely(m->addr != x || m->gen != gen)) {
			if (alloc_table_find(t, x, &m->a) != 0)
				m->a.id = 0;
			m->addr = x;
			m->gen = gen;
		}
		out[i] = m->a;
		found += m->a.id != 0;
	}
	return found;
}

void alloc_table_span(struct alloc_table *t, uint64_t *lo, uint64_t *hi)
{
	*lo = t ? atomic_load_explicit(&t->lo, memory_order_relaxed) : 1;
	*hi = t ? atomic_load_explicit(&t->hi, memory_order_relaxed) : 0;
}

size_t alloc_table_count(struct alloc_table *t)
{
	if (!t)
		return 0;
	return atomic_load_explicit(&t->count, memory_order_relaxed);
}

uint64_t alloc_table_bytes(struct alloc_table *t, int kind)
{
	uint64_t sum = 0;

	if (!t || kind >= ALLOC_KIND_COUNT)
		return 0;
	if (kind >= 0)
		return atomic_load_explicit(&t->bytes[kind],
					    memory_order_relaxed);
	for (int k = 0; k < ALLOC_KIND_COUNT; k++)
		sum += atomic_load_explicit(&t->bytes[k], memory_order_relaxed);
	return sum;
}

/* Lock-free creation: the loser of the CAS frees its unused table. */
struct alloc_table *alloc_table_global(void)
{
	struct alloc_table *t, *expected = NULL;

	t = atomic_load_explicit(&at_global, memory_order_acquire);
	if (likely(t))
		return t;
	t = alloc_table_new();
	if (!t)
		return NULL;
	if (!atomic_compare_exchange_strong_explicit(&at_global, &expected, t,
						     memory_order_acq_rel,
						     memory_order_acquire)) {
		alloc_table_free(t);
		t = expected;
	}
	return t;
}

void alloc_table_atfork_prepare(void)
{
	struct alloc_table *t = atomic_load(&at_global);

	if (t)
		pthread_mutex_lock(&t->lock);
}

void alloc_table_atfork_parent(void)
{
	struct alloc_table *t = atomic_load(&at_global);

	if (t)
		pthread_mutex_unlock(&t->lock);
}

/*
 * In the child only the forking thread exists.  The other threads' slots
 * would stay owned forever, and an announcement left by a thread that was
 * mid-lookup at fork time would block reclamation forever, so forget them
 * (and the counted readers).  The writer lock was held across fork by
 * prepare; re-initialise rather than unlock, so that a child handler alone
 * (without prepare) still leaves a usable lock.
 */
void alloc_table_atfork_child(void)
{
	struct alloc_table *t = atomic_load(&at_global);

	for (int s = 0; s < EBR_SLOTS; s++) {
		atomic_store(&ebr_slot[s].epoch, 0);
		if (s != ebr_my_slot)
			atomic_store(&ebr_slot[s].owned, 0);
	}
	atomic_store(&ebr_unslotted[0], 0);
	atomic_store(&ebr_unslotted[1], 0);
	if (t)
		pthread_mutex_init(&t->lock, NULL);
}

int alloc_table_check(struct alloc_table *t)
{
	uint64_t bytes[ALLOC_KIND_COUNT] = { 0 };
	const struct alloc *prev = NULL, *a;
	const struct at_root *r;
	const struct at_chunk *ch;
	size_t count = 0;

	if (!t)
		return -EINVAL;
	r = atomic_load(&t->root);
	for (size_t i = 0; i < r->nchunks; i++) {
		ch = r->chunks[i];
		if (ch->n == 0 || ch->n > CHUNK_MAX)
			return -EUCLEAN;
		/* Removals merge small chunks: only a lone one is small. */
		if (r->nchunks > 1 && ch->n < CHUNK_MIN)
			return -EUCLEAN;
		if (r->keys[i] != ch->e[0].base)
			return -EUCLEAN;
		for (size_t x = 0; x < ch->n; x++) {
			a = &ch->e[x];
			if (a->size == 0 ||
			    (unsigned)a->kind >= ALLOC_KIND_COUNT)
				return -EUCLEAN;
			if (prev && prev->base + prev->size > a->base)
				return -EUCLEAN;
			if (a->base < atomic_load(&t->lo) ||
			    a->base + a->size > atomic_load(&t->hi))
				return -EUCLEAN;
			bytes[a->kind] += a->size;
			count++;
			prev = a;
		}
	}
	if (count != atomic_load(&t->count))
		return -EUCLEAN;
	for (int k = 0; k < ALLOC_KIND_COUNT; k++)
		if (bytes[k] != atomic_load(&t->bytes[k]))
			return -EUCLEAN;
	return 0;
}

size_t alloc_table_retired(struct alloc_table *t)
{
	size_t n;

	if (!t)
		return 0;
	pthread_mutex_lock(&t->lock);
	n = t->nretired;
	pthread_mutex_unlock(&t->lock);
	return n;
}

int alloc_table_slots_in_use(void)
{
	int n = 0;

	for (int s = 0; s < EBR_SLOTS; s++)
		n += atomic_load(&ebr_slot[s].owned) != 0;
	return n;
}
