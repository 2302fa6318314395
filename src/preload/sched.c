/*
 * sched.c - the stream scheduler: where each operation runs and what it
 * waits for (see sched.h for the contract, docs/design-streams.md for why).
 *
 * One submission goes through these steps, none of which allocates once
 * the program's allocations are known:
 *   1. collect dependencies: for each allocation touched, its last writer
 *      and, when written, the readers since; plus the latest barrier.  Only
 *      the latest one per stream matters (streams run in order), and ones
 *      known complete are dropped.
 *   2. place: the stream where the operation could start earliest in a
 *      virtual-time model (each stream's queued work, the dependencies'
 *      finish, a small cost per cross-stream wait); ties: fewer waits, a
 *      predecessor's stream, less load, lower index.  This puts a chain on
 *      one stream, independent work on the least loaded streams, and a
 *      fork's second branch beside the first instead of behind it.
 *   3. wait: each dependency not already implied by the stream's vector
 *      clock becomes a wait on an event; waits are issued in an order where
 *      one that implies others comes first, and each merges the event's
 *      clock, so the implied ones are then pruned (online transitive
 *      reduction).
 *   4. record: update the allocations' writer / readers and decide whether
 *      to record an event right after the operation (only where a wait on
 *      it is expected, see sched_mark_hot()).
 * Full barriers skip 1 and 4: they wait for every stream's end, and every
 * later operation depends on them.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sched-internal.h"

void sched_vc_merge(uint64_t *a, const uint64_t *b, int n)
{
	for (int k = 0; k < n; k++)
		if (b[k] > a[k])
			a[k] = b[k];
}

uint64_t sched_vc_sum(const uint64_t *a, int n)
{
	uint64_t sum = 0;

	for (int k = 0; k < n; k++)
		sum += a[k];
	return sum;
}

int sched_nstreams(const struct sched *s)
{
	return s ? s->n : 0;
}

void sched_free(struct sched *s)
{
	if (!s)
		return;
	sched_map_release(&s->map);
	free(s->st);
	free(s->clock);
	free(s->ev_seq);
	free(s->ev_fin);
	free(s->ev_clock);
	free(s->ev_src);
	free(s->ev_srcbit);
	free(s->ev_used);
	free(s->need);
	free(s->need_fin);
	free(s->src_id);
	free(s->src_kind);
	free(s->eff_ev);
	free(s->eff_fin);
	free(s->plist);
	free(s->tmp);
	free(s);
}

int sched_new(int nstreams, unsigned flags, struct sched **out)
{
	struct sched *s;
	size_t n = (size_t)nstreams;
	int err = -ENOMEM;

	if (!out || nstreams < 1 || nstreams > SCHED_MAX_STREAMS ||
	    (flags & ~(SCHED_EAGER_EVENTS | SCHED_LEVEL | SCHED_KEEP_CHAIN)))
		return -EINVAL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->n = nstreams;
	s->last_t = -1;
	s->flags = flags;
	s->st = calloc(n, sizeof(*s->st));
	s->clock = calloc(n * n, sizeof(*s->clock));
	s->ev_seq = calloc(n * SCHED_E, sizeof(*s->ev_seq));
	s->ev_fin = calloc(n * SCHED_E, sizeof(*s->ev_fin));
	s->ev_clock = calloc(n * SCHED_E * n, sizeof(*s->ev_clock));
	s->ev_src = calloc(n * SCHED_E, sizeof(*s->ev_src));
	s->ev_srcbit = calloc(n * SCHED_E, sizeof(*s->ev_srcbit));
	s->ev_used = calloc(n * SCHED_E, sizeof(*s->ev_used));
	s->need = calloc(n, sizeof(*s->need));
	s->need_fin = calloc(n, sizeof(*s->need_fin));
	s->src_id = calloc(n, sizeof(*s->src_id));
	s->src_kind = calloc(n, sizeof(*s->src_kind));
	s->eff_ev = calloc(n, sizeof(*s->eff_ev));
	s->eff_fin = calloc(n, sizeof(*s->eff_fin));
	s->plist = calloc(n, sizeof(*s->plist));
	s->tmp = calloc(n, sizeof(*s->tmp));
	if (!s->st || !s->clock || !s->ev_seq || !s->ev_fin || !s->ev_clock ||
	    !s->ev_src || !s->ev_srcbit || !s->ev_used ||
	    !s->need || !s->need_fin || !s->src_id || !s->src_kind ||
	    !s->eff_ev || !s->eff_fin || !s->plist || !s->tmp)
		goto err_free;
	err = sched_map_init(s);
	if (err)
		goto err_free;
	*out = s;
	return 0;

err_free:
	sched_free(s);
	return err;
}

void sched_set_max_allocs(struct sched *s, uint32_t max_allocs)
{
	s->max_allocs = max_allocs;
}

void sched_debug_fail_alloc(struct sched *s, int n)
{
	s->fail_alloc = n;
}

uint64_t sched_load(const struct sched *s, int stream)
{
	uint64_t fin;

	if (!s || stream < 0 || stream >= s->n)
		return 0;
	fin = s->st[stream].fin;
	return fin > s->vnow ? (fin - s->vnow) / SCHED_VT_UNIT : 0;
}

void sched_set_kept_up(struct sched *s, int on)
{
	if (s)
		s->kept_up = !!on;
}

void sched_set_narrow(struct sched *s, int on)
{
	if (s)
		s->narrow = !!on;
}

uint64_t sched_pending(const struct sched *s, int stream)
{
	if (!s || stream < 0 || stream >= s->n ||
	    s->st[stream].tail <= s->st[stream].done)
		return 0;
	return s->st[stream].tail;
}

void sched_get_stats(const struct sched *s, struct sched_stats *out)
{
	*out = s->stats;
	out->allocs = s->map.count;
}

/* --- event rings ------------------------------------------------------ */

