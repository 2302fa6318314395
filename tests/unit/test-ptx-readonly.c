/*
 * test-ptx-readonly.c - which parameters the PTX analysis proves read-only:
 * hand-written bodies for each way a pointer can be written or escape, and
 * the entries of real nvcc output (tests/unit/ptx/).
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

#include "ptx-readonly.h"
#include "codec-dl.h"
#include "ptx-fixture.h"

/* An entry k(u64 p0, u64 p1, u64 p2) around body; its read-only mask. */
static uint64_t ro_of(const char *body)
{
	static char buf[8192];
	struct ptxro_module m;
	uint64_t ro;

	snprintf(buf, sizeof(buf),
		 ".version 8.0\n.target sm_90\n.address_size 64\n"
		 ".visible .entry k(\n\t.param .u64 k_param_0,\n"
		 "\t.param .u64 k_param_1,\n\t.param .u64 k_param_2\n)\n{\n"
		 "\t.reg .b64 %%rd<20>;\n\t.reg .b32 %%r<9>;\n"
		 "\tld.param.u64 %%rd1, [k_param_0];\n"
		 "\tld.param.u64 %%rd2, [k_param_1];\n"
		 "\tld.param.u64 %%rd3, [k_param_2];\n%s\n\tret;\n}\n", body);
	ptxro_module_init(&m);
	assert_int_equal(ptxro_parse(buf, strlen(buf), &m), 0);
	assert_int_equal(m.n, 1);
	assert_string_equal(m.e[0].name, "k");
	assert_int_equal(m.e[0].nparams, 3);
	ro = m.e[0].readonly;
	ptxro_module_release(&m);
	return ro;
}

/*
 * The extents of k(u64 p0, u64 p1, u64 p2) around body, as "p0[0,4)
 * p2[8,16)" (empty: none).
 */
static const char *ext_of(const char *body)
{
	static char buf[8192], out[256];
	struct ptxro_module m;
	size_t o = 0;

	snprintf(buf, sizeof(buf),
		 ".version 8.0\n.target sm_90\n.address_size 64\n"
		 ".visible .entry k(\n\t.param .u64 k_param_0,\n"
		 "\t.param .u64 k_param_1,\n\t.param .u64 k_param_2\n)\n{\n"
		 "\t.reg .b64 %%rd<20>;\n\t.reg .b32 %%r<9>;\n"
		 "\t.reg .pred %%p<3>;\n"
		 "\tld.param.u64 %%rd1, [k_param_0];\n"
		 "\tld.param.u64 %%rd2, [k_param_1];\n"
		 "\tld.param.u64 %%rd3, [k_param_2];\n%s\n\tret;\n}\n", body);
	ptxro_module_init(&m);
	assert_int_equal(ptxro_parse(buf, strlen(buf), &m), 0);
	assert_int_equal(m.n, 1);
	out[0] = '\0';
	for (int i = 0; i < 3; i++)
		if (m.e[0].has_extent >> i & 1)
			o += (size_t)snprintf(out + o, sizeof(out) - o,
					      "%sp%d[%lld,%lld)", o ? " " : "",
					      i, (long long)m.e[0].ext[i].lo,
					      (long long)m.e[0].ext[i].hi);
	ptxro_module_release(&m);
	return out;
}

static void test_extents_constant_offsets(void **state)
{
	(void)state;
	/* *out = v through cvta.to.global: 4 bytes at 0; p0 unused */
	assert_string_equal(ext_of("\tcvta.to.global.u64 %rd4, %rd3;\n"
				   "\tst.global.f32 [%rd4], %r1;"),
			    "p2[0,4)");
	/* mov, add of constants, negative offsets, vectors: the hull */
	assert_string_equal(ext_of("\tmov.b64 %rd4, %rd1;\n"
				   "\tadd.s64 %rd5, %rd4, 16;\n"
				   "\tcvta.to.global.u64 %rd6, %rd5;\n"
				   "\tld.global.v2.u32 {%r1, %r2}, [%rd6+-8];\n"
				   "\tst.global.v4.f32 [%rd6+4], {%r1,%r1,%r1,%r1};"),
			    "p0[8,36)");
	/* generic accesses on the generic pointer */
	assert_string_equal(ext_of("\tld.u8 %r1, [%rd2+3];\n"
				   "\tst.u16 [%rd2-2], %r1;"),
			    "p1[-2,4)");
	/* atomics and reductions at constant offsets, with their width */
	assert_string_equal(ext_of("\tcvta.to.global.u64 %rd4, %rd1;\n"
				   "\tatom.global.add.u64 %rd5, [%rd4+8], 1;\n"
				   "\tcvta.to.global.u64 %rd6, %rd3;\n"
				   "\tred.global.add.f32 [%rd6+12], %r1;\n"
				   "\tatom.global.cas.b32 %r2, [%rd6], %r1, 0;"),
			    "p0[8,16) p2[0,16)");
}

