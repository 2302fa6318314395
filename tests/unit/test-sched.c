/*
 * test-sched.c - unit tests of the stream scheduler's decisions (sched.h).
 *
 * Known DAGs are checked for their exact stream assignments and counts of
 * waits issued and pruned.  Then random programs (kernels, copies, barriers,
 * joins, host synchronizations, frees, completion polling) over random
 * allocations are carried out by a small simulated GPU in this file: streams
 * run their items in order, operations take random durations, a wait holds
 * its stream until the record it captured has run, and a record's slot is
 * overwritten by the next record of it, as with CUDA events.  For every pair
 * of operations that conflict (same memory, at least one writer, or a
 * barrier), the simulator checks that the later one follows the earlier one
 * both in its own happens-before clock (independent of the scheduler's) and
 * in time.  Host reads are checked the same way against the host's clock.
 *
 * KMUX_TEST_SEED=<n> replays the random tests with another seed;
 * KMUX_TEST_PROGRAMS=<n> sets how many programs per stream count (default 150).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "sched.h"

static uint64_t seed = 0x6b6d7578u;	/* "kmux" */
static int programs = 150;

#define E SCHED_EVENTS_PER_STREAM

/* xorshift64*: deterministic, so a failure can be replayed by seed. */
static uint64_t rnd(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 0x2545f4914f6cdd1dull;
}

static uint64_t rnd_below(uint64_t *s, uint64_t n)
{
	return rnd(s) % n;
}

/* --- helpers for the known DAGs ----------------------------------------- */

/*
 * Submit an operation written as "r1 w2 x3": read allocation 1, write 2,
 * read-write 3; "w1@8+4" writes bytes [8, 12) of allocation 1 only.  Fails the test on an error; returns the decision.
 */
static struct sched_decision sub_w(struct sched *s, const char *spec,
				   unsigned flags, uint32_t weight)
{
	struct sched_access acc[16];
	struct sched_decision d;
	const char *p = spec;
	int n = 0;

	while (*p) {
		char *end;

		if (*p == ' ') {
			p++;
			continue;
		}
		assert_true(n < 16);
		acc[n].mode = *p == 'r' ? SCHED_READ :
			      *p == 'w' ? SCHED_WRITE : SCHED_RW;
		acc[n].alloc_id = strtoull(p + 1, &end, 10);
		acc[n].off = acc[n].len = 0;
		p = end;
		if (*p == '@') {	/* "x1@8+4": bytes [8, 12) */
			acc[n].off = strtoull(p + 1, &end, 10);
			assert_true(*end == '+');
			acc[n].len = strtoull(end + 1, &end, 10);
			p = end;
		}
		n++;
	}
	memset(&d, 0xa5, sizeof(d));
	assert_int_equal(sched_submit_weighted(s, acc, n, flags, weight, &d),
			 0);
	assert_int_equal(sched_check(s), 0);
	return d;
}

static struct sched_decision sub(struct sched *s, const char *spec)
{
	return sub_w(s, spec, 0, 1);
}

static struct sched *new_sched(int n, unsigned flags)
{
	struct sched *s = NULL;

	assert_int_equal(sched_new(n, flags, &s), 0);
	assert_non_null(s);
	return s;
}

static struct sched_stats stats(const struct sched *s)
{
	struct sched_stats st;

	sched_get_stats(s, &st);
	return st;
}

/* --- known DAGs ----------------------------------------------------- */

/* Dependencies the second of two operations has on the first. */
static uint64_t deps_between(const char *first, const char *second)
{
	struct sched *s = new_sched(4, 0);
	uint64_t deps;

	sub(s, first);
	deps = stats(s).deps;
	sub(s, second);
	deps = stats(s).deps - deps;
	sched_free(s);
	return deps;
}

/* Byte ranges of one allocation conflict only where they overlap. */
static void test_ranges_conflict(void **state)
{
	(void)state;
	/* disjoint, adjacent on either side: no dependency */
	assert_int_equal(deps_between("w1@4+4", "w1@8+4"), 0);
	assert_int_equal(deps_between("w1@8+4", "w1@4+4"), 0);
	assert_int_equal(deps_between("x1@0+8", "x1@8+8"), 0);
	/* one byte shared, on either side */
	assert_int_equal(deps_between("w1@4+4", "w1@7+4"), 1);
	assert_int_equal(deps_between("w1@7+4", "w1@4+4"), 1);
	assert_int_equal(deps_between("w1@4+4", "r1@0+5"), 1);
	assert_int_equal(deps_between("r1@0+5", "w1@4+4"), 1);
	/* inside, same range */
	assert_int_equal(deps_between("w1@0+16", "w1@4+4"), 1);
	assert_int_equal(deps_between("w1@4+4", "w1@0+16"), 1);
	assert_int_equal(deps_between("w1@4+4", "w1@4+4"), 1);
	/* readers never conflict */
	assert_int_equal(deps_between("r1@4+4", "r1@4+4"), 0);
	assert_int_equal(deps_between("r1@4+4", "r1"), 0);
	/* a whole access overlaps every range, both ways */
	assert_int_equal(deps_between("w1@4+4", "r1"), 1);
	assert_int_equal(deps_between("r1@4+4", "w1"), 1);
	assert_int_equal(deps_between("w1", "r1@1000+4"), 1);
	assert_int_equal(deps_between("r1", "w1@1000+4"), 1);
	/* other allocations are other allocations */
	assert_int_equal(deps_between("w1@4+4", "w2@4+4"), 0);
}

/* Whole accesses, more ranges than sub-states, forget and rename. */
static void test_ranges_whole_and_limits(void **state)
{
	struct sched *s = new_sched(4, 0);
	struct sched_decision d;
	uint64_t deps;
	char spec[32];

	(void)state;
	/* Two slots written on two streams; a whole reader waits for both. */
	d = sub(s, "w1@0+4");
	assert_int_equal(d.stream, 0);
	d = sub(s, "w1@4+4");
	assert_int_equal(d.stream, 1);
	assert_int_equal(d.nwait, 0);
	deps = stats(s).deps;
	sub(s, "r1");
	assert_int_equal(stats(s).deps - deps, 2);
	/* A whole writer after it: its slots start over from it. */
	sub(s, "w1");
	deps = stats(s).deps;
	sub(s, "w1@0+4");
	assert_int_equal(stats(s).deps - deps, 1);
	sched_free(s);

	/*
	 * More busy ranges than sub-states: the extra one counts as whole,
	 * so a later disjoint range still waits for it.
	 */
	s = new_sched(16, 0);
	for (int k = 0; k <= 64; k++) {	/* SCHED_SUB_MAX + 1 ranges */
		snprintf(spec, sizeof(spec), "w1@%d+4", 4 * k);
		d = sub(s, spec);
		assert_int_equal(d.nwait, 0);
	}
	deps = stats(s).deps;
	sub(s, "w1@1000+4");
	assert_int_equal(stats(s).deps - deps, 1);
	/* Rename moves the sub-states; forget drops them all. */
	assert_int_equal(sched_rename(s, 1, 7), 0);
	assert_int_equal(sched_check(s), 0);
	deps = stats(s).deps;
	sub(s, "r7@4+4");
	assert_int_equal(stats(s).deps - deps, 2);	/* slot 1, the whole */
	assert_int_equal(sched_forget(s, 7), 0);
	assert_int_equal(stats(s).allocs, 0);
	sched_free(s);
}


static void test_invalid_arguments(void **state)
{
	struct sched_access bad[2] = { { .alloc_id = 1, .mode = SCHED_READ },
					{ .alloc_id = 0, .mode = SCHED_READ } };
	struct sched_access badmode = { .alloc_id = 1,
					.mode = (enum sched_mode)7 };
	struct sched_decision d;
	struct sched_hostwait hw;
	struct sched *s = NULL;

	(void)state;
	assert_int_equal(sched_new(0, 0, &s), -EINVAL);
	assert_int_equal(sched_new(SCHED_MAX_STREAMS + 1, 0, &s), -EINVAL);
	assert_int_equal(sched_new(4, 0x80, &s), -EINVAL);
	assert_int_equal(sched_new(4, 0, NULL), -EINVAL);
	assert_null(s);
	s = new_sched(4, 0);
	assert_int_equal(sched_submit(s, bad, 2, 0, &d), -EINVAL);
	assert_int_equal(sched_submit(s, &badmode, 1, 0, &d), -EINVAL);
	assert_int_equal(sched_submit(s, NULL, 1, 0, &d), -EINVAL);
	assert_int_equal(sched_submit(s, bad, -1, 0, &d), -EINVAL);
	assert_int_equal(sched_submit(s, bad, 1, 0x100, &d), -EINVAL);
	assert_int_equal(sched_submit(s, bad, 1, 0, NULL), -EINVAL);
	assert_int_equal(sched_sync_for(s, bad, 2, &hw), -EINVAL);
	assert_int_equal(sched_complete(s, 4, 1), -EINVAL);
	assert_int_equal(sched_complete(s, -1, 1), -EINVAL);
	assert_int_equal(sched_complete(s, 0, 1), -EINVAL);	/* not yet */
	assert_int_equal(sched_forget(s, 12345), -ENOENT);
	/* Nothing changed, and a barrier always goes through. */
	assert_int_equal(stats(s).ops, 0);
	assert_int_equal(sched_submit(s, NULL, 0, SCHED_BARRIER, &d), 0);
	assert_int_equal(d.flags & SCHED_DEC_BARRIER, SCHED_DEC_BARRIER);
	assert_int_equal(sched_check(s), 0);
	sched_free(s);
	sched_free(NULL);
}

