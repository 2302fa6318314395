/*
 * server.c - owns kmuxd's life: start-up (directories, the locks that make
 * a second daemon on the same socket or state fail, the socket itself with
 * stale-socket replacement, the database, the GPUs, recovery), the event
 * loop with its signals and periodic tick, and shutdown.
 *
 * Start-up order matters: the socket lock is taken before anything is
 * touched, so a second daemon changes nothing; the socket is bound before
 * recovery so that clients queue up rather than start a daemon of their
 * own; readiness is reported (background mode) only once the socket
 * listens, which is what the CLI's autostart waits for.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>
#include <event2/listener.h>

#include "cli/spawn.h"
#include "cpulist.h"
#include "daemon.h"
#include "db.h"
#include "log.h"
#include "nvml.h"
#include "server.h"
#include "slurm-weight.h"

uint64_t server_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

void server_kick(struct server *srv)
{
	if (srv->ev_schedule)
		event_active(srv->ev_schedule, EV_TIMEOUT, 0);
}

void server_test_die(struct server *srv, const char *point)
{
	if (!srv->test_die_at || strcmp(srv->test_die_at, point))
		return;
	/* As a crash: no cleanup, no flush, the socket and locks left. */
	log_warn("daemon: KMUXD_TEST_DIE_AT=%s: killing myself", point);
	raise(SIGKILL);
}

/* --- locks ---------------------------------------------------------------- */

/*
 * Take the lock at path for the daemon's lifetime and write our pid in it.
 * -EADDRINUSE with the holder's pid in *holder when another daemon has it.
 */
static int lock_take(const char *path, int *fdp, long *holder, char *err,
		     size_t errlen)
{
	char buf[32];
	ssize_t n;
	int fd, r;

	*holder = 0;
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0) {
		r = -errno;
		snprintf(err, errlen, "cannot open %s: %s", path, strerror(-r));
		return r;
	}
	if (flock(fd, LOCK_EX | LOCK_NB)) {
		r = errno == EWOULDBLOCK ? -EADDRINUSE : -errno;
		n = pread(fd, buf, sizeof(buf) - 1, 0);
		if (n > 0) {
			buf[n] = '\0';
			*holder = strtol(buf, NULL, 10);
		}
		if (r != -EADDRINUSE)
			snprintf(err, errlen, "cannot lock %s: %s", path,
				 strerror(-r));
		close(fd);
		return r;
	}
	n = snprintf(buf, sizeof(buf), "%ld\n", (long)getpid());
	if (ftruncate(fd, 0) || pwrite(fd, buf, (size_t)n, 0) != n)
		log_warn("daemon: cannot write the pid to %s: %s", path,
			 strerror(errno));
	*fdp = fd;
	return 0;
}

/* --- the socket ----------------------------------------------------------- */

static int sockaddr_of(const char *path, struct sockaddr_un *sa)
{
	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	if (strlen(path) >= sizeof(sa->sun_path))
		return -ENAMETOOLONG;
	strcpy(sa->sun_path, path);
	return 0;
}

/*
 * What is at path now?  0: nothing (or a stale socket, removed); -EADDRINUSE:
 * a live listener; -EEXIST: something that is not a socket.
 */
static int socket_clear(const char *path, bool *stale, char *err,
			size_t errlen)
{
	struct sockaddr_un sa;
	struct stat st;
	int fd, r;

	if (lstat(path, &st)) {
		if (errno == ENOENT)
			return 0;
		r = -errno;
		snprintf(err, errlen, "%s: %s", path, strerror(-r));
		return r;
	}
	if (!S_ISSOCK(st.st_mode)) {
		snprintf(err, errlen, "%s exists and is not a socket: "
			 "refusing to replace it", path);
		return -EEXIST;
	}
	sockaddr_of(path, &sa);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		r = -errno;
		snprintf(err, errlen, "socket: %s", strerror(-r));
		return r;
	}
	r = connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0 ? 0 : -errno;
	close(fd);
	if (r == 0) {
		snprintf(err, errlen, "another kmuxd answers on %s", path);
		return -EADDRINUSE;
	}
	/* Nobody listens: a daemon died there (kill -9, a crash). */
	if (unlink(path) && errno != ENOENT) {
		r = -errno;
		snprintf(err, errlen, "cannot remove the stale socket %s: %s",
			 path, strerror(-r));
		return r;
	}
	*stale = true;
	return 0;
}

