/*
 * bench-serve.c - owns the persistent worker pool, the job queue and the
 * client connections of `kmux bench serve` / `bench run --workers` (see
 * bench-serve.h).
 *
 * One thread, one poll(): a signalfd (children, stop signals), the
 * listening socket, each worker's control socket and each client.  Every
 * byte a client sends is untrusted: one request line per connection, at
 * most BJOB_MAX_LINE bytes; a bad one gets {"error": ...} and the
 * connection is closed, the engine is unaffected.  The connection stays
 * open until the job's record is sent: its close (POLLHUP, not a mere
 * shutdown of the client's writing side) cancels the job.  The workers
 * are our own children, but what they send is checked too: a worker that
 * says something unexpected is killed (and replaced).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "bench-serve.h"
#include "cmd.h"

#define BSRV_MAX_CLIENTS 128
#define BSRV_WORKER_BUF 65536
/* A worker that dies before it is ready this many times in a row: give up. */
#define BSRV_MAX_START_FAILURES 3
#define BSRV_KILL_GRACE_S 2.0
#define BSRV_WORKER_FD 3
#define BSRV_CLIENT_BUF 4096	/* a request's first buffer; grows */

struct bsrv_client;

struct bsrv_job {
	struct bjob job;
	char *cmd;
	long i;
	struct bsrv_client *client;	/* waiting for the record; or NULL */
	double queued, start;
	int worker;			/* -1: a plain process */
	pid_t worker_pid, pid;		/* pid: of a plain job */
	char *out, *err;
	bool cancelled;			/* its client left */
	struct bsrv_job *next;
};

enum worker_state { W_DOWN, W_STARTING, W_IDLE, W_BUSY };

struct bsrv_worker {
	pid_t pid;
	int fd;
	enum worker_state state;
	struct bsrv_job *job;
	char buf[BSRV_WORKER_BUF];
	size_t len;
};

struct bsrv_client {
	int fd;
	char *buf;
	size_t len, cap;
	bool half_closed;		/* sent its request and shut down */
	struct bsrv_job *job;
	struct bsrv_client *next;
};

struct bsrv {
	struct bsrv_opts o;
	struct bsrv_worker *w;
	struct bsrv_job *head, *tail;	/* queued */
	struct bsrv_job **plain;	/* running plain jobs, concurrency */
	struct bsrv_client *clients;
	int nclients;
	int sigfd;
	sigset_t oldmask;
	int running;
	long queued, failed, next_i;
	int start_failures;
	bool broken, warned_cuda;
	int stop;			/* the signal, or -1: done */
	double kill_at;
	bool killed;
	double t0;
};

static void job_free(struct bsrv_job *j)
{
	if (!j)
		return;
	bjob_free(&j->job);
	free(j->cmd);
	free(j->out);
	free(j->err);
	free(j);
}

static void job_cancel(struct bsrv *s, struct bsrv_job *j);

/* cancel: its job, if it has one, is no one's any more: cancel it. */
static void client_drop(struct bsrv *s, struct bsrv_client *c, bool cancel)
{
	struct bsrv_client **p;
	struct bsrv_job *j = c->job;

	for (p = &s->clients; *p && *p != c; p = &(*p)->next)
		;
	if (*p)
		*p = c->next;
	if (j) {
		c->job = NULL;
		j->client = NULL;
		if (cancel)
			job_cancel(s, j);
	}
	close(c->fd);
	free(c->buf);
	free(c);
	s->nclients--;
}

static void client_close(struct bsrv *s, struct bsrv_client *c)
{
	client_drop(s, c, true);
}

/*
 * One non-blocking send: the reply is one line, far below a socket's
 * buffer; a client that left or does not read loses it.
 */
static void client_reply(struct bsrv *s, struct bsrv_client *c,
			 const char *line)
{
	if (line && send(c->fd, line, strlen(line), MSG_NOSIGNAL |
			 MSG_DONTWAIT) < 0 && errno != EPIPE)
		fprintf(stderr, "kmux: bench: reply to a client: %s\n",
			strerror(errno));
	client_close(s, c);
}

static void client_error(struct bsrv *s, struct bsrv_client *c,
			 const char *msg)
{
	char *line = bjob_error_reply(msg);

	client_reply(s, c, line);
	free(line);
}

