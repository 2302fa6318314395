/*
 * test-alloc-table.c - unit tests of the tracker's allocation interval map.
 *
 * Single-threaded behaviour is checked case by case and then against a
 * naive reference model over 100k random operations; the lock-free readers
 * are checked under concurrent writers, with more reader threads than epoch
 * slots, across thread exit and across fork.  Run under ASan or valgrind, a
 * snapshot freed too early shows up as a use after free in the readers.
 *
 * KMUX_TEST_SEED=<n> replays the random tests with another seed.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "alloc-table.h"

/* Must match EBR_SLOTS in alloc-table.c: the exhaustion test exceeds it. */
#define TEST_EBR_SLOTS 256

static uint64_t seed = 0x6b6d7578u;	/* "kmux" */

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

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int setup_table(void **state)
{
	*state = alloc_table_new();
	return *state ? 0 : -1;
}

static int teardown_table(void **state)
{
	struct alloc_table *t = *state;

	assert_int_equal(alloc_table_check(t), 0);
	alloc_table_free(t);
	return 0;
}

static void test_insert_find_remove(void **state)
{
	struct alloc_table *t = *state;
	struct alloc a, gone;
	uint64_t id1, id2;

	assert_int_equal(alloc_table_find(t, 0x1000, &a), -ENOENT);
	assert_int_equal(alloc_table_count(t), 0);

	assert_int_equal(alloc_table_insert(t, 0x7f0000001000, 0x1000,
					    ALLOC_DEVICE, 0, &id1), 0);
	assert_int_equal(alloc_table_insert(t, 0x7f0000010000, 0x200,
					    ALLOC_MANAGED, 3, &id2), 0);
	assert_true(id1 >= 1);
	assert_true(id2 > id1);
	assert_int_equal(alloc_table_count(t), 2);

	assert_int_equal(alloc_table_find(t, 0x7f0000001800, &a), 0);
	assert_int_equal(a.base, 0x7f0000001000);
	assert_int_equal(a.size, 0x1000);
	assert_int_equal(a.id, id1);
	assert_int_equal(a.kind, ALLOC_DEVICE);
	assert_int_equal(a.device, 0);

	assert_int_equal(alloc_table_find(t, 0x7f0000010100, &a), 0);
	assert_int_equal(a.id, id2);
	assert_int_equal(a.kind, ALLOC_MANAGED);
	assert_int_equal(a.device, 3);
	/* out may be NULL: a pure membership test. */
	assert_int_equal(alloc_table_find(t, 0x7f0000010100, NULL), 0);

	/* Between the two. */
	assert_int_equal(alloc_table_find(t, 0x7f0000008000, &a), -ENOENT);

	assert_int_equal(alloc_table_remove(t, 0x7f0000001000, &gone), 0);
	assert_int_equal(gone.id, id1);
	assert_int_equal(gone.size, 0x1000);
	assert_int_equal(alloc_table_find(t, 0x7f0000001800, &a), -ENOENT);
	assert_int_equal(alloc_table_find(t, 0x7f0000010000, &a), 0);
	assert_int_equal(alloc_table_count(t), 1);

	assert_int_equal(alloc_table_remove(t, 0x7f0000010000, NULL), 0);
	assert_int_equal(alloc_table_count(t), 0);
	assert_int_equal(alloc_table_find(t, 0x7f0000010000, &a), -ENOENT);
}

static void test_boundaries(void **state)
{
	struct alloc_table *t = *state;
	const uint64_t base = 0x7f00deadb000, size = 0x1234;
	struct alloc a;

	assert_int_equal(alloc_table_insert(t, base, size, ALLOC_DEVICE, 0,
					    NULL), 0);
	assert_int_equal(alloc_table_find(t, base, &a), 0);
	assert_int_equal(a.base, base);
	assert_int_equal(alloc_table_find(t, base + size - 1, &a), 0);
	assert_int_equal(a.base, base);
	assert_int_equal(alloc_table_find(t, base + size, &a), -ENOENT);
	assert_int_equal(alloc_table_find(t, base - 1, &a), -ENOENT);

	/* A neighbour starting exactly at the end is not an overlap. */
	assert_int_equal(alloc_table_insert(t, base + size, 1, ALLOC_VMM, 1,
					    NULL), 0);
	assert_int_equal(alloc_table_find(t, base + size, &a), 0);
	assert_int_equal(a.base, base + size);
	assert_int_equal(a.size, 1);
	assert_int_equal(alloc_table_find(t, base + size + 1, &a), -ENOENT);
	assert_int_equal(alloc_table_find(t, base + size - 1, &a), 0);
	assert_int_equal(a.base, base);

	/* The edges of the address space. */
	assert_int_equal(alloc_table_insert(t, 0, 16, ALLOC_HOST_MAPPED, -1,
					    NULL), 0);
	assert_int_equal(alloc_table_find(t, 0, &a), 0);
	assert_int_equal(a.device, -1);
	assert_int_equal(alloc_table_find(t, 16, &a), -ENOENT);
	assert_int_equal(alloc_table_insert(t, UINT64_MAX - 16, 16,
					    ALLOC_DEVICE, 0, NULL), 0);
	assert_int_equal(alloc_table_find(t, UINT64_MAX - 1, &a), 0);
	assert_int_equal(alloc_table_find(t, UINT64_MAX, &a), -ENOENT);
}

