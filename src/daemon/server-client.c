/*
 * server-client.c - owns kmuxd's client connections: accepting them (with
 * the SO_PEERCRED check), framing (proto_decode over the bytes received so
 * far), the HELLO-first rule, dispatch of each request to job.c, replies,
 * and closing -- after any malformed, oversized or out-of-place message
 * the client gets an ERROR and the connection is closed once that reply is
 * flushed; the daemon and its other clients are unaffected.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>

#include "daemon.h"
#include "log.h"

/* Never let one client's unread input grow beyond one frame and a bit. */
#define CONN_READ_HIGH (PROTO_MAX_MSG + 64 * 1024)

static void conn_free(struct conn *c)
{
	struct server *srv = c->srv;

	log_debug("daemon: connection %llu closed",
		  (unsigned long long)c->id);
	region_conn_gone(c);
	job_conn_gone(c);
	TAILQ_REMOVE(&srv->conns, c, entry);
	bufferevent_free(c->bev);
	free(c);
}

static void conn_free_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	conn_free(arg);
}

/*
 * Free c from the loop, never from inside a callback that may still be
 * looking at it (its own, or a walk over jobs, waiters or readers).
 */
static void conn_free_later(struct conn *c)
{
	static const struct timeval now = { 0, 0 };

	if (c->free_scheduled)
		return;
	c->free_scheduled = true;
	c->closing = true;
	bufferevent_disable(c->bev, EV_READ | EV_WRITE);
	if (event_base_once(c->srv->base, -1, EV_TIMEOUT, conn_free_cb, c,
			    &now))
		log_error("daemon: cannot schedule a connection's release");
}

static void on_write(struct bufferevent *bev, void *arg)
{
	struct conn *c = arg;

	(void)bev;
	/* Everything sent: a closing connection may go now. */
	if (c->closing)
		conn_free_later(c);
}

void server_client_close(struct conn *c)
{
	if (c->closing)
		return;
	c->closing = true;
	bufferevent_disable(c->bev, EV_READ);
	if (evbuffer_get_length(bufferevent_get_output(c->bev)) == 0)
		conn_free_later(c);
	/* else on_write frees it once the reply is out */
}

size_t server_client_pending(const struct conn *c)
{
	return evbuffer_get_length(bufferevent_get_output(c->bev));
}

bool server_client_may(const struct conn *c, uint32_t uid)
{
	/* Per-user mode: the socket admits the owner (and root) alone. */
	return !c->srv->system || c->uid == 0 || c->uid == uid;
}

bool server_client_send(struct conn *c, const struct proto_msg *m)
{
	struct proto_buf *out = &c->srv->out;
	int r;

	if (c->closing)
		return false;
	out->len = 0;
	r = proto_encode(out, m);
	if (r) {
		/* A daemon bug, never the client's fault: say so, go on. */
		log_error("daemon: cannot encode %s: %s",
			  proto_type_name(m->type), strerror(-r));
		return false;
	}
	if (bufferevent_write(c->bev, out->data, out->len)) {
		log_warn("daemon: connection %llu: out of memory",
			 (unsigned long long)c->id);
		server_client_close(c);
		return false;
	}
	return true;
}

void server_client_error(struct conn *c, uint32_t seq, int err,
			 const char *fmt, ...)
{
	struct proto_msg m = { .type = PROTO_ERROR, .seq = seq };
	char msg[PROTO_MAX_ERRMSG];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (err <= 0 || err > 4095)
		err = EIO;
	m.u.error.err = err;
	m.u.error.message = msg;
	log_debug("daemon: connection %llu: error %d: %s",
		  (unsigned long long)c->id, err, msg);
	server_client_send(c, &m);
}

/* A bad peer: tell it why, then hang up. */
static void conn_reject(struct conn *c, uint32_t seq, int err, const char *msg)
{
	log_info("daemon: connection %llu (pid %ld, uid %u): %s",
		 (unsigned long long)c->id, (long)c->pid, (unsigned)c->uid,
		 msg);
	server_client_error(c, seq, err, "%s", msg);
	server_client_close(c);
}

static void dispatch(struct conn *c, const struct proto_msg *m)
{
	if (!proto_type_is_request(m->type)) {
		conn_reject(c, m->seq, EPROTO, "a client may not send replies");
		return;
	}
	if (!c->hello && m->type != PROTO_HELLO) {
		conn_reject(c, m->seq, EPROTO, "HELLO must come first");
		return;
	}
	switch (m->type) {
	case PROTO_HELLO:
		if (c->hello) {
			conn_reject(c, m->seq, EPROTO, "HELLO sent twice");
			return;
		}
		c->hello = true;
		c->role = m->u.hello.role;
		server_client_send(c, &(struct proto_msg){
			.type = PROTO_OK, .seq = m->seq });
		break;
	case PROTO_SUBMIT:
	case PROTO_RUN:
		job_submit(c, m);
		break;
	case PROTO_PS:
		job_ps(c, m);
		break;
	case PROTO_TOP:
		job_top(c, m);
		break;
	case PROTO_WAIT:
		job_wait(c, m);
		break;
	case PROTO_CANCEL:
		job_cancel(c, m);
		break;
	case PROTO_LOGS:
		job_logs(c, m);
		break;
	case PROTO_REGISTER:
		job_register(c, m);
		break;
	case PROTO_FINISHED:
		job_finished(c, m);
		break;
	case PROTO_ATTACH:
		job_attach(c, m);
		break;
	case PROTO_STARTED:
		job_started(c, m);
		break;
	case PROTO_ALLOC_UPDATE:
		job_alloc_update(c, m);
		break;
	case PROTO_REGION_ENTER:
		region_enter(c, m);
		break;
	case PROTO_REGION_LEAVE:
		region_leave(c, m);
		break;
	case PROTO_DRAINED:
		region_drained(c, m);
		break;
	default:
		conn_reject(c, m->seq, EPROTO, "unknown request");
		break;
	}
}

