/*
 * client.c - owns the CLI's connection to kmuxd: connect, autostart (lock,
 * start, retry), HELLO, framing, errors.  See client.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "client.h"
#include "cmd.h"
#include "num.h"
#include "sock.h"

#ifndef KMUX_VERSION
#define KMUX_VERSION "0.1.0"
#endif

/* Run `kmux daemon --socket PATH` (this very binary) and wait for it. */
static int run_daemon(struct client *c)
{
	char exe[PATH_MAX];
	ssize_t n;
	pid_t pid;
	int st;

	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0) {
		snprintf(c->err, sizeof(c->err), "cannot start kmuxd: "
			 "/proc/self/exe: %s", strerror(errno));
		return -ENOENT;
	}
	exe[n] = '\0';
	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid < 0) {
		snprintf(c->err, sizeof(c->err), "cannot start kmuxd: fork: %s",
			 strerror(errno));
		return -errno;
	}
	if (pid == 0) {
		execl(exe, exe, "daemon", "--socket", c->paths.socket,
		      (char *)NULL);
		fprintf(stderr, "kmux: cannot run %s daemon: %s\n", exe,
			strerror(errno));
		_exit(1);
	}
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return -errno;
	/* It said why on stderr; exit 1 also covers losing a start race. */
	return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -ECONNREFUSED;
}

/*
 * No daemon answered: take the start lock (one client starts it, the
 * others wait and then find it running), look again, start one.
 */
static int autostart(struct client *c)
{
	char lock[PATH_MAX + 16], why[PATH_MAX + 128];
	int fd, r;

	if (!c->paths.system &&
	    paths_make_dir(c->paths.run_dir, 0700, getuid(), true, why,
			   sizeof(why))) {
		snprintf(c->err, sizeof(c->err), "cannot start kmuxd: %s", why);
		return -EACCES;
	}
	snprintf(lock, sizeof(lock), "%s.start", c->paths.socket);
	fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0 || flock(fd, LOCK_EX)) {
		r = -errno;
		snprintf(c->err, sizeof(c->err), "cannot start kmuxd: %s: %s",
			 lock, strerror(-r));
		if (fd >= 0)
			close(fd);
		return r;
	}
	r = sock_connect_unix(c->paths.socket, 0, &c->fd);
	if (r) {
		r = run_daemon(c);
		if (r == 0 || r == -ECONNREFUSED)
			r = sock_connect_unix(c->paths.socket, 0, &c->fd);
		if (r)
			snprintf(c->err, sizeof(c->err), "cannot start kmuxd "
				 "on %s", c->paths.socket);
	}
	close(fd);		/* and the lock with it */
	return r;
}

static int hello(struct client *c)
{
	struct proto_msg req = { .type = PROTO_HELLO }, rep;

	req.u.hello.role = PROTO_ROLE_CLI;
	req.u.hello.pid = (uint32_t)getpid();
	req.u.hello.ident = "kmux " KMUX_VERSION;
	return client_call(c, &req, &rep);
}

/*
 * No per-user daemon answered and KMUX_SOCKET does not name one: a node's
 * system daemon, when it answers, is the one to use, as the preload does
 * (register.c); starting a per-user one beside it would book the same GPUs
 * twice.  0 with c->fd connected, else the per-user attempt stands.
 */
static int connect_system(struct client *c)
{
	char sys[PATH_MAX];
	const char *v = getenv("KMUX_SOCKET");
	int fd;

	if ((v && *v) || paths_system_socket(sys, sizeof(sys)) ||
	    strcmp(sys, c->paths.socket) == 0)
		return -ENOENT;
	if (sock_connect_unix(sys, 0, &fd))
		return -ENOENT;
	c->fd = fd;
	snprintf(c->paths.socket, sizeof(c->paths.socket), "%s", sys);
	c->paths.system = true;
	return 0;
}

