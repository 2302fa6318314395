/*
 * sock.h - connecting to a Unix stream socket by path, the one way the CLI,
 * the preload and the Slurm plugin reach kmuxd.  libc only.
 */
#ifndef KMUX_SOCK_H
#define KMUX_SOCK_H

/*
 * Connect to the socket at path (close-on-exec).  send_timeout_ms > 0
 * bounds connect() (a full backlog) and every later send (SO_SNDTIMEO).
 * 0 and *fdp, or -errno: -ENAMETOOLONG (path does not fit a sockaddr_un),
 * -ENOENT / -ECONNREFUSED (nobody listens), ...
 */
int sock_connect_unix(const char *path, int send_timeout_ms, int *fdp);

#endif
