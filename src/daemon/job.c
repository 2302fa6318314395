/*
 * job.c - owns kmuxd's jobs from admission to their end: the queue and the
 * running set in memory (the database holds the truth that must survive a
 * restart), admission with admit.h on every change and every tick, start
 * (fork/exec under the preload, its GPUs in CUDA_VISIBLE_DEVICES, its quota
 * in KMUX_MEM_QUOTA, output to a log), reaping (SIGCHLD for our children,
 * /proc polls for jobs a previous daemon started), signals (SIGKILL after
 * a grace period), recovery at start-up.  What clients ask of jobs is in
 * job-request.c.
 *
 * Order of effects on a state change: the database first (so a crash never
 * leaves the database behind what a client was told), then the GPU
 * accounting, then the clients.  A job is started at most once: it is
 * marked running (pid 0) before the fork, so a daemon killed in between
 * recovers it as lost rather than starting it twice.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <event2/event.h>

#include "cli/spawn.h"
#include "daemon.h"
#include "db.h"
#include "log.h"
#include "nvml.h"
#include "size.h"
#include "slurm-weight.h"

#define ERRLEN 512

/* Exit statuses of a job that could not be started, as a shell gives. */
#define JOB_EXIT_NOTFOUND 127
#define JOB_EXIT_NOEXEC 126

/* --- the tables ----------------------------------------------------------- */

struct job *job_find(struct server *srv, int64_t id)
{
	struct job *j;

	TAILQ_FOREACH(j, &srv->running, entry)
		if (j->id == id)
			return j;
	TAILQ_FOREACH(j, &srv->queued, entry)
		if (j->id == id)
			return j;
	return NULL;
}

static struct job_list *job_list_of(struct server *srv, struct job *j)
{
	return j->state == PROTO_JOB_RUNNING ? &srv->running : &srv->queued;
}

static void job_free(struct job *j)
{
	if (j->kill_timer)
		event_free(j->kill_timer);
	free(j);
}

void job_free_all(struct server *srv)
{
	struct waiter *w;
	struct follower *f;
	struct ended *e;
	struct job *j;

	/* A last try; what is still not written is lost with this daemon. */
	job_end_flush(srv);
	while ((e = TAILQ_FIRST(&srv->unrecorded))) {
		log_error("daemon: job %lld's end (%s, exit %d) was never "
			  "recorded: the next kmuxd recovers it as its row "
			  "says (running: exited, code unknown; queued: queued "
			  "again)", (long long)e->id,
			  proto_job_state_name(e->state), e->code);
		TAILQ_REMOVE(&srv->unrecorded, e, entry);
		free(e);
	}

	while ((j = TAILQ_FIRST(&srv->queued))) {
		TAILQ_REMOVE(&srv->queued, j, entry);
		job_free(j);
	}
	while ((j = TAILQ_FIRST(&srv->running))) {
		TAILQ_REMOVE(&srv->running, j, entry);
		job_free(j);
	}
	while ((w = TAILQ_FIRST(&srv->waiters))) {
		TAILQ_REMOVE(&srv->waiters, w, entry);
		free(w);
	}
	while ((f = TAILQ_FIRST(&srv->followers))) {
		TAILQ_REMOVE(&srv->followers, f, entry);
		close(f->fd);
		free(f);
	}
}

/* The GPUs of a placement as a mask and as "2,0" for CUDA_VISIBLE_DEVICES. */
static uint64_t place_mask(struct server *srv, const struct admit_placement *pl,
			   char *list, size_t len)
{
	uint64_t mask = 0;
	size_t off = 0;

	if (len)
		list[0] = '\0';
	for (uint32_t i = 0; i < pl->ngpus; i++) {
		uint32_t idx = srv->gpus[pl->slot[i]].index;

		mask |= UINT64_C(1) << idx;
		if (off < len)
			off += (size_t)snprintf(list + off, len - off, "%s%u",
						i ? "," : "", idx);
	}
	return mask;
}

uint64_t job_gpu_mask(struct server *srv, const struct job *j)
{
	return j->placed ? place_mask(srv, &j->place, NULL, 0) : 0;
}

bool job_env_evict(const char *env, size_t len)
{
	static const char key[] = "KMUX_MEMORY=";
	size_t off = 0, n;

	while (env && off < len) {
		n = strnlen(env + off, len - off);
		if (n >= sizeof(key) - 1 && !memcmp(env + off, key, sizeof(key) - 1))
			return n == sizeof(key) - 1 + 5 &&
			       !memcmp(env + off + sizeof(key) - 1, "evict", 5);
		off += n + 1;
	}
	return false;
}

void job_thrash_release(struct server *srv, struct job *j, const char *why)
{
	uint32_t i;

	if (!j->thrash_held)
		return;
	for (i = 0; i < j->place.ngpus && i < ADMIT_MAX_GPUS; i++) {
		struct admit_gpu *g;

		if (j->place.slot[i] >= srv->ngpus)
			continue;
		g = &srv->gpus[j->place.slot[i]];
		if (g->thrash_hold > 0)
			g->thrash_hold--;
	}
	j->thrash_held = false;
	log_info("daemon: job %lld no longer holds new tasks off its GPUs: %s",
		 (long long)j->id, why);
	server_kick(srv);
}

/*
 * Time slicing.  Without MPS the driver runs co-located contexts in turns,
 * and a context that waits on the GPU gives its turn up at every wait and
 * gets it back only after its co-runners' (0.25 ms beside another waiting
 * task, a 2 ms time slice beside one that always has work queued, on an
 * H200).  Two tasks that wait thousands of times a second then do less
 * together than one after the other (bench/results/share.md: four such
 * processes at once, a quarter of one alone).  Such a task is wait-bound
 * and never placed beside another: at submission when its profile says
 * so, and, seen while it runs, no other wait-bound task joins it.
 */
void job_slice_check(struct server *srv, struct job *j)
{
	if (!j->placed || j->task.wait_bound ||
	    !admit_wait_bound(j->wait_rate, &srv->policy))
		return;
	admit_mark_wait_bound(srv->gpus, srv->ngpus, &j->task, &j->place);
	log_info("daemon: job %lld waits for the GPU %.0f times a second "
		 "(--slice-waits %g): wait-bound; no other wait-bound task "
		 "joins it while it runs", (long long)j->id, j->wait_rate,
		 srv->policy.slice_waits);
}

