/*
 * test-ptx-range.c - ranges of pointer parameters by launch geometry
 * (src/preload/ptx-range.c, built by ptx-readonly.c's parser): hand-written
 * bodies for each rule (thread index, guards, loops and their trip counts,
 * x - (x & m), what leaves a parameter without a range), and nvcc's output
 * for bench/apps/mha.cu, whose per-head slices must come out exact.
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "ptx-range.h"
#include "ptx-readonly.h"
#include "ptx-fixture.h"

/*
 * What k(u64 p0, u64 p1, u32 n) around body reaches through its pointers
 * for grid x block threads (x only), as "p0[0,4) p1[8,16)"; "-" when
 * nothing is known.  As kparams merges them: an exact extent, else a range.
 */
static const char *range_of(const char *body, unsigned grid, unsigned block)
{
	static char buf[16384], out[256];
	struct ptxr_geom g = { { grid, 1, 1 }, { block, 1, 1 } };
	int64_t lo[PTXR_MAX_PARAMS], hi[PTXR_MAX_PARAMS];
	struct ptxro_module m;
	uint64_t has = 0;
	size_t o = 0;

	snprintf(buf, sizeof(buf),
		 ".version 8.0\n.target sm_90\n.address_size 64\n"
		 ".visible .entry k(\n\t.param .u64 k_param_0,\n"
		 "\t.param .u64 k_param_1,\n\t.param .u32 k_param_2\n)\n{\n"
		 "\t.reg .b64 %%rd<20>;\n\t.reg .b32 %%r<20>;\n"
		 "\t.reg .pred %%p<5>;\n"
		 "\tld.param.u64 %%rd1, [k_param_0];\n"
		 "\tld.param.u64 %%rd2, [k_param_1];\n"
		 "\tld.param.u32 %%r1, [k_param_2];\n"
		 "\tcvta.to.global.u64 %%rd3, %%rd1;\n"
		 "\tcvta.to.global.u64 %%rd4, %%rd2;\n"
		 "\tmov.u32 %%r2, %%tid.x;\n"
		 "\tmov.u32 %%r3, %%ctaid.x;\n"
		 "\tmov.u32 %%r4, %%ntid.x;\n%s\n$Lend:\n\tret;\n}\n", body);
	ptxro_module_init(&m);
	assert_int_equal(ptxro_parse(buf, strlen(buf), &m), 0);
	assert_int_equal(m.n, 1);
	if (m.e[0].range)
		assert_int_equal(ptxr_solve(m.e[0].range, &g, &has, lo, hi), 0);
	out[0] = '\0';
	for (int j = 0; j < 3; j++) {
		if (m.e[0].has_extent >> j & 1) {
			has |= (uint64_t)1 << j;
			lo[j] = m.e[0].ext[j].lo;
			hi[j] = m.e[0].ext[j].hi;
		}
		if (has >> j & 1)
			o += (size_t)snprintf(out + o, sizeof(out) - o,
					      "%sp%d[%lld,%lld)", o ? " " : "",
					      j, (long long)lo[j],
					      (long long)hi[j]);
	}
	ptxro_module_release(&m);
	return o ? out : "-";
}

/* p0[tid.x] = p1[tid.x]: the block size bounds both. */
static const char thread_index[] =
	"\tmul.wide.u32 %rd5, %r2, 4;\n"
	"\tadd.s64 %rd6, %rd3, %rd5;\n"
	"\tadd.s64 %rd7, %rd4, %rd5;\n"
	"\tld.global.f32 %f1, [%rd7];\n"
	"\tst.global.f32 [%rd6], %f1;\n";

static void test_thread_index(void **state)
{
	(void)state;
	assert_string_equal(range_of(thread_index, 1, 1), "p0[0,4) p1[0,4)");
	assert_string_equal(range_of(thread_index, 8, 256),
			    "p0[0,1024) p1[0,1024)");
}

/* i = ctaid * ntid + tid; if (i < 1000) p0[i] = 0: the guard bounds it. */
static const char guarded[] =
	"\tmad.lo.s32 %r5, %r3, %r4, %r2;\n"
	"\tsetp.gt.s32 %p1, %r5, 999;\n"
	"\t@%p1 bra $Lend;\n"
	"\tmul.wide.s32 %rd5, %r5, 4;\n"
	"\tadd.s64 %rd6, %rd3, %rd5;\n"
	"\tst.global.u32 [%rd6], 0;\n";

