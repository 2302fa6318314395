/*
 * trace.c - the preload's event recorder behind `kmux trace`: per-thread
 * binary buffers, their flushing to <dir>/kmux-trace.<pid>.jsonl, and the
 * CUDA-event timing of launches (KMUX_TRACE_TIMING, `kmux trace --timing`).
 *
 * Recording.  Each thread owns a buffer of fixed-size binary records (struct
 * rec), found through a thread-local pointer.  The first event of a thread
 * allocates the buffer and links it into a global list under a mutex; after
 * that, recording is a store into the buffer and a release store of its
 * count: no lock, no syscall.  Records are formatted as JSON only when the
 * buffer is flushed: when it is full, at the thread's next event once 100 ms
 * have passed since its last flush (that thread then also flushes other
 * threads' buffers that went stale), at thread exit (pthread key destructor)
 * and at process exit (atexit and a destructor).  Flushing another thread's
 * buffer is safe without stopping it: the owner is the only writer of the
 * records and of the count; a foreign flusher only advances `done` under the
 * buffer's flush mutex, and the owner resets both under that mutex.
 *
 * The file is created on the first flush, so processes of the command that
 * never touch CUDA (shells, compilers) leave no file.  Writes are whole lines,
 * O_APPEND, serialized by a mutex.  After fork() the child drops what it
 * inherited and writes its own file; an exec'd image of the same pid appends
 * a new header to the same file (the merger treats it as a new segment).
 *
 * File format (version 1), one JSON object per line.  Times are integer
 * nanoseconds relative to the header's t0 (CLOCK_MONOTONIC), "d" a duration;
 * "tid" is the OS thread id; streams, addresses and other handles are hex
 * strings ("0x1" is the legacy default stream, "0x2" the per-thread one).
 *
 *   {"type":"process","version":1,"pid":P,"ppid":P,"cmdline":"a b",
 *    "t0":NS,"wall0":NS,"timing":0|1}
 *   {"type":"launch","tid":T,"t":NS,"d":NS,"api":"cuLaunchKernel",
 *    "name":"vec_add","s":"0x1","grid":[x,y,z],"block":[x,y,z],"shmem":N,
 *    "allocs":[ids],"r":CUresult[,"kflags":N][,"seq":N][,"captured":1]}
 *	api is cuLaunchKernel, cuLaunchKernelEx, cuLaunchCooperativeKernel,
 *	cuGraphLaunch or cuLaunchHostFunc (the last two without name, grid,
 *	block, shmem, allocs).  seq: the launch was timed, see "gpu";
 *	captured (timing only): it went into a CUDA graph capture.
 *   {"type":"gpu","seq":N,"t":NS,"d":NS}
 *	GPU start and duration of launch seq, on the host timeline.
 *   {"type":"copy","tid":T,"t":NS,"d":NS,"kind":"HtoD","bytes":N,
 *    "dst":"0x..","src":"0x..","s":"0x..","async":0|1,"r":N}
 *	kind: HtoD DtoH DtoD any peer 2D 3D array memset (src "0x0").
 *   {"type":"sync","tid":T,"t":NS,"d":NS,"kind":"ctx","obj":"0x..","r":N}
 *	kind: ctx stream event stream_wait_event event_record stream_query
 *	event_query.
 *   {"type":"alloc"|"free","tid":T,"t":NS,"id":N,"base":"0x..","size":N,
 *    "kind":"device"|"managed"|"host"|"vmm","dev":N}
 *   {"type":"mm","t":NS,"resident":N,"evicted":N,"reserved":N}
 *	the memory manager's bytes (resident, copied out to the host,
 *	address space reserved) after each change (KMUX_MEMORY lazy/evict).
 *   {"type":"exit","t":NS,"timing_dropped":N[,"streams":N,"sched_ops":N,
 *    "sched_barriers":N,"bridged":N,"waits_issued":N,"waits_pruned":N]}
 *	normal process exit; timing_dropped counts timed launches whose GPU
 *	time could not be resolved.
 *
 * Timing.  trace_launch_begin() records a start event, trace_launch_end() an
 * end event, on the launch's stream; the pair waits in the thread's pending
 * ring until a host synchronization, a periodic flush, thread exit or
 * process exit finds it complete.  Events come from a per-context pool
 * (and a small per-thread cache in front of it, so the launch path does not
 * lock).  A context's first timed launch records a reference event and waits
 * for it, which ties the GPU clock to the host clock once: the GPU start of a
 * launch is ref_host + elapsed(ref, start).  Because cuEventElapsedTime
 * returns float milliseconds, whose resolution degrades with distance, a
 * resolved start event that lies more than 10 s after the current reference
 * becomes the next reference (chained, so no further synchronization).  A
 * pending pair always keeps the reference that was current when it was
 * launched, which completed before it, so elapsed times are never negative.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "real.h"	/* first: cuda-internal.h keeps literal entry names */
#include "compiler.h"
#include "log.h"
#include "trace.h"

#define TRACE_FORMAT_VERSION	1
#define TRACE_BUF_RECS		2048		/* 256 KiB per thread */
#define TRACE_OUT_BYTES		(128 * 1024)	/* format buffer */
#define TRACE_LINE_RESERVE	(40 * 1024)	/* > the longest line */
#define TRACE_NAME_MAX		4096		/* bytes of a name kept */
#define TRACE_CMDLINE_MAX	4096
#define TRACE_FLUSH_NS		100000000ull	/* 100 ms */
#define TRACE_PEND_MAX		1024		/* timed launches in flight */
#define TRACE_EVCACHE		32		/* events a thread keeps */
#define TRACE_CTX_EVENTS_MAX	65536		/* per context */
#define TRACE_REBASE_NS		10000000000ll	/* 10 s */
#define TRACE_INFLIGHT		4		/* nested begin/end depth */

enum rec_type {
	REC_LAUNCH = 1,
	REC_MORE,	/* continuation of a launch: more allocation ids */
	REC_COPY,
	REC_SYNC,
	REC_ALLOC,
	REC_FREE,
	REC_GPU,
	REC_MM,		/* the memory manager's bytes after a change */
};

#define REC_LAUNCH_IDS	5	/* allocation ids inside a launch record */
#define REC_MORE_IDS	12	/* ... and inside each continuation */

/* One event, binary; formatted at flush.  128 bytes. */
struct rec {
	uint8_t type;
	uint8_t sub;		/* api, copy kind, sync kind, alloc kind */
	uint8_t nmore;		/* REC_LAUNCH: REC_MORE records that follow */
	uint8_t flag;		/* REC_COPY: async; REC_LAUNCH: captured */
	int32_t result;
	uint64_t t, d;		/* monotonic ns, absolute */
	union {
		struct {
			const char *name;	/* NULL: graph / host func */
			uint64_t stream;
			uint64_t seq;		/* 0: not timed */
			uint32_t grid[3], block[3];
			uint32_t shmem, kflags;
			uint32_t nids;		/* in this record and the MOREs */
			uint32_t pad;
			uint64_t ids[REC_LAUNCH_IDS];
		} launch;
		struct {
			uint32_t n;
			uint32_t pad;
			uint64_t ids[REC_MORE_IDS];
		} more;
		struct {
			uint64_t dst, src, bytes, stream;
		} copy;
		struct {
			uint64_t obj;
		} sync;
		struct {
			uint64_t id, base, size;
			int32_t dev;
		} alloc;
		struct {
			uint64_t seq;
		} gpu;
		struct {
			uint64_t resident, evicted, reserved;
		} mm;
	};
};
_Static_assert(sizeof(struct rec) == 128, "trace records are 128 bytes");

/* A reference event tying one context's GPU clock to the host clock. */
struct tref {
	CUevent ev;
	int64_t host_ns;	/* when ev completed, monotonic */
	struct tref *prev;	/* older references, kept until ctx death */
};

