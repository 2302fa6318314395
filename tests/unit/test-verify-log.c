/*
 * test-verify-log.c - unit tests of `kmux verify`'s log reader and
 * comparison (src/cli/verify-log.c) and of the --streams argument,
 * KMUX_BARRIER_KERNELS check and environment `kmux run` and `kmux verify`
 * share (src/cli/run-env.c).
 * Logs are untrusted text: malformed lines, missing or repeated copy
 * numbers are errors, never crashes; comparison is in order for one
 * thread, as a set for several; the "sched" records say whether the
 * scheduled run was scheduled at all.
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

#include "cli/run-env.h"
#include "cli/verify-log.h"

static int read_text(const char *text, struct vlog *l)
{
	char err[128];
	FILE *f = fmemopen((void *)text, strlen(text), "r");
	int r;

	assert_non_null(f);
	r = vlog_read(f, l, err, sizeof(err));
	fclose(f);
	return r;
}

static const char *const good =
	"# comment\n"
	"copy pid=10 idx=1 thr=1 bytes=8 hash=00000000000000ff kernels=a,b\n"
	"\n"
	"copy pid=10 idx=0 thr=1 bytes=4 hash=- kernels=-\n"
	"copy pid=11 idx=0 thr=1 bytes=16 hash=0123456789abcdef kernels=k\n";

static void test_read(void **state)
{
	struct vlog l;

	(void)state;
	assert_int_equal(read_text(good, &l), 0);
	assert_int_equal(l.n, 2);
	assert_int_equal(vlog_count(&l), 3);
	assert_int_equal(l.proc[0].pid, 10);
	assert_int_equal(l.proc[0].n, 2);
	/* Sorted by number. */
	assert_int_equal(l.proc[0].copy[0].idx, 0);
	assert_int_equal(l.proc[0].copy[0].hashed, 0);
	assert_string_equal(l.proc[0].copy[0].kernels, "-");
	assert_int_equal(l.proc[0].copy[1].hash, 0xff);
	assert_string_equal(l.proc[0].copy[1].kernels, "a,b");
	assert_int_equal(l.proc[1].copy[0].hash, 0x0123456789abcdefull);
	vlog_release(&l);
}

static void test_bad_lines(void **state)
{
	static const char *const bad[] = {
		"copy pid=1 idx=0 thr=1 bytes=4 hash=12 kernels=a\n",
		"copy pid=1 idx=0 thr=1 bytes=4 hash=zz00000000000000 kernels=a\n",
		"copy pid=1 idx=0 thr=0 bytes=4 hash=- kernels=a\n",
		"copy pid=1 idx=0 bytes=4 hash=- kernels=a\n",
		"copy pid=x idx=0 thr=1 bytes=4 hash=- kernels=a\n",
		"copy pid=1 idx=0 thr=1 bytes=4 hash=- kernels=\n",
		"copy pid=1 idx=0 thr=1 bytes=4 hash=- kernels=a b\n",
		"copy pid=1 idx=-1 thr=1 bytes=4 hash=- kernels=a\n",
		"kopy pid=1 idx=0 thr=1 bytes=4 hash=- kernels=a\n",
		"copy pid=1 idx=0 thr=1 bytes=4 hash=- kernels=a\x01\n",
		/* Numbering: a gap, a repeat. */
		"copy pid=1 idx=1 thr=1 bytes=4 hash=- kernels=a\n",
		"copy pid=1 idx=0 thr=1 bytes=4 hash=- kernels=a\n"
		"copy pid=1 idx=0 thr=1 bytes=4 hash=- kernels=a\n",
		NULL,
	};
	struct vlog l;

	(void)state;
	for (int i = 0; bad[i]; i++) {
		assert_int_not_equal(read_text(bad[i], &l), 0);
		vlog_release(&l);
	}
}

