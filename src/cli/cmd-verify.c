/*
 * cmd-verify.c - `kmux verify`: run a command twice under libkmux.so,
 * unscheduled and with --streams N, each recording every device-to-host
 * copy (number, size, hash of the bytes, the kernels launched before it)
 * to its own log (KMUX_VERIFY_LOG), and say whether the two runs read the
 * same results back, or where they first differ.
 *
 * This is how a user checks the one assumption stream scheduling makes:
 * kernels reach device memory only through the pointers in their
 * parameters.  A kernel that follows a pointer stored in memory, or writes
 * a __device__ global, can be reordered wrongly; the first read-back it
 * affects then differs.
 *
 * CMD's stdout is captured per run (so that the report is the only thing
 * on kmux's stdout) and compared: a difference is reported, and is a
 * divergence only with --stdout (programs print timings).  CMD's stderr
 * passes through.  Files live in a private temporary directory, removed
 * unless --keep.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd.h"
#include "run-env.h"
#include "spawn.h"
#include "verify-log.h"

#define VERIFY_DEFAULT_STREAMS	4

/* Exit statuses of `kmux verify` (besides 0 identical, 2 usage, 126, 127). */
#define VERIFY_EXIT_DIVERGED	1	/* the runs read back different data */
#define VERIFY_EXIT_CMD_FAILED	3	/* CMD failed without scheduling */
#define VERIFY_EXIT_SCHED_FAILED 4	/* CMD failed only when scheduled */
#define VERIFY_EXIT_ERROR	5	/* kmux could not carry out the check */
/* The scheduled run was not scheduled. */
#define VERIFY_EXIT_UNSCHEDULED	6

enum {
	OPT_STDOUT = 256,
	OPT_KEEP,
	OPT_MEMORY,
};

struct verify_opts {
	int streams;
	const char *memory;	/* --memory MODE of the second run */
	int stdout_counts;
	int keep;
};

/* One run of CMD and what it left. */
struct verify_run {
	const char *label;
	int streams;		/* 0: unscheduled */
	const char *memory;	/* KMUX_MEMORY, NULL: "quota" */
	char log[PATH_MAX];
	char out[PATH_MAX];
	int status;
	struct vlog vlog;
};

static void help(void)
{
	cmd_print_usage(&cmd_verify_entry, stdout);
	fputs("\n"
	      "Run CMD twice, without scheduling and with --streams N, and\n"
	      "compare every device-to-host copy the two runs make (in\n"
	      "program order, by a hash of the bytes).  A difference means\n"
	      "CMD breaks the assumption stream scheduling makes: kernels\n"
	      "reach memory only through pointers in their parameters.\n"
	      "\n"
	      "  -s, --streams N   pool size of the scheduled run (default 4)\n"
	      "      --memory MODE the scheduled run also runs under the\n"
	      "                    memory manager (lazy or evict; see\n"
	      "                    kmux-run(1)); the first never does\n"
	      "      --stdout      a difference in CMD's stdout is a\n"
	      "                    divergence too (only reported otherwise)\n"
	      "      --keep        keep the logs and CMD's stdout\n"
	      "  -h, --help        this help\n"
	      "\n"
	      "Exit status: 0 identical, 1 the runs diverged, 2 bad usage,\n"
	      "3 CMD failed without scheduling, 4 CMD failed only when\n"
	      "scheduled, 5 kmux could not do the check, 6 the scheduled\n"
	      "run was not scheduled (nothing compared), 126/127 CMD\n"
	      "cannot be run / is not found.  See kmux-verify(1).\n", stdout);
}

