/*
 * register.c - the preload's client of kmuxd (see register.h): finding the
 * daemon, HELLO and REGISTER at the first cuInit, waiting while queued,
 * applying ADMIT (CUDA_VISIBLE_DEVICES when the user set none, the memory
 * quota), and the helper thread that reports usage and registers again
 * after a daemon restart.
 *
 * Nothing here may stop the program: every failure ends in "run unmanaged"
 * (before admission) or "run on and retry" (after), with a log line.  The
 * only blocking wait without a bound is the one the user asked for by
 * running under kmux: queued behind other tasks.  Replies the program waits
 * for otherwise come within REG_REPLY_MS or are given up on.
 *
 * After registration only the helper thread touches `reg`; before, only the
 * thread inside pthread_once.  A forked child closes its copy of the
 * connection (pthread_atfork): the parent's registration is not its own.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "mm.h"
#include "paths.h"
#include "proto.h"
#include "quota.h"
#include "region.h"
#include "register.h"
#include "size.h"
#include "sock.h"

#define REG_REPLY_MS 2000	/* HELLO's OK, REGISTER's first answer */
#define REG_REPORT_MS 250	/* ALLOC_UPDATE, when something changed */
#define REG_BACKOFF_MIN_MS 100
#define REG_BACKOFF_MAX_MS 5000
/* Queued, and the daemon went away: look for it this long, then run. */
#define REG_QUEUED_LOST_MS 10000
#define REG_ARGV_MAX 65536	/* of /proc/self/cmdline kept */
#define REG_RX 65536

_Atomic uint64_t kmux_launches;
_Atomic uint64_t kmux_host_waits;

/* One connection to kmuxd: its socket, its buffers, its request numbers. */
struct reg_io {
	int fd;
	uint32_t seq;
	uint8_t *rx, *tx;
	size_t rx_cap, tx_cap;
	size_t rx_len, rx_used;	/* bytes in rx; of them, the last message's */
};

static uint8_t reg_rx[REG_RX], reg_tx[8192];

static struct reg {
	struct reg_io io;	/* the helper thread's, for the life of the process */
	char sock[PATH_MAX];

	/* What it registers with. */
	uint64_t job;		/* KMUX_JOB, then what ADMIT said */
	uint64_t mem;		/* KMUX_MEM */
	uint64_t visible;	/* CUDA_VISIBLE_DEVICES as a mask */
	bool visible_set;
	char name[PROTO_MAX_NAME];
	char *argv;		/* /proc/self/cmdline */
	uint32_t argc, argv_len;
	pid_t pid;
	uint64_t pid_start;

	/* What it was admitted with. */
	uint64_t quota;
	uint64_t gpus;		/* mask of GPU indices */
	uint32_t gpu0;

	/* The last report sent on this connection. */
	bool reported;
	uint64_t r_resident, r_peak, r_kernels, r_waits;
	uint64_t r_evicted, r_reserved, r_evicts, r_restores, r_thrash_ws;
} reg = { .io = { .fd = -1, .rx = reg_rx, .tx = reg_tx,
		  .rx_cap = sizeof(reg_rx), .tx_cap = sizeof(reg_tx) } };

static pthread_once_t reg_once = PTHREAD_ONCE_INIT;
static int reg_result;
static bool reg_thread_started;
/* Admitted and connected: the gates are the daemon's word (region.c). */
static _Atomic bool reg_up;
/* The helper thread's sends and reconnects, against the last report at
 * exit (reg_fini); receiving is the thread's alone. */
static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static void sleep_ms(unsigned ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/* --- what the process is -------------------------------------------------- */

/* /proc/self/cmdline as a strv block (the key of the command's profile). */
static int read_cmdline(void)
{
	char *buf = malloc(REG_ARGV_MAX + 1);
	size_t len = 0;
	ssize_t n;
	int fd;

	if (!buf)
		return -ENOMEM;
	fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		while (len < REG_ARGV_MAX &&
		       (n = read(fd, buf + len, REG_ARGV_MAX - len)) != 0) {
			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0)
				break;
			len += (size_t)n;
		}
		close(fd);
	}
	if (len == 0) {
		memcpy(buf, "?", 2);
		len = 2;
	}
	/* A cut or rewritten command line ends without its NUL. */
	if (buf[len - 1] != '\0')
		buf[len++] = '\0';
	reg.argc = 0;
	for (size_t i = 0; i < len; i++)
		reg.argc += buf[i] == '\0';
	reg.argv = buf;
	reg.argv_len = (uint32_t)len;
	return 0;
}

