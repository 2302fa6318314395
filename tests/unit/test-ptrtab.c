/*
 * test-ptrtab.c - unit tests of the pointer-table bookkeeping (ptrtab.c):
 * a table keeps one pointer per allocation and only grows; more
 * allocations than it keeps, or than the caller can take, make it opaque;
 * tables that were freed give their slots up, and with none to give the
 * bookkeeping says it lost one; nothing noted costs nothing; a
 * device-to-device copy of a table makes its destination one (opaque when
 * the source is); a table too large to read is opaque.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>

#include <cmocka.h>

#include "ptrtab.h"

#define BASE 0x7d0000000000ull

static bool all_live(uint64_t id, uint64_t base, void *arg)
{
	(void)id;
	(void)base;
	(void)arg;
	return true;
}

/* Tables with an odd id were freed. */
static bool even_live(uint64_t id, uint64_t base, void *arg)
{
	int *calls = arg;

	(void)base;
	(*calls)++;
	return id % 2 == 0;
}

static int setup(void **state)
{
	(void)state;
	ptrtab_reset();
	return 0;
}

static void test_nothing_noted(void **state)
{
	uint64_t p[4];

	(void)state;
	assert_false(ptrtab_any());
	assert_false(ptrtab_lost());
	assert_int_equal(ptrtab_get(7, p, 4), -ENOENT);
	assert_int_equal(ptrtab_get(0, p, 4), -ENOENT);
	/* Nothing to note is no table. */
	assert_int_equal(ptrtab_note(7, BASE, NULL, 0, all_live, NULL), 0);
	assert_false(ptrtab_any());
	assert_int_equal(ptrtab_note(7, BASE, NULL, -1, all_live, NULL),
			 -EINVAL);
}

static void test_one_per_allocation(void **state)
{
	struct ptrtab_ref r[] = {
		{ 11, BASE + 0x1000 }, { 12, BASE + 0x2000 },
		{ 11, BASE + 0x1040 },	/* the same allocation again */
	};
	struct ptrtab_ref more[] = { { 13, BASE + 0x3000 }, { 12, BASE + 0x2100 } };
	uint64_t p[8], t, n, o;

	(void)state;
	assert_int_equal(ptrtab_note(5, BASE, r, 3, all_live, NULL), 0);
	assert_true(ptrtab_any());
	assert_int_equal(ptrtab_get(5, p, 8), 2);
	assert_int_equal(p[0], BASE + 0x1000);	/* its first pointer kept */
	assert_int_equal(p[1], BASE + 0x2000);
	/* A later upload into the same table adds, never removes. */
	assert_int_equal(ptrtab_note(5, BASE, more, 2, all_live, NULL), 0);
	assert_int_equal(ptrtab_get(5, p, 8), 3);
	assert_int_equal(p[2], BASE + 0x3000);
	/* Another table is its own. */
	assert_int_equal(ptrtab_get(6, p, 8), -ENOENT);
	ptrtab_counts(&t, &n, &o);
	assert_int_equal(t, 1);
	assert_int_equal(n, 3);
	assert_int_equal(o, 0);
}

static void test_opaque(void **state)
{
	struct ptrtab_ref r[PTRTAB_REFS + 1];
	uint64_t p[PTRTAB_REFS], t, n, o;

	(void)state;
	for (int i = 0; i <= PTRTAB_REFS; i++)
		r[i] = (struct ptrtab_ref){ 100 + (uint64_t)i,
					    BASE + 0x100 * (uint64_t)i };
	/* Exactly as many as it keeps: fine, but not for a smaller buffer. */
	assert_int_equal(ptrtab_note(9, BASE, r, PTRTAB_REFS, all_live, NULL),
			 0);
	assert_int_equal(ptrtab_get(9, p, PTRTAB_REFS), PTRTAB_REFS);
	assert_int_equal(ptrtab_get(9, p, 4), -E2BIG);
	/* One more allocation: opaque for good. */
	assert_int_equal(ptrtab_note(9, BASE, &r[PTRTAB_REFS], 1, all_live,
				     NULL), -E2BIG);
	assert_int_equal(ptrtab_get(9, p, PTRTAB_REFS), -E2BIG);
	assert_int_equal(ptrtab_note(9, BASE, r, 1, all_live, NULL), -E2BIG);
	ptrtab_counts(&t, &n, &o);
	assert_int_equal(o, 1);
	assert_false(ptrtab_lost());
}

static void test_slots_reclaimed(void **state)
{
	struct ptrtab_ref r = { 1000, BASE };
	uint64_t p[2];
	int calls = 0;

	(void)state;
	for (uint64_t id = 1; id <= PTRTAB_TABLES; id++)
		assert_int_equal(ptrtab_note(id, BASE + id * 0x10000, &r, 1,
					     even_live, &calls), 0);
	assert_int_equal(calls, 0);	/* slots were free: nobody asked */
	/* Full: the freed (odd) tables give their slots up. */
	assert_int_equal(ptrtab_note(PTRTAB_TABLES + 2, BASE, &r, 1,
				     even_live, &calls), 0);
	assert_int_equal(calls, PTRTAB_TABLES);
	assert_int_equal(ptrtab_get(1, p, 2), -ENOENT);
	assert_int_equal(ptrtab_get(2, p, 2), 1);
	assert_int_equal(ptrtab_get(PTRTAB_TABLES + 2, p, 2), 1);
	assert_false(ptrtab_lost());
}