static void test_extents_rejected(void **state)
{
	(void)state;
	/* index arithmetic */
	assert_string_equal(ext_of("\tcvta.to.global.u64 %rd4, %rd1;\n"
				   "\tmul.wide.s32 %rd5, %r1, 4;\n"
				   "\tadd.s64 %rd6, %rd4, %rd5;\n"
				   "\tst.global.f32 [%rd6], %r1;"), "");
	/* a grid-stride pointer: add of a constant in a loop */
	assert_string_equal(ext_of("\tcvta.to.global.u64 %rd4, %rd1;\n"
				   "$L1:\n\tst.global.f32 [%rd4], %r1;\n"
				   "\tadd.s64 %rd4, %rd4, 4;\n"
				   "\t@%p1 bra $L1;"), "");
	/* the pointer stored (escapes); the store's own target is exact */
	assert_string_equal(ext_of("\tcvta.to.global.u64 %rd4, %rd2;\n"
				   "\tst.global.u64 [%rd4], %rd1;"),
			    "p1[0,8)");
	/* compared, converted, passed on, local round trip */
	assert_string_equal(ext_of("\tst.global.f32 [%rd1], %r1;\n"
				   "\tsetp.eq.s64 %p1, %rd1, 0;"), "");
	assert_string_equal(ext_of("\tst.global.f32 [%rd1], %r1;\n"
				   "\tcvt.u32.u64 %r2, %rd1;"), "");
	assert_string_equal(ext_of("\tst.local.u64 [%rd5], %rd1;\n"
				   "\tld.local.u64 %rd6, [%rd5];\n"
				   "\tst.global.f32 [%rd6], %r1;"), "");
	/* a global address used as a generic one, twice converted */
	assert_string_equal(ext_of("\tcvta.to.global.u64 %rd4, %rd1;\n"
				   "\tst.f32 [%rd4], %r1;"), "");
	assert_string_equal(ext_of("\tcvta.to.global.u64 %rd4, %rd1;\n"
				   "\tcvta.to.global.u64 %rd5, %rd4;\n"
				   "\tst.global.f32 [%rd5], %r1;"), "");
	/* two values joined in one register */
	assert_string_equal(ext_of("\tmov.u64 %rd4, %rd1;\n"
				   "\t@%p1 add.s64 %rd4, %rd1, 8;\n"
				   "\tst.global.f32 [%rd4], %r1;"), "");
	/* shared or other spaces, unknown widths, unknown instructions */
	assert_string_equal(ext_of("\tst.shared.f32 [%rd1], %r1;"), "");
	assert_string_equal(ext_of("\tst.global.async.f32 [%rd1], %r1;"), "");
	assert_string_equal(ext_of("\tst.global.f32 [%rd1], %r1;\n"
				   "\tprefetch.global.L2 [%rd1+64];"), "");
	/* a partial parameter load, an address taken */
	assert_string_equal(ext_of("\tld.param.u32 %r1, [k_param_0+4];\n"
				   "\tst.global.f32 [%rd1], %r1;"), "");
	assert_string_equal(ext_of("\tmov.u64 %rd4, k_param_0;\n"
				   "\tst.global.f32 [%rd1], %r1;"), "");
}

static void test_read_input_write_output(void **state)
{
	(void)state;
	assert_int_equal(ro_of("\tcvta.to.global.u64 %rd4, %rd1;\n"
			       "\tld.global.nc.u32 %r1, [%rd4+4];\n"
			       "\tcvta.to.global.u64 %rd5, %rd2;\n"
			       "\tst.global.u32 [%rd5], %r1;"), 0x5);
}