static int verify_parse(int argc, char **argv, struct verify_opts *o)
{
	static const struct option longopts[] = {
		{ "streams", required_argument, NULL, 's' },
		{ "stdout", no_argument, NULL, OPT_STDOUT },
		{ "keep", no_argument, NULL, OPT_KEEP },
		{ "memory", required_argument, NULL, OPT_MEMORY },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *re;
	char why[256];
	int c;

	while ((c = getopt_long(argc, argv, "+:s:h", longopts, NULL)) != -1) {
		switch (c) {
		case 's':
			if (run_parse_streams(optarg, &o->streams))
				return cmd_usage_error(&cmd_verify_entry,
					"--streams %s: not an integer in 1..%d",
					optarg, RUN_STREAMS_MAX);
			break;
		case OPT_STDOUT:
			o->stdout_counts = 1;
			break;
		case OPT_KEEP:
			o->keep = 1;
			break;
		case OPT_MEMORY:
			if (run_parse_memory(optarg))
				return cmd_usage_error(&cmd_verify_entry,
					"--memory '%s': not quota, lazy or "
					"evict", optarg);
			o->memory = optarg;
			break;
		case 'h':
			help();
			return -1;
		default:
			return cmd_option_error(&cmd_verify_entry, argv, c);
		}
	}
	if (optind >= argc)
		return cmd_usage_error(&cmd_verify_entry, "no command given");
	/* The scheduled run would not be scheduled: nothing to check. */
	re = getenv("KMUX_BARRIER_KERNELS");
	if (run_check_barrier_kernels(re, why, sizeof(why))) {
		fprintf(stderr, "kmux: KMUX_BARRIER_KERNELS=%s: %s; CMD not "
			"started (the scheduled run would be unscheduled)\n",
			re, why);
		return KMUX_EXIT_USAGE;
	}
	return 0;
}

static int make_tmpdir(char *buf, size_t len)
{
	const char *base = getenv("TMPDIR");

	if (!base || !*base)
		base = "/tmp";
	if ((size_t)snprintf(buf, len, "%s/kmux-verify.XXXXXX", base) >= len)
		return -ENAMETOOLONG;
	return mkdtemp(buf) ? 0 : -errno;
}

/* The directory holds only what this command and the preload wrote. */
static void remove_tmpdir(const char *dir)
{
	char path[PATH_MAX + 256];
	struct dirent *de;
	DIR *d = opendir(dir);

	if (!d)
		return;
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		unlink(path);
	}
	closedir(d);
	rmdir(dir);
}

/*
 * Run CMD once with its stdout into run->out.  0 and run->status, or
 * -errno (a message printed; run->status holds the exit status to return
 * when CMD itself could not be run).
 */
static int verify_run_once(char **cmd, const char *lib, struct verify_run *run)
{
	struct run_env env;
	struct spawn sp;
	int fd, saved, r;

	run_env_init(&env);
	run_env_streams(&env, run->streams);
	r = run_env_memory(&env, run->memory ? run->memory : "quota");
	if (!r)
		r = run_env_set(&env, "KMUX_VERIFY_LOG", run->log);
	/*
	 * Every operation through the scheduler: a real run may stop passing
	 * work through whenever the GPU falls behind, so the check must not
	 * depend on this run's timing.  The user's own setting wins.
	 */
	if (!r && run->streams > 0 && !getenv("KMUX_PASS_THROUGH"))
		r = run_env_set(&env, "KMUX_PASS_THROUGH", "0");
	if (r) {
		fprintf(stderr, "kmux: %s: %s\n", run->log, strerror(-r));
		run->status = VERIFY_EXIT_ERROR;
		return r;
	}
	fd = open(run->out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0) {
		r = -errno;
		fprintf(stderr, "kmux: cannot create %s: %s\n", run->out,
			strerror(-r));
		run->status = VERIFY_EXIT_ERROR;
		return r;
	}
	fflush(stdout);
	fflush(stderr);
	/* The child inherits fd 1: CMD's stdout goes to the file. */
	saved = fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3);
	if (saved < 0 || dup2(fd, STDOUT_FILENO) < 0) {
		r = -errno;
		fprintf(stderr, "kmux: cannot redirect stdout: %s\n",
			strerror(-r));
		close(fd);
		if (saved >= 0)
			close(saved);
		run->status = VERIFY_EXIT_ERROR;
		return r;
	}
	r = spawn_start(&(struct spawn_opts){ cmd, lib, env.env }, &sp);
	dup2(saved, STDOUT_FILENO);
	close(saved);
	close(fd);
	if (r) {
		if (sp.exec_errno) {
			fprintf(stderr, "kmux: cannot run '%s': %s\n", cmd[0],
				strerror(sp.exec_errno));
			run->status = spawn_exec_status(sp.exec_errno);
		} else {
			fprintf(stderr, "kmux: cannot start '%s': %s\n",
				cmd[0], strerror(-r));
			run->status = VERIFY_EXIT_ERROR;
		}
		return r;
	}
	run->status = spawn_wait(&sp);
	if (run->status < 0) {
		fprintf(stderr, "kmux: waiting for '%s': %s\n", cmd[0],
			strerror(-run->status));
		run->status = VERIFY_EXIT_ERROR;
		return -ECHILD;
	}
	return 0;
}