static void test_overlap_rejected(void **state)
{
	struct alloc_table *t = *state;
	const uint64_t b = 0x7f0000100000, s = 0x1000;
	struct alloc a;
	uint64_t id;

	assert_int_equal(alloc_table_insert(t, b, s, ALLOC_DEVICE, 0, &id), 0);
	/* Same range, inside, covering, straddling either end. */
	assert_int_equal(alloc_table_insert(t, b, s, ALLOC_DEVICE, 0, NULL),
			 -EEXIST);
	assert_int_equal(alloc_table_insert(t, b + 8, 8, ALLOC_DEVICE, 0,
					    NULL), -EEXIST);
	assert_int_equal(alloc_table_insert(t, b - 0x100, s + 0x200,
					    ALLOC_DEVICE, 0, NULL), -EEXIST);
	assert_int_equal(alloc_table_insert(t, b - 0x100, 0x101,
					    ALLOC_DEVICE, 0, NULL), -EEXIST);
	assert_int_equal(alloc_table_insert(t, b + s - 1, 0x100,
					    ALLOC_DEVICE, 0, NULL), -EEXIST);
	assert_int_equal(alloc_table_insert(t, b + s - 1, 1, ALLOC_DEVICE, 0,
					    NULL), -EEXIST);
	/* Touching on either side is fine. */
	assert_int_equal(alloc_table_insert(t, b - 0x100, 0x100,
					    ALLOC_DEVICE, 0, NULL), 0);
	assert_int_equal(alloc_table_insert(t, b + s, 0x100, ALLOC_DEVICE, 0,
					    NULL), 0);
	/* A range covering all three. */
	assert_int_equal(alloc_table_insert(t, b - 0x1000, 0x10000,
					    ALLOC_DEVICE, 0, NULL), -EEXIST);

	/* Failed inserts changed nothing. */
	assert_int_equal(alloc_table_count(t), 3);
	assert_int_equal(alloc_table_find(t, b, &a), 0);
	assert_int_equal(a.id, id);
	assert_int_equal(a.size, s);
}

static void test_invalid_arguments(void **state)
{
	struct alloc_table *t = *state;

	assert_int_equal(alloc_table_insert(t, 0x1000, 0, ALLOC_DEVICE, 0,
					    NULL), -EINVAL);
	/* [base, base+size) must not wrap. */
	assert_int_equal(alloc_table_insert(t, UINT64_MAX - 15, 17,
					    ALLOC_DEVICE, 0, NULL), -EINVAL);
	assert_int_equal(alloc_table_insert(t, 0x1000, 16,
					    (enum alloc_kind)ALLOC_KIND_COUNT,
					    0, NULL), -EINVAL);
	assert_int_equal(alloc_table_insert(t, 0x1000, 16,
					    (enum alloc_kind)-1, 0, NULL),
			 -EINVAL);
	assert_int_equal(alloc_table_insert(NULL, 0x1000, 16, ALLOC_DEVICE, 0,
					    NULL), -EINVAL);
	assert_int_equal(alloc_table_find(NULL, 0x1000, NULL), -EINVAL);
	assert_int_equal(alloc_table_remove(NULL, 0x1000, NULL), -EINVAL);
	assert_int_equal(alloc_table_count(t), 0);
	assert_int_equal(alloc_table_bytes(t, -1), 0);
}

static void test_remove_unknown(void **state)
{
	struct alloc_table *t = *state;
	struct alloc gone = { .id = 12345 };

	assert_int_equal(alloc_table_remove(t, 0x1000, &gone), -ENOENT);
	assert_int_equal(gone.id, 12345);	/* untouched on failure */
	assert_int_equal(alloc_table_insert(t, 0x2000, 0x100, ALLOC_DEVICE, 0,
					    NULL), 0);
	/* Only the exact base removes. */
	assert_int_equal(alloc_table_remove(t, 0x2001, NULL), -ENOENT);
	assert_int_equal(alloc_table_remove(t, 0x1fff, NULL), -ENOENT);
	assert_int_equal(alloc_table_remove(t, 0x2100, NULL), -ENOENT);
	assert_int_equal(alloc_table_count(t), 1);
	assert_int_equal(alloc_table_remove(t, 0x2000, NULL), 0);
	assert_int_equal(alloc_table_remove(t, 0x2000, NULL), -ENOENT);
}

static void test_ids_never_reused(void **state)
{
	struct alloc_table *t = *state, *t2;
	uint64_t id, last = 0;
	struct alloc a;

	/* Same base over and over: every incarnation gets a fresh id. */
	for (int i = 0; i < 1000; i++) {
		assert_int_equal(alloc_table_insert(t, 0x5000, 0x100,
						    ALLOC_DEVICE, 0, &id), 0);
		assert_true(id > last);
		assert_int_equal(alloc_table_find(t, 0x5000, &a), 0);
		assert_int_equal(a.id, id);
		assert_int_equal(alloc_table_remove(t, 0x5000, NULL), 0);
		last = id;
	}
	/* Process-unique: a second table continues the sequence. */
	t2 = alloc_table_new();
	assert_non_null(t2);
	assert_int_equal(alloc_table_insert(t2, 0x5000, 0x100, ALLOC_DEVICE,
					    0, &id), 0);
	assert_true(id > last);
	alloc_table_free(t2);
	/* A failed insert does not hand out an id that shows up later. */
	assert_int_equal(alloc_table_insert(t, 0x5000, 0x100, ALLOC_DEVICE, 0,
					    &last), 0);
	assert_int_equal(alloc_table_insert(t, 0x5000, 0x100, ALLOC_DEVICE, 0,
					    &id), -EEXIST);
	assert_int_equal(alloc_table_insert(t, 0x6000, 0x100, ALLOC_DEVICE, 0,
					    &id), 0);
	assert_true(id > last);
}

