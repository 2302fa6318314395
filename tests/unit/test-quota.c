/*
 * test-quota.c - unit tests of quota.c: KMUX_MEM_QUOTA parsing, reserving
 * and giving back (also from racing threads), cuMemGetInfo clamping, the
 * VMM handle map and what a free gives back.
 */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>

#include <cmocka.h>

#include "alloc-table.h"
#include "cuda-internal.h"
#include "quota.h"

static void test_parse(void **state)
{
	static const char *bad[] = {
		"", "12Q", "-1", "+1", " 1", "1 ", "1KB", "M", "0x10", "1.5G",
		"18446744073709551616", "99999999999999999999", "16777216T",
		"17179869184G",
	};
	uint64_t v;
	size_t i;

	(void)state;
	assert_int_equal(quota_parse("0", &v), 0);
	assert_int_equal(v, 0);
	assert_int_equal(quota_parse("67108864", &v), 0);
	assert_int_equal(v, 64ULL << 20);
	assert_int_equal(quota_parse("64M", &v), 0);
	assert_int_equal(v, 64ULL << 20);
	assert_int_equal(quota_parse("3K", &v), 0);
	assert_int_equal(v, 3072);
	assert_int_equal(quota_parse("2G", &v), 0);
	assert_int_equal(v, 2ULL << 30);
	assert_int_equal(quota_parse("16777215T", &v), 0);
	assert_int_equal(v, 16777215ULL << 40);
	assert_int_equal(quota_parse("18446744073709551615", &v), 0);
	assert_int_equal(v, UINT64_MAX);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		v = 7;
		assert_int_equal(quota_parse(bad[i], &v), -EINVAL);
		assert_int_equal(v, 7);
	}
	assert_int_equal(quota_parse(NULL, &v), -EINVAL);
}

static void test_init(void **state)
{
	(void)state;
	quota_init(NULL, 0);
	assert_int_equal(quota_on, 0);
	quota_init("12Q", 0);
	assert_int_equal(quota_on, 0);
	quota_init("1M", 0);
	assert_int_equal(quota_on, 1);
	assert_int_equal(quota_global.limit, 1 << 20);
	assert_int_equal(quota_reserve(1 << 20), 0);
	assert_int_equal(quota_reserve(1), -ENOSPC);
	quota_release(1 << 20);
	assert_int_equal(quota_used(&quota_global), 0);
}

static int grow_calls;

/* kmuxd granting every growth: the new limit is what was wanted. */
static int grow_always(uint64_t want)
{
	grow_calls++;
	quota_set_admitted(want);
	return 0;
}

/*
 * The user's own KMUX_MEM_QUOTA bounds what kmuxd admits and grants; one
 * kmuxd set for a job it started does not.
 */
static void test_user_cap(void **state)
{
	(void)state;
	quota_init("1M", 0);
	assert_int_equal(quota_cap, 1 << 20);
	quota_set_admitted(8 << 20);
	assert_int_equal(quota_global.limit, 1 << 20);
	quota_grow = grow_always;
	grow_calls = 0;
	assert_int_equal(quota_reserve(1 << 20), 0);
	assert_int_equal(quota_reserve(1), -ENOSPC);
	assert_int_equal(grow_calls, 0);	/* never asked past the cap */
	quota_release(1 << 20);

	quota_init("1M", 1);
	assert_int_equal(quota_cap, 0);
	quota_set_admitted(8 << 20);
	assert_int_equal(quota_global.limit, 8 << 20);
	quota_global.limit = 1 << 20;
	assert_int_equal(quota_reserve(2 << 20), 0);	/* grown */
	assert_int_equal(grow_calls, 1);
	quota_release(2 << 20);
	quota_grow = NULL;
}

static void test_reserve(void **state)
{
	struct quota q = { .limit = 100 };

	(void)state;
	assert_int_equal(quota_try_reserve(&q, 60), 0);
	assert_int_equal(quota_try_reserve(&q, 41), -ENOSPC);
	assert_int_equal(quota_used(&q), 60);
	assert_int_equal(quota_try_reserve(&q, 40), 0);
	assert_int_equal(quota_try_reserve(&q, 1), -ENOSPC);
	assert_int_equal(quota_try_reserve(&q, 0), 0);
	quota_give_back(&q, 40);
	assert_int_equal(quota_used(&q), 60);
	assert_int_equal(quota_try_reserve(&q, UINT64_MAX), -ENOSPC);
	assert_int_equal(quota_used(&q), 60);
	/* Never below zero. */
	quota_give_back(&q, 1000);
	assert_int_equal(quota_used(&q), 0);
	assert_int_equal(quota_try_reserve(&q, 101), -ENOSPC);
	assert_int_equal(quota_try_reserve(&q, 100), 0);

	/* A quota of 0: nothing but empty reservations. */
	struct quota z = { .limit = 0 };
	assert_int_equal(quota_try_reserve(&z, 1), -ENOSPC);
	assert_int_equal(quota_try_reserve(&z, 0), 0);

	/* The largest quota: no overflow near the top. */
	struct quota big = { .limit = UINT64_MAX };
	assert_int_equal(quota_try_reserve(&big, UINT64_MAX - 1), 0);
	assert_int_equal(quota_try_reserve(&big, 2), -ENOSPC);
	assert_int_equal(quota_try_reserve(&big, 1), 0);
	assert_int_equal(quota_used(&big), UINT64_MAX);
}