/* Independent kernels spread over the pool, round robin, with no waits. */
static void test_independent_spread(void **state)
{
	static const int ns[] = { 1, 2, 4, 8 };

	(void)state;
	for (size_t k = 0; k < sizeof(ns) / sizeof(ns[0]); k++) {
		struct sched *s = new_sched(ns[k], 0);
		struct sched_stats st;

		for (int i = 0; i < 16; i++) {
			char spec[16];
			struct sched_decision d;

			snprintf(spec, sizeof(spec), "x%d", i + 1);
			d = sub(s, spec);
			assert_int_equal(d.stream, i % ns[k]);
			assert_int_equal(d.seq, (uint64_t)(i / ns[k] + 1));
			assert_int_equal(d.nwait, 0);
			assert_int_equal(d.nrecord, 0);
			assert_int_equal(d.record_after, -1);
		}
		st = stats(s);
		assert_int_equal(st.ops, 16);
		assert_int_equal(st.deps, 0);
		assert_int_equal(st.waits_issued, 0);
		assert_int_equal(st.events_after + st.events_lazy, 0);
		assert_int_equal(st.allocs, 16);
		for (int t = 0; t < ns[k]; t++)
			assert_int_equal(sched_load(s, t), 16 / ns[k]);
		sched_free(s);
	}
}

/* Four independent writers x1..x4 spread over streams 0..3. */
static void spread_x1_x4(struct sched *s)
{
	for (int i = 1; i <= 4; i++)
		assert_int_equal(sub(s, (char[]){ 'x', (char)('0' + i), 0 }).stream,
				 i - 1);
}

/*
 * While the GPU keeps up, independent work stays on the previous
 * operation's stream (no waits, no records), an operation with one
 * predecessor elsewhere goes to that predecessor's stream, and one with
 * predecessors on two streams waits for one of them; off again, work
 * spreads as before.  Dependencies are never dropped.
 */
static void test_kept_up(void **state)
{
	struct sched *s = new_sched(8, 0);
	struct sched_decision d;
	struct sched_stats st;

	(void)state;
	spread_x1_x4(s);
	sched_set_kept_up(s, 1);
	for (int i = 5; i <= 9; i++) {
		d = sub(s, (char[]){ 'x', (char)('0' + i), 0 });
		assert_int_equal(d.stream, 3);	/* x4's, the previous one */
		assert_int_equal(d.nwait + d.nrecord, 0);
		assert_int_equal(d.record_after, -1);
	}
	d = sub(s, "r2 w20");			/* x2 is on stream 1 */
	assert_int_equal(d.stream, 1);
	assert_int_equal(d.nwait, 0);
	d = sub(s, "r1 r9 w21");		/* streams 0 and 3 */
	assert_int_equal(d.nwait, 1);
	assert_true(d.stream == 0 || d.stream == 3);
	st = stats(s);
	assert_int_equal(st.kept_up, 7);
	assert_int_equal(st.waits_issued, 1);
	sched_set_kept_up(s, 0);
	d = sub(s, "x30");
	d = sub(s, "x31");
	assert_int_not_equal(sub(s, "x32").stream, d.stream);
	assert_int_equal(stats(s).kept_up, 7);
	sched_set_kept_up(NULL, 1);		/* harmless */
	assert_int_equal(sched_pending(NULL, 0), 0);
	assert_int_equal(sched_pending(s, 8), 0);
	sched_free(s);
}

/*
 * In line (pace.h): every operation goes to the previous operation's
 * stream, even one whose only predecessor is elsewhere (it waits for it
 * instead), and over keeping up; off again, work spreads.
 */
static void test_narrow(void **state)
{
	struct sched *s = new_sched(8, 0);
	struct sched_decision d;

	(void)state;
	spread_x1_x4(s);
	sched_set_narrow(s, 1);
	sched_set_kept_up(s, 1);
	for (int i = 5; i <= 8; i++) {
		d = sub(s, (char[]){ 'x', (char)('0' + i), 0 });
		assert_int_equal(d.stream, 3);
		assert_int_equal(d.nwait, 0);
	}
	d = sub(s, "r2 w20");			/* x2 is on stream 1 */
	assert_int_equal(d.stream, 3);
	assert_int_equal(d.nwait, 1);		/* kept up would go to 1 */
	d = sub(s, "r1 r20 w21");		/* x1 on 0, w20 here */
	assert_int_equal(d.stream, 3);
	assert_int_equal(d.nwait, 1);
	assert_int_equal(stats(s).narrow, 6);
	assert_int_equal(stats(s).kept_up, 0);
	sched_set_narrow(s, 0);
	sched_set_kept_up(s, 0);
	d = sub(s, "x30");
	assert_int_not_equal(sub(s, "x31").stream, d.stream);
	assert_int_equal(stats(s).narrow, 6);
	sched_set_narrow(NULL, 1);		/* harmless */
	sched_free(s);
}

/* A dependent chain stays on one stream: no waits, no events. */
static void test_chain(void **state)
{
	struct sched *s = new_sched(8, 0);
	struct sched_stats st;

	(void)state;
	sub(s, "w1");
	for (int i = 1; i < 100; i++) {
		char spec[32];
		struct sched_decision d;

		/* Each layer reads the last output, and the input (a skip). */
		snprintf(spec, sizeof(spec), "r%d r1 w%d", i, i + 1);
		d = sub(s, spec);
		assert_int_equal(d.stream, 0);
		assert_int_equal(d.seq, (uint64_t)i + 1);
		assert_int_equal(d.nwait + d.nrecord, 0);
		assert_int_equal(d.record_after, -1);
	}
	st = stats(s);
	assert_int_equal(st.waits_issued, 0);
	assert_int_equal(st.deps, 99);
	assert_int_equal(st.deps_same, 99);
	assert_int_equal(st.events_after + st.events_lazy, 0);
	sched_free(s);
}

/*
 * Diamond A -> {B, C} -> D, with records after every operation: C goes
 * beside B on a second stream, waiting for A; D joins them on the first
 * with one wait for C.
 */
static void test_diamond_eager(void **state)
{
	struct sched *s = new_sched(4, SCHED_EAGER_EVENTS);
	struct sched_decision a, b, c, d;

	(void)state;
	a = sub(s, "w1");
	b = sub(s, "r1 w2");
	c = sub(s, "r1 w3");
	d = sub(s, "r2 r3 w4");
	assert_int_equal(a.stream, 0);
	assert_int_equal(b.stream, 0);
	assert_int_equal(c.stream, 1);
	assert_int_equal(d.stream, 0);
	assert_int_equal(a.nwait + b.nwait, 0);
	assert_int_equal(c.nwait, 1);
	assert_int_equal(c.wait[0].stream, 0);
	assert_int_equal(c.wait[0].seq, 1);
	assert_int_equal(c.wait[0].event, a.record_after);
	assert_int_equal(d.nwait, 1);
	assert_int_equal(d.wait[0].stream, 1);
	assert_int_equal(d.wait[0].event, c.record_after);
	assert_int_equal(c.nrecord + d.nrecord, 0);
	assert_int_equal(stats(s).waits_issued, 2);
	assert_int_equal(stats(s).events_after, 4);
	sched_free(s);
}

/*
 * The same diamond, twice, with events only where they pay.  The first
 * time nothing is known: C's wait on A could only use a record after B, so
 * C stays behind B (no event at all), and allocation 1 is marked.  The
 * second time A gets a record after it, and C runs beside B.
 */
