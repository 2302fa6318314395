/*
 * cmd-daemon.c - `kmux daemon`: run kmuxd.  The daemon is this binary
 * (src/daemon/); this file is its command line only.
 */
#include <errno.h>
#include <getopt.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd.h"
#include "cpulist.h"
#include "daemon/admit.h"
#include "daemon/server.h"
#include "daemon/slurm-weight.h"
#include "log.h"
#include "size.h"

enum {
	OPT_SYSTEM = 256,
	OPT_SOCKET,
	OPT_STATE_DIR,
	OPT_KILL_GRACE,
	OPT_PLACEMENT,
	OPT_BUSY_MAX,
	OPT_SLICE_WAITS,
	OPT_DEFAULT_BUSY,
	OPT_GUESS,
	OPT_GROW_WAIT,
	OPT_SLURM_NODE,
	OPT_SLURM_INTERVAL,
	OPT_REGION_MAX,
	OPT_REGION_DRAIN,
	OPT_REGION_FREEZE,
	OPT_GPU_MEM,
	OPT_REGION_CPUS,
	OPT_CGROUP_ROOT,
	OPT_MPS,
	OPT_MPS_CONTROL,
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
	      "                        before, 0 < X <= 1 (0.25), until measured\n"
	      "      --guess F         a task with no --mem and no history starts\n"
	      "                        with F of a GPU as its quota, 0 < F < 0.95\n"
	      "                        (0.10), and grows as it allocates\n"
	      "      --grow-wait SEC   a growth waits this long at most for room\n"
	      "                        before the allocation fails (600; 0: no\n"
	      "                        bound)\n"
	      "      --slice-waits N   without --mps, a task that waits for the\n"
	      "                        GPU N times a second or more (learned, or\n"
	      "                        seen while it runs) gets a GPU of its own\n"
	      "                        (1000; 0: never)\n"
	      "      --slurm-node NAME keep Slurm node NAME's weight in step with\n"
	      "                        this node's busyness (docs/slurm.md)\n"
	      "      --slurm-interval SEC  at most one weight update per SEC (10)\n"
	      "      --region-max SEC  revoke an exclusive region held longer\n"
	      "                        (60; 0: never)\n"
	      "      --region-drain SEC  wait this long at most for the other\n"
	      "                        tasks to drain before a region (2)\n"
	      "      --region-freeze on|off  stop the other tasks on the GPU\n"
	      "                        during a region (on)\n"
	      "      --gpu-mem SIZE    admit as if each GPU had SIZE of memory at\n"
	      "                        most, by commitments alone (benchmarks:\n"
	      "                        a small GPU; NVML's used bytes ignored)\n"
	      "      --region-cpus LIST  pin a region's holder to these cores\n"
	      "                        (\"2-3\", \"0,4-7\") and keep every other\n"
	      "                        task off them while it holds it (off)\n"
	      "      --cgroup-root DIR where /proc/PID/cgroup paths are found,\n"
	      "                        to freeze through cgroup.freeze (default:\n"
	      "                        the cgroup2 mount; \"\": SIGSTOP only)\n"
	      "      --mps             run every job kmux starts or admits as a\n"
	      "                        client of one private MPS control daemon\n"
	      "                        (started now, stopped on exit; exit 1 if\n"
	      "                        it cannot start)\n"
	      "      --mps-control PATH  its nvidia-cuda-mps-control (default:\n"
	      "                        PATH, then /usr/local/nvidia/bin)\n"
	      "  -v, --verbose         log every connection and request\n"
	      "  -h, --help            this help\n"
	      "\n"
	      "Exit status: 0; 1 when the daemon cannot start (one already runs\n"
	      "on the socket, a directory or the database is unusable); 2 for\n"
	      "bad usage.  See kmux-daemon(1).\n", stdout);
}

/*
 * --region-cpus: a strict list of cores this daemon may itself run on (a
 * holder pinned to a core outside its cpuset would fail at the first
 * region, not here).  0, or the usage error printed.
 */
