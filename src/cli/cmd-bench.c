/*
 * cmd-bench.c - `kmux bench run`: run a batch of benchmark commands as
 * plain processes under libkmux.so, N at a time, and report each one's
 * exit status and wall time (issue 6).
 *
 * The commands decide what is exclusive: a benchmark that times its kernel
 * inside kmux_exclusive_begin()/end() (or `with kmux.exclusive():`) gets
 * its GPU alone for that part only, and everything else of the batch runs
 * concurrently.  Each command is a shell command line (sh -c), from the
 * arguments or from a file (-f, one a line, '#' comments).
 *
 * Output: one JSON object a line per command, in completion order, on
 * stdout or --json FILE: {"i", "cmd", "exit", "signal", "start_s",
 * "wall_s"}; its output goes to --out DIR/I.out and I.err (else inherited);
 * a summary line on stderr.  Exit: 0 when every command exited 0, 1 when
 * any failed, 2 for bad usage.
 *
 * With --workers N the batch goes through N persistent context workers
 * instead (cmd-bench-serve.c); `bench serve` and `bench submit` are there.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cmd-bench.h"
#include "cmd.h"
#include "num.h"
#include "cpulist.h"
#include "spawn.h"

#define BENCH_MAX_CONCURRENCY 256

struct bench_cmd {
	char *line;
	pid_t pid;
	double start, end;
	int status;
};

struct bench_opts {
	long concurrency;
	int workers;
	const char *python;
	const char *file;
	const char *json;
	const char *out_dir;
	bool no_preload;
	bool avoid;		/* keep off avoid_cpus */
	cpu_set_t avoid_cpus;
};

/* SIGINT/SIGTERM/SIGHUP: stop the batch (set by the handler). */
static volatile sig_atomic_t bench_stop;

static void on_stop(int sig)
{
	bench_stop = sig;
}

static void stop_signals(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_stop;	/* no SA_RESTART: waitpid returns */
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
}


static void help(void)
{
	cmd_print_usage(&cmd_bench_entry, stdout);
	fputs("\n"
	      "bench run: run a batch of benchmark commands (shell command\n"
	      "lines) under libkmux.so, N at a time, and report each one's\n"
	      "exit status and wall time as JSON lines.  Benchmarks that time\n"
	      "inside exclusive regions (kmux.h, `with kmux.exclusive():`)\n"
	      "get their GPU alone for that part only.\n"
	      "\n"
	      "  -j, --concurrency N  commands at a time (default 1)\n"
	      "  -f, --file FILE      commands from FILE, one a line ('-':\n"
	      "                       stdin), after those given as arguments\n"
	      "      --json FILE      the records to FILE (default stdout)\n"
	      "  -o, --out DIR        command I's output in DIR/I.out, I.err\n"
	      "      --no-preload     run the commands without libkmux.so\n"
	      "  -w, --workers N      through N persistent workers that keep a\n"
	      "                       CUDA context: Python commands ([python]\n"
	      "                       SCRIPT.py ARGS) run in them, the others\n"
	      "                       as plain processes; implies -j N\n"
	      "      --python PY      the workers' interpreter (python3)\n"
	      "      --avoid-cpus LIST  start the commands and workers off\n"
	      "                       these CPUs (kmux daemon --region-cpus:\n"
	      "                       before a command registers, kmuxd\n"
	      "                       cannot keep it off them)\n"
	      "  -h, --help           this help\n"
	      "\n"
	      "Exit status: 0 when every command exited 0, 1 otherwise, 2 for\n"
	      "bad usage.\n"
	      "\n"
	      "bench serve / bench submit: persistent workers for jobs sent one\n"
	      "at a time (`kmux bench serve --help`).  See kmux-bench(1).\n",
	      stdout);
}

static int add_cmd(struct bench_cmd **v, size_t *n, size_t *cap,
		   const char *line)
{
	if (*n == *cap) {
		size_t nc = *cap ? *cap * 2 : 64;
		struct bench_cmd *nv = realloc(*v, nc * sizeof(**v));

		if (!nv)
			return -ENOMEM;
		*v = nv;
		*cap = nc;
	}
	memset(&(*v)[*n], 0, sizeof(**v));
	(*v)[*n].line = strdup(line);
	if (!(*v)[*n].line)
		return -ENOMEM;
	(*n)++;
	return 0;
}