static int socket_listen(struct server *srv, int *fdp, char *err,
			 size_t errlen)
{
	const char *path = srv->paths.socket;
	/* Anyone may connect to a system daemon; SO_PEERCRED tells who. */
	mode_t mode = srv->system ? 0666 : 0600, old;
	struct sockaddr_un sa;
	int fd, r;

	r = socket_clear(path, &srv->replaced_stale, err, errlen);
	if (r)
		return r;
	if (sockaddr_of(path, &sa)) {
		snprintf(err, errlen, "socket path too long: %s", path);
		return -ENAMETOOLONG;
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0) {
		r = -errno;
		snprintf(err, errlen, "socket: %s", strerror(-r));
		return r;
	}
	old = umask(0777 & ~mode);
	r = bind(fd, (struct sockaddr *)&sa, sizeof(sa)) ? -errno : 0;
	umask(old);
	if (r) {
		snprintf(err, errlen, "cannot bind %s: %s", path, strerror(-r));
		goto err_close;
	}
	srv->socket_bound = true;
	if (chmod(path, mode) || listen(fd, 64)) {
		r = -errno;
		snprintf(err, errlen, "cannot listen on %s: %s", path,
			 strerror(-r));
		goto err_close;
	}
	*fdp = fd;
	return 0;

err_close:
	close(fd);
	return r;
}

/* --- events --------------------------------------------------------------- */

static void on_accept(struct evconnlistener *l, evutil_socket_t fd,
		      struct sockaddr *sa, int len, void *arg)
{
	(void)l;
	(void)sa;
	(void)len;
	server_client_accept(arg, fd);
}

static void on_accept_error(struct evconnlistener *l, void *arg)
{
	(void)l;
	(void)arg;
	/* EMFILE and friends: keep serving the connections we have. */
	log_warn("daemon: accept: %s", strerror(errno));
}

static void on_sigchld(evutil_socket_t sig, short what, void *arg)
{
	(void)sig;
	(void)what;
	job_reap(arg);
}

static void on_sigterm(evutil_socket_t sig, short what, void *arg)
{
	struct server *srv = arg;

	(void)what;
	log_info("daemon: signal %d, exiting (running jobs keep running)",
		 (int)sig);
	event_base_loopbreak(srv->base);
}

static void on_tick(evutil_socket_t fd, short what, void *arg)
{
	struct server *srv = arg;

	(void)fd;
	(void)what;
	job_end_flush(srv);
	job_attach_expire(srv);
	job_sample(srv);
	pressure_fake_used(srv);
	job_poll(srv);
	job_schedule(srv);
	pressure_check(srv);
	slurm_weight_tick(srv);
}

static void on_schedule(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	job_schedule(arg);
}

static void on_follow(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	job_feed_followers(arg);
}

static int events_init(struct server *srv, int lfd, char *err, size_t errlen)
{
	struct timeval tick = { 0, SERVER_TICK_MS * 1000 };

	srv->base = event_base_new();
	if (!srv->base) {
		close(lfd);
		snprintf(err, errlen, "cannot create the event loop");
		return -ENOMEM;
	}
	srv->listener = evconnlistener_new(srv->base, on_accept, srv,
					   LEV_OPT_CLOSE_ON_FREE |
					   LEV_OPT_CLOSE_ON_EXEC, -1, lfd);
	if (!srv->listener) {
		close(lfd);
		goto err_nomem;
	}
	evconnlistener_set_error_cb(srv->listener, on_accept_error);
	srv->ev_sigchld = evsignal_new(srv->base, SIGCHLD, on_sigchld, srv);
	srv->ev_sigterm = evsignal_new(srv->base, SIGTERM, on_sigterm, srv);
	srv->ev_sigint = evsignal_new(srv->base, SIGINT, on_sigterm, srv);
	srv->ev_tick = event_new(srv->base, -1, EV_PERSIST, on_tick, srv);
	srv->ev_schedule = event_new(srv->base, -1, 0, on_schedule, srv);
	srv->ev_follow = event_new(srv->base, -1, EV_PERSIST, on_follow, srv);
	if (!srv->ev_sigchld || !srv->ev_sigterm || !srv->ev_sigint ||
	    !srv->ev_tick || !srv->ev_schedule || !srv->ev_follow)
		goto err_nomem;
	if (event_add(srv->ev_sigchld, NULL) || event_add(srv->ev_sigterm, NULL) ||
	    event_add(srv->ev_sigint, NULL) || event_add(srv->ev_tick, &tick))
		goto err_nomem;
	return 0;

err_nomem:
	snprintf(err, errlen, "cannot set up the event loop");
	return -ENOMEM;
}