int sched_ev_cover(const struct sched *s, int j, uint64_t seq)
{
	int best = -1;

	for (int k = 0; k < SCHED_E; k++) {
		int slot = j * SCHED_E + k;
		uint64_t q = s->ev_seq[slot];

		if (q && q >= seq && (best < 0 || q < s->ev_seq[best]))
			best = slot;
	}
	return best;
}

int sched_ev_below(const struct sched *s, int j, uint64_t seq)
{
	int best = -1;

	for (int k = 0; k < SCHED_E; k++) {
		int slot = j * SCHED_E + k;
		uint64_t q = s->ev_seq[slot];

		if (q && q <= seq && (best < 0 || q > s->ev_seq[best]))
			best = slot;
	}
	return best;
}

/*
 * Hot-mark decay.  A record asked for by a hot mark that no wait used
 * before its slot comes round again was host time for nothing (about a
 * microsecond of cuEventRecord on a real GPU): take the mark back.  Where
 * the exact record is needed, sched_mark_hot() sets it again the next time
 * a late record costs overlap; where it is not (a false conflict, a fork
 * that no longer forks), the allocation stops recording.  Marks only ever
 * cost or save time, never order, so this is safe by construction.
 */
static void sched_ev_retire(struct sched *s, int slot)
{
	struct sched_astate *a;

	if (s->ev_seq[slot] && s->ev_src[slot] && !s->ev_used[slot]) {
		a = sched_map_find(&s->map, s->ev_src[slot]);
		if (a && (a->hot & s->ev_srcbit[slot])) {
			a->hot &= (uint8_t)~s->ev_srcbit[slot];
			s->stats.hot_cleared++;
		}
	}
	s->ev_src[slot] = 0;
	s->ev_srcbit[slot] = 0;
	s->ev_used[slot] = 0;
}

void sched_ev_use(struct sched *s, int slot)
{
	const uint8_t tag = SCHED_HOT_TAG(s->sync_epoch);
	struct sched_astate *a;

	if (s->ev_used[slot])
		return;
	s->ev_used[slot] = 1;
	if (!s->ev_src[slot])
		return;
	a = sched_map_find(&s->map, s->ev_src[slot]);
	if (!a)
		return;
	/* Used bits of an earlier epoch no longer count. */
	if ((a->hot & SCHED_HOT_TAG_MASK) != tag)
		a->hot = (uint8_t)((a->hot & (SCHED_HOT_W | SCHED_HOT_R)) | tag);
	a->hot |= (uint8_t)(s->ev_srcbit[slot] << SCHED_HOT_USED_SHIFT);
}

