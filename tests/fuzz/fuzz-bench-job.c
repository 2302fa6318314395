/*
 * fuzz-bench-job.c - libFuzzer harness for `kmux bench`'s job parsers
 * (src/cli/bench-job.c): the request decoder reads whatever a local process
 * writes to `kmux bench serve`'s socket; the line splitter reads batch files.
 * For every input this checks that:
 *   - bjob_from_request() returns 0 or -EINVAL, never reads outside the
 *     input (ASan: libFuzzer's buffer is exactly sized), and an accepted
 *     job is well formed (argv[0] not empty, argv NULL-terminated, cwd and
 *     out_dir absolute) and survives encoding and decoding unchanged;
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
	line = bjob_request(&j);
	check(line != NULL, "cannot encode");
	check(bjob_from_request(line, strlen(line) - 1, &again, err,
				sizeof(err)) == 0, "re-encoded job refused");
	check(again.argc == j.argc && again.python == j.python &&
	      strcmp(again.cwd, j.cwd) == 0, "round trip changed the job");
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