/* The same guard on the scalar parameter n: nothing bounds i above. */
static const char guarded_by_n[] =
	"\tmad.lo.s32 %r5, %r3, %r4, %r2;\n"
	"\tsetp.ge.s32 %p1, %r5, %r1;\n"
	"\t@%p1 bra $Lend;\n"
	"\tmul.wide.s32 %rd5, %r5, 4;\n"
	"\tadd.s64 %rd6, %rd3, %rd5;\n"
	"\tst.global.u32 [%rd6], 0;\n";

static void test_guards(void **state)
{
	(void)state;
	/* 64 x 256 threads, but only i <= 999 store. */
	assert_string_equal(range_of(guarded, 64, 256), "p0[0,4000)");
	/* 2 x 256: fewer threads than the guard allows. */
	assert_string_equal(range_of(guarded, 2, 256), "p0[0,2048)");
	/* i < n, n unknown: i is still below the grid's thread count. */
	assert_string_equal(range_of(guarded_by_n, 2, 256), "p0[0,2048)");
}

/*
 * for (r = warp; r < 64; r += nwarps) for (j = lane; j < 64; j += 32)
 * p0[r * 64 + j]: the inner loop strength-reduced to a pointer bumped by
 * 128 bytes, its trip count from the counter j (nvcc's shape).
 */
static const char rows[] =
	"\tand.b32 %r5, %r2, 31;\n"
	"\tshr.u32 %r6, %r2, 5;\n"
	"\tshr.u32 %r7, %r4, 5;\n"
	"\tsetp.gt.u32 %p1, %r6, 63;\n"
	"\t@%p1 bra $Lend;\n"
	"$Lrow:\n"
	"\tshl.b32 %r8, %r6, 6;\n"
	"\tadd.s32 %r9, %r8, %r5;\n"
	"\tmul.wide.u32 %rd5, %r9, 4;\n"
	"\tadd.s64 %rd6, %rd3, %rd5;\n"
	"\tmov.u32 %r10, %r5;\n"
	"$Lcol:\n"
	"\tst.global.f32 [%rd6], 0f00000000;\n"
	"\tadd.s64 %rd6, %rd6, 128;\n"
	"\tadd.s32 %r10, %r10, 32;\n"
	"\tsetp.lt.u32 %p2, %r10, 64;\n"
	"\t@%p2 bra $Lcol;\n"
	"\tadd.s32 %r6, %r6, %r7;\n"
	"\tsetp.lt.u32 %p3, %r6, 64;\n"
	"\t@%p3 bra $Lrow;\n";

static void test_loops(void **state)
{
	(void)state;
	/* 64 rows of 64 floats: exactly 16 KiB, whatever the geometry. */
	assert_string_equal(range_of(rows, 1, 32), "p0[0,16384)");
	assert_string_equal(range_of(rows, 4, 128), "p0[0,16384)");
}

/* A pointer bumped in a loop whose bound is the scalar n: unbounded. */
static const char unbounded_loop[] =
	"\tmov.u32 %r5, 0;\n"
	"$Lloop:\n"
	"\tst.global.u32 [%rd3], 0;\n"
	"\tadd.s64 %rd3, %rd3, 4;\n"
	"\tadd.s32 %r5, %r5, 1;\n"
	"\tsetp.lt.s32 %p1, %r5, %r1;\n"
	"\t@%p1 bra $Lloop;\n";

/* The same with a constant bound: 10 words. */
static const char counted_loop[] =
	"\tmov.u32 %r5, 0;\n"
	"$Lloop:\n"
	"\tst.global.u32 [%rd3], 0;\n"
	"\tadd.s64 %rd3, %rd3, 4;\n"
	"\tadd.s32 %r5, %r5, 1;\n"
	"\tsetp.lt.s32 %p1, %r5, 10;\n"
	"\t@%p1 bra $Lloop;\n";