int sched_ev_record(struct sched *s, int j)
{
	struct sched_stream *st = &s->st[j];
	int last = j * SCHED_E + (int)((st->ev_next + SCHED_E - 1) % SCHED_E);
	int slot;

	/* Two records at the same place would be one too many. */
	if (s->ev_seq[last] == st->tail)
		return last;
	/*
	 * Reusing the oldest slot is safe for waits already issued on it: a
	 * cuStreamWaitEvent waits for the record current when it was called.
	 */
	slot = j * SCHED_E + (int)st->ev_next;
	st->ev_next = (st->ev_next + 1) % SCHED_E;
	sched_ev_retire(s, slot);
	s->ev_seq[slot] = st->tail;
	s->ev_fin[slot] = st->fin;
	memcpy(sched_ev_clock(s, slot), sched_clock(s, j),
	       (size_t)s->n * sizeof(uint64_t));
	return slot;
}

/* --- step 1: dependencies ----------------------------------------------- */

void sched_need_barrier(struct sched *s)
{
	if (s->bar_seq)
		sched_need_add(s, s->bar_stream, s->bar_seq, s->bar_fin, 0,
			       SCHED_SRC_NONE);
}

/* Everything outstanding: for barriers and joins. */
static void sched_need_all(struct sched *s)
{
	for (int j = 0; j < s->n; j++)
		if (s->st[j].tail > s->st[j].done)
			sched_need_add(s, j, s->st[j].tail, s->st[j].fin, 0,
				       SCHED_SRC_NONE);
}

/* Drop what is known complete; count = 1 for an operation's statistics. */
static void sched_need_filter(struct sched *s, int count)
{
	int j;

	SCHED_FOR_EACH_BIT(j, s->need_mask) {
		if (count)
			s->stats.deps++;
		if (sched_is_done(s, j, s->need[j])) {
			s->need_mask &= ~(1ull << j);
			if (count)
				s->stats.deps_done++;
		}
	}
}

/* --- step 2: placement -------------------------------------------------- */

/*
 * Where each dependency's wait would go: the earliest record on its stream
 * at or after it, or else a lazy record at the stream's end now (which may
 * be later than the dependency: then the wait also covers unrelated work).
 */
static void sched_effective(struct sched *s)
{
	int j;

	s->np = 0;
	SCHED_FOR_EACH_BIT(j, s->need_mask) {
		int slot = sched_ev_cover(s, j, s->need[j]);

		s->eff_ev[j] = slot;
		s->eff_fin[j] = slot >= 0 ? s->ev_fin[slot] : s->st[j].fin;
		s->plist[s->np++] = j;
	}
}

struct sched_cand {
	uint64_t start;
	uint64_t load;
	int nwait;
	int in_pred;
	int keep;
};

static int sched_cand_better(const struct sched_cand *a,
			     const struct sched_cand *b)
{
	if (a->start != b->start)
		return a->start < b->start;
	if (a->nwait != b->nwait)
		return a->nwait < b->nwait;
	if (a->in_pred != b->in_pred)
		return a->in_pred;
	if (a->keep != b->keep)
		return a->keep;
	return a->load < b->load;
}

/* The virtual start of the operation on stream t, its waits counted. */
static uint64_t sched_start_on(struct sched *s, int t)
{
	const uint64_t *ct = sched_clock(s, t);
	uint64_t start = sched_max(s->vnow, s->st[t].fin);
	int nwait = 0;

	for (int k = 0; k < s->np; k++) {
		int j = s->plist[k];

		if (j == t || ct[j] >= s->need[j]) {
			start = sched_max(start, s->need_fin[j]);
		} else {
			start = sched_max(start, s->eff_fin[j]);
			nwait++;
		}
	}
	return start + (uint64_t)nwait * SCHED_WAIT_COST;
}

/*
 * sched_place() while the GPU keeps up: no queue to avoid, so the fewest
 * waits, then the previous operation's stream (a serial program stays on
 * one stream and never records), then a predecessor's, then the lowest
 * index.  start as sched_place() computes it, for the virtual-time model.
 */
static int sched_place_kept_up(struct sched *s, uint64_t *start_out)
{
	int bt = -1, bw = 0, bkeep = 0, bpred = 0;

	for (int t = 0; t < s->n; t++) {
		const uint64_t *ct = sched_clock(s, t);
		int k, nwait = 0, keep = t == s->last_t;
		int pred = !!(s->need_mask & (1ull << t));

		for (k = 0; k < s->np; k++) {
			int j = s->plist[k];

			nwait += j != t && ct[j] < s->need[j];
		}
		if (bt < 0 || nwait < bw ||
		    (nwait == bw && (keep > bkeep ||
				     (keep == bkeep && pred > bpred)))) {
			bt = t;
			bw = nwait;
			bkeep = keep;
			bpred = pred;
		}
	}
	*start_out = sched_start_on(s, bt);
	s->stats.kept_up++;
	return bt;
}