#define NTHREADS 8
#define TRIES 20000

static struct quota race_q;
static int race_got[NTHREADS];

static void *race(void *arg)
{
	int *got = arg, i;

	for (i = 0; i < TRIES; i++) {
		if (quota_try_reserve(&race_q, 3) == 0) {
			++*got;
			if (i % 2) {
				quota_give_back(&race_q, 3);
				--*got;
			}
		}
	}
	return NULL;
}

/* Racing threads never commit more than the limit, and every byte counts. */
static void test_race(void **state)
{
	pthread_t t[NTHREADS];
	int i, total = 0;

	(void)state;
	race_q.limit = 3 * 1000 + 2;
	for (i = 0; i < NTHREADS; i++)
		assert_int_equal(pthread_create(&t[i], NULL, race,
						&race_got[i]), 0);
	for (i = 0; i < NTHREADS; i++) {
		pthread_join(t[i], NULL);
		total += race_got[i];
	}
	assert_int_equal(total, 1000);
	assert_int_equal(quota_used(&race_q), 3 * 1000);
}

static void test_clamp(void **state)
{
	struct quota q = { .limit = 64 };
	size_t f, t;

	(void)state;
	f = 1000, t = 2000;
	quota_clamp_info(&q, &f, &t);
	assert_int_equal(t, 64);
	assert_int_equal(f, 64);
	assert_int_equal(quota_try_reserve(&q, 24), 0);
	f = 1000, t = 2000;
	quota_clamp_info(&q, &f, &t);
	assert_int_equal(t, 64);
	assert_int_equal(f, 40);
	/* The device is smaller or fuller than the quota: the device's. */
	f = 10, t = 50;
	quota_clamp_info(&q, &f, &t);
	assert_int_equal(t, 50);
	assert_int_equal(f, 10);
	/* Used past the limit (a stale view): nothing free, no wrap. */
	atomic_store(&q.used, 100);
	f = 1000, t = 2000;
	quota_clamp_info(&q, &f, &t);
	assert_int_equal(f, 0);
	quota_clamp_info(&q, NULL, NULL);
}

static void test_handles(void **state)
{
	uint64_t h;

	(void)state;
	assert_int_equal(quota_handle_take(QUOTA_H_VMM, 42), 0);
	for (h = 1; h <= 300; h++)
		assert_int_equal(quota_handle_add(QUOTA_H_VMM, h * 0x1000, h),
				 0);
	assert_int_equal(quota_handle_take(QUOTA_H_VMM, 7 * 0x1000), 7);
	assert_int_equal(quota_handle_take(QUOTA_H_VMM, 7 * 0x1000), 0);
	for (h = 300; h >= 1; h--)
		if (h != 7)
			assert_int_equal(quota_handle_take(QUOTA_H_VMM,
							   h * 0x1000), h);
	assert_int_equal(quota_handle_take(QUOTA_H_VMM, 0x1000), 0);
}