/* Timing state of one CUDA context. Never freed: dead ones are skipped. */
struct ctxstate {
	struct ctxstate *next;		/* immutable once published */
	CUcontext ctx;
	atomic_int dead;
	pthread_mutex_t mu;		/* pool, ref establishment, rebase */
	_Atomic(struct tref *) ref;
	CUevent *pool;
	unsigned npool, cappool;
	unsigned nevents;		/* created so far */
	int broken;			/* the reference failed: no timing */
};

struct pending {
	struct ctxstate *cs;
	struct tref *ref;
	CUevent start, end;
	uint64_t seq;
};

struct inflight {
	struct ctxstate *cs;
	struct tref *ref;
	CUevent start, end;
};

/* A thread's buffer.  See the header comment for who may touch what. */
struct tbuf {
	struct tbuf *next, *prev;	/* registry, under trace_reg_mu */
	unsigned gen;			/* trace_gen at registration */
	pid_t tid;
	_Atomic uint64_t last_flush;
	_Atomic uint32_t n;		/* records filled, owner writes */
	_Atomic uint32_t done;		/* written out; under flush_mu */
	pthread_mutex_t flush_mu;
	struct rec *recs;
	char *out;			/* format buffer, under flush_mu */

	/* timing (allocated only with trace_timing) */
	pthread_mutex_t pend_mu;
	struct pending *pend;
	_Atomic uint32_t pend_head;	/* owner writes */
	_Atomic uint32_t pend_tail;	/* resolvers write, under pend_mu */
	struct inflight inflight[TRACE_INFLIGHT];
	unsigned ninflight;
	struct ctxstate *cache_cs;	/* owner only */
	CUevent cache[TRACE_EVCACHE];
	unsigned ncache;
};

int trace_enabled;
int trace_timing;
int (*trace_exit_fields)(char *buf, size_t len);

static char trace_dir[PATH_MAX];
static char trace_path[PATH_MAX + 64];	/* dir + "/kmux-trace.<pid>.jsonl" */
static char trace_cmdline[TRACE_CMDLINE_MAX];
static pid_t trace_pid;
static uint64_t trace_t0, trace_wall0;

static pthread_mutex_t trace_file_mu = PTHREAD_MUTEX_INITIALIZER;
static int trace_fd = -1;		/* under trace_file_mu, as are: */
static dev_t trace_dev;			/* what trace_fd must be */
static ino_t trace_ino;
static int trace_header_done;		/* by this process image */

static pthread_mutex_t trace_reg_mu = PTHREAD_MUTEX_INITIALIZER;
static struct tbuf *trace_bufs;		/* under trace_reg_mu */
static pthread_key_t trace_key;
static atomic_uint trace_gen;		/* bumped in a forked child */
static atomic_int trace_finished;

static pthread_mutex_t trace_ctx_mu = PTHREAD_MUTEX_INITIALIZER;
static _Atomic(struct ctxstate *) trace_ctxs;
static struct ctxstate *trace_ctxs_parent;	/* after fork: not ours */
static atomic_uint_fast64_t trace_seq;
static atomic_uint_fast64_t trace_timing_dropped;

/* The token of a launch into a stream capture: not timed, not lost. */
static struct inflight trace_captured;

static __thread struct tbuf *tls_buf;
static __thread int tls_failed;

static void tbuf_flush(struct tbuf *b);
static void resolve_buf(struct tbuf *self, struct tbuf *b,
			unsigned max_wait);
static void pool_put(struct ctxstate *cs, const CUevent *ev, unsigned n);
static void trace_finish(void);

uint64_t trace_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t wall_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int tracing(void)
{
	return __atomic_load_n(&trace_enabled, __ATOMIC_RELAXED);
}

/* Any internal failure ends tracing for this process; the program runs on. */
static void trace_stop(const char *what, int err)
{
	if (__atomic_exchange_n(&trace_enabled, 0, __ATOMIC_RELAXED))
		log_warn("trace: %s: %s; tracing stopped", what, strerror(err));
}

/* --- JSON formatting ---------------------------------------------------- */

struct fmt {
	char *buf;
	size_t len, cap;
};

static inline void fmt_raw(struct fmt *f, const char *s, size_t n)
{
	if (n > f->cap - f->len)
		n = f->cap - f->len;	/* cannot happen: lines are reserved */
	memcpy(f->buf + f->len, s, n);
	f->len += n;
}

static void fmt_s(struct fmt *f, const char *s)
{
	fmt_raw(f, s, strlen(s));
}

/* A string literal: its length is known at compile time. */
#define FMT_LIT(f, lit) fmt_raw(f, lit, sizeof(lit) - 1)

/*
 * Numbers by hand: flushing formats every record, and snprintf's format
 * parsing costs several times the rest of the work.
 */
static void fmt_u64(struct fmt *f, uint64_t v)
{
	static const char pairs[] =
		"00010203040506070809101112131415161718192021222324"
		"25262728293031323334353637383940414243444546474849"
		"50515253545556575859606162636465666768697071727374"
		"75767778798081828384858687888990919293949596979899";
	char tmp[20];
	size_t n = sizeof(tmp);

	/* Two digits per division. */
	while (v >= 100) {
		unsigned d = (unsigned)(v % 100) * 2;

		v /= 100;
		tmp[--n] = pairs[d + 1];
		tmp[--n] = pairs[d];
	}
	if (v >= 10) {
		tmp[--n] = pairs[v * 2 + 1];
		tmp[--n] = pairs[v * 2];
	} else {
		tmp[--n] = (char)('0' + v);
	}
	fmt_raw(f, tmp + n, sizeof(tmp) - n);
}

static void fmt_i64(struct fmt *f, int64_t v)
{
	if (v < 0) {
		FMT_LIT(f, "-");
		fmt_u64(f, 0 - (uint64_t)v);
	} else {
		fmt_u64(f, (uint64_t)v);
	}
}

/* "0x..." with its quotes: handles and addresses exceed a JSON number. */
static void fmt_hex(struct fmt *f, uint64_t v)
{
	static const char digits[] = "0123456789abcdef";
	char tmp[20];
	size_t n = 0;

	do {
		tmp[n++] = digits[v & 0xf];
		v >>= 4;
	} while (v);
	FMT_LIT(f, "\"0x");
	if (n > f->cap - f->len)
		return;
	while (n)
		f->buf[f->len++] = tmp[--n];
	FMT_LIT(f, "\"");
}

/* ,"key":value with the key given as the literal ",\"key\":". */
#define FMT_U64(f, key, v) (FMT_LIT(f, key), fmt_u64(f, v))
#define FMT_I64(f, key, v) (FMT_LIT(f, key), fmt_i64(f, v))
#define FMT_HEX(f, key, v) (FMT_LIT(f, key), fmt_hex(f, v))

static KMUX_PRINTF(2, 3) void fmt_pf(struct fmt *f, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(f->buf + f->len, f->cap - f->len, fmt, ap);
	va_end(ap);
	if (n > 0)
		f->len += (size_t)n < f->cap - f->len ? (size_t)n
						       : f->cap - f->len - 1;
}

/* Length of the valid UTF-8 sequence at s (at most n bytes), or 0. */
static size_t utf8_seq(const unsigned char *s, size_t n)
{
	unsigned char c = s[0];
	size_t len;
	unsigned char lo = 0x80, hi = 0xbf;

	if (c >= 0xc2 && c <= 0xdf)
		len = 2;
	else if (c >= 0xe0 && c <= 0xef)
		len = 3;
	else if (c >= 0xf0 && c <= 0xf4)
		len = 4;
	else
		return 0;
	if (len > n)
		return 0;
	/* No overlong forms, no surrogates, nothing above U+10FFFF. */
	if (c == 0xe0)
		lo = 0xa0;
	else if (c == 0xed)
		hi = 0x9f;
	else if (c == 0xf0)
		lo = 0x90;
	else if (c == 0xf4)
		hi = 0x8f;
	if (s[1] < lo || s[1] > hi)
		return 0;
	for (size_t i = 2; i < len; i++)
		if (s[i] < 0x80 || s[i] > 0xbf)
			return 0;
	return len;
}

/*
 * A JSON string of at most max bytes of s.  Quotes, backslashes and control
 * characters are escaped; invalid UTF-8 becomes U+FFFD so that every line
 * stays valid JSON for any reader.  A cut name ends in "...".
 */
