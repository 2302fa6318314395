/*
 * paths.h - where kmux's daemon listens and keeps its state, as the CLI,
 * the daemon and (later) the preload's client all compute it.
 *
 * Owns the one rule for the socket and state locations, so that a client
 * and the daemon it starts always agree:
 *
 *	socket	$KMUX_SOCKET, else
 *		per-user: $XDG_RUNTIME_DIR/kmux/sock, else /tmp/kmux-$UID/sock
 *		system:   $KMUX_SYSTEM_SOCKET, else /run/kmux/sock
 *
 * A client with no KMUX_SOCKET that finds no per-user daemon uses the
 * system daemon when one answers (paths_system_socket()), before it would
 * start a per-user one: two daemons booking the same GPUs would each
 * promise memory the other has promised.
 *	state	$KMUX_STATE_DIR, else
 *		per-user: $XDG_STATE_HOME/kmux, else $HOME/.local/state/kmux
 *		system:   /var/lib/kmux
 *
 * The state directory holds the SQLite database (kmux.db), the jobs' logs
 * (logs/) and the daemon's own log when it runs in the background
 * (kmuxd.log).  It is not the runtime directory because the learned task
 * profiles are worth keeping across reboots, which clear $XDG_RUNTIME_DIR.
 *
 * libc only.
 */
#ifndef KMUX_PATHS_H
#define KMUX_PATHS_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* sizeof(sockaddr_un.sun_path) less the NUL. */
#define PATHS_SOCKET_MAX 107

#define PATHS_SYSTEM_RUN_DIR "/run/kmux"
#define PATHS_SYSTEM_STATE_DIR "/var/lib/kmux"
#define PATHS_SOCKET_NAME "sock"
#define PATHS_DB_NAME "kmux.db"

struct kmux_paths {
	char socket[PATH_MAX];
	char run_dir[PATH_MAX];		/* the socket's directory */
	char state_dir[PATH_MAX];
	bool system;
};

/*
 * Fill *p from the environment (above).  socket and state_dir, when not
 * NULL, win over everything (command-line options).  0, or -ENAMETOOLONG
 * (a socket path longer than PATHS_SOCKET_MAX) / -ENOENT (no HOME for the
 * state directory) with a message for people in err.
 */
int paths_resolve(struct kmux_paths *p, bool system, const char *socket,
		  const char *state_dir, char *err, size_t errlen);

/*
 * The system daemon's socket: $KMUX_SYSTEM_SOCKET, else /run/kmux/sock.
 * 0, or -ENAMETOOLONG (longer than PATHS_SOCKET_MAX or len).
 */
int paths_system_socket(char *out, size_t len);

/*
 * Create dir and its missing parents (each new one with mode), then check
 * dir itself: a directory, not a symlink, owned by uid, and (private)
 * neither group- nor world-writable and not readable by others, or (not
 * private) not writable by others.  So a directory in /tmp that someone
 * else made first is refused, as tmux refuses it.  0 or -errno + err.
 */
int paths_make_dir(const char *dir, mode_t mode, uid_t uid, bool private_dir,
		   char *err, size_t errlen);

#endif
