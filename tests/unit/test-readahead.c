/*
 * test-readahead.c - unit tests of the read-ahead table (readahead.c):
 * a range read back is due after its next write, queued at the host's next
 * wait, and serves reads inside it until the next write; writes beside it leave it current; the epoch
 * makes every copy stale; writes per read decide which write is followed;
 * unused read-aheads give the slot up; slots are replaced least recently
 * used, forgotten on free, and keep the span of two ranges.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>

#include <cmocka.h>

#include "readahead.h"

#define BASE 0x7d0000000000ull

/* A write, then the host's next wait: the read-ahead due is queued. */
static int wq(struct ra_table *t, uint64_t id, uint64_t off, uint64_t len)
{
	int i = ra_written(t, id, off, len);

	if (i >= 0 && ra_due(t, i))
		ra_queued(t, i);
	return i;
}

static void test_write_then_read(void **state)
{
	struct ra_table t = { 0 };
	int i;

	(void)state;
	/* Nothing known: no read-ahead, no hit. */
	assert_int_equal(wq(&t, 5, 0, 0), -1);
	assert_int_equal(ra_lookup(&t, 5, 0, 4), -1);
	i = ra_learn(&t, 5, BASE, 16, 8);
	assert_true(i >= 0);
	assert_int_equal(t.slot[i].base, BASE);
	/* Learned, not yet written since: nothing to serve from. */
	assert_int_equal(ra_lookup(&t, 5, 16, 8), -1);
	assert_int_equal(wq(&t, 5, 0, 0), i);
	assert_int_equal(t.slot[i].state, RA_QUEUED);
	assert_int_equal(ra_lookup(&t, 5, 16, 8), i);
	assert_int_equal(ra_lookup(&t, 5, 20, 4), i);	/* inside */
	assert_int_equal(ra_lookup(&t, 5, 12, 8), -1);	/* starts before */
	assert_int_equal(ra_lookup(&t, 5, 20, 8), -1);	/* ends after */
	assert_int_equal(ra_lookup(&t, 6, 16, 8), -1);	/* another buffer */
	assert_int_equal(ra_lookup(&t, 5, 16, 0), -1);
	ra_served(&t, i);
	/* A second read with no write between is served again. */
	assert_int_equal(ra_lookup(&t, 5, 16, 8), i);
	assert_int_equal(t.queued, 1);
	assert_int_equal(t.served, 1);
}

static void test_write_beside(void **state)
{
	struct ra_table t = { 0 };
	int i;

	(void)state;
	i = ra_learn(&t, 5, BASE, 64, 16);
	assert_int_equal(wq(&t, 5, 0, 0), i);
	/* Bytes [0, 64) and [80, 96): the copy of [64, 80) stays current. */
	assert_int_equal(wq(&t, 5, 0, 64), -1);
	assert_int_equal(wq(&t, 5, 80, 16), -1);
	assert_int_equal(ra_lookup(&t, 5, 64, 16), i);
	/* Overlapping by one byte at either end: a new copy. */
	assert_int_equal(wq(&t, 5, 79, 8), i);
	assert_int_equal(wq(&t, 5, 0, 65), i);
}

static void test_epoch(void **state)
{
	struct ra_table t = { 0 };
	uint64_t gen;
	int i;

	(void)state;
	i = ra_learn(&t, 5, BASE, 0, 4);
	assert_int_equal(wq(&t, 5, 0, 0), i);
	gen = t.slot[i].gen;
	assert_true(ra_still(&t, i, gen));
	/* A barrier, a bridged or passed-through operation. */
	ra_invalidate(&t);
	assert_int_equal(ra_lookup(&t, 5, 0, 4), -1);
	assert_false(ra_still(&t, i, gen));
	/* The next write queues a copy that is current again. */
	assert_int_equal(wq(&t, 5, 0, 0), i);
	assert_int_equal(ra_lookup(&t, 5, 0, 4), i);
	/* A newer copy replaced the one a waiting reader found. */
	assert_false(ra_still(&t, i, gen));
	/* A miss on a stale copy is counted. */
	ra_invalidate(&t);
	ra_learn(&t, 5, BASE, 0, 4);
	assert_int_equal(t.stale, 1);
}

