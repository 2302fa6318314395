/*
 * job-request.c - owns what clients ask of kmuxd's jobs: submit (with the
 * "can it ever fit" check and its log file), ps and top (job and GPU
 * lists), wait, cancel, logs (LOG_DATA to readers, following a running
 * job), the preload's and `kmux run`'s messages (REGISTER, FINISHED,
 * ALLOC_UPDATE), and what a closing connection leaves behind.
 *
 * Permission: in system mode a client acts on its own jobs only (root on
 * all), by the uid SO_PEERCRED gave its connection.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "daemon.h"
#include "db.h"
#include "job-rec.h"
#include "log.h"
#include "size.h"

#define ERRLEN 512

/* --- submission ----------------------------------------------------------- */

/* A log file for a new job, created now so that `kmux logs` finds it. */
static int log_create(struct server *srv, char *path, size_t len)
{
	int fd;

	if ((size_t)snprintf(path, len, "%s/job-XXXXXX.log", srv->log_dir) >=
	    len)
		return -ENAMETOOLONG;
	fd = mkostemps(path, 4, O_CLOEXEC);
	if (fd < 0)
		return -errno;
	close(fd);
	return 0;
}

/* Can t ever run here?  0, or an ERROR sent to c. */
static int job_check_fit(struct conn *c, uint32_t seq,
			 const struct proto_job_req *r)
{
	struct server *srv = c->srv;
	char need[SIZE_FORMAT_MAX], cap[SIZE_FORMAT_MAX];
	uint64_t best = 0;
	struct admit_task t;
	int e;

	if (srv->ngpus == 0) {
		server_client_error(c, seq, ENODEV, "this node has no GPUs "
				    "kmux can use: %s", srv->nvml_why);
		return -ENODEV;
	}
	admit_task_init(&t, 0, r->ngpus, r->mem, NULL, &srv->policy, 0);
	e = admit_check(&t, srv->gpus, srv->ngpus, &srv->policy);
	if (e == -ENODEV) {
		server_client_error(c, seq, ENODEV, "%u GPUs asked for, but "
				    "this node has %zu", r->ngpus, srv->ngpus);
		return e;
	}
	if (e == -ENOSPC) {
		for (size_t i = 0; i < srv->ngpus; i++)
			if (admit_capacity(&srv->gpus[i], &srv->policy) > best)
				best = admit_capacity(&srv->gpus[i],
						      &srv->policy);
		size_format(r->mem, need, sizeof(need));
		size_format(best, cap, sizeof(cap));
		/* E2BIG, not ENOSPC: that one means a full disk. */
		server_client_error(c, seq, E2BIG, "%s per GPU asked for, but "
				    "no GPU of this node can give more than %s",
				    need, cap);
		return e;
	}
	return e;
}

void job_submit(struct conn *c, const struct proto_msg *m)
{
	const struct proto_job_req *r = &m->u.job;
	struct server *srv = c->srv;
	char log_path[PATH_MAX], err[ERRLEN];
	struct db_job dj;
	struct job *j;
	bool run = m->type == PROTO_RUN;
	int e;

	if (srv->system && srv->uid != 0 && c->uid != srv->uid) {
		server_client_error(c, m->seq, EPERM, "this kmuxd runs as uid "
				    "%u and cannot run jobs for uid %u",
				    (unsigned)srv->uid, (unsigned)c->uid);
		return;
	}
	if (job_check_fit(c, m->seq, r))
		return;
	log_path[0] = '\0';
	if (!run && (e = log_create(srv, log_path, sizeof(log_path)))) {
		server_client_error(c, m->seq, -e, "cannot create a log file "
				    "in %s: %s", srv->log_dir, strerror(-e));
		return;
	}
	memset(&dj, 0, sizeof(dj));
	dj.name = (char *)(r->name ? r->name : "");
	dj.uid = c->uid;
	dj.argc = r->argv.count;
	dj.argv = (char *)r->argv.block;
	dj.argv_len = r->argv.bytes;
	dj.envc = r->env.count;
	dj.env = (char *)r->env.block;
	dj.env_len = r->env.bytes;
	dj.cwd = (char *)r->cwd;
	dj.flags = r->flags | (run ? DB_JOB_F_FOREGROUND : 0);
	dj.prio = r->prio;
	dj.ngpus = r->ngpus;
	dj.mem_request = r->mem;
	dj.submit_us = server_now_us();
	dj.log_path = run ? NULL : log_path;
	e = db_job_insert(srv->db, &dj, err, sizeof(err));
	if (e) {
		if (!run)
			unlink(log_path);
		server_client_error(c, m->seq, -e, "cannot queue the job: %s",
				    err);
		return;
	}
	job_end_flush(srv);	/* room again, for ends not yet written */
	j = calloc(1, sizeof(*j));
	if (!j) {
		/* Queued in the database: the next daemon start runs it. */
		server_client_error(c, m->seq, ENOMEM, "out of memory");
		return;
	}
	j->id = dj.id;
	j->uid = c->uid;
	j->state = PROTO_JOB_QUEUED;
	j->flags = dj.flags;
	j->submit_us = dj.submit_us;
	j->profile_key = dj.profile_key;
	j->evict_mode = job_env_evict(r->env.block, r->env.bytes);
	job_task_init(srv, j, r->ngpus, r->mem, r->prio);
	if (run) {
		j->owner = c;
		j->owner_seq = m->seq;
	}
	TAILQ_INSERT_TAIL(&srv->queued, j, entry);
	log_info("daemon: job %lld queued (uid %u, %u GPU(s))",
		 (long long)j->id, (unsigned)c->uid, r->ngpus);
	server_client_send(c, &(struct proto_msg){
		.type = PROTO_OK, .seq = m->seq,
		.u.ok.id = (uint64_t)j->id });
	server_kick(srv);
}

/*
 * Send those of jobs v[0..n) in states (a mask; 0: all) as one JOB_LIST,
 * dropping the oldest if too large.  A row whose end the database lacks
 * is shown ended (job_end_apply), in the states asked for as it is now.
 */
