/*
 * cmd-run.c - `kmux run`: run a command under libkmux.so in the foreground,
 * forward signals to it, and exit with its status.  With --streams its
 * default-stream work is spread over a pool of streams; with --gpus, --mem
 * or --name it first waits for kmuxd to admit it (started if none runs, as
 * `kmux submit` does) and runs on the GPUs and under the memory quota the
 * daemon grants.
 *
 * The rule for talking to the daemon is explicit on purpose: any of
 * --gpus/--mem/--name/--exclusive asks for admission; without them `kmux run` never
 * touches the daemon (so --streams and plain runs behave the same with or
 * without one).
 *
 * Steps: parse into struct run_opts, turn the options into the child's
 * environment (run_opts_env), ask kmuxd for admission (run_admit: RUN, then
 * OK, maybe QUEUED, then ADMIT), spawn, wait, tell the daemon (FINISHED).
 * The connection stays open while CMD runs: the daemon takes its end as
 * the job's end.
 *
 * A daemon that goes away is usually being restarted.  While the job is
 * queued, kmux run looks for the new one (as kmux wait does) and takes the
 * job back with ATTACH: the new daemon keeps it queued for a few seconds
 * for that (docs/design-daemon.md).  Once CMD has ended, it looks for a
 * short while to record CMD's status.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "client.h"
#include "cmd.h"
#include "num.h"
#include "run-env.h"
#include "size.h"
#include "spawn.h"

struct run_opts {
	int streams;		/* 0: not asked for */
	bool stream_alloc;	/* --stream-alloc */
	const char *memory;	/* --memory MODE, NULL: not asked for */
	bool admit;		/* --gpus, --mem or --name: ask kmuxd */
	uint32_t ngpus;		/* default 1 */
	uint64_t mem;		/* bytes per GPU, 0: the daemon learns/guesses */
	const char *name;
	uint32_t flags;		/* PROTO_JOB_F_* (--exclusive) */
};

static void help(void)
{
	cmd_print_usage(&cmd_run_entry, stdout);
	fputs("\n"
	      "Run CMD under libkmux.so.\n"
	      "\n"
	      "  -s, --streams N   spread the work CMD submits to the default\n"
	      "                    stream over N streams (1..64) per context,\n"
	      "                    keeping every data dependency\n"
	      "      --stream-alloc with --streams: cuMemAlloc / cuMemFree\n"
	      "                    from a kmux memory pool, frees ordered\n"
	      "                    after their users instead of synchronizing\n"
	      "                    the device (not for programs using IPC)\n"
	      "      --memory MODE quota (default: only the quota), lazy\n"
	      "                    (large allocations take memory only once\n"
	      "                    used) or evict (lazy, and idle ones are\n"
	      "                    moved to host memory to stay within the\n"
	      "                    quota or KMUX_MEM_BUDGET)\n"
	      "  -g, --gpus K      wait for kmuxd to admit CMD on K GPUs\n"
	      "                    (default 1) and run it there\n"
	      "  -m, --mem SIZE    memory per GPU (512M, 12G, 1.5GiB), enforced\n"
	      "                    as CMD's quota; implies admission\n"
	      "  -n, --name NAME   a name for ps and top; implies admission\n"
	      "  -x, --exclusive   the GPUs alone for the whole command: no\n"
	      "                    other job is admitted beside it (the\n"
	      "                    command-granular baseline of exclusive\n"
	      "                    regions); implies admission\n"
	      "  -h, --help        this help\n"
	      "\n"
	      "With --gpus, --mem or --name, kmuxd (started if none runs)\n"
	      "queues CMD like `kmux submit`; kmux waits (Ctrl-C leaves the\n"
	      "queue), then runs CMD here with CUDA_VISIBLE_DEVICES and\n"
	      "KMUX_MEM_QUOTA set to what it was granted.  Without them the\n"
	      "daemon is not involved.\n"
	      "\n"
	      "Check a program with `kmux verify` before trusting --streams\n"
	      "with it.  Exit status: that of CMD (128+N if signal N killed\n"
	      "it); 127 when CMD is not found, 126 when it cannot be run,\n"
	      "2 for bad usage, 4 when CMD can never be admitted here (more\n"
	      "GPUs or memory than the node has), 5 when no daemon could be\n"
	      "reached, 130 when interrupted while queued, 1 when kmux could\n"
	      "not start it or its queued job was cancelled.  See\n"
	      "kmux-run(1).\n",
	      stdout);
}