static void test_diamond_learns(void **state)
{
	struct sched *s = new_sched(4, 0);
	struct sched_decision a, b, c, d;

	(void)state;
	a = sub(s, "w1");
	b = sub(s, "r1 w2");
	c = sub(s, "r1 w3");
	d = sub(s, "r2 r3 w4");
	assert_int_equal(a.stream + b.stream + c.stream + d.stream, 0);
	assert_int_equal(stats(s).waits_issued, 0);
	assert_int_equal(stats(s).events_after + stats(s).events_lazy, 0);
	assert_int_equal(a.record_after, -1);

	a = sub(s, "w1");
	b = sub(s, "r1 w2");
	c = sub(s, "r1 w3");
	d = sub(s, "r2 r3 w4");
	assert_int_equal(a.stream, 0);
	assert_true(a.record_after >= 0);
	assert_int_equal(b.stream, 0);
	assert_int_equal(c.stream, 1);
	assert_int_equal(c.nwait, 1);
	assert_int_equal(c.wait[0].event, a.record_after);
	assert_int_equal(c.wait[0].seq, a.seq);
	assert_int_equal(d.stream, 0);
	assert_int_equal(d.nwait, 1);
	assert_int_equal(d.wait[0].stream, 1);
	assert_int_equal(d.wait[0].seq, c.seq);
	/*
	 * A' could not overlap D of the first round (it found no record after
	 * C, the last reader of 1), so readers of 1 now record too: C has.
	 */
	assert_true(c.record_after >= 0);
	assert_int_equal(d.wait[0].event, c.record_after);
	assert_int_equal(d.nrecord, 0);
	assert_int_equal(stats(s).over_waits, 0);

	/*
	 * The third round: A'' (write after the reads by B' and C') runs
	 * after C' on stream 1, waiting for B''s record, beside D'.
	 */
	c = sub(s, "w1");
	assert_int_equal(c.stream, 1);
	assert_int_equal(c.nwait, 1);
	assert_int_equal(c.wait[0].stream, 0);
	assert_int_equal(c.wait[0].seq, b.seq);
	assert_int_equal(c.wait[0].event, b.record_after);
	assert_int_equal(stats(s).over_waits, 0);
	sched_free(s);
}

/*
 * count diamonds A -> B, C -> D, two rounds each, the k-th on allocations
 * base + 10k + 1..4: after them each A's allocation is hot.
 */
static void diamonds_learned(struct sched *s, int count, int base)
{
	char spec[4][40];

	for (int k = 0; k < count; k++, base += 10) {
		snprintf(spec[0], sizeof(spec[0]), "w%d", base + 1);
		snprintf(spec[1], sizeof(spec[1]), "r%d w%d", base + 1, base + 2);
		snprintf(spec[2], sizeof(spec[2]), "r%d w%d", base + 1, base + 3);
		snprintf(spec[3], sizeof(spec[3]), "r%d r%d w%d", base + 2,
			 base + 3, base + 4);
		for (int round = 0; round < 2; round++)
			for (int i = 0; i < 4; i++)
				sub(s, spec[i]);
	}
}

/* Two rounds of the diamond on 1..4: allocation 1 is hot after them. */
static void diamond_learned(struct sched *s)
{
	diamonds_learned(s, 1, 0);
}

/*
 * Hot-mark decay.  The diamond marks allocation 1 hot for writers; when the
 * program then becomes a chain on 1 alone, nothing ever waits for those
 * records, so once a slot of stream 0 comes round unused the mark is taken
 * back and the chain records nothing more: records stay bounded by one ring.
 */
static void test_hot_mark_decays(void **state)
{
	struct sched *s = new_sched(4, 0);
	struct sched_decision d;
	uint64_t after;

	(void)state;
	diamond_learned(s);
	d = sub(s, "w1");
	assert_true(d.record_after >= 0);	/* hot: it records */
	after = stats(s).events_after;
	for (int i = 0; i < 200; i++)
		d = sub(s, "w1");
	assert_int_equal(d.record_after, -1);
	assert_true(stats(s).hot_cleared >= 1);
	assert_true(stats(s).events_after - after <= E + 1);
	sched_free(s);
}

/* A full host synchronization, and the host seeing every stream finish. */
static void sync_everything(struct sched *s)
{
	struct sched_hostwait hw;

	assert_int_equal(sched_sync_all(s, &hw), 0);
	assert_int_equal(sched_complete_hostwait(s, &hw), 0);
}

/*
 * A program that synchronizes fully after every few diamonds (an ROI, a
 * training step).  The last round's records before each synchronization
 * go unused only because the synchronization made them moot; counted
 * against the marks, they took a mark back every few epochs, and the next
 * epoch's diamonds ran in line until it was learned again (mha's second
 * pass in bench/results/streams.md, run 19).  A mark whose records were
 * waited on since the last full synchronization keeps them excused: after
 * many epochs no mark was dropped and the third diamond of the last epoch
 * still spreads as in the first.
 */
static void test_hot_marks_survive_syncs(void **state)
{
	struct sched *s = new_sched(4, 0);
	struct sched_decision b, c;
	int in_line = 0;

	(void)state;
	for (int epoch = 0; epoch < 8 * E; epoch++) {
		for (int round = 0; round < 3; round++) {
			sub(s, "w1");
			b = sub(s, "r1 w2");
			c = sub(s, "r1 w3");
			sub(s, "r2 r3 w4");
			/* the first two rounds learn the marks */
			if (epoch > 0 && b.stream == c.stream)
				in_line++;
		}
		sync_everything(s);
	}
	assert_int_equal(in_line, 0);
	assert_int_equal(stats(s).hot_cleared, 0);
	sched_free(s);
}

/*
 * A use counts in its own epoch only, even when the allocation has no
 * record left in the ring at the synchronization that ends it.  Epoch 0:
 * the diamonds make 1's writer mark pay, then other work pushes every
 * record of 1 out of the two streams' rings.  Epoch 1: a write of 1 records
 * for the mark and nothing waits for it; at the synchronization it is not
 * excused, so when its slot comes round the mark is dropped and the next
 * write of 1 records nothing.
 */
static void test_hot_use_stays_in_its_epoch(void **state)
{
	struct sched *s = new_sched(2, 0);
	struct sched_decision d;
	uint64_t cleared;

	(void)state;
	diamond_learned(s);
	diamonds_learned(s, 12, 100);
	sync_everything(s);
	d = sub(s, "w1");
	assert_true(d.record_after >= 0);	/* still marked */
	sync_everything(s);
	cleared = stats(s).hot_cleared;
	diamonds_learned(s, 12, 300);
	assert_true(stats(s).hot_cleared > cleared);
	d = sub(s, "w1");
	assert_int_equal(d.record_after, -1);
	sched_free(s);
}

/*
 * The excuse is only for marks that proved themselves since the last full
 * synchronization: after the diamonds, a chain on 1 alone, synchronized
 * every few writes, never waits for a record, and the mark still decays.
 */
static void test_hot_mark_decays_across_syncs(void **state)
{
	struct sched *s = new_sched(4, 0);
	struct sched_decision d;

	(void)state;
	diamond_learned(s);
	for (int i = 0; i < 200; i++) {
		d = sub(s, "w1");
		if (i % 5 == 4)
			sync_everything(s);
	}
	assert_int_equal(d.record_after, -1);
	assert_true(stats(s).hot_cleared >= 1);
	sched_free(s);
}

/*
 * In line, a hot mark asks for no record (nothing would wait for it) and
 * so is not taken back: the marks the diamond learned are there when the
 * work spreads again, and the next hot write records at once.
 */
static void test_narrow_keeps_hot_marks(void **state)
{
	struct sched *s = new_sched(4, 0);
	struct sched_decision d;
	uint64_t after, cleared;

	(void)state;
	diamond_learned(s);
	sched_set_narrow(s, 1);
	after = stats(s).events_after;
	cleared = stats(s).hot_cleared;
	for (int i = 0; i < 200; i++) {
		d = sub(s, "w1");
		assert_int_equal(d.record_after, -1);
	}
	assert_int_equal(stats(s).events_after, after);
	assert_int_equal(stats(s).hot_cleared, cleared);
	sched_set_narrow(s, 0);
	d = sub(s, "w1");
	assert_true(d.record_after >= 0);	/* still hot */
	sched_free(s);
}

/*
 * SCHED_KEEP_CHAIN.  Y joins X0 and X1 and could start as early on either
 * stream with one wait.  By default it goes to the lower finish (X0's, the
 * lower index); with the flag behind X1, the operation submitted just
 * before it, and waits for X0.
 */
static void test_keep_chain_join(void **state)
{
	for (int keep = 0; keep < 2; keep++) {
		struct sched *s = new_sched(4, keep ? SCHED_KEEP_CHAIN : 0);
		struct sched_decision x0, x1, y;

		(void)state;
		x0 = sub(s, "w1");
		x1 = sub(s, "w2");
		y = sub(s, "r1 r2 w3");
		assert_int_equal(x0.stream, 0);
		assert_int_equal(x1.stream, 1);
		assert_int_equal(y.stream, keep ? 1 : 0);
		assert_int_equal(y.nwait, 1);
		assert_int_equal(y.wait[0].stream, keep ? 0 : 1);
		sched_free(s);
	}
}

/*
 * Multi-head attention as bench/apps/mha.cu submits it, with weights as
 * learned durations give them (16 us units): per head qk (21) writes its
 * slice of S, softmax (10) rewrites it, av (24) reads it and writes its
 * slice of O; a merge (4) reads all of O; two passes, then a full
 * synchronization.  A second pass's av must wait for the previous merge
 * too, and where the merge's stream finished a little earlier the lower-
 * finish tie-break put head 0's av there, apart from its qk and softmax;
 * the next heads filled the gap unevenly and one stream ran three heads
 * where the others ran two (mha 3% slower with durations, run 19-20).
 * With SCHED_KEEP_CHAIN every head stays whole and every stream runs two.
 */
