/*
 * cmd-daemon.c - `kmux daemon`: run kmuxd.  The daemon is this binary
 * (src/daemon/); this file is its command line only.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>

#include "cmd.h"
#include "daemon/admit.h"
#include "daemon/server.h"
#include "log.h"

enum {
	OPT_SYSTEM = 256,
	OPT_SOCKET,
	OPT_STATE_DIR,
	OPT_KILL_GRACE,
	OPT_PLACEMENT,
};

static void help(void)
{
	cmd_print_usage(&cmd_daemon_entry, stdout);
	fputs("\n"
	      "Run kmuxd, the daemon that queues GPU jobs, admits them onto\n"
	      "GPUs by memory and busyness, starts and reaps them.  Without\n"
	      "--foreground it returns once the socket listens and logs to\n"
	      "STATE/kmuxd.log.  `kmux submit` starts one when none runs.\n"
	      "\n"
	      "  -f, --foreground      stay in the foreground, log to stderr\n"
	      "      --system          one daemon for the node: /run/kmux/sock,\n"
	      "                        /var/lib/kmux, jobs run as their owners\n"
	      "      --socket PATH     listen on PATH (default: $KMUX_SOCKET,\n"
	      "                        else $XDG_RUNTIME_DIR/kmux/sock)\n"
	      "      --state-dir DIR   database and logs (default: $KMUX_STATE_DIR,\n"
	      "                        else $XDG_STATE_HOME/kmux)\n"
	      "      --kill-grace SEC  cancel: SIGKILL this long after SIGTERM (10)\n"
	      "      --placement P     busyness (default): the least busy GPU that\n"
	      "                        fits; roundrobin: the GPU used longest ago\n"
	      "                        that fits, ignoring busyness (a baseline)\n"
	      "  -v, --verbose         log every connection and request\n"
	      "  -h, --help            this help\n"
	      "\n"
	      "Exit status: 0; 1 when the daemon cannot start (one already runs\n"
	      "on the socket, a directory or the database is unusable); 2 for\n"
	      "bad usage.  See kmux-daemon(1).\n", stdout);
}

static int daemon_exec(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "foreground", no_argument, NULL, 'f' },
		{ "system", no_argument, NULL, OPT_SYSTEM },
		{ "socket", required_argument, NULL, OPT_SOCKET },
		{ "state-dir", required_argument, NULL, OPT_STATE_DIR },
		{ "kill-grace", required_argument, NULL, OPT_KILL_GRACE },
		{ "placement", required_argument, NULL, OPT_PLACEMENT },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct server_opts o = {
		.kill_grace_s = SERVER_KILL_GRACE_S,
		.log_level = KMUX_LOG_INFO,
	};
	enum admit_placement_kind place;
	char *end;
	int c;

	while ((c = getopt_long(argc, argv, ":fvh", longopts, NULL)) != -1) {
		switch (c) {
		case 'f':
			o.foreground = true;
			break;
		case OPT_SYSTEM:
			o.system = true;
			break;
		case OPT_SOCKET:
			o.socket = optarg;
			break;
		case OPT_STATE_DIR:
			o.state_dir = optarg;
			break;
		case OPT_KILL_GRACE:
			o.kill_grace_s = strtod(optarg, &end);
			if (end == optarg || *end || !(o.kill_grace_s >= 0) ||
			    o.kill_grace_s > 86400)
				return cmd_usage_error(&cmd_daemon_entry,
					"bad --kill-grace '%s' (seconds, 0..86400)",
					optarg);
			break;
		case OPT_PLACEMENT:
			if (admit_placement_parse(optarg, &place))
				return cmd_usage_error(&cmd_daemon_entry,
					"bad --placement '%s' (busyness or "
					"roundrobin)", optarg);
			o.placement = (int)place;
			break;
		case 'v':
			o.log_level = KMUX_LOG_DEBUG;
			break;
		case 'h':
			help();
			return KMUX_EXIT_OK;
		default:
			return cmd_option_error(&cmd_daemon_entry, argv, c);
		}
	}
	if (optind < argc)
		return cmd_usage_error(&cmd_daemon_entry,
				       "unexpected argument '%s'", argv[optind]);
	if (o.socket && !*o.socket)
		return cmd_usage_error(&cmd_daemon_entry, "empty --socket");
	if (o.state_dir && !*o.state_dir)
		return cmd_usage_error(&cmd_daemon_entry, "empty --state-dir");
	return server_main(&o);
}

const struct cmd_entry cmd_daemon_entry = {
	.name = "daemon",
	.usage = "[-f|--foreground] [--system] [--socket PATH] "
		 "[--state-dir DIR] [--kill-grace SEC] "
		 "[--placement busyness|roundrobin] [-v]",
	.summary = "run kmuxd, the job queue and GPU scheduler",
	.exec = daemon_exec,
};
