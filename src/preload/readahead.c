/*
 * readahead.c - the read-ahead table (readahead.h): which ranges the host
 * reads back synchronously, after how many writes, and which slot's copy
 * is current.  streams.c queues the copies and serves the reads.
 *
 * Why count writes per read: a solver that writes its residual every
 * iteration but reads it every hundredth would otherwise pay a copy per
 * iteration for one read in a hundred.  The next read is expected after as
 * many writes as came between the last two; the read-ahead is due from
 * that write on (and after each one after it, until RA_UNUSED_MAX queued
 * copies go unused).
 */
#include <stddef.h>

#include "readahead.h"

static int ra_find(const struct ra_table *t, uint64_t alloc_id)
{
	if (!alloc_id)
		return -1;
	for (int i = 0; i < RA_SLOTS; i++)
		if (t->slot[i].alloc_id == alloc_id)
			return i;
	return -1;
}

/* Empty the slot, keeping the caller's shadow and event for reuse. */
static void ra_clear(struct ra_slot *s)
{
	void *shadow = s->shadow, *ev = s->ev, *wev = s->wev;
	uint64_t gen = s->gen;

	int copying = s->copying;

	*s = (struct ra_slot){
		.shadow = shadow, .ev = ev, .wev = wev, .gen = gen + 1,
		.copying = copying,
	};
}

int ra_learn(struct ra_table *t, uint64_t alloc_id, uint64_t base,
	     uint64_t off, uint64_t bytes)
{
	struct ra_slot *s;
	int i = ra_find(t, alloc_id);

	if (!alloc_id || !bytes || bytes > RA_MAX_BYTES)
		return -1;
	if (i >= 0) {
		s = &t->slot[i];
		if (s->state == RA_QUEUED && s->epoch != t->epoch)
			t->stale++;
		if (s->w_since)
			s->w_per_read = s->w_since;
		/*
		 * A loop may read a buffer whole and a part of it: keep both
		 * in one copy while they fit.
		 */
		if (s->bytes) {
			uint64_t lo = off < s->off ? off : s->off;
			uint64_t hi = off + bytes > s->off + s->bytes ?
				      off + bytes : s->off + s->bytes;

			if (hi - lo <= RA_MAX_BYTES) {
				off = lo;
				bytes = hi - lo;
			}
		}
	} else {
		/*
		 * An empty slot, else the least recently used one whose copy
		 * is not running (its buffer's next writer would no longer
		 * wait for it); none: not learned.
		 */
		i = -1;
		for (int j = 0; j < RA_SLOTS; j++) {
			if (!t->slot[j].alloc_id) {
				i = j;
				break;
			}
			if (!t->slot[j].copying &&
			    (i < 0 || t->slot[j].used < t->slot[i].used))
				i = j;
		}
		if (i < 0)
			return -1;
		s = &t->slot[i];
		ra_clear(s);
		s->alloc_id = alloc_id;
		s->w_per_read = 1;
		t->learned++;
	}
	s->base = base;
	s->off = off;
	s->bytes = bytes;
	s->state = RA_LEARNED;
	s->w_since = 0;
	s->unused = 0;
	s->used = ++t->clock;
	return i;
}

int ra_written(struct ra_table *t, uint64_t alloc_id, uint64_t off,
	       uint64_t len)
{
	int i = ra_find(t, alloc_id);
	struct ra_slot *s;

	if (i < 0)
		return -1;
	s = &t->slot[i];
	/* A write beside the range read back leaves its copy current. */
	if (len && (off >= s->off + s->bytes || s->off >= off + len))
		return -1;
	s->w_since++;
	if (s->state == RA_QUEUED && !s->hit && ++s->unused >= RA_UNUSED_MAX) {
		ra_clear(s);
		t->dropped++;
		return -1;
	}
	if (s->w_since < s->w_per_read) {
		s->state = RA_LEARNED;
		return -1;
	}
	s->state = RA_PENDING;
	s->epoch = t->epoch;
	return i;
}

int ra_due(struct ra_table *t, int i)
{
	struct ra_slot *s = &t->slot[i];

	if (s->state != RA_PENDING)
		return 0;
	if (s->epoch != t->epoch) {
		s->state = RA_LEARNED;
		return 0;
	}
	return 1;
}

void ra_queued(struct ra_table *t, int i)
{
	struct ra_slot *s = &t->slot[i];

	s->state = RA_QUEUED;
	s->hit = 0;
	s->gen++;
	t->queued++;
}

void ra_queue_failed(struct ra_table *t, int i)
{
	if (i >= 0 && i < RA_SLOTS && (t->slot[i].state == RA_QUEUED ||
					t->slot[i].state == RA_PENDING)) {
		t->slot[i].state = RA_LEARNED;
		t->slot[i].gen++;
	}
}

int ra_lookup(const struct ra_table *t, uint64_t alloc_id, uint64_t off,
	      uint64_t bytes)
{
	int i = ra_find(t, alloc_id);
	const struct ra_slot *s;

	if (i < 0 || !bytes)
		return -1;
	s = &t->slot[i];
	if (s->state != RA_QUEUED || s->epoch != t->epoch)
		return -1;
	if (off < s->off || off + bytes > s->off + s->bytes)
		return -1;
	return i;
}

int ra_still(const struct ra_table *t, int i, uint64_t gen)
{
	const struct ra_slot *s = &t->slot[i];

	return s->state == RA_QUEUED && s->gen == gen && s->epoch == t->epoch;
}

void ra_served(struct ra_table *t, int i)
{
	struct ra_slot *s = &t->slot[i];

	if (s->w_since)
		s->w_per_read = s->w_since;
	s->w_since = 0;
	s->unused = 0;
	s->hit = 1;
	s->used = ++t->clock;
	t->served++;
}

void ra_invalidate(struct ra_table *t)
{
	t->epoch++;
}

void ra_forget(struct ra_table *t, uint64_t alloc_id)
{
	int i = ra_find(t, alloc_id);

	if (i >= 0)
		ra_clear(&t->slot[i]);
}
