/*
 * daemon.h - kmuxd's internal state, shared by its files:
 *
 *	server.c         start-up, socket and locks, signals, the tick
 *	server-client.c  connections: framing, HELLO, requests, replies
 *	job.c            jobs: queue, admission, start, reaping, signals,
 *	                 recovery
 *	job-request.c    what clients ask: submit, ps, top, wait, cancel,
 *	                 logs, and the preload's messages
 *	nvml.c           the GPUs
 *	busy-est.c       a job's demand on the GPU, from NVML's samples
 *	slurm-weight.c   busyness as the node's Slurm weight
 *	mps.c            --mps: the jobs' private MPS control daemon
 *	turns.c          turns of wait-bound tasks sharing a GPU
 *
 * One thread, one libevent loop: nothing here is locked.
 */
#ifndef KMUX_DAEMON_H
#define KMUX_DAEMON_H

#include <limits.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/queue.h>
#include <sys/types.h>

#include "admit.h"
#include "busy-est.h"
#include "mps.h"
#include "paths.h"
#include "proto.h"

struct event;
struct event_base;
struct evconnlistener;
struct bufferevent;
struct db;
struct db_job;
struct nvml;
struct region_cpus_thread;
struct server;
struct slurm_weight;

/* One client connection: the CLI, or later a preload. */
struct conn {
	TAILQ_ENTRY(conn) entry;
	struct server *srv;
	struct bufferevent *bev;
	uint64_t id;		/* for the log */
	uid_t uid;		/* SO_PEERCRED */
	gid_t gid;
	pid_t pid;
	bool hello;		/* HELLO seen: other requests allowed */
	uint16_t role;
	bool closing;		/* no more requests; freed once flushed */
	bool free_scheduled;
	/* A preload's registration once admitted: the process whose work a
	 * region on its GPUs drains and freezes (region.c). */
	int64_t reg_job;
	pid_t reg_pid;
};

/* An exclusive region (region.c), waiting, draining or held. */
enum region_state { REGION_WAITING, REGION_DRAINING, REGION_HELD };

#define REGION_MAX_PEERS 64	/* tasks drained and frozen per region */

struct region {
	TAILQ_ENTRY(region) entry;	/* its GPU's FIFO while waiting */
	struct conn *conn;	/* the region's own connection */
	uint32_t seq;
	uint64_t id;
	pid_t pid;
	uint64_t pid_start;
	int64_t job;
	uint32_t gpu;
	enum region_state state;
	uint64_t req_us, grant_us, drain_until_us;
	uint64_t token;		/* DRAIN's */
	struct conn *acks[REGION_MAX_PEERS];	/* DRAINED still awaited */
	size_t nacks;
	struct {
		pid_t pid;
		uint64_t start;
		char *cgroup;	/* NULL: SIGSTOP; else its frozen cgroup */
	} frozen[REGION_MAX_PEERS];
	size_t nfrozen;
};

TAILQ_HEAD(region_list, region);

struct region_gpu {
	struct region_list waiting;	/* FIFO */
	struct region *holder;		/* draining or held */
};

/* Turns of the wait-bound tasks on one GPU (turns.c). */
struct turns_gpu {
	bool on;
	int64_t holder;		/* the job whose turn it is */
	uint64_t since_us;	/* ... since */
};

