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
 * can measure (KMUX_PACE=1; off by default, run 16).  The program's
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
 * Which mode the next epoch runs in is decided when the current one ends,
 * before its kind is known: by the kind that followed this one last time.
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

enum pace_mode {
	PACE_SPREAD = 0,
	PACE_INLINE = 1,
};

enum pace_verdict {
	PACE_OPEN = 0,		/* still measuring */
	PACE_KEEP_SPREAD,
	PACE_KEEP_INLINE,
};

struct pace_kind {
	uint64_t sig;		/* 0: slot free */
	uint64_t next;		/* the kind that followed it last time, 0 */
	uint64_t used;		/* p->clock when last seen */
	uint32_t seen;
	uint8_t verdict;	/* enum pace_verdict */
	uint8_t n[2];		/* timed epochs per mode */
	uint64_t ns[2][PACE_SAMPLES];
};

struct pace {
	struct pace_kind kind[PACE_KINDS];
	uint64_t sig;		/* of the epoch in progress */
	uint32_t ops;		/* its operations so far */
	uint64_t start_ns;	/* when it began */
	int mode;		/* enum pace_mode: it runs in */
	uint64_t prev;		/* the last epoch's kind, 0 none */
	uint64_t clock;		/* epochs ended */
	/* For the exit line. */
	uint64_t epochs;	/* counted epochs (PACE_MIN_OPS or more) */
	uint64_t inline_epochs;	/* of them, run in line */
	uint64_t kinds_spread, kinds_inline;	/* verdicts given */
};

/* A fresh record; the first epoch begins at now_ns, spread. */
void pace_init(struct pace *p, uint64_t now_ns);

/* One operation of the epoch in progress; a and b describe it. */
static inline void pace_op(struct pace *p, uint64_t a, uint64_t b)
{
	p->ops++;
	p->sig = (p->sig ^ a) * 0x100000001b3ull;
	p->sig = (p->sig ^ b) * 0x100000001b3ull;
}

/*
 * The host waited for the GPU at now_ns: the epoch in progress ends (it
 * counts when it had PACE_MIN_OPS operations), the next one begins.
 * Returns the mode the next one runs in.
 */
int pace_epoch_end(struct pace *p, uint64_t now_ns);

/* The kind of sig, or NULL (for tests). */
const struct pace_kind *pace_kind_find(const struct pace *p, uint64_t sig);

#endif
