/*
 * mps.c - kmuxd's private MPS control daemon (see mps.h): find the binary,
 * start or adopt the daemon, stop it.
 *
 * The control daemon is spoken to as people do: `nvidia-cuda-mps-control
 * -d` starts it (it daemonizes itself, so it is never our child), and a
 * command line on the stdin of another `nvidia-cuda-mps-control` talks to
 * it through the pipe directory.  "Answers get_server_list" is the one
 * test of "it is up" that works for an adopted daemon whose pid we never
 * knew.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli/spawn.h"
#include "log.h"
#include "mps.h"
#include "paths.h"

static bool executable_file(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISREG(st.st_mode) &&
	       access(path, X_OK) == 0;
}

int mps_find_control(const char *given, const char *path_env, char *buf,
		     size_t len, char *err, size_t errlen)
{
	const char *p, *colon;
	int n;

	if (given) {
		if (!executable_file(given)) {
			snprintf(err, errlen, "--mps-control %s: %s", given,
				 access(given, F_OK) ? strerror(errno) :
				 "not an executable file");
			return -ENOENT;
		}
		n = snprintf(buf, len, "%s", given);
		return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
	}
	for (p = path_env && *path_env ? path_env : NULL; p; p = colon ?
	     colon + 1 : NULL) {
		colon = strchr(p, ':');
		/* An empty PATH entry is the current directory: a daemon
		 * must not run whatever lies there. */
		if ((colon ? (size_t)(colon - p) : strlen(p)) == 0 || *p != '/')
			continue;
		n = snprintf(buf, len, "%.*s/%s",
			     (int)(colon ? colon - p : (ptrdiff_t)strlen(p)), p,
			     MPS_CONTROL_NAME);
		if (n > 0 && (size_t)n < len && executable_file(buf))
			return 0;
	}
	n = snprintf(buf, len, "%s/%s", MPS_CONTROL_FALLBACK_DIR,
		     MPS_CONTROL_NAME);
	if (n > 0 && (size_t)n < len && executable_file(buf))
		return 0;
	buf[0] = '\0';
	snprintf(err, errlen, "%s not found in PATH or %s (give it with "
		 "--mps-control PATH)", MPS_CONTROL_NAME,
		 MPS_CONTROL_FALLBACK_DIR);
	return -ENOENT;
}