/* A queued or running job (ended jobs live in the database only). */
struct job {
	TAILQ_ENTRY(job) entry;
	int64_t id;
	uint32_t uid;
	uint32_t state;		/* PROTO_JOB_QUEUED or _RUNNING */
	uint32_t flags;		/* PROTO_JOB_F_* | DB_JOB_F_* */
	uint64_t submit_us;
	uint64_t start_us;
	uint64_t profile_key;
	uint64_t mem_peak;
	struct admit_task task;
	struct admit_placement place;	/* valid while running */
	bool placed;		/* place committed to the GPUs */
	pid_t pid;		/* 0: not known (yet) */
	uint64_t pid_start;
	bool child;		/* ours: SIGCHLD reaps it; else /proc polls */
	bool cancelling;
	struct event *kill_timer;	/* SIGKILL after the grace period */
	uid_t kill_uid;		/* who asked for it (job_signal) */
	struct conn *owner;	/* RUN: the client that runs it; a registered
				 * process: its preload's connection */
	uint32_t owner_seq;
	bool told_queued;	/* RUN, REGISTER: QUEUED sent (once) */
	/* RUN, recovered queued after a restart: its client's connection
	 * died with the old daemon.  Kept queued but not admitted (nobody
	 * would start it) until then, for the client to ATTACH again;
	 * cancelled after (job_attach_expire).  Recovered running with no
	 * pid (admitted, ADMIT maybe lost): kept running until then, for
	 * ATTACH, FINISHED or the preload's REGISTER; recorded exited, code
	 * unknown, after.  0: not waiting. */
	uint64_t attach_until_us;
	/* Queued, but the node as it is now cannot run it (PROTO_HELD_*: a
	 * daemon restarted with fewer GPUs, smaller ones or none): left out
	 * of admission, not failed (job_schedule). */
	uint32_t held;
	/* What its preload reports (ALLOC_UPDATE), for ps and top. */
	uint64_t mem_used;	/* resident bytes, last report */
	/* Its memory manager, last report (0 without one): evicted bytes,
	 * managed ranges, evictions and restores; evict: it acts on
	 * MEM_PRESSURE, asked_us when it was last asked (pressure.c). */
	uint64_t mem_evicted, mem_reserved, evicts, restores;
	bool evict;
	uint64_t asked_us;
	uint64_t shrink_asked_us;	/* last asked for budget (pressure.c) */
	/* Wait before its next budget ask, and its budget when last asked
	 * (admit_ask_hold). */
	uint64_t shrink_hold_us, shrink_quota_asked;
	/* Submitted to run under --memory=evict (KMUX_MEMORY=evict in the
	 * environment it was submitted with): admission weighs the working
	 * set its profile learned (admit_task_evict). */
	bool evict_mode;
	/* Evict mode: the largest budget it asked for while thrashing (0:
	 * it did not thrash), for its profile; thrash_held: refused it, it
	 * holds new tasks off its GPUs (admit_gpu.thrash_hold) until it gets
	 * it, ends, or has not asked for JOB_THRASH_HOLD_US since
	 * thrash_ask_us. */
	uint64_t thrash_want;
	/* Evict mode: its preload's last whole-run verdict (ALLOC_UPDATE's
	 * thrash_ws): the peak backed bytes when the run so far restored
	 * >= 1/THRASH_RUN_DIV of what it touched, else 0.  The last report
	 * counts (a verdict may turn as the run goes on). */
	uint64_t thrash_ws;
	bool thrash_held;
	uint64_t thrash_ask_us;
	uint64_t kernels;	/* launches, last report */
	uint64_t report_us;	/* when the last report came */
	uint64_t rate_kernels;	/* the rate's window: launches at its start */
	uint64_t rate_us;	/* ... and its start; 0: none yet */
	double kernel_rate;	/* launches per second over the last window */
	/* Host waits for the GPU (ALLOC_UPDATE's waits): the last report,
	 * the window's start, waits per second over the last window (0 until
	 * the first); and from its first report with kernels, what its
	 * profile learns the run's wait rate over (job_finish). */
	uint64_t waits;
	uint64_t rate_waits;
	double wait_rate;
	uint64_t act_us;	/* 0: no kernel reported yet */
	uint64_t act_waits;
	/* Paused by turns (turns.c): since when (0: not now), and for how
	 * long before, which its active time leaves out. */
	uint64_t paused_since_us;
	uint64_t paused_us;
	uint32_t lingering;	/* quick polls since its preload hung up */
	/* Measured busyness: its demand on its GPUs from its processes'
	 * shares (NVML), for the profile its next run is admitted by
	 * (busy-est.h). */
	double busy_tick;	/* this sample's demand, summed over its GPUs */
	bool busy_active;	/* this sample: it ran GPU work */
	struct busy_est busy;
	/* A growth it waits for (ALLOC_UPDATE with want, no room yet): the
	 * asking connection and request, answered by job_grow_retry() once
	 * its GPUs have room.  grow_conn NULL: none. */
	struct conn *grow_conn;
	uint32_t grow_seq;
	uint64_t grow_want;
	uint64_t grow_since_us;
	/* Evict mode, load control (docs/design-memory.md): its preload
	 * evicted all it could and waits on grow_conn for grow_want; its
	 * commitment went down to what it still holds.  susp_quota: its
	 * quota before, which it resumes with (susp_fallback) once the
	 * wait passes --grow-wait or every task on its GPUs waits. */
	bool suspended;
	bool susp_fallback;
	uint64_t susp_quota;
};