/* What the task needs: declared, learned from earlier runs, or guessed. */
void job_task_init(struct server *srv, struct job *j, uint32_t ngpus,
		   uint64_t mem_request, int32_t prio)
{
	struct admit_profile learned = { 0 };
	struct db_profile dp;
	char err[ERRLEN];

	/*
	 * A profile counts only once a preload has reported a peak: a run
	 * that reported nothing taught nothing about memory.
	 */
	if (db_profile_get(srv->db, j->profile_key, &dp, err, sizeof(err)) == 0
	    && dp.peak_mem > 0) {
		learned.peak_mem = dp.peak_mem;
		learned.mean_busy = dp.mean_busy;
		learned.mean_duty = dp.mean_duty;
		learned.duty_runs = dp.duty_runs;
		learned.runs = dp.runs;
		learned.runtime_us = dp.mean_runtime_us > 0 ?
				     (uint64_t)dp.mean_runtime_us : 0;
		learned.thrash_mem = dp.thrash_mem;
		learned.thrash_runs = dp.thrash_runs;
		learned.wait_rate = dp.wait_rate;
		learned.wait_runs = dp.wait_runs;
	}
	admit_task_init(&j->task, (uint64_t)j->id, ngpus, mem_request,
			&learned, &srv->policy, j->submit_us);
	/* Evict mode: a budget below the working set an earlier run
	 * thrashed without only thrashes again (bench/results/memory.md run
	 * 3); the need becomes that working set, so the task goes where it
	 * fits and fewer run beside it, as under quota. */
	if (j->evict_mode && admit_task_evict(&j->task, &learned) &&
	    j->task.evict_ws > j->task.mem) {
		char ws[SIZE_FORMAT_MAX], rq[SIZE_FORMAT_MAX];

		size_format(j->task.evict_ws, ws, sizeof(ws));
		size_format(j->task.mem, rq, sizeof(rq));
		log_info("daemon: job %lld: evict mode; its profile thrashed "
			 "(%u runs) and needed %s: admitted at that, not the "
			 "%s%s budget", (long long)j->id, learned.thrash_runs,
			 ws, rq, j->task.mem_source == ADMIT_MEM_DECLARED ?
			 " declared" : "");
	}
	j->task.prio = prio;
	j->task.exclusive = j->flags & PROTO_JOB_F_EXCLUSIVE;
	if (learned.wait_runs > 0 &&
	    admit_wait_bound(learned.wait_rate, &srv->policy)) {
		j->task.wait_bound = true;
		log_info("daemon: job %lld: its profile waits for the GPU %.0f "
			 "times a second (%u runs; --slice-waits %g): "
			 "wait-bound, never placed beside another wait-bound "
			 "task", (long long)j->id, learned.wait_rate,
			 learned.wait_runs, srv->policy.slice_waits);
	}
	/* What the prediction rests on, one line per job (bench/jobmix's
	 * report reads it): a profile, or the defaults. */
	if (j->task.from_profile) {
		char pk[SIZE_FORMAT_MAX];

		size_format(learned.peak_mem, pk, sizeof(pk));
		log_info("daemon: job %lld: predicted from its profile (%u "
			 "runs): peak %s, busyness %.2f, duty %.2f%s, runtime "
			 "%.1f s; memory %s", (long long)j->id, learned.runs,
			 pk, j->task.busy, j->task.duty,
			 learned.duty_runs ? "" : " (unknown: the busyness)",
			 (double)j->task.runtime_us / 1e6,
			 j->task.mem_source == ADMIT_MEM_DECLARED ?
			 "declared" : "learned");
	} else {
		log_info("daemon: job %lld: no profile: busyness %.2f "
			 "(default), runtime unknown; memory %s",
			 (long long)j->id, j->task.busy,
			 j->task.mem_source == ADMIT_MEM_DECLARED ?
			 "declared" : "guessed");
	}
}

/* --- the end of a job ----------------------------------------------------- */

/* Ran kernels for at least this long: its wait rate is worth learning. */
#define JOB_WAITS_MIN_US 500000u

/*
 * Fold the run's waits per second of active time into its profile: from
 * its first report with kernels to its last report, less the time turns
 * kept it paused (turns.c), in which it could not wait.
 */
static void job_learn_waits(struct server *srv, struct job *j)
{
	char err[ERRLEN];
	uint64_t span, paused = j->paused_us;
	double rate;

	if (!j->act_us || j->report_us < j->act_us + JOB_WAITS_MIN_US ||
	    j->waits < j->act_waits)
		return;
	if (j->paused_since_us && j->report_us > j->paused_since_us)
		paused += j->report_us - j->paused_since_us;
	span = j->report_us - j->act_us;
	span = paused < span ? span - paused : 0;
	if (span < JOB_WAITS_MIN_US)
		return;
	rate = (double)(j->waits - j->act_waits) * 1e6 / (double)span;
	if (db_profile_note_waits(srv->db, j->profile_key, rate, err,
				  sizeof(err)))
		log_warn("daemon: job %lld: profile: %s", (long long)j->id,
			 err);
	else
		log_info("daemon: job %lld: waited for the GPU %.0f times a "
			 "second over %.1f s of kernels (%.1f s paused by "
			 "turns left out)", (long long)j->id, rate,
			 (double)span / 1e6, (double)paused / 1e6);
}

/* Samples a finished job's measurement needs to go into its profile. */
#define JOB_BUSY_FINAL_SAMPLES 2

static void waiters_notify(struct server *srv, int64_t id, uint32_t state,
			   int32_t code, int32_t sig)
{
	struct waiter *w, *next;

	for (w = TAILQ_FIRST(&srv->waiters); w; w = next) {
		next = TAILQ_NEXT(w, entry);
		if (w->job != id)
			continue;
		server_client_send(w->conn, &(struct proto_msg){
			.type = PROTO_EXITED, .seq = w->seq,
			.u.exited = { (uint64_t)id, state, code, sig } });
		TAILQ_REMOVE(&srv->waiters, w, entry);
		free(w);
	}
}

/*
 * Can a failed db_job_finish() succeed later?  A full disk, a busy or
 * read-only file: yes, so the end is kept and retried.  -ENOENT, -EALREADY
 * and -EINVAL say the row itself disagrees: retrying changes nothing.
 */
static bool job_end_retryable(int r)
{
	return r != -ENOENT && r != -EALREADY && r != -EINVAL;
}

/*
 * The database could not record job id's end (why).  Dropping j alone would
 * leave its row running for good: ps would show it running, wait would
 * never return and cancel would contradict itself.  Keep the end, answer
 * for it from memory, write it later (job_end_flush).  false when it could
 * not even be kept.
 */
static bool job_end_keep(struct server *srv, int64_t id, uint32_t state,
			 int32_t code, int32_t sig, uint64_t now,
			 const char *why)
{
	struct ended *e = calloc(1, sizeof(*e));

	if (!e)
		return false;
	e->id = id;
	e->state = state;
	e->code = code;
	e->sig = sig;
	e->end_us = now;
	TAILQ_INSERT_TAIL(&srv->unrecorded, e, entry);
	log_error("daemon: job %lld %s (exit %d, signal %d), but the database "
		  "cannot record it: %s; kmuxd answers for the job from memory "
		  "and writes its end once the database takes writes again (a "
		  "kmuxd started before then finds it exited, code unknown)",
		  (long long)id, proto_job_state_name(state), code, sig, why);
	return true;
}

const struct ended *job_end_find(struct server *srv, int64_t id)
{
	struct ended *e;

	TAILQ_FOREACH(e, &srv->unrecorded, entry)
		if (e->id == id)
			return e;
	return NULL;
}

void job_end_apply(struct server *srv, struct db_job *dj)
{
	const struct ended *e = job_end_find(srv, dj->id);

	if (!e || (dj->state != PROTO_JOB_QUEUED &&
		   dj->state != PROTO_JOB_RUNNING))
		return;
	dj->state = e->state;
	dj->exit_code = e->code;
	dj->signal = e->sig;
	dj->end_us = e->end_us;
}

void job_end_flush(struct server *srv)
{
	char err[ERRLEN];
	struct ended *e;
	int r;

	while ((e = TAILQ_FIRST(&srv->unrecorded))) {
		r = db_job_finish(srv->db, e->id, e->state, e->code, e->sig,
				  e->end_us, err, sizeof(err));
		if (r && job_end_retryable(r)) {
			/* Still full: said once already, try again later. */
			log_debug("daemon: job %lld: %s", (long long)e->id,
				  err);
			return;
		}
		if (r)
			log_warn("daemon: job %lld: its end cannot be "
				 "recorded: %s", (long long)e->id, err);
		else
			log_info("daemon: job %lld: its end (%s, exit %d, "
				 "signal %d) is recorded now", (long long)e->id,
				 proto_job_state_name(e->state), e->code,
				 e->sig);
		TAILQ_REMOVE(&srv->unrecorded, e, entry);
		free(e);
	}
}

/*
 * job_finish(), the row already written (written) or not.  j is freed.
 */