static void fmt_jstr(struct fmt *f, const char *str, size_t max)
{
	const unsigned char *s = (const unsigned char *)str;
	size_t n = strnlen(str, max + 1), i = 0, l;
	int cut = n > max;
	char esc[8];

	if (cut)
		n = max;
	fmt_raw(f, "\"", 1);
	while (i < n) {
		unsigned char c = s[i];
		size_t run = i;

		/* Plain ASCII, the usual case, in one copy. */
		while (run < n && s[run] >= 0x20 && s[run] < 0x7f &&
		       s[run] != '"' && s[run] != '\\')
			run++;
		if (run > i) {
			fmt_raw(f, (const char *)&s[i], run - i);
			i = run;
			continue;
		}
		if (c == '"' || c == '\\') {
			esc[0] = '\\', esc[1] = (char)c;
			fmt_raw(f, esc, 2);
			i++;
		} else if (c < 0x20 || c == 0x7f) {
			snprintf(esc, sizeof(esc), "\\u%04x", c);
			fmt_raw(f, esc, 6);
			i++;
		} else if (c < 0x80) {
			fmt_raw(f, (const char *)&s[i], 1);
			i++;
		} else if ((l = utf8_seq(s + i, n - i)) != 0) {
			fmt_raw(f, (const char *)&s[i], l);
			i += l;
		} else {
			fmt_raw(f, "\\ufffd", 6);
			i++;
		}
	}
	if (cut)
		fmt_raw(f, "...", 3);
	fmt_raw(f, "\"", 1);
}

static const char *const api_names[] = {
	[TRACE_API_LAUNCH] = "cuLaunchKernel",
	[TRACE_API_LAUNCH_EX] = "cuLaunchKernelEx",
	[TRACE_API_LAUNCH_COOP] = "cuLaunchCooperativeKernel",
	[TRACE_API_GRAPH] = "cuGraphLaunch",
	[TRACE_API_HOST_FUNC] = "cuLaunchHostFunc",
};

static const char *const copy_names[] = {
	[TRACE_COPY_HTOD] = "HtoD", [TRACE_COPY_DTOH] = "DtoH",
	[TRACE_COPY_DTOD] = "DtoD", [TRACE_COPY_ANY] = "any",
	[TRACE_COPY_PEER] = "peer", [TRACE_COPY_2D] = "2D",
	[TRACE_COPY_3D] = "3D", [TRACE_COPY_ARRAY] = "array",
	[TRACE_MEMSET] = "memset",
};

static const char *const sync_names[] = {
	[TRACE_SYNC_CTX] = "ctx",
	[TRACE_SYNC_STREAM] = "stream",
	[TRACE_SYNC_EVENT] = "event",
	[TRACE_SYNC_STREAM_WAIT_EVENT] = "stream_wait_event",
	[TRACE_SYNC_EVENT_RECORD] = "event_record",
	[TRACE_SYNC_STREAM_QUERY] = "stream_query",
	[TRACE_SYNC_EVENT_QUERY] = "event_query",
};

static const char *const alloc_names[] = {
	[ALLOC_DEVICE] = "device", [ALLOC_MANAGED] = "managed",
	[ALLOC_HOST_MAPPED] = "host", [ALLOC_VMM] = "vmm",
};

static const char *name_of(const char *const *tab, size_t n, unsigned i)
{
	return i < n && tab[i] ? tab[i] : "unknown";
}

#define NAME_OF(tab, i) name_of(tab, KMUX_ARRAY_SIZE(tab), i)

static int64_t rel(uint64_t t)
{
	return (int64_t)(t - trace_t0);
}

/* {"type":"<type>","tid":T,"t":T,"d":D, with type a literal. */
#define FMT_HEAD(f, type, tid, r) do {					\
	FMT_LIT(f, "{\"type\":\"" type "\",\"tid\":");			\
	fmt_i64(f, tid);						\
	FMT_I64(f, ",\"t\":", rel((r)->t));				\
	FMT_U64(f, ",\"d\":", (r)->d);					\
} while (0)

static void fmt_str_field(struct fmt *f, const char *s)
{
	FMT_LIT(f, "\"");
	fmt_s(f, s);
	FMT_LIT(f, "\"");
}

static void fmt_dim3(struct fmt *f, const uint32_t v[3])
{
	FMT_LIT(f, "[");
	fmt_u64(f, v[0]);
	FMT_LIT(f, ",");
	fmt_u64(f, v[1]);
	FMT_LIT(f, ",");
	fmt_u64(f, v[2]);
	FMT_LIT(f, "]");
}

/* Allocation id i of a launch: in the record, then in its continuations. */
static uint64_t launch_id(const struct rec *r, uint32_t i)
{
	if (i < REC_LAUNCH_IDS)
		return r->launch.ids[i];
	i -= REC_LAUNCH_IDS;
	return r[1 + i / REC_MORE_IDS].more.ids[i % REC_MORE_IDS];
}

static void fmt_ids(struct fmt *f, const struct rec *r)
{
	FMT_LIT(f, ",\"allocs\":[");
	for (uint32_t i = 0; i < r->launch.nids; i++) {
		if (i)
			FMT_LIT(f, ",");
		fmt_u64(f, launch_id(r, i));
	}
	FMT_LIT(f, "]");
}

/* Format one record (and its continuations) as a line; records consumed. */
static unsigned fmt_rec(struct fmt *f, pid_t tid, const struct rec *r)
{
	switch (r->type) {
	case REC_LAUNCH:
		FMT_HEAD(f, "launch", tid, r);
		FMT_LIT(f, ",\"api\":");
		fmt_str_field(f, NAME_OF(api_names, r->sub));
		if (r->launch.name) {
			FMT_LIT(f, ",\"name\":");
			fmt_jstr(f, r->launch.name, TRACE_NAME_MAX);
		}
		FMT_HEX(f, ",\"s\":", r->launch.stream);
		if (r->launch.name) {
			FMT_LIT(f, ",\"grid\":");
			fmt_dim3(f, r->launch.grid);
			FMT_LIT(f, ",\"block\":");
			fmt_dim3(f, r->launch.block);
			FMT_U64(f, ",\"shmem\":", r->launch.shmem);
			fmt_ids(f, r);
		}
		FMT_I64(f, ",\"r\":", r->result);
		if (r->launch.kflags)
			FMT_U64(f, ",\"kflags\":", r->launch.kflags);
		if (r->launch.seq)
			FMT_U64(f, ",\"seq\":", r->launch.seq);
		if (r->flag)
			FMT_LIT(f, ",\"captured\":1");
		FMT_LIT(f, "}\n");
		return 1u + r->nmore;
	case REC_COPY:
		FMT_HEAD(f, "copy", tid, r);
		FMT_LIT(f, ",\"kind\":");
		fmt_str_field(f, NAME_OF(copy_names, r->sub));
		FMT_U64(f, ",\"bytes\":", r->copy.bytes);
		FMT_HEX(f, ",\"dst\":", r->copy.dst);
		FMT_HEX(f, ",\"src\":", r->copy.src);
		FMT_HEX(f, ",\"s\":", r->copy.stream);
		FMT_U64(f, ",\"async\":", r->flag ? 1 : 0);
		FMT_I64(f, ",\"r\":", r->result);
		FMT_LIT(f, "}\n");
		return 1;
	case REC_SYNC:
		FMT_HEAD(f, "sync", tid, r);
		FMT_LIT(f, ",\"kind\":");
		fmt_str_field(f, NAME_OF(sync_names, r->sub));
		FMT_HEX(f, ",\"obj\":", r->sync.obj);
		FMT_I64(f, ",\"r\":", r->result);
		FMT_LIT(f, "}\n");
		return 1;
	case REC_ALLOC:
	case REC_FREE:
		if (r->type == REC_ALLOC)
			FMT_LIT(f, "{\"type\":\"alloc\",\"tid\":");
		else
			FMT_LIT(f, "{\"type\":\"free\",\"tid\":");
		fmt_i64(f, tid);
		FMT_I64(f, ",\"t\":", rel(r->t));
		FMT_U64(f, ",\"id\":", r->alloc.id);
		FMT_HEX(f, ",\"base\":", r->alloc.base);
		FMT_U64(f, ",\"size\":", r->alloc.size);
		FMT_LIT(f, ",\"kind\":");
		fmt_str_field(f, NAME_OF(alloc_names, r->sub));
		FMT_I64(f, ",\"dev\":", r->alloc.dev);
		FMT_LIT(f, "}\n");
		return 1;
	case REC_MM:
		FMT_LIT(f, "{\"type\":\"mm\"");
		FMT_I64(f, ",\"t\":", rel(r->t));
		FMT_U64(f, ",\"resident\":", r->mm.resident);
		FMT_U64(f, ",\"evicted\":", r->mm.evicted);
		FMT_U64(f, ",\"reserved\":", r->mm.reserved);
		FMT_LIT(f, "}\n");
		return 1;
	case REC_GPU:
		FMT_LIT(f, "{\"type\":\"gpu\"");
		FMT_U64(f, ",\"seq\":", r->gpu.seq);
		FMT_I64(f, ",\"t\":", rel(r->t));
		FMT_U64(f, ",\"d\":", r->d);
		FMT_LIT(f, "}\n");
		return 1;
	default:
		/* A stray continuation; skip it rather than misformat. */
		return 1;
	}
}