static void test_generic_store_after_cvta(void **state)
{
	(void)state;
	/* param 2 through arithmetic, a generic store (no state space) */
	assert_int_equal(ro_of("\tmul.wide.s32 %rd6, %r2, 4;\n"
			       "\tadd.s64 %rd7, %rd3, %rd6;\n"
			       "\tcvta.global.u64 %rd8, %rd7;\n"
			       "\tst.u32 [%rd8], %r1;"), 0x3);
}

static void test_local_round_trip(void **state)
{
	(void)state;
	/* p0 parked on the stack, loaded back, stored through */
	assert_int_equal(ro_of("\t.local .align 8 .b8 __local_depot0[16];\n"
			       "\tmov.u64 %SPL, __local_depot0;\n"
			       "\tst.local.u64 [%SPL], %rd1;\n"
			       "\tld.local.u64 %rd9, [%SPL];\n"
			       "\tst.global.u32 [%rd9], %r1;"), 0x6);
	/* the same through the generic stack pointer */
	assert_int_equal(ro_of("\tst.u64 [%SP+8], %rd2;\n"
			       "\tld.u64 %rd9, [%SP+8];\n"
			       "\tst.global.u32 [%rd9], %r1;"), 0x5);
	/* parked but only read back: still read-only */
	assert_int_equal(ro_of("\tst.local.u64 [%SPL], %rd1;\n"
			       "\tld.local.u64 %rd9, [%SPL];\n"
			       "\tld.global.u32 %r1, [%rd9];"), 0x7);
}

static void test_escape_into_memory(void **state)
{
	(void)state;
	/* p1's value stored to global memory: another kernel may write it */
	assert_int_equal(ro_of("\tst.global.u64 [%rd1], %rd2;"), 0x4);
	assert_int_equal(ro_of("\tst.shared.u64 [%rd10], %rd3;"), 0x3);
}

static void test_call_and_atomics(void **state)
{
	(void)state;
	assert_int_equal(ro_of("\t{\n\t.param .b64 param0;\n"
			       "\tst.param.b64 [param0], %rd2;\n"
			       "\tcall.uni foo, (param0);\n\t}"), 0x5);
	assert_int_equal(ro_of("\tatom.global.add.u32 %r1, [%rd3], 1;"), 0x3);
	assert_int_equal(ro_of("\tred.global.add.f32 [%rd1], %r1;"), 0x6);
	assert_int_equal(ro_of("\tcp.async.bulk.global.shared::cta.bulk_group "
			       "[%rd2], [%rd11], 64;"), 0x5);
	/* copy source only: read */
	assert_int_equal(ro_of("\tcp.async.ca.shared.global [%rd11], [%rd2], "
			       "16;"), 0x7);
}

static void test_unknown_is_write(void **state)
{
	(void)state;
	assert_int_equal(ro_of("\tfrobnicate.b64 %rd9, %rd2;"), 0x5);
	/* its result may be anything: stored through, all written */
	assert_int_equal(ro_of("\tfrobnicate.b64 %rd9, %r1;\n"
			       "\tst.global.u32 [%rd9], %r1;"), 0);
	/* unparseable statement: nothing proven */
	assert_int_equal(ro_of("\tadd.s64 %rd9, %rd1 # 3;"), 0);
	assert_int_equal(ro_of("\t.maxnreg 3;"), 0);
	/* a parameter's address taken */
	assert_int_equal(ro_of("\tmov.u64 %rd9, k_param_1;"), 0x5);
}

