/*
 * region.c - kmuxd's exclusive regions (issue 6): a task asks for its GPU
 * alone (REGION_ENTER on a connection of its own), waits its turn in the
 * GPU's FIFO, and gets it once the GPU is quiet:
 *
 *	1. the GPU's gate closes (the word in <socket>.gates: every preload
 *	   on the GPU checks it before submitting and waits while closed);
 *	2. every other registered task on the GPU is asked to drain (DRAIN:
 *	   its helper thread synchronizes its contexts and answers DRAINED),
 *	   for at most --region-drain;
 *	3. those processes are frozen, each recorded in the database
 *	   first, so that a restarted daemon thaws them: their cgroup v2
 *	   through cgroup.freeze where kmuxd may (region-cgroup.c), else
 *	   SIGSTOP;
 *	4. with --region-cpus, the holder is pinned to the reserved cores
 *	   and every other task moved off them (region-cpus.c);
 *	5. REGION_GRANTED.
 *
 * Leaving (REGION_LEAVE, or the holder's connection closing: it died, or
 * exited) restores the CPU masks, thaws the others, opens the gate and
 * serves the next region.  The tick
 * revokes a region held longer than --region-max, or whose holder is gone.
 * The daemon's own end (SIGTERM) releases every region; after a kill -9,
 * start-up thaws whatever the database says was frozen and opens every
 * gate.  No process is stopped without a database row naming it.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <event2/event.h>

#include "daemon.h"
#include "db.h"
#include "gates.h"
#include "log.h"

#define REGION_TICK_MS 100
#define REGION_CGROUP_WAIT_MS 500	/* for cgroup.events "frozen 1" */
#define ERRLEN 512

static uint64_t bit(uint32_t gpu)
{
	return UINT64_C(1) << gpu;
}

static void gate_set(struct server *srv, uint32_t gpu, uint32_t holder)
{
	if (srv->gates && gpu < GATES_MAX_GPUS)
		__atomic_store_n((uint32_t *)(srv->gates + gates_offset(gpu)),
				 holder, __ATOMIC_RELEASE);
}

/* A registered task on gpu other than pid: whose work a region waits for. */
static struct job *peer_on_gpu(struct server *srv, struct conn *o,
			       uint32_t gpu, pid_t pid)
{
	struct job *j;

	if (o->role != PROTO_ROLE_PRELOAD || !o->reg_job || o->closing ||
	    o->reg_pid == pid)
		return NULL;
	j = job_find(srv, o->reg_job);
	if (!j || j->state != PROTO_JOB_RUNNING ||
	    !(job_gpu_mask(srv, j) & bit(gpu)))
		return NULL;
	return j;
}

/* Undo one freeze; the row goes once the process runs again. */
static void thaw(struct server *srv, pid_t pid, uint64_t start,
		 const char *cgroup)
{
	char err[ERRLEN];
	int r;

	if (cgroup) {
		r = region_cgroup_thaw(cgroup);
		if (r)
			log_warn("daemon: cannot thaw cgroup %s: %s", cgroup,
				 strerror(-r));
	} else if (job_proc_alive(pid, start, NULL) && kill(pid, SIGCONT)) {
		log_warn("daemon: cannot thaw pid %d: %s", (int)pid,
			 strerror(errno));
	}
	r = db_frozen_remove(srv->db, pid, start, err, sizeof(err));
	if (r && r != -ENOENT)
		log_warn("daemon: %s", err);
}

/* What a cgroup may hold to be frozen for region r: processes of the
 * other tasks on its GPU only. */
struct cg_test {
	struct server *srv;
	struct region *r;
};

static bool cg_pid_ok(pid_t pid, void *arg)
{
	struct cg_test *t = arg;
	struct job *j;
	struct conn *o;

	if (pid <= 0 || pid == t->r->pid || pid == getpid())
		return false;
	j = job_of_pid(t->srv, (uint32_t)pid);
	if (!j || j->id == t->r->job)
		return false;
	TAILQ_FOREACH(o, &t->srv->conns, entry)
		if (o->reg_job == j->id &&
		    peer_on_gpu(t->srv, o, t->r->gpu, t->r->pid))
			return true;
	return false;
}

/*
 * Freeze pid's cgroup if kmuxd may (region-cgroup.c says when); its row
 * names the cgroup first.  1: frozen this way (or by an earlier peer of
 * the same region), 0: not, use SIGSTOP.
 */
