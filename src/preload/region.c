/*
 * region.c - exclusive regions, preload side (see region.h and
 * include/kmux.h): kmux_exclusive_begin()/end(), the gate wait, and the
 * drain of this process's GPU work that kmuxd asks for when another task
 * enters a region on its GPU.
 *
 * A region is one connection to kmuxd of its own, opened at the outermost
 * begin and closed at the outermost end: REGION_ENTER, wait for
 * REGION_GRANTED (FIFO behind other regions on the GPU), REGION_LEAVE.
 * Its own connection, because the holder's death must release the GPU at
 * once: the kernel closes the socket of a process that dies, however it
 * dies, and kmuxd sees the hang-up.  Nesting is counted per process.
 *
 * Fail open, as the rest of the preload: without a daemon (or when kmuxd
 * does not manage this process) a region is a counted no-op with one
 * warning, and a gate closed longer than a region may last is ignored.
 */
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include "gates.h"
#include "kmux.h"
#include "log.h"
#include "preload.h"
#include "proto.h"
#include "region.h"
#include "register.h"

#define REGION_REPLY_MS 2000
#define REGION_MAX_CTX 16
/* Past the daemon's longest region: a gate that stays closed longer is
 * stale (its daemon died) and no longer waited for. */
#define REGION_GATE_SLACK_MS 5000

_Atomic uint32_t kmux_gate_page[REGION_GATE_PAGE / sizeof(uint32_t)]
	__attribute__((aligned(REGION_GATE_PAGE)));

static uint32_t gate_max_ms = 60000;
static _Atomic uint32_t gate_ignored;	/* a stale holder, not waited for */
/* Turns: a pause longer than this is stale (kmuxd rotates turns every
 * half second among at most GATES_MAX_PAUSED + 1 tasks); then turns are no
 * longer waited for in this process. */
#define REGION_TURN_STALE_MS 60000
static _Atomic int turns_ignored;
static _Atomic uint64_t turn_waits, turn_wait_us;
static _Atomic int region_held;		/* this process holds its GPU */

static pthread_mutex_t region_lock = PTHREAD_MUTEX_INITIALIZER;
static int region_depth;
static bool region_noop;		/* the outer begin was a no-op */
static int region_fd = -1;
static uint32_t region_seq;
static bool warned_noop;

static pthread_mutex_t ctx_lock = PTHREAD_MUTEX_INITIALIZER;
static CUcontext ctxs[REGION_MAX_CTX];
static int nctx;

static uint64_t mono_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static uint64_t mono_ms(void)
{
	return mono_us() / 1000u;
}

/* --- the gate ------------------------------------------------------------- */

void region_gates_map(const char *sock, uint32_t gpu)
{
	char path[PATH_MAX];
	struct gates_header h;
	void *p;
	int fd;

	if ((uintptr_t)kmux_gate_page % REGION_GATE_PAGE ||
	    sysconf(_SC_PAGESIZE) != REGION_GATE_PAGE || gpu >= GATES_MAX_GPUS) {
		log_info("exclusive regions: no gate on this system (page size "
			 "%ld); other tasks are frozen instead",
			 sysconf(_SC_PAGESIZE));
		return;
	}
	snprintf(path, sizeof(path), "%s%s", sock, GATES_SUFFIX);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		log_info("cannot open kmuxd's gates %s: %s", path,
			 strerror(errno));
		return;
	}
	if (pread(fd, &h, sizeof(h), 0) != (ssize_t)sizeof(h) ||
	    h.magic != GATES_MAGIC || h.version != GATES_VERSION) {
		log_warn("%s is not a kmux gate file of version %d", path,
			 GATES_VERSION);
		close(fd);
		return;
	}
	gate_max_ms = h.max_ms;
	/* Over the library's own page: the submit path's address stays. */
	p = mmap((void *)kmux_gate_page, REGION_GATE_PAGE, PROT_READ,
		 MAP_SHARED | MAP_FIXED, fd, (off_t)gates_offset(gpu));
	if (p == MAP_FAILED)
		log_warn("cannot map kmuxd's gate for GPU %u: %s", gpu,
			 strerror(errno));
	close(fd);
}