static void test_struct_param(void **state)
{
	static const char ptx[] =
		".visible .entry s(\n"
		"\t.param .align 8 .b8 s_param_0[24],\n"
		"\t.param .u32 s_param_1\n)\n.maxntid 256, 1, 1\n{\n"
		"\t.reg .b64 %rd<9>;\n"
		"\tld.param.u64 %rd1, [s_param_0+8];\n"
		"\tld.param.u64 %rd2, [s_param_0];\n"
		"\tst.global.u32 [%rd1], 1;\n\tret;\n}\n"
		".visible .entry t(.param .align 8 .b8 t_param_0[16])\n{\n"
		"\t.reg .b64 %rd<9>;\n"
		"\tld.param.v2.u64 {%rd1, %rd2}, [t_param_0];\n"
		"\tld.global.u32 %r1, [%rd2];\n\tret;\n}\n";
	struct ptxro_module m;

	(void)state;
	ptxro_module_init(&m);
	assert_int_equal(ptxro_parse(ptx, strlen(ptx), &m), 0);
	assert_int_equal(m.n, 2);
	/* any word of a by-value struct written through: the struct is */
	assert_int_equal(m.e[0].nparams, 2);
	assert_int_equal(m.e[0].size[0], 24);
	assert_int_equal(m.e[0].size[1], 4);
	assert_int_equal(m.e[0].readonly, 0x2);
	assert_int_equal(m.e[1].readonly, 0x1);
	ptxro_module_release(&m);
}

static void test_bad_text(void **state)
{
	static const char *bad[] = {
		".entry k(.param .u64 a\n{", ".entry (", ".entry k(.param x)",
		".entry k(.param .u64 a) { ld.param.u64 %r, [a]; ",
		"}", ".entry k() { \"unterminated }",
	};
	struct ptxro_module m;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ptxro_module_init(&m);
		assert_int_equal(ptxro_parse(bad[i], strlen(bad[i]), &m),
				 -EINVAL);
		for (int j = 0; j < m.n; j++)
			assert_int_equal(m.e[j].readonly, 0);
		ptxro_module_release(&m);
	}
}

static uint64_t ro_named(const struct ptxro_module *m, const char *name)
{
	for (int i = 0; i < m->n; i++)
		if (!strcmp(m->e[i].name, name))
			return m->e[i].readonly;
	fail_msg("no entry %s", name);
	return 0;
}

static const struct ptxro_entry *named(const struct ptxro_module *m,
				      const char *name)
{
	for (int i = 0; i < m->n; i++)
		if (!strcmp(m->e[i].name, name))
			return &m->e[i];
	fail_msg("no entry %s", name);
	return NULL;
}

/* The finalizers of stencil_dag and reductions; grid-stride kernels none. */
static void test_nvcc_extents(void **state)
{
	const struct ptxro_entry *e;
	struct ptxro_module m;
	size_t n;
	char *b;

	(void)state;
	ptxro_module_init(&m);
	b = slurp("tests/unit/ptx/stencil_dag.ptx", &n);
	assert_int_equal(ptxro_parse(b, n, &m), 0);
	free(b);
	e = named(&m, "_Z11k_sum_finalPKfiPf");
	assert_int_equal(e->has_extent, 0x4);
	assert_int_equal(e->ext[2].lo, 0);
	assert_int_equal(e->ext[2].hi, 4);
	for (int i = 0; i < m.n; i++)
		if (strcmp(m.e[i].name, "_Z11k_sum_finalPKfiPf"))
			assert_int_equal(m.e[i].has_extent, 0);
	ptxro_module_release(&m);

	ptxro_module_init(&m);
	b = slurp("tests/unit/ptx/reductions.ptx", &n);
	assert_int_equal(ptxro_parse(b, n, &m), 0);
	free(b);
	e = named(&m, "_Z11k_sum_finalPKxiPx");
	assert_int_equal(e->has_extent, 0x4);
	assert_int_equal(e->ext[2].lo, 0);
	assert_int_equal(e->ext[2].hi, 8);
	e = named(&m, "_Z11k_max_finalPKiiPi");
	assert_int_equal(e->has_extent, 0x4);
	assert_int_equal(e->ext[2].hi, 4);
	assert_int_equal(named(&m, "_Z13k_sum_partialPKilPx")->has_extent, 0);
	assert_int_equal(named(&m, "_Z12k_scan_applyPKillS0_Pi")->has_extent,
			 0);
	ptxro_module_release(&m);
}

/* The .globals verdict of entry name in m; fails when it is not there. */
static bool globals_named(const struct ptxro_module *m, const char *name)
{
	for (int i = 0; i < m->n; i++)
		if (strcmp(m->e[i].name, name) == 0)
			return m->e[i].globals;
	fail_msg("no entry %s", name);
	return false;
}

