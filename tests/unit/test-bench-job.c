/*
 * test-bench-job.c - `kmux bench`'s jobs (src/cli/bench-job.c): which batch
 * lines a persistent worker runs and with what argv, which client requests
 * are accepted (their environments too), which variables stay a worker's,
 * and the records.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include <cmocka.h>

#include "bench-job.h"

/* line is a Python job whose argv, joined by '|', is want. */
static void python_line(const char *line, const char *want)
{
	struct bjob j;
	char got[1024] = "";

	assert_int_equal(bjob_from_line(line, &j), 1);
	assert_true(j.python);
	for (int i = 0; i < j.argc; i++) {
		if (i)
			strcat(got, "|");
		strcat(got, j.argv[i]);
	}
	assert_null(j.argv[j.argc]);
	assert_string_equal(got, want);
	bjob_free(&j);
}

/* line runs through sh -c, whole. */
static void shell_line(const char *line)
{
	struct bjob j;

	assert_int_equal(bjob_from_line(line, &j), 0);
	assert_false(j.python);
	assert_int_equal(j.argc, 3);
	assert_string_equal(j.argv[0], "/bin/sh");
	assert_string_equal(j.argv[1], "-c");
	assert_string_equal(j.argv[2], line);
	bjob_free(&j);
}

static void test_line_python(void **state)
{
	(void)state;
	python_line("x.py", "x.py");
	python_line("  python3 /a/b/k.py mm 0.1  1.00 --dry ", "/a/b/k.py|mm|0.1|1.00|--dry");
	python_line("/usr/bin/python3.11 k.py", "k.py");
	python_line("python k.py 'a b' \"c d\" e\\ f", "k.py|a b|c d|e f");
	python_line("k.py 'it''s' \"q\\\"uote\" ''", "k.py|its|q\"uote|");
	python_line("k.py a=b", "k.py|a=b");
}

static void test_line_shell(void **state)
{
	(void)state;
	shell_line("sleep 1");
	shell_line("python3 -m kmux x.py");		/* interpreter options */
	shell_line("python3");
	shell_line("KMUX_MEM=8G python3 k.py");		/* an environment */
	shell_line("env A=1 python3 k.py");		/* not a .py first */
	shell_line("k.py > out");
	shell_line("k.py | cat");
	shell_line("k.py; true");
	shell_line("k.py $HOME");
	shell_line("k.py \"$HOME\"");
	shell_line("k.py `id`");
	shell_line("k.py *.txt");
	shell_line("k.py ~/x");
	shell_line("k.py 'unterminated");
	shell_line("k.py \"unterminated");
	shell_line("k.py trailing\\");
	shell_line("# k.py");
	shell_line("k.py & k.py");
	shell_line("");
	shell_line("x.pyc");
}

static void test_line_many_words(void **state)
{
	char *line = malloc(BJOB_MAX_ARGS * 2 + 16);
	struct bjob j;

	(void)state;
	strcpy(line, "k.py");
	for (int i = 0; i < BJOB_MAX_ARGS; i++)
		strcat(line, " a");
	/* More words than a job may have: the shell gets it. */
	assert_int_equal(bjob_from_line(line, &j), 0);
	assert_string_equal(j.argv[0], "/bin/sh");
	bjob_free(&j);
	free(line);
}

static int req(const char *s, struct bjob *j, char *err)
{
	return bjob_from_request(s, strlen(s), j, err, 256);
}

static void test_request_ok(void **state)
{
	struct bjob j;
	char err[256];

	(void)state;
	assert_int_equal(req("{\"argv\": [\"/a/k.py\", \"x\", \"\"], \"cwd\": "
			     "\"/w\", \"out_dir\": \"/o\"}", &j, err), 0);
	assert_int_equal(j.argc, 3);
	assert_string_equal(j.argv[0], "/a/k.py");
	assert_string_equal(j.argv[2], "");
	assert_null(j.argv[3]);
	assert_string_equal(j.cwd, "/w");
	assert_string_equal(j.out_dir, "/o");
	assert_true(j.python);
	bjob_free(&j);
	assert_int_equal(req("{\"cwd\": \"/\", \"argv\": [\"true\"], "
			     "\"out_dir\": null}", &j, err), 0);
	assert_false(j.python);
	assert_null(j.out_dir);
	assert_null(j.env);
	bjob_free(&j);
	/* An environment: "=" in a value, an empty value, duplicates (the
	 * first wins later, as getenv finds it) are all fine. */
	assert_int_equal(req("{\"cwd\": \"/\", \"argv\": [\"k.py\"], \"env\": "
			     "[\"A=1\", \"B=x=y\", \"C=\", \"A=2\"]}", &j, err),
			 0);
	assert_int_equal(j.nenv, 4);
	assert_string_equal(j.env[1], "B=x=y");
	assert_string_equal(j.env[2], "C=");
	assert_null(j.env[4]);
	bjob_free(&j);
	assert_int_equal(req("{\"cwd\": \"/\", \"argv\": [\"k.py\"], \"env\": "
			     "[]}", &j, err), 0);
	assert_non_null(j.env);	/* empty, not the server's */
	assert_int_equal(j.nenv, 0);
	assert_null(j.env[0]);
	bjob_free(&j);
}

