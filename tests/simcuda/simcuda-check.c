/*
 * simcuda-check.c - check SIMCUDA_LOG files for overlapping conflicting
 * operations and faults.
 *
 *   simcuda-check [-q] FILE...      ("-" reads standard input)
 *
 * Exit 0: no two operations of one process that touched the same
 * allocation (at least one writing) overlapped in time, and none faulted.
 * Exit 1: the first conflicting pair (both records) or fault is printed.
 * Exit 2: usage error, unreadable file or malformed line (the log is
 * untrusted input: every line and field is bounds-checked).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim-log.h"

struct recs {
	struct sim_rec **v;
	size_t n, cap;
};

static void usage(void)
{
	fprintf(stderr, "usage: simcuda-check [-q] FILE...\n");
	exit(2);
}

static void recs_free(struct recs *rs)
{
	size_t i;

	for (i = 0; i < rs->n; i++) {
		sim_rec_free(rs->v[i]);
		free(rs->v[i]);
	}
	free(rs->v);
}

static int recs_add(struct recs *rs, struct sim_rec *r)
{
	if (rs->n == rs->cap) {
		size_t cap = rs->cap ? rs->cap * 2 : 1024;
		struct sim_rec **n = realloc(rs->v, cap * sizeof(*n));

		if (n == NULL)
			return -1;
		rs->v = n;
		rs->cap = cap;
	}
	rs->v[rs->n++] = r;
	return 0;
}

/*
 * One line of f into line (NUL-terminated, newline dropped): 1, 0 at end
 * of file, -1 when the line is too long or holds a NUL byte.
 */
static int read_line(FILE *f, char *line, size_t cap, size_t *len)
{
	size_t n = 0;
	int c;

	while ((c = getc(f)) != EOF && c != '\n') {
		if (c == '\0' || n + 1 >= cap)
			return -1;
		line[n++] = (char)c;
	}
	line[n] = '\0';
	*len = n;
	return (c == EOF && n == 0) ? 0 : 1;
}

/* Read every record of one file; 0, or -1 with a message printed. */
static int read_file(const char *path, struct recs *rs)
{
	static char line[SIM_LINE_MAX + 1];
	char err[128];
	unsigned long lineno = 0;
	size_t len;
	FILE *f;
	int rc = -1, lrc;

	f = strcmp(path, "-") == 0 ? stdin : fopen(path, "r");
	if (f == NULL) {
		fprintf(stderr, "simcuda-check: %s: %s\n", path,
			strerror(errno));
		return -1;
	}
	while ((lrc = read_line(f, line, sizeof(line), &len)) != 0) {
		struct sim_rec *r;
		int prc;

		lineno++;
		if (lrc < 0) {
			fprintf(stderr, "simcuda-check: %s:%lu: line too long "
				"or NUL byte\n", path, lineno);
			goto out;
		}
		r = calloc(1, sizeof(*r));
		if (r == NULL) {
			fprintf(stderr, "simcuda-check: out of memory\n");
			goto out;
		}
		prc = sim_rec_parse(line, r, err, sizeof(err));
		if (prc != 0) {
			free(r);
			if (prc > 0)
				continue;
			fprintf(stderr,
				"simcuda-check: %s:%lu: malformed: %s\n",
				path, lineno, err);
			goto out;
		}
		if (recs_add(rs, r) < 0) {
			sim_rec_free(r);
			free(r);
			fprintf(stderr, "simcuda-check: out of memory\n");
			goto out;
		}
	}
	if (ferror(f)) {
		fprintf(stderr, "simcuda-check: %s: read error\n", path);
		goto out;
	}
	rc = 0;
out:
	if (f != stdin)
		fclose(f);
	return rc;
}

int main(int argc, char **argv)
{
	struct recs rs = { 0 };
	struct sim_rec *a, *b;
	static char msg[4096];
	int quiet = 0, i = 1, rc;

	if (i < argc && strcmp(argv[i], "-q") == 0) {
		quiet = 1;
		i++;
	}
	if (i < argc && strcmp(argv[i], "--") == 0)
		i++;
	if (i >= argc)
		usage();
	for (; i < argc; i++) {
		if (read_file(argv[i], &rs) < 0) {
			recs_free(&rs);
			return 2;
		}
	}
	rc = sim_check_run(rs.v, rs.n, &a, &b);
	if (rc < 0) {
		fprintf(stderr, "simcuda-check: out of memory\n");
		recs_free(&rs);
		return 2;
	}
	if (rc == 1) {
		sim_check_describe(a, b, msg, sizeof(msg));
		printf("%s", msg);
	} else if (!quiet) {
		printf("simcuda-check: %zu operations, no conflicts, "
		       "no faults\n", rs.n);
	}
	recs_free(&rs);
	return rc;
}