static void job_finish_row(struct server *srv, struct job *j, uint32_t state,
			   int32_t code, int32_t sig, bool written)
{
	uint64_t now = server_now_us();
	char err[ERRLEN];
	bool measured, learned = false, kept = false;
	double busy, duty = -1.0;
	int r = 0;

	if (!written)
		r = db_job_finish(srv->db, j->id, state, code, sig, now, err,
				  sizeof(err));
	if (r == 0)
		job_end_flush(srv);	/* there is room: older ends first */
	else if (job_end_retryable(r))
		kept = job_end_keep(srv, j->id, state, code, sig, now, err);
	if (r && !kept)
		log_error("daemon: job %lld: %s", (long long)j->id, err);
	/* Measured when NVML could say (two samples at least); else the
	 * profile's busyness is left as it was (db_profile_update). */
	measured = busy_est_final(&j->busy, JOB_BUSY_FINAL_SAMPLES,
				  &busy) == 0 &&
		   busy_est_duty(&j->busy, JOB_BUSY_FINAL_SAMPLES, &duty) == 0;
	if (measured && j->busy.n_last >= JOB_BUSY_FINAL_SAMPLES)
		log_info("daemon: job %lld: measured busyness %.2f over its "
			 "active phase (%u of %u samples), duty %.2f",
			 (long long)j->id, busy, j->busy.n_last, j->busy.seen,
			 duty);
	else if (measured)
		log_info("daemon: job %lld: measured busyness %.2f over %u "
			 "samples, hardly any active, duty %.2f",
			 (long long)j->id, busy, j->busy.seen, duty);
	/* Its profile is a write too: on a full disk, the run teaches nothing
	 * rather than log the same failure three more times. */
	if (!kept && state == PROTO_JOB_EXITED && j->mem_peak && j->start_us) {
		learned = db_profile_update(srv->db, j->profile_key,
					    j->mem_peak,
					    measured ? busy : j->task.busy,
					    duty, measured, now - j->start_us,
					    now, err, sizeof(err)) == 0;
		if (!learned)
			log_warn("daemon: job %lld: profile: %s",
				 (long long)j->id, err);
	}
	if (learned)
		job_learn_waits(srv, j);
	if (learned && (j->thrash_want || j->thrash_ws)) {
		/* Thrashed: it asked to grow (a window thrashed), or its run
		 * as a whole restored too much.  The preload's thrash_ws is
		 * what to learn (mm_learn_ws: all it backed when the run
		 * thrashed, the working set its reuse distances say when it
		 * only asked); the ask alone, all it had backed then, is the
		 * fallback for a preload that sent none. */
		uint64_t ws = j->thrash_ws ? j->thrash_ws : j->thrash_want;
		char w[SIZE_FORMAT_MAX], a[SIZE_FORMAT_MAX];

		size_format(ws, w, sizeof(w));
		size_format(j->thrash_want, a, sizeof(a));
		if (db_profile_note_thrash(srv->db, j->profile_key, ws, err,
					   sizeof(err)))
			log_warn("daemon: job %lld: profile: %s",
				 (long long)j->id, err);
		else if (j->thrash_want > ws)
			log_info("daemon: job %lld: thrashed (asked to grow); "
				 "its profile learned a working set of %s, what "
				 "its reuse needed (it asked for %s)",
				 (long long)j->id, w, a);
		else
			log_info("daemon: job %lld: thrashed (%s); its profile "
				 "learned a working set of %s", (long long)j->id,
				 j->thrash_want ? "asked to grow"
						: "its restores over the run",
				 w);
	}
	job_grow_drop(srv, j, ECANCELED, "the job ended");
	job_thrash_release(srv, j, "it ended");
	if (j->placed)
		admit_release(srv->gpus, srv->ngpus, &j->task, &j->place);
	TAILQ_REMOVE(job_list_of(srv, j), j, entry);
	log_info("daemon: job %lld %s (exit %d, signal %d)", (long long)j->id,
		 proto_job_state_name(state), code, sig);
	waiters_notify(srv, j->id, state, code, sig);
	/* A `kmux run` client still waiting for ADMIT (cancelled, or it can
	 * never fit): tell it, or it would wait forever. */
	if (j->owner && j->state == PROTO_JOB_QUEUED)
		server_client_send(j->owner, &(struct proto_msg){
			.type = PROTO_EXITED, .seq = j->owner_seq,
			.u.exited = { (uint64_t)j->id, state, code, sig } });
	job_free(j);
	/* Readers of its log reach EOF now rather than at the next round. */
	job_feed_followers(srv);
	server_kick(srv);
}

/*
 * j has ended (or will never start): record it, give its GPUs back, tell
 * whoever waits, and let the queue move.  j is freed.
 */
void job_finish(struct server *srv, struct job *j, uint32_t state,
		int32_t code, int32_t sig)
{
	job_finish_row(srv, j, state, code, sig, false);
}

int job_cancel_queued(struct server *srv, struct job *j, char *err,
		      size_t errlen)
{
	int r = db_job_finish(srv->db, j->id, PROTO_JOB_CANCELLED,
			      PROTO_EXIT_UNKNOWN, 0, server_now_us(), err,
			      errlen);

	if (r)
		return r;
	job_finish_row(srv, j, PROTO_JOB_CANCELLED, PROTO_EXIT_UNKNOWN, 0,
		       true);
	return 0;
}

/* A status from waitpid as the wire and the database keep it. */
static void status_split(int st, int32_t *code, int32_t *sig)
{
	if (WIFEXITED(st)) {
		*code = WEXITSTATUS(st);
		*sig = 0;
	} else if (WIFSIGNALED(st)) {
		*code = PROTO_EXIT_UNKNOWN;
		*sig = WTERMSIG(st);
	} else {
		*code = PROTO_EXIT_UNKNOWN;
		*sig = 0;
	}
}

void job_reap(struct server *srv)
{
	int32_t code, sig;
	struct job *j;
	pid_t pid;
	int st;

	while ((pid = waitpid(-1, &st, WNOHANG)) > 0) {
		TAILQ_FOREACH(j, &srv->running, entry)
			if (j->child && j->pid == pid)
				break;
		if (!j) {
			/* Not a job: scontrol (slurm-weight.c), or nothing. */
			slurm_weight_reaped(srv, pid, st);
			continue;
		}
		status_split(st, &code, &sig);
		job_finish(srv, j, j->cancelling ? PROTO_JOB_CANCELLED :
			   PROTO_JOB_EXITED, code, sig);
	}
}

/*
 * Is the job's process still running?  db_proc_alive() (same pid, same
 * start time), and not a zombie: a job whose daemon died was reparented,
 * and in a container nobody may ever reap it.
 */
bool job_proc_alive(int32_t pid, uint64_t pid_start, void *arg)
{
	char path[64], buf[512], *p;
	ssize_t n;
	int fd;

	if (!db_proc_alive(pid, pid_start, arg))
		return false;
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	/* "pid (comm) S ...": comm may hold anything, the last ')' ends it. */
	p = strrchr(buf, ')');
	return !(p && p[1] == ' ' && (p[2] == 'Z' || p[2] == 'X'));
}

/*
 * Jobs that are not our children (started by a daemon before a restart, or
 * by `kmux run`'s client) end without SIGCHLD: look in /proc each tick.
 */
void job_poll(struct server *srv)
{
	struct job *j, *next;

	for (j = TAILQ_FIRST(&srv->running); j; j = next) {
		next = TAILQ_NEXT(j, entry);
		if (j->child || j->pid <= 0 || j->owner)
			continue;
		if (!job_proc_alive(j->pid, j->pid_start, NULL))
			job_finish(srv, j, j->cancelling ? PROTO_JOB_CANCELLED :
				   PROTO_JOB_EXITED, PROTO_EXIT_UNKNOWN, 0);
	}
}