static void test_bytes_per_kind(void **state)
{
	struct alloc_table *t = *state;

	assert_int_equal(alloc_table_insert(t, 0x10000, 100, ALLOC_DEVICE, 0,
					    NULL), 0);
	assert_int_equal(alloc_table_insert(t, 0x20000, 200, ALLOC_DEVICE, 1,
					    NULL), 0);
	assert_int_equal(alloc_table_insert(t, 0x30000, 30, ALLOC_MANAGED, 0,
					    NULL), 0);
	assert_int_equal(alloc_table_insert(t, 0x40000, 4, ALLOC_HOST_MAPPED,
					    -1, NULL), 0);
	assert_int_equal(alloc_table_insert(t, 0x50000, 5000, ALLOC_VMM, 0,
					    NULL), 0);
	assert_int_equal(alloc_table_bytes(t, ALLOC_DEVICE), 300);
	assert_int_equal(alloc_table_bytes(t, ALLOC_MANAGED), 30);
	assert_int_equal(alloc_table_bytes(t, ALLOC_HOST_MAPPED), 4);
	assert_int_equal(alloc_table_bytes(t, ALLOC_VMM), 5000);
	assert_int_equal(alloc_table_bytes(t, -1), 5334);
	assert_int_equal(alloc_table_bytes(t, ALLOC_KIND_COUNT), 0);
	assert_int_equal(alloc_table_count(t), 5);

	assert_int_equal(alloc_table_remove(t, 0x20000, NULL), 0);
	assert_int_equal(alloc_table_remove(t, 0x50000, NULL), 0);
	assert_int_equal(alloc_table_bytes(t, ALLOC_DEVICE), 100);
	assert_int_equal(alloc_table_bytes(t, ALLOC_VMM), 0);
	assert_int_equal(alloc_table_bytes(t, -1), 134);
	/* A failed insert or remove moves no bytes. */
	assert_int_equal(alloc_table_insert(t, 0x10010, 8, ALLOC_DEVICE, 0,
					    NULL), -EEXIST);
	assert_int_equal(alloc_table_remove(t, 0x10010, NULL), -ENOENT);
	assert_int_equal(alloc_table_bytes(t, ALLOC_DEVICE), 100);
	assert_int_equal(alloc_table_count(t), 3);
}

/*
 * The reference model: the address range cut in 16-byte cells, each knowing
 * which live allocation covers it.  Allocations are whole cells, so that
 * the model is exact at byte granularity too.
 */
#define MODEL_BASE 0x7f1200000000ull
#define MODEL_CELLS (1u << 14)
#define MODEL_CELL 16

struct model_alloc {
	uint32_t cell, ncells;
	uint64_t id;
	enum alloc_kind kind;
	int device;
};

struct model {
	int owner[MODEL_CELLS];		/* index into live[], -1: free */
	struct model_alloc live[MODEL_CELLS];
	int nlive;
	uint64_t bytes[ALLOC_KIND_COUNT];
};

static bool model_free_range(const struct model *m, uint32_t cell,
			     uint32_t n)
{
	for (uint32_t c = cell; c < cell + n; c++)
		if (m->owner[c] >= 0)
			return false;
	return true;
}

static void model_check_find(struct alloc_table *t, const struct model *m,
			     uint64_t addr)
{
	const struct model_alloc *ma;
	struct alloc a;
	int ret, o = -1;

	if (addr >= MODEL_BASE && addr < MODEL_BASE +
					 (uint64_t)MODEL_CELLS * MODEL_CELL)
		o = m->owner[(addr - MODEL_BASE) / MODEL_CELL];
	ret = alloc_table_find(t, addr, &a);
	if (o < 0) {
		assert_int_equal(ret, -ENOENT);
		return;
	}
	ma = &m->live[o];
	assert_int_equal(ret, 0);
	assert_int_equal(a.base, MODEL_BASE + (uint64_t)ma->cell * MODEL_CELL);
	assert_int_equal(a.size, (uint64_t)ma->ncells * MODEL_CELL);
	assert_int_equal(a.id, ma->id);
	assert_int_equal(a.kind, ma->kind);
	assert_int_equal(a.device, ma->device);
}

