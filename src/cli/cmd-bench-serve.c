/*
 * cmd-bench-serve.c - `kmux bench serve`, `kmux bench submit` and `kmux
 * bench run --workers` (issue 6): persistent context workers.
 *
 * serve listens on a private Unix socket (mode 0600 in a 0700 directory:
 * $KMUX_BENCH_SOCKET, else bench.sock beside kmuxd's socket) and runs what
 * clients submit through N workers (bench-serve.c); submit sends one job
 * (with its environment) and waits for its record, and leaving early (a
 * signal) cancels it; run --workers runs a batch through N workers
 * started for it.  The workers run python/kmux/worker.py, found beside
 * kmux ($KMUX_WORKER_PY, else DIR/../python, else DIR/../lib/kmux/python,
 * where DIR holds the running kmux).
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "bench-serve.h"
#include "client.h"
#include "cmd-bench.h"
#include "cmd.h"
#include "num.h"
#include "paths.h"
#include "sock.h"
#include "spawn.h"

#define BENCH_MAX_WORKERS 256
#define BENCH_SOCKET_NAME "bench.sock"

/* --- what serve and run --workers share ---------------------------------- */

static int find_worker_py(char *buf, size_t len)
{
	const char *v = getenv("KMUX_WORKER_PY");
	static const char *const rel[] = {
		"../python/kmux/worker.py", "../lib/kmux/python/kmux/worker.py",
	};
	char exe[PATH_MAX], path[PATH_MAX + 64], *slash;
	ssize_t n;

	if (v && *v) {
		snprintf(buf, len, "%s", v);
		return 0;
	}
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0)
		goto none;
	exe[n] = '\0';
	slash = strrchr(exe, '/');
	if (slash)
		*slash = '\0';
	for (size_t i = 0; i < sizeof(rel) / sizeof(rel[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", exe, rel[i]);
		if (access(path, R_OK) == 0 && realpath(path, buf) &&
		    strlen(buf) < len)
			return 0;
	}
none:
	fprintf(stderr, "kmux: bench: cannot find python/kmux/worker.py "
		"beside kmux; set KMUX_WORKER_PY\n");
	return -ENOENT;
}

struct pool_env {
	char worker_py[PATH_MAX];
	char **env;
	const char *python;
};

static int pool_env(struct pool_env *p, const char *python, bool no_preload)
{
	char lib[4096], err[4200];

	memset(p, 0, sizeof(*p));
	p->python = python ? python : getenv("KMUX_PYTHON");
	if (!p->python || !*p->python)
		p->python = "python3";
	if (find_worker_py(p->worker_py, sizeof(p->worker_py)))
		return -ENOENT;
	if (!no_preload && spawn_find_library(lib, sizeof(lib), err,
					      sizeof(err))) {
		fprintf(stderr, "kmux: %s\n", err);
		return -ENOENT;
	}
	p->env = spawn_env_build(&(struct spawn_opts){
		.library = no_preload ? NULL : lib }, environ);
	if (!p->env) {
		fprintf(stderr, "kmux: bench: out of memory\n");
		return -ENOMEM;
	}
	return 0;
}

static int parse_workers(const char *s, int *out)
{
	long v;

	if (num_parse(s, 1, BENCH_MAX_WORKERS, &v))
		return -EINVAL;
	*out = (int)v;
	return 0;
}

/* --socket, else $KMUX_BENCH_SOCKET, else beside kmuxd's socket. */
static int socket_path(const char *opt, char *buf, size_t len, bool make)
{
	struct kmux_paths p;
	const char *v = opt ? opt : getenv("KMUX_BENCH_SOCKET");
	char err[512];
	int r;

	if (v && *v) {
		if (strlen(v) > PATHS_SOCKET_MAX) {
			fprintf(stderr, "kmux: bench: socket path %s is too "
				"long\n", v);
			return -ENAMETOOLONG;
		}
		snprintf(buf, len, "%s", v);
		return 0;
	}
	r = paths_resolve(&p, false, NULL, NULL, err, sizeof(err));
	if (r && r != -ENOENT) {
		fprintf(stderr, "kmux: bench: %s\n", err);
		return r;
	}
	if (make && (r = paths_make_dir(p.run_dir, 0700, getuid(), true, err,
					sizeof(err)))) {
		fprintf(stderr, "kmux: bench: %s\n", err);
		return r;
	}
	if ((size_t)snprintf(buf, len, "%s/%s", p.run_dir, BENCH_SOCKET_NAME)
	    >= len || strlen(buf) > PATHS_SOCKET_MAX) {
		fprintf(stderr, "kmux: bench: socket path %s/%s is too long\n",
			p.run_dir, BENCH_SOCKET_NAME);
		return -ENAMETOOLONG;
	}
	return 0;
}

/* --- serve ------------------------------------------------------------------ */

static void serve_help(void)
{
	fputs("usage: kmux bench serve [-w N] [--socket PATH] [--python PY] "
	      "[--no-preload]\n"
	      "\n"
	      "Start N persistent workers, each keeping a CUDA context (and\n"
	      "torch, when importable) across jobs, and run the Python jobs\n"
	      "that `kmux bench submit` sends, one after another in each\n"
	      "worker; other commands run as plain processes.  Runs until\n"
	      "SIGINT or SIGTERM.\n"
	      "\n"
	      "  -w, --workers N   workers (1..256, default 1)\n"
	      "      --socket PATH where to listen (default $KMUX_BENCH_SOCKET,\n"
	      "                    else bench.sock beside kmuxd's socket)\n"
	      "      --python PY   the workers' interpreter (default\n"
	      "                    $KMUX_PYTHON, else python3)\n"
	      "      --no-preload  workers without libkmux.so\n"
	      "\n"
	      "See kmux-bench(1).\n", stdout);
}

/* A listening socket at path, unless something listens there already. */
static int listen_at(const char *path)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	mode_t old;
	int fd, r;

	if (sock_connect_unix(path, 1000, &fd) == 0) {
		close(fd);
		fprintf(stderr, "kmux: bench serve: a server already listens "
			"on %s\n", path);
		return -EADDRINUSE;
	}
	if (unlink(path) && errno != ENOENT) {
		fprintf(stderr, "kmux: bench serve: cannot remove %s: %s\n",
			path, strerror(errno));
		return -errno;
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		goto fail;
	/* socket_path() checked it fits (PATHS_SOCKET_MAX). */
	memcpy(a.sun_path, path, strnlen(path, sizeof(a.sun_path) - 1));
	old = umask(0177);
	r = bind(fd, (struct sockaddr *)&a, sizeof(a));
	umask(old);
	if (r || chmod(path, 0600) || listen(fd, 64))
		goto fail;
	return fd;
fail:
	r = -errno;
	fprintf(stderr, "kmux: bench serve: cannot listen on %s: %s\n", path,
		strerror(errno));
	if (fd >= 0)
		close(fd);
	return r;
}

int bench_serve(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "workers", required_argument, NULL, 'w' },
		{ "socket", required_argument, NULL, 'S' },
		{ "python", required_argument, NULL, 'p' },
		{ "no-preload", no_argument, NULL, 'P' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *sockopt = NULL, *python = NULL;
	char path[PATH_MAX];
	struct pool_env pe = { .env = NULL };
	struct bsrv *s = NULL;
	bool no_preload = false;
	int workers = 1, c, fd = -1, r = KMUX_EXIT_FAILURE;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+:w:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'w':
			if (parse_workers(optarg, &workers))
				return cmd_usage_error(&cmd_bench_entry, "bad "
					"--workers '%s' (1..%d)", optarg,
					BENCH_MAX_WORKERS);
			break;
		case 'S':
			sockopt = optarg;
			break;
		case 'p':
			python = optarg;
			break;
		case 'P':
			no_preload = true;
			break;
		case 'h':
			serve_help();
			return KMUX_EXIT_OK;
		default:
			return cmd_option_error(&cmd_bench_entry, argv, c);
		}
	}
	if (optind < argc)
		return cmd_usage_error(&cmd_bench_entry, "serve takes no "
				       "arguments");
	if (socket_path(sockopt, path, sizeof(path), true) ||
	    pool_env(&pe, python, no_preload))
		goto out;
	fd = listen_at(path);
	if (fd < 0)
		goto out;
	if (bsrv_new(&(struct bsrv_opts){
		.workers = workers, .concurrency = workers,
		.python = pe.python, .worker_py = pe.worker_py,
		.env = pe.env, .job_env = environ, .listen_fd = fd }, &s)) {
		close(fd);
		unlink(path);
		goto out;
	}
	fprintf(stderr, "kmux: bench serve: %d worker(s), listening on %s\n",
		workers, path);
	c = bsrv_run(s, false);
	unlink(path);
	if (c < 0)
		goto out;
	fprintf(stderr, "kmux: bench serve: stopped (%ld job(s) failed)\n",
		bsrv_failed(s));
	r = KMUX_EXIT_OK;
