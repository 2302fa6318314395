/*
 * cmd-logs.c - `kmux logs ID`: a job's output (stdout and stderr, as it
 * wrote them), read through the daemon so that a system daemon's logs stay
 * private to their owners.  -f follows it until the job ends.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "client.h"
#include "cmd.h"

static void help(void)
{
	cmd_print_usage(&cmd_logs_entry, stdout);
	fputs("\n"
	      "Print the output of job ID (stdout and stderr together).\n"
	      "\n"
	      "  -f, --follow          keep printing until the job ends\n"
	      "  -h, --help            this help\n"
	      "\n"
	      "Exit status: 0; 3 for an unknown job (or one without a log: it\n"
	      "ran with kmux run); 5 when no daemon runs; 1 otherwise; 2 for\n"
	      "bad usage.  See kmux-logs(1).\n", stdout);
}

static int write_all(const uint8_t *p, size_t n)
{
	ssize_t w;

	while (n) {
		w = write(STDOUT_FILENO, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -errno;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

static int logs_exec(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "follow", no_argument, NULL, 'f' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct proto_msg req = { .type = PROTO_LOGS }, rep;
	struct client cl;
	uint64_t id;
	int c, follow = 0, r, status = KMUX_EXIT_OK;

	while ((c = getopt_long(argc, argv, ":fh", longopts, NULL)) != -1) {
		switch (c) {
		case 'f':
			follow = 1;
			break;
		case 'h':
			help();
			return KMUX_EXIT_OK;
		default:
			return cmd_option_error(&cmd_logs_entry, argv, c);
		}
	}
	if (optind + 1 != argc)
		return cmd_usage_error(&cmd_logs_entry, optind >= argc ?
				       "no job id given" : "one job id only");
	if (client_parse_id(argv[optind], &id))
		return cmd_usage_error(&cmd_logs_entry, "bad job id '%s'",
				       argv[optind]);
	r = client_open(&cl, 0);
	if (r) {
		fprintf(stderr, "kmux: logs: %s\n", cl.err);
		client_close(&cl);
		return KMUX_EXIT_NODAEMON;
	}
	req.u.logs.job = id;
	req.u.logs.flags = follow ? PROTO_LOGS_F_FOLLOW : 0;
	r = client_send(&cl, &req);
	while (r == 0) {
		r = client_recv(&cl, &rep);
		if (r)
			break;
		if (rep.type != PROTO_LOG_DATA || rep.seq != req.seq) {
			snprintf(cl.err, sizeof(cl.err), "unexpected %s reply",
				 proto_type_name(rep.type));
			r = -EPROTO;
			break;
		}
		r = write_all(rep.u.log.data, rep.u.log.length);
		if (r) {
			snprintf(cl.err, sizeof(cl.err), "writing: %s",
				 strerror(-r));
			break;
		}
		if (rep.u.log.flags & PROTO_LOG_F_EOF)
			break;
	}
	if (r) {
		fprintf(stderr, "kmux: logs: %s\n", cl.err);
		status = client_exit_status(r, 1);
	}
	client_close(&cl);
	return status;
}

const struct cmd_entry cmd_logs_entry = {
	.name = "logs",
	.usage = "[-f] ID",
	.summary = "print a job's output",
	.exec = logs_exec,
};