/* The job ended with wait status st (error: it did not run). */
static void job_end(struct bsrv *s, struct bsrv_job *j, int st,
		    const char *error)
{
	double now = cmd_monotonic_s();
	struct bjob_result r = {
		.i = j->i, .cmd = j->cmd, .status = st,
		.start_s = (j->start ? j->start : now) - s->t0,
		.wall_s = j->start ? now - j->start : 0,
		.queue_s = (j->start ? j->start : now) - j->queued,
		.worker = j->worker, .worker_pid = j->worker_pid,
		.out = j->out, .err = j->err, .error = error,
	};
	char *rec = bjob_record(&r);

	if (!rec)
		fprintf(stderr, "kmux: bench: out of memory for job %ld's "
			"record\n", j->i);
	if (st != 0 || error)
		s->failed++;
	if (rec && s->o.done)
		s->o.done(s->o.arg, &r, rec);
	if (j->client) {
		struct bsrv_client *c = j->client;

		c->job = NULL;	/* it ended: closing c cancels nothing */
		j->client = NULL;
		client_reply(s, c, rec);
	}
	free(rec);
	job_free(j);
}

static int set_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	return fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) ? -errno : 0;
}

/* In a child: the signal mask and dispositions kmux found. */
static void child_signals(const struct bsrv *s)
{
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	signal(SIGHUP, SIG_DFL);
	signal(SIGPIPE, SIG_DFL);
	sigprocmask(SIG_SETMASK, &s->oldmask, NULL);
}

static void child_stdin_null(void)
{
	int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);

	if (fd >= 0 && fd != STDIN_FILENO)
		dup2(fd, STDIN_FILENO);
}

static void fail_queued_python(struct bsrv *s, const char *why)
{
	struct bsrv_job **p = &s->head, *j;

	s->tail = NULL;
	while ((j = *p)) {
		if (j->job.python) {
			*p = j->next;
			s->queued--;
			job_end(s, j, 127 << 8, why);
		} else {
			s->tail = j;
			p = &j->next;
		}
	}
}

static int worker_start(struct bsrv *s, int k)
{
	struct bsrv_worker *w = &s->w[k];
	int sv[2];
	pid_t pid;

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv)) {
		fprintf(stderr, "kmux: bench: socketpair for worker %d: %s\n",
			k, strerror(errno));
		return -errno;
	}
	pid = fork();
	if (pid < 0) {
		fprintf(stderr, "kmux: bench: fork of worker %d: %s\n", k,
			strerror(errno));
		close(sv[0]);
		close(sv[1]);
		if (++s->start_failures >= BSRV_MAX_START_FAILURES) {
			s->broken = true;
			fail_queued_python(s, "no worker could start");
		}
		return -EAGAIN;
	}
	if (pid == 0) {
		char fdenv[32], idx[48], **env;
		size_t n = 0;
		char *argv[] = { (char *)s->o.python, (char *)s->o.worker_py,
				 NULL };

		setpgid(0, 0);
		child_signals(s);
		if (sv[1] == BSRV_WORKER_FD)
			fcntl(sv[1], F_SETFD, 0);
		else if (dup2(sv[1], BSRV_WORKER_FD) < 0)
			_exit(126);
		child_stdin_null();
		while (s->o.env[n])
			n++;
		env = calloc(n + 3, sizeof(*env));
		if (!env)
			_exit(126);
		memcpy(env, s->o.env, n * sizeof(*env));
		snprintf(fdenv, sizeof(fdenv), "KMUX_WORKER_FD=%d",
			 BSRV_WORKER_FD);
		snprintf(idx, sizeof(idx), "KMUX_WORKER_INDEX=%d", k);
		env[n] = fdenv;
		env[n + 1] = idx;
		execvpe(argv[0], argv, env);
		fprintf(stderr, "kmux: bench: cannot run %s: %s\n", argv[0],
			strerror(errno));
		_exit(127);
	}
	setpgid(pid, pid);
	close(sv[1]);
	set_nonblock(sv[0]);
	w->pid = pid;
	w->fd = sv[0];
	w->state = W_STARTING;
	w->job = NULL;
	w->len = 0;
	return 0;
}