static void test_compare_in_order(void **state)
{
	const char *b_same = good;
	const char *b_diff =
		"copy pid=20 idx=0 thr=1 bytes=4 hash=- kernels=-\n"
		"copy pid=20 idx=1 thr=1 bytes=8 hash=00000000000000fe kernels=a,b\n"
		"copy pid=21 idx=0 thr=1 bytes=16 hash=0123456789abcdef kernels=k\n";
	const char *b_short =
		"copy pid=20 idx=0 thr=1 bytes=4 hash=- kernels=-\n";
	struct vlog a, b;
	struct vlog_diff d;

	(void)state;
	assert_int_equal(read_text(good, &a), 0);
	assert_int_equal(read_text(b_same, &b), 0);
	assert_int_equal(vlog_compare(&a, &b, &d), 0);
	vlog_release(&b);

	assert_int_equal(read_text(b_diff, &b), 0);
	assert_int_equal(vlog_compare(&a, &b, &d), 1);
	assert_int_equal(d.proc, 0);
	assert_int_equal(d.pos, 1);
	assert_string_equal(d.what, "different contents");
	assert_int_equal(d.a->hash, 0xff);
	assert_int_equal(d.b->hash, 0xfe);
	vlog_release(&b);

	assert_int_equal(read_text(b_short, &b), 0);
	assert_int_equal(vlog_compare(&a, &b, &d), 1);
	assert_int_equal(d.pos, 1);
	assert_null(d.b);
	vlog_release(&b);
	vlog_release(&a);
}

/* Several threads: the same copies in another interleaving are the same. */
static void test_compare_threads(void **state)
{
	const char *a_text =
		"copy pid=1 idx=0 thr=1 bytes=4 hash=0000000000000001 kernels=x\n"
		"copy pid=1 idx=1 thr=2 bytes=4 hash=0000000000000002 kernels=y\n"
		"copy pid=1 idx=2 thr=1 bytes=4 hash=0000000000000003 kernels=x\n";
	const char *b_same =
		"copy pid=2 idx=0 thr=1 bytes=4 hash=0000000000000002 kernels=y\n"
		"copy pid=2 idx=1 thr=2 bytes=4 hash=0000000000000003 kernels=x\n"
		"copy pid=2 idx=2 thr=2 bytes=4 hash=0000000000000001 kernels=x\n";
	const char *b_diff =
		"copy pid=2 idx=0 thr=1 bytes=4 hash=0000000000000002 kernels=y\n"
		"copy pid=2 idx=1 thr=2 bytes=4 hash=0000000000000009 kernels=x\n"
		"copy pid=2 idx=2 thr=2 bytes=4 hash=0000000000000001 kernels=x\n";
	struct vlog a, b;
	struct vlog_diff d;

	(void)state;
	assert_int_equal(read_text(a_text, &a), 0);
	assert_int_equal(a.proc[0].threads, 2);
	assert_int_equal(read_text(b_same, &b), 0);
	assert_int_equal(vlog_compare(&a, &b, &d), 0);
	vlog_release(&b);
	assert_int_equal(read_text(b_diff, &b), 0);
	assert_int_equal(vlog_compare(&a, &b, &d), 1);
	/* The unmatched copy of the first run: hash 3, copy 2. */
	assert_non_null(d.a);
	assert_int_equal(d.a->hash, 3);
	assert_int_equal(d.pos, 2);
	vlog_release(&b);
	vlog_release(&a);
}

