/*
 * cmd-trace.c - `kmux trace`: run a command under the preload with tracing
 * on, merge the per-process files into one Chrome/Perfetto trace, print a
 * summary, and exit with the command's status.
 *
 * The output file is opened before the command starts, so a trace that
 * could not be written never costs a run.  Per-process files go to a private
 * temporary directory (KMUX_TRACE_DIR), removed afterwards.  stdout belongs
 * to the command: the summary goes to stderr, or as JSON to stdout after the
 * command has exited (--json), or to a file (--summary-json).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cmd.h"
#include "spawn.h"
#include "trace-merge.h"

#define DEFAULT_OUTPUT "kmux-trace.json"

enum {
	OPT_TIMING = 256,
	OPT_JSON,
	OPT_SUMMARY_JSON,
	OPT_KEEP,
};

struct trace_opts {
	const char *output;
	const char *summary_json;	/* file, or "-" for stdout */
	int timing, json, quiet, keep;
};

/* A file opened before the run, written after it. */
struct outfile {
	const char *path;
	int fd;
	int created;		/* unlink it if the run never happens */
};

static void help(void)
{
	cmd_print_usage(&cmd_trace_entry, stdout);
	fputs("\n"
	      "Run CMD under libkmux.so and write every CUDA kernel launch,\n"
	      "copy, synchronization and allocation of every process of CMD to\n"
	      "one Chrome/Perfetto trace (open it in ui.perfetto.dev).\n"
	      "\n"
	      "  -o, --output FILE     trace file (default " DEFAULT_OUTPUT ")\n"
	      "      --timing          time each launch on the GPU with CUDA events\n"
	      "      --json            print the summary as JSON on stdout after CMD\n"
	      "                        exits, instead of the summary on stderr\n"
	      "      --summary-json FILE  also write the summary as JSON to FILE\n"
	      "  -q, --quiet           no summary on stderr (warnings still shown)\n"
	      "      --keep            keep the per-process files; print where\n"
	      "  -h, --help            this help\n"
	      "\n"
	      "Exit status: that of CMD (128+N if signal N killed it); 127 when\n"
	      "CMD is not found, 126 when it cannot be run, 2 for bad usage,\n"
	      "1 when the trace could not be written.  See kmux-trace(1).\n",
	      stdout);
}

static int parse_opts(int argc, char **argv, struct trace_opts *o)
{
	static const struct option longopts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "timing", no_argument, NULL, OPT_TIMING },
		{ "json", no_argument, NULL, OPT_JSON },
		{ "summary-json", required_argument, NULL, OPT_SUMMARY_JSON },
		{ "quiet", no_argument, NULL, 'q' },
		{ "keep", no_argument, NULL, OPT_KEEP },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	/* '+': CMD's own options are CMD's. */
	while ((c = getopt_long(argc, argv, "+:o:qh", longopts, NULL)) != -1) {
		switch (c) {
		case 'o':
			o->output = optarg;
			break;
		case OPT_TIMING:
			o->timing = 1;
			break;
		case OPT_JSON:
			o->json = 1;
			break;
		case OPT_SUMMARY_JSON:
			o->summary_json = optarg;
			break;
		case 'q':
			o->quiet = 1;
			break;
		case OPT_KEEP:
			o->keep = 1;
			break;
		case 'h':
			help();
			return -1;
		default:
			return cmd_option_error(&cmd_trace_entry, argv, c);
		}
	}
	if (!*o->output)
		return cmd_usage_error(&cmd_trace_entry, "empty output file name");
	if (optind >= argc)
		return cmd_usage_error(&cmd_trace_entry, "no command given");
	return 0;
}

/* Open for writing now, without truncating what is there until we write. */
static int outfile_open(struct outfile *f, const char *path)
{
	f->path = path;
	f->created = 0;
	f->fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
	if (f->fd >= 0) {
		f->created = 1;
		return 0;
	}
	if (errno == EEXIST)
		f->fd = open(path, O_WRONLY | O_CLOEXEC);
	return f->fd >= 0 ? 0 : -errno;
}