/* The .consts verdict of entry name in m; fails when it is not there. */
static bool consts_named(const struct ptxro_module *m, const char *name)
{
	for (int i = 0; i < m->n; i++)
		if (strcmp(m->e[i].name, name) == 0)
			return m->e[i].consts;
	fail_msg("no entry %s", name);
	return false;
}

/* Whether m lists variable name, of kind is_const, exactly once. */
static bool var_listed(const struct ptxro_module *m, const char *name,
		       bool is_const)
{
	int seen = 0;

	for (int i = 0; i < m->nvar; i++)
		if (strcmp(m->var[i].name, name) == 0)
			seen += m->var[i].is_const == is_const ? 1 : 100;
	return seen == 1;
}

/* Parse text (expecting ret) and give the .consts verdict of entry name. */
static bool consts_of(const char *text, const char *name, int ret)
{
	struct ptxro_module m;
	bool c;

	ptxro_module_init(&m);
	assert_int_equal(ptxro_parse(text, strlen(text), &m), ret);
	c = consts_named(&m, name);
	ptxro_module_release(&m);
	return c;
}

/* Parse text (expecting ret) and give the verdict of entry name. */
static bool globals_of(const char *text, const char *name, int ret)
{
	struct ptxro_module m;
	bool g;

	ptxro_module_init(&m);
	assert_int_equal(ptxro_parse(text, strlen(text), &m), ret);
	g = globals_named(&m, name);
	ptxro_module_release(&m);
	return g;
}

#define PTX_TOP ".version 8.0\n.target sm_90\n.address_size 64\n"

/*
 * Module-scope variables: which kernels reach a `__device__` variable
 * (nvcc's own output), and the declarations and calls around them.
 */
