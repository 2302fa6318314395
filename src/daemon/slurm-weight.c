/*
 * slurm-weight.c - the node's busyness as its Slurm weight (see
 * slurm-weight.h): the pure mapping, and the daemon side that runs
 * scontrol.
 *
 * scontrol is run as a child of the daemon, one at a time, its output read
 * once it has exited (one line; a child stuck for 30 s, say on a controller
 * that does not answer, is killed).  The daemon's SIGCHLD reaper hands us
 * the exits that are not jobs.  Rate limit: at most one update per
 * interval; hysteresis: only a change of bucket is an update at all.  The
 * weight is read back every 3 intervals: a controller restarted or
 * reconfigured from slurm.conf has forgotten it, and it is set again.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "daemon.h"
#include "log.h"
#include "slurm-weight.h"

/* --- the mapping (pure) ---------------------------------------------------- */

void slurm_weight_params_default(struct slurm_weight_params *p)
{
	p->bucket_width = 0.25;
	p->hysteresis = 0.05;
	p->nbuckets = 16;
	p->base = 1;
}

double slurm_weight_node_score(const struct admit_gpu *gpus, size_t n,
			       const struct admit_policy *ap)
{
	double sum = 0;

	if (n == 0)
		return 0;
	for (size_t i = 0; i < n; i++)
		sum += admit_busyness(&gpus[i], ap);
	return sum / (double)n;
}

static int clamp_bucket(double b, const struct slurm_weight_params *p)
{
	if (!(b > 0))	/* NaN too */
		return 0;
	if (b >= (double)(p->nbuckets - 1))
		return (int)p->nbuckets - 1;
	return (int)b;
}

int slurm_weight_bucket(double score, int prev,
			const struct slurm_weight_params *p)
{
	double w = p->bucket_width;

	if (!(score > 0))
		score = 0;
	if (prev >= 0 && prev < (int)p->nbuckets) {
		double lo = prev * w - p->hysteresis;
		double hi = (prev + 1) * w + p->hysteresis;

		/* The top bucket has no upper edge, the lowest no lower one. */
		if (prev == (int)p->nbuckets - 1)
			hi = score + 1;
		if (score >= lo && score < hi)
			return prev;
	}
	return clamp_bucket(score / w, p);
}

uint32_t slurm_weight_of_bucket(int bucket, const struct slurm_weight_params *p)
{
	if (bucket < 0)
		bucket = 0;
	if (bucket >= (int)p->nbuckets)
		bucket = (int)p->nbuckets - 1;
	return p->base + (uint32_t)bucket;
}

int slurm_weight_parse_show(const char *text, uint32_t *weight)
{
	const char *p = text;
	unsigned long long v;

	while ((p = strstr(p, "Weight="))) {
		if (p != text && p[-1] != ' ' && p[-1] != '\t' && p[-1] != '\n') {
			p++;
			continue;
		}
		p += strlen("Weight=");
		if (*p < '0' || *p > '9')
			return -ERANGE;
		v = 0;
		for (; *p >= '0' && *p <= '9'; p++) {
			v = v * 10 + (unsigned)(*p - '0');
			if (v > UINT32_MAX)
				return -ERANGE;
		}
		if (*p && *p != ' ' && *p != '\t' && *p != '\n')
			return -ERANGE;
		*weight = (uint32_t)v;
		return 0;
	}
	return -ENOENT;
}

bool slurm_weight_node_ok(const char *name)
{
	size_t n = strlen(name);

	if (n == 0 || n > 64 || name[0] == '-')
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = name[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-'))
			return false;
	}
	return true;
}

/* --- the daemon side ------------------------------------------------------- */

#define SW_CHILD_TIMEOUT_US (30u * 1000000u)
#define SW_OUT_MAX 8192

enum sw_kind { SW_NONE, SW_SHOW, SW_UPDATE };

struct slurm_weight {
	char node[72];
	const char *scontrol;
	struct slurm_weight_params params;
	uint64_t interval_us;
	uint64_t recheck_us;

	int bucket;		/* -1: none yet */
	uint32_t set;		/* what the controller has from us; 0: unknown */
	uint64_t last_update_us;
	uint64_t last_check_us;
	bool failing;		/* the last scontrol failed (logged once) */