/* Is this process among the paused ones of its GPU's turns? */
static bool turn_paused(uint32_t me)
{
	uint32_t n = atomic_load_explicit(&kmux_gate_page[GATES_W_NPAUSED],
					  memory_order_acquire);

	if (n > GATES_MAX_PAUSED)
		n = GATES_MAX_PAUSED;
	for (uint32_t i = 0; i < n; i++)
		if (atomic_load_explicit(&kmux_gate_page[GATES_W_PAUSED + i],
					 memory_order_relaxed) == me)
			return true;
	return false;
}

static void turn_report(void)
{
	uint64_t n = atomic_load(&turn_waits);

	if (n)
		log_info("waited %.1f ms for its turn on the GPU (%llu "
			 "submissions; kmuxd's turns of wait-bound tasks)",
			 (double)atomic_load(&turn_wait_us) / 1000.0,
			 (unsigned long long)n);
}

static void turn_register_report(void)
{
	atexit(turn_report);
}

/*
 * Paused: wait until this process's turn (or no turns), polling as the
 * gate does.  Only the submitting thread waits; its earlier work goes on.
 */
static void turn_wait(uint32_t me)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	struct timespec ts = { 0, 50000 };
	uint64_t t0 = mono_us();

	pthread_once(&once, turn_register_report);
	while (atomic_load_explicit(&kmux_gate_page[0], memory_order_acquire) ==
	       GATES_TURNS && turn_paused(me) && !atomic_load(&region_held)) {
		if (!register_daemon_up())
			break;
		if (mono_us() - t0 > (uint64_t)REGION_TURN_STALE_MS * 1000u) {
			log_warn("paused for its turn for %u ms: not waiting "
				 "for turns any more",
				 (unsigned)((mono_us() - t0) / 1000u));
			atomic_store(&turns_ignored, 1);
			break;
		}
		nanosleep(&ts, NULL);
		if (ts.tv_nsec < 1000000)
			ts.tv_nsec *= 2;
	}
	atomic_fetch_add(&turn_waits, 1);
	atomic_fetch_add(&turn_wait_us, mono_us() - t0);
}

void region_gate_wait(void)
{
	uint32_t me = (uint32_t)getpid(), h;
	uint64_t t0 = 0;
	struct timespec ts = { 0, 50000 };

	for (;;) {
		h = atomic_load_explicit(&kmux_gate_page[0],
					 memory_order_acquire);
		if (h == 0 || h == me || atomic_load(&region_held) ||
		    h == atomic_load(&gate_ignored))
			return;
		if (h == GATES_TURNS) {
			if (atomic_load(&turns_ignored) || !turn_paused(me) ||
			    !register_daemon_up())
				return;
			turn_wait(me);
			/* Its turn, or the gate changed: a region may hold
			 * it now, which is waited for as always. */
			continue;
		}
		/* No daemon to open it again: do not wait for it. */
		if (!register_daemon_up())
			return;
		if (!t0) {
			t0 = mono_ms();
		} else if (mono_ms() - t0 > (uint64_t)gate_max_ms +
			   REGION_GATE_SLACK_MS) {
			log_warn("the gate of this GPU stayed closed by pid %u "
				 "for %u ms: not waiting for it any more", h,
				 (unsigned)(mono_ms() - t0));
			atomic_store(&gate_ignored, h);
			return;
		}
		nanosleep(&ts, NULL);
		if (ts.tv_nsec < 1000000)
			ts.tv_nsec *= 2;
	}
}

/* --- the drain ------------------------------------------------------------ */

void region_ctx_seen(CUcontext ctx)
{
	if (!ctx)
		return;
	pthread_mutex_lock(&ctx_lock);
	for (int i = 0; i < nctx; i++)
		if (ctxs[i] == ctx)
			goto out;
	if (nctx < REGION_MAX_CTX)
		ctxs[nctx++] = ctx;
out:
	pthread_mutex_unlock(&ctx_lock);
}

void region_ctx_gone(CUcontext ctx)
{
	pthread_mutex_lock(&ctx_lock);
	for (int i = 0; i < nctx; i++) {
		if (ctxs[i] == ctx) {
			ctxs[i] = ctxs[--nctx];
			break;
		}
	}
	pthread_mutex_unlock(&ctx_lock);
}