/* "sched" records: summed per run, not copies, and strictly parsed. */
static void test_sched(void **state)
{
	static const char *const bad[] = {
		"sched pid=1 streams=4 contexts=1 off=0\n",
		"sched pid=1 streams=65 contexts=1 off=0 ops=3\n",
		"sched pid=1 streams=4 contexts=1 off=0 ops=3 x=1\n",
		"sched pid=1 streams=4 contexts=1 off=0 ops=-3\n",
		"sched pid=1 streams=4 off=0 contexts=1 ops=3\n",
		"sched pid=1 streams=4 contexts=4294967296 off=0 ops=3\n",
		"sched pid=1 streams=4 contexts=1 off=0 ops=18446744073709551616\n",
		"sched  \n",
		NULL,
	};
	const char *text =
		"copy pid=7 idx=0 thr=1 bytes=4 hash=- kernels=-\n"
		"sched pid=8 streams=4 contexts=0 off=0 ops=0\n"
		"sched pid=7 streams=4 contexts=2 off=1 ops=18446744073709551615\n"
		"sched pid=9 streams=4 contexts=1 off=0 ops=5\n";
	struct vlog l, m;
	struct vlog_diff d;
	struct vlog_sched s;
	char why[256];
	long pid;

	(void)state;
	assert_int_equal(vlog_parse_sched("sched pid=3 streams=0 contexts=0 "
					  "off=0 ops=0", &pid, &s), 0);
	assert_int_equal(pid, 3);
	assert_int_equal(s.procs, 1);
	assert_int_equal(s.off_procs, 1);
	for (int i = 0; bad[i]; i++) {
		assert_int_not_equal(read_text(bad[i], &l), 0);
		vlog_release(&l);
	}
	assert_int_equal(read_text(text, &l), 0);
	/* Records are not copies, nor processes of their own. */
	assert_int_equal(l.n, 1);
	assert_int_equal(vlog_count(&l), 1);
	assert_int_equal(l.sched.procs, 3);
	assert_int_equal(l.sched.off_procs, 0);
	assert_int_equal(l.sched.contexts, 3);
	assert_int_equal(l.sched.off, 1);
	assert_true(l.sched.ops == UINT64_MAX);		/* saturated */
	assert_null(vlog_unscheduled(&l, why, sizeof(why)));
	assert_int_equal(read_text("copy pid=7 idx=0 thr=1 bytes=4 hash=- "
				   "kernels=-\n", &m), 0);
	assert_int_equal(vlog_compare(&l, &m, &d), 0);
	vlog_release(&m);
	vlog_release(&l);
}

/* Why a run was not scheduled, or NULL when it was. */
static void test_placed(void **state)
{
	static const char *const bad[] = {
		"placed", "placed pid=", "placed pid=x", "placed pid=7 ",
		"placed pid=7 ops=1", "placed pid=2147483648", "placedpid=7",
	};
	struct vlog l;
	long pid = 0;

	(void)state;
	assert_int_equal(vlog_parse_placed("placed pid=42", &pid), 0);
	assert_int_equal(pid, 42);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(vlog_parse_placed(bad[i], &pid), -EINVAL);
	assert_int_equal(read_text("placed pid=7\nplaced pid=8\n", &l), 0);
	assert_int_equal(l.sched.placed, 2);
	assert_int_equal(l.sched.procs, 0);
	vlog_release(&l);
	assert_int_equal(read_text("placed pid=-1\n", &l), -EINVAL);
}

static void test_unscheduled(void **state)
{
	static const struct {
		const char *text, *why;
	} cases[] = {
		{ "copy pid=7 idx=0 thr=1 bytes=4 hash=- kernels=-\n",
		  "no process recorded" },
		{ "sched pid=7 streams=4 contexts=1 off=0 ops=9\n"
		  "sched pid=8 streams=0 contexts=0 off=0 ops=0\n",
		  "scheduling was off in 1 of 2 process(es)" },
		{ "sched pid=7 streams=4 contexts=1 off=0 ops=0\n",
		  "the scheduler placed no operation" },
		{ "sched pid=7 streams=4 contexts=0 off=2 ops=0\n",
		  "2 context(s) switched off before" },
		{ "sched pid=7 streams=4 contexts=1 off=1 ops=1\n", NULL },
		/* Placed, then left through _exit: no exit record. */
		{ "placed pid=7\n", NULL },
		/* ... under a shell whose own exit record placed nothing. */
		{ "sched pid=6 streams=4 contexts=0 off=0 ops=0\n"
		  "placed pid=7\n", NULL },
		/* Off somewhere is off, placed elsewhere or not. */
		{ "placed pid=7\n"
		  "sched pid=8 streams=0 contexts=0 off=0 ops=0\n",
		  "scheduling was off in 1 of 1 process(es)" },
	};
	char why[256];
	struct vlog l;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *r;

		assert_int_equal(read_text(cases[i].text, &l), 0);
		r = vlog_unscheduled(&l, why, sizeof(why));
		if (!cases[i].why)
			assert_null(r);
		else
			assert_non_null(strstr(r, cases[i].why));
		vlog_release(&l);
	}
}