/* A client blocked in WAIT. */
struct waiter {
	TAILQ_ENTRY(waiter) entry;
	struct conn *conn;
	uint32_t seq;
	int64_t job;
};

/* A client reading a log (LOGS), until EOF. */
struct follower {
	TAILQ_ENTRY(follower) entry;
	struct conn *conn;
	uint32_t seq;
	int64_t job;
	int fd;
	uint64_t offset;
	bool follow;		/* to the end of the job, not of the file */
};

/*
 * A job that ended but whose end the database could not record (a full
 * disk): its row still says queued or running.  Clients are answered from
 * here (ps, wait, cancel) and the write is retried (job_end_flush) until
 * it succeeds; a daemon that exits first loses it, and the next one finds
 * the job gone (exited, code unknown).
 */
struct ended {
	TAILQ_ENTRY(ended) entry;
	int64_t id;
	uint32_t state;		/* PROTO_JOB_EXITED, _CANCELLED, _FAILED */
	int32_t code;
	int32_t sig;
	uint64_t end_us;
};

TAILQ_HEAD(conn_list, conn);
TAILQ_HEAD(job_list, job);
TAILQ_HEAD(ended_list, ended);
TAILQ_HEAD(waiter_list, waiter);
TAILQ_HEAD(follower_list, follower);

struct server {
	struct event_base *base;
	struct evconnlistener *listener;
	struct db *db;
	struct nvml *nvml;
	char nvml_why[256];	/* why there are no GPUs, if so */
	struct kmux_paths paths;
	char db_path[PATH_MAX + 16];
	char log_dir[PATH_MAX + 16];
	bool system;
	uid_t uid;		/* the daemon's own */
	double kill_grace_s;
	/* Test knob KMUXD_TEST_DIE_AT (server_test_die); NULL: off. */
	const char *test_die_at;

	/* The preload for the jobs; "" when it was not found. */
	char library[PATH_MAX];

	struct db_recovery_counts {
		size_t queued, running_kept, lost;
	} recovered;		/* what start-up found, for the log */

	struct admit_policy policy;
	struct admit_gpu gpus[ADMIT_MAX_GPUS];
	size_t ngpus;
	uint64_t gpu_mem_cap;	/* --gpu-mem: mem_total at most this; 0: none */
	uint64_t stamp;		/* placements so far (round robin) */
	uint64_t last_sample_us;

	struct job_list queued;	/* submission order */
	struct job_list running;
	struct ended_list unrecorded;	/* ends the database lacks, oldest
					 * first */
	struct conn_list conns;
	uint64_t next_conn_id;
	struct waiter_list waiters;
	struct follower_list followers;

	struct slurm_weight *slurm;	/* --slurm-node: slurm-weight.c */

	struct mps mps;		/* --mps; mps.on: jobs get its directories */

