/*
 * sched-internal.h - the stream scheduler's state, shared by sched.c (submit
 * and placement), sched-map.c (allocation states) and sched-sync.c (host
 * waits, completion).  Not for any other file: use sched.h.
 *
 * Time, as the scheduler sees it, is twofold:
 *  - order: per stream, seq counts operations; clock[t * n + j] is the
 *    highest seq of stream j that the end of stream t is known to follow
 *    (through waits, directly or transitively); clock[t * n + t] == tail.
 *    A wait for (j, s) is redundant on stream t when clock[t][j] >= s.
 *  - estimated duration: a virtual time in weight units (x SCHED_VT_UNIT),
 *    fin of a stream is when its last operation would finish if streams ran
 *    in parallel at equal speed; placement picks the earliest start.
 */
#ifndef KMUX_SCHED_INTERNAL_H
#define KMUX_SCHED_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "sched.h"

#define SCHED_E SCHED_EVENTS_PER_STREAM

/* Virtual time of a weight-1 operation, and what a cross-stream wait costs. */
#define SCHED_VT_UNIT	16
#define SCHED_WAIT_COST	4
#define SCHED_WEIGHT_MAX (1u << 24)	/* so that vt never wraps in practice */

/* Readers since the last writer kept exactly; more collapse (r_over). */
#define SCHED_RD_INLINE	4

/* struct sched_astate.hot: a cross-stream dependency on this allocation's */
#define SCHED_HOT_W	0x1	/* writer had no event of its own */
#define SCHED_HOT_R	0x2	/* readers had no event of their own */
/*
 * A record that mark asked for was waited on in the full-synchronization
 * epoch whose number's low 4 bits are the tag (sched_ev_use(),
 * sched_hot_excuse()).  A tag comes round again after 16 epochs: a mark
 * then unused may be excused once more, which costs records, never order.
 */
#define SCHED_HOT_USED_SHIFT	2
#define SCHED_HOT_USED	((SCHED_HOT_W | SCHED_HOT_R) << SCHED_HOT_USED_SHIFT)
#define SCHED_HOT_TAG_SHIFT	4
#define SCHED_HOT_TAG(epoch)	((uint8_t)(((epoch) & 0xf) << SCHED_HOT_TAG_SHIFT))
#define SCHED_HOT_TAG_MASK	SCHED_HOT_TAG(0xf)

/*
 * One allocation: its last writer and the readers since.  Readers on one
 * stream are kept as the latest one only (streams run in order), and a
 * reader that the new reader's stream already follows is dropped, so the set
 * rarely exceeds a few entries.  When it would exceed SCHED_RD_INLINE, the
 * oldest entry's stream goes into r_over: "some read on this stream, at most
 * its end": a later writer then waits for the end of that stream as it is at
 * that time (conservative, never wrong).  96 bytes.
 */
struct sched_astate {
	uint64_t id;		/* allocation id; 0: empty slot */
	uint64_t w_seq;		/* last writer on w_stream; 0: none */
	uint64_t w_fin;		/* its virtual finish */
	uint64_t r_fin;		/* latest virtual finish of the readers */
	uint64_t r_seq[SCHED_RD_INLINE];
	uint64_t r_over;	/* bit j: collapsed reads on stream j */
	uint8_t w_stream;
	uint8_t r_stream[SCHED_RD_INLINE];
	uint8_t nr;		/* entries in r_seq / r_stream */
	uint8_t hot;		/* SCHED_HOT_* */
	/*
	 * Byte ranges (sched_access.len != 0) are tracked as sub-states: an
	 * allocation's state holds the operations that touched it whole,
	 * and nsub sub-states (ids sched_sub_id(id, k)) hold, each, those
	 * that touched exactly [lo, hi).  An access consults its
	 * allocation's state and every sub-state its range overlaps (a
	 * whole access: all of them), and is recorded in the sub-state of
	 * its exact range, or in the allocation's state when it has none.
	 */
	uint8_t nsub;		/* allocation state: sub-states in use */
	uint64_t lo, hi;	/* sub-state: its byte range */
};

/*
 * Sub-states per allocation: enough for one slice per head, layer or
 * task of one buffer (mha's 16 heads); an access consults each one its
 * range overlaps, so this also bounds that scan.
 */
#define SCHED_SUB_MAX	64
/* Ids a sub-state may be derived from: bits 57..63 free. */
#define SCHED_SUB_BITS	((1ull << 63) | (63ull << 57))

static inline int sched_sub_ok(uint64_t id)
{
	return !(id & SCHED_SUB_BITS);
}

