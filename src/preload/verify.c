/*
 * verify.c - the recorder behind `kmux verify`: numbers and hashes every
 * device-to-host copy once it is known complete (see verify.h for the
 * rules and the line format).
 *
 * Pending copies are kept in issue order in one array.  A copy's stream is
 * remembered as the program named it: a user stream by its handle, the
 * legacy default stream with its context, a per-thread default stream with
 * its context and thread, so that a scheduled run (where the work really
 * ran on pool streams) completes exactly the same copies at the same calls
 * as an unscheduled one.  An event recorded on a stream that has pending
 * copies remembers the latest of them; waiting for the event completes the
 * copies up to it.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "preload.h"
#include "streams.h"
#include "verify.h"

#define VERIFY_NAME_MAX	200
#define VERIFY_LINE_MAX	(128 + VERIFY_KERNELS * (VERIFY_NAME_MAX + 1))

/* A stream as the program named it. */
struct vkey {
	uint64_t stream;	/* normalized (trace.h) */
	CUcontext ctx;		/* default streams only */
	uint64_t thread;	/* per-thread default stream only */
};

struct vpend {
	uint64_t idx;
	unsigned thread;	/* the issuing thread, numbered from 1 */
	struct vkey key;
	CUcontext ctx;		/* current when it was issued */
	const unsigned char *host;
	uint64_t row_bytes, rows, pitch, depth, slice_pitch, bytes;
	const char *kernels[VERIFY_KERNELS];	/* oldest first */
	int nkernels;
};

struct vevent {
	CUevent e;
	struct vkey key;
	uint64_t upto;		/* copies on key with idx <= upto */
};

int kmux_verify;

static pthread_mutex_t verify_mu = PTHREAD_MUTEX_INITIALIZER;
static int verify_fd = -1;
static uint64_t verify_next_idx;
static unsigned verify_next_thread;
static __thread unsigned tls_thread;	/* 0: no copy made yet */
/*
 * The newest kernel names, per thread and of the whole process (names live
 * forever).  A copy lists its own thread's: another thread's launches race
 * with it, and name kernels that have nothing to do with what it reads.
 * A thread that launched nothing gets the process's, the best hint left.
 */
static const char *verify_ring[VERIFY_KERNELS];
static unsigned verify_nring;			/* launches seen */
static __thread const char *tls_ring[VERIFY_KERNELS];
static __thread unsigned tls_nring;
static struct vpend *verify_pend;
static size_t verify_npend, verify_cappend;
static struct vevent *verify_ev;
static size_t verify_nev, verify_capev;