static void send_job_list(struct conn *c, uint32_t seq, struct db_job *v,
			  size_t n, uint32_t states)
{
	struct proto_job_rec *recs = calloc(n ? n : 1, sizeof(*recs));
	char (*cmds)[JOB_REC_CMD_SHOWN + 1] = calloc(n ? n : 1, sizeof(*cmds));
	struct proto_msg m = { .type = PROTO_JOB_LIST, .seq = seq };
	struct proto_buf *out = &c->srv->out;
	uint64_t now = server_now_us();
	struct job *live;
	size_t first = 0, k = 0;

	if (!recs || !cmds) {
		server_client_error(c, seq, ENOMEM, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		struct proto_job_rec *r = &recs[k];
		struct db_job *d = &v[i];

		job_end_apply(c->srv, d);
		if (states && !(states & (1u << d->state)))
			continue;
		job_rec_from_db(d, r, cmds[k], sizeof(cmds[k]));
		k++;
		if ((live = job_find(c->srv, d->id))) {
			r->mem_used = live->mem_used;
			r->kernel_rate = job_kernel_rate(live, now);
			r->mem_evicted = live->mem_evicted;
			r->mem_reserved = live->mem_reserved;
			r->evicts = live->evicts;
			r->restores = live->restores;
			if (live->suspended &&
			    live->state == PROTO_JOB_RUNNING)
				r->flags |= PROTO_JOBREC_F_SUSPENDED;
			r->wait_rate = job_wait_rate(live, now);
			if (live->task.wait_bound &&
			    (live->state == PROTO_JOB_RUNNING ||
			     live->state == PROTO_JOB_QUEUED))
				r->flags |= PROTO_JOBREC_F_WAIT_BOUND;
			if (live->state == PROTO_JOB_QUEUED &&
			    d->state == PROTO_JOB_QUEUED)
				r->held = live->held;
		}
	}
	/* Newest first to keep: the oldest ended jobs matter least. */
	for (;;) {
		m.u.jobs.count = (uint32_t)(k - first);
		m.u.jobs.vec = recs + first;
		out->len = 0;
		if (proto_encode(out, &m) != -EMSGSIZE)
			break;
		first += (k - first + 1) / 2;
	}
	server_client_send(c, &m);
out:
	free(recs);
	free(cmds);
}

static int64_t conn_uid_filter(const struct conn *c)
{
	return c->srv->system && c->uid != 0 ? (int64_t)c->uid : -1;
}

void job_ps(struct conn *c, const struct proto_msg *m)
{
	struct db_filter f = { conn_uid_filter(c), m->u.ps.states };
	struct db_job *v = NULL;
	char err[ERRLEN];
	size_t n = 0;
	int e;

	/* An end the database lacks: its row says queued or running, so an
	 * ask for ended jobs must read those rows too (send_job_list sorts
	 * them by the state they are in now). */
	if (f.states && !TAILQ_EMPTY(&c->srv->unrecorded))
		f.states |= (1u << PROTO_JOB_QUEUED) |
			    (1u << PROTO_JOB_RUNNING);
	e = db_job_list(c->srv->db, &f, &v, &n, err, sizeof(err));
	if (e) {
		server_client_error(c, m->seq, -e, "%s", err);
		return;
	}
	send_job_list(c, m->seq, v, n, m->u.ps.states);
	db_job_list_free(v, n);
}

void job_top(struct conn *c, const struct proto_msg *m)
{
	struct server *srv = c->srv;
	struct proto_msg g = { .type = PROTO_GPU_LIST, .seq = m->seq };
	struct proto_msg ps = { .type = PROTO_PS, .seq = m->seq };

	g.u.gpus.count = (uint32_t)srv->ngpus;
	/* No GPUs: say why (NVML could not be loaded, ...), top shows it. */
	g.u.gpus.note = srv->ngpus ? "" : srv->nvml_why;
	for (size_t i = 0; i < srv->ngpus; i++) {
		const struct admit_gpu *a = &srv->gpus[i];
		struct proto_gpu_rec *r = &g.u.gpus.gpu[i];
		double busy = admit_busyness(a, &srv->policy) * 1000.0;

		r->index = a->index;
		r->ntasks = a->ntasks;
		r->mem_total = a->mem_total;
		r->mem_committed = a->mem_committed;
		r->mem_used = a->mem_used;
		r->util_pm = a->util_valid ?
			     (uint32_t)(a->util * 1000.0 + 0.5) : 0;
		if (r->util_pm > 1000)
			r->util_pm = 1000;
		r->busy_pm = busy <= 0 ? 0 : busy > 4e9 ? 4000000000u :
			     (uint32_t)(busy + 0.5);
	}
	if (!server_client_send(c, &g))
		return;
	ps.u.ps.states = (1u << PROTO_JOB_QUEUED) | (1u << PROTO_JOB_RUNNING);
	job_ps(c, &ps);
}

/*
 * The job a request names, if c may see it: a live one (*live) or its row
 * (*dj, to release).  -1 after an ERROR was sent.
 */
static int job_lookup(struct conn *c, uint32_t seq, uint64_t id,
		      struct job **live, struct db_job *dj)
{
	char err[ERRLEN];
	int e;

	*live = job_find(c->srv, (int64_t)id);
	if (*live) {
		if (server_client_may(c, (*live)->uid))
			return 0;
		server_client_error(c, seq, EPERM, "job %llu belongs to "
				    "another user", (unsigned long long)id);
		return -1;
	}
	e = db_job_get(c->srv->db, (int64_t)id, dj, err, sizeof(err));
	if (e == -ENOENT) {
		server_client_error(c, seq, ENOENT, "no job %llu",
				    (unsigned long long)id);
		return -1;
	}
	if (e) {
		server_client_error(c, seq, -e, "%s", err);
		return -1;
	}
	job_end_apply(c->srv, dj);
	if (!server_client_may(c, dj->uid)) {
		db_job_release(dj);
		server_client_error(c, seq, EPERM, "job %llu belongs to "
				    "another user", (unsigned long long)id);
		return -1;
	}
	return 0;
}

/*
 * A job lookup found only the row of a job that has not ended (queued or
 * running in the database, lost from memory): answer ERROR, release the
 * row and return true; false for a row of an ended job.
 */
static bool job_untracked_error(struct conn *c, uint32_t seq,
				struct db_job *dj)
{
	if (dj->state != PROTO_JOB_QUEUED && dj->state != PROTO_JOB_RUNNING)
		return false;
	server_client_error(c, seq, EIO, "job %lld is %s in the database but "
			    "this kmuxd does not track it", (long long)dj->id,
			    proto_job_state_name(dj->state));
	db_job_release(dj);
	return true;
}

void job_wait(struct conn *c, const struct proto_msg *m)
{
	struct db_job dj = { 0 };
	struct waiter *w;
	struct job *j;

	if (job_lookup(c, m->seq, m->u.wait.job, &j, &dj))
		return;
	/* EXITED cannot say "not ended, not tracked", and a silence would
	 * leave the client waiting for ever. */
	if (!j && job_untracked_error(c, m->seq, &dj))
		return;
	if (!j) {
		server_client_send(c, &(struct proto_msg){
			.type = PROTO_EXITED, .seq = m->seq,
			.u.exited = { (uint64_t)dj.id, dj.state, dj.exit_code,
				      dj.signal } });
		db_job_release(&dj);
		return;
	}
	w = calloc(1, sizeof(*w));
	if (!w) {
		server_client_error(c, m->seq, ENOMEM, "out of memory");
		return;
	}
	w->conn = c;
	w->seq = m->seq;
	w->job = j->id;
	TAILQ_INSERT_TAIL(&c->srv->waiters, w, entry);
}

/*
 * A `kmux run` job whose process has not registered (no CUDA yet, or none
 * at all): its pid is known only to its client, which passes the signals
 * it gets on to the command (spawn.c), so signal the client.  Signals it
 * cannot pass on (SIGKILL, SIGSTOP) would end or stop the client alone and
 * leave the command running unwatched: refused, with what works instead.
 */
static void job_cancel_via_client(struct conn *c, const struct proto_msg *m,
				  struct job *j, int sig)
{
	static const int passed_on[] = { PROTO_RUN_PASSED_SIGNALS };
	bool ok = false;

	for (size_t i = 0; i < sizeof(passed_on) / sizeof(passed_on[0]); i++)
		ok |= passed_on[i] == sig;
	if (!j->owner || j->owner->pid <= 0) {
		server_client_error(c, m->seq, ESRCH, "job %lld has no "
				    "process kmuxd can signal",
				    (long long)j->id);
		return;
	}
	if (!ok) {
		server_client_error(c, m->seq, EINVAL, "job %lld is run by its "
				    "`kmux run` client (pid %d), which passes "
				    "on SIGINT, SIGTERM, SIGHUP, SIGQUIT, "
				    "SIGUSR1 and SIGUSR2 only: signal %d "
				    "would stop the client, not the command",
				    (long long)j->id, (int)j->owner->pid, sig);
		return;
	}
	if (kill(j->owner->pid, sig)) {
		server_client_error(c, m->seq, errno, "cannot signal job "
				    "%lld's `kmux run` client (pid %d): %s",
				    (long long)j->id, (int)j->owner->pid,
				    strerror(errno));
		return;
	}
	j->cancelling = true;
	log_info("daemon: job %lld: signal %d to its kmux run client, pid %d "
		 "(cancel)", (long long)j->id, sig, (int)j->owner->pid);
	server_client_send(c, &(struct proto_msg){
		.type = PROTO_OK, .seq = m->seq, .u.ok.id = (uint64_t)j->id });
}

void job_cancel(struct conn *c, const struct proto_msg *m)
{
	struct server *srv = c->srv;
	struct db_job dj = { 0 };
	struct job *j;
	int sig = m->u.cancel.signal ? m->u.cancel.signal : SIGTERM, e;

	if (job_lookup(c, m->seq, m->u.cancel.job, &j, &dj))
		return;
	if (!j && job_untracked_error(c, m->seq, &dj))
		return;
	if (!j) {
		server_client_error(c, m->seq, EALREADY, "job %lld has already "
				    "ended (%s)", (long long)dj.id,
				    proto_job_state_name(dj.state));
		db_job_release(&dj);
		return;
	}
	if (j->state == PROTO_JOB_QUEUED) {
		int64_t id = j->id;
		char err[ERRLEN];

		e = job_cancel_queued(srv, j, err, sizeof(err));
		if (e) {
			server_client_error(c, m->seq, -e, "cannot cancel job "
					    "%lld: the database cannot record "
					    "it (%s); it stays queued",
					    (long long)id, err);
			return;
		}
		log_info("daemon: job %lld cancelled while queued",
			 (long long)id);
		server_client_send(c, &(struct proto_msg){
			.type = PROTO_OK, .seq = m->seq,
			.u.ok.id = (uint64_t)id });
		return;
	}
	if (j->pid <= 0) {
		job_cancel_via_client(c, m, j, sig);
		return;
	}
	e = job_signal(srv, j, sig, c->uid);
	if (e == -ESRCH) {
		/* Gone already: the poll would find it; record it now. */
		server_client_send(c, &(struct proto_msg){
			.type = PROTO_OK, .seq = m->seq,
			.u.ok.id = (uint64_t)j->id });
		job_finish(srv, j, PROTO_JOB_CANCELLED, PROTO_EXIT_UNKNOWN, 0);
		return;
	}
	if (e) {
		server_client_error(c, m->seq, -e, "cannot signal job %lld: %s",
				    (long long)j->id, strerror(-e));
		return;
	}
	log_info("daemon: job %lld: signal %d (cancel)", (long long)j->id, sig);
	server_client_send(c, &(struct proto_msg){
		.type = PROTO_OK, .seq = m->seq, .u.ok.id = (uint64_t)j->id });
}

/* --- logs ----------------------------------------------------------------- */

static void follower_drop(struct server *srv, struct follower *f)
{
	TAILQ_REMOVE(&srv->followers, f, entry);
	close(f->fd);
	free(f);
	if (TAILQ_EMPTY(&srv->followers))
		event_del(srv->ev_follow);
}

/* Send f what its log has beyond f->offset; EOF once there is no more. */
static void follower_feed(struct server *srv, struct follower *f)
{
	struct proto_msg m = { .type = PROTO_LOG_DATA, .seq = f->seq };
	ssize_t n;

	m.u.log.job = (uint64_t)f->job;
	while (server_client_pending(f->conn) < SERVER_OUT_HIGH) {
		n = pread(f->fd, srv->readbuf, SERVER_LOG_CHUNK,
			  (off_t)f->offset);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			server_client_error(f->conn, f->seq, errno,
					    "reading the log: %s",
					    strerror(errno));
			follower_drop(srv, f);
			return;
		}
		if (n == 0) {
			if (f->follow && job_find(srv, f->job))
				return;		/* more to come */
			m.u.log.offset = f->offset;
			m.u.log.flags = PROTO_LOG_F_EOF;
			m.u.log.length = 0;
			m.u.log.data = srv->readbuf;
			server_client_send(f->conn, &m);
			follower_drop(srv, f);
			return;
		}
		m.u.log.offset = f->offset;
		m.u.log.flags = 0;
		m.u.log.length = (uint32_t)n;
		m.u.log.data = srv->readbuf;
		if (!server_client_send(f->conn, &m)) {
			follower_drop(srv, f);
			return;
		}
		f->offset += (uint64_t)n;
	}
}

