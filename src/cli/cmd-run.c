/*
 * cmd-run.c - `kmux run`: run a command under libkmux.so with what kmux
 * offers a single program (today: --streams, its default-stream work
 * spread over a pool of streams), forward signals to it, and exit with its
 * status.
 *
 * The steps are kept apart so that task admission (--gpus, --mem, --name:
 * the daemon's issue) is an addition: parse into struct run_opts, turn the
 * options into the child's environment (run_opts_env), [ask kmuxd for
 * admission here], spawn, wait.
 */
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "cmd.h"
#include "run-env.h"
#include "spawn.h"

struct run_opts {
	int streams;		/* 0: not asked for */
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
	      "  -h, --help        this help\n"
	      "\n"
	      "Check a program with `kmux verify` before trusting --streams\n"
	      "with it.  Exit status: that of CMD (128+N if signal N killed\n"
	      "it); 127 when CMD is not found, 126 when it cannot be run,\n"
	      "2 for bad usage, 1 when kmux could not start it.  See\n"
	      "kmux-run(1).\n",
	      stdout);
}

/* 0, -1 after --help, or KMUX_EXIT_USAGE. */
static int run_parse(int argc, char **argv, struct run_opts *o)
{
	static const struct option longopts[] = {
		{ "streams", required_argument, NULL, 's' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	/* '+': CMD's own options are CMD's. */
	while ((c = getopt_long(argc, argv, "+:s:h", longopts, NULL)) != -1) {
		switch (c) {
		case 's':
			if (run_parse_streams(optarg, &o->streams))
				return cmd_usage_error(&cmd_run_entry,
					"--streams %s: not an integer in 1..%d",
					optarg, RUN_STREAMS_MAX);
			break;
		case 'h':
			help();
			return -1;
		default:
			return cmd_option_error(&cmd_run_entry, argv, c);
		}
	}
	if (optind >= argc)
		return cmd_usage_error(&cmd_run_entry, "no command given");
	return 0;
}

/* The child's environment for the options. */
static void run_opts_env(const struct run_opts *o, struct run_env *e)
{
	run_env_init(e);
	/* Without --streams, an inherited KMUX_STREAMS stays in effect. */
	if (o->streams)
		run_env_streams(e, o->streams);
}

static int run_exec(int argc, char **argv)
{
	struct run_opts o = { 0 };
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
	fflush(stdout);
	fflush(stderr);
	r = spawn_start(&(struct spawn_opts){ cmd, lib, env.env }, &sp);
	if (r) {
		if (sp.exec_errno) {
			fprintf(stderr, "kmux: cannot run '%s': %s\n", cmd[0],
				strerror(sp.exec_errno));
			return spawn_exec_status(sp.exec_errno);
		}
		fprintf(stderr, "kmux: cannot start '%s': %s\n", cmd[0],
			strerror(-r));
		return KMUX_EXIT_FAILURE;
	}
	status = spawn_wait(&sp);
	if (status < 0) {
		fprintf(stderr, "kmux: waiting for '%s': %s\n", cmd[0],
			strerror(-status));
		return KMUX_EXIT_FAILURE;
	}
	return status;
}

const struct cmd_entry cmd_run_entry = {
	.name = "run",
	.usage = "[-s|--streams N] [--] CMD [ARGS...]",
	.summary = "run a command under kmux (--streams: spread its GPU work)",
	.exec = run_exec,
};
