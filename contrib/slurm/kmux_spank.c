/*
 * kmux_spank.c - kmux's SPANK plugin: `srun --kmux-mem=8G ...` runs each
 * task of the step under kmux's preload, with its memory quota, fenced from
 * the other jobs that share the node's GPUs.
 *
 * Owns the Slurm side of a task's kmux settings:
 *
 *   submit side (srun, sbatch, salloc): the options --kmux-mem=SIZE,
 *     --kmux-streams=N and --kmux-exclusive, checked before anything is
 *     submitted (a bad value is an error there, not a failed job later), and
 *     KMUX_MEM=<bytes> in the job's control environment, which slurmctld's
 *     job_submit.lua reads to ask for the `kmuxmem` GRES;
 *   node side (slurmstepd): whether the node's kmuxd answers (a warning in
 *     the job's output, or the step refused when the admin says `strict`),
 *     and each task's environment: LD_PRELOAD with libkmux.so (once, even
 *     for srun inside sbatch), KMUX_MEM / KMUX_MEM_QUOTA, KMUX_NAME,
 *     KMUX_STREAMS, KMUX_EXCLUSIVE, KMUX_SOCKET and KMUX_LOG=warn (unless
 *     the user set it).
 *
 * The preload itself registers the process with kmuxd at its first cuInit
 * and the daemon releases it when it exits, so nothing here talks the
 * protocol: the plugin links libc and what Slurm provides, nothing else.
 *
 * plugstack.conf arguments (docs/slurm.md):
 *   lib=PATH      the preload (default /usr/local/lib/kmux/libkmux.so)
 *   socket=PATH   the node's kmuxd socket (default /run/kmux/sock); "%n"
 *                 becomes the Slurm node name (several slurmd on one host)
 *   strict        refuse a step when kmuxd does not answer (default: warn,
 *                 run with the quota but untracked)
 *   always        apply to every step, not only those with a kmux option
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <slurm/spank.h>

#include "ks-env.h"
#include "size.h"
#include "sock.h"

SPANK_PLUGIN(kmux, 1);

#define KS_DEFAULT_LIB "/usr/local/lib/kmux/libkmux.so"
#define KS_DEFAULT_SOCKET "/run/kmux/sock"
/* The preload's own bound on KMUX_STREAMS (src/preload/streams-env.c). */
#define KS_STREAMS_MAX 64
#define KS_ENV_MAX 8192

/* What the user asked for (the option callbacks fill it in every context). */
static struct {
	bool mem_set;
	uint64_t mem;
	uint32_t streams;	/* 0: not given */
	bool exclusive;
} ks_opt;

/* What the admin configured in plugstack.conf. */
static struct {
	char lib[1024];
	char socket[1024];
	bool strict;
	bool always;
} ks_conf;

/* Node side: the step is ours. */
static bool ks_active;
static char ks_socket[1024];	/* socket=, %n expanded */

static int ks_opt_mem(int val, const char *arg, int remote);
static int ks_opt_streams(int val, const char *arg, int remote);
static int ks_opt_exclusive(int val, const char *arg, int remote);

/*
 * Registered from slurm_spank_init (not exported as spank_options, which
 * sbatch and salloc do not read).
 */
static struct spank_option ks_options[] = {
	{ "kmux-mem", "SIZE",
	  "kmux: GPU memory each task may hold (512M, 8G, 1.5GiB; binary "
	  "units); enforced on the node, and Slurm places the job where that "
	  "much is free", 1, 0, ks_opt_mem },
	{ "kmux-streams", "N",
	  "kmux: hardware streams each task's work is spread over (1..64)",
	  1, 0, ks_opt_streams },
	{ "kmux-exclusive", NULL,
	  "kmux: each task wants its GPU without other kmux tasks", 0, 0,
	  ks_opt_exclusive },
	SPANK_OPTIONS_TABLE_END
};

/* --- options: checked where the user types them ----------------------- */

static int ks_opt_mem(int val, const char *arg, int remote)
{
	uint64_t v;
	int r;

	(void)val;
	(void)remote;
	r = size_parse(arg ? arg : "", &v);
	if (r == -ERANGE) {
		slurm_error("kmux: --kmux-mem=%s is too large", arg);
		return -1;
	}
	if (r) {
		slurm_error("kmux: --kmux-mem=%s is not a size (examples: 512M, "
			    "8G, 1.5GiB, 8192; K/M/G/T are powers of 1024)",
			    arg ? arg : "");
		return -1;
	}
	if (v < 1024 * 1024) {
		slurm_error("kmux: --kmux-mem=%s is less than 1 MiB", arg);
		return -1;
	}
	ks_opt.mem = v;
	ks_opt.mem_set = true;
	return 0;
}