#define JOB_POLL_SOON_MS 20
#define JOB_LINGER_MAX 100	/* 2 s of quick polls, then the tick's */

static void on_poll_soon(evutil_socket_t fd, short what, void *arg)
{
	struct server *srv = arg;
	struct job *j;
	bool again = false;

	(void)fd;
	(void)what;
	srv->poll_soon = false;
	job_poll(srv);
	TAILQ_FOREACH(j, &srv->running, entry) {
		if ((j->flags & DB_JOB_F_REGISTERED) && !j->owner &&
		    j->lingering && j->lingering < JOB_LINGER_MAX) {
			j->lingering++;
			again = true;
		}
	}
	if (again)
		job_poll_soon(srv);
}

void job_poll_soon(struct server *srv)
{
	struct timeval tv = { 0, JOB_POLL_SOON_MS * 1000 };

	if (srv->poll_soon || srv->stopping)
		return;
	if (event_base_once(srv->base, -1, EV_TIMEOUT, on_poll_soon, srv,
			    &tv) == 0)
		srv->poll_soon = true;
}

/* Samples (500 ms apart) before a job's own measurement replaces its
 * predicted busyness; the least it is then taken to be; and the change
 * worth making. */
#define JOB_BUSY_CORRECT_SAMPLES 4
#define JOB_BUSY_FLOOR 0.05
#define JOB_BUSY_SLACK 0.05

/*
 * The parent of process pid (/proc/PID/stat), or -errno.  comm may hold
 * spaces and ')', so the last ')' ends it.
 */
int job_proc_parent(uint32_t pid, uint32_t *ppid)
{
	char path[64], buf[512];
	const char *p;
	unsigned int pp;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%u/stat", pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	p = fgets(buf, sizeof(buf), f);
	fclose(f);
	if (!p || !(p = strrchr(buf, ')')) ||
	    sscanf(p + 1, " %*c %u", &pp) != 1)
		return -EINVAL;
	*ppid = pp;
	return 0;
}

/*
 * Does process pid run as uid alone (real, effective and saved uid)?  A
 * command that became another user (a setuid program) is not one kmuxd
 * signals on that user's behalf.
 */
bool job_proc_owned_by(uint32_t pid, uid_t uid)
{
	char path[64], line[256];
	unsigned int r, e, sv;
	bool owned = false;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%u/status", pid);
	f = fopen(path, "re");
	if (!f)
		return false;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "Uid: %u %u %u", &r, &e, &sv) == 3) {
			owned = r == uid && e == uid && sv == uid;
			break;
		}
	fclose(f);
	return owned;
}

/* The running job whose process pid is, or descends from (16 levels). */
struct job *job_of_pid(struct server *srv, uint32_t pid)
{
	struct job *j;

	for (int depth = 0; depth < 16 && pid > 1; depth++) {
		TAILQ_FOREACH(j, &srv->running, entry)
			if (j->pid > 0 && (uint32_t)j->pid == pid)
				return j;
		if (job_proc_parent(pid, &pid))
			return NULL;
	}
	return NULL;
}

static bool job_on_gpu(const struct server *srv, const struct job *j,
		       uint32_t index)
{
	for (uint32_t k = 0; k < j->place.ngpus; k++)
		if (srv->gpus[j->place.slot[k]].index == index)
			return true;
	return false;
}

/*
 * A running job's predicted busyness is replaced by what it measured so far
 * (as a guessed memory need is by what it allocates): its GPUs' committed
 * busyness moves by the difference, so admission sees room as soon as the
 * jobs there turn out lighter than predicted (or less room, heavier).  Small
 * differences are left alone so that noise does not churn the queue.
 */
static void job_correct_busy(struct server *srv, struct job *j, double m)
{
	double d;

	if (m < JOB_BUSY_FLOOR)
		m = JOB_BUSY_FLOOR;
	d = m - j->task.busy;
	if (d > -JOB_BUSY_SLACK && d < JOB_BUSY_SLACK)
		return;
	log_debug("daemon: job %lld: busyness %.2f -> %.2f (measured)",
		  (long long)j->id, j->task.busy, m);
	admit_set_busy(srv->gpus, srv->ngpus, &j->task, &j->place, m);
}

/*
 * Each running job's demand on its GPUs in this sample (busy-est.h): its
 * processes' shares (NVML per-process utilization), corrected for the
 * other processes competing with them there.  util[i]: GPU i's device
 * utilization, < 0 if unknown.
 */
static void job_sample_busy(struct server *srv, const double *util)
{
	struct nvml_proc_util u[NVML_MAX_PROCS];
	struct job *owner[NVML_MAX_PROCS];
	double share[NVML_MAX_PROCS];
	struct job *j;
	int n;

	TAILQ_FOREACH(j, &srv->running, entry) {
		j->busy_tick = 0;
		j->busy_active = false;
	}
	for (size_t i = 0; i < srv->ngpus; i++) {
		double total = 0.0, top = 0.0;
		int m = 0;

		n = nvml_process_util(srv->nvml, (uint32_t)i, u, NVML_MAX_PROCS);
		for (int k = 0; k < n; k++) {
			total += u[k].sm;
			if (u[k].sm > top)
				top = u[k].sm;
			j = job_of_pid(srv, u[k].pid);
			if (!j || !job_on_gpu(srv, j, srv->gpus[i].index))
				continue;
			/* A job's processes on one GPU are one demand. */
			for (int q = 0; q < m; q++)
				if (owner[q] == j) {
					share[q] += u[k].sm;
					j = NULL;
					break;
				}
			if (j) {
				owner[m] = j;
				share[m++] = u[k].sm;
			}
		}
		if (util[i] > total)
			total = util[i];
		for (int q = 0; q < m; q++) {
			if (share[q] > top)
				top = share[q];
			if (share[q] > 0.0)
				owner[q]->busy_active = true;
			owner[q]->busy_tick +=
				busy_est_demand(share[q], total, top);
		}
	}
	TAILQ_FOREACH(j, &srv->running, entry) {
		double b;

		if (!j->placed || !j->place.ngpus)
			continue;
		busy_est_add(&j->busy, j->busy_tick / j->place.ngpus,
			     j->busy_active);
		if (busy_est_now(&j->busy, JOB_BUSY_CORRECT_SAMPLES, &b) == 0)
			job_correct_busy(srv, j, b);
	}
}

void job_sample(struct server *srv)
{
	uint64_t now = server_now_us();
	double dt = srv->last_sample_us ?
		    (double)(now - srv->last_sample_us) / 1e6 : 0;
	double util[NVML_MAX_GPUS];
	struct nvml_sample s[NVML_MAX_GPUS];
	bool fake;

	if (!srv->nvml)
		return;
	fake = nvml_is_fake(srv->nvml);
	for (size_t i = 0; i < srv->ngpus && i < NVML_MAX_GPUS; i++) {
		s[i].util_valid = false;
		if (!fake && nvml_sample(srv->nvml, (uint32_t)i, &s[i]))
			s[i].util_valid = false;
		util[i] = s[i].util_valid ? s[i].util : -1.0;
	}
	if (nvml_has_process_util(srv->nvml))
		job_sample_busy(srv, util);
	if (fake)
		return;
	for (size_t i = 0; i < srv->ngpus && i < NVML_MAX_GPUS; i++)
		if (s[i].util_valid)
			/* --gpu-mem: the used bytes are the real, larger
			 * GPU's; admission goes by commitments alone. */
			admit_gpu_sample(&srv->gpus[i], s[i].util,
					 srv->gpu_mem_cap ? 0 : s[i].mem_used,
					 dt, &srv->policy);
	srv->last_sample_us = now;
}