/* --- the file ------------------------------------------------------------ */

static int write_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/*
 * Called with trace_file_mu held: open (create) the file, and write the
 * header unless this process image already did and the file is still there.
 */
static int file_open_locked(void)
{
	/* Static: we hold trace_file_mu, and thread stacks may be small. */
	static char hdr[TRACE_CMDLINE_MAX * 6 + 512];
	struct fmt f = { hdr, 0, sizeof(hdr) };
	struct stat st;
	int fd, err;

	fd = open(trace_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st)) {
		err = -errno;
		goto err;
	}
	if (!trace_header_done || st.st_size == 0) {
		fmt_pf(&f, "{\"type\":\"process\",\"version\":%d,\"pid\":%d"
		       ",\"ppid\":%d,\"cmdline\":", TRACE_FORMAT_VERSION,
		       (int)trace_pid, (int)getppid());
		fmt_jstr(&f, trace_cmdline, TRACE_CMDLINE_MAX);
		fmt_pf(&f, ",\"t0\":%llu,\"wall0\":%llu,\"timing\":%d}\n",
		       (unsigned long long)trace_t0,
		       (unsigned long long)trace_wall0, trace_timing ? 1 : 0);
		err = write_all(fd, hdr, f.len);
		if (err)
			goto err;
		trace_header_done = 1;
	}
	trace_fd = fd;
	trace_dev = st.st_dev;
	trace_ino = st.st_ino;
	return 0;
err:
	close(fd);
	return err;
}

/*
 * Called with trace_file_mu held.  Programs that close every descriptor
 * (daemons do) or dup2() over ours must not get our lines in their files:
 * check that trace_fd is still our file, and reopen it if not.
 */
static int file_check_locked(void)
{
	struct stat st;

	if (trace_fd >= 0 && fstat(trace_fd, &st) == 0 &&
	    st.st_dev == trace_dev && st.st_ino == trace_ino)
		return 0;
	trace_fd = -1;		/* no longer ours: never close it */
	return file_open_locked();
}

/* Append whole lines to the file.  Failure stops tracing. */
static void file_write(const char *p, size_t n)
{
	int err;

	if (!n || !tracing())
		return;
	pthread_mutex_lock(&trace_file_mu);
	err = file_check_locked();
	if (!err)
		err = write_all(trace_fd, p, n);
	pthread_mutex_unlock(&trace_file_mu);
	if (err)
		trace_stop(trace_path, -err);
}

/* --- per-thread buffers ------------------------------------------------- */

/*
 * Format records [b->done, b->n) and write them.  Called with flush_mu held,
 * by the owner or by another thread.  Returns the count it consumed up to.
 */
static uint32_t tbuf_write_locked(struct tbuf *b)
{
	uint32_t n = atomic_load_explicit(&b->n, memory_order_acquire);
	struct fmt f = { b->out, 0, TRACE_OUT_BYTES };
	uint32_t i = atomic_load_explicit(&b->done, memory_order_relaxed);

	while (i < n) {
		if (f.cap - f.len < TRACE_LINE_RESERVE) {
			file_write(f.buf, f.len);
			f.len = 0;
		}
		i += fmt_rec(&f, b->tid, &b->recs[i]);
	}
	file_write(f.buf, f.len);
	atomic_store_explicit(&b->done, n, memory_order_relaxed);
	atomic_store_explicit(&b->last_flush, trace_now(),
			      memory_order_relaxed);
	return n;
}

/* The owner flushes its own buffer and starts it over. */
static void tbuf_flush(struct tbuf *b)
{
	pthread_mutex_lock(&b->flush_mu);
	tbuf_write_locked(b);
	atomic_store_explicit(&b->done, 0, memory_order_relaxed);
	atomic_store_explicit(&b->n, 0, memory_order_relaxed);
	pthread_mutex_unlock(&b->flush_mu);
}

/* Some other thread's buffer: write what it has, leave it in place. */
static void tbuf_flush_foreign(struct tbuf *b, int trylock)
{
	if (trylock) {
		if (pthread_mutex_trylock(&b->flush_mu))
			return;
	} else {
		pthread_mutex_lock(&b->flush_mu);
	}
	tbuf_write_locked(b);
	pthread_mutex_unlock(&b->flush_mu);
}

static void tbuf_init_locks(struct tbuf *b)
{
	pthread_mutex_init(&b->flush_mu, NULL);
	pthread_mutex_init(&b->pend_mu, NULL);
}

/* Link into the registry (the only lock a thread's recording ever takes). */
static void tbuf_register(struct tbuf *b)
{
	b->gen = atomic_load(&trace_gen);
	b->tid = (pid_t)syscall(SYS_gettid);
	atomic_store(&b->last_flush, trace_now());
	pthread_mutex_lock(&trace_reg_mu);
	b->prev = NULL;
	b->next = trace_bufs;
	if (trace_bufs)
		trace_bufs->prev = b;
	trace_bufs = b;
	pthread_mutex_unlock(&trace_reg_mu);
}

static void tbuf_unregister(struct tbuf *b)
{
	pthread_mutex_lock(&trace_reg_mu);
	if (b->prev)
		b->prev->next = b->next;
	else if (trace_bufs == b)
		trace_bufs = b->next;
	if (b->next)
		b->next->prev = b->prev;
	b->next = b->prev = NULL;
	pthread_mutex_unlock(&trace_reg_mu);
}

static void tbuf_free(struct tbuf *b)
{
	free(b->recs);
	free(b->out);
	free(b->pend);
	free(b);
}

static struct tbuf *tbuf_new(void)
{
	struct tbuf *b = calloc(1, sizeof(*b));

	if (!b)
		return NULL;
	b->recs = malloc(TRACE_BUF_RECS * sizeof(*b->recs));
	b->out = malloc(TRACE_OUT_BYTES);
	if (trace_timing)
		b->pend = malloc(TRACE_PEND_MAX * sizeof(*b->pend));
	if (!b->recs || !b->out || (trace_timing && !b->pend)) {
		tbuf_free(b);
		return NULL;
	}
	tbuf_init_locks(b);
	return b;
}

/* Forget what a buffer inherited from the parent process. */
static void tbuf_reset(struct tbuf *b)
{
	tbuf_init_locks(b);
	atomic_store(&b->n, 0);
	atomic_store(&b->done, 0);
	atomic_store(&b->pend_head, 0);
	atomic_store(&b->pend_tail, 0);
	b->ninflight = 0;
	b->cache_cs = NULL;	/* the parent's CUDA objects are not ours */
	b->ncache = 0;
}

static struct tbuf *tbuf_get_slow(void)
{
	struct tbuf *b = tls_buf;