/*
 * The stream where the operation would start earliest.  start is the
 * latest of: the stream's own queue, every dependency's finish (through the
 * record its wait would use), the virtual now; plus SCHED_WAIT_COST per
 * wait.  sched_effective() must have run.
 */
static int sched_place(struct sched *s, uint64_t *start_out)
{
	struct sched_cand best = { .start = UINT64_MAX }, c;
	/* The dependencies side by side: the loop below runs N x np times. */
	struct {
		uint64_t need, need_fin, eff_fin;
		int j;
	} d[SCHED_MAX_STREAMS];
	const int n = s->n, np = s->np;
	const uint64_t vnow = s->vnow;
	int bt = -1;

	if (s->narrow && s->last_t >= 0) {
		*start_out = sched_start_on(s, s->last_t);
		s->stats.narrow++;
		return s->last_t;
	}
	if (s->kept_up)
		return sched_place_kept_up(s, start_out);
	for (int k = 0; k < np; k++) {
		int j = s->plist[k];

		d[k].j = j;
		d[k].need = s->need[j];
		d[k].need_fin = s->need_fin[j];
		d[k].eff_fin = s->eff_fin[j];
	}
	for (int t = 0; t < n; t++) {
		const uint64_t *ct = sched_clock(s, t);
		uint64_t start = sched_max(vnow, s->st[t].fin);
		int k, nwait = 0;

		/*
		 * start + nwait * SCHED_WAIT_COST only grows: give up on t
		 * as soon as it cannot win.
		 */
		for (k = 0; k < np; k++) {
			if (d[k].j == t || ct[d[k].j] >= d[k].need) {
				start = sched_max(start, d[k].need_fin);
			} else {
				nwait++;
				start = sched_max(start, d[k].eff_fin);
			}
			if (start + (uint64_t)nwait * SCHED_WAIT_COST >
			    best.start)
				break;
		}
		if (k < np)
			continue;
		start += (uint64_t)nwait * SCHED_WAIT_COST;
		if (start > best.start)
			continue;
		c.start = start;
		c.nwait = nwait;
		c.load = s->st[t].fin;
		c.in_pred = !!(s->need_mask & (1ull << t));
		c.keep = (s->flags & SCHED_KEEP_CHAIN) && t == s->last_t &&
			 (s->need_mask & (1ull << t)) &&
			 s->need[t] == s->st[t].tail;
		if (bt < 0 || sched_cand_better(&c, &best)) {
			best = c;
			bt = t;
		}
	}
	*start_out = best.start;
	return bt;
}

/*
 * Learn where events pay.  A dependency on (j, need) with no record between
 * it and the end of stream j can only be waited for through a record at
 * that end, which also covers the unrelated work queued after it.  When a
 * record right after the dependency would have let the operation start
 * earlier (placement run again as if it existed), mark the allocation that
 * caused the dependency: from now on, operations writing it (or reading it,
 * for a dependency on readers) get a record right after them.  Programs
 * repeat themselves (iterations, layers), so next time the exact record is
 * there.  A chain, or work that stays on its predecessor's stream anyway,
 * never marks anything and so never records an event.
 */