/* --- starting a job ------------------------------------------------------- */

/* A NUL-separated block of n strings as a NULL-terminated vector. */
static char **block_vec(const char *block, size_t len, uint32_t n)
{
	char **v = calloc((size_t)n + 1, sizeof(*v));
	size_t off = 0;

	if (!v)
		return NULL;
	for (uint32_t i = 0; i < n && off < len; i++) {
		v[i] = (char *)block + off;
		off += strlen(block + off) + 1;
	}
	return v;
}

/* The identity a system daemon gives a job of another user. */
struct job_cred {
	bool change;
	uid_t uid;
	gid_t gid;
	gid_t groups[64];
	int ngroups;
};

static int job_cred_init(struct server *srv, uint32_t uid,
			 struct job_cred *cr, char *err, size_t errlen)
{
	struct passwd pw, *res = NULL;
	char buf[4096];

	memset(cr, 0, sizeof(*cr));
	if (uid == srv->uid)
		return 0;
	if (srv->uid != 0) {
		snprintf(err, errlen, "kmuxd runs as uid %u and cannot start a "
			 "job as uid %u", (unsigned)srv->uid, (unsigned)uid);
		return -EPERM;
	}
	getpwuid_r(uid, &pw, buf, sizeof(buf), &res);
	if (!res) {
		snprintf(err, errlen, "uid %u has no passwd entry", (unsigned)uid);
		return -ENOENT;
	}
	cr->change = true;
	cr->uid = uid;
	cr->gid = pw.pw_gid;
	cr->ngroups = (int)(sizeof(cr->groups) / sizeof(cr->groups[0]));
	if (getgrouplist(pw.pw_name, pw.pw_gid, cr->groups, &cr->ngroups) < 0)
		cr->ngroups = 0;	/* too many: the primary group alone */
	return 0;
}

/* What the child tells the daemon when it cannot exec. */
struct exec_report {
	int stage;		/* 0 set-up, 1 credentials, 2 chdir, 3 exec */
	int err;
};

static void child_report(int fd, int stage, int err)
{
	struct exec_report rep = { stage, err };

	while (write(fd, &rep, sizeof(rep)) < 0 && errno == EINTR)
		;
	_exit(stage == 3 && err == ENOENT ? JOB_EXIT_NOTFOUND : JOB_EXIT_NOEXEC);
}

/*
 * In the child, between fork and exec: async-signal-safe calls only (the
 * daemon's heap is not ours to use here).  Never returns.
 */
static void child_exec(char **argv, char **envp, const char *cwd, int logfd,
		       int errfd, const struct job_cred *cr)
{
	struct sigaction sa;
	sigset_t none;
	int fd;

	/* Its own session and process group: cancel signals the group. */
	setsid();
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = SIG_DFL;
	for (int sig = 1; sig < NSIG; sig++)
		sigaction(sig, &sa, NULL);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	fd = open("/dev/null", O_RDONLY);
	if (fd < 0 || dup2(fd, STDIN_FILENO) < 0 ||
	    dup2(logfd, STDOUT_FILENO) < 0 || dup2(logfd, STDERR_FILENO) < 0)
		child_report(errfd, 0, errno);
	/* Nothing of the daemon's leaks into the job (errfd is CLOEXEC). */
	syscall(SYS_close_range, 3u, ~0u, 4u /* CLOSE_RANGE_CLOEXEC */);
	if (cr->change &&
	    (setgroups((size_t)cr->ngroups, cr->groups) || setgid(cr->gid) ||
	     setuid(cr->uid)))
		child_report(errfd, 1, errno);
	if (chdir(cwd))
		child_report(errfd, 2, errno);
	environ = envp;
	execvp(argv[0], argv);
	child_report(errfd, 3, errno);
}

/* The exec failed: say so in the job's log, where its output would be. */
static void log_exec_failure(int logfd, const char *cmd, const char *cwd,
			     const struct exec_report *rep)
{
	static const char *const what[] = {
		"cannot set up the job", "cannot switch to the job's user",
		"cannot change to the directory", "cannot run",
	};
	char msg[PATH_MAX + 256];
	int n;

	n = snprintf(msg, sizeof(msg), "kmux: %s '%s': %s\n",
		     what[rep->stage & 3], rep->stage == 2 ? cwd : cmd,
		     strerror(rep->err));
	if (n > 0 && write(logfd, msg, (size_t)n) < 0) {
		/* The log is all there was to tell. */
	}
}

/* The job's environment: the submitter's, plus kmux's own variables. */
static char **job_env(struct server *srv, struct job *j, const struct db_job *dj,
		      char **argv)
{
	char jobid[48], cvd[PROTO_MAX_GPUS * 4 + 32], quota[48];
	char sock[PATH_MAX + 16];
	char list[PROTO_MAX_GPUS * 4];
	char mps_pipe[PATH_MAX + 32], mps_log[PATH_MAX + 32];
	const char *extra[10];
	char **base, **env;

	place_mask(srv, &j->place, list, sizeof(list));
	snprintf(jobid, sizeof(jobid), "KMUX_JOB=%lld", (long long)j->id);
	snprintf(cvd, sizeof(cvd), "CUDA_VISIBLE_DEVICES=%s", list);
	snprintf(quota, sizeof(quota), "KMUX_MEM_QUOTA=%llu",
		 (unsigned long long)j->place.quota);
	snprintf(sock, sizeof(sock), "KMUX_SOCKET=%s", srv->paths.socket);
	extra[0] = jobid;
	extra[1] = cvd;
	/* NVML numbers GPUs in PCI order; CUDA must agree with it. */
	extra[2] = "CUDA_DEVICE_ORDER=PCI_BUS_ID";
	extra[3] = quota;
	extra[4] = sock;
	extra[5] = NULL;
	/* --mps: its CUDA context becomes a client of kmuxd's MPS daemon. */
	if (srv->mps.on) {
		snprintf(mps_pipe, sizeof(mps_pipe),
			 "CUDA_MPS_PIPE_DIRECTORY=%s", srv->mps.pipe);
		snprintf(mps_log, sizeof(mps_log),
			 "CUDA_MPS_LOG_DIRECTORY=%s", srv->mps.log);
		extra[5] = mps_pipe;
		extra[6] = mps_log;
		extra[7] = NULL;
	}
	base = block_vec(dj->env, dj->env_len, dj->envc);
	if (!base)
		return NULL;
	env = spawn_env_build(&(struct spawn_opts){
		.argv = argv, .library = srv->library[0] ? srv->library : NULL,
		.env = extra }, base);
	free(base);
	return env;
}

/*
 * Fork and exec job j (its row dj).  0 and j->pid set, or the job's exit
 * status when it could not be started (127: not found, 126: otherwise),
 * with the reason written to its log.
 */