void job_feed_followers(struct server *srv)
{
	struct follower *f, *next;

	for (f = TAILQ_FIRST(&srv->followers); f; f = next) {
		next = TAILQ_NEXT(f, entry);
		follower_feed(srv, f);
	}
}

void job_logs(struct conn *c, const struct proto_msg *m)
{
	struct timeval tv = { 0, SERVER_FOLLOW_MS * 1000 };
	struct server *srv = c->srv;
	struct db_job dj = { 0 };
	struct follower *f;
	char err[ERRLEN];
	struct job *j;
	int fd;

	if (job_lookup(c, m->seq, m->u.logs.job, &j, &dj))
		return;
	if (j && db_job_get(srv->db, j->id, &dj, err, sizeof(err))) {
		server_client_error(c, m->seq, EIO, "%s", err);
		return;
	}
	if (!dj.log_path) {
		server_client_error(c, m->seq, ENOENT, "job %lld has no "
				    "log: %s", (long long)dj.id,
				    dj.flags & DB_JOB_F_REGISTERED ?
				    "kmux did not start it (a process that "
				    "registered itself)" :
				    "it ran in the foreground (kmux run)");
		goto out;
	}
	fd = open(dj.log_path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0) {
		server_client_error(c, m->seq, errno, "job %lld: log %s: %s",
				    (long long)dj.id, dj.log_path,
				    strerror(errno));
		goto out;
	}
	f = calloc(1, sizeof(*f));
	if (!f) {
		close(fd);
		server_client_error(c, m->seq, ENOMEM, "out of memory");
		goto out;
	}
	f->conn = c;
	f->seq = m->seq;
	f->job = dj.id;
	f->fd = fd;
	f->offset = m->u.logs.offset;
	f->follow = m->u.logs.flags & PROTO_LOGS_F_FOLLOW;
	if (TAILQ_EMPTY(&srv->followers))
		event_add(srv->ev_follow, &tv);
	TAILQ_INSERT_TAIL(&srv->followers, f, entry);
	follower_feed(srv, f);
out:
	db_job_release(&dj);
}

/* --- the preload and `kmux run` ------------------------------------------- */

/* a's ADMIT body for j: its quota, its GPUs' indices, the MPS directories. */
static void admit_fill(struct server *srv, const struct job *j,
		       struct proto_msg *a)
{
	a->u.admit.job = (uint64_t)j->id;
	a->u.admit.quota = j->place.quota;
	a->u.admit.ngpus = j->place.ngpus;
	for (uint32_t i = 0; i < j->place.ngpus; i++)
		a->u.admit.gpus[i] = srv->gpus[j->place.slot[i]].index;
	server_admit_mps(srv, &a->u.admit);
}