static inline uint64_t sched_sub_id(uint64_t id, int k)
{
	return (1ull << 63) | ((uint64_t)k << 57) | id;
}

/*
 * Allocation states: open addressing, linear probing, deletion by backward
 * shift (no tombstones, so probe lengths stay short across frees).  The
 * table grows only when a new id is first seen, never on the steady path.
 */
struct sched_map {
	struct sched_astate *slot;
	uint32_t mask;		/* capacity - 1, capacity a power of two */
	uint32_t count;
};

struct sched_stream {
	uint64_t tail;		/* seq of the last operation submitted */
	uint64_t done;		/* highest seq known complete */
	uint64_t fin;		/* virtual finish of the tail */
	unsigned ev_next;	/* ring cursor: the slot to record next */
};

/* Where a dependency on a stream came from (for the hot marks). */
#define SCHED_SRC_NONE	0
#define SCHED_SRC_W	1
#define SCHED_SRC_R	2

struct sched {
	int n;
	unsigned flags;		/* SCHED_EAGER_EVENTS */
	uint32_t max_allocs;	/* 0: unbounded */
	int fail_alloc;		/* test knob: internal allocations to fail */

	struct sched_stream *st;	/* [n] */
	uint64_t *clock;		/* [n * n] */
	uint64_t *ev_seq;		/* [n * E]: op it follows; 0: none */
	uint64_t *ev_fin;		/* [n * E]: its virtual finish */
	uint64_t *ev_clock;		/* [n * E * n]: clock of the record */
	/*
	 * [n * E]: the allocation whose hot mark asked for the record (0:
	 * none), and the mark; ev_used: a wait or host wait named it.  A
	 * record overwritten unused takes the mark back (hot-mark decay).
	 */
	uint64_t *ev_src;
	uint8_t *ev_srcbit;
	uint8_t *ev_used;

	uint64_t vnow;		/* virtual time known to have passed */
	uint32_t sync_epoch;	/* full synchronizations seen (SCHED_HOT_TAG) */
	int kept_up;		/* sched_set_kept_up() */
	int narrow;		/* sched_set_narrow() */
	int last_t;		/* stream of the latest decision, -1: none */
	int bar_stream;		/* the latest barrier, (bar_stream, bar_seq) */
	uint64_t bar_seq;	/* 0: none */
	uint64_t bar_fin;

	struct sched_map map;
	struct sched_stats stats;

	/*
	 * Scratch of one call, allocated once.  need[j] is valid for the bits
	 * of need_mask only: the latest operation of stream j depended on.
	 */
	uint64_t need_mask;
	uint64_t *need;		/* [n] */
	uint64_t *need_fin;	/* [n] */
	uint64_t *src_id;	/* [n] allocation that set need[j] */
	uint8_t *src_kind;	/* [n] SCHED_SRC_* */
	int *eff_ev;		/* [n] slot a wait on j would use, -1: lazy */
	uint64_t *eff_fin;	/* [n] virtual finish that wait implies */
	int *plist;		/* [n] the bits of need_mask, as a list */
	int np;
	uint64_t *tmp;		/* [n] */
};

/* j takes the index of each set bit of mask, lowest first. */
#define SCHED_FOR_EACH_BIT(j, mask) \
	for (uint64_t bits_ = (mask); \
	     bits_ && ((j) = __builtin_ctzll(bits_), 1); bits_ &= bits_ - 1)

static inline uint64_t sched_max(uint64_t a, uint64_t b)
{
	return a > b ? a : b;
}

static inline uint64_t *sched_clock(const struct sched *s, int t)
{
	return s->clock + (size_t)t * s->n;
}

static inline uint64_t *sched_ev_clock(const struct sched *s, int slot)
{
	return s->ev_clock + (size_t)slot * s->n;
}

/* Known complete: dependencies on it are free. */
static inline int sched_is_done(const struct sched *s, int j, uint64_t seq)
{
	return seq <= s->st[j].done;
}

/* a[k] = max(a[k], b[k]) */
void sched_vc_merge(uint64_t *a, const uint64_t *b, int n);
uint64_t sched_vc_sum(const uint64_t *a, int n);

/*
 * The dependency collection shared with the host waits (sched.c,
 * sched-sync.c).  Inline: a submission calls these once or more per access.
 */
static inline void sched_need_reset(struct sched *s)
{
	s->need_mask = 0;
}