static void test_random_against_model(void **state)
{
	struct alloc_table *t = *state;
	struct model *m;
	uint64_t s = seed, id, r, addr, base, last_id = 0;
	uint32_t cell, n, pct;
	struct model_alloc *ma;
	enum alloc_kind kind;
	struct alloc gone;
	int ret, i, dev, peak = 0, ops = 100000;

	m = calloc(1, sizeof(*m));
	assert_non_null(m);
	for (uint32_t c = 0; c < MODEL_CELLS; c++)
		m->owner[c] = -1;

	for (int op = 0; op < ops; op++) {
		/* Fill, drain, fill, drain nearly empty: splits and merges. */
		pct = op < 30000 ? 75 : op < 55000 ? 30 : op < 80000 ? 75 : 15;
		r = rnd_below(&s, 100);
		if (r < pct) {
			cell = (uint32_t)rnd_below(&s, MODEL_CELLS);
			n = rnd_below(&s, 8) == 0 ?
				1 + (uint32_t)rnd_below(&s, 256) :
				1 + (uint32_t)rnd_below(&s, 12);
			if (n > MODEL_CELLS - cell)
				n = MODEL_CELLS - cell;
			base = MODEL_BASE + (uint64_t)cell * MODEL_CELL;
			kind = (enum alloc_kind)rnd_below(&s, ALLOC_KIND_COUNT);
			dev = (int)rnd_below(&s, 9) - 1;

			ret = alloc_table_insert(t, base,
						 (uint64_t)n * MODEL_CELL,
						 kind, dev, &id);
			if (!model_free_range(m, cell, n)) {
				assert_int_equal(ret, -EEXIST);
				continue;
			}
			assert_int_equal(ret, 0);
			assert_true(id > last_id);
			last_id = id;
			i = m->nlive++;
			m->live[i] = (struct model_alloc){ cell, n, id, kind,
							   dev };
			for (uint32_t c = cell; c < cell + n; c++)
				m->owner[c] = i;
			m->bytes[kind] += (uint64_t)n * MODEL_CELL;
		} else {
			/* Mostly a live base, sometimes any address. */
			if (m->nlive > 0 && rnd_below(&s, 10) != 0) {
				i = (int)rnd_below(&s, (uint64_t)m->nlive);
				base = MODEL_BASE +
				       (uint64_t)m->live[i].cell * MODEL_CELL;
			} else {
				base = MODEL_BASE + rnd_below(&s,
					(uint64_t)MODEL_CELLS * MODEL_CELL);
				cell = (uint32_t)((base - MODEL_BASE) /
						  MODEL_CELL);
				i = m->owner[cell];
				if (i >= 0 && MODEL_BASE + (uint64_t)
				    m->live[i].cell * MODEL_CELL != base)
					i = -1;
			}
			ret = alloc_table_remove(t, base, &gone);
			if (i < 0) {
				assert_int_equal(ret, -ENOENT);
				continue;
			}
			assert_int_equal(ret, 0);
			ma = &m->live[i];
			assert_int_equal(gone.id, ma->id);
			assert_int_equal(gone.size,
					 (uint64_t)ma->ncells * MODEL_CELL);
			for (uint32_t c = ma->cell; c < ma->cell + ma->ncells;
			     c++)
				m->owner[c] = -1;
			m->bytes[ma->kind] -= (uint64_t)ma->ncells * MODEL_CELL;
			/* Keep live[] dense: the last one fills the hole. */
			*ma = m->live[--m->nlive];
			if (i < m->nlive)
				for (uint32_t c = ma->cell;
				     c < ma->cell + ma->ncells; c++)
					m->owner[c] = i;
		}
		if (m->nlive > peak)
			peak = m->nlive;

		assert_int_equal(alloc_table_count(t), (size_t)m->nlive);
		for (int k = 0; k < ALLOC_KIND_COUNT; k++)
			assert_int_equal(alloc_table_bytes(t, k), m->bytes[k]);
		for (int k = 0; k < 4; k++) {
			addr = MODEL_BASE - 64 + rnd_below(&s,
				(uint64_t)MODEL_CELLS * MODEL_CELL + 128);
			model_check_find(t, m, addr);
		}
		if (op % 1000 == 0)
			assert_int_equal(alloc_table_check(t), 0);
	}
	/* Finally every cell, both ends of it. */
	for (uint32_t c = 0; c < MODEL_CELLS; c++) {
		model_check_find(t, m, MODEL_BASE + (uint64_t)c * MODEL_CELL);
		model_check_find(t, m, MODEL_BASE +
				 (uint64_t)c * MODEL_CELL + MODEL_CELL - 1);
	}
	print_message("  %d ops, seed %#llx, peak %d live allocations\n",
		      ops, (unsigned long long)seed, peak);
	/* Deep enough to have needed several chunks, drained to merges. */
	assert_true(peak > 1000);
	free(m);
}