/* ADMIT for j, in reply to seq. */
static void send_admit(struct conn *c, uint32_t seq, const struct job *j)
{
	struct proto_msg a = { .type = PROTO_ADMIT, .seq = seq };

	admit_fill(c->srv, j, &a);
	if (a.u.admit.ngpus == 0) {
		server_client_error(c, seq, ENODEV, "job %lld's GPUs are gone",
				    (long long)j->id);
		return;
	}
	if (c->role == PROTO_ROLE_PRELOAD) {
		c->reg_job = j->id;
		c->reg_pid = c->pid;
	}
	server_client_send(c, &a);
}

/*
 * The process behind a preload's connection: SO_PEERCRED's pid when there
 * is one (the preload's own getpid() is another number in another pid
 * namespace), and its start time read here.
 */
static void reg_process(const struct conn *c, const struct proto_register *r,
			pid_t *pid, uint64_t *start)
{
	*pid = c->pid > 0 ? c->pid : (pid_t)r->pid;
	if (*pid == (pid_t)r->pid && r->pid_start)
		*start = r->pid_start;
	else if (db_proc_start_time(*pid, start))
		*start = 0;
}

/*
 * Can a registering process ever be placed here?  0, or an ERROR sent
 * (its preload then runs unmanaged).
 */
static int reg_check_fit(struct conn *c, uint32_t seq,
			 const struct proto_register *r, struct admit_task *t)
{
	struct server *srv = c->srv;
	char need[SIZE_FORMAT_MAX];
	uint64_t have = 0;
	int e;

	if (srv->ngpus == 0) {
		server_client_error(c, seq, ENODEV, "this node has no GPUs "
				    "kmux can use: %s", srv->nvml_why);
		return -ENODEV;
	}
	for (size_t i = 0; i < srv->ngpus; i++)
		have |= UINT64_C(1) << srv->gpus[i].index;
	if (r->gpus & ~have) {
		server_client_error(c, seq, ENODEV, "CUDA_VISIBLE_DEVICES names "
				    "GPU %d, which kmuxd does not manage",
				    __builtin_ctzll(r->gpus & ~have));
		return -ENODEV;
	}
	e = admit_check(t, srv->gpus, srv->ngpus, &srv->policy);
	if (e == -ENODEV) {
		server_client_error(c, seq, ENODEV, "%u GPUs wanted, but only "
				    "%u can be used", r->ngpus, r->gpus ?
				    (unsigned)__builtin_popcountll(r->gpus) :
				    (unsigned)srv->ngpus);
		return e;
	}
	if (e == -ENOSPC) {
		size_format(r->mem, need, sizeof(need));
		server_client_error(c, seq, E2BIG, "%s per GPU wanted, more than "
				    "any of its GPUs can give", need);
		return e;
	}
	return e;
}

/* Are all GPUs of mask on this node? */
static bool reg_gpus_known(const struct server *srv, uint64_t mask)
{
	uint64_t have = 0;

	for (size_t i = 0; i < srv->ngpus; i++)
		have |= UINT64_C(1) << srv->gpus[i].index;
	return !(mask & ~have);
}

/* /proc/PID/cwd, or "/" when it cannot be read (another user's process). */
static void reg_cwd(pid_t pid, char *buf, size_t len)
{
	char path[64];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/cwd", (int)pid);
	n = readlink(path, buf, len - 1);
	if (n <= 0 || buf[0] != '/')
		n = 0, buf[n++] = '/';
	buf[n] = '\0';
}

/*
 * A process kmux did not start (job 0), or one that ran before the daemon
 * restarted and that the database does not know (PROTO_REG_F_RUNNING): a
 * job of its own, owned by this connection.  Queued like any job (QUEUED,
 * then ADMIT from job_start), or taken as running on what it holds.
 */
static void reg_new_job(struct conn *c, const struct proto_msg *m)
{
	const struct proto_register *r = &m->u.reg;
	struct server *srv = c->srv;
	bool running = r->flags & PROTO_REG_F_RUNNING;
	char cwd[PATH_MAX], err[ERRLEN];
	struct admit_task t;
	struct db_job dj;
	struct job *j;
	pid_t pid;
	uint64_t start;
	int e;

	reg_process(c, r, &pid, &start);
	admit_task_init(&t, 0, r->ngpus, r->mem, NULL, &srv->policy, 0);
	t.gpu_mask = r->gpus;
	if (!running && reg_check_fit(c, m->seq, r, &t))
		return;
	if (running && !reg_gpus_known(srv, r->gpus)) {
		/* Not ours to count: no row, or every retry would add one. */
		server_client_error(c, m->seq, ENODEV, "GPUs %#llx are not all "
				    "managed by this kmuxd",
				    (unsigned long long)r->gpus);
		return;
	}
	reg_cwd(pid, cwd, sizeof(cwd));
	memset(&dj, 0, sizeof(dj));
	dj.name = (char *)(r->name ? r->name : "");
	dj.uid = c->uid;
	dj.argc = r->argv.count;
	dj.argv = (char *)r->argv.block;
	dj.argv_len = r->argv.bytes;
	dj.cwd = cwd;
	dj.flags = DB_JOB_F_REGISTERED;
	dj.ngpus = r->ngpus;
	dj.mem_request = r->mem;
	dj.submit_us = server_now_us();
	dj.pid = pid;
	dj.pid_start = start;
	e = db_job_insert(srv->db, &dj, err, sizeof(err));
	if (!e && running)
		e = db_job_start(srv->db, dj.id, r->gpus, r->mem, pid, start,
				 dj.submit_us, err, sizeof(err));
	if (e) {
		server_client_error(c, m->seq, -e, "cannot record the process: "
				    "%s", err);
		return;
	}
	j = calloc(1, sizeof(*j));
	if (!j) {
		server_client_error(c, m->seq, ENOMEM, "out of memory");
		return;
	}
	j->id = dj.id;
	j->uid = c->uid;
	j->flags = dj.flags;
	j->submit_us = dj.submit_us;
	j->profile_key = dj.profile_key;
	j->pid = pid;
	j->pid_start = start;
	j->owner = c;
	j->owner_seq = m->seq;
	job_task_init(srv, j, r->ngpus, r->mem, 0);
	j->task.gpu_mask = r->gpus;
	if (running) {
		j->state = PROTO_JOB_RUNNING;
		j->start_us = dj.submit_us;
		TAILQ_INSERT_TAIL(&srv->running, j, entry);
		job_recommit(srv, j, r->gpus, r->mem);
		log_info("daemon: job %lld: pid %d, running before this daemon "
			 "started, registered again", (long long)j->id, (int)pid);
		send_admit(c, m->seq, j);
		return;
	}
	j->state = PROTO_JOB_QUEUED;
	TAILQ_INSERT_TAIL(&srv->queued, j, entry);
	log_info("daemon: job %lld: pid %d registered (uid %u, %u GPU(s)), "
		 "queued", (long long)j->id, (int)pid, (unsigned)c->uid,
		 r->ngpus);
	server_kick(srv);
}