static void test_env_kept_and_merge(void **state)
{
	char *own[] = { "PATH=/w", "LD_PRELOAD=/w/libkmux.so", "KMUX_JOB=7",
			"CUDA_VISIBLE_DEVICES=0", "LD_LIBRARY_PATH=/w/lib",
			NULL };
	char *job[] = { "PATH=/j", "LD_PRELOAD=/j/evil.so", "KMUX_JOB=9",
			"HOME=/h", "CUDA_VISIBLE_DEVICES=3", "KMUXX=1",
			"LD_PRELOADX=1", NULL };
	char *want[] = { "LD_PRELOAD=/w/libkmux.so", "KMUX_JOB=7",
			 "CUDA_VISIBLE_DEVICES=0", "LD_LIBRARY_PATH=/w/lib",
			 "PATH=/j", "HOME=/h", "KMUXX=1", "LD_PRELOADX=1",
			 NULL };
	char *none[] = { NULL };
	char **env;
	int i;

	(void)state;
	assert_true(bjob_env_kept("LD_PRELOAD=x"));
	assert_true(bjob_env_kept("LD_PRELOAD"));
	assert_true(bjob_env_kept("KMUX_=1"));
	assert_true(bjob_env_kept("CUDA_VISIBLE_DEVICES="));
	assert_false(bjob_env_kept("LD_PRELOAD_X=1"));
	assert_false(bjob_env_kept("LD_PRELOA=1"));
	assert_false(bjob_env_kept("KMUX=1"));
	assert_false(bjob_env_kept("CUDA_DEVICE_ORDER=PCI_BUS_ID"));
	env = bjob_env_merge(job, own);
	assert_non_null(env);
	for (i = 0; want[i]; i++) {
		assert_non_null(env[i]);
		assert_string_equal(env[i], want[i]);
	}
	assert_null(env[i]);
	free(env);
	/* An empty job environment: the kept variables alone. */
	env = bjob_env_merge(none, own);
	assert_string_equal(env[0], "LD_PRELOAD=/w/libkmux.so");
	assert_string_equal(env[3], "LD_LIBRARY_PATH=/w/lib");
	assert_null(env[4]);
	free(env);
}

static void test_request_round_trip(void **state)
{
	char *argv[] = { "k.py", "a \"b\"\n", NULL };
	char *env[] = { "A=1", "NL=a\nb", "Q=\"\\", NULL };
	struct bjob in = { .argv = argv, .argc = 2, .cwd = "/c",
			   .out_dir = "/o", .env = env, .nenv = 3 }, out;
	char err[256], *line = bjob_request(&in);

	(void)state;
	assert_non_null(line);
	assert_int_equal(line[strlen(line) - 1], '\n');
	/* One line: the newline inside the argument is escaped. */
	assert_ptr_equal(strchr(line, '\n'), line + strlen(line) - 1);
	assert_int_equal(bjob_from_request(line, strlen(line) - 1, &out, err,
					   sizeof(err)), 0);
	assert_string_equal(out.argv[1], "a \"b\"\n");
	assert_string_equal(out.cwd, "/c");
	assert_int_equal(out.nenv, 3);
	for (int i = 0; i < 3; i++)
		assert_string_equal(out.env[i], env[i]);
	bjob_free(&out);
	free(line);
}

static void bad(const char *s, const char *msg)
{
	struct bjob j;
	char err[256] = "";

	assert_int_equal(req(s, &j, err), -EINVAL);
	assert_null(j.argv);
	if (!strstr(err, msg))
		fail_msg("request %s: error '%s', wanted '%s'", s, err, msg);
}

/* BJOB_MAX_ENV entries pass, one more does not. */
static void too_many_env(void)
{
	size_t cap = 64 + (size_t)(BJOB_MAX_ENV + 1) * 6;
	char *s = malloc(cap), *p = s, err[256];
	struct bjob j;

	p += sprintf(p, "{\"argv\": [\"k.py\"], \"cwd\": \"/\", \"env\": [");
	for (int i = 0; i < BJOB_MAX_ENV; i++)
		p += sprintf(p, "%s\"A=\"", i ? "," : "");
	strcpy(p, "]}");
	assert_int_equal(req(s, &j, err), 0);
	assert_int_equal(j.nenv, BJOB_MAX_ENV);
	bjob_free(&j);
	strcpy(p, ",\"A=\"]}");
	assert_int_equal(req(s, &j, err), -EINVAL);
	assert_non_null(strstr(err, "at most"));
	assert_null(j.argv);
	free(s);
}