static void test_100k_live_allocations(void **state)
{
	struct alloc_table *t = *state;
	const int n = 100000;
	uint64_t s = seed ^ 0x100000, *order, size, id;
	double t0, t_ins, t_find, t_rm;
	struct alloc a;

	order = malloc((size_t)n * sizeof(*order));
	assert_non_null(order);
	for (int i = 0; i < n; i++)
		order[i] = (uint64_t)i;
	for (int i = n - 1; i > 0; i--) {
		uint64_t j = rnd_below(&s, (uint64_t)i + 1), x = order[i];

		order[i] = order[j];
		order[j] = x;
	}
	/* Slot i: base 0x7f3000000000 + i * 4 KiB, size in [1 KiB, 4 KiB]. */
	t0 = now_s();
	for (int i = 0; i < n; i++) {
		size = 1024 + order[i] % 3072;
		assert_int_equal(alloc_table_insert(t, 0x7f3000000000ull +
						    order[i] * 4096, size,
						    ALLOC_DEVICE, 0, &id), 0);
	}
	t_ins = now_s() - t0;
	assert_int_equal(alloc_table_count(t), (size_t)n);
	assert_int_equal(alloc_table_check(t), 0);

	t0 = now_s();
	for (uint64_t i = 0; i < (uint64_t)n; i++) {
		size = 1024 + i % 3072;
		assert_int_equal(alloc_table_find(t, 0x7f3000000000ull +
						  i * 4096 + size - 1, &a), 0);
		assert_int_equal(a.base, 0x7f3000000000ull + i * 4096);
		assert_int_equal(alloc_table_find(t, 0x7f3000000000ull +
						  i * 4096 + size, &a),
				 -ENOENT);
	}
	t_find = now_s() - t0;

	/* Free in another random order, checking on the way down. */
	for (int i = n - 1; i > 0; i--) {
		uint64_t j = rnd_below(&s, (uint64_t)i + 1), x = order[i];

		order[i] = order[j];
		order[j] = x;
	}
	t0 = now_s();
	for (int i = 0; i < n; i++) {
		assert_int_equal(alloc_table_remove(t, 0x7f3000000000ull +
						    order[i] * 4096, NULL), 0);
		if (i % 20000 == 0)
			assert_int_equal(alloc_table_check(t), 0);
	}
	t_rm = now_s() - t0;
	assert_int_equal(alloc_table_count(t), 0);
	assert_int_equal(alloc_table_bytes(t, -1), 0);
	/* No reader was ever inside: everything retired is already freed. */
	assert_int_equal(alloc_table_retired(t), 0);
	print_message("  100k: insert %.2f us/op, find %.3f us/op, "
		      "remove %.2f us/op\n", t_ins * 1e6 / n,
		      t_find * 1e6 / (2.0 * n), t_rm * 1e6 / n);
	free(order);
}

/*
 * Concurrency.  Each writer owns a region of 4 KiB spots; the allocation at
 * a spot, whenever it exists, has a size, kind and device that are a pure
 * function of its base, so a reader can tell any hit it gets is genuine.
 * Every 16th spot is inserted before the readers start and never removed:
 * those must always be found.
 */
#define STRESS_SPOTS 4096
#define STRESS_SPOT 4096ull

struct stress {
	struct alloc_table *t;
	int nwriters;
	_Atomic int stop;
	_Atomic unsigned long finds, hits, writes, errors;
	pthread_barrier_t *start;	/* NULL: start at once */
	int reads_per_thread;		/* > 0: stop after that many */
};

static uint64_t spot_base(int w, uint64_t spot)
{
	return 0x7e0000000000ull + ((uint64_t)w << 32) + spot * STRESS_SPOT;
}

static uint64_t spot_hash(uint64_t base)
{
	uint64_t h = base * 0x9e3779b97f4a7c15ull;

	return h ^ (h >> 29);
}

static uint64_t spot_size(uint64_t base)
{
	return 64 + spot_hash(base) % (STRESS_SPOT - 64);
}

static bool spot_stable(uint64_t spot)
{
	return spot % 16 == 0;
}

static int stress_insert(struct alloc_table *t, uint64_t base)
{
	uint64_t h = spot_hash(base);

	return alloc_table_insert(t, base, spot_size(base),
				  (enum alloc_kind)(h % ALLOC_KIND_COUNT),
				  (int)((h >> 8) & 0xff), NULL);
}

static void stress_fill_stable(struct stress *st)
{
	for (int w = 0; w < st->nwriters; w++)
		for (uint64_t p = 0; p < STRESS_SPOTS; p += 16)
			assert_int_equal(stress_insert(st->t, spot_base(w, p)),
					 0);
}

/* One lookup; counts an error for anything but a genuine hit or miss. */
static void stress_read_one(struct stress *st, uint64_t *s)
{
	int w = (int)rnd_below(s, (uint64_t)st->nwriters);
	uint64_t spot = rnd_below(s, STRESS_SPOTS);
	uint64_t base = spot_base(w, spot), h = spot_hash(base);
	uint64_t addr = base + rnd_below(s, STRESS_SPOT);
	bool inside = addr - base < spot_size(base);
	struct alloc a;
	int ret;

	ret = alloc_table_find(st->t, addr, &a);
	atomic_fetch_add_explicit(&st->finds, 1, memory_order_relaxed);
	if (ret == -ENOENT) {
		if (inside && spot_stable(spot))
			atomic_fetch_add(&st->errors, 1);
		return;
	}
	if (ret != 0 || !inside || a.base != base ||
	    a.size != spot_size(base) || a.id == 0 ||
	    a.kind != (enum alloc_kind)(h % ALLOC_KIND_COUNT) ||
	    a.device != (int)((h >> 8) & 0xff)) {
		atomic_fetch_add(&st->errors, 1);
		return;
	}
	atomic_fetch_add_explicit(&st->hits, 1, memory_order_relaxed);
}

static void *stress_reader(void *arg)
{
	struct stress *st = arg;
	uint64_t s = seed ^ (uint64_t)(uintptr_t)&s;

	if (st->start)
		pthread_barrier_wait(st->start);
	if (st->reads_per_thread > 0) {
		for (int i = 0; i < st->reads_per_thread; i++)
			stress_read_one(st, &s);
		return NULL;
	}
	while (!atomic_load_explicit(&st->stop, memory_order_relaxed))
		stress_read_one(st, &s);
	return NULL;
}

struct stress_writer_arg {
	struct stress *st;
	int w;
	/*
	 * Which spots are live.  Not on the heap: a forked child inherits it
	 * without the thread, and valgrind would call that a leak.
	 */
	bool live[STRESS_SPOTS];
};

