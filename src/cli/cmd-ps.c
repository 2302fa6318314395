/*
 * cmd-ps.c - `kmux ps`: the jobs kmuxd knows, as a table or as JSON.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>

#include "client.h"
#include "cmd.h"
#include "view.h"

enum {
	OPT_JSON = 256,
};

static void help(void)
{
	cmd_print_usage(&cmd_ps_entry, stdout);
	fputs("\n"
	      "List the queued and running jobs (with --all, ended ones too).\n"
	      "A system daemon shows a user only their own jobs; root sees all.\n"
	      "\n"
	      "  -a, --all             also the jobs that ended\n"
	      "      --json            a JSON array, one object per job\n"
	      "  -h, --help            this help\n"
	      "\n"
	      "Exit status: 0; 5 when no daemon runs; 1 otherwise.\n"
	      "See kmux-ps(1).\n", stdout);
}

static int print_json(cJSON *j)
{
	char *s = j ? cJSON_Print(j) : NULL;
	int r = 0;

	if (!s || printf("%s\n", s) < 0)
		r = -1;
	free(s);
	cJSON_Delete(j);
	return r;
}

static int ps_exec(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "all", no_argument, NULL, 'a' },
		{ "json", no_argument, NULL, OPT_JSON },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct proto_msg req = { .type = PROTO_PS }, rep;
	struct client cl;
	int c, all = 0, json = 0, r, status = KMUX_EXIT_OK;

	while ((c = getopt_long(argc, argv, ":ah", longopts, NULL)) != -1) {
		switch (c) {
		case 'a':
			all = 1;
			break;
		case OPT_JSON:
			json = 1;
			break;
		case 'h':
			help();
			return KMUX_EXIT_OK;
		default:
			return cmd_option_error(&cmd_ps_entry, argv, c);
		}
	}
	if (optind < argc)
		return cmd_usage_error(&cmd_ps_entry, "unexpected argument '%s'",
				       argv[optind]);
	req.u.ps.states = all ? 0 : (1u << PROTO_JOB_QUEUED) |
				    (1u << PROTO_JOB_RUNNING);
	r = client_open(&cl, 0);
	if (r) {
		fprintf(stderr, "kmux: ps: %s\n", cl.err);
		client_close(&cl);
		return KMUX_EXIT_NODAEMON;
	}
	r = client_call(&cl, &req, &rep);
	if (r == 0 && rep.type != PROTO_JOB_LIST)
		r = -EPROTO;
	if (r) {
		fprintf(stderr, "kmux: ps: %s\n", cl.err);
		status = client_exit_status(r, 1);
	} else if (json) {
		if (print_json(view_ps_json(&rep.u.jobs, client_now_us())))
			status = KMUX_EXIT_FAILURE;
	} else {
		view_ps_table(stdout, &rep.u.jobs, client_now_us());
	}
	if (fflush(stdout))
		status = KMUX_EXIT_FAILURE;
	client_close(&cl);
	return status;
}

const struct cmd_entry cmd_ps_entry = {
	.name = "ps",
	.usage = "[-a|--all] [--json]",
	.summary = "list the jobs of kmuxd",
	.exec = ps_exec,
};
