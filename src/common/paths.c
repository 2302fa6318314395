/*
 * paths.c - owns the socket and state locations of kmuxd (see paths.h) and
 * the creation and checking of their directories.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "paths.h"

static const char *env_nonempty(const char *name)
{
	const char *v = getenv(name);

	return v && *v ? v : NULL;
}

static int put(char *dst, size_t len, char *err, size_t errlen,
	       const char *what, const char *fmt, const char *a, const char *b)
{
	int n = snprintf(dst, len, fmt, a, b);

	if (n < 0 || (size_t)n >= len) {
		snprintf(err, errlen, "%s path too long: %s...", what, a);
		return -ENAMETOOLONG;
	}
	return 0;
}

/* The directory part of path, "/" for "/x", "." for "x". */
static void dir_of(const char *path, char *out, size_t len)
{
	const char *slash = strrchr(path, '/');
	size_t n;

	if (!slash) {
		snprintf(out, len, ".");
		return;
	}
	n = slash == path ? 1 : (size_t)(slash - path);
	if (n >= len)
		n = len - 1;
	memcpy(out, path, n);
	out[n] = '\0';
}

static int resolve_socket(struct kmux_paths *p, const char *socket, char *err,
			  size_t errlen)
{
	const char *v = socket ? socket : env_nonempty("KMUX_SOCKET");
	char uid[32];
	int r;

	if (v) {
		r = put(p->socket, sizeof(p->socket), err, errlen, "socket",
			"%s%s", v, "");
	} else if (p->system) {
		r = paths_system_socket(p->socket, sizeof(p->socket));
		if (r)
			snprintf(err, errlen, "KMUX_SYSTEM_SOCKET is longer "
				 "than %d bytes (the limit of a Unix socket "
				 "address)", PATHS_SOCKET_MAX);
	} else if ((v = env_nonempty("XDG_RUNTIME_DIR"))) {
		r = put(p->socket, sizeof(p->socket), err, errlen, "socket",
			"%s/kmux/%s", v, PATHS_SOCKET_NAME);
	} else {
		snprintf(uid, sizeof(uid), "%u", (unsigned)getuid());
		r = put(p->socket, sizeof(p->socket), err, errlen, "socket",
			"/tmp/kmux-%s/%s", uid, PATHS_SOCKET_NAME);
	}
	if (r)
		return r;
	if (strlen(p->socket) > PATHS_SOCKET_MAX) {
		snprintf(err, errlen, "socket path %s is longer than %d bytes "
			 "(the limit of a Unix socket address)", p->socket,
			 PATHS_SOCKET_MAX);
		return -ENAMETOOLONG;
	}
	dir_of(p->socket, p->run_dir, sizeof(p->run_dir));
	return 0;
}

static int resolve_state(struct kmux_paths *p, const char *state_dir,
			 char *err, size_t errlen)
{
	const char *v = state_dir ? state_dir : env_nonempty("KMUX_STATE_DIR");

	if (v)
		return put(p->state_dir, sizeof(p->state_dir), err, errlen,
			   "state", "%s%s", v, "");
	if (p->system)
		return put(p->state_dir, sizeof(p->state_dir), err, errlen,
			   "state", "%s%s", PATHS_SYSTEM_STATE_DIR, "");
	if ((v = env_nonempty("XDG_STATE_HOME")))
		return put(p->state_dir, sizeof(p->state_dir), err, errlen,
			   "state", "%s/%s", v, "kmux");
	if ((v = env_nonempty("HOME")))
		return put(p->state_dir, sizeof(p->state_dir), err, errlen,
			   "state", "%s/%s", v, ".local/state/kmux");
	snprintf(err, errlen, "no state directory: set KMUX_STATE_DIR, "
		 "XDG_STATE_HOME or HOME");
	return -ENOENT;
}

int paths_system_socket(char *out, size_t len)
{
	const char *v = env_nonempty("KMUX_SYSTEM_SOCKET");
	int n;

	if (v)
		n = snprintf(out, len, "%s", v);
	else
		n = snprintf(out, len, "%s/%s", PATHS_SYSTEM_RUN_DIR,
			     PATHS_SOCKET_NAME);
	if (n < 0 || (size_t)n >= len || n > PATHS_SOCKET_MAX)
		return -ENAMETOOLONG;
	return 0;
}

int paths_resolve(struct kmux_paths *p, bool system, const char *socket,
		  const char *state_dir, char *err, size_t errlen)
{
	int r;

	memset(p, 0, sizeof(*p));
	p->system = system;
	r = resolve_socket(p, socket, err, errlen);
	if (r)
		return r;
	return resolve_state(p, state_dir, err, errlen);
}

static int check_dir(const char *dir, uid_t uid, bool private_dir, char *err,
		     size_t errlen)
{
	mode_t bad = private_dir ? 0077 : 0022;
	struct stat st;

	if (lstat(dir, &st)) {
		int r = -errno;

		snprintf(err, errlen, "%s: %s", dir, strerror(-r));
		return r;
	}
	if (!S_ISDIR(st.st_mode)) {
		snprintf(err, errlen, "%s is not a directory", dir);
		return -ENOTDIR;
	}
	if (st.st_uid != uid) {
		snprintf(err, errlen, "%s belongs to uid %u, not to uid %u: "
			 "refusing to use it", dir, (unsigned)st.st_uid,
			 (unsigned)uid);
		return -EACCES;
	}
	if (st.st_mode & bad) {
		snprintf(err, errlen, "%s has mode %03o, which lets others in: "
			 "refusing to use it (chmod %s %s)", dir,
			 (unsigned)(st.st_mode & 0777),
			 private_dir ? "0700" : "go-w", dir);
		return -EACCES;
	}
	return 0;
}

int paths_make_dir(const char *dir, mode_t mode, uid_t uid, bool private_dir,
		   char *err, size_t errlen)
{
	char buf[PATH_MAX];
	size_t n = strlen(dir);
	bool created = false;

	if (n == 0 || n >= sizeof(buf)) {
		snprintf(err, errlen, "bad directory name '%s'", dir);
		return -EINVAL;
	}
	memcpy(buf, dir, n + 1);
	/* Each missing parent, then dir; an existing one is left as it is. */
	for (char *s = buf + 1; ; s++) {
		char c = *s;

		if (c != '/' && c != '\0')
			continue;
		*s = '\0';
		created = mkdir(buf, mode) == 0;
		if (!created && errno != EEXIST) {
			int r = -errno;

			snprintf(err, errlen, "cannot create %s: %s", buf,
				 strerror(-r));
			return r;
		}
		*s = c;
		if (c == '\0')
			break;
	}
	/* mkdir honours the umask; a system socket directory must be 0755. */
	if (created && chmod(dir, mode)) {
		int r = -errno;

		snprintf(err, errlen, "chmod %s: %s", dir, strerror(-r));
		return r;
	}
	return check_dir(dir, uid, private_dir, err, errlen);
}
