/*
 * cmd-cancel.c - `kmux cancel ID...`: take queued jobs off the queue and
 * stop running ones (SIGTERM to the job's process group, SIGKILL after the
 * daemon's grace period).
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>

#include "client.h"
#include "cmd.h"
#include "view.h"

static void help(void)
{
	cmd_print_usage(&cmd_cancel_entry, stdout);
	fputs("\n"
	      "Cancel each job ID: a queued job leaves the queue; a running one\n"
	      "gets SIG (default TERM) on its process group, then SIGKILL if it\n"
	      "still runs after the daemon's grace period (10 s by default).\n"
	      "\n"
	      "  -s, --signal SIG      the first signal: TERM, INT, KILL, 9, ...\n"
	      "  -h, --help            this help\n"
	      "\n"
	      "Exit status: 0 when every job was cancelled; 3 for an unknown\n"
	      "job; 5 when no daemon runs; 1 otherwise (a job that already\n"
	      "ended, another user's job); 2 for bad usage.  With several\n"
	      "ids, every one is tried and the first failure's status wins.\n"
	      "See kmux-cancel(1).\n", stdout);
}

static int cancel_exec(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "signal", required_argument, NULL, 's' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct proto_msg req = { .type = PROTO_CANCEL }, rep;
	struct client cl;
	uint64_t id;
	int c, sig = 0, r, status = KMUX_EXIT_OK;

	while ((c = getopt_long(argc, argv, ":s:h", longopts, NULL)) != -1) {
		switch (c) {
		case 's':
			sig = view_signal_parse(optarg);
			if (sig < 1 || sig > PROTO_MAX_SIGNAL)
				return cmd_usage_error(&cmd_cancel_entry,
					"bad signal '%s'", optarg);
			break;
		case 'h':
			help();
			return KMUX_EXIT_OK;
		default:
			return cmd_option_error(&cmd_cancel_entry, argv, c);
		}
	}
	if (optind >= argc)
		return cmd_usage_error(&cmd_cancel_entry, "no job id given");
	for (int i = optind; i < argc; i++)
		if (client_parse_id(argv[i], &id))
			return cmd_usage_error(&cmd_cancel_entry,
					       "bad job id '%s'", argv[i]);
	r = client_open(&cl, 0);
	if (r) {
		fprintf(stderr, "kmux: cancel: %s\n", cl.err);
		client_close(&cl);
		return KMUX_EXIT_NODAEMON;
	}
	for (int i = optind; i < argc; i++) {
		client_parse_id(argv[i], &id);
		req.u.cancel.job = id;
		req.u.cancel.signal = sig;
		r = client_call(&cl, &req, &rep);
		if (r == 0 && rep.type != PROTO_OK)
			r = -EPROTO;
		if (r) {
			fprintf(stderr, "kmux: cancel: %s\n", cl.err);
			if (status == KMUX_EXIT_OK)
				status = client_exit_status(r, 1);
			if (r == -ECONNRESET || r == -EPROTO)
				break;
		}
	}
	client_close(&cl);
	return status;
}

const struct cmd_entry cmd_cancel_entry = {
	.name = "cancel",
	.usage = "[-s SIG] ID...",
	.summary = "cancel queued or running jobs",
	.exec = cancel_exec,
};
