/*
 * test-streams.c - unit tests of the stream scheduler's driver-side pieces
 * that need no driver: how KMUX_STREAMS is read against
 * CUDA_DEVICE_MAX_CONNECTIONS (streams_parse_count), and the rename that
 * lets a stream-ordered allocation be submitted before its address is
 * known (sched_rename): users of the renamed allocation must wait for the
 * allocation, the placeholder must be gone, failures must leave the state
 * as it was.
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <string.h>

#include <cmocka.h>

#include "sched.h"
#include "streams.h"

static void test_parse_count(void **state)
{
	const char *why = NULL;
	int n = 0, clamped = -1;

	(void)state;
	assert_int_equal(streams_parse_count("4", NULL, &n, &clamped, &why), 0);
	assert_int_equal(n, 4);
	assert_int_equal(clamped, 0);
	assert_int_equal(streams_parse_count("1", "", &n, &clamped, &why), 0);
	assert_int_equal(n, 1);
	/* Bounded by the 8 default hardware queues ... */
	assert_int_equal(streams_parse_count("16", NULL, &n, &clamped, &why),
			 0);
	assert_int_equal(n, 8);
	assert_int_equal(clamped, 1);
	/* ... or by CUDA_DEVICE_MAX_CONNECTIONS, either way. */
	assert_int_equal(streams_parse_count("16", "32", &n, &clamped, &why),
			 0);
	assert_int_equal(n, 16);
	assert_int_equal(clamped, 0);
	assert_int_equal(streams_parse_count("16", "4", &n, &clamped, &why), 0);
	assert_int_equal(n, 4);
	assert_int_equal(clamped, 1);
	assert_int_equal(streams_parse_count("64", "1000", &n, &clamped, &why),
			 0);
	assert_int_equal(n, 64);
	/* A CUDA_DEVICE_MAX_CONNECTIONS that is no number: the default. */
	assert_int_equal(streams_parse_count("12", "many", &n, &clamped, &why),
			 0);
	assert_int_equal(n, 8);
}

static void test_parse_count_bad(void **state)
{
	static const char *const bad[] = {
		"0", "-1", "65", "x", "4x", "", " 4", "+4", "1e3",
		"99999999999999999999", NULL,
	};
	const char *why;
	int n = 7, clamped;

	(void)state;
	for (int i = 0; bad[i]; i++) {
		why = NULL;
		assert_int_equal(streams_parse_count(bad[i], NULL, &n, &clamped,
						     &why), -EINVAL);
		assert_non_null(why);
		assert_int_equal(n, 7);
	}
	assert_int_equal(streams_parse_count(NULL, NULL, &n, &clamped, &why),
			 -EINVAL);
}

static struct sched_decision submit(struct sched *s, uint64_t id,
				    enum sched_mode mode)
{
	struct sched_access a = { .alloc_id = id, .mode = mode };
	struct sched_decision d;

	assert_int_equal(sched_submit(s, &a, 1, 0, &d), 0);
	return d;
}

/*
 * The allocation goes beside a busy stream; a user of both the allocation
 * and the busy stream's allocation depends on both, so whichever stream it
 * lands on it must wait for the other.  Without the rename, the new id
 * would have no writer and a placement beside the busy one would wait for
 * nothing.
 */
static void test_rename_orders_users(void **state)
{
	uint64_t ph = 1ull << 62, id = 42;
	struct sched_access both[2] = {
		{ .alloc_id = id, .mode = SCHED_RW },
		{ .alloc_id = 7, .mode = SCHED_RW },
	};
	struct sched_decision alloc, busy, user;
	struct sched *s;

	(void)state;
	assert_int_equal(sched_new(2, 0, &s), 0);
	busy = submit(s, 7, SCHED_RW);
	alloc = submit(s, ph, SCHED_WRITE);
	assert_int_not_equal(alloc.stream, busy.stream);
	assert_int_equal(sched_rename(s, ph, id), 0);
	assert_int_equal(sched_submit(s, both, 2, 0, &user), 0);
	assert_int_equal(user.nwait, 1);
	if (user.stream == busy.stream) {
		assert_int_equal(user.wait[0].stream, alloc.stream);
		assert_true(user.wait[0].seq >= alloc.seq);
	} else {
		assert_int_equal(user.stream, alloc.stream);
		assert_int_equal(user.wait[0].stream, busy.stream);
	}
	/* The placeholder is gone, the id has the state. */
	assert_int_equal(sched_forget(s, ph), -ENOENT);
	assert_int_equal(sched_check(s), 0);
	assert_int_equal(sched_forget(s, id), 0);
	sched_free(s);
}

static void test_rename_errors(void **state)
{
	struct sched *s;

	(void)state;
	assert_int_equal(sched_new(4, 0, &s), 0);
	assert_int_equal(sched_rename(s, 5, 6), -ENOENT);
	assert_int_equal(sched_rename(s, 0, 6), -EINVAL);
	assert_int_equal(sched_rename(NULL, 5, 6), -EINVAL);
	submit(s, 5, SCHED_WRITE);
	submit(s, 6, SCHED_WRITE);
	assert_int_equal(sched_rename(s, 5, 6), -EEXIST);
	assert_int_equal(sched_rename(s, 5, 5), 0);
	/* Out of memory while making room: nothing changes. */
	for (uint64_t i = 0; i < 126; i++)
		submit(s, 1000 + i, SCHED_WRITE);
	sched_debug_fail_alloc(s, 1);
	assert_int_equal(sched_rename(s, 5, 7), -ENOMEM);
	assert_int_equal(sched_forget(s, 7), -ENOENT);
	assert_int_equal(sched_check(s), 0);
	assert_int_equal(sched_rename(s, 5, 7), 0);
	assert_int_equal(sched_forget(s, 5), -ENOENT);
	assert_int_equal(sched_check(s), 0);
	/* The allocation bound counts the renamed state once. */
	sched_set_max_allocs(s, 1);
	assert_int_equal(sched_rename(s, 7, 8), -ENOSPC);
	sched_free(s);
}

/* Many renames keep the map consistent (backward-shift deletion). */
static void test_rename_many(void **state)
{
	struct sched *s;

	(void)state;
	assert_int_equal(sched_new(3, 0, &s), 0);
	for (uint64_t i = 1; i <= 3000; i++) {
		submit(s, (1ull << 62) + i, SCHED_WRITE);
		assert_int_equal(sched_rename(s, (1ull << 62) + i, i), 0);
		if (i % 3 == 0)
			assert_int_equal(sched_forget(s, i - 1), 0);
	}
	assert_int_equal(sched_check(s), 0);
	sched_free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_count),
		cmocka_unit_test(test_parse_count_bad),
		cmocka_unit_test(test_rename_orders_users),
		cmocka_unit_test(test_rename_errors),
		cmocka_unit_test(test_rename_many),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