/* 0, -1 after --help, or KMUX_EXIT_USAGE. */
static int run_parse(int argc, char **argv, struct run_opts *o)
{
	static const struct option longopts[] = {
		{ "streams", required_argument, NULL, 's' },
		{ "gpus", required_argument, NULL, 'g' },
		{ "mem", required_argument, NULL, 'm' },
		{ "name", required_argument, NULL, 'n' },
		{ "memory", required_argument, NULL, 'M' },
		{ "exclusive", no_argument, NULL, 'x' },
		{ "stream-alloc", no_argument, NULL, 'A' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const struct cmd_entry *e = &cmd_run_entry;
	const char *inherited, *re;
	char why[256];
	long v;
	int c, r, sched;

	/* '+': CMD's own options are CMD's. */
	while ((c = getopt_long(argc, argv, "+:s:g:m:n:xh", longopts,
				NULL)) != -1) {
		switch (c) {
		case 's':
			if (run_parse_streams(optarg, &o->streams))
				return cmd_usage_error(&cmd_run_entry,
					"--streams %s: not an integer in 1..%d",
					optarg, RUN_STREAMS_MAX);
			break;
		case 'g':
			if (num_parse(optarg, 1, PROTO_MAX_GPUS, &v))
				return cmd_usage_error(e, "bad --gpus '%s' "
					"(a number of GPUs, 1..%d)", optarg,
					PROTO_MAX_GPUS);
			o->ngpus = (uint32_t)v;
			o->admit = true;
			break;
		case 'm':
			r = size_parse(optarg, &o->mem);
			if (r == -ERANGE)
				return cmd_usage_error(e, "--mem '%s' is too "
						       "large", optarg);
			if (r || o->mem == 0)
				return cmd_usage_error(e, "bad --mem '%s' (a "
					"size such as 512M, 12G, 1.5GiB)",
					optarg);
			o->admit = true;
			break;
		case 'n':
			if (strlen(optarg) >= PROTO_MAX_NAME)
				return cmd_usage_error(e, "--name is longer "
					"than %d bytes", PROTO_MAX_NAME - 1);
			o->name = optarg;
			o->admit = true;
			break;
		case 'x':
			o->flags |= PROTO_JOB_F_EXCLUSIVE;
			o->admit = true;
			break;
		case 'M':
			if (run_parse_memory(optarg))
				return cmd_usage_error(e, "--memory '%s': not "
					"quota, lazy or evict", optarg);
			o->memory = optarg;
			break;
		case 'A':
			o->stream_alloc = true;
			break;
		case 'h':
			help();
			return -1;
		default:
			return cmd_option_error(&cmd_run_entry, argv, c);
		}
	}
	if (o->stream_alloc && !o->streams)
		return cmd_usage_error(e, "--stream-alloc needs --streams");
	if (o->stream_alloc && o->memory && strcmp(o->memory, "quota"))
		return cmd_usage_error(e, "--stream-alloc does not go with "
				       "--memory %s", o->memory);
	if (optind >= argc)
		return cmd_usage_error(&cmd_run_entry, "no command given");
	/* As submit and an admitted run say it, not a shell's 127. */
	if (!argv[optind][0])
		return cmd_usage_error(e, "empty command name");
	/*
	 * Scheduling asked for (here or by an inherited KMUX_STREAMS) with a
	 * regex the preload would reject: CMD would run unscheduled.
	 */
	inherited = getenv("KMUX_STREAMS");
	sched = o->streams || (inherited && *inherited);
	re = getenv("KMUX_BARRIER_KERNELS");
	if (sched && run_check_barrier_kernels(re, why, sizeof(why))) {
		fprintf(stderr, "kmux: KMUX_BARRIER_KERNELS=%s: %s; CMD not "
			"started (it would run unscheduled)\n", re, why);
		return KMUX_EXIT_USAGE;
	}
	return 0;
}

/* The child's environment for the options. */
static void run_opts_env(const struct run_opts *o, struct run_env *e)
{
	run_env_init(e);
	/* Without --streams, an inherited KMUX_STREAMS stays in effect. */
	if (o->streams)
		run_env_streams(e, o->streams);
	if (o->stream_alloc)
		if (run_env_set(e, "KMUX_STREAM_ALLOC", "1"))
			fprintf(stderr, "kmux: cannot set KMUX_STREAM_ALLOC; "
				"--stream-alloc is ignored\n");
	/* Without --memory, an inherited KMUX_MEMORY stays in effect. */
	if (o->memory)
		run_env_memory(e, o->memory);
}

/*
 * While queued, a signal that would end kmux leaves the queue: exiting
 * closes the connection, and the daemon cancels a RUN job whose client is
 * gone.  Only async-signal-safe calls here.
 */
static void queued_signal(int sig)
{
	static const char msg[] = "kmux: interrupted while queued\n";
	ssize_t n = write(STDERR_FILENO, msg, sizeof(msg) - 1);

	(void)n;
	_exit(128 + sig);
}

static const int queued_signals[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT };

/* How long a queued job's client looks for a daemon that went away... */
#define RUN_RECONNECT_S 60
/* ... and, CMD over, to record its status (kmux run's exit waits on it). */
#define RUN_FINISHED_RECONNECT_S 5

static void queued_signals_set(void (*handler)(int))
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = handler;
	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < sizeof(queued_signals) / sizeof(int); i++)
		sigaction(queued_signals[i], &sa, NULL);
}

