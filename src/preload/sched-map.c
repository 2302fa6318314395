/*
 * sched-map.c - the scheduler's per-allocation states, in a hash map keyed
 * by alloc-table id.
 *
 * Open addressing with linear probing, at most half full, deletion by
 * backward shift.  Ids are never 0 and never reused, so 0 marks an empty
 * slot.  The only allocation is growth, which happens when an id is seen for
 * the first time (right after the program allocated memory), never while a
 * program runs over allocations it already has: sched_map_reserve() is
 * called before anything in a submission changes, so a failure leaves the
 * scheduler as it was and the operation becomes a barrier.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sched-internal.h"

#define SCHED_MAP_MIN	256u
#define SCHED_MAP_MAX	(1u << 30)

void *sched_calloc(struct sched *s, size_t n, size_t size)
{
	if (s && s->fail_alloc > 0) {
		s->fail_alloc--;
		return NULL;
	}
	return calloc(n, size);
}

int sched_map_init(struct sched *s)
{
	struct sched_map *m = &s->map;

	m->slot = sched_calloc(s, SCHED_MAP_MIN, sizeof(*m->slot));
	if (!m->slot)
		return -ENOMEM;
	m->mask = SCHED_MAP_MIN - 1;
	m->count = 0;
	return 0;
}

void sched_map_release(struct sched_map *m)
{
	free(m->slot);
	m->slot = NULL;
	m->mask = 0;
	m->count = 0;
}

/* Insert without growing; the caller made room. */
static struct sched_astate *sched_map_put(struct sched_map *m, uint64_t id)
{
	uint32_t i = sched_map_hash(id, m->mask);

	while (m->slot[i].id) {
		if (m->slot[i].id == id)
			return &m->slot[i];
		i = (i + 1) & m->mask;
	}
	memset(&m->slot[i], 0, sizeof(m->slot[i]));
	m->slot[i].id = id;
	m->count++;
	return &m->slot[i];
}

int sched_map_reserve(struct sched *s, uint32_t more)
{
	struct sched_map *m = &s->map, grown;
	uint64_t want = (uint64_t)m->count + more;
	uint64_t cap = (uint64_t)m->mask + 1;

	if (s->max_allocs && want > s->max_allocs)
		return -ENOSPC;
	if (want * 2 <= cap)
		return 0;
	while (want * 2 > cap) {
		if (cap >= SCHED_MAP_MAX)
			return -ENOMEM;
		cap *= 2;
	}
	grown.slot = sched_calloc(s, cap, sizeof(*grown.slot));
	if (!grown.slot)
		return -ENOMEM;
	grown.mask = (uint32_t)(cap - 1);
	grown.count = 0;
	for (uint32_t i = 0; i <= m->mask; i++) {
		struct sched_astate *a;

		if (!m->slot[i].id)
			continue;
		a = sched_map_put(&grown, m->slot[i].id);
		*a = m->slot[i];
	}
	free(m->slot);
	*m = grown;
	return 0;
}

struct sched_astate *sched_map_get(struct sched_map *m, uint64_t id)
{
	return sched_map_put(m, id);
}

int sched_map_delete(struct sched_map *m, uint64_t id)
{
	uint32_t i = sched_map_hash(id, m->mask), j;

	while (m->slot[i].id != id) {
		if (!m->slot[i].id)
			return -ENOENT;
		i = (i + 1) & m->mask;
	}
	/*
	 * Backward shift: move later members of the probe run into the hole
	 * when their home slot is not between the hole and where they sit.
	 */
	j = i;
	for (;;) {
		uint32_t home;

		j = (j + 1) & m->mask;
		if (!m->slot[j].id)
			break;
		home = sched_map_hash(m->slot[j].id, m->mask);
		if (((j - home) & m->mask) >= ((j - i) & m->mask)) {
			m->slot[i] = m->slot[j];
			i = j;
		}
	}
	memset(&m->slot[i], 0, sizeof(m->slot[i]));
	m->count--;
	return 0;
}

int sched_map_check(const struct sched_map *m)
{
	uint32_t n = 0;

	for (uint32_t i = 0; i <= m->mask; i++) {
		if (!m->slot[i].id)
			continue;
		n++;
		if (sched_map_find(m, m->slot[i].id) != &m->slot[i])
			return -EUCLEAN;
		if (m->slot[i].nr > SCHED_RD_INLINE)
			return -EUCLEAN;
	}
	if (n != m->count || (uint64_t)m->count * 2 > (uint64_t)m->mask + 1)
		return -EUCLEAN;
	return 0;
}

int sched_rename(struct sched *s, uint64_t from, uint64_t to)
{
	struct sched_astate *a, keep;
	int err;

	if (!s || !from || !to)
		return -EINVAL;
	a = sched_map_find(&s->map, from);
	if (!a)
		return -ENOENT;
	if (from == to)
		return 0;
	if (sched_map_find(&s->map, to))
		return -EEXIST;
	if (a->nsub && !sched_sub_ok(to))
		return -EINVAL;	/* its sub-states could not follow it */
	/* Room first, so that a failure leaves everything as it was. */
	err = sched_map_reserve(s, 1u + a->nsub);
	if (err)
		return err;
	keep = *sched_map_find(&s->map, from);
	for (int k = 0; k < keep.nsub; k++) {
		struct sched_astate *c = sched_map_find(&s->map,
							sched_sub_id(from, k));
		struct sched_astate sub;

		if (!c)
			continue;
		sub = *c;
		sched_map_delete(&s->map, sub.id);
		sub.id = sched_sub_id(to, k);
		*sched_map_get(&s->map, sub.id) = sub;
	}
	sched_map_delete(&s->map, from);
	a = sched_map_get(&s->map, to);
	keep.id = to;
	*a = keep;
	return 0;
}