static void sched_mark_hot(struct sched *s, uint64_t start)
{
	uint64_t cand = 0, saved[SCHED_MAX_STREAMS], ideal;
	int j;

	/* Nothing to learn: placement ignores finish times meanwhile. */
	if (s->n == 1 || s->kept_up || s->narrow)
		return;
	SCHED_FOR_EACH_BIT(j, s->need_mask) {
		int slot = s->eff_ev[j];

		if (s->src_id[j] && s->eff_fin[j] > s->need_fin[j] &&
		    (slot < 0 || s->ev_seq[slot] > s->need[j]))
			cand |= 1ull << j;
	}
	if (!cand)
		return;
	/* No stream could start before start anyway: nothing to learn. */
	ideal = UINT64_MAX;
	for (int t = 0; t < s->n; t++)
		ideal = s->st[t].fin < ideal ? s->st[t].fin : ideal;
	ideal = sched_max(ideal, s->vnow);
	SCHED_FOR_EACH_BIT(j, s->need_mask)
		ideal = sched_max(ideal, s->need_fin[j]);
	if (ideal >= start)
		return;
	SCHED_FOR_EACH_BIT(j, cand) {
		saved[j] = s->eff_fin[j];
		s->eff_fin[j] = s->need_fin[j];
	}
	sched_place(s, &ideal);
	SCHED_FOR_EACH_BIT(j, cand)
		s->eff_fin[j] = saved[j];
	if (ideal >= start)
		return;
	SCHED_FOR_EACH_BIT(j, cand) {
		struct sched_astate *a = sched_map_find(&s->map, s->src_id[j]);

		if (a)
			a->hot |= s->src_kind[j] == SCHED_SRC_W ? SCHED_HOT_W
								 : SCHED_HOT_R;
	}
}

/* --- step 3: waits ------------------------------------------------------ */

/* Accesses whose state a submission remembers between its steps. */
#define SCHED_FOUND_MAX 64

struct sched_waitc {
	uint64_t key;		/* sum of the record's clock */
	int j;
};

/*
 * Issue the waits stream t needs, fewest first: a record whose clock has a
 * larger sum cannot be implied by one with a smaller sum, so going by
 * decreasing sum, a dependency implied by another's record is met after
 * that record was merged, and pruned.  With exact records this is the
 * transitive reduction; with later ones it is still correct.
 */