/* An array's bytes: its texels, level by level. */
static void test_array_bytes(void **state)
{
	(void)state;
	/* 2D float: 2048 x 2048 x 4; 1D: a height of 0 counts as 1. */
	assert_int_equal(quota_array_bytes(2048, 2048, 0, CU_AD_FORMAT_FLOAT,
					   1, 0, 1), 16u << 20);
	assert_int_equal(quota_array_bytes(100, 0, 0, CU_AD_FORMAT_HALF, 2,
					   0, 1), 400);
	/* 3D: channels multiply the classic formats only. */
	assert_int_equal(quota_array_bytes(256, 256, 16, CU_AD_FORMAT_FLOAT,
					   4, 0, 1), 16u << 20);
	assert_int_equal(quota_array_bytes(16, 16, 1,
					   CU_AD_FORMAT_UNORM_INT16X4, 4, 0,
					   1), 16 * 16 * 8);
	/* Mipmapped RGBA8 2048^2, 12 levels: 4 * (4^12 - 1) / 3. */
	assert_int_equal(quota_array_bytes(2048, 2048, 0,
					   CU_AD_FORMAT_UNSIGNED_INT8, 4, 0,
					   12), 22369620);
	/* Levels past 1x1 add one texel each, however many are asked. */
	assert_int_equal(quota_array_bytes(4, 1, 0, CU_AD_FORMAT_FLOAT, 1, 0,
					   5), 16 + 8 + 4 + 4 + 4);
	assert_int_equal(quota_array_bytes(1, 1, 1, CU_AD_FORMAT_FLOAT, 1, 0,
					   4000000000u), 16000000000ULL);
	/* A layered array keeps its layers at every level; 3D halves depth. */
	assert_int_equal(quota_array_bytes(8, 8, 3, CU_AD_FORMAT_FLOAT, 1,
					   CUDA_ARRAY3D_LAYERED, 2),
			 (64 + 16) * 3 * 4);
	assert_int_equal(quota_array_bytes(8, 8, 4, CU_AD_FORMAT_FLOAT, 1, 0,
					   2), 64 * 4 * 4 + 16 * 2 * 4);
	/* Block-compressed: 4x4 blocks of 8 or 16 bytes, rounded up. */
	assert_int_equal(quota_array_bytes(10, 10, 0, CU_AD_FORMAT_BC1_UNORM,
					   4, 0, 1), 9 * 8);
	assert_int_equal(quota_array_bytes(16, 16, 0, CU_AD_FORMAT_BC7_UNORM,
					   4, 0, 1), 16 * 16);
	/* Sparse and deferred-mapping arrays hold nothing themselves. */
	assert_int_equal(quota_array_bytes(4096, 4096, 0, CU_AD_FORMAT_FLOAT,
					   4, CUDA_ARRAY3D_SPARSE, 1), 0);
	assert_int_equal(quota_array_bytes(4096, 4096, 0, CU_AD_FORMAT_FLOAT,
					   4, CUDA_ARRAY3D_DEFERRED_MAPPING,
					   1), 0);
	/* Overflow: UINT64_MAX, never a small wrapped count. */
	assert_true(quota_array_bytes(UINT64_MAX / 2, 4, 1,
				      CU_AD_FORMAT_FLOAT, 4, 0, 1) ==
		    UINT64_MAX);
	assert_true(quota_array_bytes(1ULL << 40, 1ULL << 30, 0,
				      CU_AD_FORMAT_FLOAT, 1, 0, 1) ==
		    UINT64_MAX);
}

/* Handles of different kinds may share a value: each keeps its size. */
static void test_handle_kinds(void **state)
{
	(void)state;
	assert_int_equal(quota_handle_add(QUOTA_H_VMM, 0x5000, 10), 0);
	assert_int_equal(quota_handle_add(QUOTA_H_ARRAY, 0x5000, 20), 0);
	assert_int_equal(quota_handle_add(QUOTA_H_MIPMAP, 0x5000, 30), 0);
	assert_int_equal(quota_handle_take(QUOTA_H_ARRAY, 0x5000), 20);
	assert_int_equal(quota_handle_take(QUOTA_H_ARRAY, 0x5000), 0);
	assert_int_equal(quota_handle_take(QUOTA_H_MIPMAP, 0x5000), 30);
	assert_int_equal(quota_handle_take(QUOTA_H_VMM, 0x5000), 10);
}

/* A free gives back device and managed memory, never host memory. */
static void test_charged(void **state)
{
	struct alloc_table *t = alloc_table_global();

	(void)state;
	assert_non_null(t);
	assert_int_equal(alloc_table_insert(t, 0x10000, 4096, ALLOC_DEVICE,
					    0, NULL), 0);
	assert_int_equal(alloc_table_insert(t, 0x20000, 8192, ALLOC_MANAGED,
					    0, NULL), 0);
	assert_int_equal(alloc_table_insert(t, 0x30000, 512,
					    ALLOC_HOST_MAPPED, -1, NULL), 0);
	assert_int_equal(alloc_table_insert(t, 0x40000, 1024, ALLOC_VMM, 0,
					    NULL), 0);
	assert_int_equal(quota_charged(0x10000), 4096);
	assert_int_equal(quota_charged(0x20000), 8192);
	assert_int_equal(quota_charged(0x30000), 0);
	assert_int_equal(quota_charged(0x40000), 0);
	/* A graph allocation's charge is graph-mem.c's, not its size. */
	assert_int_equal(alloc_table_insert_flags(t, 0x50000, 2048,
						  ALLOC_DEVICE, 0,
						  ALLOC_F_GRAPH, NULL), 0);
	assert_int_equal(quota_charged(0x50000), 0);
	assert_int_equal(quota_charged(0x10008), 0);	/* not a base */
	assert_int_equal(quota_charged(0x90000), 0);
	assert_int_equal(quota_charged(0), 0);
	alloc_table_remove(t, 0x10000, NULL);
	assert_int_equal(quota_charged(0x10000), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse),
		cmocka_unit_test(test_init),
		cmocka_unit_test(test_user_cap),
		cmocka_unit_test(test_reserve),
		cmocka_unit_test(test_race),
		cmocka_unit_test(test_clamp),
		cmocka_unit_test(test_handles),
		cmocka_unit_test(test_handle_kinds),
		cmocka_unit_test(test_array_bytes),
		cmocka_unit_test(test_charged),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
