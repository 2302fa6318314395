/*
 * test-view.c - unit tests of what `kmux ps` and `kmux top` print
 * (src/cli/view.c): states, GPU lists, durations, signal names, the exact
 * table lines, and the JSON a script reads.
 */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "view.h"

#define GiB (UINT64_C(1) << 30)
#define T0 UINT64_C(1700000000000000)	/* µs */

static struct proto_job_rec rec(uint64_t id, uint32_t state, int32_t code,
				int32_t sig)
{
	struct proto_job_rec r = {
		.id = id, .state = state, .exit_code = code, .signal = sig,
		.ngpus = 1, .name = "", .cmd = "sleep 1", .uid = 1000,
		.submit_us = T0,
	};
	return r;
}

static void state_is(struct proto_job_rec r, const char *want)
{
	char buf[32];

	view_state(&r, buf, sizeof(buf));
	assert_string_equal(buf, want);
}

static void test_state(void **state)
{
	(void)state;
	state_is(rec(1, PROTO_JOB_QUEUED, -1, 0), "queued");
	state_is(rec(1, PROTO_JOB_RUNNING, -1, 0), "running");
	state_is(rec(1, PROTO_JOB_EXITED, 3, 0), "exited 3");
	state_is(rec(1, PROTO_JOB_EXITED, -1, SIGKILL), "killed KILL");
	state_is(rec(1, PROTO_JOB_EXITED, -1, 0), "exited ?");
	state_is(rec(1, PROTO_JOB_CANCELLED, -1, 0), "cancelled");
	state_is(rec(1, PROTO_JOB_CANCELLED, -1, SIGTERM), "cancelled TERM");
	state_is(rec(1, PROTO_JOB_FAILED, 127, 0), "failed 127");
	state_is(rec(1, PROTO_JOB_FAILED, -1, 0), "failed");
	/* Held (v10): queued, more than the node has now. */
	{
		struct proto_job_rec r = rec(1, PROTO_JOB_QUEUED, -1, 0);

		r.held = PROTO_HELD_GPUS;
		state_is(r, "held (GPUs)");
		r.held = PROTO_HELD_MEM;
		state_is(r, "held (memory)");
		r.held = PROTO_HELD_NO_GPUS;
		state_is(r, "held (no GPUs)");
	}
}

static void test_small_formats(void **state)
{
	char buf[64];

	(void)state;
	view_gpus(0, buf, sizeof(buf));
	assert_string_equal(buf, "-");
	view_gpus(0x5, buf, sizeof(buf));
	assert_string_equal(buf, "0,2");
	view_gpus(UINT64_C(1) << 63, buf, sizeof(buf));
	assert_string_equal(buf, "63");
	view_gpus(0xf, buf, 4);		/* cut, never overrun */
	assert_string_equal(buf, "0,1");

	view_duration(0, buf, sizeof(buf));
	assert_string_equal(buf, "-");
	view_duration(850000, buf, sizeof(buf));
	assert_string_equal(buf, "850ms");
	view_duration(12300000, buf, sizeof(buf));
	assert_string_equal(buf, "12.3s");
	view_duration(245000000, buf, sizeof(buf));
	assert_string_equal(buf, "4m05s");
	view_duration(UINT64_C(7620) * 1000000, buf, sizeof(buf));
	assert_string_equal(buf, "2h07m");
	view_duration(UINT64_C(273600) * 1000000, buf, sizeof(buf));
	assert_string_equal(buf, "3d04h");

	assert_string_equal(view_signal_name(SIGTERM, buf, sizeof(buf)), "TERM");
	assert_string_equal(view_signal_name(0, buf, sizeof(buf)), "SIG0");
	assert_int_equal(view_signal_parse("TERM"), SIGTERM);
	assert_int_equal(view_signal_parse("sigkill"), SIGKILL);
	assert_int_equal(view_signal_parse("9"), 9);
	assert_int_equal(view_signal_parse("0"), -1);
	assert_int_equal(view_signal_parse("NOPE"), -1);
	assert_int_equal(view_signal_parse("9x"), -1);
	assert_int_equal(view_signal_parse(""), -1);
}

static void test_runtime(void **state)
{
	struct proto_job_rec r = rec(1, PROTO_JOB_RUNNING, -1, 0);

	(void)state;
	assert_int_equal(view_runtime_us(&r, T0 + 5), 0);	/* not started */
	r.start_us = T0 + 1000;
	assert_int_equal(view_runtime_us(&r, T0 + 3000), 2000);
	assert_int_equal(view_runtime_us(&r, T0 + 1000), 1);	/* just now */
	assert_int_equal(view_runtime_us(&r, T0), 0);		/* clock skew */
	r.end_us = T0 + 1500;
	assert_int_equal(view_runtime_us(&r, T0 + 99999), 500);
}