/* Three writes per read: only the third is followed by a copy. */
static void test_writes_per_read(void **state)
{
	struct ra_table t = { 0 };
	int i, queued;

	(void)state;
	i = ra_learn(&t, 5, BASE, 0, 4);
	/* The first round: one write per read is assumed. */
	assert_int_equal(wq(&t, 5, 0, 0), i);
	assert_int_equal(wq(&t, 5, 0, 0), i);
	assert_int_equal(wq(&t, 5, 0, 0), i);
	assert_int_equal(ra_lookup(&t, 5, 0, 4), i);
	ra_served(&t, i);
	assert_int_equal(t.slot[i].w_per_read, 3);
	for (int round = 0; round < 5; round++) {
		queued = 0;
		for (int w = 0; w < 3; w++) {
			int q = wq(&t, 5, 0, 0);

			/* The first two make the copy stale and queue none. */
			if (w < 2) {
				assert_int_equal(q, -1);
				assert_int_equal(ra_lookup(&t, 5, 0, 4), -1);
			}
			queued += q >= 0;
		}
		assert_int_equal(queued, 1);
		assert_int_equal(ra_lookup(&t, 5, 0, 4), i);
		ra_served(&t, i);
	}
	assert_int_equal(t.dropped, 0);
	/* A read that missed learns the count too. */
	wq(&t, 5, 0, 0);
	ra_learn(&t, 5, BASE, 0, 4);
	assert_int_equal(t.slot[i].w_per_read, 1);
}

static void test_unused_given_up(void **state)
{
	struct ra_table t = { 0 };
	int i;

	(void)state;
	i = ra_learn(&t, 5, BASE, 0, 4);
	/* The host stopped reading: RA_UNUSED_MAX copies, then none. */
	for (int k = 0; k < RA_UNUSED_MAX; k++)
		assert_int_equal(wq(&t, 5, 0, 0), i);
	assert_int_equal(wq(&t, 5, 0, 0), -1);
	assert_int_equal(t.dropped, 1);
	assert_int_equal(t.slot[i].alloc_id, 0);
	assert_int_equal(wq(&t, 5, 0, 0), -1);
	/* A copy that was read is not unused. */
	i = ra_learn(&t, 7, BASE, 0, 4);
	for (int k = 0; k < 3 * RA_UNUSED_MAX; k++) {
		assert_int_equal(wq(&t, 7, 0, 0), i);
		ra_served(&t, i);
	}
	assert_int_equal(t.dropped, 1);
	/* A failed queue leaves the slot learned, not current. */
	assert_int_equal(ra_written(&t, 7, 0, 0), i);
	ra_queue_failed(&t, i);
	assert_false(ra_due(&t, i));
	assert_int_equal(ra_lookup(&t, 7, 0, 4), -1);
	assert_int_equal(t.slot[i].state, RA_LEARNED);
}

static void test_slots(void **state)
{
	struct ra_table t = { 0 };
	void *shadow = &t;
	int i, j;

	(void)state;
	assert_int_equal(ra_learn(&t, 5, BASE, 0, 0), -1);
	assert_int_equal(ra_learn(&t, 5, BASE, 0, RA_MAX_BYTES + 1), -1);
	assert_int_equal(ra_learn(&t, 0, BASE, 0, 4), -1);
	for (uint64_t id = 1; id <= RA_SLOTS; id++)
		assert_true(ra_learn(&t, id, BASE + id * 4096, 0, 4) >= 0);
	/* Used again: slot of id 1 is now the most recent. */
	i = ra_learn(&t, 1, BASE + 4096, 0, 4);
	t.slot[i].shadow = shadow;
	j = ra_learn(&t, 2, BASE + 8192, 0, 4);
	/* Full: a new buffer takes the least recently used (id 3). */
	i = ra_learn(&t, 100, BASE, 0, 4);
	assert_int_equal(wq(&t, 3, 0, 0), -1);
	assert_int_equal(t.slot[i].alloc_id, 100);
	assert_int_equal(t.learned, RA_SLOTS + 1);
	assert_int_not_equal(i, j);
	/* Forgotten on free; the caller's shadow stays with the slot. */
	i = ra_learn(&t, 1, BASE + 4096, 0, 4);
	assert_ptr_equal(t.slot[i].shadow, shadow);
	ra_forget(&t, 1);
	assert_int_equal(t.slot[i].alloc_id, 0);
	assert_ptr_equal(t.slot[i].shadow, shadow);
	assert_int_equal(wq(&t, 1, 0, 0), -1);
	ra_forget(&t, 12345);	/* unknown: nothing */
	/* A slot whose copy is running is not taken for another buffer. */
	for (int k = 0; k < RA_SLOTS; k++) {
		t.slot[k].alloc_id = 200 + k;
		t.slot[k].copying = k != 7;
	}
	i = ra_learn(&t, 300, BASE, 0, 4);
	assert_int_equal(i, 7);
	t.slot[7].copying = 1;
	assert_int_equal(ra_learn(&t, 301, BASE, 0, 4), -1);
	/* A forgotten slot keeps the flag: the caller still owns the copy. */
	ra_forget(&t, 300);
	assert_int_equal(t.slot[7].copying, 1);
}