static void *stress_writer(void *arg)
{
	struct stress_writer_arg *wa = arg;
	struct stress *st = wa->st;
	uint64_t s = seed ^ ((uint64_t)wa->w << 40), spot, base;
	bool *live = wa->live;
	int ret;

	while (!atomic_load_explicit(&st->stop, memory_order_relaxed)) {
		spot = rnd_below(&s, STRESS_SPOTS);
		if (spot_stable(spot))
			continue;
		base = spot_base(wa->w, spot);
		if (live[spot]) {
			ret = alloc_table_remove(st->t, base, NULL);
			live[spot] = false;
		} else {
			ret = stress_insert(st->t, base);
			live[spot] = true;
		}
		if (ret != 0)
			atomic_fetch_add(&st->errors, 1);
		atomic_fetch_add_explicit(&st->writes, 1, memory_order_relaxed);
	}
	return NULL;
}

static void test_concurrent_readers_writers(void **state)
{
	struct stress st = { .t = *state, .nwriters = 2 };
	static struct stress_writer_arg wa[2];
	pthread_t rd[4], wr[2];

	stress_fill_stable(&st);
	for (int i = 0; i < 4; i++)
		assert_int_equal(pthread_create(&rd[i], NULL, stress_reader,
						&st), 0);
	for (int w = 0; w < 2; w++) {
		wa[w] = (struct stress_writer_arg){ .st = &st, .w = w };
		assert_int_equal(pthread_create(&wr[w], NULL, stress_writer,
						&wa[w]), 0);
	}
	/* About one second; the readers and writers check as they go. */
	usleep(1000000);
	atomic_store(&st.stop, 1);
	for (int i = 0; i < 4; i++)
		pthread_join(rd[i], NULL);
	for (int w = 0; w < 2; w++)
		pthread_join(wr[w], NULL);

	print_message("  %lu finds (%lu hits), %lu writes\n",
		      atomic_load(&st.finds), atomic_load(&st.hits),
		      atomic_load(&st.writes));
	assert_int_equal(atomic_load(&st.errors), 0);
	assert_true(atomic_load(&st.finds) > 1000);
	assert_true(atomic_load(&st.hits) > 100);
	assert_true(atomic_load(&st.writes) > 100);
	assert_int_equal(alloc_table_check(st.t), 0);

	/* Readers gone: the next write frees every retired snapshot. */
	assert_int_equal(stress_insert(st.t, spot_base(5, 1)), 0);
	assert_int_equal(alloc_table_retired(st.t), 0);
}

/*
 * More reader threads than slots.  Parked threads take every slot (one
 * lookup each, then they wait, alive), so that the active readers can only
 * read through the counted fallback: nothing else protects their snapshots
 * from the writer.  Then every slot must come back when the threads exit.
 */
#define PARKED_THREADS (TEST_EBR_SLOTS + 8)
#define COUNTED_READERS 4

struct exhaust {
	struct stress st;
	_Atomic int parked;		/* threads that have read once */
	_Atomic int leave;
};

static void *parked_thread(void *arg)
{
	struct exhaust *ex = arg;
	uint64_t s = seed ^ (uint64_t)(uintptr_t)&s;

	stress_read_one(&ex->st, &s);
	atomic_fetch_add(&ex->parked, 1);
	while (!atomic_load(&ex->leave))
		usleep(1000);
	return NULL;
}

static void test_slot_exhaustion(void **state)
{
	static struct stress_writer_arg wa;
	pthread_t *parked, rd[COUNTED_READERS], wr;
	struct exhaust *ex;
	pthread_attr_t attr;
	int base_slots, full = 0, nparked = 0, nrd = 0;
	bool writer = false;

	ex = calloc(1, sizeof(*ex));
	parked = calloc(PARKED_THREADS, sizeof(*parked));
	assert_non_null(ex);
	assert_non_null(parked);
	ex->st = (struct stress){ .t = *state, .nwriters = 1 };
	stress_fill_stable(&ex->st);
	base_slots = alloc_table_slots_in_use();

	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 256 * 1024);
	/* No assert while threads run: it would leave the test. */
	for (; nparked < PARKED_THREADS; nparked++)
		if (pthread_create(&parked[nparked], &attr, parked_thread, ex))
			break;
	pthread_attr_destroy(&attr);
	if (nparked == PARKED_THREADS) {
		while (atomic_load(&ex->parked) < nparked)
			usleep(1000);
		full = alloc_table_slots_in_use();

		wa = (struct stress_writer_arg){ .st = &ex->st, .w = 0 };
		writer = pthread_create(&wr, NULL, stress_writer, &wa) == 0;
		for (; nrd < COUNTED_READERS; nrd++)
			if (pthread_create(&rd[nrd], NULL, stress_reader,
					   &ex->st))
				break;
		usleep(1000000);
		atomic_store(&ex->st.stop, 1);
		for (int i = 0; i < nrd; i++)
			pthread_join(rd[i], NULL);
		if (writer)
			pthread_join(wr, NULL);
		/* The active readers were counted, not slotted. */
		if (alloc_table_slots_in_use() != full)
			full = -1;
	}
	atomic_store(&ex->leave, 1);
	for (int i = 0; i < nparked; i++)
		pthread_join(parked[i], NULL);

	print_message("  %d parked threads, %d slots taken, %d counted "
		      "readers: %lu finds (%lu hits), %lu writes\n",
		      nparked, full, nrd, atomic_load(&ex->st.finds),
		      atomic_load(&ex->st.hits), atomic_load(&ex->st.writes));
	assert_int_equal(nparked, PARKED_THREADS);
	assert_int_equal(nrd, COUNTED_READERS);
	assert_true(writer);
	assert_int_equal(full, TEST_EBR_SLOTS);
	assert_int_equal(atomic_load(&ex->st.errors), 0);
	assert_true(atomic_load(&ex->st.finds) > 1000);
	assert_true(atomic_load(&ex->st.writes) > 100);
	/* Thread exit gave every slot back. */
	assert_int_equal(alloc_table_slots_in_use(), base_slots);
	/* No counted reader left behind: the next write frees everything. */
	assert_int_equal(stress_insert(ex->st.t, spot_base(5, 2)), 0);
	assert_int_equal(alloc_table_retired(ex->st.t), 0);
	/* The stable allocations outlived all of it. */
	assert_int_equal(alloc_table_find(ex->st.t, spot_base(0, 0), NULL), 0);

	free(parked);
	free(ex);
}