/* Field 22 of /proc/self/stat: the start time the daemon tells pids by. */
static uint64_t read_start_time(void)
{
	char buf[1024], *p;
	unsigned long long v = 0;
	ssize_t n;
	int fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	p = strrchr(buf, ')');
	/* After "(comm)": state is field 3, so 19 more fields to 22. */
	for (int f = 3; p && f <= 22; f++)
		p = strchr(p + 1, ' ');
	if (p && sscanf(p, " %llu", &v) != 1)
		v = 0;
	return v;
}

/*
 * CUDA_VISIBLE_DEVICES as a mask of indices: 0, or -EINVAL for what cannot
 * be mapped to the daemon's GPU indices (UUIDs, MIG names, negatives).
 */
static int parse_visible(const char *v, uint64_t *mask)
{
	const char *p = v;

	*mask = 0;
	while (*p) {
		char *end;
		unsigned long i;

		while (*p == ' ')
			p++;
		if (*p < '0' || *p > '9')
			return -EINVAL;
		i = strtoul(p, &end, 10);
		if (i >= PROTO_MAX_GPUS)
			return -EINVAL;
		*mask |= UINT64_C(1) << i;
		p = end;
		while (*p == ' ')
			p++;
		if (*p == ',')
			p++;
		else if (*p)
			return -EINVAL;
	}
	return 0;
}

/* --- the connection ------------------------------------------------------- */

static void conn_close(void)
{
	atomic_store(&reg_up, false);
	if (reg.io.fd >= 0)
		close(reg.io.fd);
	reg.io.fd = -1;
	reg.io.rx_len = reg.io.rx_used = 0;
	reg.reported = false;
}

/* Connect to path with a bounded wait; the fd, or -errno. */
static int conn_open(const char *path)
{
	int fd, e;

	/* The timeout bounds connect() (a full backlog) and every send. */
	e = sock_connect_unix(path, REG_REPLY_MS, &fd);
	return e ? e : fd;
}