/* --- start-up and shutdown ------------------------------------------------ */

/*
 * No GPUs: kmuxd runs on (ps, wait, cancel and logs keep working, running
 * jobs are watched), but admits nothing: submissions are refused with the
 * reason and queued jobs are held, not failed.  Loud, because a driver
 * that broke (an upgrade without a reboot: "Driver/library version
 * mismatch") looks like this, and nothing runs until kmuxd restarts.
 */
static void server_log_no_gpus(struct server *srv)
{
	log_error("daemon: no GPUs: %s.  kmuxd runs but admits nothing: new "
		  "jobs are refused and queued ones stay queued (held) until "
		  "a kmuxd that finds GPUs starts%s", srv->nvml_why,
		  nvml_is_fake(srv->nvml) ? "" :
		  "; restart kmuxd once the driver works (KMUX_FAKE_GPUS=N:MEM "
		  "simulates GPUs)");
}

static int gpus_init(struct server *srv, char *err, size_t errlen)
{
	struct nvml_sample s;
	int r;

	r = nvml_open(&srv->nvml, srv->nvml_why, sizeof(srv->nvml_why));
	if (r) {
		snprintf(err, errlen, "%s", r == -ENOMEM ? "out of memory" :
			 srv->nvml_why);
		return r;
	}
	srv->ngpus = nvml_count(srv->nvml);
	for (size_t i = 0; i < srv->ngpus; i++) {
		struct admit_gpu *g = &srv->gpus[i];

		memset(g, 0, sizeof(*g));
		g->index = (uint32_t)i;
		if (nvml_sample(srv->nvml, (uint32_t)i, &s) == 0) {
			g->mem_total = s.mem_total;
			if (srv->gpu_mem_cap && g->mem_total > srv->gpu_mem_cap)
				g->mem_total = srv->gpu_mem_cap;
			admit_gpu_sample(g, s.util, s.mem_used, 0, &srv->policy);
			g->util_valid = s.util_valid;
		}
	}
	/* Before the log file takes over: on the starter's terminal. */
	if (!srv->ngpus)
		server_log_no_gpus(srv);
	return 0;
}

static int db_init(struct server *srv, char *err, size_t errlen)
{
	const char *cap = getenv("KMUX_DB_MAX_PAGES");
	const char *full = getenv("KMUX_DB_FULL");
	char dberr[512];
	int r;

	snprintf(srv->db_path, sizeof(srv->db_path), "%s/%s",
		 srv->paths.state_dir, PATHS_DB_NAME);
	/* Test knob: while this file exists the disk is full (db-full.c). */
	if (full && *full) {
		r = db_full_set(full, dberr, sizeof(dberr));
		if (r) {
			snprintf(err, errlen, "KMUX_DB_FULL: %s", dberr);
			return r;
		}
	}
	r = db_open(srv->db_path, 0, &srv->db, dberr, sizeof(dberr));
	if (r) {
		snprintf(err, errlen, "cannot open the database: %s", dberr);
		return r;
	}
	/* Test knob: a small cap makes writes fail as on a full disk. */
	if (cap && *cap) {
		r = db_set_max_pages(srv->db, (uint32_t)strtoul(cap, NULL, 10),
				     dberr, sizeof(dberr));
		if (r)
			log_warn("daemon: KMUX_DB_MAX_PAGES: %s", dberr);
	}
	return 0;
}

static int dirs_init(struct server *srv, char *err, size_t errlen)
{
	int r;

	r = paths_make_dir(srv->paths.state_dir, 0700, srv->uid, true, err,
			   errlen);
	if (r)
		return r;
	snprintf(srv->log_dir, sizeof(srv->log_dir), "%s/logs",
		 srv->paths.state_dir);
	return paths_make_dir(srv->log_dir, 0700, srv->uid, true, err, errlen);
}

/* The socket's lock: one daemon per socket. */
static int socket_lock(struct server *srv, char *err, size_t errlen)
{
	char path[PATH_MAX + 16];
	long holder;
	int r;

	snprintf(path, sizeof(path), "%s.lock", srv->paths.socket);
	r = lock_take(path, &srv->lock_fd, &holder, err, errlen);
	if (r == -EADDRINUSE)
		snprintf(err, errlen, "kmuxd is already running on %s "
			 "(pid %ld)", srv->paths.socket, holder);
	return r;
}