static void *one_find(void *arg)
{
	struct alloc_table *t = arg;

	return (void *)(intptr_t)alloc_table_find(t, 0x9000, NULL);
}

static void *no_find(void *arg)
{
	(void)arg;
	return NULL;
}

static void test_slot_released_at_thread_exit(void **state)
{
	struct alloc_table *t = *state;
	pthread_t th;
	void *ret;
	int before;

	assert_int_equal(alloc_table_insert(t, 0x9000, 0x10, ALLOC_DEVICE, 0,
					    NULL), 0);
	before = alloc_table_slots_in_use();
	for (int i = 0; i < 2 * TEST_EBR_SLOTS; i++) {
		assert_int_equal(pthread_create(&th, NULL, one_find, t), 0);
		pthread_join(th, &ret);
		assert_int_equal((intptr_t)ret, 0);
		assert_int_equal(alloc_table_slots_in_use(), before);
	}
	/* A thread that never reads takes no slot. */
	assert_int_equal(pthread_create(&th, NULL, no_find, NULL), 0);
	pthread_join(th, NULL);
	assert_int_equal(alloc_table_slots_in_use(), before);
}

struct global_race {
	pthread_barrier_t start;
	struct alloc_table *got[8];
};

struct global_arg {
	struct global_race *gr;
	int i;
};

static void *get_global(void *arg)
{
	struct global_arg *ga = arg;

	pthread_barrier_wait(&ga->gr->start);
	ga->gr->got[ga->i] = alloc_table_global();
	return NULL;
}

/* Must run before anything else touches the global table. */
static void test_global_created_once(void **state)
{
	struct global_race gr;
	struct global_arg ga[8];
	pthread_t th[8];

	(void)state;
	pthread_barrier_init(&gr.start, NULL, 8);
	for (int i = 0; i < 8; i++) {
		ga[i] = (struct global_arg){ &gr, i };
		assert_int_equal(pthread_create(&th[i], NULL, get_global,
						&ga[i]), 0);
	}
	for (int i = 0; i < 8; i++)
		pthread_join(th[i], NULL);
	pthread_barrier_destroy(&gr.start);
	assert_non_null(gr.got[0]);
	for (int i = 1; i < 8; i++)
		assert_ptr_equal(gr.got[i], gr.got[0]);
	assert_ptr_equal(alloc_table_global(), gr.got[0]);
}

/*
 * fork() while a writer hammers the global table and a reader sits in it.
 * Without the atfork handlers the child can inherit a held writer lock
 * (deadlock: alarm kills it) or the reader's stale announcement (nothing
 * ever reclaimed again).
 */
static int child_checks(struct alloc_table *g)
{
	struct alloc a;

	alarm(10);
	/* Only this thread's slot survives. */
	if (alloc_table_slots_in_use() != 1)
		return 2;
	if (alloc_table_check(g) != 0)
		return 3;
	if (alloc_table_insert(g, 0x7d0000000000ull, 64, ALLOC_DEVICE, 0,
			       NULL) != 0)
		return 4;
	if (alloc_table_find(g, 0x7d0000000010ull, &a) != 0 ||
	    a.base != 0x7d0000000000ull)
		return 5;
	if (alloc_table_remove(g, 0x7d0000000000ull, NULL) != 0)
		return 6;
	if (alloc_table_retired(g) != 0)
		return 7;
	if (alloc_table_find(g, spot_base(0, 0), NULL) != 0)
		return 8;
	return 0;
}