static inline void sched_need_add(struct sched *s, int j, uint64_t seq,
				  uint64_t fin, uint64_t src_id, int src_kind)
{
	uint64_t bit = 1ull << j;

	if (!seq)
		return;
	if (!(s->need_mask & bit)) {
		s->need_mask |= bit;
		s->need[j] = seq;
		s->need_fin[j] = fin;
		s->src_id[j] = src_id;
		s->src_kind[j] = (uint8_t)src_kind;
		return;
	}
	if (seq > s->need[j]) {
		s->need[j] = seq;
		s->src_id[j] = src_id;
		s->src_kind[j] = (uint8_t)src_kind;
	}
	s->need_fin[j] = sched_max(s->need_fin[j], fin);
}

static inline void sched_need_state(struct sched *s,
				    const struct sched_astate *a, int writes)
{
	int j;

	if (a->w_seq)
		sched_need_add(s, a->w_stream, a->w_seq, a->w_fin, a->id,
			       SCHED_SRC_W);
	if (!writes)
		return;
	for (int i = 0; i < a->nr; i++)
		sched_need_add(s, a->r_stream[i], a->r_seq[i], a->r_fin, a->id,
			       SCHED_SRC_R);
	/* Collapsed readers: the whole stream as it is now. */
	SCHED_FOR_EACH_BIT(j, a->r_over)
		sched_need_add(s, j, s->st[j].tail, s->st[j].fin, a->id,
			       SCHED_SRC_R);
}

void sched_need_barrier(struct sched *s);

/*
 * Event rings.  sched_ev_cover(): the earliest record on j at or after seq
 * (-1: none); sched_ev_below(): the latest at or before seq (-1: none).
 * sched_ev_record(): take the ring's next slot for a record at the end of j
 * (a snapshot of clock[j]) and return it.
 */
int sched_ev_cover(const struct sched *s, int j, uint64_t seq);
int sched_ev_below(const struct sched *s, int j, uint64_t seq);
int sched_ev_record(struct sched *s, int j);
/* A wait or host wait names the slot's record (see sched_ev_retire()). */
void sched_ev_use(struct sched *s, int slot);

/* sched-map.c */
int sched_map_init(struct sched *s);
void sched_map_release(struct sched_map *m);
static inline uint32_t sched_map_hash(uint64_t id, uint32_t mask)
{
	/* Ids are small consecutive integers: spread them (Fibonacci). */
	uint64_t h = id * 0x9e3779b97f4a7c15ull;

	return (uint32_t)(h >> 32) & mask;
}

/* Inline: every access of every submission looks its state up. */
static inline struct sched_astate *sched_map_find(const struct sched_map *m,
						  uint64_t id)
{
	uint32_t i = sched_map_hash(id, m->mask);

	for (;;) {
		struct sched_astate *a = &m->slot[i];

		if (a->id == id)
			return a;
		if (!a->id)
			return NULL;
		i = (i + 1) & m->mask;
	}
}
/* The access names a byte range that sub-states can track. */
static inline int sched_acc_ranged(const struct sched_access *x)
{
	return x->len && x->off + x->len > x->off &&
	       sched_sub_ok(x->alloc_id);
}

/* Whether sub-state c's range and the access's bytes share a byte. */
static inline int sched_sub_overlaps(const struct sched_astate *c,
				     const struct sched_access *x)
{
	return !sched_acc_ranged(x) ||
	       (x->off < c->hi && c->lo < x->off + x->len);
}

/*
 * The dependencies of access x to the allocation whose state is a: its
 * whole-allocation accesses, and those of every overlapping sub-state.
 */
static inline void sched_need_access(struct sched *s,
				     const struct sched_astate *a,
				     const struct sched_access *x)
{
	int writes = x->mode != SCHED_READ;

	sched_need_state(s, a, writes);
	for (int k = 0; k < a->nsub; k++) {
		const struct sched_astate *c =
			sched_map_find(&s->map, sched_sub_id(a->id, k));

		if (c && sched_sub_overlaps(c, x))
			sched_need_state(s, c, writes);
	}
}

/* Room for `more` new ids; 0, -ENOMEM or -ENOSPC (max_allocs). */
int sched_map_reserve(struct sched *s, uint32_t more);
/* After sched_map_reserve(): never fails. */
struct sched_astate *sched_map_get(struct sched_map *m, uint64_t id);
int sched_map_delete(struct sched_map *m, uint64_t id);
int sched_map_check(const struct sched_map *m);

/* Allocation through the test knob. */
void *sched_calloc(struct sched *s, size_t n, size_t size);

#endif