void job_register(struct conn *c, const struct proto_msg *m)
{
	const struct proto_register *r = &m->u.reg;
	struct server *srv = c->srv;
	char err[ERRLEN];
	struct job *j;

	if (r->job == 0) {
		reg_new_job(c, m);
		return;
	}
	j = job_find(srv, (int64_t)r->job);
	if (!j || j->state != PROTO_JOB_RUNNING ||
	    !server_client_may(c, j->uid)) {
		/* Its daemon died and this one does not know it: adopt it. */
		if (r->flags & PROTO_REG_F_RUNNING) {
			reg_new_job(c, m);
			return;
		}
		server_client_error(c, m->seq, ENOENT, "no running job %llu",
				    (unsigned long long)r->job);
		return;
	}
	/* `kmux run`: the daemon learns the pid from the preload. */
	if (j->pid <= 0) {
		reg_process(c, r, &j->pid, &j->pid_start);
		if (db_job_set_pid(srv->db, j->id, j->pid, j->pid_start, err,
				   sizeof(err)))
			log_warn("daemon: job %lld: %s", (long long)j->id, err);
	}
	/* A registered process back after a restart: its connection is its
	 * life again. */
	if ((j->flags & DB_JOB_F_REGISTERED) && !j->owner) {
		j->owner = c;
		j->owner_seq = m->seq;
		log_info("daemon: job %lld: pid %d registered again",
			 (long long)j->id, (int)j->pid);
	}
	send_admit(c, m->seq, j);
}

/*
 * FINISHED for a job that has ended already: a `kmux run` whose daemon died
 * while its command ran, back on a new connection.  The daemon that
 * recovered the job found its process gone (or never knew it: no STARTED
 * or REGISTER told it) and recorded it exited, or cancelled (it cancelled
 * the command, then saw it gone before its client came back), code
 * unknown; the client knew the code.  Only that case is filled in
 * (db_job_set_exit; the state stays).
 */
static void job_finished_late(struct conn *c, const struct proto_msg *m)
{
	const struct proto_finished *f = &m->u.finished;
	struct server *srv = c->srv;
	struct db_job dj = { 0 };
	char err[ERRLEN];
	int e;

	e = db_job_get(srv->db, (int64_t)f->job, &dj, err, sizeof(err));
	/*
	 * The same status again: the daemon before this one recorded it and
	 * died before its OK got out (an answer still in its buffers).
	 */
	if (!e && (dj.flags & DB_JOB_F_FOREGROUND) &&
	    server_client_may(c, dj.uid) && dj.state != PROTO_JOB_QUEUED &&
	    dj.state != PROTO_JOB_RUNNING && dj.exit_code == f->exit_code &&
	    dj.signal == f->signal) {
		log_info("daemon: job %lld: its `kmux run` reported exit %d, "
			 "signal %d again: recorded already",
			 (long long)dj.id, f->exit_code, f->signal);
		goto ok;
	}
	if (e || !(dj.flags & DB_JOB_F_FOREGROUND) ||
	    !server_client_may(c, dj.uid) ||
	    (dj.state != PROTO_JOB_EXITED && dj.state != PROTO_JOB_CANCELLED) ||
	    dj.exit_code != PROTO_EXIT_UNKNOWN || dj.signal ||
	    (f->exit_code == PROTO_EXIT_UNKNOWN && !f->signal)) {
		server_client_error(c, m->seq, ENOENT, "job %llu is not yours "
				    "to finish", (unsigned long long)f->job);
		goto out;
	}
	e = db_job_set_exit(srv->db, dj.id, f->exit_code, f->signal, err,
			    sizeof(err));
	if (e) {
		server_client_error(c, m->seq, -e, "%s", err);
		goto out;
	}
	log_info("daemon: job %lld: exit %d, signal %d, as its `kmux run` "
		 "reported it after a daemon restart",
		 (long long)dj.id, f->exit_code, f->signal);
ok:
	server_client_send(c, &(struct proto_msg){
		.type = PROTO_OK, .seq = m->seq, .u.ok.id = f->job });
out:
	db_job_release(&dj);
}

void job_finished(struct conn *c, const struct proto_msg *m)
{
	const struct proto_finished *f = &m->u.finished;
	struct job *j = job_find(c->srv, (int64_t)f->job);

	if (!j) {
		job_finished_late(c, m);
		return;
	}
	/* Its owner; or, after a restart, its `kmux run` on a new
	 * connection (the job was recovered running, with no owner). */
	if (j->owner != c &&
	    (j->owner || !(j->flags & DB_JOB_F_FOREGROUND) ||
	     j->state != PROTO_JOB_RUNNING || !server_client_may(c, j->uid))) {
		server_client_error(c, m->seq, ENOENT, "job %llu is not yours "
				    "to finish", (unsigned long long)f->job);
		return;
	}
	server_client_send(c, &(struct proto_msg){
		.type = PROTO_OK, .seq = m->seq, .u.ok.id = f->job });
	job_finish(c->srv, j, j->cancelling && j->state == PROTO_JOB_RUNNING ?
		   PROTO_JOB_CANCELLED :
		   f->flags & PROTO_FINISHED_F_NOT_STARTED ? PROTO_JOB_FAILED :
		   PROTO_JOB_EXITED, f->exit_code, f->signal);
	/* Recorded, the OK still in the connection's buffer. */
	server_test_die(c->srv, "finished");
}

/*
 * ATTACH: a `kmux run` whose daemon died while its job was queued takes
 * the job back on a new connection (job_recover kept it queued, out of
 * admission, for JOB_ATTACH_GRACE_US).  From here on as after RUN: OK, then
 * QUEUED and ADMIT, or EXITED; the connection owns the job again, so its
 * end cancels the job.  A job that ended meanwhile is answered with its
 * EXITED at once.  One the dead daemon admitted, when it died before its
 * ADMIT got out (job_recover_admitted), is answered OK and ADMIT on the
 * GPUs it was recorded on.
 */
void job_attach(struct conn *c, const struct proto_msg *m)
{
	struct server *srv = c->srv;
	struct db_job dj = { 0 };
	struct job *j;
	bool admitted;

	if (job_lookup(c, m->seq, m->u.attach.job, &j, &dj))
		return;
	if (!j) {
		if (dj.state == PROTO_JOB_QUEUED ||
		    dj.state == PROTO_JOB_RUNNING)
			server_client_error(c, m->seq, EIO, "job %lld is %s in "
					    "the database but this kmuxd does "
					    "not track it", (long long)dj.id,
					    proto_job_state_name(dj.state));
		else
			server_client_send(c, &(struct proto_msg){
				.type = PROTO_EXITED, .seq = m->seq,
				.u.exited = { (uint64_t)dj.id, dj.state,
					      dj.exit_code, dj.signal } });
		db_job_release(&dj);
		return;
	}
	/* Admitted by the daemon that died, its command's pid unknown
	 * (job_recover_admitted): the client attaches only while it waits for
	 * ADMIT, so that ADMIT never reached it and nothing runs yet. */
	admitted = j->state == PROTO_JOB_RUNNING && j->pid <= 0;
	if (!(j->flags & DB_JOB_F_FOREGROUND) ||
	    (j->state != PROTO_JOB_QUEUED && !admitted)) {
		server_client_error(c, m->seq, EINVAL, "job %lld is not a "
				    "queued `kmux run` job", (long long)j->id);
		return;
	}
	if (j->owner) {
		server_client_error(c, m->seq, EBUSY, "job %lld has its `kmux "
				    "run` client already", (long long)j->id);
		return;
	}
	j->owner = c;
	j->owner_seq = m->seq;
	j->told_queued = false;
	j->attach_until_us = 0;
	log_info("daemon: job %lld: its `kmux run` is back (pid %d)%s",
		 (long long)j->id, (int)c->pid,
		 admitted ? ", admitted already: ADMIT again" : "");
	server_client_send(c, &(struct proto_msg){
		.type = PROTO_OK, .seq = m->seq, .u.ok.id = (uint64_t)j->id });
	if (admitted)
		send_admit(c, m->seq, j);
	else
		server_kick(srv);
}