/* The state's lock: two daemons on one database would run jobs twice. */
static int state_lock(struct server *srv, char *err, size_t errlen)
{
	char path[PATH_MAX + 16];
	long holder;
	int r;

	snprintf(path, sizeof(path), "%s/lock", srv->paths.state_dir);
	r = lock_take(path, &srv->state_lock_fd, &holder, err, errlen);
	if (r == -EADDRINUSE)
		snprintf(err, errlen, "the state directory %s is in use by "
			 "another kmuxd (pid %ld)", srv->paths.state_dir,
			 holder);
	return r;
}

static void library_init(struct server *srv)
{
	char why[PATH_MAX + 128];

	if (spawn_find_library(srv->library, sizeof(srv->library), why,
			       sizeof(why))) {
		srv->library[0] = '\0';
		log_warn("daemon: %s; jobs will run without the preload", why);
	}
}

/*
 * --mps: up before the socket listens, so no job is ever admitted outside
 * it.  Without --mps, a pipe directory an earlier kmuxd --mps left is only
 * mentioned: its daemon may still serve that kmuxd's jobs.
 */
static int mps_init(struct server *srv, const struct server_opts *o,
		    char *err, size_t errlen)
{
	struct stat st;
	int r;

	if (mps_set_dirs(&srv->mps, srv->paths.socket)) {
		snprintf(err, errlen, "MPS directory path too long for %s",
			 srv->paths.socket);
		return -ENAMETOOLONG;
	}
	if (!o->mps) {
		srv->mps.leftover = stat(srv->mps.pipe, &st) == 0;
		return 0;
	}
	r = mps_find_control(o->mps_control, getenv("PATH"),
			     srv->mps.control, sizeof(srv->mps.control), err,
			     errlen);
	if (r)
		return r;
	return mps_start(&srv->mps, (unsigned)srv->uid, err, errlen);
}

static int server_init(struct server *srv, const struct server_opts *o,
		       char *err, size_t errlen)
{
	int lfd = -1, r;

	srv->lock_fd = srv->state_lock_fd = -1;
	srv->system = o->system;
	srv->uid = getuid();
	srv->kill_grace_s = o->kill_grace_s;
	srv->test_die_at = getenv("KMUXD_TEST_DIE_AT");
	srv->region_max_us = (uint64_t)(o->region_max_s * 1e6);
	srv->region_drain_us = (uint64_t)(o->region_drain_s * 1e6);
	srv->region_freeze = o->region_freeze;
	srv->gpu_mem_cap = o->gpu_mem;
	srv->region_cpus_on = o->region_cpus_on;
	srv->region_cpus = o->region_cpus;
	if (o->cgroup_root)
		snprintf(srv->cgroup_root, sizeof(srv->cgroup_root), "%s",
			 o->cgroup_root);
	else if (region_cgroup_default_root(srv->cgroup_root,
					    sizeof(srv->cgroup_root)))
		srv->cgroup_root[0] = '\0';	/* no cgroup2: SIGSTOP only */
	TAILQ_INIT(&srv->queued);
	TAILQ_INIT(&srv->running);
	TAILQ_INIT(&srv->unrecorded);
	TAILQ_INIT(&srv->conns);
	TAILQ_INIT(&srv->waiters);
	TAILQ_INIT(&srv->followers);
	admit_policy_default(&srv->policy);
	srv->policy.placement = (enum admit_placement_kind)o->placement;
	if (o->busy_max > 0)
		srv->policy.busy_max = o->busy_max;
	if (o->default_busy > 0)
		srv->policy.default_busy = o->default_busy;
	if (o->guess_frac > 0)
		srv->policy.guess_frac = o->guess_frac;
	if (o->grow_wait_s >= 0)
		srv->policy.grow_wait_us = (uint64_t)(o->grow_wait_s * 1e6);
	if (o->slice_waits >= 0)
		srv->policy.slice_waits = o->slice_waits;
	if (admit_policy_check(&srv->policy)) {
		snprintf(err, errlen, "bad admission policy (placement %d, "
			 "busy-max %g, default-busy %g, guess %g)",
			 o->placement, srv->policy.busy_max,
			 srv->policy.default_busy, srv->policy.guess_frac);
		return -EINVAL;
	}
	if (o->system && srv->uid != 0)
		log_warn("daemon: system mode without root: only uid %u's "
			 "jobs can run", (unsigned)srv->uid);

	/* The socket's directory first: its lock file lives there. */
	r = paths_make_dir(srv->paths.run_dir, srv->system ? 0755 : 0700,
			   srv->uid, !srv->system, err, errlen);
	if (r)
		return r;
	r = socket_lock(srv, err, errlen);
	if (r)
		return r;
	r = dirs_init(srv, err, errlen);
	if (r)
		return r;
	r = state_lock(srv, err, errlen);
	if (r)
		return r;
	r = db_init(srv, err, errlen);
	if (r)
		return r;
	r = gpus_init(srv, err, errlen);
	if (r)
		return r;
	library_init(srv);
	r = mps_init(srv, o, err, errlen);
	if (r)
		return r;
	/* Co-located tasks share each GPU through MPS: no time slicing. */
	srv->policy.mps = srv->mps.on;
	srv->out.cap = PROTO_MAX_MSG;
	srv->out.data = malloc(srv->out.cap);
	srv->readbuf = malloc(SERVER_LOG_CHUNK);
	if (!srv->out.data || !srv->readbuf) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	r = socket_listen(srv, &lfd, err, errlen);
	if (r)
		return r;
	r = events_init(srv, lfd, err, errlen);
	if (r)
		return r;
	r = job_recover(srv, err, errlen);
	if (r)
		return r;
	r = region_init(srv, err, errlen);
	if (r)
		return r;
	if (o->slurm_node) {
		r = slurm_weight_init(srv, o->slurm_node, o->slurm_interval_s,
				      err, errlen);
		if (r)
			return r;
	}
	server_kick(srv);
	return 0;
}