/*
 * On the helper thread: every context this process made current or
 * created, synchronized.  The gate is already closed, so nothing new
 * arrives meanwhile; the lock keeps a context from being destroyed under
 * the sync (ctx_going takes it first).
 */
void region_drain(void)
{
	CUcontext old;

	if (!real_ready() || !REAL(cuCtxPushCurrent_v2) ||
	    !REAL(cuCtxPopCurrent_v2) || !REAL(cuCtxSynchronize))
		return;
	pthread_mutex_lock(&ctx_lock);
	for (int i = 0; i < nctx; i++) {
		if (REAL(cuCtxPushCurrent_v2)(ctxs[i]) != CUDA_SUCCESS)
			continue;
		REAL(cuCtxSynchronize)();
		REAL(cuCtxPopCurrent_v2)(&old);
	}
	pthread_mutex_unlock(&ctx_lock);
}

/* --- the region's connection ---------------------------------------------- */

static int rc_send(const struct proto_msg *m)
{
	uint8_t buf[256];
	struct proto_buf out = { buf, sizeof(buf), 0 };
	struct proto_msg copy = *m;
	size_t off = 0;
	ssize_t n;
	int e;

	copy.seq = ++region_seq;
	e = proto_encode(&out, &copy);
	if (e)
		return e;
	while (off < out.len) {
		n = send(region_fd, buf + off, out.len - off, MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		off += (size_t)n;
	}
	return 0;
}

/*
 * One message into *m (it points into rx), waiting up to timeout_ms (-1:
 * for ever).  Frames to a region connection are small and come one per
 * request, so a read never holds more than the one frame wanted.
 */
static int rc_recv(struct proto_msg *m, uint8_t *rx, size_t cap,
		   int timeout_ms)
{
	struct pollfd p = { .fd = region_fd, .events = POLLIN };
	size_t len = 0, used;
	ssize_t n;
	int e;

	for (;;) {
		e = proto_decode(rx, len, m, &used);
		if (e != -EAGAIN)
			return e;
		if (len == cap)
			return -EMSGSIZE;
		e = poll(&p, 1, timeout_ms);
		if (e < 0 && errno == EINTR)
			continue;
		if (e < 0)
			return -errno;
		if (e == 0)
			return -ETIMEDOUT;
		n = read(region_fd, rx + len, cap - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -EPIPE;
		len += (size_t)n;
	}
}

static void rc_close(void)
{
	if (region_fd >= 0)
		close(region_fd);
	region_fd = -1;
	atomic_store(&region_held, 0);
}

static void warn_noop(const char *why)
{
	/* Shown whatever KMUX_LOG says: the user asked for exclusivity and
	 * does not get it, which their timings must not hide. */
	if (!warned_noop)
		fprintf(stderr, "kmux: warning: exclusive region requested, "
			"but %s: the region is not exclusive\n", why);
	warned_noop = true;
}

/* 0: held; KMUX_EXCLUSIVE_NOOP; or -errno. */
static int region_enter(void)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct proto_msg m = { .type = PROTO_HELLO };
	uint8_t rx[PROTO_HDR_SIZE + PROTO_MAX_ERRMSG + 64];
	char sock[PATH_MAX];
	uint64_t job;
	uint32_t gpu;
	int e;

	if (register_at_init() ||
	    register_admitted(sock, sizeof(sock), &job, &gpu)) {
		warn_noop("this process is not managed by kmuxd (no daemon, "
			  "or no GPU admitted)");
		return KMUX_EXCLUSIVE_NOOP;
	}
	if (strlen(sock) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	strcpy(sa.sun_path, sock);
	region_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (region_fd < 0)
		return -errno;
	if (connect(region_fd, (struct sockaddr *)&sa, sizeof(sa))) {
		e = -errno;
		rc_close();
		warn_noop("kmuxd cannot be reached");
		return e == -ENOENT || e == -ECONNREFUSED ?
		       KMUX_EXCLUSIVE_NOOP : e;
	}
	m.u.hello.role = PROTO_ROLE_PRELOAD;
	m.u.hello.pid = (uint32_t)getpid();
	m.u.hello.ident = "libkmux region";
	e = rc_send(&m);
	if (!e)
		e = rc_recv(&m, rx, sizeof(rx), REGION_REPLY_MS);
	if (!e && m.type != PROTO_OK)
		e = m.type == PROTO_ERROR ? -m.u.error.err : -EPROTO;
	if (e)
		goto fail;
	memset(&m, 0, sizeof(m));
	m.type = PROTO_REGION_ENTER;
	m.u.renter.job = job;
	m.u.renter.pid = (uint32_t)getpid();
	m.u.renter.gpu = gpu;
	e = rc_send(&m);
	if (!e)
		e = rc_recv(&m, rx, sizeof(rx), -1);	/* FIFO: as long as it takes */
	if (!e && m.type == PROTO_REGION_GRANTED) {
		atomic_store(&region_held, 1);
		log_info("exclusive region %llu on GPU %u after %llu us (%u "
			 "process(es) frozen)",
			 (unsigned long long)m.u.granted.region, gpu,
			 (unsigned long long)m.u.granted.waited_us,
			 m.u.granted.frozen);
		return 0;
	}
	if (!e && m.type == PROTO_ERROR) {
		log_warn("kmuxd refused the exclusive region: %s",
			 m.u.error.message);
		e = -m.u.error.err;
	} else if (!e) {
		e = -EPROTO;
	}
fail:
	rc_close();
	return e;
}

/* Outstanding work of the holder first: its region ends when it is done. */
static int region_leave(void)
{
	struct proto_msg m = { .type = PROTO_REGION_LEAVE };
	uint8_t rx[PROTO_HDR_SIZE + PROTO_MAX_ERRMSG + 64];
	CUcontext cur = NULL;
	int e;

	if (real_ready() && REAL(cuCtxGetCurrent) && REAL(cuCtxSynchronize) &&
	    REAL(cuCtxGetCurrent)(&cur) == CUDA_SUCCESS && cur)
		REAL(cuCtxSynchronize)();
	m.u.rleave.pid = (uint32_t)getpid();
	e = rc_send(&m);
	/* A revoked region's connection is closed, its ERROR still unread. */
	if (!e || e == -EPIPE || e == -ECONNRESET)
		e = rc_recv(&m, rx, sizeof(rx), e ? 0 : REGION_REPLY_MS);
	if (!e && m.type == PROTO_ERROR) {
		/* Revoked (it lasted too long): say so to the caller. */
		log_warn("kmuxd: %s", m.u.error.message);
		e = -m.u.error.err;
	} else if (!e && m.type != PROTO_OK) {
		e = -EPROTO;
	}
	rc_close();
	return e;
}

/* --- the API (include/kmux.h) --------------------------------------------- */

KMUX_EXPORT int kmux_exclusive_begin(void)
{
	int r;

	pthread_mutex_lock(&region_lock);
	if (region_depth >= KMUX_EXCLUSIVE_MAX_DEPTH) {
		r = -EOVERFLOW;
	} else if (region_depth > 0) {
		region_depth++;
		r = region_noop ? KMUX_EXCLUSIVE_NOOP : 0;
	} else {
		r = region_enter();
		if (r >= 0) {
			region_depth = 1;
			region_noop = r == KMUX_EXCLUSIVE_NOOP;
		}
	}
	pthread_mutex_unlock(&region_lock);
	return r;
}

KMUX_EXPORT int kmux_exclusive_end(void)
{
	int r = 0;

	pthread_mutex_lock(&region_lock);
	if (region_depth == 0)
		r = -EPERM;
	else if (--region_depth == 0 && !region_noop)
		r = region_leave();
	pthread_mutex_unlock(&region_lock);
	return r;
}

KMUX_EXPORT int kmux_exclusive_depth(void)
{
	int d;

	pthread_mutex_lock(&region_lock);
	d = region_depth;
	pthread_mutex_unlock(&region_lock);
	return d;
}

/* A forked child holds nothing: its parent's region is not its own. */
static void region_atfork_child(void)
{
	if (region_fd >= 0)
		close(region_fd);
	region_fd = -1;
	region_depth = 0;
	region_noop = false;
	atomic_store(&region_held, 0);
	pthread_mutex_init(&region_lock, NULL);
	pthread_mutex_init(&ctx_lock, NULL);
}

__attribute__((constructor)) static void region_init(void)
{
	pthread_atfork(NULL, NULL, region_atfork_child);
}