/*
 * STARTED: a `kmux run` client's command runs as pid.  Until now kmuxd
 * knew only the client (job_cancel_via_client); from here it signals the
 * command as it does a submitted job's (cancel, then SIGKILL after the
 * grace period), and a daemon restarted while it runs finds it alive
 * (db_recover) rather than recording the job lost.  Only the job's own
 * connection may say so, and only for a child of that connection's peer
 * (SO_PEERCRED) that runs as the peer's user: a client cannot name
 * another process for kmuxd to signal.  A refusal leaves the job as it
 * was; the client goes on (its command runs either way).
 */
void job_started(struct conn *c, const struct proto_msg *m)
{
	const struct proto_started *st = &m->u.started;
	struct job *j = job_find(c->srv, (int64_t)st->job);
	uint64_t start, again;
	uint32_t ppid;
	char err[ERRLEN];

	if (!j || j->owner != c || !(j->flags & DB_JOB_F_FOREGROUND) ||
	    j->state != PROTO_JOB_RUNNING) {
		server_client_error(c, m->seq, ENOENT, "job %llu is not a "
				    "running `kmux run` job of this connection",
				    (unsigned long long)st->job);
		return;
	}
	/* A client in another pid namespace names a pid this daemon cannot
	 * check: refused, like a pid that is not its child.  The start time
	 * is read before the checks and again after them, so that they all
	 * concern one process, not a pid reused in between. */
	if (c->pid <= 0 || db_proc_start_time((int32_t)st->pid, &start) ||
	    job_proc_parent(st->pid, &ppid) || ppid != (uint32_t)c->pid ||
	    !job_proc_owned_by(st->pid, c->uid) ||
	    db_proc_start_time((int32_t)st->pid, &again) || again != start) {
		server_client_error(c, m->seq, EPERM, "pid %u is not a child "
				    "of this `kmux run` (pid %ld) running as "
				    "uid %u", st->pid, (long)c->pid,
				    (unsigned)c->uid);
		return;
	}
	/* The command itself, even if a process below it registered first:
	 * its end is the job's end, and it is what cancel must reach. */
	j->pid = (pid_t)st->pid;
	j->pid_start = start;
	if (db_job_set_pid(c->srv->db, j->id, j->pid, j->pid_start, err,
			   sizeof(err)))
		log_warn("daemon: job %lld: pid %d not recorded (a restart "
			 "will not find it): %s", (long long)j->id, (int)j->pid,
			 err);
	log_info("daemon: job %lld: its command runs as pid %d",
		 (long long)j->id, (int)j->pid);
	server_client_send(c, &(struct proto_msg){
		.type = PROTO_OK, .seq = m->seq, .u.ok.id = st->job });
}

/*
 * ALLOC_UPDATE with want > 0: a running task's allocation would pass its
 * quota.  A need that was guessed or learned may grow while its GPUs have
 * uncommitted room (the guess is "corrected as it allocates"); a declared
 * need is what the user promised and stays the limit.  When there is no
 * room now, the request waits (the allocation blocks in the task) until
 * the tasks around it end, rather than failing the task for memory that
 * will come back: see job_grow_retry().  The answer is ADMIT with the new
 * quota, or ERROR (the allocation then fails for that task alone).
 */
static void grow_answer(struct server *srv, struct conn *c, uint32_t seq,
			const struct job *j)
{
	struct proto_msg a = { .type = PROTO_ADMIT, .seq = seq };

	admit_fill(srv, j, &a);
	server_client_send(c, &a);
}

/* Try to raise j's quota to want: 0, or admit_grow's -ENOSPC / -EINVAL. */
static int grow_try(struct server *srv, struct job *j, uint64_t want)
{
	char err[ERRLEN], q[SIZE_FORMAT_MAX], w[SIZE_FORMAT_MAX];
	int r;

	if (want <= j->place.quota)
		return 0;	/* granted already (another thread asked) */
	size_format(j->place.quota, q, sizeof(q));
	r = admit_grow(srv->gpus, srv->ngpus, &j->place, want, &srv->policy);
	if (r)
		return r;
	size_format(want, w, sizeof(w));
	j->task.mem = want;
	log_info("daemon: job %lld grew from %s to %s", (long long)j->id, q,
		 w);
	if (db_job_set_quota(srv->db, j->id, want, err, sizeof(err)))
		log_warn("daemon: job %lld: %s", (long long)j->id, err);
	return 0;
}

static void grow_count(struct server *srv, const struct job *j, int d)
{
	for (uint32_t i = 0; i < j->place.ngpus; i++) {
		struct admit_gpu *g = &srv->gpus[j->place.slot[i]];

		if (d > 0)
			g->grow_waiting++;
		else if (g->grow_waiting > 0)
			g->grow_waiting--;
		if (!j->suspended)
			continue;
		if (d > 0)
			g->suspended++;
		else if (g->suspended > 0)
			g->suspended--;
	}
}

/* j's wait is over (granted, refused or gone): out of the counts. */
static void grow_done(struct server *srv, struct job *j)
{
	grow_count(srv, j, -1);
	j->grow_conn = NULL;
	j->suspended = false;
	j->susp_fallback = false;
}

void job_grow_drop(struct server *srv, struct job *j, int err,
		   const char *why)
{
	char q[SIZE_FORMAT_MAX], w[SIZE_FORMAT_MAX];

	if (!j->grow_conn)
		return;
	if (err) {
		size_format(j->place.quota, q, sizeof(q));
		size_format(j->grow_want, w, sizeof(w));
		log_info("daemon: job %lld may not grow from %s to %s: %s",
			 (long long)j->id, q, w, why);
		server_client_error(j->grow_conn, j->grow_seq, err, "job %lld: "
				    "no room to grow from %s to %s on its GPUs "
				    "(%s)", (long long)j->id, q, w, why);
	}
	grow_done(srv, j);
}

/*
 * want with PROTO_ALLOC_F_EVICT: an evict-mode task thrashes (its working
 * set does not fit its budget) and asks for a larger budget.  Eviction
 * keeps it correct without one, so the answer never waits: grant want if
 * its GPUs can commit it now, or refuse at once.  A declared need may
 * grow this way too: under evict the declared size was the budget to
 * admit it at, and the growth only takes room nobody committed.
 *
 * Refused, it holds its GPUs (admit_thrash_hold) while it goes on asking:
 * no new task starts there, so the room its neighbours free as they end
 * is there when it asks next, instead of going to newcomers that would
 * keep it thrashing for their whole lives (bench/results/memory.md run 3:
 * 7 tasks at once, 0.11x of quota mode).  Whatever it asked, granted or
 * not, is its working set for its profile (db_profile_note_thrash).
 */
static void job_want_evict(struct conn *c, const struct proto_msg *m,
			   struct job *j, uint64_t want)
{
	const uint64_t mib = UINT64_C(1) << 20;
	struct server *srv = c->srv;
	uint64_t room;
	char q[SIZE_FORMAT_MAX], w[SIZE_FORMAT_MAX];
	bool ever;

