/*
 * spawn.c - owns running a command under the preload: finding libkmux.so,
 * the child's environment, fork/exec with exec errors reported through a
 * pipe, signal forwarding while it runs, and shell-style exit statuses.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cmd.h"
#include "proto.h"
#include "spawn.h"

#define LIBRARY_NAME "libkmux.so"

static const int forwarded[] = { PROTO_RUN_PASSED_SIGNALS };
#define NFORWARDED (sizeof(forwarded) / sizeof(forwarded[0]))

/* The running child, for the signal handler; 0 when none. */
static volatile sig_atomic_t spawn_child;
static struct sigaction spawn_saved[NFORWARDED];
static sigset_t spawn_saved_mask;

/* --- the library ---------------------------------------------------------- */

static int library_at(const char *path, char *buf, size_t len)
{
	char real[PATH_MAX];

	if (access(path, R_OK) != 0 || !realpath(path, real))
		return -errno;
	if (strlen(real) >= len)
		return -ENAMETOOLONG;
	strcpy(buf, real);
	return 0;
}

/* ld.so splits LD_PRELOAD on colons and spaces: such a path cannot go in. */
static int library_check(char *buf, char *err, size_t errlen)
{
	if (!strpbrk(buf, ": "))
		return 0;
	snprintf(err, errlen, "%s: LD_PRELOAD cannot hold a path with a "
		 "space or a colon; set KMUX_LIBRARY to a copy elsewhere", buf);
	return -EINVAL;
}

int spawn_find_library(char *buf, size_t len, char *err, size_t errlen)
{
	const char *env = getenv("KMUX_LIBRARY");
	char exe[PATH_MAX], path[PATH_MAX + 64];
	ssize_t n;
	char *slash;
	int r;

	if (env && *env) {
		r = library_at(env, buf, len);
		if (r) {
			snprintf(err, errlen, "KMUX_LIBRARY=%s: %s", env,
				 strerror(-r));
			return r;
		}
		return library_check(buf, err, errlen);
	}
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0) {
		r = n < 0 ? -errno : -ENOENT;
		snprintf(err, errlen, "cannot find %s: /proc/self/exe: %s; "
			 "set KMUX_LIBRARY", LIBRARY_NAME, strerror(-r));
		return r;
	}
	exe[n] = '\0';
	slash = strrchr(exe, '/');
	if (slash)
		*slash = '\0';
	snprintf(path, sizeof(path), "%s/%s", exe, LIBRARY_NAME);
	if (library_at(path, buf, len) == 0)
		return library_check(buf, err, errlen);
	snprintf(path, sizeof(path), "%s/../lib/kmux/%s", exe, LIBRARY_NAME);
	if (library_at(path, buf, len) == 0)
		return library_check(buf, err, errlen);
	snprintf(err, errlen, "cannot find %s in %s or %s/../lib/kmux; "
		 "set KMUX_LIBRARY", LIBRARY_NAME, exe, exe);
	return -ENOENT;
}

/* --- the environment ------------------------------------------------------ */

/* Length of NAME in "NAME=VALUE" or "NAME". */
static size_t env_name_len(const char *s)
{
	const char *eq = strchr(s, '=');

	return eq ? (size_t)(eq - s) : strlen(s);
}

static int env_overridden(const struct spawn_opts *o, const char *entry)
{
	size_t n = env_name_len(entry);

	if (o->library && n == strlen("LD_PRELOAD") &&
	    strncmp(entry, "LD_PRELOAD", n) == 0)
		return 1;
	for (const char *const *e = o->env; e && *e; e++)
		if (env_name_len(*e) == n && strncmp(*e, entry, n) == 0)
			return 1;
	return 0;
}

/* The entry of LD_PRELOAD that ends in /name (or is name). */
static int entry_is(const char *entry, size_t n, const char *name)
{
	size_t ln = strlen(name);

	return n >= ln && strncmp(entry + n - ln, name, ln) == 0 &&
	       (n == ln || entry[n - ln - 1] == '/');
}

