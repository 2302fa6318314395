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
#include "daemon/slurm-weight.h"
#include "log.h"

enum {
	OPT_SYSTEM = 256,
	OPT_SOCKET,
	OPT_STATE_DIR,
	OPT_KILL_GRACE,
	OPT_PLACEMENT,
	OPT_BUSY_MAX,
	OPT_DEFAULT_BUSY,
	OPT_SLURM_NODE,
	OPT_SLURM_INTERVAL,
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
	      "      --busy-max X      admit a task while the GPU's predicted\n"
	      "                        busyness stays at most X (1.5)\n"
	      "      --default-busy X  busyness predicted for a task never seen\n"
	      "                        before, 0 < X <= 1 (0.5)\n"
	      "      --slurm-node NAME keep Slurm node NAME's weight in step with\n"
	      "                        this node's busyness (docs/slurm.md)\n"
	      "      --slurm-interval SEC  at most one weight update per SEC (10)\n"
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
		{ "busy-max", required_argument, NULL, OPT_BUSY_MAX },
		{ "default-busy", required_argument, NULL, OPT_DEFAULT_BUSY },
		{ "slurm-node", required_argument, NULL, OPT_SLURM_NODE },
		{ "slurm-interval", required_argument, NULL,
		  OPT_SLURM_INTERVAL },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct server_opts o = {
		.kill_grace_s = SERVER_KILL_GRACE_S,
		.log_level = KMUX_LOG_INFO,
		.slurm_interval_s = SLURM_WEIGHT_INTERVAL_S,
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
		case OPT_BUSY_MAX:
			o.busy_max = strtod(optarg, &end);
			if (end == optarg || *end || !(o.busy_max > 0) ||
			    o.busy_max > 1000)
				return cmd_usage_error(&cmd_daemon_entry,
					"bad --busy-max '%s' (a number, 0 < X "
					"<= 1000)", optarg);
			break;
		case OPT_DEFAULT_BUSY:
			o.default_busy = strtod(optarg, &end);
			if (end == optarg || *end || !(o.default_busy > 0) ||
			    o.default_busy > 1)
				return cmd_usage_error(&cmd_daemon_entry,
					"bad --default-busy '%s' (0 < X <= 1)",
					optarg);
			break;
		case OPT_SLURM_NODE:
			if (!slurm_weight_node_ok(optarg))
				return cmd_usage_error(&cmd_daemon_entry,
					"bad --slurm-node '%s' (a Slurm node "
					"name: letters, digits, '.', '_', '-')",
					optarg);
			o.slurm_node = optarg;
			break;
		case OPT_SLURM_INTERVAL:
			o.slurm_interval_s = strtod(optarg, &end);
			if (end == optarg || *end ||
			    !(o.slurm_interval_s >= 0.1) ||
			    o.slurm_interval_s > 3600)
				return cmd_usage_error(&cmd_daemon_entry,
					"bad --slurm-interval '%s' (seconds, "
					"0.1..3600)", optarg);
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
		 "[--placement busyness|roundrobin] [--busy-max X] "
		 "[--default-busy X] [--slurm-node NAME "
		 "[--slurm-interval SEC]] [-v]",
	.summary = "run kmuxd, the job queue and GPU scheduler",
	.exec = daemon_exec,
};