static int freeze_cgroup(struct server *srv, struct region *r, pid_t pid,
			 uint64_t start, int64_t job, char **out)
{
	struct cg_test t = { srv, r };
	char dir[PATH_MAX], why[ERRLEN], err[ERRLEN];
	int e;

	*out = NULL;
	if (!srv->cgroup_root[0] ||
	    region_cgroup_of(srv->cgroup_root, pid, dir, sizeof(dir)))
		return 0;
	for (size_t i = 0; i < r->nfrozen; i++) {
		if (r->frozen[i].cgroup && !strcmp(r->frozen[i].cgroup, dir))
			goto record;
	}
	if (region_cgroup_check(dir, cg_pid_ok, &t, why, sizeof(why))) {
		log_debug("daemon: region %llu: pid %d by SIGSTOP: %s",
			  (unsigned long long)r->id, (int)pid, why);
		return 0;
	}
record:
	if (!(*out = strdup(dir)))
		return 0;
	if (db_frozen_add(srv->db, pid, start, job, server_now_us(), dir, err,
			  sizeof(err))) {
		log_warn("daemon: region %llu: not freezing cgroup %s: %s",
			 (unsigned long long)r->id, dir, err);
		goto fail;
	}
	for (size_t i = 0; i < r->nfrozen; i++)
		if (r->frozen[i].cgroup && !strcmp(r->frozen[i].cgroup, dir))
			return 1;
	e = region_cgroup_freeze(dir, REGION_CGROUP_WAIT_MS);
	if (e == -ETIMEDOUT) {
		/* Written: the kernel freezes the rest as they come back. */
		log_warn("daemon: region %llu: cgroup %s not frozen within %d "
			 "ms", (unsigned long long)r->id, dir,
			 REGION_CGROUP_WAIT_MS);
	} else if (e) {
		log_warn("daemon: region %llu: cannot freeze cgroup %s: %s",
			 (unsigned long long)r->id, dir, strerror(-e));
		db_frozen_remove(srv->db, pid, start, NULL, 0);
		goto fail;
	}
	log_info("daemon: region %llu: froze cgroup %s (pid %d)",
		 (unsigned long long)r->id, dir, (int)pid);
	return 1;
fail:
	free(*out);
	*out = NULL;
	return 0;
}

/* Stop the other tasks on r's GPU; each is in the database first. */
static void freeze_peers(struct server *srv, struct region *r)
{
	char err[ERRLEN];
	struct conn *o;

	TAILQ_FOREACH(o, &srv->conns, entry) {
		struct job *j = peer_on_gpu(srv, o, r->gpu, r->pid);
		uint64_t start = 0;
		char *cg = NULL;
		bool dup = false;

		if (!j || r->nfrozen == REGION_MAX_PEERS)
			continue;
		for (size_t i = 0; i < r->nfrozen; i++)
			dup |= r->frozen[i].pid == o->reg_pid;
		if (dup || db_proc_start_time(o->reg_pid, &start))
			continue;
		if (freeze_cgroup(srv, r, o->reg_pid, start, j->id, &cg))
			goto frozen;
		if (db_frozen_add(srv->db, o->reg_pid, start, j->id,
				  server_now_us(), NULL, err, sizeof(err))) {
			/* Unrecorded, it could be left stopped: not frozen. */
			log_warn("daemon: region %llu: not freezing pid %d: %s",
				 (unsigned long long)r->id, (int)o->reg_pid,
				 err);
			continue;
		}
		if (kill(o->reg_pid, SIGSTOP)) {
			log_warn("daemon: region %llu: cannot freeze pid %d: "
				 "%s", (unsigned long long)r->id,
				 (int)o->reg_pid, strerror(errno));
			db_frozen_remove(srv->db, o->reg_pid, start, NULL, 0);
			continue;
		}
frozen:
		r->frozen[r->nfrozen].pid = o->reg_pid;
		r->frozen[r->nfrozen].start = start;
		r->frozen[r->nfrozen].cgroup = cg;
		r->nfrozen++;
	}
}

static void grant(struct server *srv, struct region *r)
{
	struct proto_msg m = { .type = PROTO_REGION_GRANTED, .seq = r->seq };
	uint64_t now;

	r->nacks = 0;
	if (srv->region_freeze)
		freeze_peers(srv, r);
	now = server_now_us();
	r->state = REGION_HELD;
	r->grant_us = now;
	m.u.granted.region = r->id;
	m.u.granted.waited_us = now > r->req_us ? now - r->req_us : 0;
	m.u.granted.gpu = r->gpu;
	m.u.granted.frozen = (uint32_t)r->nfrozen;
	region_cpus_update(srv);
	log_info("daemon: region %llu: GPU %u to pid %d after %llu us, %zu "
		 "process(es) frozen", (unsigned long long)r->id, r->gpu,
		 (int)r->pid, (unsigned long long)m.u.granted.waited_us,
		 r->nfrozen);
	server_client_send(r->conn, &m);
}