static int read_file(const char *path, struct bench_cmd **v, size_t *n,
		     size_t *cap)
{
	FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "re");
	char *line = NULL;
	size_t len = 0;
	ssize_t got;
	int r = 0;

	if (!f) {
		r = -errno;
		fprintf(stderr, "kmux: bench: cannot open %s: %s\n", path,
			strerror(-r));
		return r;
	}
	errno = 0;
	while (r == 0 && (got = getline(&line, &len, f)) >= 0) {
		char *p = line;

		while (got > 0 && (line[got - 1] == '\n' || line[got - 1] == '\r'))
			line[--got] = '\0';
		while (*p == ' ' || *p == '\t')
			p++;
		if (*p && *p != '#')
			r = add_cmd(v, n, cap, p);
	}
	/* A directory, an I/O error: not an empty list of commands. */
	if (r == 0 && ferror(f)) {
		r = errno ? -errno : -EIO;
		fprintf(stderr, "kmux: bench: cannot read %s: %s\n", path,
			strerror(-r));
	}
	free(line);
	if (f != stdin)
		fclose(f);
	return r;
}

static void json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20)
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}

/* Redirect fd to DIR/I.EXT in the child; -1 on failure (reported). */
static int redirect(const char *dir, size_t i, const char *ext, int fd)
{
	char path[4096];
	int o;

	snprintf(path, sizeof(path), "%s/%zu.%s", dir, i, ext);
	o = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (o < 0 || dup2(o, fd) < 0) {
		fprintf(stderr, "kmux: bench: %s: %s\n", path, strerror(errno));
		return -1;
	}
	close(o);
	return 0;
}

static pid_t start(const struct bench_opts *o, char **env, size_t i,
		   struct bench_cmd *c)
{
	char *argv[] = { "/bin/sh", "-c", c->line, NULL };
	pid_t pid = fork();

	if (pid != 0) {
		if (pid > 0)
			setpgid(pid, pid);
		return pid;
	}
	/* Its own process group: stopping the batch stops all of it. */
	setpgid(0, 0);
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	signal(SIGHUP, SIG_DFL);
	if (o->out_dir && (redirect(o->out_dir, i, "out", STDOUT_FILENO) ||
			   redirect(o->out_dir, i, "err", STDERR_FILENO)))
		_exit(126);
	execve(argv[0], argv, env);
	fprintf(stderr, "kmux: bench: cannot run /bin/sh: %s\n",
		strerror(errno));
	_exit(127);
}

static void record(FILE *f, size_t i, const struct bench_cmd *c, double t0)
{
	int code = WIFEXITED(c->status) ? WEXITSTATUS(c->status) : -1;
	int sig = WIFSIGNALED(c->status) ? WTERMSIG(c->status) : 0;

	fprintf(f, "{\"i\": %zu, \"cmd\": ", i);
	json_str(f, c->line);
	fprintf(f, ", \"exit\": %d, \"signal\": %d, \"start_s\": %.6f, "
		"\"wall_s\": %.6f}\n", code, sig, c->start - t0,
		c->end - c->start);
	fflush(f);
}

/*
 * Take the CPUs of --avoid-cpus out of this process's affinity, so that
 * every command and worker it starts inherits the smaller mask: kmuxd pins
 * a region's holder to its reserved CPUs (--region-cpus) and keeps the
 * registered tasks off them, but a command that has not reached cuInit
 * yet (a script importing torch) is not registered.  0, or -1 when that
 * would leave no CPU or the mask cannot be changed.
 */
static int bench_avoid_cpus(const cpu_set_t *avoid)
{
	cpu_set_t cur;

	if (sched_getaffinity(0, sizeof(cur), &cur)) {
		fprintf(stderr, "kmux: bench: cannot read the CPU affinity: "
			"%s\n", strerror(errno));
		return -1;
	}
	cpulist_without(&cur, &cur, avoid);
	if (CPU_COUNT(&cur) == 0) {
		fprintf(stderr, "kmux: bench: --avoid-cpus leaves no CPU to "
			"run the commands on\n");
		return -1;
	}
	if (sched_setaffinity(0, sizeof(cur), &cur)) {
		fprintf(stderr, "kmux: bench: cannot set the CPU affinity: "
			"%s\n", strerror(errno));
		return -1;
	}
	return 0;
}

