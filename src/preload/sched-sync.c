/*
 * sched-sync.c - host synchronization through the scheduler: which pool
 * streams or events the host must wait for, and what it learns when they
 * complete.
 *
 * A host wait has the same choice as a cross-stream wait: an entry implied
 * by another entry's wait (that stream's clock covers it) costs nothing.
 * After the waits return the caller reports every entry, and completion
 * spreads through the clocks: when (j, seq) is done, so is everything its
 * clock covers.  Later dependencies on finished work are then dropped
 * instead of becoming waits, and the load estimate catches up.
 */
#include <errno.h>
#include <string.h>

#include "sched-internal.h"

struct sched_hwc {
	uint64_t key;		/* sum of vc */
	uint64_t seq;		/* what the wait guarantees */
	const uint64_t *vc;	/* what it implies */
	int j;
	int event;
	enum sched_hw_how how;
};

/*
 * One entry per stream of need_mask (already free of completed work), then
 * the implied ones marked.  A stream is waited for whole when the
 * dependency is its last operation or no record lies between it and the
 * end; otherwise the earliest record after it is.
 */
/*
 * The host waits for more than the dependency on stream j when work was
 * queued after it and no record lies between (slot: the record used, -1:
 * the stream's end).  As for device-side waits (sched_mark_hot()), mark
 * the allocation that caused it, so that its next writer (or reader)
 * records right after itself: a program that reads back the same buffer
 * every iteration then waits for its writer alone.  Decay takes the mark
 * back if those records go unused.
 */
static void sched_hw_learn(struct sched *s, int j, int slot)
{
	struct sched_astate *a;

	if (s->n == 1 || !s->src_id[j] || s->need[j] >= s->st[j].tail ||
	    (slot >= 0 && s->ev_seq[slot] == s->need[j]))
		return;
	a = sched_map_find(&s->map, s->src_id[j]);
	if (a)
		a->hot |= s->src_kind[j] == SCHED_SRC_W ? SCHED_HOT_W
							 : SCHED_HOT_R;
}

static void sched_hw_build(struct sched *s, struct sched_hostwait *out)
{
	struct sched_hwc c[SCHED_MAX_STREAMS], x;
	int nc = 0, j;

	SCHED_FOR_EACH_BIT(j, s->need_mask) {
		const struct sched_stream *st = &s->st[j];
		int slot = -1;

		if (s->need[j] < st->tail)
			slot = sched_ev_cover(s, j, s->need[j]);
		if (slot >= 0 && s->ev_seq[slot] < st->tail) {
			c[nc].how = SCHED_HW_EVENT;
			c[nc].seq = s->ev_seq[slot];
			c[nc].vc = sched_ev_clock(s, slot);
			c[nc].event = slot;
			sched_ev_use(s, slot);
		} else {
			c[nc].how = SCHED_HW_STREAM;
			c[nc].seq = st->tail;
			c[nc].vc = sched_clock(s, j);
			c[nc].event = -1;
		}
		c[nc].j = j;
		c[nc].key = sched_vc_sum(c[nc].vc, s->n);
		nc++;
		sched_hw_learn(s, j, slot);
	}
	for (int i = 1; i < nc; i++) {
		int k = i;

		x = c[i];
		while (k > 0 && c[k - 1].key < x.key) {
			c[k] = c[k - 1];
			k--;
		}
		c[k] = x;
	}
	memset(s->tmp, 0, (size_t)s->n * sizeof(uint64_t));
	out->n = 0;
	for (int i = 0; i < nc; i++) {
		struct sched_hostwait_ent *e = &out->ent[out->n++];

		j = c[i].j;
		e->stream = j;
		if (s->tmp[j] >= s->need[j]) {
			e->how = SCHED_HW_IMPLIED;
			e->seq = s->tmp[j];
			e->event = -1;
			s->stats.host_implied++;
			continue;
		}
		e->how = c[i].how;
		e->seq = c[i].seq;
		e->event = c[i].event;
		sched_vc_merge(s->tmp, c[i].vc, s->n);
		s->stats.host_waits++;
	}
}

int sched_sync_all(struct sched *s, struct sched_hostwait *out)
{
	int idle = 0;

	if (!s || !out)
		return -EINVAL;
	sched_need_reset(s);
	for (int j = 0; j < s->n; j++) {
		if (s->st[j].tail > s->st[j].done)
			sched_need_add(s, j, s->st[j].tail, s->st[j].fin, 0,
				       SCHED_SRC_NONE);
		else
			idle++;
	}
	s->stats.host_idle += (uint64_t)idle;
	sched_hw_build(s, out);
	return 0;
}

/* Drop the needs known complete, then build the waits. */
static void sched_hw_finish(struct sched *s, struct sched_hostwait *out)
{
	int j;

	/* A barrier may have touched anything. */
	sched_need_barrier(s);
	SCHED_FOR_EACH_BIT(j, s->need_mask)
		if (sched_is_done(s, j, s->need[j]))
			s->need_mask &= ~(1ull << j);
	sched_hw_build(s, out);
}

int sched_sync_for(struct sched *s, const struct sched_access *acc, int nacc,
		   struct sched_hostwait *out)
{
	if (!s || !out || nacc < 0 || (nacc && !acc))
		return -EINVAL;
	for (int i = 0; i < nacc; i++)
		if (!acc[i].alloc_id || (unsigned)acc[i].mode > SCHED_WRITE)
			return -EINVAL;
	sched_need_reset(s);
	for (int i = 0; i < nacc; i++) {
		const struct sched_astate *a = sched_map_find(&s->map,
							      acc[i].alloc_id);

		if (a)
			sched_need_access(s, a, &acc[i]);
	}
	sched_hw_finish(s, out);
	return 0;
}