static int ks_opt_streams(int val, const char *arg, int remote)
{
	unsigned long v;
	char *end;

	(void)val;
	(void)remote;
	errno = 0;
	v = arg && *arg >= '0' && *arg <= '9' ? strtoul(arg, &end, 10) : 0;
	if (!arg || *arg < '0' || *arg > '9' || errno || *end || v < 1 ||
	    v > KS_STREAMS_MAX) {
		slurm_error("kmux: --kmux-streams=%s: want an integer in 1..%d",
			    arg ? arg : "", KS_STREAMS_MAX);
		return -1;
	}
	ks_opt.streams = (uint32_t)v;
	return 0;
}

static int ks_opt_exclusive(int val, const char *arg, int remote)
{
	(void)val;
	(void)arg;
	(void)remote;
	ks_opt.exclusive = true;
	return 0;
}

/* --- plugstack.conf arguments ------------------------------------------- */

static int ks_copy_arg(char *dst, size_t len, const char *v, const char *key)
{
	if (!*v || strlen(v) >= len) {
		slurm_error("kmux: plugstack.conf: %s= wants a path shorter "
			    "than %zu bytes", key, len);
		return -1;
	}
	strcpy(dst, v);
	return 0;
}

static int ks_parse_args(int ac, char **av)
{
	snprintf(ks_conf.lib, sizeof(ks_conf.lib), "%s", KS_DEFAULT_LIB);
	snprintf(ks_conf.socket, sizeof(ks_conf.socket), "%s",
		 KS_DEFAULT_SOCKET);
	for (int i = 0; i < ac; i++) {
		if (strncmp(av[i], "lib=", 4) == 0) {
			if (ks_copy_arg(ks_conf.lib, sizeof(ks_conf.lib),
					av[i] + 4, "lib"))
				return -1;
		} else if (strncmp(av[i], "socket=", 7) == 0) {
			if (ks_copy_arg(ks_conf.socket, sizeof(ks_conf.socket),
					av[i] + 7, "socket"))
				return -1;
		} else if (strcmp(av[i], "strict") == 0) {
			ks_conf.strict = true;
		} else if (strcmp(av[i], "always") == 0) {
			ks_conf.always = true;
		} else {
			slurm_error("kmux: plugstack.conf: unknown argument "
				    "'%s' (lib=PATH, socket=PATH, strict, "
				    "always)", av[i]);
			return -1;
		}
	}
	return 0;
}

int slurm_spank_init(spank_t sp, int ac, char **av)
{
	spank_err_t e;

	if (ks_parse_args(ac, av))
		return -1;
	for (struct spank_option *o = ks_options; o->name; o++) {
		e = spank_option_register(sp, o);
		if (e != ESPANK_SUCCESS) {
			slurm_error("kmux: cannot register --%s: %s", o->name,
				    spank_strerror(e));
			return -1;
		}
	}
	return 0;
}

/* --- submit side --------------------------------------------------------- */

/*
 * The declared memory goes to the controller in the job's control
 * environment (spank_job_env), which job_submit.lua sees at submission:
 * that is where it becomes a `kmuxmem` GRES request.
 */
static int ks_submit_side(spank_t sp)
{
	char v[32];
	spank_err_t e;

	if (!ks_opt.mem_set)
		return 0;
	snprintf(v, sizeof(v), "%" PRIu64, ks_opt.mem);
	e = spank_job_control_setenv(sp, "KMUX_MEM", v, 1);
	if (e != ESPANK_SUCCESS) {
		slurm_error("kmux: cannot pass --kmux-mem to the controller: %s",
			    spank_strerror(e));
		return -1;
	}
	return 0;
}

/* --- node side ----------------------------------------------------------- */

/* socket= with "%n" replaced by the node's Slurm name. */
static int ks_expand_socket(spank_t sp, char *out, size_t len)
{
	char node[256] = "";

	if (strstr(ks_conf.socket, "%n") &&
	    spank_getenv(sp, "SLURMD_NODENAME", node, sizeof(node)) !=
	    ESPANK_SUCCESS) {
		if (gethostname(node, sizeof(node)))
			snprintf(node, sizeof(node), "localhost");
		node[sizeof(node) - 1] = '\0';
		node[strcspn(node, ".")] = '\0';
	}
	return ks_expand_path(ks_conf.socket, node, out, len);
}

/* 0 if something accepts connections on path, else -errno. */
static int ks_probe_socket(const char *path)
{
	int fd, r;

	r = sock_connect_unix(path, 0, &fd);
	if (r == 0)
		close(fd);
	return r;
}

/*
 * Once per step, before its tasks, as the user: is this step ours?  (The
 * node's name, which the socket path may need, is known only in the tasks'
 * environment: the kmuxd check is in slurm_spank_task_init.)
 */