/* The environment a job brings (NULL: the workers' own). */
static char *const *job_env(const struct bsrv *s, const struct bsrv_job *j)
{
	return j->job.env ? j->job.env : s->o.job_env;
}

static int plain_start(struct bsrv *s, struct bsrv_job *j)
{
	pid_t pid = fork();

	if (pid < 0)
		return -errno;
	if (pid == 0) {
		char *const *env = s->o.env;

		/* One thread: malloc is safe here. */
		if (job_env(s, j) &&
		    !(env = bjob_env_merge(job_env(s, j), s->o.env))) {
			fprintf(stderr, "kmux: bench: out of memory for the "
				"environment of job %ld\n", j->i);
			_exit(126);
		}
		setpgid(0, 0);
		child_signals(s);
		child_stdin_null();
		if (j->out) {
			int o = open(j->out, O_WRONLY | O_CREAT | O_TRUNC |
				     O_CLOEXEC, 0644);
			int e = open(j->err, O_WRONLY | O_CREAT | O_TRUNC |
				     O_CLOEXEC, 0644);

			if (o < 0 || e < 0 || dup2(o, 1) < 0 ||
			    dup2(e, 2) < 0) {
				fprintf(stderr, "kmux: bench: cannot open %s: "
					"%s\n", o < 0 ? j->out : j->err,
					strerror(errno));
				_exit(126);
			}
		}
		if (j->job.cwd && chdir(j->job.cwd)) {
			fprintf(stderr, "kmux: bench: cannot enter %s: %s\n",
				j->job.cwd, strerror(errno));
			_exit(126);
		}
		execvpe(j->job.argv[0], j->job.argv, (char **)env);
		fprintf(stderr, "kmux: bench: cannot run %s: %s\n",
			j->job.argv[0], strerror(errno));
		_exit(errno == ENOENT ? 127 : 126);
	}
	setpgid(pid, pid);
	j->pid = pid;
	return 0;
}

static int worker_send(struct bsrv *s, int k, struct bsrv_job *j)
{
	cJSON *o = cJSON_CreateObject(), *a = cJSON_CreateStringArray(
		(const char *const *)j->job.argv, j->job.argc);
	char *const *env = job_env(s, j);
	char *text = NULL, *line = NULL;
	int r = -ENOMEM, n = 0;
	size_t off = 0, len;

	if (!o || !a || !cJSON_AddItemToObject(o, "argv", a))
		goto out_a;
	a = NULL;
	/* The worker applies it, but for the variables it keeps its own of
	 * (bjob_env_kept, worker.py's KEPT_ENV). */
	if (env) {
		while (env[n])
			n++;
		a = cJSON_CreateStringArray((const char *const *)env, n);
		if (!a || !cJSON_AddItemToObject(o, "env", a))
			goto out_a;
		a = NULL;
	}
	if (!cJSON_AddNumberToObject(o, "i", (double)j->i) ||
	    !(j->job.cwd ? cJSON_AddStringToObject(o, "cwd", j->job.cwd) :
	      cJSON_AddNullToObject(o, "cwd")) ||
	    !(j->out ? cJSON_AddStringToObject(o, "out", j->out) :
	      cJSON_AddNullToObject(o, "out")) ||
	    !(j->err ? cJSON_AddStringToObject(o, "err", j->err) :
	      cJSON_AddNullToObject(o, "err")))
		goto out;
	text = cJSON_PrintUnformatted(o);
	if (!text || asprintf(&line, "%s\n", text) < 0) {
		line = NULL;
		goto out;
	}
	/* An idle worker reads at once (all of it, an environment of a
	 * megabyte too): block briefly. */
	len = strlen(line);
	while (off < len) {
		ssize_t n = send(s->w[k].fd, line + off, len - off,
				 MSG_NOSIGNAL);

		if (n < 0 && errno == EAGAIN) {
			poll(&(struct pollfd){ .fd = s->w[k].fd,
					       .events = POLLOUT }, 1, 100);
			continue;
		}
		if (n < 0) {
			r = -errno;
			goto out;
		}
		off += (size_t)n;
	}
	r = 0;
out:
	free(line);
	free(text);
out_a:
	cJSON_Delete(a);
	cJSON_Delete(o);
	return r;
}