static int job_spawn(struct server *srv, struct job *j, const struct db_job *dj)
{
	struct exec_report rep;
	struct job_cred cr;
	char err[ERRLEN];
	char **argv = NULL, **env = NULL;
	int logfd = -1, fds[2] = { -1, -1 }, status = JOB_EXIT_NOEXEC, st;
	uint64_t pid_start;
	ssize_t n;
	pid_t pid;

	logfd = open(dj->log_path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC |
		     O_NOFOLLOW, 0600);
	if (logfd < 0) {
		log_error("daemon: job %lld: cannot open its log %s: %s",
			  (long long)j->id, dj->log_path, strerror(errno));
		return status;
	}
	if (job_cred_init(srv, dj->uid, &cr, err, sizeof(err))) {
		log_error("daemon: job %lld: %s", (long long)j->id, err);
		dprintf(logfd, "kmux: %s\n", err);
		goto out;
	}
	argv = block_vec(dj->argv, dj->argv_len, dj->argc);
	env = argv ? job_env(srv, j, dj, argv) : NULL;
	if (!env || pipe2(fds, O_CLOEXEC)) {
		log_error("daemon: job %lld: cannot prepare: %s",
			  (long long)j->id, strerror(errno ? errno : ENOMEM));
		goto out;
	}
	pid = fork();
	if (pid < 0) {
		log_error("daemon: job %lld: fork: %s", (long long)j->id,
			  strerror(errno));
		goto out;
	}
	if (pid == 0) {
		close(fds[0]);
		child_exec(argv, env, dj->cwd, logfd, fds[1], &cr);
	}
	close(fds[1]);
	fds[1] = -1;
	/*
	 * Its pid in the row before it execs, not after: the read below lasts
	 * as long as the exec (a large program, a slow file system), and a
	 * daemon killed meanwhile left a pid 0 that recovery takes for a job
	 * that never ran, recorded it lost and gave its GPUs away while it
	 * ran.  Its start time is the fork's; exec keeps it.
	 */
	if (db_proc_start_time(pid, &pid_start))
		pid_start = 0;
	if (db_job_set_pid(srv->db, j->id, pid, pid_start, err, sizeof(err)))
		log_error("daemon: job %lld: %s", (long long)j->id, err);
	server_test_die(srv, "spawn");
	do
		n = read(fds[0], &rep, sizeof(rep));
	while (n < 0 && errno == EINTR);
	if (n == (ssize_t)sizeof(rep)) {
		/* Never ran: reap it here, SIGCHLD will find nothing. */
		while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
			;
		log_exec_failure(logfd, argv[0], dj->cwd, &rep);
		log_info("daemon: job %lld: cannot start '%s': %s",
			 (long long)j->id, argv[0], strerror(rep.err));
		status = rep.stage == 3 && rep.err == ENOENT ?
			 JOB_EXIT_NOTFOUND : JOB_EXIT_NOEXEC;
		goto out;
	}
	j->pid = pid;
	j->child = true;
	j->pid_start = pid_start;
	status = 0;
out:
	if (fds[0] >= 0)
		close(fds[0]);
	if (fds[1] >= 0)
		close(fds[1]);
	close(logfd);
	spawn_env_free(env);
	free(argv);
	return status;
}

/*
 * Start j on pl.  -EIO when the database cannot record it (a full disk):
 * j stays queued, admission stops until the next tick tries again.
 */
static int job_start(struct server *srv, struct job *j,
		     const struct admit_placement *pl)
{
	char list[PROTO_MAX_GPUS * 4], q[SIZE_FORMAT_MAX], err[ERRLEN];
	uint64_t mask = place_mask(srv, pl, list, sizeof(list));
	struct db_job dj;
	int r;

	/* Running in the database before it runs: never started twice. */
	r = db_job_start(srv->db, j->id, mask, pl->quota, j->pid, j->pid_start,
			 server_now_us(), err, sizeof(err));
	if (r) {
		if (!srv->db_stalled)
			log_error("daemon: job %lld: cannot record its start, "
				  "admission paused: %s", (long long)j->id, err);
		srv->db_stalled = true;
		return -EIO;
	}
	if (srv->db_stalled)
		log_info("daemon: the database takes writes again: admission "
			 "resumed");
	srv->db_stalled = false;
	job_end_flush(srv);
	TAILQ_REMOVE(&srv->queued, j, entry);
	j->state = PROTO_JOB_RUNNING;
	j->start_us = server_now_us();
	j->place = *pl;
	j->placed = true;
	TAILQ_INSERT_TAIL(&srv->running, j, entry);
	admit_commit(srv->gpus, srv->ngpus, &j->task, pl, ++srv->stamp,
		     j->start_us);
	size_format(pl->quota, q, sizeof(q));
	log_info("daemon: job %lld admitted on GPU %s, quota %s",
		 (long long)j->id, list, q);

	/* `kmux run` and registered processes start themselves. */
	if (j->flags & (DB_JOB_F_FOREGROUND | DB_JOB_F_REGISTERED)) {
		struct proto_msg m = { .type = PROTO_ADMIT, .seq = j->owner_seq };

		server_test_die(srv, "admit");

		m.u.admit.job = (uint64_t)j->id;
		m.u.admit.quota = pl->quota;
		m.u.admit.ngpus = pl->ngpus;
		for (uint32_t i = 0; i < pl->ngpus; i++)
			m.u.admit.gpus[i] = srv->gpus[pl->slot[i]].index;
		server_admit_mps(srv, &m.u.admit);
		if (j->owner && j->owner->role == PROTO_ROLE_PRELOAD) {
			j->owner->reg_job = j->id;
			j->owner->reg_pid = j->owner->pid;
		}
		if (!j->owner || !server_client_send(j->owner, &m))
			job_finish(srv, j, PROTO_JOB_CANCELLED,
				   PROTO_EXIT_UNKNOWN, 0);
		return 0;
	}
	r = db_job_get(srv->db, j->id, &dj, err, sizeof(err));
	if (r) {
		log_error("daemon: job %lld: %s", (long long)j->id, err);
		job_finish(srv, j, PROTO_JOB_FAILED, PROTO_EXIT_UNKNOWN, 0);
		return 0;
	}
	r = job_spawn(srv, j, &dj);
	db_job_release(&dj);
	if (r)
		job_finish(srv, j, PROTO_JOB_FAILED, r, 0);
	return 0;
}

/*
 * Why j cannot run on the node as it is now (PROTO_HELD_*), or
 * PROTO_HELD_NONE.  Submissions are checked against the node before they
 * are queued (job_check_fit), so only jobs recovered from the database of
 * a daemon that had more GPUs, or larger ones, are held.
 */
static uint32_t job_held_why(struct server *srv, const struct job *j)
{
	if (srv->ngpus == 0)
		return PROTO_HELD_NO_GPUS;
	switch (admit_check(&j->task, srv->gpus, srv->ngpus, &srv->policy)) {
	case -ENODEV:
		return PROTO_HELD_GPUS;
	case -ENOSPC:
		return PROTO_HELD_MEM;
	default:
		return PROTO_HELD_NONE;
	}
}

/*
 * Hold j, or let it go, as the node now allows; say so when that changes.
 * Failing such a job, as admission did before, lost it for good to a
 * restart with fewer GPUs (a driver that failed to load, a card taken out
 * for repair): it stays queued and runs under a daemon that has them.
 */
static void job_hold(struct server *srv, struct job *j, uint32_t why)
{
	char need[SIZE_FORMAT_MAX], cap[SIZE_FORMAT_MAX];
	uint64_t best = 0;

	if (why == j->held)
		return;
	j->held = why;
	switch (why) {
	case PROTO_HELD_NONE:
		log_info("daemon: job %lld is no longer held: the node can run "
			 "it", (long long)j->id);
		return;
	case PROTO_HELD_NO_GPUS:
		log_warn("daemon: job %lld held: this node has no GPUs now "
			 "(%s); it stays queued until a kmuxd with GPUs starts "
			 "(`kmux cancel %lld` drops it)", (long long)j->id,
			 srv->nvml_why, (long long)j->id);
		return;
	case PROTO_HELD_GPUS:
		log_warn("daemon: job %lld held: it asks for %u GPUs and this "
			 "node has %zu now; it stays queued until a kmuxd with "
			 "enough starts (`kmux cancel %lld` drops it)",
			 (long long)j->id, j->task.ngpus, srv->ngpus,
			 (long long)j->id);
		return;
	}
	for (size_t i = 0; i < srv->ngpus; i++)
		if (admit_capacity(&srv->gpus[i], &srv->policy) > best)
			best = admit_capacity(&srv->gpus[i], &srv->policy);
	size_format(j->task.mem, need, sizeof(need));
	size_format(best, cap, sizeof(cap));
	log_warn("daemon: job %lld held: it needs %s per GPU and no GPU of "
		 "this node can give more than %s now; it stays queued until "
		 "a kmuxd with larger GPUs starts (`kmux cancel %lld` drops "
		 "it)", (long long)j->id, need, cap, (long long)j->id);
}