static void outfile_discard(struct outfile *f)
{
	if (f->fd < 0)
		return;
	close(f->fd);
	f->fd = -1;
	if (f->created)
		unlink(f->path);
}

/* A FILE for writing it, truncated now; the fd is the FILE's from here. */
static FILE *outfile_stream(struct outfile *f)
{
	struct stat st;
	FILE *s;

	if (fstat(f->fd, &st) == 0 && S_ISREG(st.st_mode) &&
	    ftruncate(f->fd, 0) != 0)
		return NULL;
	s = fdopen(f->fd, "w");
	if (s)
		f->fd = -1;
	return s;
}

static int make_tmpdir(char *buf, size_t len)
{
	const char *base = getenv("TMPDIR");

	if (!base || !*base)
		base = "/tmp";
	if ((size_t)snprintf(buf, len, "%s/kmux-trace.XXXXXX", base) >= len)
		return -ENAMETOOLONG;
	return mkdtemp(buf) ? 0 : -errno;
}

/* The directory holds only what the preload wrote: plain files. */
static int remove_tmpdir(const char *dir)
{
	char path[PATH_MAX];
	struct dirent *de;
	DIR *d = opendir(dir);
	int r = 0;

	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		if (unlink(path) && !r)
			r = -errno;
	}
	closedir(d);
	if (rmdir(dir) && !r)
		r = -errno;
	return r;
}


static void print_warnings(const struct trace_merge *m)
{
	size_t n = trace_merge_nwarnings(m), kept = trace_merge_nkept_warnings(m);

	for (size_t i = 0; i < kept; i++)
		fprintf(stderr, "kmux: warning: %s\n", trace_merge_warning(m, i));
	if (n > kept)
		fprintf(stderr, "kmux: warning: ... and %zu more\n", n - kept);
}

static int write_summary_json(const struct trace_merge *m,
			      struct outfile *f, FILE *to)
{
	cJSON *j = trace_merge_summary_json(m);
	char *s = j ? cJSON_Print(j) : NULL;
	FILE *out = to;
	int r = 0;

	cJSON_Delete(j);
	if (!s)
		return -ENOMEM;
	if (!out && !(out = outfile_stream(f)))
		r = -errno;
	if (!r && (fprintf(out, "%s\n", s) < 0 || fflush(out)))
		r = -errno;
	if (out && out != to && fclose(out) && !r)
		r = -errno;
	free(s);
	return r;
}

/* Merge what the processes wrote into the trace file; 0 or -errno. */
static int merge(const struct trace_opts *o, const char *dir, double wall_s,
		 struct outfile *out, struct outfile *sum)
{
	struct trace_merge *m = trace_merge_new();
	FILE *f = NULL;
	int r;

	if (!m)
		return -ENOMEM;
	r = trace_merge_add_dir(m, dir);
	if (r) {
		fprintf(stderr, "kmux: cannot read %s: %s\n", dir, strerror(-r));
		goto out;
	}
	r = trace_merge_finish(m, wall_s);
	if (r) {
		fprintf(stderr, "kmux: cannot merge the trace: %s\n",
			strerror(-r));
		goto out;
	}
	print_warnings(m);
	f = outfile_stream(out);
	if (!f) {
		r = -errno;
	} else {
		r = trace_merge_write(m, f);
		if (fclose(f) && !r)
			r = -errno;
	}
	if (r) {
		fprintf(stderr, "kmux: cannot write %s: %s\n", o->output,
			strerror(-r));
		goto out;
	}
	if (o->json) {
		r = write_summary_json(m, NULL, stdout);
		if (r)
			fprintf(stderr, "kmux: cannot write the summary to "
				"stdout: %s\n", strerror(-r));
	} else if (!o->quiet) {
		trace_merge_print_summary(m, stderr, o->output);
	}
	if (!r && o->summary_json) {
		r = write_summary_json(m, sum, NULL);
		if (r)
			fprintf(stderr, "kmux: cannot write %s: %s\n",
				o->summary_json, strerror(-r));
	}
out:
	trace_merge_free(m);
	return r;
}