/* The counter stepped twice per iteration: not an induction variable. */
static const char twice_stepped[] =
	"\tmov.u32 %r5, 0;\n"
	"$Lloop:\n"
	"\tst.global.u32 [%rd3], 0;\n"
	"\tadd.s64 %rd3, %rd3, 4;\n"
	"\tadd.s32 %r5, %r5, 1;\n"
	"\tadd.s32 %r5, %r5, -1;\n"
	"\tsetp.lt.s32 %p1, %r5, 10;\n"
	"\t@%p1 bra $Lloop;\n";

static void test_trip_counts(void **state)
{
	(void)state;
	assert_string_equal(range_of(unbounded_loop, 1, 1), "-");
	assert_string_equal(range_of(counted_loop, 1, 1), "p0[0,40)");
	assert_string_equal(range_of(twice_stepped, 1, 1), "-");
}

/* col = t - (t & -32) = t & 31 (nvcc's t % 32 for t >= 0), row = t >> 5. */
static const char modulo[] =
	"\tand.b32 %r5, %r2, -32;\n"
	"\tsub.s32 %r6, %r2, %r5;\n"
	"\tshr.u32 %r7, %r2, 5;\n"
	"\tshl.b32 %r8, %r7, 8;\n"
	"\tadd.s32 %r9, %r8, %r6;\n"
	"\tmul.wide.u32 %rd5, %r9, 4;\n"
	"\tadd.s64 %rd6, %rd3, %rd5;\n"
	"\tst.global.u32 [%rd6], 0;\n";

static void test_modulo(void **state)
{
	(void)state;
	/* 64 threads: rows 0..1 of 256 words, columns 0..31. */
	assert_string_equal(range_of(modulo, 1, 64), "p0[0,1152)");
}

/* What leaves a parameter without a range. */
static const char stored_pointer[] =
	"\tst.global.u64 [%rd4], %rd3;\n"
	"\tst.global.u32 [%rd3], 0;\n";
static const char pointer_through_memory[] =
	"\tld.global.u64 %rd5, [%rd4];\n"
	"\tst.global.u32 [%rd5], 0;\n";
/* p0 stored through p1 as half of a vector store. */
static const char stored_in_vector[] =
	"\tmov.u64 %rd5, 0;\n"
	"\tst.global.v2.u64 [%rd4], {%rd3, %rd5};\n"
	"\tst.global.u32 [%rd3], 0;\n";
static const char two_params_mixed[] =
	"\tsub.s64 %rd5, %rd4, %rd3;\n"
	"\tadd.s64 %rd6, %rd3, %rd5;\n"
	"\tst.global.u32 [%rd6], 0;\n";

static void test_no_range(void **state)
{
	(void)state;
	/* p0 escapes into memory; p1 is still exact. */
	assert_string_equal(range_of(stored_pointer, 1, 1), "p1[0,8)");
	/* p1's memory holds a pointer: the store through it is not p1's. */
	assert_string_equal(range_of(pointer_through_memory, 1, 1), "p1[0,8)");
	/* The same through a vector: p0 escapes, p1 is exact (16 bytes). */
	assert_string_equal(range_of(stored_in_vector, 1, 1), "p1[0,16)");
	/* p0 + (p1 - p0) reaches p1's memory: neither has a range. */
	assert_string_equal(range_of(two_params_mixed, 1, 1), "-");
}

/*
 * The branch tests a setp whose operand changes before the branch: no
 * narrowing (and no read outside the program: this crashed once).
 */
static const char stale_setp[] =
	"\tsetp.gt.s32 %p1, %r2, 3;\n"
	"\tadd.s32 %r2, %r2, 100;\n"
	"\t@%p1 bra $Lend;\n"
	"\tmul.wide.u32 %rd5, %r2, 4;\n"
	"\tadd.s64 %rd6, %rd3, %rd5;\n"
	"\tst.global.u32 [%rd6], 0;\n";

static void test_stale_setp(void **state)
{
	(void)state;
	/* 8 threads: tid + 100 in 100..107 whatever the branch did. */
	assert_string_equal(range_of(stale_setp, 1, 8), "p0[400,432)");
}

/* One label name twice (scopes): the branch's target is ambiguous. */
static const char label_twice[] =
	"\tsetp.gt.s32 %p1, %r2, 3;\n"
	"\t@%p1 bra $Lx;\n"
	"\t{\n$Lx:\n\tst.global.u32 [%rd3], 0;\n\t}\n"
	"$Lx:\n"
	"\tmul.wide.u32 %rd5, %r2, 4;\n"
	"\tadd.s64 %rd6, %rd3, %rd5;\n"
	"\tst.global.u32 [%rd6], 0;\n";

