/*
 * alloc-table.h - the tracker's interval map of a process's GPU allocations.
 *
 * Every allocation the program makes through the driver (device, managed,
 * host-mapped, VMM-mapped) is an interval [base, base+size).  Launches look up
 * each 8-byte parameter word here, so lookups are lock-free and O(log n):
 * writers (alloc/free, rare) take a mutex, build a new sorted snapshot and
 * publish it with one atomic store; readers binary-search whatever snapshot
 * they loaded.  Old snapshots are reclaimed by epochs: each reader thread owns
 * a slot (claimed once with a CAS, never a lock) where it announces the epoch
 * it is reading in.
 */
#ifndef KMUX_ALLOC_TABLE_H
#define KMUX_ALLOC_TABLE_H

#include <stddef.h>
#include <stdint.h>

enum alloc_kind {
	ALLOC_DEVICE = 0,	/* cuMemAlloc, pitch, async / from pool */
	ALLOC_MANAGED = 1,	/* cuMemAllocManaged */
	ALLOC_HOST_MAPPED = 2,	/* cuMemHostAlloc / cuMemAllocHost / registered */
	ALLOC_VMM = 3,		/* cuMemMap of a cuMemCreate handle */
};
/* Not an enumerator: switches over enum alloc_kind stay -Wswitch clean. */
#define ALLOC_KIND_COUNT 4

struct alloc {
	uint64_t base;		/* device address (host address for host kinds) */
	uint64_t size;		/* bytes */
	uint64_t id;		/* process-unique, never reused, starts at 1 */
	enum alloc_kind kind;
	int device;		/* ordinal, -1 when not known */
	unsigned flags;		/* ALLOC_F_* */
};

/* From kmux's memory pool (stream-alloc.h): freed only by kmux's pool path. */
#define ALLOC_F_POOLED	0x1
/*
 * A graph allocation (graph-mem.h): its address outlives its memory, and
 * graph-mem.c, not the table, knows what it is charged.
 */
#define ALLOC_F_GRAPH	0x2

struct alloc_table;

/* NULL on out of memory. */
struct alloc_table *alloc_table_new(void);
void alloc_table_free(struct alloc_table *t);

/*
 * Insert [base, base+size).  size must be > 0.  Returns 0 and the new id in
 * *id_out (may be NULL), -EEXIST when the range overlaps a live one, -EINVAL on
 * size 0, on a range that wraps past 2^64 - 1 or on an unknown kind, -ENOMEM.
 */
int alloc_table_insert(struct alloc_table *t, uint64_t base, uint64_t size,
		       enum alloc_kind kind, int device, uint64_t *id_out);
/* The same, with ALLOC_F_* flags. */
int alloc_table_insert_flags(struct alloc_table *t, uint64_t base,
			     uint64_t size, enum alloc_kind kind, int device,
			     unsigned flags, uint64_t *id_out);

/* Remove the allocation that starts exactly at base.  -ENOENT if none. */
int alloc_table_remove(struct alloc_table *t, uint64_t base,
		       struct alloc *removed);

/*
 * Find the allocation containing addr.  Lock-free; safe against concurrent
 * insert/remove from other threads.  0 and *out filled (out may be NULL), or
 * -ENOENT.  No lock, syscall or malloc, except once per thread (the first
 * call claims an epoch slot).
 */
int alloc_table_find(struct alloc_table *t, uint64_t addr, struct alloc *out);

/*
 * alloc_table_find() through a small per-thread memo of recent lookups,
 * invalidated by any change to any table: the same answers, faster when a
 * program passes the same pointers again (kernel parameters).
 */
int alloc_table_find_cached(struct alloc_table *t, uint64_t addr,
			    struct alloc *out);

/*
 * alloc_table_find_cached() for n addresses at once (one launch's pointer
 * words): out[i] gets the allocation containing addr[i], or id 0 (then the
 * rest of out[i] is unspecified).  The answers are those of n lookups made
 * back to back from the call's start; the per-call work (the thread's memo,
 * its generation, the table's span) is done once.  Returns how many were
 * found, or -EINVAL when t is NULL.
 */
int alloc_table_find_batch(struct alloc_table *t, const uint64_t *addr,
			   int n, struct alloc *out);

/*
 * [*lo, *hi): a range covering every live allocation now (empty: lo > hi),
 * for callers that look up many words and skip those outside it first.
 */
void alloc_table_span(struct alloc_table *t, uint64_t *lo, uint64_t *hi);

/* Number of live allocations and their total bytes, per kind (kind < 0: all). */
size_t alloc_table_count(struct alloc_table *t);
uint64_t alloc_table_bytes(struct alloc_table *t, int kind);

/* The process-wide table used by the preload; created on first use. */
struct alloc_table *alloc_table_global(void);

/*
 * fork(2) support, for pthread_atfork(prepare, parent, child) in the preload.
 * prepare holds the global table's writer lock across fork so that the child
 * inherits a consistent table; child also forgets the reader slots of the
 * threads that do not exist in the child.  Tables other than the global one
 * must not be written across a fork.
 */
void alloc_table_atfork_prepare(void);
void alloc_table_atfork_parent(void);
void alloc_table_atfork_child(void);

/*
 * For tests and diagnostics.  alloc_table_check() verifies the internal
 * invariants (sorted, disjoint, counters agree): 0 or -EUCLEAN; it must not
 * race with writers.  alloc_table_retired() is the number of old snapshot
 * pieces waiting for readers to leave; alloc_table_slots_in_use() the number
 * of reader slots currently owned by threads.
 */
int alloc_table_check(struct alloc_table *t);
size_t alloc_table_retired(struct alloc_table *t);
int alloc_table_slots_in_use(void);

#endif