static int trace_exec(int argc, char **argv)
{
	struct trace_opts o = { .output = DEFAULT_OUTPUT };
	struct outfile out = { .fd = -1 }, sum = { .fd = -1 };
	char lib[PATH_MAX], err[PATH_MAX + 128], dir[PATH_MAX];
	char env_dir[PATH_MAX + 32];
	const char *env[3];
	struct spawn sp;
	char **cmd;
	double t0;
	int r, status = KMUX_EXIT_FAILURE;

	r = parse_opts(argc, argv, &o);
	if (r)
		return r < 0 ? KMUX_EXIT_OK : r;
	cmd = argv + optind;

	if (spawn_find_library(lib, sizeof(lib), err, sizeof(err))) {
		fprintf(stderr, "kmux: %s\n", err);
		return KMUX_EXIT_FAILURE;
	}
	r = outfile_open(&out, o.output);
	if (r) {
		fprintf(stderr, "kmux: cannot open %s: %s\n", o.output,
			strerror(-r));
		return KMUX_EXIT_FAILURE;
	}
	if (o.summary_json && (r = outfile_open(&sum, o.summary_json))) {
		fprintf(stderr, "kmux: cannot open %s: %s\n", o.summary_json,
			strerror(-r));
		goto err_out;
	}
	r = make_tmpdir(dir, sizeof(dir));
	if (r) {
		fprintf(stderr, "kmux: cannot create a temporary directory "
			"for the trace: %s\n", strerror(-r));
		goto err_out;
	}

	snprintf(env_dir, sizeof(env_dir), "KMUX_TRACE_DIR=%s", dir);
	env[0] = env_dir;
	/* Not inherited from an outer environment by accident. */
	env[1] = o.timing ? "KMUX_TRACE_TIMING=1" : "KMUX_TRACE_TIMING";
	env[2] = NULL;
	fflush(stdout);
	fflush(stderr);
	t0 = cmd_monotonic_s();
	r = spawn_start(&(struct spawn_opts){ cmd, lib, env }, &sp);
	if (r) {
		if (sp.exec_errno) {
			fprintf(stderr, "kmux: cannot run '%s': %s\n", cmd[0],
				strerror(sp.exec_errno));
			status = spawn_exec_status(sp.exec_errno);
		} else {
			fprintf(stderr, "kmux: cannot start '%s': %s\n", cmd[0],
				strerror(-r));
		}
		remove_tmpdir(dir);
		goto err_out;
	}
	status = spawn_wait(&sp);
	if (status < 0) {
		fprintf(stderr, "kmux: waiting for '%s': %s\n", cmd[0],
			strerror(-status));
		status = KMUX_EXIT_FAILURE;
	}

	/* Whatever CMD did, what it traced is worth keeping. */
	r = merge(&o, dir, cmd_monotonic_s() - t0, &out, &sum);
	if (o.keep) {
		fprintf(stderr, "kmux trace: per-process files kept in %s\n",
			dir);
	} else {
		int rr = remove_tmpdir(dir);

		if (rr)
			fprintf(stderr, "kmux: warning: cannot remove %s: %s\n",
				dir, strerror(-rr));
	}
	/* Still open here only if never written: no empty file left. */
	outfile_discard(&sum);
	outfile_discard(&out);
	if (r && status == 0)
		status = KMUX_EXIT_FAILURE;
	return status;

err_out:
	outfile_discard(&sum);
	outfile_discard(&out);
	return status;
}

const struct cmd_entry cmd_trace_entry = {
	.name = "trace",
	.usage = "[-o FILE] [--timing] [--json] [--summary-json FILE] [-q] "
		 "[--keep] [--] CMD [ARGS...]",
	.summary = "run a command and write a trace of its GPU work",
	.exec = trace_exec,
};