static int plain_slot(struct bsrv *s)
{
	for (int k = 0; k < s->o.concurrency; k++)
		if (!s->plain[k])
			return k;
	return -1;
}

/* Start queued jobs, in order, while they fit. */
static void dispatch(struct bsrv *s)
{
	while (s->head && s->running < s->o.concurrency && !s->stop) {
		struct bsrv_job *j = s->head;
		int k = -1, r;

		if (j->job.python && s->o.workers > 0) {
			for (int i = 0; i < s->o.workers; i++)
				if (s->w[i].state == W_IDLE) {
					k = i;
					break;
				}
			if (k < 0)
				return;	/* FIFO: it waits for a worker */
		}
		s->head = j->next;
		if (!s->head)
			s->tail = NULL;
		s->queued--;
		j->next = NULL;
		j->start = cmd_monotonic_s();
		if (k >= 0) {
			j->worker = k;
			j->worker_pid = s->w[k].pid;
			r = worker_send(s, k, j);
			if (r == 0) {
				s->w[k].state = W_BUSY;
				s->w[k].job = j;
				s->running++;
				continue;
			}
			/* Its socket is broken: it is dying; retry later. */
			kill(-s->w[k].pid, SIGKILL);
			s->w[k].state = W_DOWN;
			j->start = 0;
			j->worker = -1;
			j->worker_pid = 0;
			j->next = s->head;
			s->head = j;
			if (!s->tail)
				s->tail = j;
			s->queued++;
			return;
		}
		r = plain_start(s, j);
		if (r) {
			fprintf(stderr, "kmux: bench: fork: %s\n",
				strerror(-r));
			job_end(s, j, 127 << 8, "cannot fork");
			continue;
		}
		s->plain[plain_slot(s)] = j;
		s->running++;
	}
}

/* A job of jb (taken over), not queued yet; NULL on ENOMEM. */
static struct bsrv_job *job_new(struct bjob *jb, const char *cmd, long i)
{
	struct bsrv_job *j = calloc(1, sizeof(*j));

	if (!j || !(j->cmd = strdup(cmd)))
		goto nomem;
	j->job = *jb;
	memset(jb, 0, sizeof(*jb));
	j->i = i;
	j->worker = -1;
	j->queued = cmd_monotonic_s();
	if (j->job.out_dir &&
	    (asprintf(&j->out, "%s/%ld.out", j->job.out_dir, i) < 0 ||
	     asprintf(&j->err, "%s/%ld.err", j->job.out_dir, i) < 0)) {
		j->out = j->err = NULL;
		goto nomem;
	}
	return j;
nomem:
	if (j)
		job_free(j);
	else
		bjob_free(jb);
	return NULL;
}

/* Queue j, or end it at once when no worker can run it: true if queued. */
static bool job_queue(struct bsrv *s, struct bsrv_job *j)
{
	if (j->job.python && s->o.workers > 0 && s->broken) {
		job_end(s, j, 127 << 8, "no worker could start");
		return false;
	}
	if (s->tail)
		s->tail->next = j;
	else
		s->head = j;
	s->tail = j;
	s->queued++;
	return true;
}

int bsrv_add(struct bsrv *s, struct bjob *jb, const char *cmd, long i)
{
	struct bsrv_job *j = job_new(jb, cmd, i);

	if (!j)
		return -ENOMEM;
	job_queue(s, j);
	return 0;
}