	/* The scontrol running, if any. */
	enum sw_kind kind;
	pid_t pid;
	int out_fd;
	uint64_t started_us;
	uint32_t sending;	/* SW_UPDATE: the weight in flight */
};

int slurm_weight_init(struct server *srv, const char *node, double interval_s,
		      char *err, size_t errlen)
{
	struct slurm_weight *sw;
	const char *knob = getenv("KMUX_SCONTROL");

	if (!slurm_weight_node_ok(node)) {
		snprintf(err, errlen, "--slurm-node '%s': not a Slurm node name "
			 "(letters, digits, '.', '_', '-'; at most 64)", node);
		return -EINVAL;
	}
	if (!(interval_s >= 0.1 && interval_s <= 3600)) {
		snprintf(err, errlen, "--slurm-interval %g: want 0.1 .. 3600 "
			 "seconds", interval_s);
		return -EINVAL;
	}
	sw = calloc(1, sizeof(*sw));
	if (!sw) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	snprintf(sw->node, sizeof(sw->node), "%s", node);
	sw->scontrol = knob && *knob ? knob : "scontrol";
	slurm_weight_params_default(&sw->params);
	sw->interval_us = (uint64_t)(interval_s * 1e6);
	sw->recheck_us = 3 * sw->interval_us;
	sw->bucket = -1;
	sw->out_fd = -1;
	srv->slurm = sw;
	log_info("daemon: Slurm node %s: weight %u (idle) .. %u (busiest), "
		 "updated at most every %g s", node,
		 slurm_weight_of_bucket(0, &sw->params),
		 slurm_weight_of_bucket((int)sw->params.nbuckets - 1,
					&sw->params), interval_s);
	return 0;
}

/* Fork scontrol with argv; its stdout and stderr come back on a pipe. */
static int sw_spawn(struct slurm_weight *sw, enum sw_kind kind, char **argv)
{
	int fds[2], devnull;
	pid_t pid;

	if (pipe2(fds, O_CLOEXEC | O_NONBLOCK))
		return -errno;
	pid = fork();
	if (pid < 0) {
		int r = -errno;

		close(fds[0]);
		close(fds[1]);
		return r;
	}
	if (pid == 0) {
		/* Async-signal-safe from here: the daemon's heap is not ours. */
		struct sigaction sa;
		sigset_t none;

		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = SIG_DFL;
		for (int sig = 1; sig < NSIG; sig++)
			sigaction(sig, &sa, NULL);
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		devnull = open("/dev/null", O_RDONLY);
		if (devnull < 0 || dup2(devnull, STDIN_FILENO) < 0 ||
		    dup2(fds[1], STDOUT_FILENO) < 0 ||
		    dup2(fds[1], STDERR_FILENO) < 0)
			_exit(126);
		syscall(SYS_close_range, 3u, ~0u, 4u /* CLOSE_RANGE_CLOEXEC */);
		/* The pipe must stay blocking for the child's writes. */
		fcntl(STDOUT_FILENO, F_SETFL, 0);
		execvp(argv[0], argv);
		_exit(errno == ENOENT ? 127 : 126);
	}
	close(fds[1]);
	sw->kind = kind;
	sw->pid = pid;
	sw->out_fd = fds[0];
	sw->started_us = server_now_us();
	return 0;
}

static void sw_update(struct slurm_weight *sw, uint32_t w)
{
	char node[96], weight[32];
	char *argv[] = { (char *)sw->scontrol, "update", node, weight, NULL };
	int r;

	snprintf(node, sizeof(node), "NodeName=%s", sw->node);
	snprintf(weight, sizeof(weight), "Weight=%u", w);
	r = sw_spawn(sw, SW_UPDATE, argv);
	sw->last_update_us = server_now_us();
	if (r) {
		log_warn("daemon: Slurm node %s: cannot run %s: %s", sw->node,
			 sw->scontrol, strerror(-r));
		return;
	}
	sw->sending = w;
}

static void sw_show(struct slurm_weight *sw)
{
	char *argv[] = { (char *)sw->scontrol, "-o", "show", "node",
			 sw->node, NULL };
	int r;

	sw->last_check_us = server_now_us();
	r = sw_spawn(sw, SW_SHOW, argv);
	if (r)
		log_warn("daemon: Slurm node %s: cannot run %s: %s", sw->node,
			 sw->scontrol, strerror(-r));
}