int mps_set_dirs(struct mps *m, const char *socket)
{
	int a, b, c;

	a = snprintf(m->dir, sizeof(m->dir), "%s.mps", socket);
	b = snprintf(m->pipe, sizeof(m->pipe), "%s/pipe", m->dir);
	c = snprintf(m->log, sizeof(m->log), "%s/log", m->dir);
	if (a < 0 || b < 0 || c < 0 || (size_t)b >= sizeof(m->pipe) ||
	    (size_t)c >= sizeof(m->log))
		return -ENAMETOOLONG;
	return 0;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void sleep_s(double s)
{
	struct timespec ts = { (time_t)s, (long)((s - (time_t)s) * 1e9) };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/* In the child: stdin from in_fd, stdout to /dev/null, stderr kept or not. */
static void child_setup(int in_fd, bool quiet)
{
	int null = open("/dev/null", O_RDWR);

	if (in_fd >= 0)
		dup2(in_fd, STDIN_FILENO);
	else if (null >= 0)
		dup2(null, STDIN_FILENO);
	if (null >= 0) {
		dup2(null, STDOUT_FILENO);
		if (quiet)
			dup2(null, STDERR_FILENO);
	}
	/* The daemon it may become must hold none of kmuxd's files (a lock
	 * held by it would keep the next kmuxd out). */
#ifdef SYS_close_range
	if (syscall(SYS_close_range, 3u, ~0u, 0u))
#endif
		for (int fd = 3; fd < 4096; fd++)
			close(fd);
	signal(SIGPIPE, SIG_DFL);
	signal(SIGHUP, SIG_DFL);
	/* Its own session: the terminal's ^C is not its business. */
	setsid();
}

/*
 * Run the control binary: with -d when cmd is NULL, else with "cmd\n" on
 * its stdin.  Its exit status (0..255; 128+N when a signal killed it), or
 * -ETIMEDOUT (killed after MPS_CMD_TIMEOUT_S) or -errno.
 */
static int mps_run(const struct mps *m, const char *cmd, bool quiet)
{
	char pipe_env[PATH_MAX + 32], log_env[PATH_MAX + 32];
	/* Nothing of kmux's own: an MPS server carrying the preload would
	 * register with kmuxd like a job and wait for itself. */
	const char *set[] = { pipe_env, log_env, "LD_PRELOAD",
			      "CUDA_VISIBLE_DEVICES",
			      "CUDA_DEVICE_ORDER=PCI_BUS_ID", NULL };
	char *argv[] = { (char *)m->control, cmd ? NULL : "-d", NULL };
	extern char **environ;
	char **env;
	double until;
	int fds[2] = { -1, -1 }, st, r;
	pid_t pid, w;

	snprintf(pipe_env, sizeof(pipe_env), "CUDA_MPS_PIPE_DIRECTORY=%s",
		 m->pipe);
	snprintf(log_env, sizeof(log_env), "CUDA_MPS_LOG_DIRECTORY=%s",
		 m->log);
	env = spawn_env_build(&(struct spawn_opts){ .env = set }, environ);
	if (!env)
		return -ENOMEM;
	if (cmd) {
		size_t n = strlen(cmd);

		/* A command line is far below a pipe's buffer: written whole
		 * before the child runs, never blocking. */
		if (pipe2(fds, O_CLOEXEC) || write(fds[1], cmd, n) != (ssize_t)n ||
		    write(fds[1], "\n", 1) != 1) {
			r = -errno;
			goto out;
		}
		close(fds[1]);
		fds[1] = -1;
	}
	pid = fork();
	if (pid < 0) {
		r = -errno;
		goto out;
	}
	if (pid == 0) {
		child_setup(fds[0], quiet);
		execve(m->control, argv, env);
		if (!quiet)
			fprintf(stderr, "kmux: daemon: cannot run %s: %s\n",
				m->control, strerror(errno));
		_exit(127);
	}
	until = now_s() + MPS_CMD_TIMEOUT_S;
	for (;;) {
		w = waitpid(pid, &st, WNOHANG);
		if (w == pid)
			break;
		if (w < 0 && errno != EINTR) {
			r = -errno;
			goto out;
		}
		if (now_s() > until) {
			kill(pid, SIGKILL);
			while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
				;
			r = -ETIMEDOUT;
			goto out;
		}
		sleep_s(0.01);
	}
	r = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
out:
	if (fds[0] >= 0)
		close(fds[0]);
	if (fds[1] >= 0)
		close(fds[1]);
	spawn_env_free(env);
	return r;
}

static bool mps_answers(const struct mps *m)
{
	return mps_run(m, "get_server_list", true) == 0;
}

static int mps_make_dirs(struct mps *m, unsigned uid, char *err,
			 size_t errlen)
{
	int r;

	r = paths_make_dir(m->dir, 0700, (uid_t)uid, true, err, errlen);
	if (!r)
		r = paths_make_dir(m->pipe, 0700, (uid_t)uid, true, err,
				   errlen);
	if (!r)
		r = paths_make_dir(m->log, 0700, (uid_t)uid, true, err,
				   errlen);
	return r;
}

int mps_start(struct mps *m, unsigned uid, char *err, size_t errlen)
{
	double until;
	int r;

	m->on = m->adopted = false;
	r = mps_make_dirs(m, uid, err, errlen);
	if (r)
		return r;
	/*
	 * An earlier kmuxd on this socket died without stopping its daemon
	 * (kill -9): its jobs may still be clients, so it is kept, not
	 * stopped, and no second one is started beside it.
	 */
	if (mps_answers(m)) {
		m->on = m->adopted = true;
		return 0;
	}
	r = mps_run(m, NULL, false);
	if (r != 0) {
		if (r < 0)
			snprintf(err, errlen, "the MPS control daemon did not "
				 "start: %s -d: %s (CUDA_MPS_PIPE_DIRECTORY=%s)",
				 m->control, strerror(-r), m->pipe);
		else
			snprintf(err, errlen, "the MPS control daemon did not "
				 "start: %s -d exited with status %d "
				 "(CUDA_MPS_PIPE_DIRECTORY=%s; its log: %s)",
				 m->control, r, m->pipe, m->log);
		return -EIO;
	}
	/* -d returns once it forked: give the daemon a moment to listen. */
	until = now_s() + MPS_UP_WAIT_S;
	while (!mps_answers(m)) {
		if (now_s() > until) {
			snprintf(err, errlen, "the MPS control daemon started "
				 "by %s -d does not answer get_server_list in "
				 "%s after %g s (its log: %s)", m->control,
				 m->pipe, MPS_UP_WAIT_S, m->log);
			mps_run(m, "quit", true);
			return -ETIMEDOUT;
		}
		sleep_s(0.05);
	}
	m->on = true;
	return 0;
}

void mps_stop(struct mps *m)
{
	double until;
	int r;

	if (!m->on)
		return;
	m->on = false;
	r = mps_run(m, "quit", false);
	if (r != 0) {
		log_warn("daemon: mps: quit to the MPS control daemon in %s "
			 "%s %d", m->pipe, r < 0 ? "failed:" : "exited with",
			 r < 0 ? -r : r);
		return;
	}
	until = now_s() + MPS_QUIT_WAIT_S;
	while (mps_answers(m)) {
		if (now_s() > until) {
			log_warn("daemon: mps: the MPS control daemon in %s "
				 "still answers %g s after quit (it waits for "
				 "its clients: jobs still running)", m->pipe,
				 MPS_QUIT_WAIT_S);
			return;
		}
		sleep_s(0.1);
	}
	log_info("daemon: mps: the MPS control daemon in %s stopped",
		 m->pipe);
}