static int bench_run(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "concurrency", required_argument, NULL, 'j' },
		{ "file", required_argument, NULL, 'f' },
		{ "json", required_argument, NULL, 'J' },
		{ "out", required_argument, NULL, 'o' },
		{ "no-preload", no_argument, NULL, 'P' },
		{ "workers", required_argument, NULL, 'w' },
		{ "python", required_argument, NULL, 'y' },
		{ "avoid-cpus", required_argument, NULL, 'A' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const struct cmd_entry *e = &cmd_bench_entry;
	bool j_given = false;
	char cerr[128];
	struct bench_opts o = { .concurrency = 1 };
	struct bench_cmd *cmds = NULL;
	size_t n = 0, cap = 0, next = 0, done = 0, failed = 0, running = 0;
	size_t nall = 0;	/* commands read; n shrinks when stopped */
	bool stopped = false;
	char lib[4096], err[4200], **env = NULL;
	FILE *out = stdout;
	double t0;
	long v;
	int c, r = KMUX_EXIT_FAILURE;

	optind = 1;
	while ((c = getopt_long(argc, argv, "+:j:f:o:w:h", longopts,
				NULL)) != -1) {
		switch (c) {
		case 'j':
			if (num_parse(optarg, 1, BENCH_MAX_CONCURRENCY, &v))
				return cmd_usage_error(e, "bad --concurrency "
					"'%s' (1..%d)", optarg,
					BENCH_MAX_CONCURRENCY);
			o.concurrency = v;
			j_given = true;
			break;
		case 'w':
			if (num_parse(optarg, 1, BENCH_MAX_CONCURRENCY, &v))
				return cmd_usage_error(e, "bad --workers "
					"'%s' (1..%d)", optarg,
					BENCH_MAX_CONCURRENCY);
			o.workers = (int)v;
			break;
		case 'y':
			o.python = optarg;
			break;
		case 'f':
			o.file = optarg;
			break;
		case 'J':
			o.json = optarg;
			break;
		case 'o':
			o.out_dir = optarg;
			break;
		case 'P':
			o.no_preload = true;
			break;
		case 'A':
			if (cpulist_parse_here(optarg, &o.avoid_cpus, cerr,
					       sizeof(cerr)))
				return cmd_usage_error(e, "bad --avoid-cpus "
						       "'%s': %s", optarg,
						       cerr);
			o.avoid = true;
			break;
		case 'h':
			help();
			return KMUX_EXIT_OK;
		default:
			return cmd_option_error(e, argv, c);
		}
	}
	for (int i = optind; i < argc; i++)
		if (add_cmd(&cmds, &n, &cap, argv[i]))
			goto out_nomem;
	if (o.file && read_file(o.file, &cmds, &n, &cap))
		goto out;
	nall = n;
	if (n == 0) {
		r = cmd_usage_error(e, "no commands given");
		goto out;
	}
	if (o.workers && j_given && o.concurrency != o.workers) {
		r = cmd_usage_error(e, "--workers N runs N at a time: -j %ld "
				    "differs", o.concurrency);
		goto out;
	}
	if (o.avoid && bench_avoid_cpus(&o.avoid_cpus))
		goto out;
	if (o.out_dir && mkdir(o.out_dir, 0755) && errno != EEXIST) {
		fprintf(stderr, "kmux: bench: cannot create %s: %s\n",
			o.out_dir, strerror(errno));
		goto out;
	}
	if (!o.no_preload &&
	    spawn_find_library(lib, sizeof(lib), err, sizeof(err))) {
		fprintf(stderr, "kmux: %s\n", err);
		goto out;
	}
	env = spawn_env_build(&(struct spawn_opts){
		.library = o.no_preload ? NULL : lib }, environ);
	if (!env)
		goto out_nomem;
	if (o.json && !(out = fopen(o.json, "we"))) {
		fprintf(stderr, "kmux: bench: cannot create %s: %s\n", o.json,
			strerror(errno));
		goto out;
	}
	if (o.workers) {
		char **lines = calloc(n, sizeof(*lines));

		if (!lines)
			goto out_nomem;
		for (size_t i = 0; i < n; i++)
			lines[i] = cmds[i].line;
		r = bench_run_workers(&(struct bench_batch){
			.lines = lines, .n = n, .workers = o.workers,
			.python = o.python, .out_dir = o.out_dir, .json = out,
			.no_preload = o.no_preload });
		free(lines);
		goto out;
	}
	stop_signals();
	t0 = cmd_monotonic_s();
	while (done < n) {
		int st;
		pid_t pid;

		if (bench_stop && !stopped) {
			/* Killed (a timeout): the whole of every running
			 * command, then no more. */
			fprintf(stderr, "kmux: bench: signal %d: stopping %zu "
				"running command(s), %zu not started\n",
				(int)bench_stop, running, n - next);
			for (size_t i = 0; i < next; i++)
				if (cmds[i].pid > 0)
					kill(-cmds[i].pid, SIGKILL);
			n = next;
			stopped = true;
			if (done >= n)
				break;
		}
		while (!bench_stop && next < n &&
		       running < (size_t)o.concurrency) {
			cmds[next].start = cmd_monotonic_s();
			cmds[next].pid = start(&o, env, next, &cmds[next]);
			if (cmds[next].pid < 0) {
				fprintf(stderr, "kmux: bench: fork: %s\n",
					strerror(errno));
				cmds[next].status = 127 << 8;
				cmds[next].end = cmd_monotonic_s();
				record(out, next, &cmds[next], t0);
				failed++;
				done++;
			} else {
				running++;
			}
			next++;
		}
		if (!running)
			continue;
		pid = waitpid(-1, &st, 0);
		if (pid < 0 && errno == EINTR && bench_stop)
			continue;	/* the stop above */
		if (pid < 0 && errno == EINTR)
			continue;
		if (pid < 0) {
			fprintf(stderr, "kmux: bench: waitpid: %s\n",
				strerror(errno));
			goto out;
		}
		for (size_t i = 0; i < next; i++) {
			if (cmds[i].pid != pid)
				continue;
			cmds[i].pid = 0;
			cmds[i].status = st;
			cmds[i].end = cmd_monotonic_s();
			record(out, i, &cmds[i], t0);
			failed += !(WIFEXITED(st) && WEXITSTATUS(st) == 0);
			running--;
			done++;
		}
	}
	{
		double wall = cmd_monotonic_s() - t0;

		fprintf(stderr, "kmux: bench: %zu command(s), %zu failed, "
			"%.3f s, %.2f commands/min, concurrency %ld\n", n,
			failed, wall, wall > 0 ? (double)n * 60.0 / wall : 0.0,
			o.concurrency);
	}
	r = failed || bench_stop ? KMUX_EXIT_FAILURE : KMUX_EXIT_OK;
	goto out;
out_nomem:
	fprintf(stderr, "kmux: bench: out of memory\n");
out:
	if (out && out != stdout)
		fclose(out);
	spawn_env_free(env);
	for (size_t i = 0; i < (nall > n ? nall : n); i++)
		free(cmds[i].line);
	free(cmds);
	return r;
}

static int bench_exec(int argc, char **argv)
{
	if (argc < 2)
		return cmd_usage_error(&cmd_bench_entry, "no subcommand "
				       "(run, serve, submit)");
	if (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0) {
		help();
		return KMUX_EXIT_OK;
	}
	if (strcmp(argv[1], "run") == 0)
		return bench_run(argc - 1, argv + 1);
	if (strcmp(argv[1], "serve") == 0)
		return bench_serve(argc - 1, argv + 1);
	if (strcmp(argv[1], "submit") == 0)
		return bench_submit(argc - 1, argv + 1);
	return cmd_usage_error(&cmd_bench_entry, "unknown subcommand '%s' "
			       "(run, serve, submit)", argv[1]);
}

const struct cmd_entry cmd_bench_entry = {
	.name = "bench",
	.usage = "run [-j N | -w N] [-f FILE] [--json FILE] [-o DIR] "
		 "[--no-preload] [--avoid-cpus LIST] [CMD...] | serve [-w N] "
		 "| submit -- SCRIPT.py ARGS...",
	.summary = "run benchmark commands, N at a time or in persistent "
		   "workers",
	.exec = bench_exec,
};