	if (want <= j->place.quota) {
		grow_answer(srv, c, m->seq, j);	/* it has it already */
		return;
	}
	if (want > j->thrash_want)
		j->thrash_want = want;
	/* All or nothing: under LRU a cyclic working set that still does not
	 * fit misses on every touch, so a part of the ask would hold memory
	 * back from others and change nothing. */
	room = admit_grow_room(srv->gpus, srv->ngpus, &j->place,
			       &srv->policy) & ~(mib - 1);
	if (want - j->place.quota <= room && grow_try(srv, j, want) == 0) {
		job_thrash_release(srv, j, "its evict budget grew");
		grow_answer(srv, c, m->seq, j);
		return;
	}
	size_format(j->place.quota, q, sizeof(q));
	size_format(m->u.alloc.want, w, sizeof(w));
	j->thrash_ask_us = server_now_us();
	ever = admit_thrash_hold(srv->gpus, srv->ngpus, &j->place, want,
				 &srv->policy);
	if (!j->thrash_held && ever) {
		for (uint32_t i = 0; i < j->place.ngpus; i++)
			srv->gpus[j->place.slot[i]].thrash_hold++;
		j->thrash_held = true;
		log_info("daemon: job %lld thrashes; no room now to grow its "
			 "evict budget from %s to %s: its GPUs take no new "
			 "task until it has it", (long long)j->id, q, w);
	} else if (!j->thrash_held) {
		log_info("daemon: job %lld thrashes; no room now to grow its "
			 "evict budget from %s to %s (more than its GPUs "
			 "hold: it evicts on)", (long long)j->id, q, w);
	}
	/* E2BIG: never (more than its GPUs hold), so suspending for it
	 * would not help (v8 preloads suspend on ENOSPC only). */
	server_client_error(c, m->seq, ever ? ENOSPC : E2BIG, "job %lld: no "
			    "room %sto grow the evict budget from %s to %s on "
			    "its GPUs", (long long)j->id, ever ? "now " : "",
			    q, w);
}

/*
 * want with PROTO_ALLOC_F_SUSPEND (load control, docs/design-memory.md):
 * an evict-mode task cannot get the room it needs (refused while it
 * thrashes, or a budget it gave back is now too small), evicted all it
 * could and blocks until it may have want.  Its commitment drops to what
 * it still holds (resident, rounded up to a MiB), so the room goes to its
 * neighbours' growth; it waits like a quota-mode growth (grow_conn, in the
 * order asked, before any new task on its GPUs), and job_grow_retry()
 * answers ADMIT once its GPUs can commit want, or with its old quota
 * (susp_quota) past --grow-wait or when every task there waits.
 */
static void job_suspend(struct conn *c, const struct proto_msg *m,
			struct job *j, uint64_t want)
{
	const uint64_t mib = UINT64_C(1) << 20;
	struct server *srv = c->srv;
	uint64_t hold = m->u.alloc.resident;
	char q[SIZE_FORMAT_MAX], h[SIZE_FORMAT_MAX], w[SIZE_FORMAT_MAX];
	char err[ERRLEN];

	hold = hold > UINT64_MAX - (mib - 1) ? UINT64_MAX
					     : (hold + mib - 1) & ~(mib - 1);
	if (hold < mib)
		hold = mib;
	size_format(j->place.quota, q, sizeof(q));
	j->susp_quota = j->place.quota;
	if (hold < j->place.quota &&
	    admit_shrink(srv->gpus, srv->ngpus, &j->place, hold) == 0 &&
	    db_job_set_quota(srv->db, j->id, hold, err, sizeof(err)))
		log_warn("daemon: job %lld: %s", (long long)j->id, err);
	size_format(j->place.quota, h, sizeof(h));
	size_format(want, w, sizeof(w));
	j->suspended = true;
	j->susp_fallback = false;
	j->grow_conn = c;
	j->grow_seq = m->seq;
	j->grow_want = want;
	j->grow_since_us = server_now_us();
	grow_count(srv, j, +1);
	log_info("daemon: job %lld suspended: no room for its working set; "
		 "holds %s (was %s), waits for %s", (long long)j->id, h, q, w);
	/* Its wait holds new tasks off its GPUs now (grow_waiting). */
	job_thrash_release(srv, j, "it is suspended");
	server_kick(srv);
}

static void job_want(struct conn *c, const struct proto_msg *m, struct job *j)
{
	const uint64_t mib = UINT64_C(1) << 20;
	struct server *srv = c->srv;
	uint64_t want = m->u.alloc.want;
	char q[SIZE_FORMAT_MAX], w[SIZE_FORMAT_MAX];
	int r;

	if (!j || j->state != PROTO_JOB_RUNNING || !j->placed ||
	    !server_client_may(c, j->uid)) {
		server_client_error(c, m->seq, ENOENT, "no running job %llu",
				    (unsigned long long)m->u.alloc.job);
		return;
	}
	if (j->grow_conn) {
		/* One asker at a time (the preload serializes its own). */
		server_client_error(c, m->seq, EBUSY, "job %lld already waits "
				    "to grow", (long long)j->id);
		return;
	}
	want = want > UINT64_MAX - (mib - 1) ? UINT64_MAX
					     : (want + mib - 1) & ~(mib - 1);
	if (m->u.alloc.flags & PROTO_ALLOC_F_SUSPEND) {
		job_suspend(c, m, j, want);
		return;
	}
	if (m->u.alloc.flags & PROTO_ALLOC_F_EVICT) {
		job_want_evict(c, m, j, want);
		return;
	}
	size_format(j->place.quota, q, sizeof(q));
	if (j->task.mem_source == ADMIT_MEM_DECLARED) {
		server_client_error(c, m->seq, EDQUOT, "job %lld declared "
				    "%s; it may not grow", (long long)j->id, q);
		return;
	}
	r = grow_try(srv, j, want);
	if (r == 0) {
		grow_answer(srv, c, m->seq, j);
		return;
	}
	size_format(want, w, sizeof(w));
	j->grow_conn = c;
	j->grow_seq = m->seq;
	j->grow_want = want;
	j->grow_since_us = server_now_us();
	grow_count(srv, j, +1);
	if (!admit_grow_may_wait(srv->gpus, srv->ngpus, &j->place, want,
				 &srv->policy)) {
		job_grow_drop(srv, j, ENOSPC, want > admit_capacity(
				      &srv->gpus[j->place.slot[0]],
				      &srv->policy) ?
			      "more than the GPU holds" :
			      "every task on its GPUs waits for memory");
		return;
	}
	log_info("daemon: job %lld waits to grow from %s to %s",
		 (long long)j->id, q, w);
}

/* Waiting jobs in the order they asked: (grow_since_us, id). */
static bool grow_before(const struct job *a, const struct job *b)
{
	if (a->grow_since_us != b->grow_since_us)
		return a->grow_since_us < b->grow_since_us;
	return a->id < b->id;
}

/* The waiting job that asked next after `after` (NULL: the first). */
static struct job *grow_next(struct server *srv, const struct job *after)
{
	struct job *j, *best = NULL;

	TAILQ_FOREACH(j, &srv->running, entry) {
		if (!j->grow_conn || (after && !grow_before(after, j)))
			continue;
		if (!best || grow_before(j, best))
			best = j;
	}
	return best;
}

/* The waiting job that asked last and could wait for ever, if any. */
static struct job *grow_stuck(struct server *srv)
{
	struct job *j, *best = NULL;

	TAILQ_FOREACH(j, &srv->running, entry) {
		if (!j->grow_conn || (j->suspended && j->susp_fallback) ||
		    admit_grow_may_wait(srv->gpus, srv->ngpus, &j->place,
					j->grow_want, &srv->policy))
			continue;
		if (!best || grow_before(best, j))
			best = j;
	}
	return best;
}