static int io_send(struct reg_io *io, const struct proto_msg *m)
{
	struct proto_buf out = { io->tx, io->tx_cap, 0 };
	struct proto_msg copy = *m;
	size_t off = 0;
	ssize_t n;
	int e;

	copy.seq = ++io->seq;
	e = proto_encode(&out, &copy);
	if (e)
		return e;
	while (off < out.len) {
		n = send(io->fd, io->tx + off, out.len - off, MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return errno == EAGAIN ? -ETIMEDOUT : -errno;
		off += (size_t)n;
	}
	return 0;
}

/*
 * The next message, waiting up to timeout_ms (-1: for ever).  It points
 * into io->rx until the next call.  0, -ETIMEDOUT, -EPIPE (closed), or a
 * decoding error.
 */
static int io_recv(struct reg_io *io, struct proto_msg *m, int timeout_ms)
{
	uint64_t deadline = timeout_ms < 0 ? 0 : now_ms() + (uint64_t)timeout_ms;
	struct pollfd p = { .fd = io->fd, .events = POLLIN };
	size_t used;
	ssize_t n;
	int e, wait;

	memmove(io->rx, io->rx + io->rx_used, io->rx_len - io->rx_used);
	io->rx_len -= io->rx_used;
	io->rx_used = 0;
	for (;;) {
		e = proto_decode(io->rx, io->rx_len, m, &used);
		if (e == 0) {
			io->rx_used = used;
			return 0;
		}
		if (e != -EAGAIN)
			return e;
		if (io->rx_len == io->rx_cap)
			return -EMSGSIZE;	/* never sent to a preload */
		wait = -1;
		if (timeout_ms >= 0) {
			uint64_t now = now_ms();

			if (now >= deadline)
				return -ETIMEDOUT;
			wait = (int)(deadline - now);
		}
		e = poll(&p, 1, wait);
		if (e < 0 && errno == EINTR)
			continue;
		if (e < 0)
			return -errno;
		if (e == 0)
			continue;
		n = read(io->fd, io->rx + io->rx_len, io->rx_cap - io->rx_len);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -EPIPE;
		io->rx_len += (size_t)n;
	}
}

/* The helper thread's connection. */
static int conn_send(const struct proto_msg *m)
{
	return io_send(&reg.io, m);
}

static int conn_recv(struct proto_msg *m, int timeout_ms)
{
	return io_recv(&reg.io, m, timeout_ms);
}

/*
 * HELLO, then REGISTER: as a new process (running false), or as one that
 * holds reg.gpus and reg.quota (after a daemon restart).
 */
static int conn_register(bool running)
{
	struct proto_msg m = { .type = PROTO_HELLO };
	struct proto_register *r = &m.u.reg;
	int e;

	m.u.hello.role = PROTO_ROLE_PRELOAD;
	m.u.hello.pid = (uint32_t)reg.pid;
	m.u.hello.ident = "libkmux";
	e = conn_send(&m);
	if (e == 0)
		e = conn_recv(&m, REG_REPLY_MS);
	if (e)
		return e;
	if (m.type == PROTO_ERROR) {
		log_warn("kmuxd on %s refused this process: %s", reg.sock,
			 m.u.error.message);
		return -m.u.error.err;
	}
	if (m.type != PROTO_OK)
		return -EPROTO;
	memset(&m, 0, sizeof(m));
	m.type = PROTO_REGISTER;
	r->job = reg.job;
	r->pid = (uint32_t)reg.pid;
	r->pid_start = reg.pid_start;
	r->name = reg.name;
	r->argv.count = reg.argc;
	r->argv.block = reg.argv;
	r->argv.bytes = reg.argv_len;
	if (running) {
		r->flags = PROTO_REG_F_RUNNING;
		r->gpus = reg.gpus;
		r->ngpus = (uint32_t)__builtin_popcountll(reg.gpus);
		/* What it holds now: the quota may have grown (or an evict
		 * budget shrunk) since ADMIT. */
		r->mem = quota_grow || mm_grow_budget ?
			 atomic_load(&quota_global.limit) : reg.quota;
	} else {
		r->gpus = reg.visible;
		r->ngpus = reg.visible ?
			   (uint32_t)__builtin_popcountll(reg.visible) : 1;
		r->mem = reg.mem;
	}
	return conn_send(&m);
}

/* --- admission ------------------------------------------------------------ */

/* Go: these GPUs (in CUDA_VISIBLE_DEVICES unless the user chose), this quota. */
static void apply_admit(const struct proto_admit *a)
{
	char list[PROTO_MAX_GPUS * 4] = "", q[SIZE_FORMAT_MAX];
	size_t off = 0;

	reg.job = a->job;
	reg.quota = a->quota;
	reg.gpus = 0;
	reg.gpu0 = a->gpus[0];
	for (uint32_t i = 0; i < a->ngpus; i++) {
		reg.gpus |= UINT64_C(1) << a->gpus[i];
		off += (size_t)snprintf(list + off, sizeof(list) - off, "%s%u",
					i ? "," : "", a->gpus[i]);
	}
	if (!reg.visible_set) {
		/* Before the real cuInit reads them. */
		setenv("CUDA_VISIBLE_DEVICES", list, 1);
		setenv("CUDA_DEVICE_ORDER", "PCI_BUS_ID", 0);
	}
	quota_set_admitted(a->quota);
	size_format(a->quota, q, sizeof(q));
	log_info("admitted by kmuxd as job %llu: GPU %s, quota %s",
		 (unsigned long long)a->job, list, q);
}

/*
 * The answer to REGISTER: ADMIT (0), QUEUED then ADMIT (0, after a wait),
 * EXITED while queued (-ECANCELED), ERROR or no answer (<0: unmanaged).
 * While queued, a daemon that goes away is looked for again for
 * REG_QUEUED_LOST_MS, and the process registers anew with the next one.
 */
static int wait_admission(void)
{
	struct proto_msg m;
	uint64_t lost_since = 0;
	unsigned backoff = REG_BACKOFF_MIN_MS;
	bool queued = false;
	int e;

	for (;;) {
		e = reg.io.fd >= 0 ? conn_recv(&m, queued ? -1 : REG_REPLY_MS) :
		    -EPIPE;
		if (e == 0 && m.type == PROTO_ADMIT) {
			apply_admit(&m.u.admit);
			return 0;
		}
		if (e == 0 && m.type == PROTO_QUEUED) {
			/*
			 * Said at the default level: the program stops in
			 * cuInit, and nothing else would tell its user why.
			 */
			if (!queued)
				log_notice("queued by kmuxd as job %llu "
					 "(position %u): waiting for a GPU "
					 "(KMUX_REGISTER=0 runs unmanaged)",
					 (unsigned long long)m.u.queued.job,
					 m.u.queued.position + 1);
			queued = true;
			continue;
		}
		if (e == 0 && m.type == PROTO_EXITED) {
			log_warn("kmuxd cancelled job %llu while it was queued: "
				 "cuInit fails", (unsigned long long)
				 m.u.exited.job);
			return -ECANCELED;
		}
		if (e == 0 && m.type == PROTO_ERROR) {
			log_warn("kmuxd on %s: %s; running unmanaged", reg.sock,
				 m.u.error.message);
			return -m.u.error.err;
		}
		if (e == 0)
			continue;	/* nothing else is ours to act on */
		if (!queued || (e != -EPIPE && e != -ECONNRESET)) {
			log_warn("kmuxd on %s: no answer (%s); running "
				 "unmanaged", reg.sock, strerror(-e));
			return e;
		}
		/* Queued and the daemon went away: find the next one. */
		conn_close();
		if (!lost_since)
			lost_since = now_ms();
		if (now_ms() - lost_since > REG_QUEUED_LOST_MS) {
			log_warn("kmuxd on %s went away while this process was "
				 "queued; running unmanaged", reg.sock);
			return -EPIPE;
		}
		sleep_ms(backoff);
		backoff = backoff * 2 > REG_BACKOFF_MAX_MS ? REG_BACKOFF_MAX_MS :
			  backoff * 2;
		reg.io.fd = conn_open(reg.sock);
		if (reg.io.fd >= 0 && conn_register(false))
			conn_close();
		if (reg.io.fd >= 0) {
			lost_since = 0;
			queued = false;
		}
	}
}

/* --- growing the quota ------------------------------------------------------ */

/*
 * quota_grow (quota.h): an allocation would pass the quota.  Ask kmuxd on
 * a connection of this call's own (the helper thread owns the other one):
 * HELLO, then ALLOC_UPDATE with want; ADMIT carries the new quota, ERROR a
 * refusal.  One thread asks at a time; the others then find the limit
 * already raised.
 */
static pthread_mutex_t grow_lock = PTHREAD_MUTEX_INITIALIZER;

/* An ALLOC_UPDATE's who and how much now, for the one-off messages (a
 * growth ask, a budget given back); the periodic report fills its own. */
static void alloc_update_now(struct proto_msg *m)
{
	*m = (struct proto_msg){ .type = PROTO_ALLOC_UPDATE };
	m->u.alloc.job = reg.job;
	m->u.alloc.pid = (uint32_t)reg.pid;
	m->u.alloc.gpu = reg.gpu0;
	m->u.alloc.resident = quota_used(&quota_global);
	m->u.alloc.peak = quota_peak(&quota_global);
	if (m->u.alloc.peak < m->u.alloc.resident)
		m->u.alloc.peak = m->u.alloc.resident;
	m->u.alloc.kernels = atomic_load_explicit(&kmux_launches,
						  memory_order_relaxed);
	m->u.alloc.waits = atomic_load_explicit(&kmux_host_waits,
						memory_order_relaxed);
}

/*
 * flags: 0 (a quota growth: kmuxd may make it wait), PROTO_ALLOC_F_EVICT
 * (an evict budget, answered at once) or with PROTO_ALLOC_F_SUSPEND too
 * (a suspended task: it waits as a quota growth does).
 */
static int grow_exchange(int fd, uint64_t want, uint32_t flags,
			 uint64_t *quota, bool *answered)
{
	bool at_once = flags == PROTO_ALLOC_F_EVICT;
	uint8_t tx[512], rx[4096];
	struct reg_io io = { .fd = fd, .rx = rx, .tx = tx,
			     .rx_cap = sizeof(rx), .tx_cap = sizeof(tx) };
	struct proto_msg m = { .type = PROTO_HELLO };
	uint32_t asked;
	bool hello_ok = false;
	int e;

	m.u.hello.role = PROTO_ROLE_PRELOAD;
	m.u.hello.pid = (uint32_t)reg.pid;
	m.u.hello.ident = "libkmux";
	e = io_send(&io, &m);
	alloc_update_now(&m);
	m.u.alloc.want = want;
	/* want with EVICT: an evict budget, granted now or refused now. */
	m.u.alloc.flags = flags;
	if (!e)
		e = io_send(&io, &m);
	asked = io.seq;
	/*
	 * HELLO's OK first, then the answer to the request, which may take
	 * as long as other tasks keep the memory (kmuxd makes the growth
	 * wait rather than fail, and bounds the wait itself: --grow-wait);
	 * a daemon that dies closes the connection and ends the wait.  An
	 * evict budget's answer never waits for room: a bounded wait.
	 */
	while (!e && !(e = io_recv(&io, &m, hello_ok && !at_once ? -1
								 : REG_REPLY_MS))) {
		if (m.seq != asked) {
			hello_ok = true;
			continue;
		}
		if (m.type == PROTO_ADMIT) {
			*quota = m.u.admit.quota;
			return 0;
		}
		if (answered)
			*answered = true;
		if (m.type == PROTO_ERROR) {
			log_info("kmuxd: no more memory: %s",
				 m.u.error.message);
			return -m.u.error.err;
		}
		return -EPROTO;
	}
	return e;
}

static int reg_grow(uint64_t want)
{
	uint64_t quota = 0;
	int fd, e;

	/* Past the user's own limit: not kmuxd's to grant. */
	if (quota_capped(want) < want)
		return -ENOSPC;
	pthread_mutex_lock(&grow_lock);
	if (atomic_load(&quota_global.limit) >= want) {
		pthread_mutex_unlock(&grow_lock);
		return 0;
	}
	fd = conn_open(reg.sock);
	e = fd < 0 ? fd : grow_exchange(fd, want, 0, &quota, NULL);
	if (fd >= 0)
		close(fd);
	quota = quota_capped(quota);
	if (e == 0 && quota > atomic_load(&quota_global.limit))
		atomic_store(&quota_global.limit, quota);
	pthread_mutex_unlock(&grow_lock);
	if (e)
		return e;
	return quota >= want ? 0 : -ENOSPC;
}

/*
 * mm_grow_budget (mm.h): the evict mode thrashes; kmuxd grants what fits
 * on the GPU now (perhaps less than want) or refuses at once.  The budget
 * is the quota's limit, and only rises.
 */
static int reg_evict_grow(uint64_t want, uint64_t *granted)
{
	uint64_t quota = 0, now;
	int fd, e;

	pthread_mutex_lock(&grow_lock);
	now = atomic_load(&quota_global.limit);
	/* At the user's own limit already: nothing to ask for. */
	want = quota_capped(want);
	if (want <= now) {
		*granted = now;
		pthread_mutex_unlock(&grow_lock);
		return -ENOSPC;
	}
	fd = conn_open(reg.sock);
	e = fd < 0 ? fd : grow_exchange(fd, want, PROTO_ALLOC_F_EVICT,
					   &quota, NULL);
	if (fd >= 0)
		close(fd);
	quota = quota_capped(quota);
	now = atomic_load(&quota_global.limit);
	if (e == 0 && quota > now)
		atomic_store(&quota_global.limit, quota);
	*granted = quota > now ? quota : now;
	pthread_mutex_unlock(&grow_lock);
	return e;
}

/*
 * mm_suspend_budget (mm.h): the task is suspended; ask for want and block
 * until kmuxd commits it (its answer may take as long as its neighbours
 * keep the memory; a daemon that dies closes the connection).  The
 * message's resident is what the task still holds: kmuxd lowers its
 * commitment to that meanwhile.  Not under grow_lock: the helper thread
 * must stay free to answer kmuxd meanwhile (mm_shrink gives nothing while
 * suspended), and kmuxd answers a crossing thrash ask with EBUSY.
 */
static int reg_suspend(uint64_t want, uint64_t *granted)
{
	uint64_t quota = 0;
	bool answered = false;
	int fd, e;

	fd = conn_open(reg.sock);
	e = fd < 0 ? fd : grow_exchange(fd, quota_capped(want),
					PROTO_ALLOC_F_EVICT |
					PROTO_ALLOC_F_SUSPEND, &quota,
					&answered);
	if (fd >= 0)
		close(fd);
	*granted = e ? 0 : quota_capped(quota);
	/* No answer at all: the daemon is gone (or never was). */
	return e && !answered ? -ENOTCONN : e;
}

/* --- the helper thread ---------------------------------------------------- */

/*
 * ALLOC_UPDATE when memory, the memory manager's counts, the launch or the
 * host-wait count changed since the last.
 */
static int report(void)
{
	struct proto_msg m = { .type = PROTO_ALLOC_UPDATE };
	uint64_t res = quota_used(&quota_global), peak = quota_peak(&quota_global);
	uint64_t k = atomic_load_explicit(&kmux_launches, memory_order_relaxed);
	uint64_t w = atomic_load_explicit(&kmux_host_waits, memory_order_relaxed);
	struct mm_stats st = { 0 };

	if (peak < res)
		peak = res;	/* read apart: never report resident > peak */
	if (mm_on)
		mm_get_stats(&st);
	if (reg.reported && res == reg.r_resident && peak == reg.r_peak &&
	    k == reg.r_kernels && w == reg.r_waits &&
	    st.evicted == reg.r_evicted &&
	    st.reserved == reg.r_reserved && st.evicts == reg.r_evicts &&
	    st.restores == reg.r_restores && st.thrash_ws == reg.r_thrash_ws)
		return 0;
	m.u.alloc.job = reg.job;
	m.u.alloc.pid = (uint32_t)reg.pid;
	m.u.alloc.gpu = reg.gpu0;
	m.u.alloc.resident = res;
	m.u.alloc.peak = peak;
	m.u.alloc.kernels = k;
	m.u.alloc.waits = w;
	m.u.alloc.evicted = st.evicted;
	m.u.alloc.reserved = st.reserved;
	m.u.alloc.evicts = st.evicts;
	m.u.alloc.restores = st.restores;
	m.u.alloc.flags = mm_on == MM_EVICT ? PROTO_ALLOC_F_EVICT : 0;
	m.u.alloc.thrash_ws = st.thrash_ws;	/* 0 unless evict */
	if (conn_send(&m))
		return -EPIPE;
	reg.reported = true;
	reg.r_resident = res;
	reg.r_peak = peak;
	reg.r_kernels = k;
	reg.r_waits = w;
	reg.r_evicted = st.evicted;
	reg.r_reserved = st.reserved;
	reg.r_evicts = st.evicts;
	reg.r_restores = st.restores;
	reg.r_thrash_ws = st.thrash_ws;
	return 0;
}

/*
 * kmuxd: a queued task is kept out of this GPU by commitments.  Under
 * evict, give up budget this task is not using (mm_shrink) and say so
 * (ALLOC_UPDATE with SHRUNK: kmuxd lowers its commitment, no reply).
 * grow_lock: a thrash growth in flight and this do not cross.
 */
static int shrink_budget(const struct proto_mem_pressure *p)
{
	char want[SIZE_FORMAT_MAX], from[SIZE_FORMAT_MAX], to[SIZE_FORMAT_MAX];
	struct proto_msg m;
	uint64_t before, nb = 0, gave;
	int e;

	pthread_mutex_lock(&grow_lock);
	before = atomic_load(&quota_global.limit);
	gave = mm_shrink(p->give, &nb);
	pthread_mutex_unlock(&grow_lock);
	size_format(p->give, want, sizeof(want));
	size_format(before, from, sizeof(from));
	if (!gave) {
		log_info("kmuxd: a task waits for GPU %u: asked for %s of "
			 "budget, kept %s (in use, or thrashing)", p->gpu, want,
			 from);
		return 0;
	}
	size_format(nb, to, sizeof(to));
	log_info("kmuxd: a task waits for GPU %u: asked for %s of budget, "
		 "gave %s -> %s", p->gpu, want, from, to);
	alloc_update_now(&m);
	m.u.alloc.want = nb;
	m.u.alloc.flags = PROTO_ALLOC_F_EVICT | PROTO_ALLOC_F_SHRUNK;
	pthread_mutex_lock(&reg_lock);
	e = conn_send(&m);
	pthread_mutex_unlock(&reg_lock);
	return e ? -EPIPE : 0;
}

/*
 * kmuxd: this GPU is short of memory.  Under evict, give up idle objects
 * (the next report shows it); otherwise there is nothing to give.
 */
static void pressured(const struct proto_mem_pressure *p)
{
	char want[SIZE_FORMAT_MAX], got[SIZE_FORMAT_MAX];
	uint64_t freed = mm_reclaim(p->give);

	size_format(p->give, want, sizeof(want));
	size_format(freed, got, sizeof(got));
	log_info("kmuxd: GPU %u is short of memory: asked for %s, evicted %s",
		 p->gpu, want, got);
}

/*
 * Another task enters an exclusive region on this GPU: its gate is closed
 * already; finish what this process has in flight, then say so.
 */
static int drained(uint64_t token)
{
	struct proto_msg m = { .type = PROTO_DRAINED };
	int e;

	region_drain();
	m.u.drained.token = token;
	m.u.drained.pid = (uint32_t)reg.pid;
	pthread_mutex_lock(&reg_lock);
	e = conn_send(&m);
	pthread_mutex_unlock(&reg_lock);
	return e ? -EPIPE : 0;
}

/* After a daemon restart: tell the new one what this process holds. */
static int reregister(void)
{
	struct proto_msg m;
	int e;

	reg.io.fd = conn_open(reg.sock);
	if (reg.io.fd < 0)
		return reg.io.fd;
	e = conn_register(true);
	while (e == 0 && (e = conn_recv(&m, REG_REPLY_MS)) == 0) {
		if (m.type == PROTO_ADMIT) {
			log_info("registered again with kmuxd as job %llu",
				 (unsigned long long)m.u.admit.job);
			reg.job = m.u.admit.job;
			atomic_store(&reg_up, true);
			return 0;
		}
		if (m.type == PROTO_ERROR) {
			e = -m.u.error.err;
			break;
		}
	}
	conn_close();
	return e ? e : -EPROTO;
}

static void *reg_thread(void *arg)
{
	unsigned backoff = REG_BACKOFF_MIN_MS;
	uint64_t next = 0, now;
	struct proto_msg m;
	int e;

	(void)arg;
	for (;;) {
		if (reg.io.fd < 0) {
			sleep_ms(backoff);
			pthread_mutex_lock(&reg_lock);
			e = reregister();
			pthread_mutex_unlock(&reg_lock);
			if (e == 0) {
				backoff = REG_BACKOFF_MIN_MS;
				next = 0;
			} else {
				backoff = backoff * 2 > REG_BACKOFF_MAX_MS ?
					  REG_BACKOFF_MAX_MS : backoff * 2;
			}
			continue;
		}
		now = now_ms();
		if (now >= next) {
			next = now + REG_REPORT_MS;
			pthread_mutex_lock(&reg_lock);
			e = report();
			pthread_mutex_unlock(&reg_lock);
			if (e == 0)
				continue;
		} else {
			/* Only replies to stale updates come: read them to
			 * see the connection close. */
			e = conn_recv(&m, (int)(next - now));
			if (e == 0 && m.type == PROTO_DRAIN)
				e = drained(m.u.drain.token);
			if (e == 0 && m.type == PROTO_MEM_PRESSURE &&
			    (m.u.pressure.flags & PROTO_PRESSURE_F_BUDGET)) {
				e = shrink_budget(&m.u.pressure);
				next = 0;
			} else if (e == 0 && m.type == PROTO_MEM_PRESSURE) {
				pressured(&m.u.pressure);
				next = 0;	/* the daemon waits to see it */
			}
			if (e == 0 || e == -ETIMEDOUT)
				continue;
		}
		log_warn("kmuxd on %s went away; job %llu runs on and registers "
			 "again when a daemon is back", reg.sock,
			 (unsigned long long)reg.job);
		pthread_mutex_lock(&reg_lock);
		conn_close();
		pthread_mutex_unlock(&reg_lock);
	}
	return NULL;
}

/*
 * At exit: the last usage, so that a program that ends between two
 * reports still teaches the daemon its peak.  Never waits: if the thread
 * is busy (reconnecting), the report is skipped.
 */
__attribute__((destructor)) static void reg_fini(void)
{
	if (!reg_thread_started || getpid() != reg.pid ||
	    pthread_mutex_trylock(&reg_lock))
		return;
	if (reg.io.fd >= 0)
		report();
	pthread_mutex_unlock(&reg_lock);
}

/* The child of a fork: its parent's registration is not its own. */
static void reg_atfork_child(void)
{
	atomic_store(&reg_up, false);
	if (reg.io.fd >= 0)
		close(reg.io.fd);
	reg.io.fd = -1;
	/* Not this process's registration to grow. */
	quota_grow = NULL;
	mm_grow_budget = NULL;
	mm_suspend_budget = NULL;
	pthread_mutex_init(&grow_lock, NULL);
}

static int start_thread(void)
{
	sigset_t all, old;
	pthread_attr_t at;
	pthread_t t;
	int e;

	/* The program's signal handlers never run on kmux's thread. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pthread_attr_init(&at);
	pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&at, 256 * 1024);
	e = pthread_create(&t, &at, reg_thread, NULL);
	pthread_attr_destroy(&at);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return -e;
}

/* --- start ---------------------------------------------------------------- */

/* The daemon's socket: KMUX_SOCKET alone, else per-user, then system. */
static int find_daemon(void)
{
	struct kmux_paths p;
	char err[256], tried[2][PATH_MAX];
	int n = 0, fd = -ENOENT;

	if (paths_resolve(&p, false, NULL, "/", err, sizeof(err)) == 0)
		snprintf(tried[n++], PATH_MAX, "%s", p.socket);
	if ((!getenv("KMUX_SOCKET") || !*getenv("KMUX_SOCKET")) &&
	    paths_system_socket(tried[n], PATH_MAX) == 0)
		n++;
	for (int i = 0; i < n; i++) {
		fd = conn_open(tried[i]);
		snprintf(reg.sock, sizeof(reg.sock), "%s", tried[i]);
		if (fd >= 0)
			return fd;
		if (fd != -ENOENT && fd != -ECONNREFUSED && fd != -ENOTDIR)
			log_warn("cannot reach kmuxd on %s: %s", tried[i],
				 strerror(-fd));
	}
	log_info("no kmuxd on %s: running unmanaged", n ? tried[0] : "?");
	return fd;
}

static void reg_init(void)
{
	const char *v;
	char *end;
	int e;

	v = getenv("KMUX_REGISTER");
	if (v && strcmp(v, "0") == 0)
		return;
	v = getenv("KMUX_JOB");
	if (v && *v) {
		reg.job = strtoull(v, &end, 10);
		if (*end || reg.job == 0) {
			log_warn("KMUX_JOB=%s is not a job id; not registering", v);
			return;
		}
	}
	v = getenv("KMUX_MEM");
	if (v && *v && (size_parse(v, &reg.mem) || reg.mem == 0)) {
		log_warn("KMUX_MEM=%s is not a size (e.g. 12G); not declared", v);
		reg.mem = 0;
	}
	/* The user's own limit is all it may take: declared as its need. */
	if (quota_cap && (!reg.mem || reg.mem > quota_cap))
		reg.mem = quota_cap;
	v = getenv("CUDA_VISIBLE_DEVICES");
	if (v) {
		reg.visible_set = true;
		if (parse_visible(v, &reg.visible)) {
			log_info("CUDA_VISIBLE_DEVICES=%s names no GPU indices "
				 "kmuxd can place on; running unmanaged", v);
			return;
		}
		if (!reg.visible)
			return;		/* no GPU at all: nothing to share */
	}
	reg.io.fd = find_daemon();
	if (reg.io.fd < 0)
		return;
	if (read_cmdline())
		goto unmanaged;
	reg.pid = getpid();
	reg.pid_start = read_start_time();
	v = getenv("KMUX_NAME");
	if (!v || !*v) {
		v = strrchr(reg.argv, '/');
		v = v ? v + 1 : reg.argv;
	}
	snprintf(reg.name, sizeof(reg.name), "%s", v);
	e = conn_register(false);
	if (e) {
		log_warn("kmuxd on %s: cannot register (%s); running unmanaged",
			 reg.sock, strerror(-e));
		goto unmanaged;
	}
	e = wait_admission();
	if (e == -ECANCELED) {
		reg_result = e;
		goto unmanaged;
	}
	if (e)
		goto unmanaged;
	pthread_atfork(NULL, NULL, reg_atfork_child);
	/*
	 * Under the memory manager's evict mode the quota is its budget: an
	 * allocation evicts rather than grows it, and only thrashing asks.
	 */
	if (mm_on != MM_EVICT) {
		quota_grow = reg_grow;
	} else {
		mm_grow_budget = reg_evict_grow;
		mm_suspend_budget = reg_suspend;
	}
	region_gates_map(reg.sock, reg.gpu0);
	atomic_store(&reg_up, true);
	e = start_thread();
	reg_thread_started = e == 0;
	if (e) {
		/* Admitted all the same: only the reports are lost. */
		log_warn("cannot start the kmuxd reporting thread: %s",
			 strerror(-e));
	}
	return;
unmanaged:
	conn_close();
}

int register_admitted(char *sock, size_t len, uint64_t *job, uint32_t *gpu)
{
	/* After pthread_once: reg's admission fields no longer change. */
	if (!reg_thread_started || !reg.job)
		return -ENOTCONN;
	snprintf(sock, len, "%s", reg.sock);
	*job = reg.job;
	*gpu = reg.gpu0;
	return 0;
}

bool register_daemon_up(void)
{
	return atomic_load(&reg_up);
}

int register_at_init(void)
{
	pthread_once(&reg_once, reg_init);
	return reg_result;
}
