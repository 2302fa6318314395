/*
 * server.h - kmuxd, the daemon, as `kmux daemon` starts it: one binary,
 * the CLI and the daemon, as tmux is one binary for client and server.
 *
 * Owns the daemon's entry point and its options.  Everything else of the
 * daemon is internal (daemon.h).
 */
#ifndef KMUX_SERVER_H
#define KMUX_SERVER_H

#include <sched.h>
#include <stdbool.h>

struct server_opts {
	bool foreground;	/* stay attached, log to stderr (systemd) */
	bool system;		/* one daemon per node, SO_PEERCRED checks */
	const char *socket;	/* NULL: paths_resolve()'s default */
	const char *state_dir;	/* NULL: likewise */
	double kill_grace_s;	/* cancel: SIGTERM, then SIGKILL after this */
	int log_level;		/* KMUX_LOG_* */
	int placement;		/* enum admit_placement_kind; 0 = busyness */
	double busy_max;	/* > 0: admit_policy.busy_max instead */
	double slice_waits;	/* >= 0: admit_policy.slice_waits instead */
	double default_busy;	/* > 0: admit_policy.default_busy instead */
	double guess_frac;	/* > 0: admit_policy.guess_frac instead */
	double grow_wait_s;	/* >= 0: admit_policy.grow_wait_us (0: none) */
	const char *slurm_node;	/* busyness as this node's Slurm weight */
	double slurm_interval_s;	/* at most one weight update per this */
	double region_max_s;	/* revoke a region held longer; 0: never */
	double region_drain_s;	/* wait at most this for DRAINED */
	bool region_freeze;	/* SIGSTOP the other tasks during a region */
	uint64_t gpu_mem;	/* > 0: admit as if each GPU had at most this
				 * many bytes (benchmarks: a small GPU) */
	/* Resolves /proc/PID/cgroup paths for cgroup.freeze; NULL: the
	 * cgroup2 mount point; "": never freeze through cgroups. */
	const char *cgroup_root;
	bool region_cpus_on;	/* pin region holders to region_cpus */
	cpu_set_t region_cpus;
	bool mps;		/* run the jobs under a private MPS daemon */
	const char *mps_control;	/* its binary; NULL: PATH, then
					 * /usr/local/nvidia/bin */
};

#define SERVER_KILL_GRACE_S 10.0
#define SERVER_REGION_MAX_S 60.0
#define SERVER_REGION_DRAIN_S 2.0

/*
 * Run the daemon until SIGTERM or SIGINT.  Without foreground, fork first:
 * the parent returns 0 once the child listens (so `kmux daemon` and the
 * CLI's autostart know the socket is ready), or the child's failure.
 * Returns the process exit status: 0, or 1 with the reason on stderr (a
 * daemon already running on the socket, an unusable directory, a database
 * that cannot be opened).
 */
int server_main(const struct server_opts *o);

#endif