static int mha_split_heads(unsigned flags, int *max_heads)
{
	const uint64_t qs = 2048ull * 64 * 4, ss = 2048ull * 2048 * 4;
	struct sched *s = new_sched(8, flags);
	int split = 0;

	*max_heads = 0;
	for (int roi = 0; roi < 6; roi++) {
		for (int pass = 0; pass < 2; pass++) {
			int heads[8] = { 0 };

			for (int h = 0; h < 16; h++) {
				struct sched_access qk[3] = {
					{ 1, SCHED_READ, h * qs, qs },
					{ 2, SCHED_READ, h * qs, qs },
					{ 4, SCHED_RW, h * ss, ss } };
				struct sched_access sm[1] = {
					{ 4, SCHED_RW, h * ss, ss } };
				struct sched_access av[3] = {
					{ 4, SCHED_READ, h * ss, ss },
					{ 3, SCHED_READ, h * qs, qs },
					{ 5, SCHED_RW, h * qs, qs } };
				struct sched_decision a, b, c;

				assert_int_equal(sched_submit_weighted(s, qk, 3, 0, 21, &a), 0);
				assert_int_equal(sched_submit_weighted(s, sm, 1, 0, 10, &b), 0);
				assert_int_equal(sched_submit_weighted(s, av, 3, 0, 24, &c), 0);
				/* the first ROI learns where records pay */
				if (roi == 0)
					continue;
				if (a.stream != b.stream || b.stream != c.stream)
					split++;
				heads[a.stream]++;
			}
			for (int t = 0; t < 8; t++)
				if (heads[t] > *max_heads)
					*max_heads = heads[t];
			struct sched_access mg[2] = { { 5, SCHED_READ, 0, 0 },
						      { 6, SCHED_RW, 0, 0 } };
			struct sched_decision m;

			assert_int_equal(sched_submit_weighted(s, mg, 2, 0, 4, &m), 0);
			assert_int_equal(sched_check(s), 0);
		}
		sync_everything(s);
	}
	sched_free(s);
	return split;
}

static void test_keep_chain_mha(void **state)
{
	int most;

	(void)state;
	assert_true(mha_split_heads(0, &most) > 0);
	assert_int_equal(most, 3);
	assert_int_equal(mha_split_heads(SCHED_KEEP_CHAIN, &most), 0);
	assert_int_equal(most, 2);
}

/*
 * An Inception-like module repeated: x is read by four branches writing
 * b1..b4, a concat reads them and writes the next x.  With decay the steady
 * state still spreads the branches over the four streams (the fork's
 * records are used, so their marks stay) and records fewer than one event
 * per two operations.
 */
static void test_inception_steady(void **state)
{
	struct sched *s = new_sched(4, 0);
	struct sched_decision d[4];
	struct sched_stats a, b;
	uint64_t mask = 0;

	(void)state;
	for (int m = 0; m < 20; m++) {
		for (int k = 0; k < 4; k++)
			sub(s, k == 0 ? "r10 w11" : k == 1 ? "r10 w12" :
			       k == 2 ? "r10 w13" : "r10 w14");
		sub(s, "r11 r12 r13 r14 w10");
	}
	a = stats(s);
	for (int m = 0; m < 200; m++) {
		for (int k = 0; k < 4; k++)
			d[k] = sub(s, k == 0 ? "r10 w11" : k == 1 ? "r10 w12" :
				   k == 2 ? "r10 w13" : "r10 w14");
		sub(s, "r11 r12 r13 r14 w10");
	}
	for (int k = 0; k < 4; k++)
		mask |= 1ull << d[k].stream;
	assert_int_equal(__builtin_popcountll(mask), 4);
	b = stats(s);
	printf("  inception steady state: %.3f records after, %.3f lazy, "
	       "%.3f waits per op, %llu marks dropped\n",
	       (double)(b.events_after - a.events_after) / 1000,
	       (double)(b.events_lazy - a.events_lazy) / 1000,
	       (double)(b.waits_issued - a.waits_issued) / 1000,
	       (unsigned long long)b.hot_cleared);
	assert_true((b.events_after - a.events_after) * 2 < 1000);
	sched_free(s);
}

/*
 * Fork-join where a transitive wait is dropped: X0 and X1 are independent;
 * Y joins them on stream 0, waiting for X1; Z reads X1's output and Y's:
 * stream 0 already follows X1 through Y's wait, so Z issues no wait.
 */
static void test_fork_join_prunes(void **state)
{
	struct sched *s = new_sched(4, 0);
	struct sched_decision x0, x1, y, z;
	struct sched_stats st;

	(void)state;
	x0 = sub(s, "w1");
	x1 = sub(s, "w2");
	y = sub(s, "r1 r2 w3");
	z = sub(s, "r2 r3 w4");
	assert_int_equal(x0.stream, 0);
	assert_int_equal(x1.stream, 1);
	assert_int_equal(y.stream, 0);
	assert_int_equal(y.nwait, 1);
	assert_int_equal(y.wait[0].stream, 1);
	assert_int_equal(z.stream, 0);
	assert_int_equal(z.nwait, 0);
	st = stats(s);
	assert_int_equal(st.waits_issued, 1);
	assert_int_equal(st.waits_pruned, 1);
	sched_free(s);
}

/*
 * Two waits where one implies the other: op5 on stream 2 depends on op3
 * (stream 0, which waited for op2) and on op2 (stream 1).  The wait for op3
 * goes first and makes the one for op2 redundant.
 */
static void test_wait_order_prunes(void **state)
{
	struct sched *s = new_sched(3, SCHED_EAGER_EVENTS);
	struct sched_decision d;
	struct sched_stats st;

	(void)state;
	assert_int_equal(sub_w(s, "w1", 0, 1).stream, 0);
	assert_int_equal(sub_w(s, "w2", 0, 20).stream, 1);
	d = sub_w(s, "r1 r2 w3", 0, 1);
	assert_int_equal(d.stream, 0);
	assert_int_equal(d.nwait, 1);
	assert_int_equal(sub_w(s, "w4", 0, 10).stream, 2);
	assert_int_equal(sub_w(s, "r3 w8", 0, 20).stream, 0);
	st = stats(s);
	d = sub_w(s, "r3 r2 r4 w6", 0, 1);
	assert_int_equal(d.stream, 2);
	assert_int_equal(d.nwait, 1);
	assert_int_equal(d.wait[0].stream, 0);
	assert_int_equal(d.wait[0].seq, 2);
	assert_int_equal(stats(s).waits_pruned - st.waits_pruned, 1);
	assert_int_equal(stats(s).waits_issued - st.waits_issued, 1);
	sched_free(s);
}

/*
 * Readers then a writer (WAR): three readers spread over three streams; the
 * writer waits for every one of them (and nothing else), and a reader after
 * it depends on it alone.
 */
static void test_readers_then_writer(void **state)
{
	struct sched *s = new_sched(4, SCHED_EAGER_EVENTS);
	struct sched_decision w0, r1, r2, r3, w, r;

	(void)state;
	w0 = sub(s, "w1");
	r1 = sub(s, "r1 w11");
	r2 = sub(s, "r1 w12");
	r3 = sub(s, "r1 w13");
	assert_int_equal(w0.stream, 0);
	assert_int_equal(r1.stream, 0);
	assert_int_equal(r2.stream, 1);
	assert_int_equal(r3.stream, 2);
	w = sub(s, "w1");
	assert_int_equal(w.stream, 0);
	assert_int_equal(w.nwait, 2);
	for (int i = 0; i < 2; i++) {
		if (w.wait[i].stream == 1)
			assert_int_equal(w.wait[i].event, r2.record_after);
		else
			assert_int_equal(w.wait[i].event, r3.record_after);
	}
	/* A reader after it follows it on its stream. */
	r = sub(s, "r1 w20");
	assert_int_equal(r.stream, w.stream);
	assert_int_equal(r.nwait, 0);
	/* Independent work, then a reader that must go elsewhere. */
	sub(s, "r20 w21");
	r = sub(s, "r1 w22");
	assert_true(r.stream != w.stream);
	assert_int_equal(r.nwait, 1);
	assert_int_equal(r.wait[0].stream, w.stream);
	assert_int_equal(r.wait[0].seq, w.seq);
	assert_int_equal(r.wait[0].event, w.record_after);
	sched_free(s);
}

/*
 * Readers pile up on more streams than a state keeps exactly: the set
 * collapses, and a later writer still waits for every reader.
 */
static void test_reader_collapse(void **state)
{
	struct sched *s = new_sched(8, SCHED_EAGER_EVENTS);
	struct sched_decision w;
	uint64_t seen = 0;

	(void)state;
	sub(s, "w1");
	for (int i = 0; i < 7; i++) {
		char spec[32];

		/* Independent work first, so readers land on fresh streams. */
		snprintf(spec, sizeof(spec), "r1 w%d", 100 + i);
		sub(s, spec);
	}
	assert_true(stats(s).reader_collapses > 0);
	w = sub(s, "w1");
	for (int i = 0; i < w.nwait; i++)
		seen |= 1ull << w.wait[i].stream;
	seen |= 1ull << w.stream;
	/* Every stream with a reader is waited for or is the writer's own. */
	for (int t = 0; t < 8; t++)
		if (sched_load(s, t) > 0 && t != w.stream)
			assert_true(seen & (1ull << t));
	sched_free(s);
}