static void test_module_globals(void **state)
{
	struct ptxro_module m;
	size_t n;
	char *b;

	(void)state;
	ptxro_module_init(&m);
	b = slurp("tests/unit/ptx/globals.ptx", &n);
	assert_int_equal(ptxro_parse(b, n, &m), 0);
	free(b);
	assert_int_equal(m.n, 6);
	/* atomicInc on a __device__ counter; its reset, with no params */
	assert_true(globals_named(&m, "uses_counter"));
	assert_true(globals_named(&m, "reset"));
	/* an initialized __device__ array, read (still ordered: RW) */
	assert_true(globals_named(&m, "reads_table"));
	/* __constant__ only: the host writes it, by a copy kmux orders */
	assert_false(globals_named(&m, "plain"));
	/* printf: its format is a $str literal, vprintf is external */
	assert_false(globals_named(&m, "prints"));
	/* a non-inlined function of the text that writes through slot_ptr */
	assert_true(globals_named(&m, "calls_helper"));
	/*
	 * Constants: plain and reads_table name coef; the kernels reaching
	 * the __device__ ones count as reading them too (one may point to a
	 * constant); printf reaches neither.
	 */
	assert_true(consts_named(&m, "plain"));
	assert_true(consts_named(&m, "reads_table"));
	assert_true(consts_named(&m, "uses_counter"));
	assert_true(consts_named(&m, "reset"));
	assert_true(consts_named(&m, "calls_helper"));
	assert_false(consts_named(&m, "prints"));
	/* The variables as cuModuleGetGlobal names them; no $str. */
	assert_int_equal(m.nvar, 4);
	assert_true(var_listed(&m, "retirement", false));
	assert_true(var_listed(&m, "table", false));
	assert_true(var_listed(&m, "slot_ptr", false));
	assert_true(var_listed(&m, "coef", true));
	ptxro_module_release(&m);

	/* A constant read alone; a text without constants reads none. */
	assert_true(consts_of(PTX_TOP ".const .align 4 .b8 k_c[16];\n"
			      ".global .u32 g;\n"
			      ".visible .entry k()\n{\n\t.reg .b32 %r<2>;\n"
			      "\tld.const.u32 %r1, [k_c+4];\n\tret;\n}\n"
			      ".visible .entry j()\n{\n\tret;\n}\n", "k", 0));
	assert_false(globals_of(PTX_TOP ".const .align 4 .b8 k_c[16];\n"
				".global .u32 g;\n"
				".visible .entry k()\n{\n\t.reg .b32 %r<2>;\n"
				"\tld.const.u32 %r1, [k_c+4];\n\tret;\n}\n",
				"k", 0));
	assert_false(consts_of(PTX_TOP ".const .align 4 .b8 k_c[16];\n"
			       ".visible .entry j()\n{\n\tret;\n}\n", "j", 0));
	assert_false(consts_of(PTX_TOP ".global .u32 g;\n"
			       ".visible .entry k()\n{\n"
			       "\tst.global.u32 [g], 1;\n\tret;\n}\n", "k", 0));
	/* A call into the text, a .const not understood, a bad body. */
	assert_true(consts_of(PTX_TOP ".const .u32 c;\n.func f()\n{\n\tret;\n}\n"
			      ".visible .entry k()\n{\n\tcall.uni f, ();\n"
			      "\tret;\n}\n", "k", 0));
	assert_true(consts_of(PTX_TOP ".const .align 4 .u32 %weird;\n"
			      ".visible .entry k()\n{\n\tret;\n}\n", "k", 0));
	assert_true(consts_of(PTX_TOP ".const .u32 c;\n"
			      ".visible .entry k(.param .u64 k_p\n{\n"
			      "\tret;\n}\n", "k", -EINVAL));

	/* A name is a whole word: count2 and ld.global are not count. */
	assert_false(globals_of(PTX_TOP ".global .align 4 .u32 count;\n"
				".visible .entry k(.param .u64 k_p)\n{\n"
				"\t.reg .b64 %rd<3>;\n\t.reg .b32 %r<2>;\n"
				"\tld.param.u64 %rd1, [k_p];\n"
				"\tld.global.u32 %r1, [%rd1];\n"
				"\tmov.u64 %rd2, count2;\n\tret;\n}\n",
				"k", 0));
	/* Lists, array bounds, attributes: every name counts. */
	assert_true(globals_of(PTX_TOP ".visible .global .align 8 .b8 "
			       "a[16], b[8], c;\n"
			       ".global .attribute(.managed) .align 4 .u32 d;\n"
			       ".visible .entry k()\n{\n\t.reg .b64 %rd<2>;\n"
			       "\tmov.u64 %rd1, c;\n\tret;\n}\n", "k", 0));
	assert_true(globals_of(PTX_TOP ".global .attribute(.managed) .align 4 "
			       ".u32 d;\n.visible .entry k()\n{\n"
			       "\t.reg .b32 %r<2>;\n"
			       "\tld.global.u32 %r1, [d+4];\n\tret;\n}\n",
			       "k", 0));
	/* Declared after the entry (PTX allows no such use; still seen). */
	assert_true(globals_of(PTX_TOP ".visible .entry k()\n{\n"
			       "\tst.global.u32 [late], 1;\n\tret;\n}\n"
			       ".extern .global .align 4 .u32 late;\n", "k", 0));
	/* A call through a register may reach any function. */
	assert_true(globals_of(PTX_TOP ".global .u32 g;\n"
			       ".visible .entry k(.param .u64 k_p)\n{\n"
			       "\t.reg .b64 %rd<2>;\n"
			       "\tld.param.u64 %rd1, [k_p];\n"
			       "\tcall %rd1, (), proto;\n\tret;\n}\n", "k", 0));
	/* Calls into the text reach nothing when it has no variables. */
	assert_false(globals_of(PTX_TOP ".func f()\n{\n\tret;\n}\n"
				".visible .entry k()\n{\n\tcall.uni f, ();\n"
				"\tret;\n}\n", "k", 0));
	/* A declaration not understood: every kernel may reach it. */
	assert_true(globals_of(PTX_TOP ".global .align 4 .u32 %weird;\n"
			       ".visible .entry k()\n{\n\tret;\n}\n", "k", 0));
	/* An entry whose body was not understood: as any name. */
	assert_true(globals_of(PTX_TOP ".global .u32 g;\n"
			       ".visible .entry k(.param .u64 k_p\n{\n"
			       "\tret;\n}\n", "k", -EINVAL));
}