static void test_span(void **state)
{
	struct ra_table t = { 0 };
	int i;

	(void)state;
	/* The whole buffer and a word inside it: one copy serves both. */
	i = ra_learn(&t, 5, BASE, 0, 16);
	assert_int_equal(ra_learn(&t, 5, BASE, 8, 4), i);
	assert_int_equal(t.slot[i].off, 0);
	assert_int_equal(t.slot[i].bytes, 16);
	assert_int_equal(ra_learn(&t, 5, BASE, 32, 8), i);
	assert_int_equal(t.slot[i].bytes, 40);
	wq(&t, 5, 0, 0);
	assert_int_equal(ra_lookup(&t, 5, 0, 16), i);
	assert_int_equal(ra_lookup(&t, 5, 32, 8), i);
	/* Too far apart for one copy: the newest range alone. */
	assert_int_equal(ra_learn(&t, 5, BASE, RA_MAX_BYTES, 8), i);
	assert_int_equal(t.slot[i].off, RA_MAX_BYTES);
	assert_int_equal(t.slot[i].bytes, 8);
}

/* Due at the write, queued at the wait; an epoch between drops it. */
static void test_due(void **state)
{
	struct ra_table t = { 0 };
	int i;

	(void)state;
	i = ra_learn(&t, 5, BASE, 0, 4);
	assert_int_equal(ra_written(&t, 5, 0, 0), i);
	assert_int_equal(t.slot[i].state, RA_PENDING);
	/* Not queued yet: nothing to serve from. */
	assert_int_equal(ra_lookup(&t, 5, 0, 4), -1);
	assert_true(ra_due(&t, i));
	ra_queued(&t, i);
	assert_false(ra_due(&t, i));
	assert_int_equal(ra_lookup(&t, 5, 0, 4), i);
	ra_served(&t, i);
	/* Written again, then something unseen ran before the wait. */
	assert_int_equal(ra_written(&t, 5, 0, 0), i);
	ra_invalidate(&t);
	assert_false(ra_due(&t, i));
	assert_int_equal(t.slot[i].state, RA_LEARNED);
	assert_int_equal(ra_lookup(&t, 5, 0, 4), -1);
	/* Writes that were never queued are not unused read-aheads. */
	for (int k = 0; k < 3 * RA_UNUSED_MAX; k++)
		assert_int_equal(ra_written(&t, 5, 0, 0), i);
	assert_int_equal(t.dropped, 0);
	assert_int_equal(t.queued, 1);
	/* Other slots' states are not due. */
	assert_false(ra_due(&t, (i + 1) % RA_SLOTS));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_write_then_read),
		cmocka_unit_test(test_write_beside),
		cmocka_unit_test(test_epoch),
		cmocka_unit_test(test_writes_per_read),
		cmocka_unit_test(test_unused_given_up),
		cmocka_unit_test(test_slots),
		cmocka_unit_test(test_span),
		cmocka_unit_test(test_due),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
