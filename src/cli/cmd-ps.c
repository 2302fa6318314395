/*
 * cmd-ps.c - `kmux ps`: the jobs kmuxd knows, as a table or as JSON; with
 * no daemon running, the jobs as its database last recorded them.
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
#include "daemon/db.h"
#include "daemon/job-rec.h"
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
	      "With no daemon running, the jobs are read from its database\n"
	      "(read-only; a warning says so): queued and running are what\n"
	      "they were when the daemon stopped.\n"
	      "\n"
	      "Exit status: 0; 5 when no daemon runs and there is no database\n"
	      "to read; 1 otherwise.\n"
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

static int ps_show(const struct proto_job_list *jobs, int json)
{
	if (json)
		return print_json(view_ps_json(jobs, client_now_us())) ?
		       KMUX_EXIT_FAILURE : KMUX_EXIT_OK;
	view_ps_table(stdout, jobs, client_now_us());
	return KMUX_EXIT_OK;
}

/*
 * No daemon: what its database says, read-only.  The daemon's uid filter
 * does not apply: the file is readable only by its owner (0600) anyway.
 * 0 and the status, or -errno when there is no database to read.
 */
static int ps_offline(const struct client *cl, uint32_t states, int json,
		      int *status)
{
	struct db_filter f = { -1, states };
	struct proto_job_list list = { 0 };
	struct proto_job_rec *recs = NULL;
	char (*cmds)[JOB_REC_CMD_SHOWN + 1] = NULL;
	char path[PATH_MAX + 16], err[512];
	struct db_job *v = NULL;
	struct db *db = NULL;
	size_t n = 0;
	int r;

	if (!cl->paths.state_dir[0])
		return -ENOENT;
	snprintf(path, sizeof(path), "%s/%s", cl->paths.state_dir,
		 PATHS_DB_NAME);
	if (access(path, R_OK))
		return -errno;
	r = db_open(path, DB_OPEN_READONLY, &db, err, sizeof(err));
	if (!r)
		r = db_job_list(db, &f, &v, &n, err, sizeof(err));
	if (r) {
		/* Name the file where the database's message does not. */
		if (strncmp(err, path, strlen(path)) == 0)
			fprintf(stderr, "kmux: ps: %s\n", err);
		else
			fprintf(stderr, "kmux: ps: %s: %s\n", path, err);
		*status = KMUX_EXIT_FAILURE;
		goto out;
	}
	recs = calloc(n ? n : 1, sizeof(*recs));
	cmds = calloc(n ? n : 1, sizeof(*cmds));
	if (!recs || !cmds) {
		fprintf(stderr, "kmux: ps: out of memory\n");
		*status = KMUX_EXIT_FAILURE;
		goto out;
	}
	for (size_t i = 0; i < n; i++)
		job_rec_from_db(&v[i], &recs[i], cmds[i], sizeof(cmds[i]));
	list.count = (uint32_t)n;
	list.vec = recs;
	fprintf(stderr, "kmux: ps: no kmuxd is running; these are the jobs "
		"as its database (%s) last recorded them\n", path);
	*status = ps_show(&list, json);
out:
	free(recs);
	free(cmds);
	db_job_list_free(v, n);
	db_close(db);
	return 0;
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
	if ((r == -ENOENT || r == -ECONNREFUSED) &&
	    ps_offline(&cl, req.u.ps.states, json, &status) == 0) {
		client_close(&cl);
		return status;
	}
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
	} else {
		status = ps_show(&rep.u.jobs, json);
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
