/*
 * cmd-top.c - `kmux top`: a live view of the node's GPUs (busyness,
 * utilization, memory committed and used, tasks) and of the jobs queued and
 * running, redrawn every second with ncurses; `--once` prints one frame as
 * text (or JSON) for scripts and tests.  Both draw view.c's lines.
 */
#include <errno.h>
#include <getopt.h>
#include <ncurses.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "client.h"
#include "cmd.h"
#include "num.h"
#include "view.h"

enum {
	OPT_ONCE = 256,
	OPT_JSON,
};

static volatile sig_atomic_t top_quit;

static void help(void)
{
	cmd_print_usage(&cmd_top_entry, stdout);
	fputs("\n"
	      "Show the GPUs (busyness score, utilization, tasks, memory\n"
	      "committed to kmux tasks and used by all processes) and the\n"
	      "queued and running jobs, refreshed every second; q quits.\n"
	      "When standard output is not a terminal, print one frame.\n"
	      "\n"
	      "      --once            print one frame as text and exit\n"
	      "      --json            with --once: one JSON object\n"
	      "  -d, --delay SEC       seconds between refreshes (default 1)\n"
	      "  -h, --help            this help\n"
	      "\n"
	      "Exit status: 0; 5 when no daemon runs; 1 otherwise; 2 for bad\n"
	      "usage.  See kmux-top(1).\n", stdout);
}

/*
 * Ask for one frame.  0: *gpus copied (its note into note, which
 * gpus->note then points at), *rep holds the job list (valid until the
 * next receive on c).
 */
static int fetch(struct client *c, struct proto_gpu_list *gpus,
		 char note[PROTO_MAX_ERRMSG], struct proto_msg *rep)
{
	struct proto_msg req = { .type = PROTO_TOP };
	int r;

	r = client_call(c, &req, rep);
	if (r)
		return r;
	if (rep->type != PROTO_GPU_LIST)
		goto bad;
	*gpus = rep->u.gpus;
	/* It points into c's buffer, which the next receive reuses. */
	snprintf(note, PROTO_MAX_ERRMSG, "%s", gpus->note ? gpus->note : "");
	gpus->note = note;
	r = client_recv(c, rep);
	if (r)
		return r;
	if (rep->type != PROTO_JOB_LIST || rep->seq != req.seq)
		goto bad;
	return 0;
bad:
	snprintf(c->err, sizeof(c->err), "unexpected %s reply",
		 proto_type_name(rep->type));
	return -EPROTO;
}

static int top_once(struct client *c, int json)
{
	struct proto_gpu_list gpus;
	struct proto_msg rep;
	char note[PROTO_MAX_ERRMSG];
	char *s;
	cJSON *j;
	int r;

	r = fetch(c, &gpus, note, &rep);
	if (r)
		return r;
	if (!json) {
		view_top_text(stdout, &gpus, &rep.u.jobs, client_now_us());
		return 0;
	}
	j = view_top_json(&gpus, &rep.u.jobs, client_now_us());
	s = j ? cJSON_Print(j) : NULL;
	cJSON_Delete(j);
	if (!s) {
		snprintf(c->err, sizeof(c->err), "out of memory");
		return -ENOMEM;
	}
	printf("%s\n", s);
	free(s);
	return 0;
}

static void on_sigint(int sig)
{
	(void)sig;
	top_quit = 1;
}

/* Draw the text of one frame, line by line, cut to the screen. */
static void draw(const char *text)
{
	const char *p = text;
	int y = 0;

	erase();
	while (*p && y < LINES) {
		const char *nl = strchr(p, '\n');
		int n = nl ? (int)(nl - p) : (int)strlen(p);

		if (y == 0)
			attron(A_BOLD);
		mvaddnstr(y, 0, p, n < COLS ? n : COLS);
		if (y == 0)
			attroff(A_BOLD);
		y++;
		p += n + (nl ? 1 : 0);
	}
	mvaddstr(LINES - 1, 0, "q: quit");
	refresh();
}

static int top_live(struct client *c, int delay_ms)
{
	struct proto_gpu_list gpus;
	struct proto_msg rep;
	char note[PROTO_MAX_ERRMSG];
	char *text = NULL;
	size_t len = 0;
	FILE *f;
	int r = 0, ch;

	signal(SIGINT, on_sigint);
	signal(SIGTERM, on_sigint);
	initscr();
	cbreak();
	noecho();
	curs_set(0);
	keypad(stdscr, TRUE);
	timeout(delay_ms);
	while (!top_quit) {
		r = fetch(c, &gpus, note, &rep);
		if (r)
			break;
		f = open_memstream(&text, &len);
		if (!f) {
			r = -ENOMEM;
			snprintf(c->err, sizeof(c->err), "out of memory");
			break;
		}
		view_top_text(f, &gpus, &rep.u.jobs, client_now_us());
		fclose(f);
		draw(text);
		free(text);
		text = NULL;
		ch = getch();
		if (ch == 'q' || ch == 'Q')
			break;
	}
	endwin();
	return r;
}

static int top_exec(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "once", no_argument, NULL, OPT_ONCE },
		{ "json", no_argument, NULL, OPT_JSON },
		{ "delay", required_argument, NULL, 'd' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct client cl;
	double delay = 1.0;
	int c, once = 0, json = 0, r, status = KMUX_EXIT_OK;

	while ((c = getopt_long(argc, argv, ":d:h", longopts, NULL)) != -1) {
		switch (c) {
		case OPT_ONCE:
			once = 1;
			break;
		case OPT_JSON:
			json = 1;
			break;
		case 'd':
			if (num_parse_seconds(optarg, 0.1, 3600, &delay))
				return cmd_usage_error(&cmd_top_entry,
					"bad --delay '%s' (0.1..3600 s)",
					optarg);
			break;
		case 'h':
			help();
			return KMUX_EXIT_OK;
		default:
			return cmd_option_error(&cmd_top_entry, argv, c);
		}
	}
	if (optind < argc)
		return cmd_usage_error(&cmd_top_entry, "unexpected argument '%s'",
				       argv[optind]);
	if (json && !once)
		return cmd_usage_error(&cmd_top_entry, "--json needs --once");
	r = client_open(&cl, 0);
	if (r) {
		fprintf(stderr, "kmux: top: %s\n", cl.err);
		client_close(&cl);
		return KMUX_EXIT_NODAEMON;
	}
	if (once || !isatty(STDOUT_FILENO) || !isatty(STDIN_FILENO))
		r = top_once(&cl, json);
	else
		r = top_live(&cl, (int)(delay * 1000));
	if (r) {
		fprintf(stderr, "kmux: top: %s\n", cl.err);
		status = client_exit_status(r, 1);
	}
	if (fflush(stdout))
		status = KMUX_EXIT_FAILURE;
	client_close(&cl);
	return status;
}

const struct cmd_entry cmd_top_entry = {
	.name = "top",
	.usage = "[--once [--json]] [-d SEC]",
	.summary = "live view of GPUs and jobs",
	.exec = top_exec,
};