out:
	bsrv_free(s);
	spawn_env_free(pe.env);
	return r;
}

/* --- submit ----------------------------------------------------------------- */

static void submit_help(void)
{
	fputs("usage: kmux bench submit [--socket PATH] [-o DIR] -- SCRIPT.py "
	      "[ARG...]\n"
	      "\n"
	      "Run SCRIPT.py ARGS in a worker of `kmux bench serve` (any other\n"
	      "command: as a plain process), in this directory, with this\n"
	      "environment (but LD_PRELOAD, LD_LIBRARY_PATH,\n"
	      "CUDA_VISIBLE_DEVICES and KMUX_*, which stay the worker's); wait,\n"
	      "print its JSON record and exit with its exit status (128 + N\n"
	      "when signal N ended it).  Interrupted (SIGINT, SIGTERM,\n"
	      "SIGHUP), it exits 128 + the signal and the server cancels the\n"
	      "job (a running one's worker is killed and replaced).\n"
	      "\n"
	      "      --socket PATH the server's socket (see bench serve)\n"
	      "  -o, --out DIR     its output in DIR/I.out and I.err (default:\n"
	      "                    a new directory under $TMPDIR or /tmp)\n"
	      "\n"
	      "Exit status: the job's; 1 when the server refused it; 2 for bad\n"
	      "usage; 5 when no server listens.  See kmux-bench(1).\n", stdout);
}

