/*
 * kmux.c - main() of the kmux CLI: global options, the command table, and
 * dispatch to one subcommand.
 *
 *   kmux [-h|--help] [--version] COMMAND [ARGS...]
 *   kmux help [COMMAND]
 *
 * Exit status 2 for an unknown command or option (usage on stderr), else
 * whatever the command returns.
 */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"

#ifndef KMUX_VERSION
#define KMUX_VERSION "0.1.0"
#endif

const struct cmd_entry *const cmd_table[] = {
	&cmd_run_entry,
	&cmd_trace_entry,
	&cmd_verify_entry,
	&cmd_submit_entry,
	&cmd_ps_entry,
	&cmd_wait_entry,
	&cmd_cancel_entry,
	&cmd_logs_entry,
	&cmd_top_entry,
	&cmd_bench_entry,
	&cmd_daemon_entry,
	NULL,
};

double cmd_monotonic_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void cmd_print_usage(const struct cmd_entry *e, FILE *f)
{
	fprintf(f, "usage: kmux %s %s\n", e->name, e->usage);
}

int cmd_usage_error(const struct cmd_entry *e, const char *fmt, ...)
{
	va_list ap;

	if (fmt) {
		/* As option errors do: which command's line was wrong. */
		fprintf(stderr, "kmux: %s: ", e->name);
		va_start(ap, fmt);
		vfprintf(stderr, fmt, ap);
		va_end(ap);
		fputc('\n', stderr);
	}
	cmd_print_usage(e, stderr);
	return KMUX_EXIT_USAGE;
}

/*
 * Long-only options have values >= 256, so optopt names a short option only
 * below that; otherwise the offending word is the last one getopt consumed.
 */
int cmd_option_error(const struct cmd_entry *e, char **argv, int c)
{
	const char *arg = optind > 0 ? argv[optind - 1] : "";

	if (c == ':')
		fprintf(stderr, "kmux: %s: option '%s' needs an argument\n",
			e->name, arg);
	/* getopt_long names a known option given "=VALUE" it does not take. */
	else if (optopt != 0 && strncmp(arg, "--", 2) == 0 &&
		 strchr(arg, '='))
		fprintf(stderr, "kmux: %s: option '%.*s' takes no argument\n",
			e->name, (int)(strchr(arg, '=') - arg), arg);
	else if (optopt > 0 && optopt < 256 && strncmp(arg, "--", 2) != 0)
		fprintf(stderr, "kmux: %s: unknown option '-%c'\n", e->name,
			optopt);
	else
		fprintf(stderr, "kmux: %s: unknown option '%s'\n", e->name,
			arg);
	cmd_print_usage(e, stderr);
	return KMUX_EXIT_USAGE;
}

static void usage(FILE *f)
{
	fputs("usage: kmux [-h|--help] [--version] COMMAND [ARGS...]\n"
	      "\n"
	      "commands:\n", f);
	for (const struct cmd_entry *const *e = cmd_table; *e; e++)
		fprintf(f, "  %-10s %s\n", (*e)->name, (*e)->summary);
	fputs("  help       show the usage of a command\n"
	      "\n"
	      "`kmux COMMAND --help` and kmux(1) tell more.\n", f);
}

static const struct cmd_entry *cmd_find(const char *name)
{
	for (const struct cmd_entry *const *e = cmd_table; *e; e++)
		if (strcmp((*e)->name, name) == 0)
			return *e;
	return NULL;
}

static int cmd_help(int argc, char **argv)
{
	const struct cmd_entry *e;

	if (argc < 2) {
		usage(stdout);
		return KMUX_EXIT_OK;
	}
	e = cmd_find(argv[1]);
	if (!e) {
		fprintf(stderr, "kmux: unknown command '%s'\n", argv[1]);
		usage(stderr);
		return KMUX_EXIT_USAGE;
	}
	cmd_print_usage(e, stdout);
	printf("%s\n", e->summary);
	return KMUX_EXIT_OK;
}

/*
 * Output that did not reach its reader (a full disk, a closed descriptor)
 * is a failure, said once, as git does; a reader that went away (EPIPE,
 * with SIGPIPE ignored) is not worth a message.  Commands that found the
 * error themselves cleared it.
 */
static int output_checked(const char *cmd, int status)
{
	int e;

	errno = 0;
	if (fflush(stdout) == 0 && !ferror(stdout))
		return status;
	e = errno ? errno : EIO;
	if (e != EPIPE)
		fprintf(stderr, "kmux: %s%scannot write to standard output: "
			"%s\n", cmd ? cmd : "", cmd ? ": " : "", strerror(e));
	return status == KMUX_EXIT_OK ? KMUX_EXIT_FAILURE : status;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	const struct cmd_entry *e;
	int c;

	/* '+': stop at the command name; ':': we report errors ourselves. */
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'h':
			usage(stdout);
			return output_checked(NULL, KMUX_EXIT_OK);
		case 'V':
			printf("kmux %s\n", KMUX_VERSION);
			return output_checked(NULL, KMUX_EXIT_OK);
		default:
			if (optopt)
				fprintf(stderr, "kmux: unknown option '-%c'\n",
					optopt);
			else
				fprintf(stderr, "kmux: unknown option '%s'\n",
					argv[optind - 1]);
			usage(stderr);
			return KMUX_EXIT_USAGE;
		}
	}
	if (optind >= argc) {
		fputs("kmux: no command given\n", stderr);
		usage(stderr);
		return KMUX_EXIT_USAGE;
	}
	argc -= optind;
	argv += optind;
	if (strcmp(argv[0], "help") == 0)
		return output_checked("help", cmd_help(argc, argv));
	e = cmd_find(argv[0]);
	if (!e) {
		fprintf(stderr, "kmux: unknown command '%s'\n", argv[0]);
		usage(stderr);
		return KMUX_EXIT_USAGE;
	}
	/* A fresh getopt for the command (glibc: 0 reinitializes). */
	optind = 0;
	opterr = 0;
	optopt = 0;
	return output_checked(e->name, e->exec(argc, argv));
}