static int verify_load(struct verify_run *run)
{
	char err[256];
	FILE *f = fopen(run->log, "re");
	int r;

	if (!f) {
		/* No copy at all (or no CUDA): an empty log. */
		if (errno == ENOENT) {
			memset(&run->vlog, 0, sizeof(run->vlog));
			return 0;
		}
		fprintf(stderr, "kmux: cannot read %s: %s\n", run->log,
			strerror(errno));
		return -errno;
	}
	r = vlog_read(f, &run->vlog, err, sizeof(err));
	fclose(f);
	if (r)
		fprintf(stderr, "kmux: %s: %s\n", run->log,
			r == -ENOMEM ? strerror(ENOMEM) : err);
	return r;
}

/* 0 same, 1 different (*line: the first differing line, from 1), -errno. */
static int compare_files(const char *a, const char *b, size_t *line)
{
	FILE *fa = fopen(a, "re"), *fb = fopen(b, "re");
	int ca, cb, r = 0;

	*line = 1;
	if (!fa || !fb) {
		r = -errno;
		goto out;
	}
	do {
		ca = getc(fa);
		cb = getc(fb);
		if (ca != cb) {
			r = 1;
			break;
		}
		if (ca == '\n')
			(*line)++;
	} while (ca != EOF);
out:
	if (fa)
		fclose(fa);
	if (fb)
		fclose(fb);
	return r;
}

static void print_copy(const char *label, const struct vlog_copy *c)
{
	if (!c) {
		printf("  %-12s no such copy\n", label);
		return;
	}
	if (c->hashed)
		printf("  %-12s %llu bytes, hash %016llx\n", label,
		       (unsigned long long)c->bytes,
		       (unsigned long long)c->hash);
	else
		printf("  %-12s %llu bytes, never synchronized\n", label,
		       (unsigned long long)c->bytes);
}

static void report_divergence(const struct verify_run *a,
			      const struct verify_run *b,
			      const struct vlog_diff *d)
{
	const struct vlog_copy *k = d->a ? d->a : d->b;

	printf("kmux verify: DIVERGED at device-to-host copy %zu", d->pos);
	if (a->vlog.n > 1 || b->vlog.n > 1)
		printf(" of process %zu", d->proc + 1);
	printf(": %s\n", d->what);
	print_copy("unscheduled", d->a);
	print_copy("scheduled", d->b);
	if (k)
		printf("  kernels launched last before it (oldest first): %s\n",
		       k->kernels);
	printf("kmux verify: with --streams %d the program read back other "
	       "data.  One of these kernels (or an earlier one) probably "
	       "reaches memory through a pointer that is not among its "
	       "parameters (stored in device memory, a __device__ global): "
	       "run it with KMUX_BARRIER_KERNELS='^(name|...)$', or not "
	       "scheduled.  See kmux-verify(1).\n", b->streams);
}

/*
 * Compare the two runs and report; the exit status.  A scheduled run that
 * was not scheduled (scheduling off in a process, nothing placed) would
 * compare two unscheduled runs: that is said instead of any verdict.
 * Contexts switched off after placing work (more blocking streams than
 * kmux bridges) only warn: `kmux run` switches them off at the same point,
 * so what it would run was checked, though the work after the switch ran
 * unscheduled in both runs.
 */
static int verify_conclude(const struct verify_opts *o, struct verify_run *a,
			   struct verify_run *b)
{
	const struct vlog_sched *s = &b->vlog.sched;
	struct vlog_diff d;
	char why[256];
	size_t line;
	int diff, out_diff, status = KMUX_EXIT_OK;