int slurm_spank_user_init(spank_t sp, int ac, char **av)
{
	uint32_t step = 0;

	(void)ac;
	(void)av;
	if (spank_context() != S_CTX_REMOTE)
		return 0;
	if (spank_get_item(sp, S_JOB_STEPID, &step) == ESPANK_SUCCESS &&
	    step == KS_STEP_EXTERN)
		return 0;
	ks_active = ks_conf.always || ks_opt.mem_set || ks_opt.streams ||
		    ks_opt.exclusive;
	return 0;
}

/*
 * Can this task be managed?  "" in why when it can; else the reason, and
 * -1 when the admin wants such tasks refused (strict).  The task's stderr
 * is the job's output: that is where the user reads why.
 */
static int ks_check_node(spank_t sp, char *why, size_t len)
{
	int r;

	why[0] = '\0';
	if (access(ks_conf.lib, R_OK)) {
		snprintf(why, len, "cannot read the kmux preload %s (%s)",
			 ks_conf.lib, strerror(errno));
		return 1;
	}
	r = ks_expand_socket(sp, ks_socket, sizeof(ks_socket));
	if (r == 0)
		r = ks_probe_socket(ks_socket);
	if (r)
		snprintf(why, len, "no kmuxd answers on %s (%s)", ks_socket,
			 strerror(-r));
	return 0;
}

static int ks_set(spank_t sp, const char *name, const char *value)
{
	spank_err_t e = spank_setenv(sp, name, value, 1);

	if (e != ESPANK_SUCCESS) {
		slurm_error("kmux: cannot set %s for the task: %s", name,
			    spank_strerror(e));
		return -1;
	}
	return 0;
}

/* In each task, as the user, just before it execs the command. */
int slurm_spank_task_init(spank_t sp, int ac, char **av)
{
	static char old[KS_ENV_MAX], pre[KS_ENV_MAX];
	uint32_t job = 0, step = 0, task = 0;
	char v[64], name[96], why[1536];
	int nolib, r;

	(void)ac;
	(void)av;
	if (!ks_active)
		return 0;
	nolib = ks_check_node(sp, why, sizeof(why));
	if (why[0] && ks_conf.strict) {
		fprintf(stderr, "kmux: error: %s; this cluster runs GPU tasks "
			"under kmux only (strict): task refused\n", why);
		return -1;
	}
	if (nolib) {
		fprintf(stderr, "kmux: warning: %s; this task runs without "
			"kmux\n", why);
		return 0;
	}
	if (why[0])
		fprintf(stderr, "kmux: warning: %s; this task runs under its "
			"quota but kmuxd does not track it\n", why);

	if (spank_getenv(sp, "LD_PRELOAD", old, sizeof(old)) != ESPANK_SUCCESS)
		old[0] = '\0';
	r = ks_preload_value(old, ks_conf.lib, pre, sizeof(pre));
	if (r < 0) {
		fprintf(stderr, "kmux: LD_PRELOAD is too long to add %s; this "
			"task runs without kmux\n", ks_conf.lib);
		return ks_conf.strict ? -1 : 0;
	}
	if (r == 0 && ks_set(sp, "LD_PRELOAD", pre))
		return -1;

	spank_get_item(sp, S_JOB_ID, &job);
	spank_get_item(sp, S_JOB_STEPID, &step);
	spank_get_item(sp, S_TASK_GLOBAL_ID, &task);
	ks_task_name(job, step, task, name, sizeof(name));
	if (ks_set(sp, "KMUX_NAME", name) ||
	    ks_set(sp, "KMUX_SOCKET", ks_socket))
		return -1;
	if (ks_opt.mem_set) {
		snprintf(v, sizeof(v), "%" PRIu64, ks_opt.mem);
		if (ks_set(sp, "KMUX_MEM", v) ||
		    ks_set(sp, "KMUX_MEM_QUOTA", v))
			return -1;
	}
	if (ks_opt.streams) {
		snprintf(v, sizeof(v), "%" PRIu32, ks_opt.streams);
		if (ks_set(sp, "KMUX_STREAMS", v))
			return -1;
	}
	if (ks_opt.exclusive && ks_set(sp, "KMUX_EXCLUSIVE", "1"))
		return -1;
	/* The preload logs only errors by default; in a batch job its
	 * warnings (kmuxd went away, registered again, a bad setting) are
	 * the only way the user learns of them.  A KMUX_LOG of the user's
	 * own wins. */
	if (spank_getenv(sp, "KMUX_LOG", v, sizeof(v)) == ESPANK_ENV_NOEXIST &&
	    ks_set(sp, "KMUX_LOG", "warn"))
		return -1;
	return 0;
}

int slurm_spank_init_post_opt(spank_t sp, int ac, char **av)
{
	(void)ac;
	(void)av;
	switch (spank_context()) {
	case S_CTX_LOCAL:
	case S_CTX_ALLOCATOR:
		return ks_submit_side(sp);
	default:
		return 0;
	}
}