/*
 * A barrier waits for every stream's end; every later operation waits for
 * it, once per stream; later work still spreads out.
 */
static void test_barrier(void **state)
{
	struct sched *s = new_sched(4, 0);
	struct sched_decision d, b;
	struct sched_stats st;

	(void)state;
	for (int i = 0; i < 4; i++)
		assert_int_equal(sub(s, i == 0 ? "w1" : i == 1 ? "w2" :
				      i == 2 ? "w3" : "w4").stream, i);
	b = sub_w(s, "", SCHED_BARRIER, 1);
	assert_int_equal(b.flags & SCHED_DEC_BARRIER, SCHED_DEC_BARRIER);
	assert_int_equal(b.stream, 0);
	assert_int_equal(b.nwait, 3);
	assert_int_equal(b.nrecord, 3);	/* the other streams' ends */
	assert_true(b.record_after >= 0);
	st = stats(s);
	for (int i = 0; i < 4; i++) {
		char spec[16];

		snprintf(spec, sizeof(spec), "w%d", 10 + i);
		d = sub(s, spec);
		assert_int_equal(d.stream, i);
		if (i == 0) {
			assert_int_equal(d.nwait, 0);
		} else {
			assert_int_equal(d.nwait, 1);
			assert_int_equal(d.wait[0].event, b.record_after);
		}
	}
	/* Waiting for the barrier covered what it waited for. */
	d = sub(s, "r2 w20");
	assert_int_equal(d.nwait, 0);
	assert_int_equal(stats(s).waits_issued - st.waits_issued, 3);
	assert_int_equal(stats(s).barriers, 1);
	sched_free(s);

	/* One stream: a barrier is just the next operation. */
	s = new_sched(1, 0);
	sub(s, "w1");
	b = sub_w(s, "", SCHED_BARRIER, 1);
	assert_int_equal(b.stream, 0);
	assert_int_equal(b.nwait + b.nrecord, 0);
	assert_int_equal(b.record_after, -1);
	sched_free(s);
}

/* A synchronous device-to-host copy waits for the writer alone. */
static void test_sync_for_read(void **state)
{
	struct sched *s = new_sched(4, 0);
	struct sched_hostwait hw;
	struct sched_decision k1;
	uint64_t id;

	(void)state;
	k1 = sub(s, "w1");
	sub(s, "w2");
	sub(s, "w3");
	sub(s, "r1 w4");	/* a reader of 1 after its writer: stream 0 */
	id = 2;
	assert_int_equal(sched_sync_for_read(s, &id, 1, &hw), 0);
	assert_int_equal(hw.n, 1);
	assert_int_equal(hw.ent[0].stream, 1);
	assert_int_equal(hw.ent[0].seq, 1);
	assert_int_equal(hw.ent[0].how, SCHED_HW_STREAM);
	assert_int_equal(sched_complete_hostwait(s, &hw), 0);
	/* Now known complete: nothing left to wait for. */
	assert_int_equal(sched_sync_for_read(s, &id, 1, &hw), 0);
	assert_int_equal(hw.n, 0);

	/* Writer 1 is not its stream's end; no record: the stream is waited. */
	id = 1;
	assert_int_equal(sched_sync_for_read(s, &id, 1, &hw), 0);
	assert_int_equal(hw.n, 1);
	assert_int_equal(hw.ent[0].stream, k1.stream);
	assert_int_equal(hw.ent[0].how, SCHED_HW_STREAM);
	assert_int_equal(hw.ent[0].seq, 2);
	/* Reading 4 (never written before the reader) needs its writer. */
	id = 9999;
	assert_int_equal(sched_sync_for_read(s, &id, 1, &hw), 0);
	assert_int_equal(hw.n, 0);
	assert_int_equal(sched_check(s), 0);
	sched_free(s);
}

/*
 * A read-back that had to wait for a whole stream (work queued after the
 * writer, no record between) teaches the writer to record: the next round
 * the host waits for that record alone, not for the work behind it.
 */
static void test_host_read_learns(void **state)
{
	struct sched *s = new_sched(4, 0);
	struct sched_decision w, r;
	struct sched_hostwait hw;
	uint64_t id = 1;

	(void)state;
	for (int round = 0; round < 3; round++) {
		w = sub(s, "w1");
		r = sub(s, "r1 w2");	/* follows it on its stream */
		assert_int_equal(r.stream, w.stream);
		assert_int_equal(sched_sync_for_read(s, &id, 1, &hw), 0);
		assert_int_equal(hw.n, 1);
		if (round == 0) {
			assert_int_equal(w.record_after, -1);
			assert_int_equal(hw.ent[0].how, SCHED_HW_STREAM);
		} else {
			assert_true(w.record_after >= 0);
			assert_int_equal(hw.ent[0].how, SCHED_HW_EVENT);
			assert_int_equal(hw.ent[0].event, w.record_after);
			assert_int_equal(hw.ent[0].seq, w.seq);
		}
		assert_int_equal(sched_complete_hostwait(s, &hw), 0);
		assert_int_equal(sched_sync_all(s, &hw), 0);
		assert_int_equal(sched_complete_hostwait(s, &hw), 0);
	}
	assert_int_equal(sched_check(s), 0);
	sched_free(s);
}

/* With a record between the writer and the stream's end, the host waits
 * for the record only. */
static void test_sync_for_read_event(void **state)
{
	struct sched *s = new_sched(2, SCHED_EAGER_EVENTS);
	struct sched_decision k1;
	struct sched_hostwait hw;
	uint64_t id = 1;

	(void)state;
	k1 = sub(s, "w1");
	sub(s, "r1 w2");
	assert_int_equal(sched_sync_for_read(s, &id, 1, &hw), 0);
	assert_int_equal(hw.n, 1);
	assert_int_equal(hw.ent[0].how, SCHED_HW_EVENT);
	assert_int_equal(hw.ent[0].event, k1.record_after);
	assert_int_equal(hw.ent[0].seq, k1.seq);
	assert_int_equal(sched_complete_hostwait(s, &hw), 0);
	/* The reader is still outstanding: a write must wait for it. */
	{
		struct sched_access w = { .alloc_id = 1, .mode = SCHED_WRITE };

		assert_int_equal(sched_sync_for(s, &w, 1, &hw), 0);
		assert_int_equal(hw.n, 1);
		assert_int_equal(hw.ent[0].seq, 2);
	}
	sched_free(s);
}

/*
 * Host synchronization of everything touches only streams with work, and
 * only those whose end no other waited stream already follows.
 */
static void test_sync_all(void **state)
{
	struct sched *s = new_sched(8, 0);
	struct sched_hostwait hw;
	struct sched_decision j;
	struct sched_stats st;
	int waits = 0, implied = 0;

	(void)state;
	assert_int_equal(sched_sync_all(s, &hw), 0);
	assert_int_equal(hw.n, 0);
	sub(s, "w1");
	sub(s, "w2");
	sub(s, "w3");
	assert_int_equal(sched_sync_all(s, &hw), 0);
	assert_int_equal(hw.n, 3);
	j = sub_w(s, "", SCHED_JOIN, 1);
	assert_int_equal(j.flags & SCHED_DEC_JOIN, SCHED_DEC_JOIN);
	assert_int_equal(j.nwait, 2);
	assert_int_equal(sched_sync_all(s, &hw), 0);
	for (int i = 0; i < hw.n; i++) {
		if (hw.ent[i].how == SCHED_HW_IMPLIED) {
			implied++;
		} else {
			waits++;
			assert_int_equal(hw.ent[i].stream, j.stream);
			assert_int_equal(hw.ent[i].seq, j.seq);
		}
	}
	assert_int_equal(waits, 1);
	assert_int_equal(implied, 2);
	st = stats(s);
	assert_true(st.host_idle >= 5 + 8);
	assert_int_equal(sched_complete_hostwait(s, &hw), 0);
	for (int t = 0; t < 8; t++)
		assert_int_equal(sched_load(s, t), 0);
	assert_int_equal(sched_sync_all(s, &hw), 0);
	assert_int_equal(hw.n, 0);
	/* Completed work is no longer waited for. */
	j = sub(s, "r1 r2 r3 w9");
	assert_int_equal(j.nwait, 0);
	assert_true(stats(s).deps_done >= 3);
	sched_free(s);
}

/* Completing a stream's end completes what it followed. */
static void test_complete_spreads(void **state)
{
	struct sched *s = new_sched(4, 0);
	struct sched_decision y;
	struct sched_hostwait hw;
	uint64_t id = 1;

	(void)state;
	sub(s, "w1");
	sub(s, "w2");
	y = sub(s, "r1 r2 w3");
	assert_int_equal(sched_complete(s, y.stream, y.seq), 0);
	assert_int_equal(sched_sync_all(s, &hw), 0);
	assert_int_equal(hw.n, 0);
	assert_int_equal(sched_sync_for_read(s, &id, 1, &hw), 0);
	assert_int_equal(hw.n, 0);
	/* Completing old work again, or twice, is harmless. */
	assert_int_equal(sched_complete(s, y.stream, 1), 0);
	assert_int_equal(sched_complete(s, y.stream, y.seq), 0);
	assert_int_equal(sched_check(s), 0);
	sched_free(s);
}