	/* Exclusive regions (region.c). */
	struct region_gpu regions[ADMIT_MAX_GPUS];
	struct turns_gpu turns[ADMIT_MAX_GPUS];	/* by GPU index */
	uint8_t *gates;			/* <socket>.gates, mapped */
	char gates_path[PATH_MAX + 16];
	uint64_t region_max_us;		/* --region-max */
	uint64_t region_drain_us;	/* --region-drain */
	bool region_freeze;		/* --region-freeze */
	char cgroup_root[PATH_MAX];	/* --cgroup-root; "": SIGSTOP only */
	bool region_cpus_on;		/* --region-cpus given */
	cpu_set_t region_cpus;
	struct region_cpus_thread *cpus_threads;	/* masks changed */
	size_t ncpus_threads, cpus_threads_cap;
	uint64_t next_region, next_token;
	struct event *ev_region;	/* limits, dead holders, drain timeouts */

	struct event *ev_sigchld, *ev_sigterm, *ev_sigint;
	struct event *ev_tick;		/* sampling, orphans, aging */
	struct event *ev_schedule;	/* admission, run from the loop */
	struct event *ev_follow;	/* feeds the log followers */
	int lock_fd;			/* <socket>.lock, held for life */
	int state_lock_fd;		/* <state>/lock, likewise */
	bool socket_bound;
	bool replaced_stale;	/* a dead daemon's socket was there */
	bool db_stalled;	/* a start could not be recorded (full disk) */
	bool stopping;		/* shutting down: jobs stay as they are */
	bool poll_soon;		/* a quick /proc poll is pending */

	/* One scratch frame, for every reply (PROTO_MAX_MSG). */
	struct proto_buf out;
	uint8_t *readbuf;		/* LOG_DATA chunks */
};

/* A kernel rate over at least this long (ALLOC_UPDATE comes every 250 ms). */
#define SERVER_RATE_WINDOW_US 1000000u
/* No report for this long: the preload saw no change, so no launches. */
#define SERVER_RATE_STALE_US 2000000u

/* Bytes of log per LOG_DATA frame. */
#define SERVER_LOG_CHUNK (512u * 1024)
/* Stop feeding a reader whose unsent output is above this. */
#define SERVER_OUT_HIGH (4u * 1024 * 1024)
#define SERVER_TICK_MS 500
#define SERVER_FOLLOW_MS 100

/* ADMIT's MPS directories: the jobs' CUDA_MPS_* under --mps, else "". */
static inline void server_admit_mps(const struct server *srv,
				    struct proto_admit *a)
{
	a->mps_pipe = srv->mps.on ? srv->mps.pipe : "";
	a->mps_log = srv->mps.on ? srv->mps.log : "";
}

uint64_t server_now_us(void);
/* Run admission soon, from the loop (never re-entered). */
void server_kick(struct server *srv);
/*
 * Test knob: kmuxd kills itself (SIGKILL) at point when KMUXD_TEST_DIE_AT
 * names it, so that e2e tests crash it inside a window a real crash hits
 * only by chance (t6s-daemon-crash.sh).  Not for users.
 */
void server_test_die(struct server *srv, const char *point);

