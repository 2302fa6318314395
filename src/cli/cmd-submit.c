/*
 * cmd-submit.c - `kmux submit`: queue a command with kmuxd, which starts it
 * when its GPUs and memory are free, detached, output to a log; print the
 * job's id.  Starts the daemon when none runs.
 *
 * The command runs in the current directory with the current environment
 * (both are sent along), like a command typed at the shell, later.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "client.h"
#include "cmd.h"
#include "num.h"
#include "size.h"

enum {
	OPT_PRIO = 256,
};

static void help(void)
{
	cmd_print_usage(&cmd_submit_entry, stdout);
	fputs("\n"
	      "Queue CMD with kmuxd (started if none runs) and print its job id.\n"
	      "kmuxd runs CMD, in this directory with this environment, under\n"
	      "the preload, once K GPUs with SIZE free each can take it; its\n"
	      "output goes to a log (`kmux logs ID`).\n"
	      "\n"
	      "  -g, --gpus K          GPUs CMD needs (default 1)\n"
	      "  -m, --mem SIZE        memory per GPU: 512M, 12G, 1.5GiB; without\n"
	      "                        it kmux uses what earlier runs of CMD\n"
	      "                        needed, or a conservative guess\n"
	      "  -n, --name NAME       a name for ps and top\n"
	      "      --prio N          -100..100, higher first (default 0)\n"
	      "  -x, --exclusive       the GPUs alone, no other job beside it\n"
	      "  -h, --help            this help\n"
	      "\n"
	      "Exit status: 0; 2 for bad usage (a bad SIZE); 4 when CMD can never\n"
	      "run on this node (more GPUs or memory than it has); 5 when no\n"
	      "daemon could be reached or started; 1 otherwise (e.g. a full\n"
	      "disk).  See kmux-submit(1).\n", stdout);
}

struct submit_opts {
	uint32_t ngpus;
	uint64_t mem;
	const char *name;
	int32_t prio;
	uint32_t flags;
};

static int parse_opts(int argc, char **argv, struct submit_opts *o)
{
	static const struct option longopts[] = {
		{ "gpus", required_argument, NULL, 'g' },
		{ "mem", required_argument, NULL, 'm' },
		{ "name", required_argument, NULL, 'n' },
		{ "prio", required_argument, NULL, OPT_PRIO },
		{ "exclusive", no_argument, NULL, 'x' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const struct cmd_entry *e = &cmd_submit_entry;
	long v;
	int c, r;

	while ((c = getopt_long(argc, argv, "+:g:m:n:xh", longopts, NULL)) != -1) {
		switch (c) {
		case 'g':
			if (num_parse(optarg, 1, PROTO_MAX_GPUS, &v))
				return cmd_usage_error(e, "bad --gpus '%s' "
					"(a number of GPUs, 1..%d)", optarg,
					PROTO_MAX_GPUS);
			o->ngpus = (uint32_t)v;
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
			break;
		case 'n':
			if (strlen(optarg) >= PROTO_MAX_NAME)
				return cmd_usage_error(e, "--name is longer "
					"than %d bytes", PROTO_MAX_NAME - 1);
			o->name = optarg;
			break;
		case OPT_PRIO:
			if (num_parse(optarg, -100, 100, &v))
				return cmd_usage_error(e, "bad --prio '%s' "
					"(-100..100)", optarg);
			o->prio = (int32_t)v;
			break;
		case 'x':
			o->flags |= PROTO_JOB_F_EXCLUSIVE;
			break;
		case 'h':
			help();
			return -1;
		default:
			return cmd_option_error(e, argv, c);
		}
	}
	if (optind >= argc)
		return cmd_usage_error(e, "no command given");
	if (!argv[optind][0])
		return cmd_usage_error(e, "empty command name");
	return 0;
}

static int submit_exec(int argc, char **argv)
{
	struct submit_opts o = { .ngpus = 1, .name = "" };
	struct proto_msg req = { .type = PROTO_SUBMIT }, rep;
	char cwd[PATH_MAX];
	struct client c;
	uint32_t envc = 0;
	int r, status;

	r = parse_opts(argc, argv, &o);
	if (r)
		return r < 0 ? KMUX_EXIT_OK : r;
	if (!getcwd(cwd, sizeof(cwd))) {
		fprintf(stderr, "kmux: submit: the current directory: %s\n",
			strerror(errno));
		return KMUX_EXIT_FAILURE;
	}
	for (char **e = environ; *e; e++)
		envc++;
	req.u.job.flags = o.flags;
	req.u.job.ngpus = o.ngpus;
	req.u.job.mem = o.mem;
	req.u.job.prio = o.prio;
	req.u.job.name = o.name;
	req.u.job.cwd = cwd;
	req.u.job.argv.count = (uint32_t)(argc - optind);
	req.u.job.argv.vec = (const char *const *)(argv + optind);
	/* Entries without '=' would be refused; a shell never makes them. */
	req.u.job.env.count = envc;
	req.u.job.env.vec = (const char *const *)environ;

	r = client_open(&c, CLIENT_AUTOSTART);
	if (r) {
		fprintf(stderr, "kmux: submit: %s\n", c.err);
		client_close(&c);
		return KMUX_EXIT_NODAEMON;
	}
	r = client_call(&c, &req, &rep);
	if (r == 0 && rep.type != PROTO_OK) {
		snprintf(c.err, sizeof(c.err), "unexpected %s reply",
			 proto_type_name(rep.type));
		r = -EPROTO;
	}
	if (r) {
		fprintf(stderr, "kmux: submit: %s\n", c.err);
		status = client_exit_status(r, 1);
	} else {
		printf("%llu\n", (unsigned long long)rep.u.ok.id);
		status = KMUX_EXIT_OK;
		/* Queued all the same: a retry would queue it twice. */
		if (fflush(stdout) || ferror(stdout)) {
			fprintf(stderr, "kmux: submit: job %llu is queued, but "
				"its id could not be written to standard "
				"output: %s\n",
				(unsigned long long)rep.u.ok.id,
				strerror(errno ? errno : EIO));
			clearerr(stdout);
			status = KMUX_EXIT_FAILURE;
		}
	}
	client_close(&c);
	return status;
}

const struct cmd_entry cmd_submit_entry = {
	.name = "submit",
	.usage = "[-g K] [-m SIZE] [-n NAME] [--prio N] [-x] [--] "
		 "CMD [ARGS...]",
	.summary = "queue a command to run on GPUs when they are free",
	.exec = submit_exec,
};
