/*
 * pace.h - whether spreading a program's work over the pool pays, measured
 * on the program itself (streams.c, "Checking that spreading pays";
 * docs/design-streams.md).
 *
 * The scheduler's model says where an operation could start earliest; it
 * cannot say what running on several queues costs the GPU.  On a program
 * whose GPU is busy but which has little independent work, that cost wins:
 * googlenet at batch 256 ran 4.5% slower on 16 streams than unscheduled,
 * and 0.2% faster on one (bench/results/streams.md, run 15).  So kmux
 * measures (on by default since run 17; KMUX_PACE=0 off).  The program's
 * synchronizations (those that wait for all of the pool's work: a read
 * that waits for its writer does not count, the rest of the epoch's work
 * would still be running) cut its work into epochs; programs repeat
 * themselves, so an epoch of the same kind (the same sequence of
 * operations, hashed) comes again.
 * For each kind the first PACE_WARM epochs run spread and are not timed
 * (start-up), then spread and in line alternate until each has
 * PACE_SAMPLES epochs, and the kind keeps whichever had the lower median
 * time.  In line loses at once when one in-line epoch took PACE_LOSS_PCT
 * percent longer than the fastest spread one: a program that gains from
 * spreading pays for one epoch.  In line means every operation on the
 * stream of the one before (sched_set_narrow()); dependencies and waits
 * are computed as always, so the choice moves work between streams and
 * never changes an order.
 *
 * An epoch's kind must be known when its first operation is placed, before
 * the rest of it is seen: it is keyed by the work of the epoch before
 * (its hash) and its own first operation (the first version predicted
 * the next kind from the one that followed last time: on host_sync,
 * whose rounds begin with a reset copy, that guess was wrong once a round,
 * and one epoch in four ran in line without being measured; run 17).  An
 * epoch whose work differs from what its key's epochs did before gives no
 * sample; a key whose epochs differ too often (more than one in
 * PACE_ODD_SHARE) is judged by nothing and stays spread.
 *
 * Pure bookkeeping: no driver calls, no locking (the caller holds its
 * context's lock), no clock (the caller passes the time).
 */
#ifndef KMUX_PACE_H
#define KMUX_PACE_H

#include <stdint.h>

#define PACE_KINDS	16	/* epoch kinds remembered, least recent replaced */
#define PACE_SAMPLES	3	/* timed epochs per mode before a verdict */
#define PACE_WARM	2	/* first epochs of a kind: spread, untimed */
#define PACE_MIN_OPS	16	/* fewer operations: not an epoch, ignored */
#define PACE_LOSS_PCT	20	/* in line this much slower: spread, at once */
#define PACE_ODD_SHARE	4	/* 1 in this many epochs unlike: varied */

enum pace_mode {
	PACE_SPREAD = 0,
	PACE_INLINE = 1,
};

enum pace_verdict {
	PACE_OPEN = 0,		/* still measuring */
	PACE_KEEP_SPREAD,
	PACE_KEEP_INLINE,
	PACE_VARIED,		/* its epochs differ: spread, unjudged */
};

struct pace_kind {
	uint64_t key;		/* 0: slot free */
	uint64_t sig;		/* of the work its epochs do */
	uint64_t used;		/* p->clock when last seen */
	uint32_t seen;		/* counted epochs with this key */
	uint32_t odd;		/* of them, after warm-up, unlike sig */
	uint8_t verdict;	/* enum pace_verdict */
	uint8_t n[2];		/* timed epochs per mode */
	uint64_t ns[2][PACE_SAMPLES];
};

struct pace {
	struct pace_kind kind[PACE_KINDS];
	uint64_t key;		/* of the epoch in progress, from its first op */
	uint64_t sig;		/* of its operations so far */
	uint32_t ops;		/* how many */
	uint64_t start_ns;	/* when it began */
	int mode;		/* enum pace_mode: it runs in */
	uint64_t prev;		/* the last counted epoch's sig, 0 none */
	uint64_t clock;		/* epochs ended */
	/* For the exit line. */
	uint64_t epochs;	/* counted epochs (PACE_MIN_OPS or more) */
	uint64_t inline_epochs;	/* of them, run in line */
	uint64_t kinds_spread, kinds_inline;	/* verdicts in force */
	uint64_t kinds_varied;
};

/* A fresh record; the first epoch begins at now_ns, spread. */
void pace_init(struct pace *p, uint64_t now_ns);

/*
 * One operation of the epoch in progress, described by a and b.  Returns
 * 1 when it is the epoch's first: p->mode was chosen for the epoch then,
 * and the caller places from this operation on accordingly.
 */
int pace_op(struct pace *p, uint64_t a, uint64_t b);

/*
 * The host waited for all of the GPU's work at now_ns: the epoch in
 * progress ends (it counts when it had PACE_MIN_OPS operations), the next
 * one begins; until its first operation, spread.
 */
void pace_epoch_end(struct pace *p, uint64_t now_ns);

/* The kind keyed by key, or NULL; the key of the epoch that follows one
 * of work prev with first operation a, b (for tests). */
const struct pace_kind *pace_kind_find(const struct pace *p, uint64_t key);
uint64_t pace_key(uint64_t prev, uint64_t a, uint64_t b);

#endif
