/*
 * client.h - the CLI's side of the socket to kmuxd, shared by submit, ps,
 * wait, cancel, logs and top.
 *
 * Owns connecting (with the daemon started on demand, as tmux starts its
 * server: a lock file serializes the clients that find no daemon, the
 * first runs `kmux daemon`, which returns once its socket listens, and
 * everyone connects), the HELLO exchange, blocking send and receive of
 * whole frames, and the mapping of the daemon's errors to exit statuses.
 */
#ifndef KMUX_CLIENT_H
#define KMUX_CLIENT_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>

#include "paths.h"
#include "proto.h"

/* Exit statuses of the daemon's commands, beyond cmd.h's. */
#define KMUX_EXIT_NOJOB		3	/* no such job */
#define KMUX_EXIT_NOFIT		4	/* can never run here: GPUs, memory */
#define KMUX_EXIT_NODAEMON	5	/* no daemon, and none could start */
/* kmux wait: the job's own status is not known (see kmux-wait(1)). */
#define KMUX_EXIT_WAIT_UNKNOWN	125

/* client_open() flags. */
#define CLIENT_AUTOSTART 0x1u	/* start a daemon when none answers */

struct client {
	int fd;
	uint32_t seq;
	struct kmux_paths paths;
	uint8_t *in;		/* bytes received, not yet decoded */
	size_t in_len;
	size_t in_cap;
	size_t consumed;	/* frame of the last message handed out */
	struct proto_buf out;
	/* The last failure, for people: "no job 7", "cannot connect ...". */
	char err[PROTO_MAX_ERRMSG + PATH_MAX];
};

/*
 * Connect to the daemon of $KMUX_SOCKET (or the default per-user socket)
 * and say HELLO.  0, or -errno with c->err set: -ECONNREFUSED / -ENOENT
 * when no daemon answers (and, with AUTOSTART, none could be started).
 * client_close() is safe after a failure.
 */
int client_open(struct client *c, unsigned flags);
void client_close(struct client *c);

/*
 * The connection to kmuxd was lost (its daemon died or is being restarted):
 * connect again to the same socket, without starting a daemon, pausing
 * 100 ms doubling to 800 ms between tries, until one answers HELLO or the
 * monotonic clock (cmd_monotonic_s) passes deadline.  0; -ECONNRESET
 * with c->err when none came back in time; another -errno (c->err) when
 * connecting failed for another reason.  c is closed and opened again:
 * its seq starts over.
 */
int client_reconnect(struct client *c, double deadline);

/*
 * After a call failed with client_lost(): reconnect (client_reconnect())
 * and make the call req again, until it is answered or within_s seconds
 * have passed.  The daemon's own answers (no such job, ...) are final.
 * Returns as client_call(); -ECONNRESET with "kmuxd did not come back
 * within N s" in c->err when none came back.
 */
int client_call_again(struct client *c, struct proto_msg *req,
		      struct proto_msg *rep, int within_s);

/* Did a call fail because the daemon went away (send or receive)? */
static inline int client_lost(int err)
{
	return err == -ECONNRESET || err == -EPIPE;
}

/* Send m with the next seq (written to m->seq).  0 or -errno + c->err. */
int client_send(struct client *c, struct proto_msg *m);

/*
 * Wait for the next message.  0: *m is valid until the next call.  An
 * ERROR reply is returned as -its errno, its text in c->err.  -ECONNRESET
 * when the daemon hung up; -EPROTO on a frame this client cannot read.
 */
int client_recv(struct client *c, struct proto_msg *m);

/* client_send() then client_recv(), checking the reply's seq. */
int client_call(struct client *c, struct proto_msg *req, struct proto_msg *rep);

/*
 * The exit status for a failed request: KMUX_EXIT_NOJOB (ENOENT),
 * KMUX_EXIT_NOFIT (ENODEV, E2BIG), KMUX_EXIT_NODAEMON (connection
 * failures), else KMUX_EXIT_FAILURE.
 */
int client_exit_status(int err, int connected);

/* Unix time in µs, the clock of the daemon's records. */
uint64_t client_now_us(void);

/* A job id: digits only, > 0.  0, or -EINVAL. */
int client_parse_id(const char *s, uint64_t *id);

#endif