/*
 * One frame-parallel epoch as image_pipeline submits it: per frame an
 * input, four branches reading it, a join; then a full synchronization.
 * Writes where each operation went ('a' + stream) into out.
 */
static void frames_epoch(struct sched *s, char *out)
{
	struct sched_hostwait hw;
	char spec[64];
	int k = 0;

	for (int f = 0; f < 4; f++) {
		int in = 100 + 10 * f;

		snprintf(spec, sizeof(spec), "w%d", in);
		out[k++] = (char)('a' + sub(s, spec).stream);
		for (int b = 1; b <= 4; b++) {
			snprintf(spec, sizeof(spec), "r%d w%d", in, in + b);
			out[k++] = (char)('a' + sub(s, spec).stream);
		}
		snprintf(spec, sizeof(spec), "r%d r%d r%d r%d w%d", in + 1,
			 in + 2, in + 3, in + 4, in + 5);
		out[k++] = (char)('a' + sub(s, spec).stream);
	}
	out[k] = 0;
	assert_int_equal(sched_sync_all(s, &hw), 0);
	assert_int_equal(sched_complete_hostwait(s, &hw), 0);
}

/*
 * SCHED_LEVEL: after a full synchronization every stream is idle, and
 * placement does not depend on the stale finish times of the work before
 * it: each learned epoch lands exactly where the one before did, and one
 * epoch in line (the pace check's trial) leaves no trace in the epochs
 * after it.  Without it (the default) the stale finish times place the
 * frames on streams that alternate from one epoch to the next.
 */
static void test_placement_forgets_history(void **state)
{
	struct sched *s = new_sched(16, SCHED_LEVEL);
	struct sched *t = new_sched(16, SCHED_LEVEL);
	char first[32], a[32], b[32];
	int streams = 0;

	(void)state;
	frames_epoch(s, a);			/* learns the fork's records */
	frames_epoch(s, first);
	for (int k = 0; first[k]; k++)
		streams |= 1 << (first[k] - 'a');
	assert_int_equal(__builtin_popcount(streams), 16);
	for (int e = 0; e < 4; e++) {
		frames_epoch(s, a);
		assert_string_equal(a, first);
	}
	frames_epoch(t, b);
	frames_epoch(t, b);
	sched_set_narrow(t, 1);
	frames_epoch(t, b);
	assert_int_equal(strspn(b, (char[]){ b[0], 0 }), strlen(b));
	sched_set_narrow(t, 0);
	for (int e = 0; e < 3; e++) {
		frames_epoch(t, b);
		assert_string_equal(b, first);
	}
	sched_free(t);
	sched_free(s);
	s = new_sched(16, 0);
	frames_epoch(s, a);
	frames_epoch(s, a);
	frames_epoch(s, b);
	assert_string_not_equal(a, b);
	sched_free(s);
}

/* A lost record is never named again: the next wait records anew. */
static void test_event_lost(void **state)
{
	struct sched *s = new_sched(2, SCHED_EAGER_EVENTS);
	struct sched_decision a, b, c;

	(void)state;
	a = sub(s, "w1");
	assert_true(a.record_after >= 0);
	b = sub(s, "w2");
	assert_int_equal(b.stream, 1);
	sched_event_lost(s, a.record_after);
	sched_event_lost(s, -1);
	sched_event_lost(s, 1000);
	c = sub(s, "r1 r2 w3");
	for (int i = 0; i < c.nwait; i++)
		if (c.wait[i].stream == a.stream) {
			assert_int_equal(c.nrecord, 1);
			assert_int_equal(c.record[0].stream, a.stream);
		}
	assert_int_equal(sched_check(s), 0);
	sched_free(s);
}

/* Thousands of allocations come and go: the map grows and shrinks. */
static void test_many_allocations(void **state)
{
	struct sched *s = new_sched(4, 0);
	struct sched_access acc;
	struct sched_decision d;

	(void)state;
	for (uint64_t id = 1; id <= 20000; id++) {
		acc = (struct sched_access){
			.alloc_id = id,
			.mode = id % 3 ? SCHED_WRITE : SCHED_READ };
		assert_int_equal(sched_submit(s, &acc, 1, 0, &d), 0);
		assert_int_equal(d.flags, 0);
	}
	assert_int_equal(stats(s).allocs, 20000);
	assert_int_equal(sched_check(s), 0);
	for (uint64_t id = 1; id <= 20000; id += 2)
		assert_int_equal(sched_forget(s, id), 0);
	assert_int_equal(sched_forget(s, 1), -ENOENT);
	assert_int_equal(stats(s).allocs, 10000);
	assert_int_equal(sched_check(s), 0);
	for (uint64_t id = 2; id <= 20000; id += 2)
		assert_int_equal(sched_forget(s, id), 0);
	assert_int_equal(stats(s).allocs, 0);
	assert_int_equal(sched_check(s), 0);
	sched_free(s);
}

/*
 * Internal limits degrade an operation to a barrier and never fail it:
 * the allocation bound, then a failed growth of the map.
 */
static void test_degraded(void **state)
{
	struct sched *s = new_sched(4, 0);
	struct sched_decision d;
	struct sched_stats st;

	(void)state;
	sched_set_max_allocs(s, 2);
	assert_int_equal(sub(s, "w1").flags, 0);
	assert_int_equal(sub(s, "w2").flags, 0);
	d = sub(s, "w3");
	assert_int_equal(d.flags, SCHED_DEC_BARRIER | SCHED_DEC_DEGRADED);
	assert_int_equal(d.nwait, 1);	/* for stream 1's end */
	/* Known allocations still schedule normally (after the barrier). */
	d = sub(s, "r1 w2");
	assert_int_equal(d.flags, 0);
	assert_int_equal(sched_forget(s, 1), 0);
	assert_int_equal(sub(s, "w3").flags, 0);
	sched_set_max_allocs(s, 0);

	/* 128 states fill the initial table half way; the next one grows it. */
	for (uint64_t id = 1000; stats(s).allocs < 128; id++) {
		char spec[16];

		snprintf(spec, sizeof(spec), "w%llu", (unsigned long long)id);
		assert_int_equal(sub(s, spec).flags, 0);
	}
	sched_debug_fail_alloc(s, 1);
	d = sub(s, "w5000");
	assert_int_equal(d.flags, SCHED_DEC_BARRIER | SCHED_DEC_DEGRADED);
	d = sub(s, "w5000");
	assert_int_equal(d.flags, 0);
	st = stats(s);
	assert_int_equal(st.degraded, 2);
	assert_int_equal(st.barriers, 2);
	assert_int_equal(sched_check(s), 0);
	sched_free(s);

	/* sched_new() itself fails cleanly. */
	s = NULL;
	assert_int_equal(sched_new(SCHED_MAX_STREAMS, 0, &s), 0);
	assert_int_equal(sched_nstreams(s), SCHED_MAX_STREAMS);
	sched_free(s);
}

/* --- the simulated GPU ------------------------------------------------ */

#define SIM_MAX_OPS 400
#define SIM_MAX_ACC 6
#define SIM_MAX_SLOTS 40

struct sim_op {
	struct sched_access acc[SIM_MAX_ACC];
	int slot[SIM_MAX_ACC];	/* memory region of each access */
	int nacc;
	int barrier;		/* conflicts with everything */
	int join;		/* follows everything before it */
	int stream;
	uint64_t seq;
	double start, end;
	uint64_t vc[SCHED_MAX_STREAMS];	/* what it follows, per the simulator */
};

struct sim_ev {
	int recorded;
	double t;		/* when the record ran */
	uint64_t seq;		/* op of its stream it follows */
	uint64_t vc[SCHED_MAX_STREAMS];
};

struct sim {
	int n;
	uint64_t rng;
	double host;
	double free[SCHED_MAX_STREAMS];	/* when the stream's last item ends */
	uint64_t count[SCHED_MAX_STREAMS];	/* operations on each stream */
	uint64_t svc[SCHED_MAX_STREAMS][SCHED_MAX_STREAMS];
	uint64_t hostvc[SCHED_MAX_STREAMS];	/* what the host waited for */
	struct sim_ev ev[SCHED_MAX_STREAMS * E];
	int nop;
	struct sim_op op[SIM_MAX_OPS];
	int nslots;
	uint64_t read_pct;	/* of kernel accesses */
	uint64_t slot_id[SIM_MAX_SLOTS];	/* a region's allocation */
	uint64_t next_id;
	/* what happened, for the summary */
	uint64_t host_checks;
	uint64_t pairs;
};

static double dmax(double a, double b)
{
	return a > b ? a : b;
}

static void vc_merge(uint64_t *a, const uint64_t *b, int n)
{
	for (int k = 0; k < n; k++)
		if (b[k] > a[k])
			a[k] = b[k];
}