/*
 * The daemon went away while job was queued: find the new one and take the
 * job back (ATTACH).  0 with *rep its answer (OK: wait on as before;
 * EXITED: the job ended meanwhile), or -errno with c->err set
 * (-ECONNRESET: no daemon came back in time).
 */
static int run_attach(struct client *c, uint64_t job, struct proto_msg *rep)
{
	struct proto_msg req = { .type = PROTO_ATTACH };
	int r;

	fprintf(stderr, "kmux: run: %s while job %" PRIu64 " was queued; "
		"waiting up to %d s for kmuxd to come back\n", c->err, job,
		RUN_RECONNECT_S);
	req.u.attach.job = job;
	r = client_call_again(c, &req, rep, RUN_RECONNECT_S);
	if (r == 0 && rep->type == PROTO_OK)
		fprintf(stderr, "kmux: run: job %" PRIu64 " is queued again\n",
			job);
	return r;
}

/*
 * Ask kmuxd to admit cmd and wait for it; on ADMIT, the GPUs and quota go
 * into env.  0 with *job set, or an exit status (c->err said why).
 */
static int run_admit(struct client *c, const struct run_opts *o, char **cmd,
		     struct run_env *env, uint64_t *job)
{
	struct proto_msg req = { .type = PROTO_RUN }, rep;
	char cwd[PATH_MAX], gpus[PROTO_MAX_GPUS * 4], num[32];
	uint32_t envc = 0, argc = 0;
	size_t off = 0;
	int r;

	if (!getcwd(cwd, sizeof(cwd))) {
		fprintf(stderr, "kmux: run: the current directory: %s\n",
			strerror(errno));
		return KMUX_EXIT_FAILURE;
	}
	/* The environment sent is the job's record and says its memory mode:
	 * kmuxd admits an evict-mode task by the working set its profile
	 * learned (docs/design-daemon.md).  The child gets the same value. */
	if (o->memory && setenv("KMUX_MEMORY", o->memory, 1))
		fprintf(stderr, "kmux: run: cannot set KMUX_MEMORY in the job's "
			"record: %s\n", strerror(errno));
	for (char **e = environ; *e; e++)
		envc++;
	while (cmd[argc])
		argc++;
	req.u.job.flags = o->flags;
	req.u.job.ngpus = o->ngpus;
	req.u.job.mem = o->mem;
	req.u.job.name = o->name ? o->name : "";
	req.u.job.cwd = cwd;
	req.u.job.argv.count = argc;
	req.u.job.argv.vec = (const char *const *)cmd;
	req.u.job.env.count = envc;
	req.u.job.env.vec = (const char *const *)environ;