/* The head of gpu's FIFO, if the GPU is free: close, drain, grant. */
static void advance(struct server *srv, uint32_t gpu)
{
	struct region_gpu *rg = &srv->regions[gpu];
	struct region *r = TAILQ_FIRST(&rg->waiting);
	struct conn *o;

	if (rg->holder || !r || srv->stopping)
		return;
	TAILQ_REMOVE(&rg->waiting, r, entry);
	rg->holder = r;
	gate_set(srv, gpu, (uint32_t)r->pid);
	r->token = ++srv->next_token;
	r->nacks = 0;
	TAILQ_FOREACH(o, &srv->conns, entry) {
		struct proto_msg m = { .type = PROTO_DRAIN };

		if (!peer_on_gpu(srv, o, gpu, r->pid) ||
		    r->nacks == REGION_MAX_PEERS)
			continue;
		m.u.drain.token = r->token;
		m.u.drain.gpu = gpu;
		if (server_client_send(o, &m))
			r->acks[r->nacks++] = o;
	}
	if (r->nacks == 0) {
		grant(srv, r);
		return;
	}
	r->state = REGION_DRAINING;
	r->drain_until_us = server_now_us() + srv->region_drain_us;
}

/* End r (held, draining or waiting): thaw, open the gate, serve the next. */
static void release(struct server *srv, struct region *r, const char *why)
{
	struct region_gpu *rg = &srv->regions[r->gpu];
	uint32_t gpu = r->gpu;

	if (rg->holder != r) {
		TAILQ_REMOVE(&rg->waiting, r, entry);
		free(r);
		return;
	}
	/* No longer held: the CPU masks go back (or, with another GPU's
	 * region still held, follow that one). */
	rg->holder = NULL;
	region_cpus_update(srv);
	for (size_t i = 0; i < r->nfrozen; i++) {
		thaw(srv, r->frozen[i].pid, r->frozen[i].start,
		     r->frozen[i].cgroup);
		free(r->frozen[i].cgroup);
	}
	gate_set(srv, gpu, 0);
	log_info("daemon: region %llu on GPU %u %s after %llu us",
		 (unsigned long long)r->id, gpu, why,
		 (unsigned long long)(r->grant_us ? server_now_us() -
				      r->grant_us : 0));
	free(r);
	advance(srv, gpu);
}

static struct region *region_of_conn(struct server *srv, struct conn *c)
{
	struct region *r;

	for (size_t g = 0; g < ADMIT_MAX_GPUS; g++) {
		if (srv->regions[g].holder && srv->regions[g].holder->conn == c)
			return srv->regions[g].holder;
		TAILQ_FOREACH(r, &srv->regions[g].waiting, entry)
			if (r->conn == c)
				return r;
	}
	return NULL;
}

static bool pid_has_region(struct server *srv, pid_t pid)
{
	struct region *r;

	for (size_t g = 0; g < ADMIT_MAX_GPUS; g++) {
		if (srv->regions[g].holder && srv->regions[g].holder->pid == pid)
			return true;
		TAILQ_FOREACH(r, &srv->regions[g].waiting, entry)
			if (r->pid == pid)
				return true;
	}
	return false;
}

