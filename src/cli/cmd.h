/*
 * cmd.h - the kmux command table, in the manner of tmux: every subcommand is
 * one file, src/cli/cmd-NAME.c, exporting one struct cmd_entry, listed once
 * in cmd_table[] (kmux.c).  Adding a command is one file, one table line,
 * one test and one man page.
 *
 * exec() gets the arguments from the command name on (argv[0] is "trace"),
 * parses them with getopt_long (optind is reset for it), and returns the
 * process exit status.  Every command answers --help on stdout, exit 0.
 */
#ifndef KMUX_CMD_H
#define KMUX_CMD_H

#include <stdio.h>

/* Exit statuses shared by every command (tmux/git/shell conventions). */
#define KMUX_EXIT_OK		0
#define KMUX_EXIT_FAILURE	1	/* the command could not do its job */
#define KMUX_EXIT_USAGE		2	/* bad command line */
#define KMUX_EXIT_NOEXEC	126	/* CMD found but not executable */
#define KMUX_EXIT_NOTFOUND	127	/* CMD not found */

struct cmd_entry {
	const char *name;
	const char *usage;	/* after "kmux NAME " */
	const char *summary;	/* one line for `kmux --help` */
	int (*exec)(int argc, char **argv);
};

extern const struct cmd_entry cmd_trace_entry;
extern const struct cmd_entry cmd_run_entry;
extern const struct cmd_entry cmd_verify_entry;
extern const struct cmd_entry cmd_daemon_entry;
extern const struct cmd_entry cmd_submit_entry;
extern const struct cmd_entry cmd_ps_entry;
extern const struct cmd_entry cmd_wait_entry;
extern const struct cmd_entry cmd_cancel_entry;
extern const struct cmd_entry cmd_logs_entry;
extern const struct cmd_entry cmd_top_entry;
extern const struct cmd_entry cmd_bench_entry;

/* NULL-terminated. */
extern const struct cmd_entry *const cmd_table[];

/* "usage: kmux NAME USAGE" on f. */
void cmd_print_usage(const struct cmd_entry *e, FILE *f);

/*
 * For a bad command line: the message (if any) and the usage on stderr;
 * returns KMUX_EXIT_USAGE so that `return cmd_usage_error(...)` reads well.
 */
int cmd_usage_error(const struct cmd_entry *e, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/*
 * getopt_long returned '?' or ':' (commands use a leading ':' in their
 * option string and opterr = 0): say which option was wrong, then the
 * usage; returns KMUX_EXIT_USAGE.
 */
int cmd_option_error(const struct cmd_entry *e, char **argv, int c);

/* Seconds on CLOCK_MONOTONIC: for timeouts and durations. */
double cmd_monotonic_s(void);

#endif
