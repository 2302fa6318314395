/*
 * fuzz-trace-line.c - fuzz target for the reading side of `kmux trace`: the
 * per-process line parser (trace_line_parse) and, on the same input taken
 * as a whole file, the merge, summary and writer (src/cli/trace-merge.c).
 *
 * Built by build.sh as a libFuzzer target (clang -fsanitize=fuzzer), or,
 * with -DFUZZ_STANDALONE, as a plain program that runs each file named on
 * its command line once (for CI without libFuzzer, and to replay crashes).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/trace-merge.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *buf = (const char *)data;
	struct trace_merge *m;
	struct trace_line l;
	const char *p = buf, *end = buf + size, *nl;
	char err[128];
	FILE *out;

	/* Each line alone. */
	while (p < end) {
		nl = memchr(p, '\n', (size_t)(end - p));
		if (trace_line_parse(p, nl ? (size_t)(nl - p) : (size_t)(end - p),
				     &l, err, sizeof(err)) == 0)
			trace_line_release(&l);
		if (!nl)
			break;
		p = nl + 1;
	}

	/* The whole input as one process's file, merged and written out. */
	m = trace_merge_new();
	if (!m)
		return 0;
	if (trace_merge_add_buffer(m, "fuzz", buf, size) == 0 &&
	    trace_merge_finish(m, 0) == 0) {
		out = fopen("/dev/null", "w");
		if (out) {
			trace_merge_write(m, out);
			trace_merge_print_summary(m, out, "fuzz.json");
			fclose(out);
		}
	}
	for (size_t i = 0; i < trace_merge_nkept_warnings(m); i++)
		(void)trace_merge_warning(m, i);
	trace_merge_free(m);
	return 0;
}

#ifdef FUZZ_STANDALONE
int main(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		FILE *f = fopen(argv[i], "rb");
		char *buf;
		long n;

		if (!f) {
			perror(argv[i]);
			return 1;
		}
		fseek(f, 0, SEEK_END);
		n = ftell(f);
		fseek(f, 0, SEEK_SET);
		buf = malloc(n > 0 ? (size_t)n : 1);
		if (!buf || fread(buf, 1, (size_t)n, f) != (size_t)n) {
			fprintf(stderr, "%s: read failed\n", argv[i]);
			return 1;
		}
		fclose(f);
		LLVMFuzzerTestOneInput((const uint8_t *)buf, (size_t)n);
		free(buf);
	}
	return 0;
}
#endif
