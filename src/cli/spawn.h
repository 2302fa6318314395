/*
 * spawn.h - running a command under libkmux.so, for every kmux command that
 * does (trace; later run, verify).
 *
 * spawn_find_library() locates libkmux.so; spawn_start() forks and execs the
 * command with the preload and extra KMUX_* variables in its environment and
 * reports an exec failure back through a close-on-exec pipe; spawn_wait()
 * forwards signals to it and returns its status the way a shell would.
 */
#ifndef KMUX_SPAWN_H
#define KMUX_SPAWN_H

#include <stddef.h>
#include <sys/types.h>

struct spawn_opts {
	char *const *argv;	/* the command; argv[0] is looked up in PATH */
	const char *library;	/* libkmux.so to preload; NULL: none */
	/*
	 * NULL-terminated list, or NULL: "NAME=VALUE" sets NAME in the
	 * command's environment, "NAME" removes it.
	 */
	const char *const *env;
};

struct spawn {
	pid_t pid;
	int exec_errno;		/* set when the command could not be run */
};

/*
 * Where libkmux.so is: $KMUX_LIBRARY; else DIR/libkmux.so, where DIR holds
 * the running kmux (/proc/self/exe); else DIR/../lib/kmux/libkmux.so (an
 * installed layout).  An absolute path in buf, 0; or -errno with a message
 * for people in err.
 */
int spawn_find_library(char *buf, size_t len, char *err, size_t errlen);

/*
 * The child's environment: base (normally environ) with o->env applied and, when
 * o->library is set, LD_PRELOAD starting with it (any other libkmux.so in
 * LD_PRELOAD is dropped, so kmux is never loaded twice).  NULL-terminated,
 * free with spawn_env_free().  NULL on out of memory.
 */
char **spawn_env_build(const struct spawn_opts *o, char *const *base);
void spawn_env_free(char **env);

/*
 * Start the command.  0: running (sp->pid).  -errno: not started; when the
 * exec itself failed, sp->exec_errno says why (the child is reaped).  From
 * here until spawn_wait() returns, SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1
 * and SIGUSR2 sent to kmux go to the command instead (kmux is not killed by
 * them); the terminal's own signals reach the command directly and are not
 * sent twice.
 */
int spawn_start(const struct spawn_opts *o, struct spawn *sp);

/* Wait for it: its exit code, or 128 + the signal that killed it; -errno. */
int spawn_wait(struct spawn *sp);

/* The shell's status for an exec failure: 127 not found, 126 otherwise. */
int spawn_exec_status(int exec_errno);

#endif