static void server_free(struct server *srv)
{
	/* Jobs keep running when kmuxd exits; MPS's quit lets its clients
	 * finish, so this stops only what no job uses any more. */
	mps_stop(&srv->mps);
	server_client_free_all(srv);
	region_free(srv);
	job_free_all(srv);
	slurm_weight_free(srv);
	if (srv->listener)
		evconnlistener_free(srv->listener);
	/* Only our own socket: never one another daemon bound. */
	if (srv->socket_bound)
		unlink(srv->paths.socket);
	if (srv->ev_sigchld)
		event_free(srv->ev_sigchld);
	if (srv->ev_sigterm)
		event_free(srv->ev_sigterm);
	if (srv->ev_sigint)
		event_free(srv->ev_sigint);
	if (srv->ev_tick)
		event_free(srv->ev_tick);
	if (srv->ev_schedule)
		event_free(srv->ev_schedule);
	if (srv->ev_follow)
		event_free(srv->ev_follow);
	if (srv->base)
		event_base_free(srv->base);
	db_close(srv->db);
	nvml_close(srv->nvml);
	free(srv->out.data);
	free(srv->readbuf);
	if (srv->state_lock_fd >= 0)
		close(srv->state_lock_fd);
	if (srv->lock_fd >= 0)
		close(srv->lock_fd);
}

/*
 * Background mode: fork; the parent waits until the child says it listens
 * (one byte on a pipe) and exits 0, or exits with the child's status when
 * the child failed (it printed why on the inherited stderr).
 */
static int background_fork(int *ready_fd)
{
	int fds[2], st;
	char c;
	ssize_t n;
	pid_t pid;

	if (pipe2(fds, O_CLOEXEC)) {
		fprintf(stderr, "kmux: daemon: pipe: %s\n", strerror(errno));
		return -1;
	}
	pid = fork();
	if (pid < 0) {
		fprintf(stderr, "kmux: daemon: fork: %s\n", strerror(errno));
		return -1;
	}
	if (pid == 0) {
		close(fds[0]);
		/* Its own session: no terminal, no job control signals. */
		setsid();
		*ready_fd = fds[1];
		return 0;
	}
	close(fds[1]);
	do
		n = read(fds[0], &c, 1);
	while (n < 0 && errno == EINTR);
	close(fds[0]);
	if (n == 1)
		_exit(0);
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	_exit(WIFEXITED(st) && WEXITSTATUS(st) ? WEXITSTATUS(st) : 1);
}

/* Detach stdio: the daemon's log is <state>/kmuxd.log from here on. */
static void background_ready(struct server *srv, int ready_fd)
{
	char path[PATH_MAX + 16];
	int fd;

	snprintf(path, sizeof(path), "%s/kmuxd.log", srv->paths.state_dir);
	fd = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (fd >= 0) {
		dup2(fd, STDIN_FILENO);
		close(fd);
	}
	fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW,
		  0600);
	if (fd >= 0) {
		dup2(fd, STDOUT_FILENO);
		dup2(fd, STDERR_FILENO);
		close(fd);
	}
	if (write(ready_fd, "R", 1) != 1) {
		/* The parent is gone: nobody waits for the news. */
	}
	close(ready_fd);
}