/* A sanitizer runtime, which must stay first in LD_PRELOAD. */
static int is_sanitizer_runtime(const char *entry, size_t n)
{
	static const char *const prefixes[] = {
		"libasan", "libtsan", "liblsan", "libubsan", "libhwasan",
		"libclang_rt.",
	};
	const char *base = entry;

	for (size_t i = 0; i < n; i++)
		if (entry[i] == '/')
			base = entry + i + 1;
	for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++)
		if (strncmp(base, prefixes[i], strlen(prefixes[i])) == 0 &&
		    (size_t)(base - entry) + strlen(prefixes[i]) <= n)
			return 1;
	return 0;
}

/*
 * Append to p the entries of old (split on colons and spaces, as ld.so
 * does) that are sanitizer runtimes (want_san) or the others, never a
 * libkmux.so (ours or another build's: kmux must not be loaded twice).
 */
static char *copy_entries(char *p, const char *old, int want_san)
{
	while (old && *old) {
		size_t n = strcspn(old, ": ");

		if (n && !entry_is(old, n, LIBRARY_NAME) &&
		    is_sanitizer_runtime(old, n) == want_san) {
			if (p[-1] != '=')
				*p++ = ':';
			memcpy(p, old, n);
			p += n;
		}
		old += n;
		old += strspn(old, ": ");
	}
	*p = '\0';
	return p;
}

/*
 * "LD_PRELOAD=<library>:<the old entries>", except that sanitizer runtimes
 * already there stay in front of it (they refuse to run otherwise).
 */
static char *preload_value(const char *library, const char *old)
{
	size_t cap = strlen("LD_PRELOAD=") + strlen(library) +
		     (old ? strlen(old) : 0) + 3;
	char *v = malloc(cap), *p;

	if (!v)
		return NULL;
	p = v + sprintf(v, "LD_PRELOAD=");
	p = copy_entries(p, old, 1);
	if (p[-1] != '=')
		*p++ = ':';
	p += sprintf(p, "%s", library);
	copy_entries(p, old, 0);
	return v;
}

char **spawn_env_build(const struct spawn_opts *o, char *const *base)
{
	size_t n = 0, extra = 0, k = 0;
	const char *old_preload = NULL;
	char **env;

	for (char *const *e = base; e && *e; e++) {
		n++;
		if (strncmp(*e, "LD_PRELOAD=", strlen("LD_PRELOAD=")) == 0)
			old_preload = *e + strlen("LD_PRELOAD=");
	}
	for (const char *const *e = o->env; e && *e; e++)
		extra++;
	env = calloc(n + extra + 2, sizeof(*env));
	if (!env)
		return NULL;
	for (char *const *e = base; e && *e; e++) {
		if (env_overridden(o, *e))
			continue;
		if (!(env[k++] = strdup(*e)))
			goto err;
	}
	for (const char *const *e = o->env; e && *e; e++) {
		if (!strchr(*e, '='))
			continue;	/* an unset */
		if (!(env[k++] = strdup(*e)))
			goto err;
	}
	if (o->library && !(env[k++] = preload_value(o->library, old_preload)))
		goto err;
	return env;
err:
	spawn_env_free(env);
	return NULL;
}

void spawn_env_free(char **env)
{
	if (!env)
		return;
	for (char **e = env; *e; e++)
		free(*e);
	free(env);
}

/* --- signals -------------------------------------------------------------- */

static void spawn_forward(int sig, siginfo_t *si, void *uc)
{
	int saved = errno;
	pid_t pid = spawn_child;

	(void)uc;
	/*
	 * The terminal signals its whole foreground process group, the
	 * command included (it is in ours): do not deliver that twice.
	 */
	if (si && si->si_code == SI_KERNEL) {
		errno = saved;
		return;
	}
	if (pid > 0)
		kill(pid, sig);
	errno = saved;
}