	if (tls_failed || !tracing())
		return NULL;
	if (b) {
		/* Forked child: the buffer was the parent's. */
		tbuf_reset(b);
	} else {
		b = tbuf_new();
		if (!b) {
			tls_failed = 1;
			log_warn("trace: out of memory for a thread buffer; "
				 "thread %ld not traced",
				 (long)syscall(SYS_gettid));
			return NULL;
		}
		tls_buf = b;
		pthread_setspecific(trace_key, b);
	}
	tbuf_register(b);
	return b;
}

static inline struct tbuf *tbuf_get(void)
{
	struct tbuf *b = tls_buf;

	if (likely(b && b->gen == atomic_load_explicit(&trace_gen,
						       memory_order_relaxed)))
		return b;
	return tbuf_get_slow();
}

/* Room for k consecutive records (a launch and its continuations). */
static inline struct rec *rec_reserve(struct tbuf *b, uint32_t k)
{
	uint32_t n = atomic_load_explicit(&b->n, memory_order_relaxed);

	if (unlikely(n + k > TRACE_BUF_RECS)) {
		tbuf_flush(b);
		n = 0;
	}
	return &b->recs[n];
}

static inline void rec_commit(struct tbuf *b, uint32_t k)
{
	uint32_t n = atomic_load_explicit(&b->n, memory_order_relaxed);

	atomic_store_explicit(&b->n, n + k, memory_order_release);
}

/* Other threads' buffers not flushed for a while (idle threads). */
static void flush_stale_others(struct tbuf *self, uint64_t now)
{
	pthread_mutex_lock(&trace_reg_mu);
	for (struct tbuf *b = trace_bufs; b; b = b->next) {
		uint64_t last = atomic_load_explicit(&b->last_flush,
						     memory_order_relaxed);

		if (b == self || now - last < TRACE_FLUSH_NS)
			continue;
		if (atomic_load_explicit(&b->n, memory_order_relaxed) ==
		    atomic_load_explicit(&b->done, memory_order_relaxed))
			continue;	/* a peek; the flush looks again */
		tbuf_flush_foreign(b, 1);
	}
	pthread_mutex_unlock(&trace_reg_mu);
}

/* At an event, every ~100 ms: flush, and resolve finished timings. */
static void periodic(struct tbuf *b, uint64_t now)
{
	tbuf_flush(b);
	flush_stale_others(b, now);
	if (trace_timing)
		resolve_buf(b, b, 0);
}

static inline void after_event(struct tbuf *b, uint64_t now)
{
	uint64_t last = atomic_load_explicit(&b->last_flush,
					     memory_order_relaxed);

	if (unlikely(now - last >= TRACE_FLUSH_NS && now > last))
		periodic(b, now);
}

/* pthread key destructor: the thread is exiting. */
static void tbuf_thread_exit(void *p)
{
	struct tbuf *b = p;

	if (b->gen != atomic_load(&trace_gen)) {
		/* Inherited across fork and never re-registered. */
		tls_buf = NULL;
		tbuf_free(b);
		return;
	}
	/* Its timed launches die with it unless resolved now. */
	if (trace_timing && b->pend)
		resolve_buf(b, b, UINT_MAX);
	if (tracing())
		tbuf_flush(b);
	tbuf_unregister(b);
	/* Cached events go back to their pool: the context outlives us. */
	if (b->cache_cs && b->ncache)
		pool_put(b->cache_cs, b->cache, b->ncache);
	tls_buf = NULL;
	pthread_mutex_destroy(&b->flush_mu);
	pthread_mutex_destroy(&b->pend_mu);
	tbuf_free(b);
}

/* --- timing: contexts, events, references ------------------------------- */

/*
 * CUDA graph capture.  A launch on a capturing stream only adds a node to a
 * graph: it is not timed (events recorded into a capture would not complete
 * until the graph runs).  And while any thread captures in global mode,
 * "unsafe" calls such as cuEventQuery or cuEventSynchronize from this thread
 * would fail and invalidate that capture, so ours run in relaxed mode: they
 * only touch events recorded outside any capture, which is allowed.  The
 * two entry points are not in the hook table; looked up once, lazily.
 */
typedef CUresult (*is_capturing_fn)(CUstream, CUstreamCaptureStatus *);
typedef CUresult (*exchange_mode_fn)(CUstreamCaptureMode *);
static is_capturing_fn capture_status;
static exchange_mode_fn capture_exchange;
static pthread_once_t capture_once = PTHREAD_ONCE_INIT;

static void capture_lookup(void)
{
	void *h = real_libcuda();

	if (!h)
		return;
	capture_status = (is_capturing_fn)real_dlsym(h, "cuStreamIsCapturing");
	capture_exchange = (exchange_mode_fn)real_dlsym(h,
					"cuThreadExchangeStreamCaptureMode");
}

/* Capturing, or we cannot tell (the legacy stream may say so by error). */
static int stream_capturing(CUstream s)
{
	CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_NONE;

	pthread_once(&capture_once, capture_lookup);
	if (!capture_status)
		return 0;
	return capture_status(s, &st) != CUDA_SUCCESS ||
	       st != CU_STREAM_CAPTURE_STATUS_NONE;
}

/* Enter relaxed capture mode; returns what to give capture_restore(). */
static int capture_relax(void)
{
	CUstreamCaptureMode m = CU_STREAM_CAPTURE_MODE_RELAXED;

	pthread_once(&capture_once, capture_lookup);
	if (!capture_exchange || capture_exchange(&m) != CUDA_SUCCESS)
		return -1;
	return (int)m;
}

static void capture_restore(int old)
{
	CUstreamCaptureMode m = (CUstreamCaptureMode)old;

	if (old >= 0)
		capture_exchange(&m);
}

static struct ctxstate *ctx_lookup(CUcontext ctx)
{
	struct ctxstate *cs = atomic_load_explicit(&trace_ctxs,
						   memory_order_acquire);

	for (; cs; cs = cs->next)
		if (cs->ctx == ctx && !atomic_load_explicit(&cs->dead,
						memory_order_relaxed))
			return cs;
	return NULL;
}

static struct ctxstate *ctx_get(CUcontext ctx)
{
	struct ctxstate *cs = ctx_lookup(ctx);

	if (cs)
		return cs;
	pthread_mutex_lock(&trace_ctx_mu);
	cs = ctx_lookup(ctx);
	if (!cs) {
		cs = calloc(1, sizeof(*cs));
		if (cs) {
			cs->ctx = ctx;
			pthread_mutex_init(&cs->mu, NULL);
			cs->next = atomic_load(&trace_ctxs);
			atomic_store_explicit(&trace_ctxs, cs,
					      memory_order_release);
		}
	}
	pthread_mutex_unlock(&trace_ctx_mu);
	return cs;
}

/* Refill the thread's event cache from cs's pool, creating events if dry. */
static int cache_refill(struct tbuf *b, struct ctxstate *cs)
{
	CUevent ev;
	int mode = capture_relax();

	pthread_mutex_lock(&cs->mu);
	while (b->ncache < TRACE_EVCACHE / 2 && cs->npool)
		b->cache[b->ncache++] = cs->pool[--cs->npool];
	while (b->ncache < TRACE_EVCACHE / 2 &&
	       cs->nevents < TRACE_CTX_EVENTS_MAX) {
		if (REAL(cuEventCreate)(&ev, CU_EVENT_DEFAULT) != CUDA_SUCCESS)
			break;
		cs->nevents++;
		b->cache[b->ncache++] = ev;
	}
	pthread_mutex_unlock(&cs->mu);
	capture_restore(mode);
	return b->ncache ? 0 : -ENOMEM;
}

static CUevent ev_get(struct tbuf *b, struct ctxstate *cs)
{
	if (b->cache_cs != cs) {
		/* Switching contexts: hand the old cache back. */
		struct ctxstate *old = b->cache_cs;

		if (old && b->ncache)
			pool_put(old, b->cache, b->ncache);
		b->cache_cs = cs;
		b->ncache = 0;
	}
	if (!b->ncache && cache_refill(b, cs))
		return NULL;
	return b->cache[--b->ncache];
}