/* A branch to a label the body never defines (and no label at all). */
static const char label_missing[] =
	"\tsetp.gt.s32 %p1, %r2, 3;\n"
	"\t@%p1 bra $Lnowhere;\n"
	"\tmul.wide.u32 %rd5, %r2, 4;\n"
	"\tadd.s64 %rd6, %rd3, %rd5;\n"
	"\tst.global.u32 [%rd6], 0;\n";

static void test_label_twice(void **state)
{
	struct ptxr_geom g = { { 1, 1, 1 }, { 8, 1, 1 } };
	int64_t lo[PTXR_MAX_PARAMS], hi[PTXR_MAX_PARAMS];
	static const char no_labels[] =
		".version 8.0\n.target sm_90\n.address_size 64\n"
		".visible .entry k(\n\t.param .u64 k_param_0\n)\n{\n"
		"\tld.param.u64 %rd1, [k_param_0];\n"
		"\tsetp.gt.s32 %p1, %r2, 3;\n"
		"\t@%p1 bra $Lnowhere;\n"
		"\tst.global.u32 [%rd1], 0;\n\tret;\n}\n";
	struct ptxro_module m;
	uint64_t has = 1;

	(void)state;
	assert_string_equal(range_of(label_twice, 1, 8), "-");
	assert_string_equal(range_of(label_missing, 1, 8), "-");
	/* No label at all (the fuzzer's find: no table to look in). */
	ptxro_module_init(&m);
	assert_int_equal(ptxro_parse(no_labels, strlen(no_labels), &m), 0);
	assert_int_equal(m.n, 1);
	if (m.e[0].range)
		assert_int_equal(ptxr_solve(m.e[0].range, &g, &has, lo, hi),
				 0);
	else
		has = 0;
	assert_int_equal(has, 0);
	ptxro_module_release(&m);
}

/* bench/apps/mha.cu: 16 heads of L = 2048, D = 64, one head per launch. */
static void test_mha(void **state)
{
	static const struct {
		const char *entry;
		int param;
		int64_t hi;
	} want[] = {
		{ "_Z4k_qkPKfS0_Pff", 0, 2048 * 64 * 4 },	/* Q_h */
		{ "_Z4k_qkPKfS0_Pff", 2, 2048 * 2048 * 4 },	/* S_h */
		{ "_Z9k_softmaxPf", 0, 2048 * 2048 * 4 },
		{ "_Z4k_avPKfS0_Pf", 2, 2048 * 64 * 4 },	/* O_h */
		{ "_Z7k_mergePKfPf", 0, 16 * 2048 * 64 * 4 },	/* all O */
	};
	struct ptxr_geom g = { { 32, 1, 1 }, { 256, 1, 1 } };
	struct ptxro_module m;
	size_t n;
	char *b = slurp("tests/unit/ptx/mha.ptx", &n);

	(void)state;
	ptxro_module_init(&m);
	assert_int_equal(ptxro_parse(b, n, &m), 0);
	for (size_t w = 0; w < sizeof(want) / sizeof(want[0]); w++) {
		int64_t lo[PTXR_MAX_PARAMS], hi[PTXR_MAX_PARAMS];
		uint64_t has = 0;
		int i;

		for (i = 0; i < m.n; i++)
			if (!strcmp(m.e[i].name, want[w].entry))
				break;
		assert_true(i < m.n);
		assert_non_null(m.e[i].range);
		assert_int_equal(ptxr_solve(m.e[i].range, &g, &has, lo, hi),
				 0);
		assert_true(has >> want[w].param & 1);
		assert_int_equal(lo[want[w].param], 0);
		assert_int_equal(hi[want[w].param], want[w].hi);
	}
	ptxro_module_release(&m);
	free(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_thread_index),
		cmocka_unit_test(test_guards),
		cmocka_unit_test(test_loops),
		cmocka_unit_test(test_trip_counts),
		cmocka_unit_test(test_modulo),
		cmocka_unit_test(test_no_range),
		cmocka_unit_test(test_stale_setp),
		cmocka_unit_test(test_label_twice),
		cmocka_unit_test(test_mha),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