/* Tell `kmux run` clients still waiting where they stand. */
static void job_tell_queued(struct server *srv)
{
	uint32_t pos = 0;
	struct job *j;

	TAILQ_FOREACH(j, &srv->queued, entry) {
		if (j->owner && !j->told_queued) {
			/* Once: the next word is ADMIT. */
			server_client_send(j->owner, &(struct proto_msg){
				.type = PROTO_QUEUED, .seq = j->owner_seq,
				.u.queued = { (uint64_t)j->id, pos } });
			j->told_queued = true;
		}
		pos++;
	}
}

void job_schedule(struct server *srv)
{
	static bool busy;
	struct admit_decision d;
	struct admit_task *tasks = NULL;
	struct job **jobs = NULL;
	size_t n, cap = 0;
	struct job *j;
	int r;

	/* job_start -> job_finish -> server_kick: never nested. */
	if (busy)
		return;
	busy = true;
	/* Running tasks waiting for memory come before new ones. */
	job_grow_retry(srv);
	for (;;) {
		n = 0;
		TAILQ_FOREACH(j, &srv->queued, entry)
			n++;
		if (n == 0)
			break;
		if (n > cap) {
			free(tasks);
			free(jobs);
			cap = n * 2;
			tasks = malloc(cap * sizeof(*tasks));
			jobs = malloc(cap * sizeof(*jobs));
			if (!tasks || !jobs) {
				log_error("daemon: admission: out of memory");
				break;
			}
		}
		/* Held jobs keep their place in the queue but are not
		 * offered: admit_next would report them as never fitting. */
		n = 0;
		TAILQ_FOREACH(j, &srv->queued, entry) {
			job_hold(srv, j, job_held_why(srv, j));
			/* ... and so are `kmux run` jobs whose client is not
			 * back yet: nobody would start them. */
			if (j->held || j->attach_until_us)
				continue;
			tasks[n] = j->task;
			jobs[n++] = j;
		}
		if (n == 0)
			break;
		r = admit_next(tasks, n, srv->gpus, srv->ngpus, &srv->policy,
			       server_now_us(), &d);
		if (r == -EAGAIN)
			break;
		if (r == -ENODEV || r == -ENOSPC) {
			/* job_held_why() runs the same check: never here.  Stop
			 * rather than fail or spin on it. */
			log_error("daemon: admission: job %lld does not fit "
				 "this node after all (%s)",
				 (long long)jobs[d.task]->id, strerror(-r));
			break;
		}
		if (r) {
			log_error("daemon: admission: %s", strerror(-r));
			break;
		}
		if (job_start(srv, jobs[d.task], &d.place))
			break;
	}
	free(tasks);
	free(jobs);
	job_tell_queued(srv);
	busy = false;
}

/* --- recovery ------------------------------------------------------------- */

/*
 * A job that already runs on the GPUs of mask with quota (recovered from
 * the database, or a preload re-registering): its memory is committed
 * again, whatever is committed there already, since it holds it anyway.
 */
void job_recommit(struct server *srv, struct job *j, uint64_t mask,
		  uint64_t quota)
{
	struct admit_placement pl = { 0 };

	for (size_t i = 0; i < srv->ngpus; i++)
		if (mask & (UINT64_C(1) << srv->gpus[i].index))
			pl.slot[pl.ngpus++] = (uint32_t)i;
	pl.quota = quota;
	j->task.mem = quota;
	j->task.mem_source = ADMIT_MEM_DECLARED;
	j->place = pl;
	j->placed = pl.ngpus > 0;
	/* When it started before a restart is not on this clock: its
	 * expected end counts from now, the longest it can be. */
	if (j->placed)
		admit_commit(srv->gpus, srv->ngpus, &j->task, &pl, ++srv->stamp,
			     server_now_us());
}

/* A rate of j's for its record: 0 when its reports went stale. */
static uint32_t job_rate_now(const struct job *j, double rate,
			     uint64_t now_us)
{
	if (!j->report_us || now_us - j->report_us > SERVER_RATE_STALE_US ||
	    !(rate > 0))
		return 0;
	return rate >= 4e9 ? UINT32_MAX : (uint32_t)(rate + 0.5);
}

uint32_t job_kernel_rate(const struct job *j, uint64_t now_us)
{
	return job_rate_now(j, j->kernel_rate, now_us);
}

uint32_t job_wait_rate(const struct job *j, uint64_t now_us)
{
	return job_rate_now(j, j->wait_rate, now_us);
}

/*
 * db_recover()'s rule for dj, applied in memory (job_recover): true when
 * dj has ended and its end is kept for later (st counts it lost).
 */
static bool recover_in_memory(struct server *srv, const struct db_job *dj,
			      const char *why, struct db_recovery *st)
{
	bool running = dj->state == PROTO_JOB_RUNNING;

	if (!db_recover_job_lost(running, dj->flags, dj->pid, dj->pid_start,
				 job_proc_alive, NULL)) {
		if (running)
			st->running_kept++;
		else
			st->queued++;
		return false;
	}
	if (!job_end_keep(srv, dj->id, PROTO_JOB_EXITED, PROTO_EXIT_UNKNOWN,
			  0, server_now_us(), why))
		return false;
	st->lost++;
	return true;
}

/*
 * A `kmux run` job recorded running with no pid (db_recover keeps it): the
 * daemon that died admitted it, but did ADMIT reach its client?  If not,
 * the client is looking for this daemon and sends ATTACH (job_attach gives
 * it ADMIT again, on the same GPUs); recording the job lost, as before,
 * lost the command, which never ran, and the client exited 4.  If it did,
 * the command may run (its STARTED died with the daemon): its client comes
 * back only with FINISHED, or its preload registers it.  Its GPUs stay
 * committed for JOB_ATTACH_GRACE_US; then, with nobody back,
 * job_attach_expire records it lost as before (a late FINISHED still
 * fills in its code).
 */
static void job_recover_admitted(struct job *j)
{
	j->attach_until_us = server_now_us() + JOB_ATTACH_GRACE_US;
	log_info("daemon: job %lld: a `kmux run` admitted before the restart, "
		 "its command's pid unknown; kept running %.0f s for its client "
		 "to come back", (long long)j->id, JOB_ATTACH_GRACE_US / 1e6);
}