/* Return events to cs's pool (destroyed if the pool cannot grow). */
static void pool_put(struct ctxstate *cs, const CUevent *ev, unsigned n)
{
	unsigned i = 0;

	pthread_mutex_lock(&cs->mu);
	if (atomic_load(&cs->dead)) {
		/* Died with its context, or the driver reclaims them. */
		pthread_mutex_unlock(&cs->mu);
		return;
	}
	if (cs->npool + n > cs->cappool) {
		unsigned cap = cs->cappool ? cs->cappool : 64;
		CUevent *p;

		while (cap < cs->npool + n)
			cap *= 2;
		p = realloc(cs->pool, cap * sizeof(*p));
		if (p) {
			cs->pool = p;
			cs->cappool = cap;
		}
	}
	for (; i < n && cs->npool < cs->cappool; i++)
		cs->pool[cs->npool++] = ev[i];
	for (; i < n; i++) {
		REAL(cuEventDestroy_v2)(ev[i]);
		cs->nevents--;
	}
	pthread_mutex_unlock(&cs->mu);
}

/* Give an event back: to this thread's cache when it fits, else the pool. */
static void ev_put(struct tbuf *b, struct ctxstate *cs, CUevent ev)
{
	if (!ev || atomic_load_explicit(&cs->dead, memory_order_relaxed))
		return;		/* died with its context */
	if (b && b->cache_cs == cs && b->ncache < TRACE_EVCACHE) {
		b->cache[b->ncache++] = ev;
		return;
	}
	pool_put(cs, &ev, 1);
}

/*
 * The first timed launch of a context: record a reference on its stream and
 * wait for it, once, to learn where the GPU clock sits on the host clock.
 */
static struct tref *ref_establish(struct ctxstate *cs, CUstream s)
{
	struct tref *ref;
	CUevent ev = NULL;
	int mode = capture_relax();

	pthread_mutex_lock(&cs->mu);
	ref = atomic_load(&cs->ref);
	if (ref || cs->broken)
		goto out;
	ref = calloc(1, sizeof(*ref));
	if (!ref)
		goto err;
	if (REAL(cuEventCreate)(&ev, CU_EVENT_DEFAULT) != CUDA_SUCCESS)
		goto err_free;
	if (REAL(cuEventRecord)(ev, s) != CUDA_SUCCESS ||
	    REAL(cuEventSynchronize)(ev) != CUDA_SUCCESS)
		goto err_destroy;
	ref->ev = ev;
	ref->host_ns = (int64_t)trace_now();
	cs->nevents++;
	atomic_store(&cs->ref, ref);
	goto out;

err_destroy:
	REAL(cuEventDestroy_v2)(ev);
err_free:
	free(ref);
	ref = NULL;
err:
	cs->broken = 1;
	log_warn("trace: cannot set up launch timing for context %p",
		 (void *)cs->ctx);
out:
	pthread_mutex_unlock(&cs->mu);
	capture_restore(mode);
	return ref;
}

static float elapsed_ms(CUevent a, CUevent b, CUresult *r)
{
	float ms = 0;

	if (REAL(cuEventElapsedTime_v2))
		*r = REAL(cuEventElapsedTime_v2)(&ms, a, b);
	else if (REAL(cuEventElapsedTime))
		*r = REAL(cuEventElapsedTime)(&ms, a, b);
	else
		*r = CUDA_ERROR_NOT_SUPPORTED;
	return ms;
}

static int64_t ms_to_ns(float ms)
{
	return (int64_t)((double)ms * 1e6 + 0.5);
}

/*
 * The pair finished: place it on the host timeline and record it.  Returns
 * 0 when the start event was kept as the context's next reference.
 */
static int pending_finish(struct tbuf *self, struct pending *p)
{
	struct ctxstate *cs = p->cs;
	struct tref *cur;
	CUresult r1, r2;
	float to_start = elapsed_ms(p->ref->ev, p->start, &r1);
	float dur = elapsed_ms(p->start, p->end, &r2);
	int64_t start_ns;
	struct rec *rec;

	if (r1 != CUDA_SUCCESS || r2 != CUDA_SUCCESS) {
		atomic_fetch_add(&trace_timing_dropped, 1);
		return 1;
	}
	start_ns = p->ref->host_ns + ms_to_ns(to_start);
	if (self && tracing()) {
		rec = rec_reserve(self, 1);
		rec->type = REC_GPU;
		rec->t = (uint64_t)start_ns;
		rec->d = dur > 0 ? (uint64_t)ms_to_ns(dur) : 0;
		rec->gpu.seq = p->seq;
		rec_commit(self, 1);
	}

	/* Far from the reference, float ms get coarse: chain a new one. */
	cur = atomic_load(&cs->ref);
	if (cur && start_ns - cur->host_ns > TRACE_REBASE_NS) {
		struct tref *n = malloc(sizeof(*n));

		if (!n)
			return 1;
		n->ev = p->start;
		n->host_ns = start_ns;
		pthread_mutex_lock(&cs->mu);
		if (atomic_load(&cs->ref) == cur && !atomic_load(&cs->dead)) {
			n->prev = cur;
			atomic_store(&cs->ref, n);
			pthread_mutex_unlock(&cs->mu);
			return 0;
		}
		pthread_mutex_unlock(&cs->mu);
		free(n);
	}
	return 1;
}

/*
 * Resolve b's finished pairs, oldest first, waiting for at most max_wait of
 * them (0: only what is already done).  Results go into self, the calling
 * thread's buffer (NULL: lost), which the caller looked up before taking any
 * lock, as tbuf_get() may register it.  Called with b->pend_mu held.
 */
static void resolve_buf_locked(struct tbuf *self, struct tbuf *b,
			       unsigned max_wait)
{
	uint32_t head = atomic_load_explicit(&b->pend_head,
					     memory_order_acquire);
	uint32_t tail = atomic_load_explicit(&b->pend_tail,
					     memory_order_relaxed);
	unsigned waited = 0;

	for (; tail != head; tail++) {
		struct pending *p = &b->pend[tail % TRACE_PEND_MAX];
		CUresult r;

		if (atomic_load(&p->cs->dead)) {
			atomic_fetch_add(&trace_timing_dropped, 1);
			continue;
		}
		r = REAL(cuEventQuery)(p->end);
		if (r == CUDA_ERROR_NOT_READY) {
			if (waited >= max_wait)
				break;
			waited++;
			r = REAL(cuEventSynchronize)(p->end);
		}
		if (r != CUDA_SUCCESS) {
			atomic_fetch_add(&trace_timing_dropped, 1);
			ev_put(self, p->cs, p->start);
			ev_put(self, p->cs, p->end);
			continue;
		}
		if (pending_finish(self, p))
			ev_put(self, p->cs, p->start);
		ev_put(self, p->cs, p->end);
	}
	atomic_store_explicit(&b->pend_tail, tail, memory_order_release);
}

static void resolve_buf(struct tbuf *self, struct tbuf *b, unsigned max_wait)
{
	int mode;

	if (!b->pend ||
	    atomic_load_explicit(&b->pend_head, memory_order_acquire) ==
	    atomic_load_explicit(&b->pend_tail, memory_order_acquire))
		return;
	mode = capture_relax();
	pthread_mutex_lock(&b->pend_mu);
	resolve_buf_locked(self, b, max_wait);
	pthread_mutex_unlock(&b->pend_mu);
	capture_restore(mode);
}

/*
 * Every thread's finished pairs, without waiting.  trylock: skip a thread
 * that is resolving its own right now (after a host sync, where blocking
 * would only add latency).
 */
static void resolve_all(struct tbuf *self, int trylock)
{
	int mode = capture_relax();

	pthread_mutex_lock(&trace_reg_mu);
	for (struct tbuf *b = trace_bufs; b; b = b->next) {
		if (!b->pend)
			continue;
		if (trylock) {
			if (pthread_mutex_trylock(&b->pend_mu))
				continue;
		} else {
			pthread_mutex_lock(&b->pend_mu);
		}
		resolve_buf_locked(self, b, 0);
		pthread_mutex_unlock(&b->pend_mu);
	}
	pthread_mutex_unlock(&trace_reg_mu);
	capture_restore(mode);
}