	r = client_open(c, CLIENT_AUTOSTART);
	if (r) {
		fprintf(stderr, "kmux: run: %s\n", c->err);
		return KMUX_EXIT_NODAEMON;
	}
	/* From the request on, an interrupt takes the job off the queue. */
	queued_signals_set(queued_signal);
	r = client_call(c, &req, &rep);
	if (r == 0 && rep.type != PROTO_OK) {
		snprintf(c->err, sizeof(c->err), "unexpected %s reply",
			 proto_type_name(rep.type));
		r = -EPROTO;
	}
	if (r) {
		fprintf(stderr, "kmux: run: %s\n", c->err);
		return client_exit_status(r, 1);
	}
	*job = rep.u.ok.id;
	for (;;) {
		r = client_recv(c, &rep);
		if (client_lost(r)) {
			r = run_attach(c, *job, &rep);
			if (r == 0 && rep.type == PROTO_OK)
				continue;
			if (r && !client_lost(r)) {
				/* The new daemon's answer: no such job, ... */
				fprintf(stderr, "kmux: run: %s\n", c->err);
				return KMUX_EXIT_FAILURE;
			}
		}
		if (r == 0 && rep.type == PROTO_QUEUED) {
			fprintf(stderr, "kmux: queued (position %" PRIu32
				", job %" PRIu64 ")\n",
				rep.u.queued.position + 1, *job);
			continue;
		}
		if (r == 0 && rep.type == PROTO_ADMIT)
			break;
		if (r == 0 && rep.type == PROTO_EXITED) {
			fprintf(stderr, "kmux: run: job %" PRIu64 " %s "
				"before it started\n", *job,
				rep.u.exited.state == PROTO_JOB_CANCELLED ?
				"was cancelled" : "failed");
			return rep.u.exited.state == PROTO_JOB_CANCELLED ?
				KMUX_EXIT_FAILURE : KMUX_EXIT_NOFIT;
		}
		if (r == 0) {
			snprintf(c->err, sizeof(c->err), "unexpected %s "
				 "message", proto_type_name(rep.type));
			r = -EPROTO;
		}
		if (client_lost(r))
			fprintf(stderr, "kmux: run: %s before job %" PRIu64
				" was admitted\n", c->err, *job);
		else
			fprintf(stderr, "kmux: run: %s\n", c->err);
		return client_exit_status(r, 1);
	}
	for (uint32_t i = 0; i < rep.u.admit.ngpus && off < sizeof(gpus); i++)
		off += (size_t)snprintf(gpus + off, sizeof(gpus) - off,
					"%s%" PRIu32, i ? "," : "",
					rep.u.admit.gpus[i]);
	r = run_env_set(env, "CUDA_VISIBLE_DEVICES", gpus);
	if (!r)
		r = run_env_set(env, "CUDA_DEVICE_ORDER", "PCI_BUS_ID");
	snprintf(num, sizeof(num), "%" PRIu64, rep.u.admit.quota);
	if (!r)
		r = run_env_set(env, "KMUX_MEM_QUOTA", num);
	snprintf(num, sizeof(num), "%" PRIu64, *job);
	if (!r)
		r = run_env_set(env, "KMUX_JOB", num);
	if (!r)
		r = run_env_set(env, "KMUX_SOCKET", c->paths.socket);
	/* kmuxd --mps: CMD's CUDA context is a client of its MPS daemon. */
	if (!r && rep.u.admit.mps_pipe[0])
		r = run_env_set(env, "CUDA_MPS_PIPE_DIRECTORY",
				rep.u.admit.mps_pipe);
	if (!r && rep.u.admit.mps_log[0])
		r = run_env_set(env, "CUDA_MPS_LOG_DIRECTORY",
				rep.u.admit.mps_log);
	if (r) {
		fprintf(stderr, "kmux: run: the environment: %s\n",
			strerror(-r));
		return KMUX_EXIT_FAILURE;
	}
	/* spawn_start() takes the signals over from here. */
	queued_signals_set(SIG_DFL);
	return 0;
}

/*
 * Tell the daemon the pid CMD runs as, so that `kmux cancel` reaches CMD
 * itself (SIGKILL after the grace period included) and a daemon restarted
 * meanwhile finds the job alive.  Best effort: CMD runs either way, and
 * without it the daemon signals CMD through this process (spawn.c passes
 * the signals on).
 */