/* The buffers of a new connection.  0 or -ENOMEM (c->err). */
static int client_buffers(struct client *c)
{
	c->out.cap = PROTO_MAX_MSG;
	c->out.data = malloc(c->out.cap);
	c->in_cap = 64 * 1024;
	c->in = malloc(c->in_cap);
	if (!c->out.data || !c->in) {
		snprintf(c->err, sizeof(c->err), "out of memory");
		return -ENOMEM;
	}
	return 0;
}

int client_open(struct client *c, unsigned flags)
{
	char why[PATH_MAX + 128];
	int r;

	memset(c, 0, sizeof(*c));
	c->fd = -1;
	r = paths_resolve(&c->paths, false, NULL, NULL, why, sizeof(why));
	/* The state directory is the daemon's business, not ours. */
	if (r && r != -ENOENT) {
		snprintf(c->err, sizeof(c->err), "%s", why);
		return r;
	}
	r = client_buffers(c);
	if (r)
		return r;
	r = sock_connect_unix(c->paths.socket, 0, &c->fd);
	if ((r == -ENOENT || r == -ECONNREFUSED || r == -ENOTDIR) &&
	    connect_system(c) == 0)
		return hello(c);
	if ((r == -ENOENT || r == -ECONNREFUSED) && (flags & CLIENT_AUTOSTART))
		return autostart(c) ?: hello(c);
	if (r == -ENOENT || r == -ECONNREFUSED) {
		snprintf(c->err, sizeof(c->err), "no kmuxd is running on %s "
			 "(start one with `kmux daemon`)", c->paths.socket);
		return r;
	}
	if (r) {
		snprintf(c->err, sizeof(c->err), "cannot connect to %s: %s",
			 c->paths.socket, strerror(-r));
		return r;
	}
	return hello(c);
}

/*
 * The daemon that went away is the one to find again: looking the socket
 * up anew could land on another daemon (the system one, once a per-user
 * daemon's socket refuses; a per-user one another command started while
 * the system daemon restarts), which would answer for a job of the same id
 * that is not ours.
 */
static int client_open_same(struct client *c, const struct kmux_paths *p)
{
	int r;

	memset(c, 0, sizeof(*c));
	c->fd = -1;
	c->paths = *p;
	r = client_buffers(c);
	if (r)
		return r;
	r = sock_connect_unix(c->paths.socket, 0, &c->fd);
	if (r) {
		snprintf(c->err, sizeof(c->err), "cannot connect to %s: %s",
			 c->paths.socket, strerror(-r));
		return r;
	}
	return hello(c);
}

int client_reconnect(struct client *c, double deadline)
{
	struct timespec pause = { 0, 100 * 1000 * 1000 };
	struct kmux_paths same = c->paths;
	int r;

	for (;;) {
		if (cmd_monotonic_s() >= deadline) {
			client_close(c);
			snprintf(c->err, sizeof(c->err), "kmuxd did not come "
				 "back in time");
			return -ECONNRESET;
		}
		nanosleep(&pause, NULL);
		if (pause.tv_nsec < 800 * 1000 * 1000)
			pause.tv_nsec *= 2;
		client_close(c);
		r = client_open_same(c, &same);
		/* Not listening yet: the new daemon is still starting. */
		if (r == -ENOENT || r == -ECONNREFUSED || client_lost(r))
			continue;
		return r;
	}
}

int client_call_again(struct client *c, struct proto_msg *req,
		      struct proto_msg *rep, int within_s)
{
	double deadline = cmd_monotonic_s() + within_s;
	int r;

	do {
		r = client_reconnect(c, deadline);
		if (r == -ECONNRESET)
			snprintf(c->err, sizeof(c->err), "kmuxd did not come "
				 "back within %d s", within_s);
		if (r)
			return r;
		r = client_call(c, req, rep);
	} while (client_lost(r));
	return r;
}

void client_close(struct client *c)
{
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	free(c->out.data);
	free(c->in);
	c->out.data = NULL;
	c->in = NULL;
}