static int region_cpus_parse(const char *s, cpu_set_t *set)
{
	char err[256], allowed[256];
	cpu_set_t mine, out;

	if (cpulist_parse_here(s, set, err, sizeof(err)))
		return cmd_usage_error(&cmd_daemon_entry,
				       "bad --region-cpus: %s", err);
	if (sched_getaffinity(0, sizeof(mine), &mine))
		return cmd_usage_error(&cmd_daemon_entry, "--region-cpus: "
				       "cannot read this process's CPUs: %s",
				       strerror(errno));
	CPU_AND(&out, set, &mine);
	if (!CPU_EQUAL(&out, set)) {
		cpulist_format(&mine, allowed, sizeof(allowed));
		return cmd_usage_error(&cmd_daemon_entry, "bad --region-cpus "
				       "'%s': not all of them are CPUs this "
				       "process may use (%s)", s, allowed);
	}
	return 0;
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
		{ "slice-waits", required_argument, NULL, OPT_SLICE_WAITS },
		{ "default-busy", required_argument, NULL, OPT_DEFAULT_BUSY },
		{ "guess", required_argument, NULL, OPT_GUESS },
		{ "grow-wait", required_argument, NULL, OPT_GROW_WAIT },
		{ "slurm-node", required_argument, NULL, OPT_SLURM_NODE },
		{ "slurm-interval", required_argument, NULL,
		  OPT_SLURM_INTERVAL },
		{ "region-max", required_argument, NULL, OPT_REGION_MAX },
		{ "region-drain", required_argument, NULL, OPT_REGION_DRAIN },
		{ "region-freeze", required_argument, NULL, OPT_REGION_FREEZE },
		{ "gpu-mem", required_argument, NULL, OPT_GPU_MEM },
		{ "region-cpus", required_argument, NULL, OPT_REGION_CPUS },
		{ "cgroup-root", required_argument, NULL, OPT_CGROUP_ROOT },
		{ "mps", no_argument, NULL, OPT_MPS },
		{ "mps-control", required_argument, NULL, OPT_MPS_CONTROL },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct server_opts o = {
		.kill_grace_s = SERVER_KILL_GRACE_S,
		.log_level = KMUX_LOG_INFO,
		.slurm_interval_s = SLURM_WEIGHT_INTERVAL_S,
		.region_max_s = SERVER_REGION_MAX_S,
		.region_drain_s = SERVER_REGION_DRAIN_S,
		.region_freeze = true,
		.grow_wait_s = -1,
		.slice_waits = -1,
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
		case OPT_SLICE_WAITS:
			o.slice_waits = strtod(optarg, &end);
			if (end == optarg || *end || !(o.slice_waits >= 0) ||
			    o.slice_waits > 1e9)
				return cmd_usage_error(&cmd_daemon_entry,
					"bad --slice-waits '%s' (waits per "
					"second, 0 <= N <= 1e9; 0: never)",
					optarg);
			break;
		case OPT_DEFAULT_BUSY:
			o.default_busy = strtod(optarg, &end);
			if (end == optarg || *end || !(o.default_busy > 0) ||
			    o.default_busy > 1)
				return cmd_usage_error(&cmd_daemon_entry,
					"bad --default-busy '%s' (0 < X <= 1)",
					optarg);
			break;
		case OPT_GUESS:
			o.guess_frac = strtod(optarg, &end);
			if (end == optarg || *end || !(o.guess_frac > 0) ||
			    o.guess_frac >= 0.95)
				return cmd_usage_error(&cmd_daemon_entry,
					"bad --guess '%s' (a share of a GPU, "
					"0 < F < 0.95)", optarg);
			break;
		case OPT_GROW_WAIT:
			o.grow_wait_s = strtod(optarg, &end);
			if (end == optarg || *end || !(o.grow_wait_s >= 0) ||
			    o.grow_wait_s > 86400)
				return cmd_usage_error(&cmd_daemon_entry,
					"bad --grow-wait '%s' (seconds, "
					"0..86400)", optarg);
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
		case OPT_REGION_MAX:
			o.region_max_s = strtod(optarg, &end);
			if (end == optarg || *end || !(o.region_max_s >= 0) ||
			    o.region_max_s > 86400)
				return cmd_usage_error(&cmd_daemon_entry,
					"bad --region-max '%s' (seconds, "
					"0..86400)", optarg);
			break;
		case OPT_REGION_DRAIN:
			o.region_drain_s = strtod(optarg, &end);
			if (end == optarg || *end || !(o.region_drain_s >= 0) ||
			    o.region_drain_s > 600)
				return cmd_usage_error(&cmd_daemon_entry,
					"bad --region-drain '%s' (seconds, "
					"0..600)", optarg);
			break;
		case OPT_REGION_FREEZE:
			if (strcmp(optarg, "on") && strcmp(optarg, "off"))
				return cmd_usage_error(&cmd_daemon_entry,
					"bad --region-freeze '%s' (on or off)",
					optarg);
			o.region_freeze = strcmp(optarg, "on") == 0;
			break;
		case OPT_GPU_MEM:
			if (size_parse(optarg, &o.gpu_mem) || o.gpu_mem == 0)
				return cmd_usage_error(&cmd_daemon_entry,
					"bad --gpu-mem '%s' (a size > 0, e.g. "
					"16G)", optarg);
			break;
		case OPT_REGION_CPUS:
			if (region_cpus_parse(optarg, &o.region_cpus))
				return KMUX_EXIT_USAGE;
			o.region_cpus_on = true;
			break;
		case OPT_CGROUP_ROOT:
			if (*optarg && optarg[0] != '/')
				return cmd_usage_error(&cmd_daemon_entry,
					"bad --cgroup-root '%s' (an absolute "
					"directory, or \"\")", optarg);
			o.cgroup_root = optarg;
			break;
		case OPT_MPS:
			o.mps = true;
			break;
		case OPT_MPS_CONTROL:
			if (!*optarg)
				return cmd_usage_error(&cmd_daemon_entry,
					"empty --mps-control");
			o.mps_control = optarg;
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
	if (o.mps_control && !o.mps)
		return cmd_usage_error(&cmd_daemon_entry,
				       "--mps-control needs --mps");
	/* One MPS server serves one user at a time and a private pipe
	 * directory reaches only ours: not a node's daemon. */
	if (o.mps && o.system)
		return cmd_usage_error(&cmd_daemon_entry, "--mps is per-user "
				       "only, not with --system (one MPS "
				       "server serves one user at a time)");
	return server_main(&o);
}

const struct cmd_entry cmd_daemon_entry = {
	.name = "daemon",
	.usage = "[-f|--foreground] [--system] [--socket PATH] "
		 "[--state-dir DIR] [--kill-grace SEC] "
		 "[--placement busyness|roundrobin] [--busy-max X] "
		 "[--default-busy X] [--guess F] [--grow-wait SEC] "
		 "[--slurm-node NAME "
		 "[--slurm-interval SEC]] [--region-max SEC] "
		 "[--region-drain SEC] [--region-freeze on|off] "
		 "[--gpu-mem SIZE] "
		 "[--region-cpus LIST] [--cgroup-root DIR] "
		 "[--mps [--mps-control PATH]] [--slice-waits N] [-v]",
	.summary = "run kmuxd, the job queue and GPU scheduler",
	.exec = daemon_exec,
};