/*
 * The header alone, as soon as its bytes are in: a bad magic, version or
 * length is answered without waiting for a payload that may never come.
 * Returns 0 to go on, -1 after rejecting the peer.
 */
static int check_header(struct conn *c, const uint8_t *p, size_t len,
			size_t *frame)
{
	uint16_t version = 0, type = 0;
	uint32_t length = 0, seq = 0;
	struct proto_msg m;
	size_t used;
	int r;

	r = proto_decode(p, len, &m, &used);
	if (r == -EAGAIN || r == 0 || r == -EBADMSG) {
		if (len >= PROTO_HDR_SIZE) {
			proto_peek_header(p, len, &version, &type, &length,
					  &seq);
			*frame = PROTO_HDR_SIZE + (size_t)length;
		}
		return 0;
	}
	if (len >= PROTO_HDR_SIZE)
		proto_peek_header(p, len, &version, &type, &length, &seq);
	if (r == -EPROTO && len >= PROTO_HDR_SIZE && version != PROTO_VERSION &&
	    proto_peek_header(p, len, &version, &type, &length, &seq) == 0) {
		char msg[96];

		snprintf(msg, sizeof(msg), "protocol version %u is not "
			 "supported (this kmuxd speaks %u)", version,
			 PROTO_VERSION);
		conn_reject(c, seq, EPROTONOSUPPORT, msg);
	} else if (r == -EMSGSIZE) {
		conn_reject(c, seq, EMSGSIZE, "message too large");
	} else {
		conn_reject(c, 0, EPROTO, "not a kmux message");
	}
	return -1;
}

static void on_read(struct bufferevent *bev, void *arg)
{
	struct evbuffer *in = bufferevent_get_input(bev);
	struct conn *c = arg;
	struct proto_msg m;
	size_t len, frame, used;
	uint8_t *p;
	int r;

	while (!c->closing && (len = evbuffer_get_length(in)) > 0) {
		frame = 0;
		p = evbuffer_pullup(in, (ssize_t)(len < PROTO_HDR_SIZE ?
						  len : PROTO_HDR_SIZE));
		if (!p || check_header(c, p, len < PROTO_HDR_SIZE ?
				       len : PROTO_HDR_SIZE, &frame))
			return;
		if (frame == 0 || len < frame)
			return;		/* wait for the rest */
		p = evbuffer_pullup(in, (ssize_t)frame);
		if (!p) {
			server_client_close(c);
			return;
		}
		r = proto_decode(p, frame, &m, &used);
		if (r) {
			uint16_t version, type;
			uint32_t length, seq = 0;

			/* The header was fine: answer in the frame's seq. */
			proto_peek_header(p, frame, &version, &type, &length,
					  &seq);
			conn_reject(c, seq, r == -EBADMSG ? EBADMSG : EPROTO,
				    "malformed message");
			return;
		}
		/* m points into the buffer: use it before draining. */
		dispatch(c, &m);
		evbuffer_drain(in, used);
	}
}

static void on_event(struct bufferevent *bev, short what, void *arg)
{
	struct conn *c = arg;

	(void)bev;
	if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR))
		conn_free_later(c);
}

void server_client_accept(struct server *srv, int fd)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);
	struct conn *c;

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len)) {
		log_warn("daemon: SO_PEERCRED: %s", strerror(errno));
		close(fd);
		return;
	}
	/* Per-user daemon: the directory is 0700, and this double-checks. */
	if (!srv->system && cred.uid != srv->uid && cred.uid != 0) {
		log_warn("daemon: refused uid %u (pid %ld): not the owner",
			 (unsigned)cred.uid, (long)cred.pid);
		close(fd);
		return;
	}
	c = calloc(1, sizeof(*c));
	if (!c) {
		close(fd);
		return;
	}
	c->srv = srv;
	c->id = ++srv->next_conn_id;
	c->uid = cred.uid;
	c->gid = cred.gid;
	c->pid = cred.pid;
	c->bev = bufferevent_socket_new(srv->base, fd, BEV_OPT_CLOSE_ON_FREE);
	if (!c->bev) {
		close(fd);
		free(c);
		return;
	}
	TAILQ_INSERT_TAIL(&srv->conns, c, entry);
	bufferevent_setcb(c->bev, on_read, on_write, on_event, c);
	bufferevent_setwatermark(c->bev, EV_READ, 0, CONN_READ_HIGH);
	bufferevent_enable(c->bev, EV_READ | EV_WRITE);
	log_debug("daemon: connection %llu from pid %ld uid %u",
		  (unsigned long long)c->id, (long)cred.pid,
		  (unsigned)cred.uid);
}

void server_client_free_all(struct server *srv)
{
	struct conn *c;

	srv->stopping = true;
	while ((c = TAILQ_FIRST(&srv->conns)))
		conn_free(c);
}