int client_send(struct client *c, struct proto_msg *m)
{
	size_t off = 0;
	ssize_t n;
	int r;

	m->seq = ++c->seq;
	c->out.len = 0;
	r = proto_encode(&c->out, m);
	if (r == -EMSGSIZE) {
		snprintf(c->err, sizeof(c->err), "the request is larger than "
			 "the protocol's %u bytes (a huge environment or "
			 "command line?)", PROTO_MAX_MSG);
		return r;
	}
	if (r) {
		snprintf(c->err, sizeof(c->err), "cannot encode %s: %s",
			 proto_type_name(m->type), strerror(-r));
		return r;
	}
	while (off < c->out.len) {
		n = send(c->fd, c->out.data + off, c->out.len - off,
			 MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			r = -errno;
			snprintf(c->err, sizeof(c->err), "lost the connection "
				 "to kmuxd: %s", strerror(-r));
			return r;
		}
		off += (size_t)n;
	}
	return 0;
}

/* Room for at least want bytes in c->in. */
static int in_reserve(struct client *c, size_t want)
{
	uint8_t *p;

	if (want <= c->in_cap)
		return 0;
	p = realloc(c->in, want);
	if (!p)
		return -ENOMEM;
	c->in = p;
	c->in_cap = want;
	return 0;
}

int client_recv(struct client *c, struct proto_msg *m)
{
	size_t used;
	ssize_t n;
	int r;

	/* Drop the frame handed out last time. */
	if (c->consumed) {
		memmove(c->in, c->in + c->consumed, c->in_len - c->consumed);
		c->in_len -= c->consumed;
		c->consumed = 0;
	}
	for (;;) {
		r = proto_decode(c->in, c->in_len, m, &used);
		if (r == 0)
			break;
		if (r != -EAGAIN) {
			snprintf(c->err, sizeof(c->err), "kmuxd sent a message "
				 "this kmux cannot read (%s): a different "
				 "version?", strerror(-r));
			return -EPROTO;
		}
		if (in_reserve(c, c->in_len < c->in_cap ? c->in_cap :
			       c->in_cap * 2)) {
			snprintf(c->err, sizeof(c->err), "out of memory");
			return -ENOMEM;
		}
		n = recv(c->fd, c->in + c->in_len, c->in_cap - c->in_len, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			snprintf(c->err, sizeof(c->err), "lost the connection "
				 "to kmuxd%s%s", n ? ": " : "",
				 n ? strerror(errno) : "");
			return -ECONNRESET;
		}
		c->in_len += (size_t)n;
	}
	c->consumed = used;
	if (m->type == PROTO_ERROR) {
		snprintf(c->err, sizeof(c->err), "%s", m->u.error.message);
		return -m->u.error.err;
	}
	return 0;
}

int client_call(struct client *c, struct proto_msg *req, struct proto_msg *rep)
{
	int r = client_send(c, req);

	if (r)
		return r;
	r = client_recv(c, rep);
	if (r == 0 && rep->seq != req->seq) {
		snprintf(c->err, sizeof(c->err), "kmuxd answered request %u "
			 "instead of %u", rep->seq, req->seq);
		return -EPROTO;
	}
	return r;
}

int client_exit_status(int err, int connected)
{
	if (!connected)
		return KMUX_EXIT_NODAEMON;
	switch (-err) {
	case ENOENT:
		return KMUX_EXIT_NOJOB;
	case ENODEV:
	case E2BIG:
		return KMUX_EXIT_NOFIT;
	case ECONNRESET:
		return KMUX_EXIT_NODAEMON;
	default:
		return KMUX_EXIT_FAILURE;
	}
}

int client_parse_id(const char *s, uint64_t *id)
{
	long v;

	if (num_parse(s, 1, INT64_MAX, &v))
		return -EINVAL;
	*id = (uint64_t)v;
	return 0;
}

uint64_t client_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}