static void run_started(struct client *c, uint64_t job, pid_t pid)
{
	struct proto_msg req = { .type = PROTO_STARTED }, rep;
	int r;

	req.u.started.job = job;
	req.u.started.pid = (uint32_t)pid;
	r = client_call(c, &req, &rep);
	if (r == 0 && rep.type != PROTO_OK) {
		snprintf(c->err, sizeof(c->err), "unexpected %s reply",
			 proto_type_name(rep.type));
		r = -EPROTO;
	}
	/* A daemon that went away is looked for when CMD ends. */
	if (r && !client_lost(r))
		fprintf(stderr, "kmux: run: job %" PRIu64 ": kmuxd does not "
			"know the command's pid (%s); kmux cancel reaches it "
			"through kmux run\n", job, c->err);
}

/*
 * Tell the daemon CMD ended (status as spawn_wait() returns it).  One that
 * went away while CMD ran is looked for briefly: the daemon that recovered
 * the job recorded it ended with its status unknown, or still watches it,
 * and takes the status from here.
 */
static void run_finished(struct client *c, uint64_t job, int status,
			 bool started)
{
	struct proto_msg req = { .type = PROTO_FINISHED }, rep;
	int r;

	req.u.finished.job = job;
	req.u.finished.pid = (uint32_t)getpid();
	req.u.finished.exit_code = status >= 0 && status <= 255 ?
		status : PROTO_EXIT_UNKNOWN;
	/* Recorded failed, as a submitted command kmuxd could not start. */
	if (!started && (status == KMUX_EXIT_NOEXEC ||
			 status == KMUX_EXIT_NOTFOUND))
		req.u.finished.flags = PROTO_FINISHED_F_NOT_STARTED;
	r = client_call(c, &req, &rep);
	if (client_lost(r)) {
		r = client_call_again(c, &req, &rep, RUN_FINISHED_RECONNECT_S);
		if (r == -ECONNRESET)
			snprintf(c->err, sizeof(c->err), "kmuxd went away and "
				 "did not come back within %d s: its status is "
				 "not recorded", RUN_FINISHED_RECONNECT_S);
	}
	if (r)
		fprintf(stderr, "kmux: run: job %" PRIu64 ": %s\n", job,
			c->err);
}

static int run_exec(int argc, char **argv)
{
	struct run_opts o = { .ngpus = 1 };
	struct client c = { .fd = -1 };
	uint64_t job = 0;
	char lib[PATH_MAX], err[PATH_MAX + 128];
	struct run_env env;
	struct spawn sp;
	char **cmd;
	int r, status;

	r = run_parse(argc, argv, &o);
	if (r)
		return r < 0 ? KMUX_EXIT_OK : r;
	cmd = argv + optind;
	if (spawn_find_library(lib, sizeof(lib), err, sizeof(err))) {
		fprintf(stderr, "kmux: %s\n", err);
		return KMUX_EXIT_FAILURE;
	}
	run_opts_env(&o, &env);
	if (o.admit) {
		r = run_admit(&c, &o, cmd, &env, &job);
		if (r) {
			client_close(&c);
			return r;
		}
	}
	fflush(stdout);
	fflush(stderr);
	r = spawn_start(&(struct spawn_opts){ cmd, lib, env.env }, &sp);
	if (r) {
		if (sp.exec_errno) {
			fprintf(stderr, "kmux: cannot run '%s': %s\n", cmd[0],
				strerror(sp.exec_errno));
			status = spawn_exec_status(sp.exec_errno);
		} else {
			fprintf(stderr, "kmux: cannot start '%s': %s\n",
				cmd[0], strerror(-r));
			status = KMUX_EXIT_FAILURE;
		}
	} else {
		if (o.admit)
			run_started(&c, job, sp.pid);
		status = spawn_wait(&sp);
		if (status < 0) {
			fprintf(stderr, "kmux: waiting for '%s': %s\n",
				cmd[0], strerror(-status));
			status = KMUX_EXIT_FAILURE;
		}
	}
	if (o.admit) {
		run_finished(&c, job, status, r == 0);
		client_close(&c);
	}
	return status;
}

const struct cmd_entry cmd_run_entry = {
	.name = "run",
	.usage = "[-s N [--stream-alloc]] [--memory MODE] [-g K] [-m SIZE] [-n NAME] [-x] [--] CMD [ARGS...]",
	.summary = "run a command under kmux in the foreground (admitted by "
		   "kmuxd with --gpus/--mem/--name)",
	.exec = run_exec,
};