static void worker_message(struct bsrv *s, int k, const char *line)
{
	struct bsrv_worker *w = &s->w[k];
	cJSON *m = cJSON_Parse(line);
	const cJSON *ready = cJSON_GetObjectItemCaseSensitive(m, "ready");
	const cJSON *i = cJSON_GetObjectItemCaseSensitive(m, "i");
	const cJSON *ex = cJSON_GetObjectItemCaseSensitive(m, "exit");

	if (w->state == W_STARTING && cJSON_IsTrue(ready)) {
		const cJSON *cuda = cJSON_GetObjectItemCaseSensitive(m, "cuda");
		const char *c = cJSON_IsString(cuda) ? cuda->valuestring : "?";

		if (strcmp(c, "torch") && strcmp(c, "driver") &&
		    !s->warned_cuda) {
			fprintf(stderr, "kmux: bench: worker %d has no CUDA "
				"context (%s): its jobs will create their own\n",
				k, c);
			s->warned_cuda = true;
		}
		w->state = W_IDLE;
		s->start_failures = 0;
	} else if (w->state == W_BUSY && w->job && cJSON_IsNumber(i) &&
		   cJSON_IsNumber(ex) && (long)i->valuedouble == w->job->i) {
		struct bsrv_job *j = w->job;

		w->job = NULL;
		w->state = W_IDLE;
		s->running--;
		job_end(s, j, (ex->valueint & 0xff) << 8, NULL);
	} else {
		fprintf(stderr, "kmux: bench: worker %d (pid %d) sent an "
			"unexpected message: killed\n", k, (int)w->pid);
		kill(-w->pid, SIGKILL);
	}
	cJSON_Delete(m);
}

static void worker_readable(struct bsrv *s, int k)
{
	struct bsrv_worker *w = &s->w[k];
	ssize_t n = read(w->fd, w->buf + w->len, sizeof(w->buf) - 1 - w->len);
	char *nl;

	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {		/* it is going: SIGCHLD says how */
		close(w->fd);
		w->fd = -1;
		return;
	}
	w->len += (size_t)n;
	w->buf[w->len] = '\0';
	while (w->fd >= 0 && (nl = memchr(w->buf, '\n', w->len))) {
		*nl = '\0';
		worker_message(s, k, w->buf);
		w->len -= (size_t)(nl + 1 - w->buf);
		memmove(w->buf, nl + 1, w->len);
		w->buf[w->len] = '\0';
	}
	if (w->len == sizeof(w->buf) - 1) {
		fprintf(stderr, "kmux: bench: worker %d: line too long: "
			"killed\n", k);
		kill(-w->pid, SIGKILL);
		w->len = 0;
	}
}

static void describe(int st, char *buf, size_t len)
{
	if (WIFSIGNALED(st))
		snprintf(buf, len, "killed by signal %d", WTERMSIG(st));
	else
		snprintf(buf, len, "exited %d", WEXITSTATUS(st));
}

static void reaped(struct bsrv *s, pid_t pid, int st)
{
	char how[64], why[128];

	for (int k = 0; k < s->o.workers; k++) {
		struct bsrv_worker *w = &s->w[k];

		if (w->pid != pid)
			continue;
		/* What it said before it died: its job may have ended. */
		if (w->fd >= 0)
			worker_readable(s, k);
		if (w->fd >= 0)
			close(w->fd);
		w->fd = -1;
		w->pid = 0;
		describe(st, how, sizeof(how));
		if (w->job) {
			if (w->job->cancelled)
				snprintf(why, sizeof(why), "cancelled: its "
					 "client left (worker %s)", how);
			else
				snprintf(why, sizeof(why), "its worker died "
					 "(%s)", how);
			s->running--;
			job_end(s, w->job, st, why);
			w->job = NULL;
		} else if (w->state == W_STARTING && !s->stop) {
			fprintf(stderr, "kmux: bench: worker %d %s before it "
				"was ready\n", k, how);
			if (++s->start_failures >= BSRV_MAX_START_FAILURES) {
				fprintf(stderr, "kmux: bench: workers failed "
					"to start %d times: Python jobs fail\n",
					s->start_failures);
				s->broken = true;
				fail_queued_python(s, "no worker could start");
			}
		}
		w->state = W_DOWN;
		if (!s->stop && !s->broken)
			worker_start(s, k);
		return;
	}
	for (int k = 0; k < s->o.concurrency; k++) {
		struct bsrv_job *j = s->plain[k];

		if (j && j->pid == pid) {
			s->plain[k] = NULL;
			s->running--;
			job_end(s, j, st, j->cancelled ? "cancelled: its client "
				"left" : NULL);
			return;
		}
	}
}

static void reap(struct bsrv *s)
{
	pid_t pid;
	int st;

	while ((pid = waitpid(-1, &st, WNOHANG)) > 0)
		reaped(s, pid, st);
}