void slurm_weight_tick(struct server *srv)
{
	struct slurm_weight *sw = srv->slurm;
	uint64_t now = server_now_us();
	uint32_t want;
	double score;

	if (!sw)
		return;
	if (sw->pid > 0) {
		if (now - sw->started_us > SW_CHILD_TIMEOUT_US) {
			log_warn("daemon: Slurm node %s: %s has run for 30 s: "
				 "killed", sw->node, sw->scontrol);
			kill(sw->pid, SIGKILL);
			sw->started_us = now;	/* once */
		}
		return;
	}
	if (srv->ngpus == 0)
		return;
	score = slurm_weight_node_score(srv->gpus, srv->ngpus, &srv->policy);
	sw->bucket = slurm_weight_bucket(score, sw->bucket, &sw->params);
	want = slurm_weight_of_bucket(sw->bucket, &sw->params);
	if (want != sw->set) {
		if (sw->last_update_us == 0 ||
		    now - sw->last_update_us >= sw->interval_us)
			sw_update(sw, want);
		return;
	}
	if (now - sw->last_check_us >= sw->recheck_us)
		sw_show(sw);
}

/* What the child printed: one line is all we need, and all we log. */
static void sw_read(struct slurm_weight *sw, char *buf, size_t len)
{
	size_t got = 0;
	ssize_t n;

	while (got + 1 < len &&
	       (n = read(sw->out_fd, buf + got, len - 1 - got)) > 0)
		got += (size_t)n;
	buf[got] = '\0';
}

static const char *first_line(char *s)
{
	s[strcspn(s, "\n")] = '\0';
	return *s ? s : "(no output)";
}

bool slurm_weight_reaped(struct server *srv, pid_t pid, int status)
{
	struct slurm_weight *sw = srv->slurm;
	char out[SW_OUT_MAX];
	bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
	uint32_t seen;

	if (!sw || sw->pid <= 0 || pid != sw->pid)
		return false;
	sw_read(sw, out, sizeof(out));
	close(sw->out_fd);
	sw->out_fd = -1;
	sw->pid = 0;
	if (!ok) {
		if (!sw->failing)
			log_warn("daemon: Slurm node %s: %s failed (%s %d): %s; "
				 "trying again every %g s", sw->node,
				 sw->scontrol, WIFEXITED(status) ? "exit" :
				 "signal", WIFEXITED(status) ?
				 WEXITSTATUS(status) : WTERMSIG(status),
				 first_line(out), (double)sw->interval_us / 1e6);
		sw->failing = true;
		/* Unknown: set it again once the interval has passed. */
		sw->set = 0;
		sw->last_update_us = server_now_us();
		sw->kind = SW_NONE;
		return true;
	}
	if (sw->failing)
		log_info("daemon: Slurm node %s: %s works again", sw->node,
			 sw->scontrol);
	sw->failing = false;
	if (sw->kind == SW_UPDATE) {
		log_info("daemon: Slurm node %s: weight %u (bucket %d)",
			 sw->node, sw->sending, sw->bucket);
		sw->set = sw->sending;
		sw->last_check_us = server_now_us();
	} else if (sw->kind == SW_SHOW) {
		if (slurm_weight_parse_show(out, &seen)) {
			log_warn("daemon: Slurm node %s: no Weight= in what "
				 "scontrol shows: %s", sw->node, first_line(out));
		} else if (seen != sw->set) {
			log_info("daemon: Slurm node %s: the controller has "
				 "weight %u, not %u (restarted or "
				 "reconfigured?): setting it again", sw->node,
				 seen, sw->set);
			sw->set = 0;
		}
	}
	sw->kind = SW_NONE;
	return true;
}

void slurm_weight_free(struct server *srv)
{
	struct slurm_weight *sw = srv->slurm;

	if (!sw)
		return;
	if (sw->out_fd >= 0)
		close(sw->out_fd);
	/* A child still running is left to finish: it holds nothing of ours. */
	free(sw);
	srv->slurm = NULL;
}