static int submit_out_dir(const char *opt, char *buf, size_t len)
{
	const char *tmp = getenv("TMPDIR");

	if (opt) {
		if (mkdir(opt, 0755) && errno != EEXIST) {
			fprintf(stderr, "kmux: bench submit: cannot create %s: "
				"%s\n", opt, strerror(errno));
			return -errno;
		}
		if (!realpath(opt, buf)) {
			fprintf(stderr, "kmux: bench submit: %s: %s\n", opt,
				strerror(errno));
			return -errno;
		}
		return 0;
	}
	snprintf(buf, len, "%s/kmux-bench.XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(buf)) {
		fprintf(stderr, "kmux: bench submit: cannot create %s: %s\n",
			buf, strerror(errno));
		return -errno;
	}
	return 0;
}

/*
 * Leaving closes the connection, which is what cancels the job: nothing
 * else to do, but to exit as the shell expects of an interrupted command.
 */
static void submit_leave(int sig)
{
	_exit(128 + sig);
}

static void submit_signals(void)
{
	static const int sigs[] = { SIGINT, SIGTERM, SIGHUP };
	struct sigaction sa = { .sa_handler = submit_leave };

	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		sigaction(sigs[i], &sa, NULL);
}

/* The reply: print it, and the exit status it gives. */
static int submit_result(const char *reply)
{
	cJSON *m = cJSON_Parse(reply);
	const cJSON *e = cJSON_GetObjectItemCaseSensitive(m, "error");
	const cJSON *ex = cJSON_GetObjectItemCaseSensitive(m, "exit");
	const cJSON *sig = cJSON_GetObjectItemCaseSensitive(m, "signal");
	int r = KMUX_EXIT_FAILURE;

	fputs(reply, stdout);
	fflush(stdout);
	if (cJSON_IsString(e))
		fprintf(stderr, "kmux: bench submit: %s\n", e->valuestring);
	if (cJSON_IsNumber(sig) && sig->valueint > 0)
		r = 128 + (sig->valueint & 0x7f);
	else if (cJSON_IsNumber(ex) && ex->valueint >= 0)
		r = ex->valueint & 0xff;
	else if (!cJSON_IsString(e))
		fprintf(stderr, "kmux: bench submit: the server's reply is not "
			"a record\n");
	cJSON_Delete(m);
	return r;
}