static int children(const struct bsrv *s)
{
	int n = 0;

	for (int k = 0; k < s->o.workers; k++)
		n += s->w[k].pid > 0;
	for (int k = 0; k < s->o.concurrency; k++)
		n += s->plain[k] != NULL;
	return n;
}

static void signal_children(struct bsrv *s, int sig)
{
	for (int k = 0; k < s->o.workers; k++)
		if (s->w[k].pid > 0)
			kill(-s->w[k].pid, sig);
	for (int k = 0; k < s->o.concurrency; k++)
		if (s->plain[k])
			kill(-s->plain[k]->pid, sig);
}

static void accept_clients(struct bsrv *s);

/*
 * Stop: sig > 0 (a signal) terminates everything; sig < 0 (the batch is
 * done) lets the idle workers leave on their own (EOF on their socket).
 */
static void stop(struct bsrv *s, int sig)
{
	struct bsrv_job *j;

	if (s->stop)
		return;
	s->stop = sig;
	if (s->o.listen_fd >= 0) {
		/* Connections still in the backlog are answered below too. */
		accept_clients(s);
		close(s->o.listen_fd);
		s->o.listen_fd = -1;
	}
	while ((j = s->head)) {
		struct bsrv_client *c = j->client;

		s->head = j->next;
		if (c) {
			c->job = NULL;
			j->client = NULL;
			client_error(s, c, "the server is stopping");
		}
		job_free(j);
	}
	s->tail = NULL;
	s->queued = 0;
	/*
	 * Clients of running jobs get their records (killed) as they end;
	 * those whose request was not read yet, the same error as the
	 * queued ones.
	 */
	for (struct bsrv_client *c = s->clients, *next; c; c = next) {
		next = c->next;
		if (!c->job)
			client_error(s, c, "the server is stopping");
	}
	for (int k = 0; k < s->o.workers; k++)
		if (s->w[k].fd >= 0) {
			close(s->w[k].fd);
			s->w[k].fd = -1;
		}
	if (sig > 0)
		signal_children(s, SIGTERM);
	s->kill_at = cmd_monotonic_s() + BSRV_KILL_GRACE_S;
}

/*
 * The client of j left before j ended (it was detached from j): nobody
 * waits for it any more.  Queued: dropped.  Running: killed, its whole
 * process group (a worker's is the worker: it is replaced as any worker
 * that dies); reaped() records it as cancelled.
 */
static void job_cancel(struct bsrv *s, struct bsrv_job *j)
{
	struct bsrv_job **p, *prev = NULL;

	j->cancelled = true;
	for (p = &s->head; *p && *p != j; prev = *p, p = &(*p)->next)
		;
	if (*p) {
		*p = j->next;
		if (s->tail == j)
			s->tail = prev;
		s->queued--;
		fprintf(stderr, "kmux: bench: job %ld (%s) dropped before it "
			"ran: its client left\n", j->i, j->cmd);
		job_free(j);
		return;
	}
	for (int k = 0; k < s->o.workers; k++) {
		struct bsrv_worker *w = &s->w[k];

		if (w->job != j)
			continue;
		/* It may have ended already, its message still unread. */
		if (w->fd >= 0)
			worker_readable(s, k);
		if (w->job == j && w->pid > 0) {
			fprintf(stderr, "kmux: bench: job %ld (%s) cancelled: "
				"its client left; killing worker %d (pid %d)\n",
				j->i, j->cmd, k, (int)w->pid);
			kill(-w->pid, SIGKILL);
		}
		return;
	}
	for (int k = 0; k < s->o.concurrency; k++)
		if (s->plain[k] == j) {
			fprintf(stderr, "kmux: bench: job %ld (%s) cancelled: "
				"its client left; killing pid %d\n", j->i,
				j->cmd, (int)j->pid);
			kill(-j->pid, SIGKILL);
			return;
		}
}

