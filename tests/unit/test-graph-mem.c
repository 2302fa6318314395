/*
 * test-graph-mem.c - unit tests of graph-mem.c: the bytes a graph launch
 * reserves, the allocations it leaves live, and what its free nodes, a
 * later free, auto-free and a destroyed graph give back.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>

#include <cmocka.h>

#include "graph-mem.h"

#define MIB (1ULL << 20)

/* A launch of x as the wrappers make it: need, then done; give_back. */
static uint64_t launch(uint64_t x, struct gmem_change *c)
{
	uint64_t need = 0;

	assert_true(gmem_launch_need(x, &need));
	assert_int_equal(gmem_launch_done(x, need, c), 0);
	return c->give_back;
}

static void test_no_nodes(void **state)
{
	uint64_t need = 7;

	(void)state;
	assert_int_equal(gmem_exec_add(0x100, NULL, 0, NULL, 0, false), 0);
	assert_false(gmem_any());
	assert_false(gmem_launch_need(0x100, &need));
	assert_false(gmem_free(0x1000, &need));
}

static void test_own_free(void **state)
{
	const struct gmem_node a[] = { { 0xa000, 32 * MIB } };
	const uint64_t f[] = { 0xa000 };
	struct gmem_change c;
	uint64_t need;

	(void)state;
	assert_int_equal(gmem_exec_add(0x1, a, 1, f, 1, false), 0);
	assert_true(gmem_any());
	assert_true(gmem_launch_need(0x1, &need));
	assert_int_equal(need, 32 * MIB);
	/* Everything reserved comes back: the graph freed it. */
	assert_int_equal(launch(0x1, &c), 32 * MIB);
	assert_int_equal(c.nlive, 0);
	assert_int_equal(c.nfreed, 0);
	gmem_change_free(&c);
	assert_int_equal(launch(0x1, &c), 32 * MIB);
	gmem_change_free(&c);
	assert_int_equal(gmem_live_count(), 0);
	gmem_exec_forget(0x1);
	assert_false(gmem_any());
}

static void test_live_then_free(void **state)
{
	const struct gmem_node a[] = { { 0xb000, 48 * MIB } };
	struct gmem_change c;
	uint64_t charged = 0;

	(void)state;
	assert_int_equal(gmem_exec_add(0x2, a, 1, NULL, 0, false), 0);
	assert_int_equal(launch(0x2, &c), 0);
	assert_int_equal(c.nlive, 1);
	assert_int_equal(c.live[0].va, 0xb000);
	assert_int_equal(c.live[0].size, 48 * MIB);
	gmem_change_free(&c);
	assert_int_equal(gmem_live_count(), 1);
	/* Not a graph allocation, or not this one's base. */
	assert_false(gmem_free(0xb008, &charged));
	assert_true(gmem_free(0xb000, &charged));
	assert_int_equal(charged, 48 * MIB);
	assert_false(gmem_free(0xb000, &charged));
	/* Destroyed while live: the allocation outlives the graph. */
	assert_int_equal(launch(0x2, &c), 0);
	gmem_change_free(&c);
	gmem_exec_forget(0x2);
	assert_true(gmem_any());
	assert_true(gmem_free(0xb000, &charged));
	assert_false(gmem_any());
}

static void test_sum_and_other_graph_frees(void **state)
{
	const struct gmem_node big[] = { { 0xc000, 40 * MIB },
					 { 0xd000, 40 * MIB } };
	const uint64_t fr[] = { 0xc000, 0xd000 };
	struct gmem_change c;
	uint64_t need;

	(void)state;
	/* Every allocation at once, though the graph frees them. */
	assert_int_equal(gmem_exec_add(0x3, big, 2, fr, 2, false), 0);
	assert_true(gmem_launch_need(0x3, &need));
	assert_int_equal(need, 80 * MIB);
	gmem_exec_forget(0x3);
	/* One graph allocates, another frees: the second gives it back. */
	assert_int_equal(gmem_exec_add(0x4, big, 1, NULL, 0, false), 0);
	assert_int_equal(gmem_exec_add(0x5, NULL, 0, fr, 1, false), 0);
	assert_int_equal(launch(0x4, &c), 0);
	gmem_change_free(&c);
	assert_true(gmem_launch_need(0x5, &need));
	assert_int_equal(need, 0);
	assert_int_equal(launch(0x5, &c), 40 * MIB);
	assert_int_equal(c.nfreed, 1);
	assert_int_equal(c.freed[0], 0xc000);
	gmem_change_free(&c);
	/* Nothing live to free: nothing given back. */
	assert_int_equal(launch(0x5, &c), 0);
	gmem_change_free(&c);
	gmem_exec_forget(0x4);
	gmem_exec_forget(0x5);
	assert_false(gmem_any());
}

static void test_auto_free(void **state)
{
	const struct gmem_node a[] = { { 0xe000, 48 * MIB } };
	struct gmem_change c;
	uint64_t need, charged;

	(void)state;
	assert_int_equal(gmem_exec_add(0x6, a, 1, NULL, 0, true), 0);
	assert_int_equal(launch(0x6, &c), 0);
	gmem_change_free(&c);
	/* The second launch frees the first's: it reserves nothing more. */
	assert_true(gmem_launch_need(0x6, &need));
	assert_int_equal(need, 0);
	assert_int_equal(gmem_launch_done(0x6, need, &c), 0);
	assert_int_equal(c.give_back, 0);
	assert_int_equal(c.nfreed, 1);
	assert_int_equal(c.nlive, 1);
	gmem_change_free(&c);
	assert_int_equal(gmem_live_count(), 1);
	assert_true(gmem_free(0xe000, &charged));
	assert_int_equal(charged, 48 * MIB);
	gmem_exec_forget(0x6);
}

static void test_destroyed_meanwhile(void **state)
{
	const struct gmem_node a[] = { { 0xf000, 8 * MIB } };
	struct gmem_change c;
	uint64_t need;

	(void)state;
	assert_int_equal(gmem_exec_add(0x7, a, 1, NULL, 0, false), 0);
	assert_true(gmem_launch_need(0x7, &need));
	gmem_exec_forget(0x7);
	assert_int_equal(gmem_launch_done(0x7, need, &c), 0);
	assert_int_equal(c.give_back, 8 * MIB);
	assert_int_equal(c.nlive, 0);
	gmem_change_free(&c);
	assert_int_equal(gmem_live_count(), 0);
}

static void test_handle_reused(void **state)
{
	const struct gmem_node a[] = { { 0x10000, 4 * MIB } },
			       b[] = { { 0x20000, 6 * MIB } };
	uint64_t need;

	(void)state;
	assert_int_equal(gmem_exec_add(0x8, a, 1, NULL, 0, false), 0);
	assert_int_equal(gmem_exec_add(0x8, b, 1, NULL, 0, false), 0);
	assert_true(gmem_launch_need(0x8, &need));
	assert_int_equal(need, 6 * MIB);
	/* Reused by a graph without memory nodes: forgotten. */
	assert_int_equal(gmem_exec_add(0x8, NULL, 0, NULL, 0, false), 0);
	assert_false(gmem_launch_need(0x8, &need));
	assert_false(gmem_any());
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_no_nodes),
		cmocka_unit_test(test_own_free),
		cmocka_unit_test(test_live_then_free),
		cmocka_unit_test(test_sum_and_other_graph_frees),
		cmocka_unit_test(test_auto_free),
		cmocka_unit_test(test_destroyed_meanwhile),
		cmocka_unit_test(test_handle_reused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