static void server_log_regions(struct server *srv)
{
	char cpus[256] = "none";

	if (srv->region_cpus_on)
		cpulist_format(&srv->region_cpus, cpus, sizeof(cpus));
	log_info("daemon: regions: freeze %s (cgroup root %s), reserved "
		 "CPUs %s", srv->region_freeze ? "on" : "off",
		 srv->cgroup_root[0] ? srv->cgroup_root : "none: SIGSTOP",
		 cpus);
}

/* After the log file took over: start-up's INFO goes nowhere before. */
static void server_log_mps(struct server *srv)
{
	const struct mps *m = &srv->mps;

	if (m->on && m->adopted)
		log_info("daemon: mps: re-using the MPS control daemon that "
			 "answers in %s (an earlier kmuxd's); jobs run as its "
			 "clients", m->pipe);
	else if (m->on)
		log_info("daemon: mps: started %s -d; jobs run as clients of "
			 "the MPS daemon in %s (logs in %s)", m->control,
			 m->pipe, m->log);
	else if (m->leftover)
		log_info("daemon: mps: %s is left from a kmuxd --mps; jobs "
			 "started now do not use it (stop its daemon, if any, "
			 "with: echo quit | CUDA_MPS_PIPE_DIRECTORY=%s "
			 MPS_CONTROL_NAME ")", m->pipe, m->pipe);
}

int server_main(const struct server_opts *o)
{
	struct server srv;
	char err[PATH_MAX + 256];
	int ready_fd = -1, r, status = 1;

	memset(&srv, 0, sizeof(srv));
	/*
	 * Started in the background (by hand or by a client's autostart),
	 * only trouble goes to the terminal until the log file takes over.
	 */
	kmux_log_level = o->foreground || o->log_level < KMUX_LOG_WARN ?
			 o->log_level : KMUX_LOG_WARN;
	r = paths_resolve(&srv.paths, o->system, o->socket, o->state_dir, err,
			  sizeof(err));
	if (r) {
		fprintf(stderr, "kmux: daemon: %s\n", err);
		return 1;
	}
	if (!o->foreground && background_fork(&ready_fd))
		return 1;
	signal(SIGPIPE, SIG_IGN);
	signal(SIGHUP, SIG_IGN);
	r = server_init(&srv, o, err, sizeof(err));
	if (r) {
		fprintf(stderr, "kmux: daemon: %s\n", err);
		/* An adopted MPS daemon serves an earlier kmuxd's jobs. */
		if (srv.mps.adopted)
			srv.mps.on = false;
		goto out;
	}
	if (ready_fd >= 0)
		background_ready(&srv, ready_fd);
	ready_fd = -1;
	kmux_log_level = o->log_level;
	log_info("daemon: pid %ld listening on %s (%s mode), state in %s",
		 (long)getpid(), srv.paths.socket,
		 srv.system ? "system" : "per-user", srv.paths.state_dir);
	if (srv.replaced_stale)
		log_info("daemon: replaced the stale socket of a daemon that "
			 "died");
	log_info("daemon: %zu GPU(s) from %s; recovered %zu queued and %zu "
		 "running job(s), %zu lost while no daemon ran", srv.ngpus,
		 nvml_source(srv.nvml), srv.recovered.queued,
		 srv.recovered.running_kept, srv.recovered.lost);
	/* Again, for the log file (the first went to the terminal). */
	if (!srv.ngpus && !o->foreground)
		server_log_no_gpus(&srv);
	log_info("daemon: placement %s, busy-max %g, default-busy %g, "
		 "guess %g, grow-wait %g s, slice-waits %g%s",
		 admit_placement_name(srv.policy.placement),
		 srv.policy.busy_max, srv.policy.default_busy,
		 srv.policy.guess_frac, srv.policy.grow_wait_us / 1e6,
		 srv.policy.slice_waits,
		 srv.policy.mps ? " (off: MPS shares the GPUs)" : "");
	server_log_regions(&srv);
	server_log_mps(&srv);
	if (event_base_dispatch(srv.base) < 0)
		log_error("daemon: event loop failed");
	else
		status = 0;
out:
	server_free(&srv);
	return status;
}