/* Items put on a stream after the host waited follow what it waited for. */
static void sim_prep(struct sim *m, int t)
{
	vc_merge(m->svc[t], m->hostvc, m->n);
}

static void sim_record(struct sim *m, int t, int slot, uint64_t seq)
{
	struct sim_ev *ev = &m->ev[slot];

	assert_int_equal(slot / E, t);
	assert_int_equal(seq, m->count[t]);
	sim_prep(m, t);
	m->free[t] = dmax(m->free[t], m->host);
	ev->recorded = 1;
	ev->t = m->free[t];
	ev->seq = m->count[t];
	memcpy(ev->vc, m->svc[t], sizeof(ev->vc));
}

static double sim_duration(struct sim *m)
{
	double d = 1 + (double)rnd_below(&m->rng, 100);

	if (rnd_below(&m->rng, 8) == 0)
		d *= 20;	/* a long kernel now and then */
	return d;
}

/* Carry out one decision as the wrapper would. */
static void sim_issue(struct sim *m, struct sim_op *o,
		      const struct sched_decision *d)
{
	int t = d->stream;

	assert_true(t >= 0 && t < m->n);
	m->host += (double)rnd_below(&m->rng, 3);
	for (int i = 0; i < d->nrecord; i++) {
		assert_true(d->record[i].stream != t);
		sim_record(m, d->record[i].stream, d->record[i].event,
			   d->record[i].seq);
	}
	sim_prep(m, t);
	for (int i = 0; i < d->nwait; i++) {
		const struct sim_ev *ev = &m->ev[d->wait[i].event];

		assert_int_equal(d->wait[i].event / E, d->wait[i].stream);
		assert_true(d->wait[i].stream != t);
		/* The slot holds exactly the record the decision means. */
		assert_true(ev->recorded);
		assert_int_equal(ev->seq, d->wait[i].seq);
		m->free[t] = dmax(m->free[t], ev->t);
		vc_merge(m->svc[t], ev->vc, m->n);
	}
	o->start = dmax(m->free[t], m->host);
	o->end = o->start + sim_duration(m);
	m->free[t] = o->end;
	m->count[t]++;
	assert_int_equal(m->count[t], d->seq);
	m->svc[t][t] = m->count[t];
	o->stream = t;
	o->seq = d->seq;
	memcpy(o->vc, m->svc[t], sizeof(o->vc));
	if (d->record_after >= 0)
		sim_record(m, t, d->record_after, d->seq);
}

/* The host waits for what a hostwait names, then reports it. */
static void sim_host_wait(struct sim *m, struct sched *s,
			  const struct sched_hostwait *hw)
{
	for (int i = 0; i < hw->n; i++) {
		const struct sched_hostwait_ent *e = &hw->ent[i];
		const struct sim_ev *ev;

		assert_true(e->stream >= 0 && e->stream < m->n);
		switch (e->how) {
		case SCHED_HW_STREAM:
			m->host = dmax(m->host, m->free[e->stream]);
			vc_merge(m->hostvc, m->svc[e->stream], m->n);
			break;
		case SCHED_HW_EVENT:
			ev = &m->ev[e->event];
			assert_int_equal(e->event / E, e->stream);
			assert_true(ev->recorded);
			assert_true(ev->seq >= e->seq);
			m->host = dmax(m->host, ev->t);
			vc_merge(m->hostvc, ev->vc, m->n);
			break;
		case SCHED_HW_IMPLIED:
			break;
		default:
			fail();
		}
	}
	/* Every entry, implied ones included, is now complete. */
	for (int i = 0; i < hw->n; i++)
		assert_true(m->hostvc[hw->ent[i].stream] >= hw->ent[i].seq);
	assert_int_equal(sched_complete_hostwait(s, hw), 0);
}

/*
 * The host learns that an operation finished (a query of a record after it,
 * say): the latest finished one of a random stream, often not its last.
 */
static void sim_poll_op(struct sim *m, struct sched *s)
{
	int t = (int)rnd_below(&m->rng, (uint64_t)m->n);
	const struct sim_op *best = NULL;

	for (int i = 0; i < m->nop; i++) {
		const struct sim_op *o = &m->op[i];

		if (o->stream == t && o->end <= m->host &&
		    (!best || o->seq > best->seq))
			best = o;
	}
	if (!best)
		return;
	vc_merge(m->hostvc, best->vc, m->n);
	assert_int_equal(sched_complete(s, t, best->seq), 0);
}

static int op_touches(const struct sim_op *o, int slot, int *writes)
{
	int hit = 0;

	*writes = 0;
	for (int i = 0; i < o->nacc; i++) {
		if (o->slot[i] != slot)
			continue;
		hit = 1;
		if (o->acc[i].mode != SCHED_READ)
			*writes = 1;
	}
	return hit;
}

static int ops_conflict(const struct sim_op *a, const struct sim_op *b)
{
	if (a->barrier || b->barrier || b->join)
		return 1;
	for (int i = 0; i < a->nacc; i++) {
		int bw;

		if (op_touches(b, a->slot[i], &bw) &&
		    (bw || a->acc[i].mode != SCHED_READ))
			return 1;
	}
	return 0;
}

/* Earlier op a must be complete before later op b starts. */
static void check_order(struct sim *m, const struct sim_op *a,
			const struct sim_op *b)
{
	m->pairs++;
	if (b->vc[a->stream] < a->seq || a->end > b->start) {
		print_message("  order broken: (%d,%llu) [%g,%g] then "
			      "(%d,%llu) [%g,%g], seed %#llx\n", a->stream,
			      (unsigned long long)a->seq, a->start, a->end,
			      b->stream, (unsigned long long)b->seq, b->start,
			      b->end, (unsigned long long)seed);
		fail();
	}
}

/* After a host wait: every earlier op writing `slot` (or all) is done. */
static void check_host(struct sim *m, int slot, int writes_only)
{
	for (int i = 0; i < m->nop; i++) {
		const struct sim_op *o = &m->op[i];
		int w;

		if (slot >= 0 && !o->barrier &&
		    !(op_touches(o, slot, &w) && (w || !writes_only)))
			continue;
		m->host_checks++;
		assert_true(m->hostvc[o->stream] >= o->seq);
		assert_true(o->end <= m->host);
	}
}

static void sim_random_access(struct sim *m, struct sim_op *o, int mode)
{
	int slot = (int)rnd_below(&m->rng, (uint64_t)m->nslots);

	if (mode < 0) {
		uint64_t r = rnd_below(&m->rng, 100);

		mode = r < m->read_pct ? SCHED_READ :
		       r < m->read_pct + (100 - m->read_pct) / 3 ?
		       SCHED_WRITE : SCHED_RW;
	}
	o->slot[o->nacc] = slot;
	o->acc[o->nacc].alloc_id = m->slot_id[slot];
	o->acc[o->nacc].mode = (enum sched_mode)mode;
	o->nacc++;
}