	if (vlog_unscheduled(&b->vlog, why, sizeof(why))) {
		printf("kmux verify: the scheduled run was not scheduled (%s): "
		       "nothing compared\n", why);
		return VERIFY_EXIT_UNSCHEDULED;
	}
	diff = vlog_compare(&a->vlog, &b->vlog, &d);
	if (diff < 0) {
		fprintf(stderr, "kmux: comparing the logs: %s\n",
			strerror(-diff));
		return VERIFY_EXIT_ERROR;
	}
	out_diff = compare_files(a->out, b->out, &line);
	if (diff) {
		report_divergence(a, b, &d);
		status = VERIFY_EXIT_DIVERGED;
	} else {
		printf("kmux verify: identical (%zu device-to-host copies; "
		       "--streams %d)\n", vlog_count(&a->vlog), b->streams);
	}
	if (s->off)
		printf("kmux verify: warning: the scheduled run switched "
		       "%llu context(s) off (more blocking streams than kmux "
		       "bridges, or a pool that could not be set up): the "
		       "work after that ran unscheduled, as it would under "
		       "kmux run, and was not checked\n",
		       (unsigned long long)s->off);
	if (out_diff < 0) {
		printf("kmux verify: stdout: cannot compare\n");
	} else if (out_diff) {
		printf("kmux verify: stdout differs from line %zu on%s\n", line,
		       o->stdout_counts ? "" : " (not counted: see --stdout)");
		if (o->stdout_counts)
			status = VERIFY_EXIT_DIVERGED;
	} else {
		printf("kmux verify: stdout: identical\n");
	}
	return status;
}

static int verify_exec(int argc, char **argv)
{
	struct verify_opts o = { .streams = VERIFY_DEFAULT_STREAMS };
	char lib[PATH_MAX], err[PATH_MAX + 128], dir[PATH_MAX - 32];
	struct verify_run run[2] = {
		{ .label = "unscheduled" }, { .label = "scheduled" },
	};
	int r, status = VERIFY_EXIT_ERROR;
	char **cmd;

	r = verify_parse(argc, argv, &o);
	if (r)
		return r < 0 ? KMUX_EXIT_OK : r;
	cmd = argv + optind;
	if (spawn_find_library(lib, sizeof(lib), err, sizeof(err))) {
		fprintf(stderr, "kmux: %s\n", err);
		return VERIFY_EXIT_ERROR;
	}
	r = make_tmpdir(dir, sizeof(dir));
	if (r) {
		fprintf(stderr, "kmux: cannot create a temporary directory: "
			"%s\n", strerror(-r));
		return VERIFY_EXIT_ERROR;
	}
	run[1].streams = o.streams;
	run[1].memory = o.memory;
	for (int i = 0; i < 2; i++) {
		snprintf(run[i].log, sizeof(run[i].log), "%s/%s.log", dir,
			 run[i].label);
		snprintf(run[i].out, sizeof(run[i].out), "%s/%s.stdout", dir,
			 run[i].label);
		if (verify_run_once(cmd, lib, &run[i])) {
			status = run[i].status;
			goto out;
		}
		if (run[i].status != 0) {
			fprintf(stderr, "kmux verify: '%s' exited with status "
				"%d in the %s run\n", cmd[0], run[i].status,
				run[i].label);
			status = i == 0 ? VERIFY_EXIT_CMD_FAILED
					: VERIFY_EXIT_SCHED_FAILED;
			goto out;
		}
	}
	if (verify_load(&run[0]) || verify_load(&run[1]))
		goto out_logs;
	status = verify_conclude(&o, &run[0], &run[1]);
out_logs:
	vlog_release(&run[0].vlog);
	vlog_release(&run[1].vlog);
out:
	fflush(stdout);
	if (o.keep)
		fprintf(stderr, "kmux verify: logs and stdout kept in %s\n",
			dir);
	else
		remove_tmpdir(dir);
	return status;
}

const struct cmd_entry cmd_verify_entry = {
	.name = "verify",
	.usage = "[-s|--streams N] [--memory MODE] [--stdout] [--keep] [--] CMD [ARGS...]",
	.summary = "check that scheduling a command's streams changes nothing",
	.exec = verify_exec,
};
