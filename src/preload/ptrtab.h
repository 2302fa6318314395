/*
 * ptrtab.h - pointer tables: device allocations the host filled, through a
 * host-to-device copy (or a device-to-device copy of such a table), with
 * pointers into other allocations.  cuBLAS's and
 * cuSOLVER's batched calls take such arrays (A[i], B[i], C[i] uploaded by
 * the program), CUTLASS's grouped GEMM a list of problems, hand-written
 * code a table of buffers.  A kernel given a table reaches what the table
 * points to, which its parameters do not show: kparams.c adds those
 * allocations to the launch's accesses, read-write and whole
 * (docs/design-streams.md, "Pointer tables").
 *
 * This file owns the bookkeeping only: which table holds pointers into
 * which allocations.  copy.c finds the pointers in the bytes a copy
 * uploads; nothing here looks at an allocation table.
 * One mutex; while no table exists a launch pays one relaxed load
 * (ptrtab_any()).
 */
#ifndef KMUX_PTRTAB_H
#define KMUX_PTRTAB_H

#include <stdbool.h>
#include <stdint.h>

#define PTRTAB_TABLES		128	/* tables kept at once */
#define PTRTAB_REFS		128	/* distinct allocations per table */
/*
 * An upload of at most PTRTAB_SCAN_SMALL bytes is read whole.  Of a larger
 * one the first PTRTAB_SCAN_HEAD bytes are read, and the rest only when
 * those held a candidate pointer: most large uploads are data, and reading
 * all of them would cost the host about what the copy costs.  A table
 * larger than PTRTAB_SCAN_MAX is not read to its end: it is opaque.
 */
#define PTRTAB_SCAN_SMALL	65536
#define PTRTAB_SCAN_HEAD	4096
#define PTRTAB_SCAN_MAX		(16u << 20)

/* One pointer found in an upload: the allocation it pointed into then. */
struct ptrtab_ref {
	uint64_t alloc_id;
	uint64_t addr;		/* the pointer's value */
};

/*
 * Whether a table's id is still the allocation at base (for reclaiming
 * the slots of tables that were freed).
 */
typedef bool (*ptrtab_live_fn)(uint64_t id, uint64_t base, void *arg);

/* Any table noted, or the bookkeeping lost one (ptrtab_lost()). */
bool ptrtab_any(void);

/*
 * Table id (the allocation at base) now also holds the pointers ref[0..n):
 * their allocations join the table's, one entry per allocation (its first
 * pointer kept).  A table only grows: pointers overwritten later stay
 * (an extra dependency, never a missing one).  Returns 0; -E2BIG when the
 * table reached PTRTAB_REFS allocations (it is opaque from then on:
 * ptrtab_get() says so); -ENOSPC when no slot was free even after the
 * tables live() denies were dropped (then ptrtab_lost() holds for good).
 */
int ptrtab_note(uint64_t id, uint64_t base, const struct ptrtab_ref *ref,
		int n, ptrtab_live_fn live, void *arg);

/*
 * Table id holds pointers kmux did not read (a table too large to scan):
 * it is opaque.  Returns -E2BIG, or -ENOSPC as ptrtab_note().
 */
int ptrtab_note_opaque(uint64_t id, uint64_t base, ptrtab_live_fn live,
		       void *arg);

/*
 * A device-to-device copy from allocation from into allocation id (at
 * base): when from is a table, id now also holds every pointer from holds
 * (all of them, whatever part was copied: an extra dependency, never a
 * missing one), and is opaque when from is.  Returns 0 when from is no
 * table; otherwise as ptrtab_note().
 */
int ptrtab_copy(uint64_t from, uint64_t id, uint64_t base,
		ptrtab_live_fn live, void *arg);

/*
 * The pointers of table id into out: how many; -ENOENT when id holds no
 * table; -E2BIG when the table is opaque (a kernel given it may reach
 * anything) or holds more than max.
 */
int ptrtab_get(uint64_t id, uint64_t *out, int max);

/* Some table could not be kept: no launch can be trusted to show all. */
bool ptrtab_lost(void);

/* For the exit line: tables noted, allocations the kept ones reach, opaque tables. */
void ptrtab_counts(uint64_t *tables, uint64_t *refs, uint64_t *opaque);

/* Forget everything (tests). */
void ptrtab_reset(void);

/* pthread_atfork handlers (preload.c): the mutex is held across fork(). */
void ptrtab_atfork_prepare(void);
void ptrtab_atfork_parent(void);
void ptrtab_atfork_child(void);

#endif