/* One random program; accumulates the scheduler's statistics into tot. */
static void sim_program(int n, uint64_t pseed, struct sched_stats *tot)
{
	struct sim *m = calloc(1, sizeof(*m));
	struct sched *s = NULL;
	struct sched_stats st;
	unsigned flags;
	int nops;

	assert_non_null(m);
	m->n = n;
	m->rng = pseed | 1;
	m->nslots = 2 + (int)rnd_below(&m->rng, SIM_MAX_SLOTS - 1);
	for (int i = 0; i < m->nslots; i++)
		m->slot_id[i] = (uint64_t)i + 1;
	m->next_id = (uint64_t)m->nslots + 1;
	/* Some programs mostly read: reader sets grow and collapse. */
	m->read_pct = rnd_below(&m->rng, 3) == 0 ? 90 : 40;
	nops = 100 + (int)rnd_below(&m->rng, SIM_MAX_OPS - 100);
	flags = rnd_below(&m->rng, 4) == 0 ? SCHED_EAGER_EVENTS : 0;
	/* Placement knobs change where work goes, never what it waits for. */
	if (rnd_below(&m->rng, 2))
		flags |= SCHED_KEEP_CHAIN;
	if (rnd_below(&m->rng, 4) == 0)
		flags |= SCHED_LEVEL;
	assert_int_equal(sched_new(n, flags, &s), 0);
	if (rnd_below(&m->rng, 8) == 0)
		sched_set_max_allocs(s, (uint32_t)(1 + m->nslots / 2));

	while (m->nop < nops) {
		uint64_t r = rnd_below(&m->rng, 100);
		struct sched_hostwait hw;

		if (r < 4) {		/* host synchronization of everything */
			assert_int_equal(sched_sync_all(s, &hw), 0);
			sim_host_wait(m, s, &hw);
			check_host(m, -1, 0);
			continue;
		}
		if (r < 9) {		/* synchronous read back */
			int slot = (int)rnd_below(&m->rng, (uint64_t)m->nslots);

			assert_int_equal(sched_sync_for_read(s,
					 &m->slot_id[slot], 1, &hw), 0);
			sim_host_wait(m, s, &hw);
			check_host(m, slot, 1);
			continue;
		}
		if (r < 11) {		/* free, and a new allocation there */
			int slot = (int)rnd_below(&m->rng, (uint64_t)m->nslots);
			struct sched_access a = { .alloc_id = m->slot_id[slot],
						  .mode = SCHED_WRITE };

			assert_int_equal(sched_sync_for(s, &a, 1, &hw), 0);
			sim_host_wait(m, s, &hw);
			check_host(m, slot, 0);
			sched_forget(s, m->slot_id[slot]);
			m->slot_id[slot] = m->next_id++;
			continue;
		}
		if (r == 14) {		/* the driver side's keeping-up probe */
			sched_set_kept_up(s, (int)rnd_below(&m->rng, 2));
			continue;
		}
		if (r < 15) {		/* the host polls a stream */
			int t = (int)rnd_below(&m->rng, (uint64_t)n);

			if (m->free[t] <= m->host) {
				vc_merge(m->hostvc, m->svc[t], n);
				assert_int_equal(sched_complete(s, t,
							m->count[t]), 0);
			}
			continue;
		}
		if (r < 19) {		/* ... or learns that some op is done */
			sim_poll_op(m, s);
			continue;
		}
		if (r == 19)
			sched_debug_fail_alloc(s, 1);

		struct sim_op *o = &m->op[m->nop];
		struct sched_decision d;
		unsigned sflags = 0;
		int na;

		memset(o, 0, sizeof(*o));
		if (r < 22) {
			sflags = SCHED_BARRIER;
			na = (int)rnd_below(&m->rng, 3);
			for (int i = 0; i < na; i++)
				sim_random_access(m, o, -1);
		} else if (r < 24) {
			sflags = SCHED_JOIN;
		} else if (r < 34) {	/* a copy: source and destination */
			sim_random_access(m, o, SCHED_READ);
			sim_random_access(m, o, SCHED_WRITE);
		} else if (r < 38) {	/* a memset */
			sim_random_access(m, o, SCHED_WRITE);
		} else {		/* a kernel */
			na = (int)rnd_below(&m->rng, 5);
			for (int i = 0; i < na; i++)
				sim_random_access(m, o, -1);
		}
		assert_int_equal(sched_submit_weighted(s, o->acc, o->nacc,
				 sflags, 1 + (uint32_t)rnd_below(&m->rng, 4),
				 &d), 0);
		o->barrier = !!(d.flags & SCHED_DEC_BARRIER);
		o->join = !!(d.flags & SCHED_DEC_JOIN);
		assert_int_equal(!!(sflags & SCHED_BARRIER) ||
				 !!(d.flags & SCHED_DEC_DEGRADED), o->barrier);
		sim_issue(m, o, &d);
		m->nop++;
		if ((m->nop & 15) == 0)
			assert_int_equal(sched_check(s), 0);
	}
	assert_int_equal(sched_check(s), 0);

	for (int b = 0; b < m->nop; b++)
		for (int a = 0; a < b; a++)
			if (ops_conflict(&m->op[a], &m->op[b]))
				check_order(m, &m->op[a], &m->op[b]);

	/* In the end, a full synchronization leaves nothing outstanding. */
	{
		struct sched_hostwait hw;

		assert_int_equal(sched_sync_all(s, &hw), 0);
		sim_host_wait(m, s, &hw);
		check_host(m, -1, 0);
		assert_int_equal(sched_sync_all(s, &hw), 0);
		assert_int_equal(hw.n, 0);
	}

	sched_get_stats(s, &st);
	tot->ops += st.ops;
	tot->barriers += st.barriers;
	tot->degraded += st.degraded;
	tot->deps += st.deps;
	tot->deps_same += st.deps_same;
	tot->deps_done += st.deps_done;
	tot->waits_issued += st.waits_issued;
	tot->waits_pruned += st.waits_pruned;
	tot->over_waits += st.over_waits;
	tot->events_after += st.events_after;
	tot->events_lazy += st.events_lazy;
	tot->reader_collapses += st.reader_collapses;
	tot->host_waits += st.host_waits;
	tot->host_implied += st.host_implied;
	sched_free(s);
	free(m);
}

/*
 * Random programs, each checked pair by pair.  Also: pruning happens (the
 * random DAGs have plenty of transitive dependencies), and with one stream
 * no wait or event is ever asked for.
 */
static void test_random_programs(void **state)
{
	static const int ns[] = { 1, 2, 4, 8, 16 };

	(void)state;
	for (size_t k = 0; k < sizeof(ns) / sizeof(ns[0]); k++) {
		struct sched_stats tot = { 0 };
		uint64_t rs = seed ^ (uint64_t)ns[k] * 0x9e3779b97f4a7c15ull;

		for (int p = 0; p < programs; p++)
			sim_program(ns[k], rnd(&rs), &tot);
		print_message("  N=%-2d %llu ops: deps %llu (same stream %llu, "
			      "done %llu), waits %llu issued / %llu pruned "
			      "(%llu late), events %llu after / %llu lazy, "
			      "barriers %llu (%llu degraded), host waits %llu "
			      "/ %llu implied, %llu reader collapses\n", ns[k],
			      (unsigned long long)tot.ops,
			      (unsigned long long)tot.deps,
			      (unsigned long long)tot.deps_same,
			      (unsigned long long)tot.deps_done,
			      (unsigned long long)tot.waits_issued,
			      (unsigned long long)tot.waits_pruned,
			      (unsigned long long)tot.over_waits,
			      (unsigned long long)tot.events_after,
			      (unsigned long long)tot.events_lazy,
			      (unsigned long long)tot.barriers,
			      (unsigned long long)tot.degraded,
			      (unsigned long long)tot.host_waits,
			      (unsigned long long)tot.host_implied,
			      (unsigned long long)tot.reader_collapses);
		assert_true(tot.degraded > 0);
		if (ns[k] == 1) {
			assert_int_equal(tot.waits_issued, 0);
			assert_int_equal(tot.waits_pruned, 0);
			assert_int_equal(tot.events_after + tot.events_lazy, 0);
		} else {
			assert_true(tot.waits_issued > 0);
			assert_true(tot.waits_pruned > 0);
		}
	}
}

/*
 * A program with pruning opportunities (layers that each read the two
 * previous layers' outputs, spread by independent side work) prunes, and
 * the random check holds for it too.
 */
static void test_pruning_counted(void **state)
{
	struct sched *s = new_sched(4, 0);
	struct sched_stats st;

	(void)state;
	for (int rep = 0; rep < 3; rep++) {
		sub(s, "w1");
		sub(s, "w2");
		sub(s, "r1 r2 w3");
		sub(s, "r2 r3 w4");
		sub(s, "w5");
		sub(s, "r3 r4 r5 w6");
		sub(s, "r1 r6 w7");
	}
	st = stats(s);
	assert_true(st.waits_pruned > 0);
	assert_true(st.waits_issued > 0);
	print_message("  waits %llu issued, %llu pruned\n",
		      (unsigned long long)st.waits_issued,
		      (unsigned long long)st.waits_pruned);
	sched_free(s);
}

int main(void)
{
	const char *env = getenv("KMUX_TEST_SEED");
	const char *np = getenv("KMUX_TEST_PROGRAMS");
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_invalid_arguments),
		cmocka_unit_test(test_ranges_conflict),
		cmocka_unit_test(test_ranges_whole_and_limits),
		cmocka_unit_test(test_independent_spread),
		cmocka_unit_test(test_chain),
		cmocka_unit_test(test_kept_up),
		cmocka_unit_test(test_narrow),
		cmocka_unit_test(test_diamond_eager),
		cmocka_unit_test(test_diamond_learns),
		cmocka_unit_test(test_hot_mark_decays),
		cmocka_unit_test(test_narrow_keeps_hot_marks),
		cmocka_unit_test(test_hot_marks_survive_syncs),
		cmocka_unit_test(test_hot_mark_decays_across_syncs),
		cmocka_unit_test(test_hot_use_stays_in_its_epoch),
		cmocka_unit_test(test_keep_chain_join),
		cmocka_unit_test(test_keep_chain_mha),
		cmocka_unit_test(test_inception_steady),
		cmocka_unit_test(test_fork_join_prunes),
		cmocka_unit_test(test_wait_order_prunes),
		cmocka_unit_test(test_readers_then_writer),
		cmocka_unit_test(test_reader_collapse),
		cmocka_unit_test(test_barrier),
		cmocka_unit_test(test_sync_for_read),
		cmocka_unit_test(test_host_read_learns),
		cmocka_unit_test(test_sync_for_read_event),
		cmocka_unit_test(test_sync_all),
		cmocka_unit_test(test_complete_spreads),
		cmocka_unit_test(test_placement_forgets_history),
		cmocka_unit_test(test_event_lost),
		cmocka_unit_test(test_many_allocations),
		cmocka_unit_test(test_degraded),
		cmocka_unit_test(test_pruning_counted),
		cmocka_unit_test(test_random_programs),
	};

	if (env)
		seed = strtoull(env, NULL, 0) | 1;
	if (np && atoi(np) > 0)
		programs = atoi(np);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