static void client_readable(struct bsrv *s, struct bsrv_client *c,
			    short revents)
{
	char err[256], *nl, *cmd = NULL;
	struct bsrv_job *job;
	struct bjob j;
	size_t old = c->len;
	ssize_t n;

	if (c->job) {	/* the request came; nothing else may */
		char junk[256];

		if (c->half_closed) {	/* polled for POLLHUP alone */
			if (revents & (POLLHUP | POLLERR))
				client_close(s, c);
			return;
		}
		n = read(c->fd, junk, sizeof(junk));
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		if (n > 0)
			client_error(s, c, "one request per connection");
		else if (n == 0 && !(revents & (POLLHUP | POLLERR)))
			c->half_closed = true;	/* it still waits */
		else
			client_close(s, c);
		return;
	}
	if (c->len == c->cap) {
		size_t cap = c->cap * 2 > BJOB_MAX_LINE + 1 ?
			     BJOB_MAX_LINE + 1 : c->cap * 2;
		char *b = realloc(c->buf, cap);

		if (!b) {
			client_error(s, c, "out of memory");
			return;
		}
		c->buf = b;
		c->cap = cap;
	}
	n = read(c->fd, c->buf + c->len, c->cap - c->len);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		client_close(s, c);
		return;
	}
	c->len += (size_t)n;
	nl = memchr(c->buf + old, '\n', c->len - old);
	if (!nl) {
		if (c->len > BJOB_MAX_LINE)
			client_error(s, c, "request too long");
		return;
	}
	if (bjob_from_request(c->buf, (size_t)(nl - c->buf), &j, err,
			      sizeof(err))) {
		client_error(s, c, err);
		return;
	}
	for (int k = 0; k < j.argc; k++) {
		char *t = NULL;

		if (asprintf(&t, "%s%s%s", cmd ? cmd : "", cmd ? " " : "",
			     j.argv[k]) < 0) {
			t = NULL;
			break;
		}
		free(cmd);
		cmd = t;
	}
	job = cmd ? job_new(&j, cmd, s->next_i++) : NULL;
	free(cmd);
	if (!job) {
		bjob_free(&j);
		client_error(s, c, "out of memory");
		return;
	}
	/* The client waits for its record (sent, if refused, at once). */
	job->client = c;
	c->job = job;
	job_queue(s, job);
}

