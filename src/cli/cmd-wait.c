/*
 * cmd-wait.c - `kmux wait ID`: block until a job ends and exit with its
 * status, so that `kmux wait $(kmux submit CMD)` behaves like CMD.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>

#include "client.h"
#include "cmd.h"
#include "view.h"

/*
 * A daemon that goes away while a job runs is usually being restarted
 * (systemd, an upgrade): the job keeps running, the new daemon recovers it
 * from its database, so look for it this long before giving up.
 */
#define WAIT_RECONNECT_S 60

static void help(void)
{
	cmd_print_usage(&cmd_wait_entry, stdout);
	fputs("\n"
	      "Wait until job ID ends; exit with its exit status (128+N when\n"
	      "signal N killed it).  A job that could not start exits 127 (not\n"
	      "found) or 126, as a shell says.\n"
	      "\n"
	      "  -h, --help            this help\n"
	      "\n"
	      "Exit status: the job's; 125 when it is not known: no such job, no\n"
	      "daemon, the job was cancelled before it started or never could\n"
	      "run, or its daemon died while it ran and did not come back within\n"
	      "60 s (the message says which);\n"
	      "2 for bad usage.  See kmux-wait(1).\n", stdout);
}

/* The exit status that stands for the job's end. */
static int job_status(const struct proto_exited *x)
{
	char sb[16];

	if (x->signal) {
		if (x->state == PROTO_JOB_CANCELLED)
			fprintf(stderr, "kmux: wait: job %llu was cancelled "
				"(%s)\n", (unsigned long long)x->job,
				view_signal_name(x->signal, sb, sizeof(sb)));
		return 128 + x->signal;
	}
	if (x->exit_code != PROTO_EXIT_UNKNOWN) {
		if (x->state == PROTO_JOB_FAILED)
			fprintf(stderr, "kmux: wait: job %llu could not start "
				"(`kmux logs %llu` says why)\n",
				(unsigned long long)x->job,
				(unsigned long long)x->job);
		return x->exit_code;
	}
	switch (x->state) {
	case PROTO_JOB_CANCELLED:
		fprintf(stderr, "kmux: wait: job %llu was cancelled before it "
			"ended\n", (unsigned long long)x->job);
		break;
	case PROTO_JOB_FAILED:
		fprintf(stderr, "kmux: wait: job %llu never started (it can "
			"never fit on this node, or kmuxd failed)\n",
			(unsigned long long)x->job);
		break;
	default:
		fprintf(stderr, "kmux: wait: job %llu ended, its exit status "
			"unknown (kmux did not start it, or no kmuxd watched "
			"it end)\n",
			(unsigned long long)x->job);
		break;
	}
	return KMUX_EXIT_WAIT_UNKNOWN;
}


/*
 * The connection to kmuxd was lost while waiting: connect again and ask
 * again, with a growing pause, until WAIT_RECONNECT_S have passed.  The
 * new daemon answers for the job as the old one would have.
 */
static int wait_again(struct client *cl, struct proto_msg *req,
		      struct proto_msg *rep)
{
	fprintf(stderr, "kmux: wait: %s; waiting up to %d s for kmuxd to "
		"come back\n", cl->err, WAIT_RECONNECT_S);
	return client_call_again(cl, req, rep, WAIT_RECONNECT_S);
}

static int wait_exec(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct proto_msg req = { .type = PROTO_WAIT }, rep;
	struct client cl;
	uint64_t id;
	int c, r, status;

	while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
		if (c == 'h') {
			help();
			return KMUX_EXIT_OK;
		}
		return cmd_option_error(&cmd_wait_entry, argv, c);
	}
	if (optind + 1 != argc)
		return cmd_usage_error(&cmd_wait_entry, optind >= argc ?
				       "no job id given" : "one job id only");
	if (client_parse_id(argv[optind], &id))
		return cmd_usage_error(&cmd_wait_entry, "bad job id '%s'",
				       argv[optind]);
	req.u.wait.job = id;
	r = client_open(&cl, 0);
	if (r) {
		fprintf(stderr, "kmux: wait: %s\n", cl.err);
		client_close(&cl);
		return KMUX_EXIT_WAIT_UNKNOWN;
	}
	r = client_call(&cl, &req, &rep);
	if (client_lost(r))
		r = wait_again(&cl, &req, &rep);
	if (r == 0 && rep.type != PROTO_EXITED) {
		snprintf(cl.err, sizeof(cl.err), "unexpected %s reply",
			 proto_type_name(rep.type));
		r = -EPROTO;
	}
	if (r) {
		fprintf(stderr, "kmux: wait: %s\n", cl.err);
		status = KMUX_EXIT_WAIT_UNKNOWN;
	} else {
		status = job_status(&rep.u.exited);
	}
	client_close(&cl);
	return status;
}

const struct cmd_entry cmd_wait_entry = {
	.name = "wait",
	.usage = "ID",
	.summary = "wait for a job and exit with its status",
	.exec = wait_exec,
};