static void block_forwarded(sigset_t *old)
{
	sigset_t set;

	sigemptyset(&set);
	for (size_t i = 0; i < NFORWARDED; i++)
		sigaddset(&set, forwarded[i]);
	sigprocmask(SIG_BLOCK, &set, old);
}

static void install_forwarding(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = spawn_forward;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigfillset(&sa.sa_mask);
	for (size_t i = 0; i < NFORWARDED; i++)
		sigaction(forwarded[i], &sa, &spawn_saved[i]);
}

static void restore_signals(void)
{
	for (size_t i = 0; i < NFORWARDED; i++)
		sigaction(forwarded[i], &spawn_saved[i], NULL);
}

/* --- running -------------------------------------------------------------- */

int spawn_exec_status(int exec_errno)
{
	return exec_errno == ENOENT ? KMUX_EXIT_NOTFOUND : KMUX_EXIT_NOEXEC;
}

/* In the child: what the command should inherit, then exec.  Never returns. */
static void child_exec(const struct spawn_opts *o, char **env, int errfd)
{
	int err;

	/* Dispositions and mask as kmux found them (ignored stays ignored). */
	restore_signals();
	sigprocmask(SIG_SETMASK, &spawn_saved_mask, NULL);
	execvpe(o->argv[0], o->argv, env);
	err = errno;
	while (write(errfd, &err, sizeof(err)) < 0 && errno == EINTR)
		;
	_exit(KMUX_EXIT_NOTFOUND);
}

/* 0 when the exec succeeded (EOF), else the child's errno. */
static int read_exec_error(int fd)
{
	int err = 0;
	ssize_t n;

	do
		n = read(fd, &err, sizeof(err));
	while (n < 0 && errno == EINTR);
	return n == (ssize_t)sizeof(err) ? err : 0;
}

int spawn_start(const struct spawn_opts *o, struct spawn *sp)
{
	int fds[2], r = 0, st;
	char **env;
	pid_t pid;

	sp->pid = -1;
	sp->exec_errno = 0;
	if (!o->argv || !o->argv[0])
		return -EINVAL;
	env = spawn_env_build(o, environ);
	if (!env)
		return -ENOMEM;
	if (pipe2(fds, O_CLOEXEC)) {
		r = -errno;
		goto out_env;
	}
	/* No signal may find a half-set-up child: block until it is known. */
	block_forwarded(&spawn_saved_mask);
	install_forwarding();
	pid = fork();
	if (pid < 0) {
		r = -errno;
		restore_signals();
		sigprocmask(SIG_SETMASK, &spawn_saved_mask, NULL);
		goto out_pipe;
	}
	if (pid == 0) {
		close(fds[0]);
		child_exec(o, env, fds[1]);
	}
	spawn_child = pid;
	sp->pid = pid;
	sigprocmask(SIG_SETMASK, &spawn_saved_mask, NULL);
	close(fds[1]);
	fds[1] = -1;
	sp->exec_errno = read_exec_error(fds[0]);
	if (sp->exec_errno) {
		while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
			;
		spawn_child = 0;
		restore_signals();
		sp->pid = -1;
		r = -sp->exec_errno;
	}
out_pipe:
	close(fds[0]);
	if (fds[1] >= 0)
		close(fds[1]);
out_env:
	spawn_env_free(env);
	return r;
}

int spawn_wait(struct spawn *sp)
{
	int st, r;

	if (sp->pid <= 0)
		return -ECHILD;
	while ((r = (int)waitpid(sp->pid, &st, 0)) < 0 && errno == EINTR)
		;
	if (r < 0)
		r = -errno;
	spawn_child = 0;
	restore_signals();
	sp->pid = -1;
	if (r < 0)
		return r;
	if (WIFEXITED(st))
		return WEXITSTATUS(st);
	if (WIFSIGNALED(st))
		return 128 + WTERMSIG(st);
	return KMUX_EXIT_FAILURE;
}