static void sched_emit_waits(struct sched *s, int t, struct sched_decision *out)
{
	struct sched_waitc c[SCHED_MAX_STREAMS], x;
	uint64_t *ct = sched_clock(s, t);
	int nc = 0, j;

	SCHED_FOR_EACH_BIT(j, s->need_mask) {
		const uint64_t *vc;

		if (j == t) {
			s->stats.deps_same++;
			continue;
		}
		if (ct[j] >= s->need[j]) {
			s->stats.waits_pruned++;
			continue;
		}
		vc = s->eff_ev[j] >= 0 ? sched_ev_clock(s, s->eff_ev[j])
				       : sched_clock(s, j);
		c[nc].key = sched_vc_sum(vc, s->n);
		c[nc].j = j;
		nc++;
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
	for (int i = 0; i < nc; i++) {
		int slot;

		j = c[i].j;
		if (ct[j] >= s->need[j]) {
			s->stats.waits_pruned++;
			continue;
		}
		slot = s->eff_ev[j];
		if (slot < 0) {
			slot = sched_ev_record(s, j);
			out->record[out->nrecord++] = (struct sched_event_ref){
				.seq = s->ev_seq[slot], .stream = j,
				.event = slot };
			s->stats.events_lazy++;
		}
		out->wait[out->nwait++] = (struct sched_event_ref){
			.seq = s->ev_seq[slot], .stream = j, .event = slot };
		sched_ev_use(s, slot);
		if (s->ev_seq[slot] > s->need[j])
			s->stats.over_waits++;
		sched_vc_merge(ct, sched_ev_clock(s, slot), s->n);
		s->stats.waits_issued++;
	}
}

/* --- step 4: the operation and its allocations ------------------------- */

static void sched_decision_init(struct sched_decision *out, int t,
				unsigned flags)
{
	out->stream = t;
	out->seq = 0;
	out->flags = flags;
	out->nrecord = 0;
	out->nwait = 0;
	out->record_after = -1;
}

/* Append the operation to stream t; its number. */
static uint64_t sched_push(struct sched *s, int t, uint64_t start,
			   uint64_t vt)
{
	struct sched_stream *st = &s->st[t];

	st->tail++;
	sched_clock(s, t)[t] = st->tail;
	st->fin = start + vt;
	s->stats.ops++;
	return st->tail;
}

static void sched_set_writer(struct sched_astate *a, int t, uint64_t seq,
			     uint64_t fin)
{
	a->w_stream = (uint8_t)t;
	a->w_seq = seq;
	a->w_fin = fin;
	a->nr = 0;
	a->r_over = 0;
	a->r_fin = 0;
}

/*
 * Add (t, seq) to the readers since the last writer.  Readers it follows
 * (same stream, or covered by stream t's clock, which now includes every
 * wait this operation issued) are implied by it for any later writer, and
 * completed ones need nothing: both are dropped.
 */
static void sched_add_reader(struct sched *s, struct sched_astate *a, int t,
			     uint64_t seq, uint64_t fin)
{
	const uint64_t *ct = sched_clock(s, t);
	int keep = 0, j;

	if (a->w_seq && a->w_stream == t && a->w_seq == seq)
		return;		/* this operation also writes it */
	if (a->w_seq && sched_is_done(s, a->w_stream, a->w_seq))
		a->w_seq = 0;
	a->r_over &= ~(1ull << t);
	SCHED_FOR_EACH_BIT(j, a->r_over) {
		if (ct[j] >= s->st[j].tail ||
		    sched_is_done(s, j, s->st[j].tail))
			a->r_over &= ~(1ull << j);
	}
	for (int i = 0; i < a->nr; i++) {
		j = a->r_stream[i];
		if (j == t || ct[j] >= a->r_seq[i] ||
		    sched_is_done(s, j, a->r_seq[i]))
			continue;
		a->r_stream[keep] = a->r_stream[i];
		a->r_seq[keep] = a->r_seq[i];
		keep++;
	}
	a->nr = (uint8_t)keep;
	if (a->nr == SCHED_RD_INLINE) {
		/* Collapse the oldest: its stream's end will be waited for. */
		a->r_over |= 1ull << a->r_stream[0];
		memmove(&a->r_stream[0], &a->r_stream[1],
			(SCHED_RD_INLINE - 1) * sizeof(a->r_stream[0]));
		memmove(&a->r_seq[0], &a->r_seq[1],
			(SCHED_RD_INLINE - 1) * sizeof(a->r_seq[0]));
		a->nr--;
		s->stats.reader_collapses++;
	}
	a->r_stream[a->nr] = (uint8_t)t;
	a->r_seq[a->nr] = seq;
	a->nr++;
	a->r_fin = sched_max(a->r_fin, fin);
}

/* Whether state c holds nothing an operation could still wait for. */
static int sched_state_idle(const struct sched *s,
			    const struct sched_astate *c)
{
	if (c->r_over || (c->w_seq && !sched_is_done(s, c->w_stream,
						      c->w_seq)))
		return 0;
	for (int i = 0; i < c->nr; i++)
		if (!sched_is_done(s, c->r_stream[i], c->r_seq[i]))
			return 0;
	return 1;
}

static void sched_state_clear(struct sched_astate *c)
{
	c->w_seq = 0;
	c->nr = 0;
	c->r_over = 0;
	c->w_fin = 0;
	c->r_fin = 0;
}

/*
 * The state an access to the byte range of x is recorded in: the
 * sub-state of exactly that range, a new one, an idle one taken over (it
 * holds nothing to wait for), or, when all SCHED_SUB_MAX are busy, the
 * allocation's own state a (then the access counts as a whole one for
 * later accesses: more waits, never fewer).  Room for one new id was
 * reserved.
 */
static struct sched_astate *sched_sub_state(struct sched *s,
					    struct sched_astate *a,
					    const struct sched_access *x)
{
	struct sched_astate *c, *idle = NULL;
	uint64_t lo = x->off, hi = x->off + x->len;

	for (int k = 0; k < a->nsub; k++) {
		c = sched_map_find(&s->map, sched_sub_id(a->id, k));
		if (!c)
			continue;
		if (c->lo == lo && c->hi == hi)
			return c;
		if (!idle && sched_state_idle(s, c))
			idle = c;
	}
	if (idle) {
		sched_state_clear(idle);
	} else if (a->nsub < SCHED_SUB_MAX) {
		/* Insertion moves no other state: a stays valid. */
		idle = sched_map_get(&s->map, sched_sub_id(a->id, a->nsub));
		a->nsub++;
	} else {
		return a;
	}
	idle->lo = lo;
	idle->hi = hi;
	return idle;
}

/*
 * A whole-allocation write: it waited for every sub-state (see
 * sched_need_access), so they hold nothing a later access needs that the
 * writer does not imply; later accesses find the writer in a.
 */
static void sched_subs_written(struct sched *s, struct sched_astate *a)
{
	for (int k = 0; k < a->nsub; k++) {
		struct sched_astate *c =
			sched_map_find(&s->map, sched_sub_id(a->id, k));

		if (c)
			sched_state_clear(c);
	}
}

/*
 * Returns whether an event right after the operation is wanted; *src and
 * *srcbit: the first allocation whose hot mark wants it, and that mark.
 * found[i] (i < SCHED_FOUND_MAX): acc[i]'s state, or NULL: look it up.
 */
static int sched_update_states(struct sched *s,
			       const struct sched_access *acc, int nacc,
			       struct sched_astate *const *found, int t,
			       uint64_t seq, uint64_t fin, uint64_t *src,
			       uint8_t *srcbit)
{
	int want = 0;
	uint8_t bit;

	for (int i = 0; i < nacc; i++) {
		struct sched_astate *a = i < SCHED_FOUND_MAX && found[i]
			? found[i] : sched_map_get(&s->map, acc[i].alloc_id);

		if (sched_acc_ranged(&acc[i]))
			a = sched_sub_state(s, a, &acc[i]);
		else if (acc[i].mode != SCHED_READ)
			sched_subs_written(s, a);
		if (acc[i].mode == SCHED_READ) {
			bit = a->hot & SCHED_HOT_R;
			sched_add_reader(s, a, t, seq, fin);
		} else {
			bit = a->hot & SCHED_HOT_W;
			sched_set_writer(a, t, seq, fin);
		}
		if (bit && !want) {
			*src = a->id;
			*srcbit = bit;
		}
		want |= bit;
	}
	return want;
}

static uint64_t sched_weight_vt(uint32_t weight)
{
	if (!weight)
		weight = 1;
	if (weight > SCHED_WEIGHT_MAX)
		weight = SCHED_WEIGHT_MAX;
	return (uint64_t)weight * SCHED_VT_UNIT;
}

/*
 * A full barrier: after every stream's end, before everything later.  It
 * needs no allocation state (later operations depend on it whatever they
 * touch), which is why it is also the way out of an internal failure.
 */
static int sched_barrier(struct sched *s, uint64_t vt, unsigned dflags,
			 struct sched_decision *out)
{
	uint64_t start;
	int t;

	sched_need_reset(s);
	sched_need_all(s);
	sched_need_filter(s, 1);
	sched_effective(s);
	t = sched_place(s, &start);
	sched_decision_init(out, t, SCHED_DEC_BARRIER | dflags);
	sched_emit_waits(s, t, out);
	out->seq = sched_push(s, t, start, vt);
	s->last_t = t;
	s->bar_stream = t;
	s->bar_seq = out->seq;
	s->bar_fin = s->st[t].fin;
	/* Every other stream's next operation waits for it. */
	if (s->n > 1) {
		out->record_after = sched_ev_record(s, t);
		s->stats.events_after++;
	}
	s->stats.barriers++;
	if (dflags & SCHED_DEC_DEGRADED)
		s->stats.degraded++;
	return 0;
}

static int sched_check_args(const struct sched *s,
			    const struct sched_access *acc, int nacc)
{
	if (!s || nacc < 0 || (nacc && !acc))
		return -EINVAL;
	for (int i = 0; i < nacc; i++)
		if (!acc[i].alloc_id || (unsigned)acc[i].mode > SCHED_WRITE)
			return -EINVAL;
	return 0;
}

int sched_submit_weighted(struct sched *s, const struct sched_access *acc,
			  int nacc, unsigned flags, uint32_t weight,
			  struct sched_decision *out)
{
	uint64_t vt = sched_weight_vt(weight), start, src = 0;
	struct sched_astate *found[SCHED_FOUND_MAX];
	uint32_t misses = 0;
	uint8_t srcbit = 0;
	int t, err, hot;

	if (!s || nacc < 0 || (nacc && !acc) || !out ||
	    (flags & ~(SCHED_BARRIER | SCHED_JOIN)))
		return -EINVAL;
	if (flags & SCHED_BARRIER) {
		err = sched_check_args(s, acc, nacc);
		return err ? err : sched_barrier(s, vt, 0, out);
	}

	/* Checks each access as it goes: nothing but scratch changes here. */
	sched_need_reset(s);
	for (int i = 0; i < nacc; i++) {
		struct sched_astate *a;

		if (!acc[i].alloc_id || (unsigned)acc[i].mode > SCHED_WRITE)
			return -EINVAL;
		a = sched_map_find(&s->map, acc[i].alloc_id);
		if (i < SCHED_FOUND_MAX)
			found[i] = a;
		if (a)
			sched_need_access(s, a, &acc[i]);
		else
			misses++;
		/* A sub-state for its range may be new (harmless if not). */
		if (sched_acc_ranged(&acc[i]))
			misses++;
	}
	sched_need_barrier(s);
	if (flags & SCHED_JOIN)
		sched_need_all(s);
	/* Nothing has changed yet: a failure here costs only the overlap. */
	if (misses) {
		if (sched_map_reserve(s, misses))
			return sched_barrier(s, vt, SCHED_DEC_DEGRADED, out);
		/* Growth may have moved every state: look them up again. */
		memset(found, 0, sizeof(found));
	}

	sched_need_filter(s, 1);
	sched_effective(s);
	t = sched_place(s, &start);
	sched_mark_hot(s, start);
	sched_decision_init(out, t, flags & SCHED_JOIN ? SCHED_DEC_JOIN : 0);
	sched_emit_waits(s, t, out);
	out->seq = sched_push(s, t, start, vt);
	s->last_t = t;
	hot = sched_update_states(s, acc, nacc, found, t, out->seq,
				  s->st[t].fin, &src, &srcbit);
	/*
	 * In line nothing waits across streams: a hot mark's record would go
	 * unused and take the mark back with it (sched_ev_retire()), to be
	 * learned again, at a cost in overlap, once the work spreads.
	 */
	if ((hot && !s->narrow) ||
	    (nacc && (s->flags & SCHED_EAGER_EVENTS))) {
		if (s->n > 1) {
			out->record_after = sched_ev_record(s, t);
			s->ev_src[out->record_after] = src;
			s->ev_srcbit[out->record_after] = srcbit;
			s->stats.events_after++;
		}
	}
	if (flags & SCHED_JOIN)
		s->stats.joins++;
	return 0;
}

int sched_forget(struct sched *s, uint64_t alloc_id)
{
	struct sched_astate *a;
	int nsub;

	if (!s || !alloc_id)
		return -ENOENT;
	a = sched_map_find(&s->map, alloc_id);
	nsub = a ? a->nsub : 0;
	for (int k = 0; k < nsub; k++)
		sched_map_delete(&s->map, sched_sub_id(alloc_id, k));
	return sched_map_delete(&s->map, alloc_id);
}

void sched_event_lost(struct sched *s, int event)
{
	if (s && event >= 0 && event < s->n * SCHED_E) {
		s->ev_seq[event] = 0;
		s->ev_src[event] = 0;
		s->ev_used[event] = 0;
	}
}

static int sched_check_state(const struct sched *s,
			     const struct sched_astate *a)
{
	if (a->w_seq && (a->w_stream >= s->n ||
			 a->w_seq > s->st[a->w_stream].tail))
		return -EUCLEAN;
	if (s->n < 64 && (a->r_over >> s->n))
		return -EUCLEAN;
	for (int i = 0; i < a->nr; i++)
		if (a->r_stream[i] >= s->n || !a->r_seq[i] ||
		    a->r_seq[i] > s->st[a->r_stream[i]].tail)
			return -EUCLEAN;
	return 0;
}

int sched_check(const struct sched *s)
{
	int n = s->n;

	for (int t = 0; t < n; t++) {
		const uint64_t *ct = sched_clock(s, t);

		if (ct[t] != s->st[t].tail || s->st[t].done > s->st[t].tail)
			return -EUCLEAN;
		for (int j = 0; j < n; j++)
			if (ct[j] > s->st[j].tail)
				return -EUCLEAN;
	}
	for (int slot = 0; slot < n * SCHED_E; slot++) {
		const uint64_t *vc = sched_ev_clock(s, slot);
		int j = slot / SCHED_E;

		if (!s->ev_seq[slot])
			continue;
		if (s->ev_seq[slot] > s->st[j].tail || vc[j] != s->ev_seq[slot])
			return -EUCLEAN;
		for (int k = 0; k < n; k++)
			if (vc[k] > s->st[k].tail)
				return -EUCLEAN;
	}
	if (s->bar_seq && s->bar_seq > s->st[s->bar_stream].tail)
		return -EUCLEAN;
	if (sched_map_check(&s->map))
		return -EUCLEAN;
	for (uint32_t i = 0; i <= s->map.mask; i++)
		if (s->map.slot[i].id &&
		    sched_check_state(s, &s->map.slot[i]))
			return -EUCLEAN;
	return 0;
}
