/*
 * fuzz-bench-job.c - libFuzzer harness for `kmux bench`'s job parsers
 * (src/cli/bench-job.c): the request decoder reads whatever a local process
 * writes to `kmux bench serve`'s socket; the line splitter reads batch files.
 * For every input this checks that:
 *   - bjob_from_request() returns 0 or -EINVAL, never reads outside the
 *     input (ASan: libFuzzer's buffer is exactly sized), and an accepted
 *     job is well formed (argv[0] not empty, argv NULL-terminated, cwd and
 *     out_dir absolute, env entries "K=V" with K not empty, NULL-terminated)
 *     and survives encoding and decoding unchanged, env included;
 *   - bjob_env_merge() of an accepted env puts no kept variable of the
 *     job's in, and all of its others;
 *   - bjob_from_line() on the input as a string returns 0 or 1: a Python
 *     job's first word ends in .py, anything else is /bin/sh -c LINE whole.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench-job.h"

static void check(int cond, const char *what)
{
	if (!cond) {
		fprintf(stderr, "fuzz-bench-job: %s\n", what);
		abort();
	}
}

static void request(const uint8_t *data, size_t size)
{
	struct bjob j, again;
	char err[256], *line;
	int r = bjob_from_request((const char *)data, size, &j, err,
				  sizeof(err));

	check(r == 0 || r == -EINVAL, "unexpected return code");
	if (r) {
		check(j.argv == NULL && err[0], "a refusal without a reason");
		return;
	}
	check(j.argc >= 1 && j.argc <= BJOB_MAX_ARGS && j.argv[0][0] &&
	      !j.argv[j.argc], "malformed argv");
	check(j.cwd && j.cwd[0] == '/', "relative cwd");
	check(!j.out_dir || j.out_dir[0] == '/', "relative out_dir");
	check(!j.env || (j.nenv >= 0 && j.nenv <= BJOB_MAX_ENV &&
			 !j.env[j.nenv]), "malformed env");
	for (int i = 0; j.env && i < j.nenv; i++)
		check(j.env[i][0] && j.env[i][0] != '=' &&
		      strchr(j.env[i], '='), "an env entry that is not K=V");
	if (j.env) {
		char *own[] = { "LD_PRELOAD=/own.so", "PATH=/own", NULL };
		char **m = bjob_env_merge(j.env, own);
		int n = 0, others = 0;

		check(m && !strcmp(m[0], own[0]), "merge lost a kept variable");
		for (int i = 0; i < j.nenv; i++)
			others += !bjob_env_kept(j.env[i]);
		for (n = 1; m[n]; n++)
			check(!bjob_env_kept(m[n]), "merge let a kept one in");
		check(n == 1 + others, "merge lost a job's variable");
		free(m);
	}
	line = bjob_request(&j);
	check(line != NULL, "cannot encode");
	check(bjob_from_request(line, strlen(line) - 1, &again, err,
				sizeof(err)) == 0, "re-encoded job refused");
	check(again.argc == j.argc && again.python == j.python &&
	      strcmp(again.cwd, j.cwd) == 0 && again.nenv == j.nenv &&
	      !again.env == !j.env, "round trip changed the job");
	for (int i = 0; i < j.nenv; i++)
		check(strcmp(again.env[i], j.env[i]) == 0,
		      "round trip changed a variable");
	for (int i = 0; i < j.argc; i++)
		check(strcmp(again.argv[i], j.argv[i]) == 0,
		      "round trip changed an argument");
	bjob_free(&again);
	free(line);
	bjob_free(&j);
}

static void line(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);
	struct bjob j;
	int r;

	if (!s)
		return;
	memcpy(s, data, size);
	s[size] = '\0';
	r = bjob_from_line(s, &j);
	check(r == 0 || r == 1, "unexpected return code (line)");
	check(j.argc >= 1 && !j.argv[j.argc], "malformed argv (line)");
	if (r == 1) {
		size_t n = strlen(j.argv[0]);

		check(j.python && n > 3 && !strcmp(j.argv[0] + n - 3, ".py"),
		      "a Python job without a .py script");
	} else {
		check(j.argc == 3 && !strcmp(j.argv[2], s),
		      "a shell job that is not the line");
	}
	bjob_free(&j);
	free(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	request(data, size);
	line(data, size);
	return 0;
}