int sched_sync_for_read(struct sched *s, const uint64_t *alloc_ids, int n,
			struct sched_hostwait *out)
{
	if (!s || !out || n < 0 || (n && !alloc_ids))
		return -EINVAL;
	for (int i = 0; i < n; i++)
		if (!alloc_ids[i])
			return -EINVAL;
	sched_need_reset(s);
	for (int i = 0; i < n; i++) {
		const struct sched_astate *a = sched_map_find(&s->map,
							      alloc_ids[i]);
		const struct sched_access x = { .alloc_id = alloc_ids[i],
						.mode = SCHED_READ };

		if (a)
			sched_need_access(s, a, &x);
	}
	sched_hw_finish(s, out);
	return 0;
}

/*
 * (j, seq) is complete; spread it to everything vc covers.  fin is its
 * virtual finish, or 0 when not known: the virtual now moves past it, so
 * that streams whose work is done no longer look busy to placement.
 */
static void sched_done(struct sched *s, int j, uint64_t seq, uint64_t fin)
{
	struct sched_stream *st = &s->st[j];

	if (seq <= st->done)
		return;
	st->done = seq;
	if (seq == st->tail)
		fin = sched_max(fin, st->fin);
	s->vnow = sched_max(s->vnow, fin);
	if (s->bar_seq && s->bar_stream == j && s->bar_seq <= seq)
		s->bar_seq = 0;
}

/*
 * Every stream known complete.  A hot record still unused now may have
 * gone unused only because the program synchronized: its op is complete
 * and later dependencies on it are dropped.  Counted against its mark
 * (hot-mark decay, sched.c), that took the mark back whenever an epoch
 * ended in a full synchronization after the marked op, and the next epoch
 * paid the late record again: mha's second pass waited for the previous
 * merge through a record behind a whole head (bench/results/streams.md,
 * run 19).  So a record is excused when its mark proved itself since the
 * last full synchronization (another of its records was waited on); a
 * mark none of whose records was used still decays, as before.
 */
static void sched_hot_excuse(struct sched *s)
{
	const uint8_t tag = SCHED_HOT_TAG(s->sync_epoch);
	struct sched_astate *a;

	for (int slot = 0; slot < s->n * SCHED_E; slot++) {
		if (!s->ev_src[slot] || s->ev_used[slot])
			continue;
		a = sched_map_find(&s->map, s->ev_src[slot]);
		if (a && (a->hot & SCHED_HOT_TAG_MASK) == tag &&
		    (a->hot & (s->ev_srcbit[slot] << SCHED_HOT_USED_SHIFT)))
			s->ev_used[slot] = 1;
	}
	/* The next epoch's uses start from none. */
	s->sync_epoch++;
}

/*
 * SCHED_LEVEL, every stream known complete: all are idle now, so none is
 * less loaded than another.  Their finish times are the previous epoch's
 * finishing order, which is what the load tie-break wants while work runs
 * (the stream modelled to finish first is the likeliest to be idle) but,
 * after a full synchronization, only history: placed by it, an epoch
 * landed where the one before had not (image_pipeline's frames alternated
 * between two placements, and moved for good after one epoch in line).
 * Levelled, such an epoch is placed the same whatever came before it.
 * Off by default: on the H200 it made image_pipeline 5-7% faster and
 * reductions 4-15% slower (bench/results/streams.md, run 18).
 */
static void sched_all_done(struct sched *s)
{
	for (int j = 0; j < s->n; j++)
		if (s->st[j].done < s->st[j].tail)
			return;
	sched_hot_excuse(s);
	if (!(s->flags & SCHED_LEVEL))
		return;
	for (int j = 0; j < s->n; j++)
		s->st[j].fin = s->vnow;
}

int sched_complete(struct sched *s, int stream, uint64_t seq)
{
	const uint64_t *vc = NULL;
	uint64_t fin = 0;
	int slot;

	if (!s || stream < 0 || stream >= s->n ||
	    seq > s->st[stream].tail)
		return -EINVAL;
	if (seq <= s->st[stream].done)
		return 0;
	if (seq == s->st[stream].tail) {
		vc = sched_clock(s, stream);
		fin = s->st[stream].fin;
	} else {
		/* A record at or before seq: a lower bound of its clock. */
		slot = sched_ev_below(s, stream, seq);
		if (slot >= 0) {
			vc = sched_ev_clock(s, slot);
			fin = s->ev_fin[slot];
		}
	}
	if (vc) {
		/* Copy: vc may be the stream's own clock. */
		memcpy(s->tmp, vc, (size_t)s->n * sizeof(uint64_t));
		for (int k = 0; k < s->n; k++)
			if (k != stream)
				sched_done(s, k, s->tmp[k], 0);
	}
	sched_done(s, stream, seq, fin);
	sched_all_done(s);
	return 0;
}

int sched_complete_hostwait(struct sched *s, const struct sched_hostwait *hw)
{
	int err;

	if (!s || !hw)
		return -EINVAL;
	for (int i = 0; i < hw->n; i++) {
		err = sched_complete(s, hw->ent[i].stream, hw->ent[i].seq);
		if (err)
			return err;
	}
	return 0;
}