/* What a waiting job is granted: its want, or a suspended job resuming
 * without it, the quota it had before. */
static uint64_t grow_target(const struct job *j)
{
	if (j->suspended && j->susp_fallback)
		return j->susp_quota;
	return j->grow_want;
}

/* Grant the first waiting job (in the order asked) whose target fits. */
static bool grow_grant_one(struct server *srv)
{
	struct job *j;

	for (j = grow_next(srv, NULL); j; j = grow_next(srv, j)) {
		if (grow_try(srv, j, grow_target(j)))
			continue;
		grow_answer(srv, j->grow_conn, j->grow_seq, j);
		if (j->suspended)
			log_info("daemon: job %lld resumes with %llu MiB (%s)",
				 (long long)j->id,
				 (unsigned long long)(j->place.quota >> 20),
				 j->susp_fallback ? "its quota before"
						  : "its working set");
		grow_done(srv, j);
		return true;
	}
	return false;
}

/* A suspended job stops waiting for its want: it resumes with its old
 * quota as soon as that fits (first in line, as before). */
static void susp_fall_back(struct job *j, const char *why)
{
	if (j->susp_fallback)
		return;
	j->susp_fallback = true;
	log_info("daemon: job %lld stops waiting for its working set (%s): "
		 "it resumes with %llu MiB once that fits", (long long)j->id,
		 why, (unsigned long long)(j->susp_quota >> 20));
}

void job_grow_retry(struct server *srv)
{
	uint64_t now = server_now_us();
	struct job *j;

	/* Whoever waited longest gets the room that freed; a later, smaller
	 * growth that fits goes too (it blocks its task just the same).
	 * After each grant the room changed: from the first again. */
	while (grow_grant_one(srv))
		;
	TAILQ_FOREACH(j, &srv->running, entry) {
		if (!j->grow_conn || !srv->policy.grow_wait_us ||
		    now - j->grow_since_us < srv->policy.grow_wait_us)
			continue;
		if (j->suspended)
			susp_fall_back(j, "waited too long");
		else
			job_grow_drop(srv, j, ENOSPC, "waited too long");
	}
	while (grow_grant_one(srv))
		;
	TAILQ_FOREACH(j, &srv->running, entry)
		if (j->thrash_held && now - j->thrash_ask_us >= JOB_THRASH_HOLD_US)
			job_thrash_release(srv, j, "it stopped asking for room");
	/* A deadlock: refuse the last asker, one at a time (the others may
	 * then wait for the memory it frees as it fails).  A suspended one
	 * is not refused: it resumes with the quota it had (its neighbours,
	 * suspended too, hold only their floors, so that fits). */
	while ((j = grow_stuck(srv))) {
		if (j->suspended) {
			susp_fall_back(j, "every task on its GPUs waits");
			while (grow_grant_one(srv))
				;
		} else {
			job_grow_drop(srv, j, ENOSPC,
				      "every task on its GPUs waits for memory");
		}
	}
}

void job_alloc_update(struct conn *c, const struct proto_msg *m)
{
	const struct proto_alloc_update *u = &m->u.alloc;
	struct job *j = job_find(c->srv, (int64_t)u->job);
	uint64_t now = server_now_us();
	char err[ERRLEN];

	/* A budget given back (MEM_PRESSURE's answer): no reply. */
	if (u->flags & PROTO_ALLOC_F_SHRUNK) {
		if (j && j->state == PROTO_JOB_RUNNING && j->placed &&
		    server_client_may(c, j->uid))
			pressure_shrunk(c->srv, j, u->want);
		return;
	}
	if (u->want) {
		job_want(c, m, j);
		return;
	}
	/* Fire and forget: a stale update is not worth an error. */
	if (!j || !server_client_may(c, j->uid))
		return;
	j->mem_used = u->resident;
	j->mem_evicted = u->evicted;
	j->mem_reserved = u->reserved;
	j->evicts = u->evicts;
	j->restores = u->restores;
	j->evict = u->flags & PROTO_ALLOC_F_EVICT;
	j->thrash_ws = u->thrash_ws;
	/* The rate over a window of at least a second; a counter that went
	 * back (another process of the job) starts a new window. */
	if (!j->rate_us || u->kernels < j->rate_kernels ||
	    u->waits < j->rate_waits) {
		j->rate_us = now;
		j->rate_kernels = u->kernels;
		j->rate_waits = u->waits;
	} else if (now - j->rate_us >= SERVER_RATE_WINDOW_US) {
		j->kernel_rate = (double)(u->kernels - j->rate_kernels) * 1e6 /
				 (double)(now - j->rate_us);
		j->wait_rate = (double)(u->waits - j->rate_waits) * 1e6 /
			       (double)(now - j->rate_us);
		j->rate_us = now;
		j->rate_kernels = u->kernels;
		j->rate_waits = u->waits;
		job_slice_check(c->srv, j);
	}
	if (u->waits < j->act_waits)
		j->act_us = 0;	/* another process of the job: start over */
	if (!j->act_us && u->kernels > 0) {
		j->act_us = now;
		j->act_waits = u->waits;
	}
	j->kernels = u->kernels;
	j->waits = u->waits;
	j->report_us = now;
	if (u->peak <= j->mem_peak)
		return;
	j->mem_peak = u->peak;
	if (j->task.mem_source == ADMIT_MEM_GUESSED && u->peak > j->task.mem)
		j->task.mem = u->peak;
	if (db_job_update_peak(c->srv->db, j->id, u->peak, err, sizeof(err)))
		log_warn("daemon: job %lld: %s", (long long)j->id, err);
}

void job_conn_gone(struct conn *c)
{
	struct server *srv = c->srv;
	struct waiter *w, *wn;
	struct follower *f, *fn;
	struct job *j, *jn;

	for (w = TAILQ_FIRST(&srv->waiters); w; w = wn) {
		wn = TAILQ_NEXT(w, entry);
		if (w->conn == c) {
			TAILQ_REMOVE(&srv->waiters, w, entry);
			free(w);
		}
	}
	for (f = TAILQ_FIRST(&srv->followers); f; f = fn) {
		fn = TAILQ_NEXT(f, entry);
		if (f->conn == c)
			follower_drop(srv, f);
	}
	TAILQ_FOREACH(j, &srv->running, entry)
		if (j->grow_conn == c)
			job_grow_drop(srv, j, 0, NULL);
	if (srv->stopping)
		return;
	/* `kmux run` clients: their jobs end with them. */
	for (j = TAILQ_FIRST(&srv->queued); j; j = jn) {
		jn = TAILQ_NEXT(j, entry);
		if (j->owner == c) {
			j->owner = NULL;
			job_finish(srv, j, PROTO_JOB_CANCELLED,
				   PROTO_EXIT_UNKNOWN, 0);
		}
	}
	for (j = TAILQ_FIRST(&srv->running); j; j = jn) {
		jn = TAILQ_NEXT(j, entry);
		if (j->owner != c)
			continue;
		j->owner = NULL;
		/* Its process may outlive the client: watch it in /proc. */
		if (j->pid <= 0 || !job_proc_alive(j->pid, j->pid_start, NULL)) {
			job_finish(srv, j, PROTO_JOB_EXITED, PROTO_EXIT_UNKNOWN,
				   0);
		} else if (j->flags & DB_JOB_F_REGISTERED) {
			/* Its preload hung up: it is exiting, most likely. */
			j->lingering = 1;
			job_poll_soon(srv);
		}
	}
}