static void test_lost(void **state)
{
	struct ptrtab_ref r = { 1000, BASE };
	uint64_t p[2];

	(void)state;
	for (uint64_t id = 1; id <= PTRTAB_TABLES; id++)
		assert_int_equal(ptrtab_note(id, BASE, &r, 1, all_live, NULL),
				 0);
	/* Every table still live: this one cannot be kept. */
	assert_int_equal(ptrtab_note(PTRTAB_TABLES + 1, BASE, &r, 1, all_live,
				     NULL), -ENOSPC);
	assert_true(ptrtab_lost());
	assert_true(ptrtab_any());
	assert_int_equal(ptrtab_get(PTRTAB_TABLES + 1, p, 2), -ENOENT);
	/* The tables kept are still answered. */
	assert_int_equal(ptrtab_get(3, p, 2), 1);
	ptrtab_reset();
	assert_false(ptrtab_lost());
	assert_false(ptrtab_any());
}

static void test_copy(void **state)
{
	struct ptrtab_ref r[] = { { 11, BASE + 0x1000 }, { 12, BASE + 0x2000 } };
	struct ptrtab_ref back = { 20, BASE + 0x9000 };	/* 20 -> 21 -> 20 */
	uint64_t p[8], t, n, o;

	(void)state;
	/* From no table: nothing, and nothing noted. */
	assert_int_equal(ptrtab_copy(5, 6, BASE, all_live, NULL), 0);
	assert_false(ptrtab_any());
	assert_int_equal(ptrtab_note(5, BASE, r, 2, all_live, NULL), 0);
	/* Staged: 5 copied into 6, which now reaches what 5 does. */
	assert_int_equal(ptrtab_copy(5, 6, BASE + 0x40000, all_live, NULL), 0);
	assert_int_equal(ptrtab_get(6, p, 8), 2);
	assert_int_equal(p[0], BASE + 0x1000);
	assert_int_equal(p[1], BASE + 0x2000);
	/* Copied again, or within itself: nothing changes. */
	assert_int_equal(ptrtab_copy(5, 6, BASE + 0x40000, all_live, NULL), 0);
	assert_int_equal(ptrtab_copy(5, 5, BASE, all_live, NULL), 0);
	assert_int_equal(ptrtab_get(6, p, 8), 2);
	assert_int_equal(ptrtab_get(5, p, 8), 2);
	/* Copied into one of the allocations it points to: not to itself. */
	assert_int_equal(ptrtab_copy(5, 11, BASE + 0x1000, all_live, NULL), 0);
	assert_int_equal(ptrtab_get(11, p, 8), 1);
	assert_int_equal(p[0], BASE + 0x2000);
	/* A table pointing into the one it is copied into: skipped too. */
	assert_int_equal(ptrtab_note(21, BASE, &back, 1, all_live, NULL), 0);
	assert_int_equal(ptrtab_copy(21, 20, BASE + 0x9000, all_live, NULL), 0);
	assert_int_equal(ptrtab_get(20, p, 8), -ENOENT);
	ptrtab_counts(&t, &n, &o);
	assert_int_equal(t, 4);
	assert_int_equal(o, 0);
}

static void test_too_large(void **state)
{
	struct ptrtab_ref r = { 11, BASE + 0x1000 };
	uint64_t p[8], t, n, o;

	(void)state;
	assert_int_equal(ptrtab_note_opaque(0, BASE, all_live, NULL), -EINVAL);
	assert_int_equal(ptrtab_note_opaque(7, BASE, all_live, NULL), -E2BIG);
	assert_true(ptrtab_any());
	assert_int_equal(ptrtab_get(7, p, 8), -E2BIG);
	assert_int_equal(ptrtab_note(7, BASE, &r, 1, all_live, NULL), -E2BIG);
	/* Copied: the copy is opaque too. */
	assert_int_equal(ptrtab_copy(7, 8, BASE, all_live, NULL), -E2BIG);
	assert_int_equal(ptrtab_get(8, p, 8), -E2BIG);
	/* A table that was readable turns opaque, once. */
	assert_int_equal(ptrtab_note(9, BASE, &r, 1, all_live, NULL), 0);
	assert_int_equal(ptrtab_note_opaque(9, BASE, all_live, NULL), -E2BIG);
	assert_int_equal(ptrtab_note_opaque(9, BASE, all_live, NULL), -E2BIG);
	ptrtab_counts(&t, &n, &o);
	assert_int_equal(t, 3);
	assert_int_equal(o, 3);
	assert_int_equal(n, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_nothing_noted, setup),
		cmocka_unit_test_setup(test_one_per_allocation, setup),
		cmocka_unit_test_setup(test_opaque, setup),
		cmocka_unit_test_setup(test_slots_reclaimed, setup),
		cmocka_unit_test_setup(test_lost, setup),
		cmocka_unit_test_setup(test_copy, setup),
		cmocka_unit_test_setup(test_too_large, setup),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