/* Run f into a string. */
static char *capture(void (*f)(FILE *, void *), void *arg)
{
	char *s = NULL;
	size_t n = 0;
	FILE *m = open_memstream(&s, &n);

	assert_non_null(m);
	f(m, arg);
	fclose(m);
	return s;
}

static struct proto_job_rec jobs3[4];
static struct proto_job_list list3 = { .count = 3, .vec = jobs3 };
/* The same and a held job (v10). */
static struct proto_job_list list4 = { .count = 4, .vec = jobs3 };

static void setup_jobs(void)
{
	jobs3[0] = rec(7, PROTO_JOB_RUNNING, -1, 0);
	jobs3[0].gpus = 0x2;
	jobs3[0].mem_request = 10 * GiB;
	jobs3[0].mem_peak = 3 * GiB;
	jobs3[0].start_us = T0 + 1000000;
	jobs3[0].pid = 4242;
	jobs3[0].mem_quota = 10 * GiB;
	jobs3[0].mem_used = 2 * GiB + 512 * (GiB >> 10);
	jobs3[0].kernel_rate = 1530;
	jobs3[0].wait_rate = 2100;
	jobs3[0].flags = PROTO_JOBREC_F_WAIT_BOUND;
	jobs3[0].mem_evicted = 64ull << 20;
	jobs3[0].mem_reserved = 1 * GiB;
	jobs3[0].evicts = 3;
	jobs3[0].restores = 2;
	jobs3[0].name = "train";
	jobs3[0].cmd = "python train.py --epochs 3";
	jobs3[1] = rec(8, PROTO_JOB_QUEUED, -1, 0);
	jobs3[2] = rec(9, PROTO_JOB_EXITED, 0, 0);
	jobs3[2].start_us = T0;
	jobs3[2].end_us = T0 + 2500000;
	jobs3[3] = rec(10, PROTO_JOB_QUEUED, -1, 0);
	jobs3[3].ngpus = 2;
	jobs3[3].held = PROTO_HELD_GPUS;
}

static void ps_table(FILE *f, void *arg)
{
	(void)arg;
	view_ps_table(f, &list4, T0 + 13300000);
}

static void test_ps_table(void **state)
{
	char *s;

	(void)state;
	setup_jobs();
	s = capture(ps_table, NULL);
	assert_string_equal(s,
		"    ID  STATE          GPUS          MEM       PEAK  RUNTIME  NAME         COMMAND\n"
		"     7  running        1       10.00 GiB   3.00 GiB    12.3s  train        python train.py --epochs 3\n"
		"     8  queued         -            auto          -        -  -            sleep 1\n"
		"     9  exited 0       -            auto          -     2.5s  -            sleep 1\n"
		"    10  held (GPUs)    -            auto          -        -  -            sleep 1\n");
	free(s);
}

static void test_ps_json(void **state)
{
	cJSON *a, *j;
	char *s;

	(void)state;
	setup_jobs();
	a = view_ps_json(&list4, T0 + 13300000);
	assert_non_null(a);
	s = cJSON_PrintUnformatted(a);
	cJSON_Delete(a);
	/* Reparsed, as a script would. */
	a = cJSON_Parse(s);
	free(s);
	assert_int_equal(cJSON_GetArraySize(a), 4);
	j = cJSON_GetArrayItem(a, 0);
	assert_int_equal(cJSON_GetObjectItem(j, "id")->valuedouble, 7);
	assert_string_equal(cJSON_GetObjectItem(j, "state")->valuestring, "running");
	assert_true(cJSON_IsNull(cJSON_GetObjectItem(j, "exit_code")));
	assert_int_equal(cJSON_GetObjectItem(j, "pid")->valuedouble, 4242);
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(j, "gpus")), 1);
	assert_int_equal(cJSON_GetArrayItem(cJSON_GetObjectItem(j, "gpus"), 0)->valuedouble, 1);
	assert_true(cJSON_GetObjectItem(j, "mem_request")->valuedouble == 10.0 * GiB);
	assert_true(cJSON_GetObjectItem(j, "start_us")->valuedouble == (double)(T0 + 1000000));
	assert_true(cJSON_GetObjectItem(j, "mem_quota")->valuedouble == 10.0 * GiB);
	assert_true(cJSON_GetObjectItem(j, "mem_used")->valuedouble == 2.5 * GiB);
	assert_int_equal(cJSON_GetObjectItem(j, "kernel_rate")->valuedouble, 1530);
	assert_int_equal(cJSON_GetObjectItem(j, "wait_rate")->valuedouble, 2100);
	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(j, "wait_bound")));
	assert_true(cJSON_GetObjectItem(j, "mem_evicted")->valuedouble == 64 << 20);
	assert_true(cJSON_GetObjectItem(j, "mem_reserved")->valuedouble == 1.0 * GiB);
	assert_int_equal(cJSON_GetObjectItem(j, "evicts")->valuedouble, 3);
	assert_int_equal(cJSON_GetObjectItem(j, "restores")->valuedouble, 2);
	assert_string_equal(cJSON_GetObjectItem(j, "cmd")->valuestring,
			    "python train.py --epochs 3");
	assert_true(cJSON_IsNull(cJSON_GetObjectItem(j, "held")));
	j = cJSON_GetArrayItem(a, 1);
	assert_true(cJSON_IsNull(cJSON_GetObjectItem(j, "start_us")));
	assert_true(cJSON_IsNull(cJSON_GetObjectItem(j, "pid")));
	assert_true(cJSON_IsNull(cJSON_GetObjectItem(j, "held")));
	j = cJSON_GetArrayItem(a, 2);
	assert_int_equal(cJSON_GetObjectItem(j, "exit_code")->valuedouble, 0);
	assert_int_equal(cJSON_GetObjectItem(j, "runtime_us")->valuedouble, 2500000);
	j = cJSON_GetArrayItem(a, 3);
	assert_string_equal(cJSON_GetObjectItem(j, "state")->valuestring, "queued");
	assert_string_equal(cJSON_GetObjectItem(j, "held")->valuestring, "gpus");
	cJSON_Delete(a);
}