int bench_submit(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "socket", required_argument, NULL, 'S' },
		{ "out", required_argument, NULL, 'o' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *sockopt = NULL, *out_opt = NULL;
	char path[PATH_MAX], out[PATH_MAX], cwd[PATH_MAX];
	char *req = NULL, *reply = NULL;
	size_t len = 0, cap = 0, off = 0;
	struct bjob j = { 0 };
	int c, fd = -1, r = KMUX_EXIT_FAILURE;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+:o:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'S':
			sockopt = optarg;
			break;
		case 'o':
			out_opt = optarg;
			break;
		case 'h':
			submit_help();
			return KMUX_EXIT_OK;
		default:
			return cmd_option_error(&cmd_bench_entry, argv, c);
		}
	}
	if (optind >= argc)
		return cmd_usage_error(&cmd_bench_entry, "submit: no "
				       "command (-- SCRIPT.py ARGS...)");
	submit_signals();
	if (socket_path(sockopt, path, sizeof(path), false))
		return KMUX_EXIT_FAILURE;
	r = sock_connect_unix(path, 5000, &fd);
	if (r) {
		fprintf(stderr, "kmux: bench submit: no bench server at %s: %s "
			"(start one with `kmux bench serve`)\n", path,
			strerror(-r));
		return KMUX_EXIT_NODAEMON;
	}
	r = KMUX_EXIT_FAILURE;
	if (!getcwd(cwd, sizeof(cwd))) {
		fprintf(stderr, "kmux: bench submit: getcwd: %s\n",
			strerror(errno));
		goto out;
	}
	if (submit_out_dir(out_opt, out, sizeof(out)))
		goto out;
	j.argv = argv + optind;
	j.argc = argc - optind;
	j.cwd = cwd;
	j.out_dir = out;
	j.env = environ;
	while (environ[j.nenv])
		j.nenv++;
	if (j.nenv > BJOB_MAX_ENV) {
		fprintf(stderr, "kmux: bench submit: %d environment variables, "
			"more than a request may carry (%d)\n", j.nenv,
			BJOB_MAX_ENV);
		goto out;
	}
	req = bjob_request(&j);
	if (!req) {
		fprintf(stderr, "kmux: bench submit: out of memory\n");
		goto out;
	}
	if (strlen(req) - 1 > BJOB_MAX_LINE) {
		fprintf(stderr, "kmux: bench submit: the request (command and "
			"environment) is %zu bytes, more than a request may be "
			"(%d): unset some variables\n", strlen(req) - 1,
			BJOB_MAX_LINE);
		goto out;
	}
	for (size_t n = strlen(req); off < n;) {
		ssize_t w = send(fd, req + off, n - off, MSG_NOSIGNAL);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0) {
			fprintf(stderr, "kmux: bench submit: send to %s: %s\n",
				path, strerror(errno));
			goto out;
		}
		off += (size_t)w;
	}
	/* The reply, until the server closes the connection. */
	for (;;) {
		ssize_t got;

		if (len + 4096 + 1 > cap) {
			char *nr = realloc(reply, cap = cap * 2 + 8192);

			if (!nr)
				goto out;
			reply = nr;
		}
		got = read(fd, reply + len, cap - len - 1);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0) {
			fprintf(stderr, "kmux: bench submit: read from %s: %s\n",
				path, strerror(errno));
			goto out;
		}
		if (got == 0)
			break;
		len += (size_t)got;
	}
	if (!len) {
		fprintf(stderr, "kmux: bench submit: the server closed the "
			"connection without a reply\n");
		goto out;
	}
	reply[len] = '\0';
	r = submit_result(reply);
out:
	free(req);
	free(reply);
	if (fd >= 0)
		close(fd);
	return r;
}

/* --- run --workers ------------------------------------------------------------ */

static void batch_done(void *arg, const struct bjob_result *res,
		       const char *rec)
{
	(void)res;
	fputs(rec, arg);
	fflush(arg);
}

int bench_run_workers(const struct bench_batch *b)
{
	struct pool_env pe;
	struct bsrv *s = NULL;
	char out[PATH_MAX];
	double t0;
	int r = KMUX_EXIT_FAILURE, stopped;
	long python = 0;

	if (b->out_dir && !realpath(b->out_dir, out)) {
		fprintf(stderr, "kmux: bench: %s: %s\n", b->out_dir,
			strerror(errno));
		return KMUX_EXIT_FAILURE;
	}
	if (pool_env(&pe, b->python, b->no_preload))
		goto out;
	if (bsrv_new(&(struct bsrv_opts){
		.workers = b->workers, .concurrency = b->workers,
		.python = pe.python, .worker_py = pe.worker_py,
		.env = pe.env, .job_env = environ, .listen_fd = -1,
		.done = batch_done,
		.arg = b->json }, &s))
		goto out;
	for (size_t i = 0; i < b->n; i++) {
		struct bjob j;
		int k = bjob_from_line(b->lines[i], &j);

		if (k < 0)
			goto nomem;
		python += k;
		if (b->out_dir && !(j.out_dir = strdup(out))) {
			bjob_free(&j);
			goto nomem;
		}
		if (bsrv_add(s, &j, b->lines[i], (long)i))
			goto nomem;
	}
	t0 = cmd_monotonic_s();
	stopped = bsrv_run(s, true);
	{
		double wall = cmd_monotonic_s() - t0;

		fprintf(stderr, "kmux: bench: %zu command(s) (%ld in workers), "
			"%ld failed, %.3f s, %.2f commands/min, %d workers\n",
			b->n, python, bsrv_failed(s), wall,
			wall > 0 ? (double)b->n * 60.0 / wall : 0.0,
			b->workers);
	}
	r = stopped || bsrv_failed(s) ? KMUX_EXIT_FAILURE : KMUX_EXIT_OK;
	goto out;
nomem:
	fprintf(stderr, "kmux: bench: out of memory\n");
out:
	bsrv_free(s);
	spawn_env_free(pe.env);
	return r;
}