/* server-client.c */
void server_client_accept(struct server *srv, int fd);
void server_client_close(struct conn *c);
void server_client_free_all(struct server *srv);
/* Encode m (seq included) and queue it on c; false if c is closing. */
bool server_client_send(struct conn *c, const struct proto_msg *m);
void server_client_error(struct conn *c, uint32_t seq, int err,
			 const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
size_t server_client_pending(const struct conn *c);
/* May c see and act on jobs of uid? */
bool server_client_may(const struct conn *c, uint32_t uid);

/* job.c */
/*
 * A refused thrashing task holds its GPUs this long after its last ask:
 * the preload asks at most once a second while it thrashes, so a hold it
 * stopped renewing (its working set shrank, say) lapses.
 */
#define JOB_THRASH_HOLD_US (UINT64_C(5) * 1000000)

/*
 * How long a queued `kmux run` job recovered at start-up waits for its
 * client to come back (ATTACH): the client retries every 0.8 s at most once
 * its connection dropped, so a live one is back well within this; a dead
 * one's job is then cancelled rather than left queued for nobody.
 */
#define JOB_ATTACH_GRACE_US (UINT64_C(5) * 1000000)

/* Does an environment block (envc NUL-terminated strings, len bytes) set
 * KMUX_MEMORY=evict (its first KMUX_MEMORY entry, as getenv reads it)? */
bool job_env_evict(const char *env, size_t len);

/* j's thrash hold is lifted (why: for the log). */
void job_thrash_release(struct server *srv, struct job *j, const char *why);
/* j's wait rate over the last window was just measured: a running task
 * that waits too often for time slicing becomes wait-bound (admit.h). */
void job_slice_check(struct server *srv, struct job *j);

/* turns.c: called every region tick; turns_free before the gates go. */
void turns_tick(struct server *srv);
void turns_free(struct server *srv);

void job_task_init(struct server *srv, struct job *j, uint32_t ngpus,
		   uint64_t mem_request, int32_t prio);
/* Queued `kmux run` jobs whose client did not ATTACH in time: cancelled;
 * admitted ones with no client and no pid by then: exited, code unknown. */
void job_attach_expire(struct server *srv);
/* j ended (or never will start): record, release, notify; frees j. */
void job_finish(struct server *srv, struct job *j, uint32_t state,
		int32_t code, int32_t sig);
/*
 * A user's cancel of queued job j, written before anything else: a cancel
 * only kept in memory (a full disk) would be undone by a restart, whose
 * recovery finds the row queued and runs the job.  0 (j freed), or -errno
 * with err when the database cannot record it (j untouched, still queued).
 */
int job_cancel_queued(struct server *srv, struct job *j, char *err,
		      size_t errlen);
/*
 * Ends the database could not record (struct ended): write them now, in
 * order, stopping at the first that still fails.  From the tick and after
 * any write that succeeded (there is room again).
 */
void job_end_flush(struct server *srv);
/* The unrecorded end of job id, or NULL. */
const struct ended *job_end_find(struct server *srv, int64_t id);
/* A row read from the database, with its unrecorded end applied, if any. */
void job_end_apply(struct server *srv, struct db_job *dj);
/* Commit a job that already runs on the GPUs of mask with this quota. */
void job_recommit(struct server *srv, struct job *j, uint64_t mask,
		  uint64_t quota);
/* Kernels per second to show for j now (0 once its reports stopped). */
uint32_t job_kernel_rate(const struct job *j, uint64_t now_us);
/* Its host waits per second over the last window, likewise. */
uint32_t job_wait_rate(const struct job *j, uint64_t now_us);
/* Same pid, same start time, not a zombie. */
bool job_proc_alive(int32_t pid, uint64_t pid_start, void *arg);
/*
 * sig to j's process group, SIGKILL after the grace period; -errno.  A
 * process kmuxd did not start is signalled with the permissions of uid,
 * the user who asked (job_kill_as).
 */
int job_signal(struct server *srv, struct job *j, int sig, uid_t uid);
int job_recover(struct server *srv, char *err, size_t errlen);
void job_schedule(struct server *srv);
void job_reap(struct server *srv);
void job_poll(struct server *srv);
/*
 * A registered process hung up but is still in /proc (exiting): look again
 * in 20 ms rather than at the next tick, so its memory is free at once.
 */
void job_poll_soon(struct server *srv);
void job_sample(struct server *srv);
void job_free_all(struct server *srv);
struct job *job_find(struct server *srv, int64_t id);

/* job.c: the running job whose process pid is, or descends from. */
struct job *job_of_pid(struct server *srv, uint32_t pid);
int job_proc_parent(uint32_t pid, uint32_t *ppid);
bool job_proc_owned_by(uint32_t pid, uid_t uid);

/* job.c: the GPU indices a running job was placed on, as a mask. */
uint64_t job_gpu_mask(struct server *srv, const struct job *j);

/* pressure.c */
/*
 * After each sample: for each GPU whose memory in use passes what may be
 * committed (or keeps the head of the queue out), ask its evict-mode tasks
 * to give up resident bytes (MEM_PRESSURE); where commitments alone keep
 * the head out, ask them to give up budget (PROTO_PRESSURE_F_BUDGET).
 */
void pressure_check(struct server *srv);
/* j's preload gave up budget (ALLOC_UPDATE with PROTO_ALLOC_F_SHRUNK):
 * lower its commitment to `to` and run admission. */
void pressure_shrunk(struct server *srv, struct job *j, uint64_t to);
/* Fake GPUs (KMUX_FAKE_GPUS): their used bytes from the tasks' reports
 * plus KMUX_FAKE_MEM_USED's foreign bytes; nothing without that knob. */
void pressure_fake_used(struct server *srv);

/* region.c */
int region_init(struct server *srv, char *err, size_t errlen);
void region_free(struct server *srv);
void region_enter(struct conn *c, const struct proto_msg *m);
void region_leave(struct conn *c, const struct proto_msg *m);
void region_drained(struct conn *c, const struct proto_msg *m);
void region_conn_gone(struct conn *c);

/* region-cgroup.c: cgroup v2 freezing (-errno on failure). */
typedef bool (*region_cgroup_ok_fn)(pid_t pid, void *arg);
/* The cgroup2 mount point, from /proc/self/mountinfo. */
int region_cgroup_default_root(char *buf, size_t len);
/* root + pid's cgroup v2 path (from /proc/PID/cgroup). */
int region_cgroup_of(const char *root, pid_t pid, char *dir, size_t len);
/* May kmuxd freeze dir: writable, not frozen, every process in it and
 * below passes ok()?  0, or why not. */
int region_cgroup_check(const char *dir, region_cgroup_ok_fn ok, void *arg,
			char *why, size_t whylen);
/* Write 1, wait up to wait_ms for cgroup.events "frozen 1" (-ETIMEDOUT:
 * written, not yet frozen). */
int region_cgroup_freeze(const char *dir, unsigned int wait_ms);
int region_cgroup_thaw(const char *dir);

/* region-cpus.c: --region-cpus.  Bring every mask in line with the regions
 * held now (after a grant, a release, and on the region tick). */
void region_cpus_update(struct server *srv);
/* Restore every mask changed and forget them. */
void region_cpus_free(struct server *srv);

/* job-request.c */
void job_submit(struct conn *c, const struct proto_msg *m);
void job_ps(struct conn *c, const struct proto_msg *m);
void job_top(struct conn *c, const struct proto_msg *m);
void job_wait(struct conn *c, const struct proto_msg *m);
void job_cancel(struct conn *c, const struct proto_msg *m);
void job_logs(struct conn *c, const struct proto_msg *m);
void job_register(struct conn *c, const struct proto_msg *m);
void job_finished(struct conn *c, const struct proto_msg *m);
void job_attach(struct conn *c, const struct proto_msg *m);
void job_started(struct conn *c, const struct proto_msg *m);
void job_alloc_update(struct conn *c, const struct proto_msg *m);
/*
 * Growths that wait for room: grant those that fit now (oldest first),
 * refuse those that waited --grow-wait or could wait for ever.  From
 * job_schedule(), before any queued task is admitted.
 */
void job_grow_retry(struct server *srv);
/* j stops waiting to grow; with err != 0 its asker is told so (if there). */
void job_grow_drop(struct server *srv, struct job *j, int err,
		   const char *why);
/*
 * c is being freed: drop its waiters and readers, end the jobs it ran.
 * Called from the loop only, never inside another job walk.
 */
void job_conn_gone(struct conn *c);
void job_feed_followers(struct server *srv);

#endif