static struct proto_gpu_list gpus2 = {
	.count = 2,
	.gpu = {
		{ .index = 0, .ntasks = 1, .mem_total = 16 * GiB,
		  .mem_committed = 10 * GiB, .mem_used = 11 * GiB,
		  .util_pm = 734, .busy_pm = 1250 },
		{ .index = 1, .mem_total = 16 * GiB },
	},
};

static void top_text(FILE *f, void *arg)
{
	(void)arg;
	view_top_text(f, &gpus2, &list3, T0 + 13300000);
}

static void test_top(void **state)
{
	cJSON *o, *g;
	char *s;

	(void)state;
	setup_jobs();
	s = capture(top_text, NULL);
	assert_non_null(strstr(s, "kmux top: 2 GPUs, 1 running, 1 queued\n\n"));
	assert_non_null(strstr(s,
		"GPU   BUSY  UTIL TASKS  COMMITTED          USED       TOTAL\n"
		"  0   1.25   73%     1  10.00 GiB (62%)    11.00 GiB  16.00 GiB\n"
		"  1   0.00    0%     0  0 B (0%)           0 B        16.00 GiB\n\n"
		"    ID  STATE      GPUS              USED / QUOTA    EVICTED   KERN/S  RUNTIME  NAME         COMMAND\n"
		"     7  running    1         2.50 GiB / 10.00 GiB  64.00 MiB     1530    12.3s  train        python train.py --epochs 3\n"
		"     8  queued     -                        - / -          -        -        -  -            sleep 1\n"));
	free(s);
	o = view_top_json(&gpus2, &list3, T0);
	s = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	o = cJSON_Parse(s);
	free(s);
	g = cJSON_GetArrayItem(cJSON_GetObjectItem(o, "gpus"), 0);
	assert_true(cJSON_GetObjectItem(g, "mem_committed")->valuedouble == 10.0 * GiB);
	assert_true(cJSON_GetObjectItem(g, "busyness")->valuedouble == 1.25);
	assert_true(cJSON_GetObjectItem(g, "util")->valuedouble == 0.734);
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(o, "jobs")), 3);
	assert_true(cJSON_IsNull(cJSON_GetObjectItem(o, "no_gpus")));
	cJSON_Delete(o);
}

static struct proto_gpu_list gpus0 = {
	.count = 0, .note = "NVML not available (libnvidia-ml.so.1: cannot "
			    "open shared object file)",
};

static void top_text0(FILE *f, void *arg)
{
	(void)arg;
	view_top_text(f, &gpus0, &list4, T0 + 13300000);
}

/* A node without GPUs (v10): top says why, before anything else. */
static void test_top_no_gpus(void **state)
{
	cJSON *o;
	char *s;

	(void)state;
	setup_jobs();
	s = capture(top_text0, NULL);
	assert_non_null(strstr(s, "kmux top: 0 GPUs, 1 running, 2 queued\n\n"
		"kmuxd has no GPUs: NVML not available (libnvidia-ml.so.1: "
		"cannot open shared object file)\n\n"));
	assert_non_null(strstr(s, "    10  held (GPUs) -  "));
	free(s);
	o = view_top_json(&gpus0, &list4, T0);
	assert_string_equal(cJSON_GetObjectItem(o, "no_gpus")->valuestring,
			    gpus0.note);
	cJSON_Delete(o);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_state),
		cmocka_unit_test(test_small_formats),
		cmocka_unit_test(test_runtime),
		cmocka_unit_test(test_ps_table),
		cmocka_unit_test(test_ps_json),
		cmocka_unit_test(test_top),
		cmocka_unit_test(test_top_no_gpus),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