/*
 * Destroy every timing object we hold.  The contexts that live on set
 * themselves up again on their next timed launch.  Events cached by other
 * threads are left for the driver to reclaim with their context.  Called
 * with every pend_mu held, so no resolver is looking at a reference.
 */
static void ctx_kill_all(struct tbuf *self)
{
	pthread_mutex_lock(&trace_ctx_mu);
	for (struct ctxstate *cs = atomic_load(&trace_ctxs); cs;
	     cs = cs->next) {
		struct tref *ref, *prev;

		if (atomic_load(&cs->dead))
			continue;
		pthread_mutex_lock(&cs->mu);
		atomic_store(&cs->dead, 1);
		for (unsigned i = 0; i < cs->npool; i++)
			REAL(cuEventDestroy_v2)(cs->pool[i]);
		cs->npool = 0;
		if (self && self->cache_cs == cs) {
			for (unsigned i = 0; i < self->ncache; i++)
				REAL(cuEventDestroy_v2)(self->cache[i]);
			self->ncache = 0;
		}
		for (ref = atomic_load(&cs->ref); ref; ref = prev) {
			prev = ref->prev;
			REAL(cuEventDestroy_v2)(ref->ev);
			free(ref);
		}
		atomic_store(&cs->ref, NULL);
		pthread_mutex_unlock(&cs->mu);
	}
	pthread_mutex_unlock(&trace_ctx_mu);
}

/*
 * A context may be about to go away, and we are not told which: wait for
 * every thread's pairs, then destroy all timing objects before it does.
 */
static void resolve_wait_and_kill(struct tbuf *self)
{
	struct tbuf *b;
	int mode = capture_relax();

	pthread_mutex_lock(&trace_reg_mu);
	for (b = trace_bufs; b; b = b->next) {
		if (!b->pend)
			continue;
		pthread_mutex_lock(&b->pend_mu);
		resolve_buf_locked(self, b, UINT_MAX);
	}
	ctx_kill_all(self);
	for (b = trace_bufs; b; b = b->next)
		if (b->pend)
			pthread_mutex_unlock(&b->pend_mu);
	pthread_mutex_unlock(&trace_reg_mu);
	capture_restore(mode);
}

/* --- the API --------------------------------------------------------------- */

static void read_cmdline(void)
{
	int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
	ssize_t n = 0;

	trace_cmdline[0] = '\0';
	if (fd >= 0) {
		n = read(fd, trace_cmdline, sizeof(trace_cmdline) - 1);
		close(fd);
	}
	if (n <= 0)
		return;
	trace_cmdline[n] = '\0';
	/* Arguments are NUL-separated; show them space-separated. */
	while (n > 0 && trace_cmdline[n - 1] == '\0')
		n--;
	for (ssize_t i = 0; i < n; i++)
		if (trace_cmdline[i] == '\0')
			trace_cmdline[i] = ' ';
}

/* Per-process identity; at init and again in a forked child. */
static void process_setup(void)
{
	trace_pid = getpid();
	trace_t0 = trace_now();
	trace_wall0 = wall_now();
	snprintf(trace_path, sizeof(trace_path), "%s/kmux-trace.%d.jsonl",
		 trace_dir, (int)trace_pid);
}

int trace_init(const char *dir, int timing)
{
	size_t len;
	int err;

	if (!dir || !*dir)
		return 0;
	if (trace_dir[0])
		return 0;	/* already on */
	len = strlen(dir);
	if (len >= sizeof(trace_dir)) {
		log_warn("trace: KMUX_TRACE_DIR is too long; tracing off");
		return -ENAMETOOLONG;
	}
	/* The file is created lazily; check now that it could be. */
	if (access(dir, W_OK | X_OK)) {
		err = errno;
		log_warn("trace: cannot write to %s: %s; tracing off", dir,
			 strerror(err));
		return -err;
	}
	memcpy(trace_dir, dir, len + 1);
	err = pthread_key_create(&trace_key, tbuf_thread_exit);
	if (err) {
		log_warn("trace: pthread_key_create: %s; tracing off",
			 strerror(err));
		return -err;
	}
	read_cmdline();
	process_setup();
	trace_timing = timing ? 1 : 0;
	trace_enabled = 1;
	atexit(trace_finish);
	return 0;
}

void *trace_launch_begin(CUstream s)
{
	struct tbuf *b;
	struct ctxstate *cs;
	struct inflight *in;
	struct tref *ref;
	CUcontext ctx = NULL;
	CUevent start, end;

	if (!trace_timing || !tracing())
		return NULL;
	b = tbuf_get();
	if (!b || b->ninflight == TRACE_INFLIGHT)
		return NULL;
	if (stream_capturing(s))
		return &trace_captured;
	if (REAL(cuCtxGetCurrent)(&ctx) != CUDA_SUCCESS || !ctx)
		return NULL;
	if (b->cache_cs && b->cache_cs->ctx == ctx &&
	    !atomic_load_explicit(&b->cache_cs->dead, memory_order_relaxed))
		cs = b->cache_cs;
	else
		cs = ctx_get(ctx);
	if (!cs)
		return NULL;
	ref = atomic_load_explicit(&cs->ref, memory_order_acquire);
	if (!ref && !(ref = ref_establish(cs, s)))
		return NULL;
	start = ev_get(b, cs);
	end = start ? ev_get(b, cs) : NULL;
	if (!end || REAL(cuEventRecord)(start, s) != CUDA_SUCCESS) {
		ev_put(b, cs, start);
		ev_put(b, cs, end);
		return NULL;
	}
	in = &b->inflight[b->ninflight++];
	*in = (struct inflight){ cs, ref, start, end };
	return in;
}

/* Queue a recorded pair; a full ring is drained by waiting on half of it. */
static uint64_t pending_push(struct tbuf *b, struct inflight *in)
{
	uint32_t head = atomic_load_explicit(&b->pend_head,
					     memory_order_relaxed);
	struct pending *p;

	if (head - atomic_load_explicit(&b->pend_tail, memory_order_acquire)
	    >= TRACE_PEND_MAX) {
		resolve_buf(b, b, TRACE_PEND_MAX / 2);
		if (head - atomic_load(&b->pend_tail) >= TRACE_PEND_MAX)
			return 0;
	}
	p = &b->pend[head % TRACE_PEND_MAX];
	p->cs = in->cs;
	p->ref = in->ref;
	p->start = in->start;
	p->end = in->end;
	p->seq = atomic_fetch_add_explicit(&trace_seq, 1,
					   memory_order_relaxed) + 1;
	atomic_store_explicit(&b->pend_head, head + 1, memory_order_release);
	return p->seq;
}

