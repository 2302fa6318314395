/*
 * ptrtab.c - pointer tables (ptrtab.h): a fixed array of tables, each a
 * fixed array of (allocation, pointer) pairs, under one mutex.  Fixed
 * sizes because a table is noted at a copy and read at every launch that
 * names it: no allocation on either path, and a bound on both.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include "ptrtab.h"

struct ptrtab_slot {
	uint64_t id;		/* the table's allocation; 0: free slot */
	uint64_t base;
	int n;
	bool opaque;		/* more than PTRTAB_REFS allocations */
	struct ptrtab_ref ref[PTRTAB_REFS];
};

static pthread_mutex_t pt_lock = PTHREAD_MUTEX_INITIALIZER;
static struct ptrtab_slot pt_slot[PTRTAB_TABLES];
static int pt_used;			/* slots with id != 0 */
static atomic_bool pt_some;		/* pt_used > 0 or pt_lost */
static atomic_bool pt_lost;
/*
 * Bit id % 64 of every table ever noted since the last reset: most
 * allocations a launch names are no table, and this says so without the
 * mutex.
 */
static _Atomic uint64_t pt_mask;
static uint64_t pt_noted, pt_opaque;

bool ptrtab_any(void)
{
	return atomic_load_explicit(&pt_some, memory_order_relaxed);
}

bool ptrtab_lost(void)
{
	return atomic_load_explicit(&pt_lost, memory_order_relaxed);
}

static struct ptrtab_slot *pt_find(uint64_t id)
{
	for (int i = 0; i < PTRTAB_TABLES; i++)
		if (pt_slot[i].id == id)
			return &pt_slot[i];
	return NULL;
}

/* A free slot, after dropping the tables that were freed; NULL: none. */
static struct ptrtab_slot *pt_claim(ptrtab_live_fn live, void *arg)
{
	struct ptrtab_slot *s = pt_find(0);

	if (s || !live)
		return s;
	for (int i = 0; i < PTRTAB_TABLES; i++)
		if (!live(pt_slot[i].id, pt_slot[i].base, arg)) {
			pt_slot[i].id = 0;
			pt_used--;
			s = s ? s : &pt_slot[i];
		}
	return s;
}

/* ptrtab_note() and the others, pt_lock held; opaque: id is opaque now. */
static int pt_note_locked(uint64_t id, uint64_t base,
			  const struct ptrtab_ref *ref, int n, bool opaque,
			  ptrtab_live_fn live, void *arg)
{
	struct ptrtab_slot *s = pt_find(id);
	int others = 0;

	for (int i = 0; i < n; i++)
		others += ref[i].alloc_id != id;
	if (!s && !others && !opaque)
		return 0;	/* points only into itself: no table */
	if (!s) {
		s = pt_claim(live, arg);
		if (!s) {
			atomic_store(&pt_lost, true);
			atomic_store(&pt_some, true);
			return -ENOSPC;
		}
		memset(s, 0, sizeof(*s));
		atomic_fetch_or(&pt_mask, (uint64_t)1 << (id % 64));
		s->id = id;
		s->base = base;
		pt_used++;
		pt_noted++;
		atomic_store(&pt_some, true);
	}
	if (opaque && !s->opaque) {
		s->opaque = true;
		pt_opaque++;
	}
	for (int i = 0; i < n && !s->opaque; i++) {
		int k;

		for (k = 0; k < s->n; k++)
			if (s->ref[k].alloc_id == ref[i].alloc_id)
				break;
		if (k < s->n || ref[i].alloc_id == id)
			continue;
		if (s->n == PTRTAB_REFS) {
			s->opaque = true;
			pt_opaque++;
			break;
		}
		s->ref[s->n++] = ref[i];
	}
	return s->opaque ? -E2BIG : 0;
}

int ptrtab_note(uint64_t id, uint64_t base, const struct ptrtab_ref *ref,
		int n, ptrtab_live_fn live, void *arg)
{
	int r;

	if (id == 0 || n <= 0)
		return n < 0 ? -EINVAL : 0;
	pthread_mutex_lock(&pt_lock);
	r = pt_note_locked(id, base, ref, n, false, live, arg);
	pthread_mutex_unlock(&pt_lock);
	return r;
}

int ptrtab_note_opaque(uint64_t id, uint64_t base, ptrtab_live_fn live,
		       void *arg)
{
	int r;

	if (id == 0)
		return -EINVAL;
	pthread_mutex_lock(&pt_lock);
	r = pt_note_locked(id, base, NULL, 0, true, live, arg);
	pthread_mutex_unlock(&pt_lock);
	return r;
}

int ptrtab_copy(uint64_t from, uint64_t id, uint64_t base,
		ptrtab_live_fn live, void *arg)
{
	struct ptrtab_ref ref[PTRTAB_REFS];
	struct ptrtab_slot *s;
	bool opaque;
	int n, r;

	if (from == 0 || id == 0 || from == id ||
	    !(atomic_load_explicit(&pt_mask, memory_order_acquire) >>
	      (from % 64) & 1))
		return 0;
	pthread_mutex_lock(&pt_lock);
	s = pt_find(from);
	if (!s) {
		r = 0;
		goto out;
	}
	/* Copied out first: claiming a slot for id may reuse others. */
	n = s->n;
	opaque = s->opaque;
	memcpy(ref, s->ref, (size_t)n * sizeof(ref[0]));
	r = pt_note_locked(id, base, ref, n, opaque, live, arg);
out:
	pthread_mutex_unlock(&pt_lock);
	return r;
}

int ptrtab_get(uint64_t id, uint64_t *out, int max)
{
	struct ptrtab_slot *s;
	int n = -ENOENT;

	if (id == 0 || !(atomic_load_explicit(&pt_mask, memory_order_acquire) >>
			 (id % 64) & 1))
		return -ENOENT;
	pthread_mutex_lock(&pt_lock);
	s = pt_find(id);
	if (s && s->opaque) {
		n = -E2BIG;
	} else if (s && s->n > max) {
		n = -E2BIG;	/* the caller cannot take them all */
	} else if (s) {
		n = s->n;
		for (int i = 0; i < n; i++)
			out[i] = s->ref[i].addr;
	}
	pthread_mutex_unlock(&pt_lock);
	return n;
}

void ptrtab_counts(uint64_t *tables, uint64_t *refs, uint64_t *opaque)
{
	uint64_t r = 0;

	pthread_mutex_lock(&pt_lock);
	for (int i = 0; i < PTRTAB_TABLES; i++)
		if (pt_slot[i].id && !pt_slot[i].opaque)
			r += (uint64_t)pt_slot[i].n;
	*tables = pt_noted;
	*refs = r;
	*opaque = pt_opaque;
	pthread_mutex_unlock(&pt_lock);
}

void ptrtab_reset(void)
{
	pthread_mutex_lock(&pt_lock);
	memset(pt_slot, 0, sizeof(pt_slot));
	pt_used = 0;
	pt_noted = 0;
	pt_opaque = 0;
	atomic_store(&pt_lost, false);
	atomic_store(&pt_some, false);
	atomic_store(&pt_mask, 0);
	pthread_mutex_unlock(&pt_lock);
}

/* fork: the mutex is held across it, so the child's copy is consistent. */
void ptrtab_atfork_prepare(void)
{
	pthread_mutex_lock(&pt_lock);
}

void ptrtab_atfork_parent(void)
{
	pthread_mutex_unlock(&pt_lock);
}

void ptrtab_atfork_child(void)
{
	pthread_mutex_unlock(&pt_lock);
}