static void test_nvcc_output(void **state)
{
	struct ptxro_image_stats st = { 0 };
	struct ptxro_module m;
	size_t n;
	char *b;

	(void)state;
	ptxro_module_init(&m);
	b = slurp("tests/unit/ptx/image_pipeline.ptx", &n);
	assert_int_equal(ptxro_image_size(b, n), n);
	assert_int_equal(ptxro_scan_image(b, n, 0, &m, &st), 0);
	free(b);
	assert_int_equal(st.ptx, 1);
	assert_int_equal(st.bad, 0);
	assert_int_equal(st.calls, 0);	/* nvcc inlined everything */
	assert_int_equal(m.n, 7);
	/* every branch reads the frame's `in` (param 0), writes its output */
	assert_int_equal(ro_named(&m, "_Z8k_gauss5PKfPf"), 0x1);
	assert_int_equal(ro_named(&m, "_Z9k_unsharpPKfS0_Pf"), 0x3);
	assert_int_equal(ro_named(&m, "_Z9k_combinePKfS0_S0_S0_S0_Pf"), 0x1f);
	ptxro_module_release(&m);

	b = slurp("tests/unit/ptx/reductions.ptx", &n);
	assert_int_equal(ptxro_parse(b, n, &m), 0);
	free(b);
	assert_int_equal(ro_named(&m, "_Z13k_sum_partialPKilPx"), 0x3);
	assert_int_equal(ro_named(&m, "_Z12k_scan_applyPKillS0_Pi"), 0xb);
	ptxro_module_release(&m);

	b = slurp("tests/unit/ptx/mha.ptx", &n);
	assert_int_equal(ptxro_parse(b, n, &m), 0);
	free(b);
	/*
	 * Q, K read; the scale (param 3) flows into stored values, which
	 * counts as escaping: conservative for a scalar, never wrong.
	 */
	assert_int_equal(ro_named(&m, "_Z4k_qkPKfS0_Pff"), 0x3);
	assert_int_equal(ro_named(&m, "_Z9k_softmaxPf"), 0);
	ptxro_module_release(&m);
}

/* Overwrite the middle of the first PTX entry's payload with noise. */
static void corrupt_ptx_payload(char *b, size_t n)
{
	size_t off = 16;

	while (off + 80 <= n) {
		uint32_t ehs, psz;

		memcpy(&ehs, b + off + 4, 4);
		memcpy(&psz, b + off + 8, 4);
		if (b[off] == 1) {
			memset(b + off + ehs + 4, 0xa5, psz / 2);
			return;
		}
		off += ehs + psz;
	}
	fail_msg("no PTX entry to corrupt");
}