void trace_launch_end(void *token, CUstream s, const struct trace_launch *l)
{
	struct tbuf *b;
	struct rec *r;
	uint64_t seq = 0;
	uint32_t nids, k, nmore;
	int captured = 0;

	if (!tracing() || !(b = tbuf_get()))
		return;
	if (token == &trace_captured) {
		captured = 1;
	} else if (token) {
		struct inflight *in = token;

		b->ninflight--;
		if (l->result == CUDA_SUCCESS &&
		    REAL(cuEventRecord)(in->end, s) == CUDA_SUCCESS)
			seq = pending_push(b, in);
		if (!seq) {
			ev_put(b, in->cs, in->start);
			ev_put(b, in->cs, in->end);
		}
	}
	if (trace_timing && !seq && !captured && l->result == CUDA_SUCCESS)
		atomic_fetch_add(&trace_timing_dropped, 1);

	nids = l->nacc > 0 ? (uint32_t)l->nacc : 0;
	nmore = nids > REC_LAUNCH_IDS
		? (nids - REC_LAUNCH_IDS + REC_MORE_IDS - 1) / REC_MORE_IDS
		: 0;
	if (nmore > 255) {
		nmore = 255;
		nids = REC_LAUNCH_IDS + 255 * REC_MORE_IDS;
	}
	r = rec_reserve(b, 1 + nmore);
	r->type = REC_LAUNCH;
	r->sub = (uint8_t)l->api;
	r->flag = (uint8_t)captured;
	r->nmore = (uint8_t)nmore;
	r->result = (int32_t)l->result;
	r->t = l->t_begin;
	r->d = l->t_end >= l->t_begin ? l->t_end - l->t_begin : 0;
	r->launch.name = l->ki ? l->ki->name : NULL;
	r->launch.stream = l->stream;
	r->launch.seq = seq;
	for (int i = 0; i < 3; i++) {
		r->launch.grid[i] = l->grid[i];
		r->launch.block[i] = l->block[i];
	}
	r->launch.shmem = l->shmem;
	r->launch.kflags = l->kflags;
	r->launch.nids = nids;
	for (k = 0; k < nids && k < REC_LAUNCH_IDS; k++)
		r->launch.ids[k] = l->acc[k].alloc_id;
	for (uint32_t m = 0; m < nmore; m++) {
		struct rec *c = r + 1 + m;

		c->type = REC_MORE;
		c->more.n = 0;
		while (k < nids && c->more.n < REC_MORE_IDS)
			c->more.ids[c->more.n++] = l->acc[k++].alloc_id;
	}
	rec_commit(b, 1 + nmore);
	after_event(b, l->t_end);
}

void trace_copy(const struct trace_copy *c)
{
	struct tbuf *b;
	struct rec *r;

	if (!tracing() || !(b = tbuf_get()))
		return;
	r = rec_reserve(b, 1);
	r->type = REC_COPY;
	r->sub = (uint8_t)c->kind;
	r->flag = c->async ? 1 : 0;
	r->result = (int32_t)c->result;
	r->t = c->t_begin;
	r->d = c->t_end >= c->t_begin ? c->t_end - c->t_begin : 0;
	r->copy.dst = c->dst;
	r->copy.src = c->src;
	r->copy.bytes = c->bytes;
	r->copy.stream = c->stream;
	rec_commit(b, 1);
	after_event(b, c->t_end);
}

void trace_sync(enum trace_sync_kind kind, uint64_t obj, uint64_t t_begin,
		uint64_t t_end, CUresult result)
{
	struct tbuf *b;
	struct rec *r;

	if (!tracing() || !(b = tbuf_get()))
		return;
	r = rec_reserve(b, 1);
	r->type = REC_SYNC;
	r->sub = (uint8_t)kind;
	r->result = (int32_t)result;
	r->t = t_begin;
	r->d = t_end >= t_begin ? t_end - t_begin : 0;
	r->sync.obj = obj;
	rec_commit(b, 1);
	after_event(b, t_end);
}

void trace_alloc(const struct alloc *a, int is_free, uint64_t t)
{
	struct tbuf *b;
	struct rec *r;

	if (!tracing() || !(b = tbuf_get()))
		return;
	r = rec_reserve(b, 1);
	r->type = is_free ? REC_FREE : REC_ALLOC;
	r->sub = (uint8_t)a->kind;
	r->t = t;
	r->d = 0;
	r->alloc.id = a->id;
	r->alloc.base = a->base;
	r->alloc.size = a->size;
	r->alloc.dev = a->device;
	rec_commit(b, 1);
	after_event(b, t);
}

void trace_mm(uint64_t resident, uint64_t evicted, uint64_t reserved,
	      uint64_t t)
{
	struct tbuf *b;
	struct rec *r;

	if (!tracing() || !(b = tbuf_get()))
		return;
	r = rec_reserve(b, 1);
	r->type = REC_MM;
	r->t = t;
	r->d = 0;
	r->mm.resident = resident;
	r->mm.evicted = evicted;
	r->mm.reserved = reserved;
	rec_commit(b, 1);
	after_event(b, t);
}

/*
 * wait == 0 (after a host synchronization): resolve what has finished, in
 * every thread.  wait != 0 (a context is about to be destroyed, reset or
 * released): wait for every pair, then drop all timing objects, which may
 * belong to the dying context.
 */
void trace_resolve_timing(int wait)
{
	struct tbuf *self;

	if (!trace_timing || !tracing())
		return;
	self = tbuf_get();
	if (!wait)
		resolve_all(self, 1);
	else
		resolve_wait_and_kill(self);
}

void trace_flush_all(void)
{
	struct tbuf *self;

	if (!tracing())
		return;
	self = tls_buf;
	if (self && self->gen == atomic_load(&trace_gen))
		tbuf_flush(self);
	pthread_mutex_lock(&trace_reg_mu);
	for (struct tbuf *b = trace_bufs; b; b = b->next)
		if (b != self)
			tbuf_flush_foreign(b, 0);
	pthread_mutex_unlock(&trace_reg_mu);
}

/*
 * Process exit (atexit, or the library destructor, whichever comes first):
 * resolve the timings that can still be, flush everything, and close the
 * file with an "exit" line.  A process that recorded nothing leaves no file.
 */
static void trace_finish(void)
{
	char line[384];
	uint64_t dropped;
	int n, opened;

	if (atomic_exchange(&trace_finished, 1) || !tracing())
		return;
	if (trace_timing) {
		/* Waiting here could hang an exiting process: take what's done. */
		resolve_all(tbuf_get(), 0);
		pthread_mutex_lock(&trace_reg_mu);
		for (struct tbuf *b = trace_bufs; b; b = b->next) {
			if (!b->pend)
				continue;
			pthread_mutex_lock(&b->pend_mu);
			atomic_fetch_add(&trace_timing_dropped,
					 atomic_load(&b->pend_head) -
					 atomic_load(&b->pend_tail));
			atomic_store(&b->pend_tail, atomic_load(&b->pend_head));
			pthread_mutex_unlock(&b->pend_mu);
		}
		pthread_mutex_unlock(&trace_reg_mu);
	}
	trace_flush_all();
	pthread_mutex_lock(&trace_file_mu);
	opened = trace_header_done;
	pthread_mutex_unlock(&trace_file_mu);
	if (!opened || !tracing())
		return;
	dropped = atomic_load(&trace_timing_dropped);
	n = snprintf(line, sizeof(line),
		     "{\"type\":\"exit\",\"t\":%lld,\"timing_dropped\":%llu",
		     (long long)rel(trace_now()), (unsigned long long)dropped);
	if (trace_exit_fields)
		n += trace_exit_fields(line + n, sizeof(line) - (size_t)n - 3);
	n += snprintf(line + n, sizeof(line) - (size_t)n, "}\n");
	file_write(line, (size_t)n);
}

__attribute__((destructor)) static void trace_fini(void)
{
	if (trace_dir[0])
		trace_finish();
}

/*
 * In the child of fork(): only the calling thread survives, and the parent
 * still owns everything buffered.  Forget it all (without touching CUDA
 * objects, which are the parent's); the child's file is created on its
 * first flush.
 */
void trace_atfork_child(void)
{
	struct tbuf *b, *next;
	struct stat st;

	if (!trace_dir[0])
		return;
	pthread_mutex_init(&trace_file_mu, NULL);
	pthread_mutex_init(&trace_reg_mu, NULL);
	pthread_mutex_init(&trace_ctx_mu, NULL);
	/* The parent's descriptor, unless the program took its number. */
	if (trace_fd >= 0 && fstat(trace_fd, &st) == 0 &&
	    st.st_dev == trace_dev && st.st_ino == trace_ino)
		close(trace_fd);
	trace_fd = -1;
	trace_header_done = 0;
	for (b = trace_bufs; b; b = next) {
		next = b->next;
		if (b != tls_buf)
			tbuf_free(b);	/* its thread does not exist here */
	}
	trace_bufs = NULL;
	/* The parent's contexts are unusable here: keep, never touch. */
	trace_ctxs_parent = atomic_load(&trace_ctxs);
	atomic_store(&trace_ctxs, NULL);
	atomic_store(&trace_timing_dropped, 0);
	atomic_store(&trace_finished, 0);
	atomic_fetch_add(&trace_gen, 1);
	process_setup();
}