uint64_t verify_fnv1a(uint64_t h, const void *p, size_t n)
{
	const unsigned char *b = p;

	for (size_t i = 0; i < n; i++) {
		h ^= b[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

static void verify_fini(void);

int verify_init(const char *path)
{
	int fd;

	if (!path || !*path)
		return 0;
	fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0) {
		log_warn("verify: cannot open %s: %s; not recording", path,
			 strerror(errno));
		return -errno;
	}
	verify_fd = fd;
	kmux_verify = 1;
	atexit(verify_fini);
	return 0;
}

/* --- keys and lines ------------------------------------------------------- */

static void vkey_make(struct vkey *k, CUstream s, int per_thread)
{
	k->stream = stream_norm(s, per_thread);
	k->ctx = NULL;
	k->thread = 0;
	if (k->stream != TRACE_STREAM_LEGACY &&
	    k->stream != TRACE_STREAM_PER_THREAD)
		return;
	if (REAL(cuCtxGetCurrent))
		REAL(cuCtxGetCurrent)(&k->ctx);
	if (k->stream == TRACE_STREAM_PER_THREAD)
		k->thread = (uint64_t)pthread_self();
}

static int vkey_eq(const struct vkey *a, const struct vkey *b)
{
	return a->stream == b->stream && a->ctx == b->ctx &&
	       a->thread == b->thread;
}

static size_t put_name(char *p, size_t room, const char *name)
{
	size_t n = 0;

	for (; name[n] && n < VERIFY_NAME_MAX && n < room; n++) {
		unsigned char ch = (unsigned char)name[n];

		p[n] = ch > ' ' && ch <= '~' && ch != ',' ? (char)ch : '_';
	}
	return n;
}

/* Lock held.  hashed 0: the copy's bytes were never known complete. */
static void vline(const struct vpend *v, int hashed, uint64_t hash)
{
	char line[VERIFY_LINE_MAX];
	size_t len, room;
	int n;

	n = snprintf(line, sizeof(line),
		     "copy pid=%d idx=%llu thr=%u bytes=%llu ", (int)getpid(),
		     (unsigned long long)v->idx, v->thread,
		     (unsigned long long)v->bytes);
	len = (size_t)n;
	if (hashed)
		len += (size_t)snprintf(line + len, sizeof(line) - len,
					"hash=%016llx kernels=",
					(unsigned long long)hash);
	else
		len += (size_t)snprintf(line + len, sizeof(line) - len,
					"hash=- kernels=");
	if (!v->nkernels)
		line[len++] = '-';
	for (int i = 0; i < v->nkernels; i++) {
		room = sizeof(line) - len - 2;
		if (i)
			line[len++] = ',';
		len += put_name(line + len, room - 1, v->kernels[i]);
	}
	line[len++] = '\n';
	if (write(verify_fd, line, len) < 0) {
		/* Nothing to do: kmux verify reports a short log. */
	}
}

static uint64_t vhash(const struct vpend *v)
{
	uint64_t h = VERIFY_FNV_INIT;

	for (uint64_t z = 0; z < v->depth; z++)
		for (uint64_t r = 0; r < v->rows; r++)
			h = verify_fnv1a(h, v->host + z * v->slice_pitch +
					 r * v->pitch, (size_t)v->row_bytes);
	return h;
}

/* Lock held.  Hash or give up on pending copy i and drop it. */
static void vpend_finish(size_t i, int hash)
{
	struct vpend *v = &verify_pend[i];

	vline(v, hash, hash ? vhash(v) : 0);
	memmove(v, v + 1, (verify_npend - i - 1) * sizeof(*v));
	verify_npend--;
}

/* --- recording ----------------------------------------------------------- */

void verify_kernel(const char *name)
{
	if (!name)
		name = "?";
	tls_ring[tls_nring++ % VERIFY_KERNELS] = name;
	pthread_mutex_lock(&verify_mu);
	verify_ring[verify_nring % VERIFY_KERNELS] = name;
	verify_nring++;
	pthread_mutex_unlock(&verify_mu);
}

/* Lock held.  The newest names of ring (nring seen), oldest first. */
static void vpend_kernels(struct vpend *v, const char *const *ring,
			  unsigned nring)
{
	unsigned k0 = nring > VERIFY_KERNELS ? nring - VERIFY_KERNELS : 0;

	for (unsigned k = k0; k < nring; k++)
		v->kernels[v->nkernels++] = ring[k % VERIFY_KERNELS];
}

void verify_copy(const struct verify_copy *c)
{
	struct vpend v = {
		.host = c->host, .row_bytes = c->row_bytes, .rows = c->rows,
		.pitch = c->pitch, .depth = c->depth ? c->depth : 1,
		.slice_pitch = c->slice_pitch, .bytes = c->bytes,
	};
	struct vpend *grown;
	size_t cap;

	vkey_make(&v.key, c->stream, c->per_thread);
	if (REAL(cuCtxGetCurrent))
		REAL(cuCtxGetCurrent)(&v.ctx);
	pthread_mutex_lock(&verify_mu);
	if (!tls_thread)
		tls_thread = ++verify_next_thread;
	v.thread = tls_thread;
	v.idx = verify_next_idx++;
	if (tls_nring)
		vpend_kernels(&v, tls_ring, tls_nring);
	else
		vpend_kernels(&v, verify_ring, verify_nring);
	if (c->complete || !c->host) {
		vline(&v, c->host != NULL, c->host ? vhash(&v) : 0);
		goto out;
	}
	if (verify_npend == verify_cappend) {
		cap = verify_cappend ? 2 * verify_cappend : 16;
		grown = realloc(verify_pend, cap * sizeof(*grown));
		if (!grown) {
			vline(&v, 0, 0);
			goto out;
		}
		verify_pend = grown;
		verify_cappend = cap;
	}
	verify_pend[verify_npend++] = v;
out:
	pthread_mutex_unlock(&verify_mu);
}

/* --- completion ----------------------------------------------------------- */

void verify_done_ctx(CUcontext ctx)
{
	if (!ctx && REAL(cuCtxGetCurrent))
		REAL(cuCtxGetCurrent)(&ctx);
	pthread_mutex_lock(&verify_mu);
	for (size_t i = 0; i < verify_npend;) {
		if (verify_pend[i].ctx == ctx)
			vpend_finish(i, 1);
		else
			i++;
	}
	pthread_mutex_unlock(&verify_mu);
}

/* Lock held.  Copies on k with idx <= upto are complete. */
static void vdone_key(const struct vkey *k, uint64_t upto)
{
	for (size_t i = 0; i < verify_npend;) {
		if (vkey_eq(&verify_pend[i].key, k) &&
		    verify_pend[i].idx <= upto)
			vpend_finish(i, 1);
		else
			i++;
	}
}

void verify_done_stream(CUstream s, int per_thread)
{
	struct vkey k;

	vkey_make(&k, s, per_thread);
	pthread_mutex_lock(&verify_mu);
	vdone_key(&k, UINT64_MAX);
	pthread_mutex_unlock(&verify_mu);
}

static struct vevent *vevent_find(CUevent e)
{
	for (size_t i = 0; i < verify_nev; i++)
		if (verify_ev[i].e == e)
			return &verify_ev[i];
	return NULL;
}

static void vevent_drop(struct vevent *x)
{
	*x = verify_ev[--verify_nev];
}

void verify_event_recorded(CUevent e, CUstream s, int per_thread)
{
	struct vevent *x, *grown;
	uint64_t upto = 0;
	int any = 0;
	struct vkey k;
	size_t cap;

	vkey_make(&k, s, per_thread);
	pthread_mutex_lock(&verify_mu);
	for (size_t i = 0; i < verify_npend; i++) {
		if (vkey_eq(&verify_pend[i].key, &k)) {
			upto = verify_pend[i].idx;
			any = 1;
		}
	}
	x = vevent_find(e);
	if (!any) {
		/* It covers nothing pending: forget what it covered before. */
		if (x)
			vevent_drop(x);
		goto out;
	}
	if (!x) {
		if (verify_nev == verify_capev) {
			cap = verify_capev ? 2 * verify_capev : 16;
			grown = realloc(verify_ev, cap * sizeof(*grown));
			if (!grown)
				goto out;	/* those copies wait longer */
			verify_ev = grown;
			verify_capev = cap;
		}
		x = &verify_ev[verify_nev++];
	}
	x->e = e;
	x->key = k;
	x->upto = upto;
out:
	pthread_mutex_unlock(&verify_mu);
}

void verify_done_event(CUevent e)
{
	struct vevent *x;

	pthread_mutex_lock(&verify_mu);
	x = vevent_find(e);
	if (x) {
		vdone_key(&x->key, x->upto);
		vevent_drop(x);
	}
	pthread_mutex_unlock(&verify_mu);
}

void verify_host_gone(uint64_t base, uint64_t size)
{
	pthread_mutex_lock(&verify_mu);
	for (size_t i = 0; i < verify_npend;) {
		uint64_t h = (uint64_t)(uintptr_t)verify_pend[i].host;

		if (h >= base && h - base < size)
			vpend_finish(i, 0);
		else
			i++;
	}
	pthread_mutex_unlock(&verify_mu);
}

void verify_ctx_gone(CUcontext ctx)
{
	pthread_mutex_lock(&verify_mu);
	for (size_t i = 0; i < verify_npend;) {
		if (verify_pend[i].ctx == ctx)
			vpend_finish(i, 0);
		else
			i++;
	}
	pthread_mutex_unlock(&verify_mu);
}

/* The "sched" record (verify.h): whether this process was scheduled. */
static void verify_sched_line(void)
{
	struct streams_totals t;
	char line[160];
	int n;

	streams_get_totals(&t);
	n = snprintf(line, sizeof(line),
		     "sched pid=%d streams=%d contexts=%d off=%d ops=%llu\n",
		     (int)getpid(), kmux_streams, t.contexts, t.off,
		     (unsigned long long)t.st.ops);
	if (n > 0 && (size_t)n < sizeof(line) &&
	    write(verify_fd, line, (size_t)n) < 0) {
		/* kmux verify then finds no record and says so. */
	}
}

static void verify_fini(void)
{
	pthread_mutex_lock(&verify_mu);
	while (verify_npend)
		vpend_finish(0, 0);
	pthread_mutex_unlock(&verify_mu);
	/* One write(2) with O_APPEND: no lock needed, none held. */
	verify_sched_line();
}

static atomic_int verify_placed_said;

void verify_note_placed(void)
{
	char line[48];
	int n;

	/* Every decision calls this: a plain load first, not a write to a
	 * line all threads share. */
	if (verify_fd < 0 ||
	    atomic_load_explicit(&verify_placed_said, memory_order_relaxed) ||
	    atomic_exchange(&verify_placed_said, 1))
		return;
	n = snprintf(line, sizeof(line), "placed pid=%d\n", (int)getpid());
	if (n > 0 && (size_t)n < sizeof(line) &&
	    write(verify_fd, line, (size_t)n) < 0) {
		/* The exit record may still say so. */
	}
}

void verify_atfork_child(void)
{
	pthread_mutex_init(&verify_mu, NULL);
	verify_npend = 0;
	verify_nev = 0;
	verify_next_idx = 0;
	verify_next_thread = 0;
	tls_thread = 0;
	/* The child is a process of its own: its first placement says so. */
	atomic_store(&verify_placed_said, 0);
}