void region_enter(struct conn *c, const struct proto_msg *m)
{
	const struct proto_region_enter *e = &m->u.renter;
	struct server *srv = c->srv;
	struct job *j = NULL;
	struct region *r;
	struct conn *o;

	if (c->role != PROTO_ROLE_PRELOAD) {
		server_client_error(c, m->seq, EPERM, "only a preload may "
				    "enter a region");
		return;
	}
	if ((pid_t)e->pid != c->pid) {
		server_client_error(c, m->seq, EPERM, "pid %u is not this "
				    "connection's (%d)", e->pid, (int)c->pid);
		return;
	}
	if (region_of_conn(srv, c) || pid_has_region(srv, c->pid)) {
		server_client_error(c, m->seq, EBUSY, "pid %d has a region "
				    "already", (int)c->pid);
		return;
	}
	TAILQ_FOREACH(o, &srv->conns, entry)
		if (o->role == PROTO_ROLE_PRELOAD && o->reg_job &&
		    o->reg_pid == c->pid && (j = job_find(srv, o->reg_job)))
			break;
	if (!j || j->state != PROTO_JOB_RUNNING) {
		server_client_error(c, m->seq, ESRCH, "pid %d is not a task "
				    "kmuxd admitted", (int)c->pid);
		return;
	}
	if (e->gpu >= srv->ngpus || !(job_gpu_mask(srv, j) & bit(e->gpu))) {
		server_client_error(c, m->seq, EINVAL, "job %lld does not run "
				    "on GPU %u", (long long)j->id, e->gpu);
		return;
	}
	r = calloc(1, sizeof(*r));
	if (!r) {
		server_client_error(c, m->seq, ENOMEM, "out of memory");
		return;
	}
	r->conn = c;
	r->seq = m->seq;
	r->id = ++srv->next_region;
	r->pid = c->pid;
	db_proc_start_time(c->pid, &r->pid_start);
	r->job = j->id;
	r->gpu = e->gpu;
	r->state = REGION_WAITING;
	r->req_us = server_now_us();
	TAILQ_INSERT_TAIL(&srv->regions[e->gpu].waiting, r, entry);
	log_info("daemon: region %llu: pid %d (job %lld) asks for GPU %u",
		 (unsigned long long)r->id, (int)r->pid, (long long)j->id,
		 e->gpu);
	advance(srv, e->gpu);
}

void region_leave(struct conn *c, const struct proto_msg *m)
{
	struct region *r = region_of_conn(c->srv, c);

	if (!r) {
		server_client_error(c, m->seq, ENOENT, "no region to leave");
		return;
	}
	server_client_send(c, &(struct proto_msg){ .type = PROTO_OK,
						   .seq = m->seq });
	release(c->srv, r, "left");
}

/* Forget c among the DRAINED r still waits for; grant when none is left. */
static void ack(struct server *srv, struct region *r, struct conn *c)
{
	for (size_t i = 0; i < r->nacks; i++) {
		if (r->acks[i] == c) {
			r->acks[i] = r->acks[--r->nacks];
			if (r->nacks == 0)
				grant(srv, r);
			return;
		}
	}
}

void region_drained(struct conn *c, const struct proto_msg *m)
{
	struct server *srv = c->srv;

	/* A stale token (the region went meanwhile) is no error. */
	for (size_t g = 0; g < ADMIT_MAX_GPUS; g++) {
		struct region *r = srv->regions[g].holder;

		if (r && r->state == REGION_DRAINING &&
		    r->token == m->u.drained.token)
			ack(srv, r, c);
	}
}

void region_conn_gone(struct conn *c)
{
	struct server *srv = c->srv;
	struct region *r;

	c->reg_job = 0;		/* no longer anyone's peer */
	while ((r = region_of_conn(srv, c)))
		release(srv, r, "ended: its process hung up");
	for (size_t g = 0; g < ADMIT_MAX_GPUS; g++) {
		r = srv->regions[g].holder;
		if (r && r->state == REGION_DRAINING)
			ack(srv, r, c);
	}
}

static void on_region_tick(evutil_socket_t fd, short what, void *arg)
{
	struct server *srv = arg;
	uint64_t now = server_now_us();

	(void)fd;
	(void)what;
	for (uint32_t g = 0; g < ADMIT_MAX_GPUS; g++) {
		struct region *r = srv->regions[g].holder;

		if (!r)
			continue;
		if (r->state == REGION_DRAINING && now >= r->drain_until_us) {
			log_warn("daemon: region %llu: %zu task(s) did not "
				 "drain within %llu ms; going on",
				 (unsigned long long)r->id, r->nacks,
				 (unsigned long long)srv->region_drain_us /
				 1000);
			grant(srv, r);
		} else if (r->state == REGION_HELD && srv->region_max_us &&
			   now - r->grant_us > srv->region_max_us) {
			log_warn("daemon: region %llu: pid %d held GPU %u "
				 "longer than %llu ms: revoked",
				 (unsigned long long)r->id, (int)r->pid, g,
				 (unsigned long long)srv->region_max_us / 1000);
			server_client_error(r->conn, r->seq, ETIMEDOUT,
					    "the region on GPU %u lasted longer "
					    "than %llu ms and was revoked", g,
					    (unsigned long long)
					    srv->region_max_us / 1000);
			server_client_close(r->conn);
			release(srv, r, "revoked");
		} else if (!job_proc_alive(r->pid, r->pid_start, NULL)) {
			release(srv, r, "ended: its process died");
		}
	}
	/* Tasks (and threads) that came during a region keep off its cores. */
	region_cpus_update(srv);
	turns_tick(srv);
}