static void accept_clients(struct bsrv *s)
{
	int fd;

	while ((fd = accept4(s->o.listen_fd, NULL, NULL,
			     SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0) {
		struct bsrv_client *c;

		if (s->nclients >= BSRV_MAX_CLIENTS) {
			const char *m = "{\"error\": \"too many clients\"}\n";

			send(fd, m, strlen(m), MSG_NOSIGNAL | MSG_DONTWAIT);
			close(fd);
			continue;
		}
		c = calloc(1, sizeof(*c));
		if (!c || !(c->buf = malloc(BSRV_CLIENT_BUF))) {
			free(c);
			close(fd);
			continue;
		}
		c->fd = fd;
		c->cap = BSRV_CLIENT_BUF;
		c->next = s->clients;
		s->clients = c;
		s->nclients++;
	}
}

static int on_signal(struct bsrv *s)
{
	struct signalfd_siginfo si;

	while (read(s->sigfd, &si, sizeof(si)) == sizeof(si)) {
		if (si.ssi_signo == SIGCHLD)
			continue;
		if (!s->stop || s->stop < 0) {
			fprintf(stderr, "kmux: bench: signal %u: stopping\n",
				si.ssi_signo);
			if (s->stop < 0) {	/* done already: finish hard */
				s->stop = (int)si.ssi_signo;
				signal_children(s, SIGTERM);
			} else {
				stop(s, (int)si.ssi_signo);
			}
		}
	}
	reap(s);
	return 0;
}

int bsrv_run(struct bsrv *s, bool until_done)
{
	size_t cap = 2 + (size_t)s->o.workers + BSRV_MAX_CLIENTS;
	struct pollfd *pfd = calloc(cap, sizeof(*pfd));
	struct bsrv_client **who = calloc(cap, sizeof(*who));
	int r = 0;

	if (!pfd || !who) {
		r = -ENOMEM;
		goto out;
	}
	for (int k = 0; k < s->o.workers && !s->broken; k++)
		if (s->w[k].state == W_DOWN)
			worker_start(s, k);
	for (;;) {
		size_t n = 0;
		int timeout = -1;

		dispatch(s);
		if (until_done && !s->stop && !s->head && !s->running)
			stop(s, -1);
		if (s->stop && !children(s))
			break;
		if (s->stop) {
			double left = s->kill_at - cmd_monotonic_s();

			if (left <= 0 && !s->killed) {
				signal_children(s, SIGKILL);
				s->killed = true;
			}
			timeout = left > 0 ? (int)(left * 1000) + 1 : 100;
		}
		pfd[n++] = (struct pollfd){ .fd = s->sigfd, .events = POLLIN };
		if (s->o.listen_fd >= 0)
			pfd[n++] = (struct pollfd){ .fd = s->o.listen_fd,
						    .events = POLLIN };
		for (int k = 0; k < s->o.workers; k++)
			pfd[n++] = (struct pollfd){ .fd = s->w[k].fd,
						    .events = POLLIN };
		for (struct bsrv_client *c = s->clients; c; c = c->next) {
			who[n] = c;
			pfd[n++] = (struct pollfd){ .fd = c->fd,
				.events = c->half_closed ? 0 : POLLIN };
		}
		if (poll(pfd, n, timeout) < 0) {
			if (errno == EINTR)
				continue;
			r = -errno;
			fprintf(stderr, "kmux: bench: poll: %s\n",
				strerror(errno));
			stop(s, SIGTERM);
			continue;
		}
		n = 0;
		if (pfd[n++].revents)
			on_signal(s);
		if (pfd[n].fd == s->o.listen_fd && pfd[n++].revents)
			accept_clients(s);
		/* A handler above may have replaced a worker or closed a
		 * client (a job ended): act only on what is still there. */
		for (int k = 0; k < s->o.workers; k++, n++)
			if (pfd[n].fd >= 0 && pfd[n].fd == s->w[k].fd &&
			    pfd[n].revents)
				worker_readable(s, k);
		for (size_t m = n; m < cap && who[m]; m++) {
			bool live = false;

			for (struct bsrv_client *c = s->clients; c; c = c->next)
				live |= c == who[m] && c->fd == pfd[m].fd;
			if (live && pfd[m].revents)
				client_readable(s, who[m], pfd[m].revents);
			who[m] = NULL;
		}
	}
	if (s->stop > 0)
		r = s->stop;
out:
	free(pfd);
	free(who);
	return r;
}

long bsrv_failed(const struct bsrv *s)
{
	return s->failed;
}

int bsrv_new(const struct bsrv_opts *o, struct bsrv **sp)
{
	struct bsrv *s = calloc(1, sizeof(*s));
	sigset_t set;

	if (!s)
		return -ENOMEM;
	s->o = *o;
	s->sigfd = -1;
	s->w = calloc((size_t)o->workers + 1, sizeof(*s->w));
	s->plain = calloc((size_t)o->concurrency, sizeof(*s->plain));
	if (!s->w || !s->plain) {
		bsrv_free(s);
		return -ENOMEM;
	}
	for (int k = 0; k < o->workers; k++)
		s->w[k].fd = -1;
	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
	sigprocmask(SIG_BLOCK, &set, &s->oldmask);
	s->sigfd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
	if (s->sigfd < 0) {
		int e = errno;

		fprintf(stderr, "kmux: bench: signalfd: %s\n", strerror(e));
		bsrv_free(s);
		return -e;
	}
	s->t0 = cmd_monotonic_s();
	*sp = s;
	return 0;
}

void bsrv_free(struct bsrv *s)
{
	struct bsrv_job *j;

	if (!s)
		return;
	while (s->clients)	/* before the jobs they point to */
		client_drop(s, s->clients, false);
	while ((j = s->head)) {
		s->head = j->next;
		job_free(j);
	}
	for (int k = 0; k < s->o.workers && s->w; k++) {
		if (s->w[k].fd >= 0)
			close(s->w[k].fd);
		job_free(s->w[k].job);
	}
	for (int k = 0; k < s->o.concurrency && s->plain; k++)
		job_free(s->plain[k]);
	if (s->sigfd >= 0) {
		close(s->sigfd);
		sigprocmask(SIG_SETMASK, &s->oldmask, NULL);
	}
	if (s->o.listen_fd >= 0)
		close(s->o.listen_fd);
	free(s->w);
	free(s->plain);
	free(s);
}