static void test_parse_streams(void **state)
{
	static const char *const bad[] = {
		"0", "-1", "65", "x", "4x", "", " 4", "+4", "0x4", NULL,
	};
	int n = -1;

	(void)state;
	assert_int_equal(run_parse_streams("1", &n), 0);
	assert_int_equal(n, 1);
	assert_int_equal(run_parse_streams("64", &n), 0);
	assert_int_equal(n, 64);
	for (int i = 0; bad[i]; i++)
		assert_int_equal(run_parse_streams(bad[i], &n), -EINVAL);
	assert_int_equal(run_parse_streams(NULL, &n), -EINVAL);
}

/* KMUX_BARRIER_KERNELS as the preload compiles it (extended syntax). */
static void test_barrier_kernels(void **state)
{
	static const char *const bad[] = { "(", "a{1", "[z-a]", "*?", NULL };
	static const char *const good_re[] = {
		"^probe$", "^(a|b)$", "x{1,2}", "_Z[0-9]+kern", NULL,
	};
	char why[128];

	(void)state;
	assert_int_equal(run_check_barrier_kernels(NULL, why, sizeof(why)), 0);
	assert_int_equal(run_check_barrier_kernels("", why, sizeof(why)), 0);
	for (int i = 0; good_re[i]; i++)
		assert_int_equal(run_check_barrier_kernels(good_re[i], why,
							   sizeof(why)), 0);
	for (int i = 0; bad[i]; i++) {
		why[0] = '\0';
		assert_int_equal(run_check_barrier_kernels(bad[i], why,
							   sizeof(why)),
				 -EINVAL);
		assert_true(why[0] != '\0');
	}
}

static int env_has(const struct run_env *e, const char *entry)
{
	for (int i = 0; e->env[i]; i++)
		if (!strcmp(e->env[i], entry))
			return 1;
	return 0;
}

static void test_env(void **state)
{
	struct run_env e;

	(void)state;
	unsetenv("CUDA_DEVICE_MAX_CONNECTIONS");
	run_env_init(&e);
	run_env_streams(&e, 4);
	assert_true(env_has(&e, "KMUX_STREAMS=4"));
	assert_int_equal(e.n, 1);
	run_env_init(&e);
	run_env_streams(&e, 16);
	assert_true(env_has(&e, "CUDA_DEVICE_MAX_CONNECTIONS=16"));
	run_env_init(&e);
	run_env_streams(&e, 64);
	assert_true(env_has(&e, "CUDA_DEVICE_MAX_CONNECTIONS=32"));
	setenv("CUDA_DEVICE_MAX_CONNECTIONS", "12", 1);
	run_env_init(&e);
	run_env_streams(&e, 64);
	assert_int_equal(e.n, 1);
	unsetenv("CUDA_DEVICE_MAX_CONNECTIONS");
	/* 0: make sure nothing is scheduled. */
	run_env_init(&e);
	run_env_streams(&e, 0);
	assert_true(env_has(&e, "KMUX_STREAMS"));
	assert_int_equal(run_env_set(&e, "KMUX_VERIFY_LOG", "/tmp/x"), 0);
	assert_true(env_has(&e, "KMUX_VERIFY_LOG=/tmp/x"));
	assert_null(e.env[e.n]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_read),
		cmocka_unit_test(test_bad_lines),
		cmocka_unit_test(test_compare_in_order),
		cmocka_unit_test(test_compare_threads),
		cmocka_unit_test(test_sched),
		cmocka_unit_test(test_placed),
		cmocka_unit_test(test_unscheduled),
		cmocka_unit_test(test_parse_streams),
		cmocka_unit_test(test_barrier_kernels),
		cmocka_unit_test(test_env),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