static void test_fatbin(void **state)
{
	struct ptxro_image_stats st = { 0 };
	struct ptxro_module m;
	size_t n;
	char *b;

	(void)state;
	ptxro_module_init(&m);
	b = slurp("tests/unit/ptx/image_pipeline-none.fatbin", &n);
	assert_int_equal(ptxro_image_size(b, n), n);
	assert_int_equal(ptxro_scan_image(b, n, 0, &m, &st), 0);
	assert_int_equal(st.ptx, 1);
	assert_int_equal(m.n, 7);
	assert_int_equal(ro_named(&m, "_Z6k_box7PKfPf"), 0x1);
	ptxro_module_release(&m);
	/* truncated: refused, nothing found */
	memset(&st, 0, sizeof(st));
	assert_int_equal(ptxro_image_size(b, n - 1), 0);
	assert_int_equal(ptxro_scan_image(b, n - 1, 0, &m, &st), 0);
	assert_int_equal(st.bad, 1);
	assert_int_equal(m.n, 0);
	free(b);

	/*
	 * CUDA 13's default: the PTX is zstd-compressed; decoded through
	 * libzstd.so.1 (dlopen), the same verdicts as the plain fatbin.
	 */
	memset(&st, 0, sizeof(st));
	b = slurp("tests/unit/ptx/image_pipeline-zstd.fatbin", &n);
	assert_int_equal(ptxro_scan_image(b, n, 0, &m, &st), 0);
	assert_int_equal(st.decompressed, 1);
	assert_int_equal(st.ptx, 1);
	assert_int_equal(st.compressed, 0);
	assert_int_equal(m.n, 7);
	assert_int_equal(ro_named(&m, "_Z6k_box7PKfPf"), 0x1);
	ptxro_module_release(&m);
	/* without a decoder: counted, skipped, nothing proven */
	memset(&st, 0, sizeof(st));
	codec_set_enabled(0);
	assert_int_equal(ptxro_scan_image(b, n, 0, &m, &st), 0);
	codec_set_enabled(1);
	assert_int_equal(st.compressed, 1);
	assert_int_equal(st.no_ptx, 1);
	assert_int_equal(m.n, 0);
	/* a damaged frame: malformed, nothing proven */
	memset(&st, 0, sizeof(st));
	corrupt_ptx_payload(b, n);
	assert_int_equal(ptxro_scan_image(b, n, 0, &m, &st), 0);
	assert_int_equal(st.bad, 1);
	assert_int_equal(st.decompressed, 0);
	assert_int_equal(m.n, 0);
	free(b);

	/* --compress-mode=speed: an LZ4 block, through liblz4.so.1 */
	memset(&st, 0, sizeof(st));
	b = slurp("tests/unit/ptx/image_pipeline-lz4.fatbin", &n);
	assert_int_equal(ptxro_scan_image(b, n, 0, &m, &st), 0);
	assert_int_equal(st.decompressed, 1);
	assert_int_equal(m.n, 7);
	assert_int_equal(ro_named(&m, "_Z6k_box7PKfPf"), 0x1);
	ptxro_module_release(&m);
	free(b);

	/* an ELF cubin has no PTX */
	memset(&st, 0, sizeof(st));
	assert_int_equal(ptxro_scan_image("\x7f" "ELF\2\1\1", 8, 0, &m, &st), 0);
	assert_int_equal(st.no_ptx, 1);
}

/*
 * Call instructions are counted over the whole text (ctx-stack.c), with or
 * without a guard predicate, inside braces, whatever the modifiers; a
 * comment, a directive or a label that begins with "call" is not one.  A
 * scan without a module counts the same and parses nothing.
 */
static void test_count_calls(void **state)
{
	static const char text[] =
		".version 8.0\n.target sm_90\n.address_size 64\n"
		".callprototype (.param .b32 _) _ (.param .b32 _);\n"
		".func (.param .b32 r) f(.param .b32 n)\n{\n\tret;\n}\n"
		".visible .entry k(.param .u64 p)\n{\n"
		"\t.reg .pred %p<2>;\n"
		"\t// call f, a comment\n"
		"callme:\n"
		"\t{ .param .b32 a; .param .b32 b;\n"
		"\tcall.uni (b), f, (a);\n\t}\n"
		"\t@%p1 call (b), f, (a);\n"
		"\t@!%p1 call.uni f;\n"
		"\tret;\n}\n";
	struct ptxro_image_stats st = { 0 }, bare = { 0 };
	struct ptxro_module m;

	(void)state;
	ptxro_module_init(&m);
	assert_int_equal(ptxro_scan_image(text, sizeof(text), 0, &m, &st), 0);
	assert_int_equal(st.ptx, 1);
	assert_int_equal(st.calls, 3);
	ptxro_module_release(&m);
	assert_int_equal(ptxro_scan_image(text, sizeof(text), 0, NULL, &bare),
			 0);
	assert_int_equal(bare.ptx, 1);
	assert_int_equal(bare.calls, 3);
	assert_int_equal(bare.bad, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_extents_constant_offsets),
		cmocka_unit_test(test_extents_rejected),
		cmocka_unit_test(test_nvcc_extents),
		cmocka_unit_test(test_read_input_write_output),
		cmocka_unit_test(test_generic_store_after_cvta),
		cmocka_unit_test(test_local_round_trip),
		cmocka_unit_test(test_escape_into_memory),
		cmocka_unit_test(test_call_and_atomics),
		cmocka_unit_test(test_unknown_is_write),
		cmocka_unit_test(test_struct_param),
		cmocka_unit_test(test_bad_text),
		cmocka_unit_test(test_nvcc_output),
		cmocka_unit_test(test_module_globals),
		cmocka_unit_test(test_fatbin),
		cmocka_unit_test(test_count_calls),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