static void test_request_bad(void **state)
{
	char *big = malloc(BJOB_MAX_LINE + 2);
	struct bjob j;
	char err[256];

	(void)state;
	bad("", "not a JSON object");
	bad("garbage", "not a JSON object");
	bad("[1]", "not a JSON object");
	bad("{\"argv\": [\"k.py\"]", "not a JSON object");
	bad("{}", "\"argv\" must be an array");
	bad("{\"argv\": [], \"cwd\": \"/\"}", "\"argv\" must be an array");
	bad("{\"argv\": \"k.py\", \"cwd\": \"/\"}", "\"argv\" must be an array");
	bad("{\"argv\": [1], \"cwd\": \"/\"}", "must hold strings");
	bad("{\"argv\": [\"\"], \"cwd\": \"/\"}", "empty command");
	bad("{\"argv\": [\"k.py\"]}", "\"cwd\" must be an absolute path");
	bad("{\"argv\": [\"k.py\"], \"cwd\": \"rel\"}", "\"cwd\" must be");
	bad("{\"argv\": [\"k.py\"], \"cwd\": \"/\", \"out_dir\": 3}",
	    "\"out_dir\" must be");
	bad("{\"argv\": [\"k.py\"], \"cwd\": \"/\", \"x\": 1}",
	    "unknown key \"x\"");
	bad("{\"argv\": [\"k.py\"], \"cwd\": \"/\", \"cwd\": \"/\"}",
	    "a key twice");
	bad("{\"argv\": [\"k\\u0000.py\"], \"cwd\": \"/\"}", "NUL");
	bad("{\"argv\": [\"k.py\"], \"cwd\": \"/\", \"env\": {}}",
	    "\"env\" must be an array");
	bad("{\"argv\": [\"k.py\"], \"cwd\": \"/\", \"env\": \"A=1\"}",
	    "\"env\" must be an array");
	bad("{\"argv\": [\"k.py\"], \"cwd\": \"/\", \"env\": null}",
	    "\"env\" must be an array");
	bad("{\"argv\": [\"k.py\"], \"cwd\": \"/\", \"env\": [\"A=1\", 2]}",
	    "\"env\" entry 1 is not");
	bad("{\"argv\": [\"k.py\"], \"cwd\": \"/\", \"env\": [\"A\"]}",
	    "\"env\" entry 0 is not");
	bad("{\"argv\": [\"k.py\"], \"cwd\": \"/\", \"env\": [\"=1\"]}",
	    "\"env\" entry 0 is not");
	bad("{\"argv\": [\"k.py\"], \"cwd\": \"/\", \"env\": [\"\"]}",
	    "\"env\" entry 0 is not");
	bad("{\"argv\": [\"k.py\"], \"cwd\": \"/\", \"env\": [\"A=\\u0000\"]}",
	    "NUL");
	bad("{\"argv\": [\"k.py\"], \"cwd\": \"/\", \"env\": [], \"env\": []}",
	    "a key twice");
	too_many_env();
	assert_int_equal(bjob_from_request("{\"a\0", 4, &j, err, sizeof(err)),
			 -EINVAL);
	memset(big, ' ', BJOB_MAX_LINE + 1);
	assert_int_equal(bjob_from_request(big, BJOB_MAX_LINE + 1, &j, err,
					   sizeof(err)), -EINVAL);
	assert_string_equal(err, "request too long");
	free(big);
}

static void test_record(void **state)
{
	struct bjob_result r = {
		.i = 4, .cmd = "k.py \"x\"", .status = 3 << 8, .start_s = 1.5,
		.wall_s = 0.25, .worker = 1, .worker_pid = 77, .out = "/o/4.out",
	};
	char *s;

	(void)state;
	s = bjob_record(&r);
	assert_string_equal(s, "{\"i\":4,\"cmd\":\"k.py \\\"x\\\"\",\"exit\":3,"
			    "\"signal\":0,\"start_s\":1.5,\"wall_s\":0.25,"
			    "\"queue_s\":0,\"worker\":1,\"worker_pid\":77,"
			    "\"out\":\"/o/4.out\"}\n");
	free(s);
	r.status = 9;	/* killed by SIGKILL */
	r.out = NULL;
	r.error = "its worker died";
	s = bjob_record(&r);
	assert_non_null(strstr(s, "\"exit\":-1,\"signal\":9"));
	assert_non_null(strstr(s, "\"error\":\"its worker died\"}"));
	free(s);
	s = bjob_error_reply("bad \"x\"");
	assert_string_equal(s, "{\"error\":\"bad \\\"x\\\"\"}\n");
	free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_line_python),
		cmocka_unit_test(test_line_shell),
		cmocka_unit_test(test_line_many_words),
		cmocka_unit_test(test_request_ok),
		cmocka_unit_test(test_request_round_trip),
		cmocka_unit_test(test_request_bad),
		cmocka_unit_test(test_env_kept_and_merge),
		cmocka_unit_test(test_record),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