static void test_fork_child(void **state)
{
	static struct stress st;
	static struct stress_writer_arg wa;
	int status, forks = 20, bad_child = 0, bad_status = 0;
	pthread_t rd, wr;
	pid_t pid;

	(void)state;
	st = (struct stress){ .t = alloc_table_global(), .nwriters = 1 };
	wa = (struct stress_writer_arg){ .st = &st, .w = 0 };
	assert_non_null(st.t);
	/* What the preload does at init. */
	assert_int_equal(pthread_atfork(alloc_table_atfork_prepare,
					alloc_table_atfork_parent,
					alloc_table_atfork_child), 0);
	stress_fill_stable(&st);
	/* The forking thread owns a slot, which the child keeps. */
	assert_int_equal(alloc_table_find(st.t, spot_base(0, 0), NULL), 0);
	assert_int_equal(pthread_create(&rd, NULL, stress_reader, &st), 0);
	assert_int_equal(pthread_create(&wr, NULL, stress_writer, &wa), 0);
	usleep(20000);
	/* No assert until the threads are joined: it would leave the test. */
	for (int i = 0; i < forks && !bad_child; i++) {
		pid = fork();
		if (pid == 0)
			_exit(child_checks(st.t));
		if (pid < 0 || waitpid(pid, &status, 0) != pid ||
		    !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
			bad_child = i + 1;
			bad_status = status;
		}
		usleep(1000);
	}
	atomic_store(&st.stop, 1);
	pthread_join(rd, NULL);
	pthread_join(wr, NULL);
	if (bad_child)
		print_message("  fork %d: child status %#x\n", bad_child,
			      bad_status);
	assert_int_equal(bad_child, 0);
	assert_int_equal(atomic_load(&st.errors), 0);
	assert_true(atomic_load(&st.writes) > 0);
	assert_int_equal(alloc_table_check(st.t), 0);
}

/*
 * alloc_table_find_batch() answers as alloc_table_find() does, on the
 * memoized global table (also right after a removal: the memo must not
 * answer with the freed allocation) and on any other table.
 */
static void check_batch(struct alloc_table *t, uint64_t base)
{
	const uint64_t addr[6] = { base + 8, base - 8, base + 0x1000 + 64,
				   base + 8, 0, base + 0x2000 };
	struct alloc a0, a1, out[6];

	assert_int_equal(alloc_table_insert(t, base, 256, ALLOC_DEVICE, 0,
					    NULL), 0);
	assert_int_equal(alloc_table_insert(t, base + 0x1000, 256,
					    ALLOC_MANAGED, 0, NULL), 0);
	assert_int_equal(alloc_table_find(t, base, &a0), 0);
	assert_int_equal(alloc_table_find(t, base + 0x1000, &a1), 0);
	for (int round = 0; round < 2; round++) {	/* filled, then memo */
		memset(out, 0xff, sizeof(out));
		assert_int_equal(alloc_table_find_batch(t, addr, 6, out), 3);
		assert_int_equal(out[0].id, a0.id);
		assert_int_equal(out[0].base, base);
		assert_int_equal(out[1].id, 0);
		assert_int_equal(out[2].id, a1.id);
		assert_int_equal(out[2].kind, ALLOC_MANAGED);
		assert_int_equal(out[3].id, a0.id);
		assert_int_equal(out[4].id, 0);
		assert_int_equal(out[5].id, 0);
	}
	assert_int_equal(alloc_table_remove(t, base + 0x1000, NULL), 0);
	assert_int_equal(alloc_table_find_batch(t, addr, 6, out), 2);
	assert_int_equal(out[2].id, 0);
	assert_int_equal(alloc_table_find_cached(t, addr[2], NULL), -ENOENT);
	assert_int_equal(alloc_table_find_cached(t, addr[0], &a1), 0);
	assert_int_equal(a1.id, a0.id);
	assert_int_equal(alloc_table_remove(t, base, NULL), 0);
	assert_int_equal(alloc_table_find_batch(t, addr, 6, out), 0);
}

static void test_find_batch(void **state)
{
	struct alloc out[1];
	const uint64_t x = 0x1000;

	check_batch(*state, 0x7e0000000000ull);
	check_batch(alloc_table_global(), 0x7e0000100000ull);
	assert_int_equal(alloc_table_find_batch(NULL, &x, 1, out), -EINVAL);
	assert_int_equal(alloc_table_find_batch(*state, &x, 0, out), 0);
}

int main(void)
{
	const char *env = getenv("KMUX_TEST_SEED");
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_global_created_once),
		cmocka_unit_test_setup_teardown(test_insert_find_remove,
						setup_table, teardown_table),
		cmocka_unit_test_setup_teardown(test_boundaries,
						setup_table, teardown_table),
		cmocka_unit_test_setup_teardown(test_overlap_rejected,
						setup_table, teardown_table),
		cmocka_unit_test_setup_teardown(test_invalid_arguments,
						setup_table, teardown_table),
		cmocka_unit_test_setup_teardown(test_remove_unknown,
						setup_table, teardown_table),
		cmocka_unit_test_setup_teardown(test_ids_never_reused,
						setup_table, teardown_table),
		cmocka_unit_test_setup_teardown(test_bytes_per_kind,
						setup_table, teardown_table),
		cmocka_unit_test_setup_teardown(test_random_against_model,
						setup_table, teardown_table),
		cmocka_unit_test_setup_teardown(test_100k_live_allocations,
						setup_table, teardown_table),
		cmocka_unit_test_setup_teardown(test_concurrent_readers_writers,
						setup_table, teardown_table),
		cmocka_unit_test_setup_teardown(test_slot_exhaustion,
						setup_table, teardown_table),
		cmocka_unit_test_setup_teardown(
			test_slot_released_at_thread_exit,
			setup_table, teardown_table),
		cmocka_unit_test_setup_teardown(test_find_batch,
						setup_table, teardown_table),
		cmocka_unit_test(test_fork_child),
	};

	if (env)
		seed = strtoull(env, NULL, 0) | 1;
	return cmocka_run_group_tests(tests, NULL, NULL);
}