/* Thaw what a daemon before this one froze (it may have died mid-region). */
static void thaw_recorded(struct server *srv)
{
	struct db_frozen *fz = NULL;
	char err[ERRLEN];
	size_t n = 0;

	if (db_frozen_list(srv->db, &fz, &n, err, sizeof(err))) {
		log_error("daemon: cannot list frozen processes: %s", err);
		return;
	}
	for (size_t i = 0; i < n; i++) {
		/* A warning: it says a daemon died in a region. */
		log_warn("daemon: thawing pid %d%s%s, frozen by a daemon "
			 "before this one", (int)fz[i].pid,
			 fz[i].cgroup[0] ? " through cgroup " : "",
			 fz[i].cgroup);
		thaw(srv, fz[i].pid, fz[i].pid_start,
		     fz[i].cgroup[0] ? fz[i].cgroup : NULL);
	}
	free(fz);
}

int region_init(struct server *srv, char *err, size_t errlen)
{
	struct timeval tick = { 0, REGION_TICK_MS * 1000 };
	struct gates_header h = { GATES_MAGIC, GATES_VERSION, 0, 0 };
	void *p;
	int fd;

	for (size_t g = 0; g < ADMIT_MAX_GPUS; g++)
		TAILQ_INIT(&srv->regions[g].waiting);
	thaw_recorded(srv);
	snprintf(srv->gates_path, sizeof(srv->gates_path), "%s%s",
		 srv->paths.socket, GATES_SUFFIX);
	/* Opened in place, never replaced: preloads that mapped it from a
	 * daemon before this one see the gates this one opens. */
	fd = open(srv->gates_path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW,
		  srv->system ? 0644 : 0600);
	if (fd < 0 || ftruncate(fd, (off_t)GATES_FILE_SIZE)) {
		snprintf(err, errlen, "cannot create %s: %s", srv->gates_path,
			 strerror(errno));
		if (fd >= 0)
			close(fd);
		return -errno;
	}
	/* Every user's preload reads a system daemon's gates. */
	if (srv->system && fchmod(fd, 0644))
		log_warn("daemon: chmod %s: %s", srv->gates_path,
			 strerror(errno));
	p = mmap(NULL, GATES_FILE_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		 0);
	close(fd);
	if (p == MAP_FAILED) {
		snprintf(err, errlen, "cannot map %s: %s", srv->gates_path,
			 strerror(errno));
		return -ENOMEM;
	}
	srv->gates = p;
	h.daemon_pid = (uint32_t)getpid();
	h.max_ms = (uint32_t)(srv->region_max_us / 1000);
	memcpy(srv->gates, &h, sizeof(h));
	for (uint32_t g = 0; g < GATES_MAX_GPUS; g++) {
		gate_set(srv, g, 0);
		/* A daemon before this one may have left turns. */
		__atomic_store_n((uint32_t *)(srv->gates + gates_offset(g)) +
				 GATES_W_NPAUSED, 0, __ATOMIC_RELEASE);
	}
	srv->ev_region = event_new(srv->base, -1, EV_PERSIST, on_region_tick,
				   srv);
	if (!srv->ev_region || event_add(srv->ev_region, &tick)) {
		snprintf(err, errlen, "cannot set up the region timer");
		return -ENOMEM;
	}
	return 0;
}

/* After the connections are gone (which released every region). */
void region_free(struct server *srv)
{
	struct region *r;

	for (size_t g = 0; g < ADMIT_MAX_GPUS; g++) {
		if (srv->regions[g].holder)
			release(srv, srv->regions[g].holder, "ended: daemon "
				"exiting");
		while ((r = TAILQ_FIRST(&srv->regions[g].waiting)))
			release(srv, r, "dropped");
	}
	region_cpus_free(srv);
	turns_free(srv);
	if (srv->gates) {
		for (uint32_t g = 0; g < GATES_MAX_GPUS; g++)
			gate_set(srv, g, 0);
		munmap(srv->gates, GATES_FILE_SIZE);
		srv->gates = NULL;
	}
	if (srv->ev_region)
		event_free(srv->ev_region);
	srv->ev_region = NULL;
}