int job_recover(struct server *srv, char *err, size_t errlen)
{
	struct db_filter f = {
		.uid = -1,
		.states = (1u << PROTO_JOB_QUEUED) | (1u << PROTO_JOB_RUNNING),
	};
	struct db_recovery st = { 0 };
	struct db_job *v = NULL;
	char dberr[ERRLEN];
	bool in_memory = false;
	size_t n = 0;
	int r;

	r = db_recover(srv->db, job_proc_alive, NULL, server_now_us(), &st, dberr,
		       sizeof(dberr));
	/*
	 * A full (or read-only, busy) database cannot record the jobs that
	 * ended while no kmuxd ran.  Refusing to start would leave every
	 * queued job waiting on a daemon that never comes: apply the same
	 * rule in memory (job_end_keep) and write it once there is room.
	 */
	if (r == -ENOSPC || r == -EROFS || r == -EBUSY) {
		log_error("daemon: recovery cannot write the database (%s): "
			  "jobs that ended while no kmuxd ran are kept in "
			  "memory until it takes writes", dberr);
		in_memory = true;
		r = 0;
	}
	if (r == 0)
		r = db_job_list(srv->db, &f, &v, &n, dberr, sizeof(dberr));
	if (r) {
		snprintf(err, errlen, "recovery: %s", dberr);
		return r;
	}
	for (size_t i = 0; i < n; i++) {
		struct db_job *dj = &v[i];
		struct job *j;

		if (in_memory && recover_in_memory(srv, dj, dberr, &st))
			continue;
		j = calloc(1, sizeof(*j));
		if (!j) {
			snprintf(err, errlen, "recovery: out of memory");
			r = -ENOMEM;
			break;
		}
		j->id = dj->id;
		j->uid = dj->uid;
		j->state = dj->state;
		j->flags = dj->flags;
		j->submit_us = dj->submit_us;
		j->start_us = dj->start_us;
		j->profile_key = dj->profile_key;
		j->mem_peak = dj->mem_peak;
		j->pid = dj->pid;
		j->pid_start = dj->pid_start;
		j->evict_mode = job_env_evict(dj->env, dj->env_len);
		job_task_init(srv, j, dj->ngpus, dj->mem_request, dj->prio);
		if (j->state == PROTO_JOB_RUNNING) {
			TAILQ_INSERT_TAIL(&srv->running, j, entry);
			job_recommit(srv, j, dj->gpus, dj->mem_quota);
			if ((j->flags & DB_JOB_F_FOREGROUND) && j->pid <= 0)
				job_recover_admitted(j);
		} else if (j->flags & DB_JOB_F_FOREGROUND) {
			/* Its `kmux run` was connected to the daemon that
			 * died and is looking for this one: keep its place. */
			j->attach_until_us = server_now_us() +
					     JOB_ATTACH_GRACE_US;
			TAILQ_INSERT_TAIL(&srv->queued, j, entry);
			log_info("daemon: job %lld: a queued `kmux run`; kept "
				 "%.0f s for its client to come back",
				 (long long)j->id, JOB_ATTACH_GRACE_US / 1e6);
		} else if (j->flags & DB_JOB_F_REGISTERED) {
			/* Its preload registers anew (a new job) once it
			 * finds this daemon: this one is for nobody. */
			TAILQ_INSERT_TAIL(&srv->queued, j, entry);
			job_finish(srv, j, PROTO_JOB_CANCELLED,
				   PROTO_EXIT_UNKNOWN, 0);
		} else {
			TAILQ_INSERT_TAIL(&srv->queued, j, entry);
		}
	}
	db_job_list_free(v, n);
	srv->recovered.queued = st.queued;
	srv->recovered.running_kept = st.running_kept;
	srv->recovered.lost = st.lost;
	return r;
}

void job_attach_expire(struct server *srv)
{
	uint64_t now = server_now_us();
	struct job *j, *next;

	for (j = TAILQ_FIRST(&srv->queued); j; j = next) {
		next = TAILQ_NEXT(j, entry);
		if (!j->attach_until_us || now < j->attach_until_us)
			continue;
		log_info("daemon: job %lld: its `kmux run` did not come back "
			 "within %.0f s of the restart: cancelled",
			 (long long)j->id, JOB_ATTACH_GRACE_US / 1e6);
		job_finish(srv, j, PROTO_JOB_CANCELLED, PROTO_EXIT_UNKNOWN, 0);
	}
	/* Admitted ones (job_recover_admitted): a pid or a client since
	 * (ATTACH, the preload's REGISTER) and they are tracked as usual. */
	for (j = TAILQ_FIRST(&srv->running); j; j = next) {
		next = TAILQ_NEXT(j, entry);
		if (!j->attach_until_us || now < j->attach_until_us)
			continue;
		j->attach_until_us = 0;
		if (j->owner || j->pid > 0)
			continue;
		log_info("daemon: job %lld: its `kmux run` did not come back "
			 "within %.0f s of the restart and its command's pid is "
			 "not known: recorded exited, code unknown",
			 (long long)j->id, JOB_ATTACH_GRACE_US / 1e6);
		job_finish(srv, j, PROTO_JOB_EXITED, PROTO_EXIT_UNKNOWN, 0);
	}
}

/* --- signals ------------------------------------------------------------- */

/* kill(-pid, sig), else kill(pid, sig) when pid leads no group.  -errno. */
static int job_kill_group(pid_t pid, int sig)
{
	if (kill(-pid, sig) == 0 || (errno == ESRCH && kill(pid, sig) == 0))
		return 0;
	return -errno;
}

/*
 * job_kill_group() for a process kmuxd did not start (a `kmux run`
 * command named by STARTED, a registered process, a job from before a
 * restart), with the permissions of uid, the user who asked: such a
 * process may have become another user since kmuxd checked it (exec of a
 * setuid program keeps its pid and start time), and a root kmuxd must not
 * signal for a user what that user could not.  A child that takes uid
 * alone sends the signal, so the kernel's own check decides, for every
 * process of the group.  A daemon that is not root, or root asking,
 * signals directly.
 */
static int job_kill_as(uid_t uid, pid_t pid, int sig)
{
	pid_t h;
	int st;

	if (geteuid() != 0 || uid == 0)
		return job_kill_group(pid, sig);
	h = fork();
	if (h < 0)
		return -errno;
	if (h == 0) {
		/* Async-signal-safe calls only: the daemon's heap is not ours. */
		if (setresuid(uid, uid, uid))
			_exit(EPERM);
		_exit(-job_kill_group(pid, sig) & 0xff);
	}
	while (waitpid(h, &st, 0) < 0)
		if (errno != EINTR)
			return -errno;
	if (!WIFEXITED(st))
		return -EIO;
	return -WEXITSTATUS(st);
}

/* Our child (its own session, started by us) or not: see job_kill_as(). */
static int job_kill(const struct job *j, int sig, uid_t uid)
{
	if (j->child)
		return job_kill_group(j->pid, sig);
	return job_kill_as(uid, j->pid, sig);
}

static void on_kill_timer(evutil_socket_t fd, short what, void *arg)
{
	struct job *j = arg;
	int e;

	(void)fd;
	(void)what;
	/* Not our child: its pid may have been reaped and reused meanwhile. */
	if (!j->child && !job_proc_alive(j->pid, j->pid_start, NULL))
		return;
	log_info("daemon: job %lld still running after SIGTERM: SIGKILL",
		 (long long)j->id);
	e = job_kill(j, SIGKILL, j->kill_uid);
	if (e)
		log_warn("daemon: job %lld: cannot SIGKILL pid %d: %s",
			 (long long)j->id, (int)j->pid, strerror(-e));
}

/* Signal j's process group; SIGKILL it after the grace period. */
int job_signal(struct server *srv, struct job *j, int sig, uid_t uid)
{
	struct timeval tv;
	int e;

	/* Not our child: make sure the pid is still the job's own. */
	if (!j->child && !job_proc_alive(j->pid, j->pid_start, NULL))
		return -ESRCH;
	e = job_kill(j, sig, uid);
	if (e)
		return e;
	j->cancelling = true;
	j->kill_uid = uid;
	if (!j->kill_timer)
		j->kill_timer = evtimer_new(srv->base, on_kill_timer, j);
	if (j->kill_timer && !evtimer_pending(j->kill_timer, NULL)) {
		tv.tv_sec = (time_t)srv->kill_grace_s;
		tv.tv_usec = (suseconds_t)((srv->kill_grace_s - (double)tv.tv_sec) *
					   1e6);
		evtimer_add(j->kill_timer, &tv);
	}
	return 0;
}
