/*
 * streams.c - the stream scheduler's driver side: per-context pools of
 * streams, carrying out sched.h's decisions, host synchronizations that
 * touch only streams with pending work, and the fallbacks that keep every
 * order when something cannot be scheduled (see streams.h for the API,
 * docs/design-streams.md for the rules).
 *
 * Contexts.  One struct streams_ctx per CUcontext the program submits
 * default-stream work in, kept in an append-only list (lock-free lookups;
 * a thread caches its last one).  Its pool is set up on first use, in that
 * context: sched_new(N), N streams created CU_STREAM_NON_BLOCKING (the pool
 * must not synchronize with the legacy stream behind kmux's back), SM count
 * for the launch weight.  Event slots and the two bridge events are created
 * the first time they are named.  A context destroyed or reset goes back to
 * "new" (the handle may come back as another context).  The program's
 * blocking streams are bridged to the pool ("blocking streams" below); a
 * context with more of them than kmux tracks is drained and switched off.
 *
 * Locking.  c->mu is held from sched_submit() through every driver call of
 * its decision (sched.h requires it) and around all scheduler state.  Host
 * waits for the program's synchronizations release it; c->gen tells the
 * waiter whether the pool it waited for is still the same one.  Two or
 * three contexts (peer copies) are locked in address order.
 *
 * The bridge.  Operations kmux must run as the program asked, on its
 * default stream (2D/3D and peer copies, anything while a stream capture is
 * in progress in the context), are ordered with the pool by events: a
 * SCHED_JOIN whose "operation" records bridge_in at the end of all pool
 * work, the default stream waits for it, the operation, bridge_out recorded
 * on the default stream, and a SCHED_BARRIER whose operation is a wait for
 * bridge_out.  No host synchronization.
 *
 * Failures.  A record or wait that fails is replaced by synchronizing the
 * stream it stood for (sched_event_lost() + sched_complete()); a bridge step
 * that fails by draining the pool or synchronizing the default stream.
 */
#include <errno.h>
#include <pthread.h>
#include <regex.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "barrier-re.h"
#include "kdur.h"
#include "log.h"
#include "preload.h"
#include "mm.h"
#include "pace.h"
#include "ptx-table.h"
#include "quota.h"
#include "ptrtab.h"
#include "readahead.h"
#include "stream-alloc.h"
#include "streams.h"
#include "verify.h"

#define STREAMS_SLOTS (SCHED_MAX_STREAMS * SCHED_EVENTS_PER_STREAM)
/* Launches being timed at once (learned durations, kdur.h). */
#define STREAMS_KD_PAIRS 16

/* A timed launch: its kind and the two events around it. */
struct sctx_kd_pair {
	CUevent start, end;
	uint64_t key;		/* 0: free */
};
#define STREAMS_PRIMARY_MAX 64
/* Contexts one operation may involve: current, peer dst, peer src. */
#define STREAMS_BRIDGE_MAX 3

enum sctx_state {
	SCTX_NEW = 0,	/* no pool yet: nothing of this context is pending */
	SCTX_ON,	/* pool set up, scheduling */
	SCTX_OFF,	/* drained; everything passes through from now on */
};

/* Blocking streams per context kmux bridges; beyond that it stops. */
#define STREAMS_BLOCKING_MAX 16
/* ...and in the process (the lock-free registry the wrappers search). */
#define STREAMS_BLOCKING_REG 64

struct sctx_blocking {
	CUstream s;
	CUevent done;		/* recorded on s when the pool must follow it */
	unsigned joined;	/* c->issued when s last waited for the pool */
	int dirty;		/* work on s the pool has not waited for */
};

struct sctx_deferred {
	CUdeviceptr base;
	uint64_t size;
	uint64_t charged;	/* quota bytes given back at the real free */
};

struct streams_ctx {
	CUcontext ctx;			/* the key, never changes */
	struct streams_ctx *next;	/* the list; set before publication */
	pthread_mutex_t mu;		/* everything below */
	enum sctx_state state;
	unsigned gen;			/* bumped when the pool goes away */
	int capturing;			/* stream captures in progress */
	int paused;			/* kmux_streams_pause(): pass through */
	int passthru;			/* keeping up: run as submitted */
	int pt_busy;			/* ... deep checks in a row since */
	int pt_have;			/* ... pt_ev recorded since */
	unsigned pt_every;		/* ... operations between checks */
	CUevent pt_ev;			/* ... the depth mark */
	int sms;			/* for the launch weight, >= 1 */
	struct pace pace;		/* spread or in line, measured */
	/*
	 * Learned durations (kdur.h): the estimates, the launches being
	 * timed, and the host-wait count when they were last looked at.
	 */
	struct kdur *kd;
	struct sctx_kd_pair kd_pair[STREAMS_KD_PAIRS];
	int kd_inflight;
	uint64_t kd_hostwaits;
	uint64_t kd_kinds, kd_timed;	/* of estimates torn down */
	struct sched *s;
	CUstream pool[SCHED_MAX_STREAMS];
	CUevent ev[STREAMS_SLOTS];
	CUevent bridge_in, bridge_out;
	/*
	 * The program's blocking streams in this context, bridged to the
	 * pool (see "Blocking streams" below).  issued counts decisions, so
	 * a stream knows whether pool work came since it last joined.
	 */
	struct sctx_blocking blk[STREAMS_BLOCKING_MAX];
	int nblk, ndirty;
	unsigned issued;
	uint64_t blk_joins, blk_barriers;
	uint64_t bridged, failures;
	struct sched_stats retired;	/* of pools torn down */
	int had_pool;
	/*
	 * Times it was switched off.  A context destroyed later comes back
	 * as new (sctx_reset()), but it still ran unscheduled: the exit line
	 * and `kmux verify` (verify.c) count it.
	 */
	int offs;
	/*
	 * Keeping up (sctx_probe()): decisions since the last check, the
	 * host time and host-wait count then, the score, and the counts for
	 * the exit line.
	 */
	unsigned probe_ops;
	uint64_t probe_ns;
	uint64_t hostwaits, probe_hostwaits;
	int probe_score;
	uint64_t probe_checks, probe_drained;
	/*
	 * Deferred frees (streams_defer_free()): allocations the program
	 * freed, still allocated until the pool is idle or memory is short.
	 */
	struct sctx_deferred *dfr;
	int ndfr, dfr_alloc;
	uint64_t dfr_bytes, dfr_cap;
	uint64_t dfr_count, dfr_idle, dfr_short;
	uint64_t pauses, paused_ops;
	uint64_t pt_ops, pt_stretches;	/* passed through, keeping up */
	uint64_t pt_unread;		/* ... launches left unread */
	struct ra_table ra;		/* reading ahead */
	CUstream ra_stream;		/* ... where the copies go */
	int ra_due;			/* ... slots may be due */
};

int kmux_streams;
/*
 * kmux_streams_pause(): what a context created from now on starts with;
 * each context has its own flag (c->paused), changed under its lock once
 * it is drained.  streams_pause_mu makes callers take turns.
 */
static atomic_int streams_paused;
static pthread_mutex_t streams_pause_mu = PTHREAD_MUTEX_INITIALIZER;
/* KMUX_KEEP_UP=0 turns the keeping-up probe off (sctx_probe()). */
static int streams_keep_up = 1;
/* KMUX_PASS_THROUGH=0: keeping up places work, never passes it through. */
static int streams_passthru_on = 1;
/*
 * Decisions slower than this on average say nothing about the launch rate
 * (sctx_probe(); KMUX_DEBUG_KEEP_UP_US: tests on the simulated driver,
 * whose launches and kernels take far longer than a GPU's).
 */
static uint64_t streams_probe_op_ns = 200000;
/* KMUX_DEFER_FREE=0 turns deferred frees off (streams_defer_free()). */
static int streams_defer_on = 1;
/*
 * Check whether spreading pays (pace.h); KMUX_PACE=0 turns it off.  On
 * since run 17 (bench/results/streams.md): it took back googlenet's 4%
 * at batch 256 and cost the suite's apps at most 3% once each kind's
 * trial was paid.
 */
static int streams_pace_on = 1;
/*
 * KMUX_DEBUG_PACE: "inline" runs every epoch in line, "alternate" flips
 * at every host wait: tests exercise both placements on any program;
 * "spread" runs every epoch spread with the bookkeeping on, to tell what
 * the bookkeeping costs from what a trial does (bench/gpu/pace-long.sh).
 */
static int streams_pace_force;
/*
 * Learn kernel durations for the weights (kdur.h); KMUX_DURATIONS=1 turns
 * it on, with SCHED_KEEP_CHAIN.  Off by default: on the H200 it made
 * reductions and image_pipeline 6-9% faster, and four apps up to 2% slower
 * (bench/results/streams.md, run 20).
 */
static int streams_kd_on;
/* KMUX_DEBUG_DURATION_UNIT_US: the weight unit, for measurements. */
static uint64_t streams_kd_unit_ns;
/* KMUX_LEVEL=1: SCHED_LEVEL (sched.h). */
static unsigned streams_sched_flags;
enum {
	PACE_FORCE_NONE, PACE_FORCE_INLINE, PACE_FORCE_ALTERNATE,
	PACE_FORCE_SPREAD
};
/* KMUX_READAHEAD=0 turns reading ahead off (streams_host_read()). */
static int streams_ra_on = 1;
/* KMUX_DEBUG_READAHEAD=unordered (streams_readahead_init()). */
static int streams_ra_unordered;
/* Contexts scheduling now: a read-ahead is served only while there is one
 * (another context's kernels may write this one's memory through peer
 * access, which its scheduler does not tell this one). */
static atomic_int streams_nsched;

static regex_t streams_re;
static int streams_have_re;

static _Atomic(struct streams_ctx *) streams_list;
static pthread_mutex_t streams_list_mu = PTHREAD_MUTEX_INITIALIZER;
static __thread struct streams_ctx *tls_sctx;
static _Atomic(CUcontext) streams_primary[STREAMS_PRIMARY_MAX];
/* Blocking streams being bridged, for streams_run_user()'s lookup. */
atomic_int streams_nblocking;
static _Atomic(CUstream) streams_blk_stream[STREAMS_BLOCKING_REG];
static _Atomic(struct streams_ctx *) streams_blk_ctx[STREAMS_BLOCKING_REG];
/* Placeholder ids live far above any allocation id (which count from 1). */
static atomic_uint_fast64_t streams_next_placeholder = 1ull << 62;

/* Test knob KMUX_DEBUG_STREAMS_FAIL (streams_debug_fail()). */
static unsigned streams_fail_every;
static atomic_uint streams_fail_count;

/* 1 when the next driver call of the pool should be made to fail. */
static int streams_inject(void)
{
	if (likely(!streams_fail_every))
		return 0;
	return atomic_fetch_add(&streams_fail_count, 1) % streams_fail_every ==
	       streams_fail_every - 1;
}

/* --- configuration ------------------------------------------------------ */

static void streams_report(void);
static int streams_trace_fields(char *buf, size_t len);

int streams_init(const char *value, const char *max_connections,
		 const char *barrier_regex)
{
	const char *why = NULL;
	int n, clamped, err;
	char msg[160];

	if (!value || !*value)
		return 0;
	/*
	 * A value that turns scheduling off is printed at the default level
	 * (errors), unlike other messages of the preload: the user asked for
	 * scheduling and would otherwise not learn that the program runs
	 * without it.  The program itself still runs (unscheduled).
	 */
	err = streams_parse_count(value, max_connections, &n, &clamped, &why);
	if (err) {
		log_error("KMUX_STREAMS=%s: %s; scheduling off", value, why);
		return err;
	}
	if (clamped)
		log_info("KMUX_STREAMS=%s: %d streams, the bound set by %s",
			 value, n, max_connections && *max_connections ?
			 "CUDA_DEVICE_MAX_CONNECTIONS" :
			 "the default 8 hardware queues "
			 "(CUDA_DEVICE_MAX_CONNECTIONS raises it)");
	if (barrier_regex && *barrier_regex) {
		err = regcomp(&streams_re, barrier_regex, BARRIER_RE_FLAGS);
		if (err) {
			/* Running those kernels unordered would be wrong. */
			regerror(err, &streams_re, msg, sizeof(msg));
			log_error("KMUX_BARRIER_KERNELS=%s: %s; scheduling off",
				  barrier_regex, msg);
			return -EINVAL;
		}
		streams_have_re = 1;
	}
	kmux_streams = n;
	trace_exit_fields = streams_trace_fields;
	atexit(streams_report);
	return 0;
}

void streams_keep_up_init(const char *value, const char *debug_us)
{
	long us;

	if (debug_us && (us = atol(debug_us)) > 0)
		streams_probe_op_ns = (uint64_t)us * 1000;
	streams_keep_up = kmux_log_switch("KMUX_KEEP_UP", value, "the probe");
}

void streams_passthru_init(const char *value)
{
	streams_passthru_on = kmux_log_switch("KMUX_PASS_THROUGH", value,
					      "passing through");
}

void streams_pace_init(const char *value, const char *debug)
{
	streams_pace_on = kmux_log_switch("KMUX_PACE", value,
					  "checking that spreading pays");
	if (debug && !strcmp(debug, "inline"))
		streams_pace_force = PACE_FORCE_INLINE;
	else if (debug && !strcmp(debug, "alternate"))
		streams_pace_force = PACE_FORCE_ALTERNATE;
	else if (debug && !strcmp(debug, "spread"))
		streams_pace_force = PACE_FORCE_SPREAD;
}

void streams_durations_init(const char *value, const char *debug_unit_us)
{
	streams_kd_on = kmux_log_opt_in("KMUX_DURATIONS", value,
					"learning kernel durations");
	int us = debug_unit_us ? atoi(debug_unit_us) : 0;

	if (us > 0)
		streams_kd_unit_ns = (uint64_t)us * 1000;
	/*
	 * With measured weights a chain split at a tie cost mha 3%; kept
	 * together it did not (bench/results/streams.md, run 20).  Waves
	 * weights keep the lower-finish tie-break, measured better on
	 * image_pipeline and phase_buffers.
	 */
	if (streams_kd_on)
		streams_sched_flags |= SCHED_KEEP_CHAIN;
}

void streams_level_init(const char *value)
{
	if (kmux_log_opt_in("KMUX_LEVEL", value,
			    "levelling the streams at full synchronizations"))
		streams_sched_flags |= SCHED_LEVEL;
}

void streams_defer_init(const char *value)
{
	streams_defer_on = kmux_log_switch("KMUX_DEFER_FREE", value,
					   "deferred frees");
}

void streams_readahead_init(const char *value, const char *debug)
{
	streams_ra_unordered = debug && !strcmp(debug, "unordered");
	if (!value || !strcmp(value, "1"))
		return;
	if (!strcmp(value, "0"))
		streams_ra_on = 0;
	else
		log_warn("KMUX_READAHEAD=%s: not 0 or 1; reading ahead stays on",
			 value);
}

void streams_debug_fail(const char *every)
{
	long n;

	if (!every || !*every)
		return;
	n = strtol(every, NULL, 10);
	if (n > 0 && n < 1000000)
		streams_fail_every = (unsigned)n;
}

int streams_barrier_kernel(const struct kernel_info *ki)
{
	/* The class is the one mutable field of an entry (kparams.h). */
	struct kernel_info *k = (struct kernel_info *)ki;
	int c;

	if (!streams_have_re || !ki)
		return 0;
	c = atomic_load_explicit(&k->sched_class, memory_order_relaxed);
	if (!c) {
		c = regexec(&streams_re, ki->name, 0, NULL, 0) == 0
			? KPARAMS_CLASS_BARRIER : KPARAMS_CLASS_PLAIN;
		atomic_store_explicit(&k->sched_class, c,
				      memory_order_relaxed);
	}
	return c == KPARAMS_CLASS_BARRIER;
}

/* --- contexts ----------------------------------------------------------- */

static struct streams_ctx *sctx_find(CUcontext ctx)
{
	struct streams_ctx *c;

	for (c = atomic_load_explicit(&streams_list, memory_order_acquire); c;
	     c = c->next)
		if (c->ctx == ctx)
			return c;
	return NULL;
}

/* fn(c, arg) for every context, under its lock. */
static void sctx_each(void (*fn)(struct streams_ctx *c, uint64_t arg),
		      uint64_t arg)
{
	struct streams_ctx *c;

	for (c = atomic_load_explicit(&streams_list, memory_order_acquire); c;
	     c = c->next) {
		pthread_mutex_lock(&c->mu);
		fn(c, arg);
		pthread_mutex_unlock(&c->mu);
	}
}

/* The state of ctx, created when missing.  NULL only on out of memory. */
static struct streams_ctx *sctx_get(CUcontext ctx)
{
	struct streams_ctx *c = sctx_find(ctx);

	if (c)
		return c;
	pthread_mutex_lock(&streams_list_mu);
	c = sctx_find(ctx);
	if (!c) {
		c = calloc(1, sizeof(*c));
		if (c) {
			c->ctx = ctx;
			c->sms = 1;
			c->paused = atomic_load(&streams_paused);
			pthread_mutex_init(&c->mu, NULL);
			c->next = atomic_load_explicit(&streams_list,
						       memory_order_relaxed);
			atomic_store_explicit(&streams_list, c,
					      memory_order_release);
		}
	}
	pthread_mutex_unlock(&streams_list_mu);
	return c;
}

static CUcontext current_ctx(void)
{
	CUcontext ctx = NULL;

	if (!REAL(cuCtxGetCurrent) ||
	    REAL(cuCtxGetCurrent)(&ctx) != CUDA_SUCCESS)
		return NULL;
	return ctx;
}

static struct streams_ctx *sctx_current(void)
{
	struct streams_ctx *c = tls_sctx;
	CUcontext ctx = current_ctx();

	if (!ctx)
		return NULL;
	if (c && c->ctx == ctx)
		return c;
	c = sctx_get(ctx);
	tls_sctx = c;
	return c;
}

/*
 * Contexts passing through now: while none does (most programs, always),
 * streams_passing_through() answers without asking the driver for the
 * current context, which every launch would pay.
 */
static int sctx_passing;

/* Lock held.  Start or end passing through, keeping sctx_passing. */
static void sctx_set_passthru(struct streams_ctx *c, int on)
{
	if (c->passthru == on)
		return;
	__atomic_store_n(&c->passthru, on, __ATOMIC_RELAXED);
	__atomic_add_fetch(&sctx_passing, on ? 1 : -1, __ATOMIC_RELAXED);
}

/* The current context when it passes through (no lock: a hint), or NULL. */
static struct streams_ctx *sctx_passing_now(void)
{
	struct streams_ctx *c;

	if (!__atomic_load_n(&sctx_passing, __ATOMIC_RELAXED))
		return NULL;
	c = sctx_current();
	return c && __atomic_load_n(&c->passthru, __ATOMIC_RELAXED) ? c : NULL;
}

int streams_passing_through(void)
{
	return sctx_passing_now() != NULL;
}

static void stats_add(struct sched_stats *a, const struct sched_stats *b);
static uint64_t probe_clock_ns(void);
static void sctx_pace_end(struct streams_ctx *c);
static void sctx_ra_teardown(struct streams_ctx *c);
static void sctx_kd_teardown(struct streams_ctx *c);
static void sctx_ra_drop(struct streams_ctx *c, uint64_t alloc_id);
static void sctx_ra_before(struct streams_ctx *c, const struct streams_req *rq,
			   int stream);
static void sctx_ra_after(struct streams_ctx *c, const struct streams_req *rq,
			  const struct sched_decision *d);

/* Lock held.  Destroy the pool (drained, or its context is going away). */
static void sctx_teardown(struct streams_ctx *c)
{
	struct sched_stats st;

	if (c->state == SCTX_ON)
		atomic_fetch_sub(&streams_nsched, 1);
	if (c->s) {
		sched_get_stats(c->s, &st);
		st.allocs = 0;
		stats_add(&c->retired, &st);
	}
	sctx_ra_teardown(c);
	sctx_kd_teardown(c);
	for (int i = 0; i < STREAMS_SLOTS; i++) {
		if (c->ev[i])
			REAL(cuEventDestroy_v2)(c->ev[i]);
		c->ev[i] = NULL;
	}
	if (c->bridge_in)
		REAL(cuEventDestroy_v2)(c->bridge_in);
	if (c->bridge_out)
		REAL(cuEventDestroy_v2)(c->bridge_out);
	if (c->pt_ev)
		REAL(cuEventDestroy_v2)(c->pt_ev);
	c->bridge_in = c->bridge_out = c->pt_ev = NULL;
	for (int i = 0; i < SCHED_MAX_STREAMS; i++) {
		if (c->pool[i])
			REAL(cuStreamDestroy_v2)(c->pool[i]);
		c->pool[i] = NULL;
	}
	sched_free(c->s);
	c->s = NULL;
	c->gen++;
	c->probe_ops = 0;
	c->probe_ns = 0;
	c->probe_score = 0;
	sctx_set_passthru(c, 0);
	c->pt_have = 0;
}

/* Lock held, state NEW, c is the current context.  0 or -errno (then OFF). */
static int sctx_setup(struct streams_ctx *c)
{
	int n = kmux_streams, sms = 0, err;
	CUdevice dev;

	err = sched_new(n, streams_sched_flags, &c->s);
	if (err)
		goto err_off;
	/* Under the failure knob: few allocation states, many barriers. */
	if (streams_fail_every)
		sched_set_max_allocs(c->s, 4);
	for (int i = 0; i < n; i++) {
		if (streams_fail_every == 1 ||
		    REAL(cuStreamCreate)(&c->pool[i], CU_STREAM_NON_BLOCKING)
		    != CUDA_SUCCESS) {
			c->pool[i] = NULL;
			err = -ENOMEM;
			goto err_off;
		}
	}
	if (REAL(cuCtxGetDevice) && REAL(cuDeviceGetAttribute) &&
	    REAL(cuCtxGetDevice)(&dev) == CUDA_SUCCESS &&
	    REAL(cuDeviceGetAttribute)(&sms,
			CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev) ==
	    CUDA_SUCCESS && sms > 0)
		c->sms = sms;
	pace_init(&c->pace, probe_clock_ns());
	/* Without it kernels are weighed by their waves, as with it off. */
	if (streams_kd_on && (c->kd = malloc(sizeof(*c->kd))))
		kdur_init(c->kd, streams_kd_unit_ns);
	c->state = SCTX_ON;
	c->had_pool = 1;
	atomic_fetch_add(&streams_nsched, 1);
	log_debug("streams: context %p: %d streams", (void *)c->ctx, n);
	return 0;

err_off:
	log_warn("streams: cannot set up %d streams in context %p (%d); "
		 "its default-stream work runs unscheduled", n, (void *)c->ctx,
		 err);
	sctx_teardown(c);
	c->state = SCTX_OFF;
	c->offs++;
	return err;
}

/* Lock held: scheduling in c, its pool set up on first use. */
static int sctx_ready(struct streams_ctx *c)
{
	if (c->state == SCTX_NEW)
		sctx_setup(c);
	return c->state == SCTX_ON;
}

/* --- issuing decisions -------------------------------------------------- */

static CUevent sctx_event(struct streams_ctx *c, int slot)
{
	if (!c->ev[slot] && (streams_inject() ||
	    REAL(cuEventCreate)(&c->ev[slot], CU_EVENT_DISABLE_TIMING) !=
	    CUDA_SUCCESS))
		c->ev[slot] = NULL;
	return c->ev[slot];
}

static CUevent sctx_bridge_event(CUevent *ev)
{
	if (!*ev && (streams_inject() ||
	    REAL(cuEventCreate)(ev, CU_EVENT_DISABLE_TIMING) != CUDA_SUCCESS))
		*ev = NULL;
	return *ev;
}

/* The driver calls of a decision, through the failure knob. */
static CUresult sctx_record(CUevent ev, CUstream s)
{
	if (streams_inject())
		return CUDA_ERROR_UNKNOWN;
	return REAL(cuEventRecord)(ev, s);
}

static CUresult sctx_wait(CUstream s, CUevent ev)
{
	if (streams_inject())
		return CUDA_ERROR_UNKNOWN;
	return REAL(cuStreamWaitEvent)(s, ev, 0);
}

/*
 * --- learned durations (kdur.h) ------------------------------------------
 *
 * A launch kdur_launch() picks is issued between the two events of a free
 * timing pair (sctx_issue_timed()).  The pairs are looked at when the host
 * has waited since (sctx_kd_harvest(), before the next decision: what it
 * waited for is likely done, and a query costs well under a microsecond),
 * or when all are in flight.  Nothing waits for them: a pair not yet done
 * stays for the next look, one that failed is dropped.  Timing events are
 * the one kind kmux creates without CU_EVENT_DISABLE_TIMING.
 */

/* Lock held.  Pair kd is free again (done, failed, or timing nothing). */
static void sctx_kd_drop(struct streams_ctx *c, int kd)
{
	c->kd_pair[kd].key = 0;
	c->kd_inflight--;
}

/* Lock held.  Fold in each pair that is done; free it. */
static void sctx_kd_harvest(struct streams_ctx *c)
{
	c->kd_hostwaits = c->hostwaits;
	for (int i = 0; i < STREAMS_KD_PAIRS && c->kd_inflight; i++) {
		struct sctx_kd_pair *p = &c->kd_pair[i];
		float ms = 0;
		CUresult q;

		if (!p->key)
			continue;
		q = REAL(cuEventQuery)(p->end);
		if (q == CUDA_ERROR_NOT_READY)
			continue;
		if (q == CUDA_SUCCESS && REAL(cuEventElapsedTime_v2) &&
		    REAL(cuEventElapsedTime_v2)(&ms, p->start, p->end) ==
		    CUDA_SUCCESS && ms > 0)
			kdur_add(c->kd, p->key, (uint64_t)((double)ms * 1e6));
		sctx_kd_drop(c, i);
	}
}

/*
 * Lock held.  The timing pair for a launch of kind key that kdur_launch()
 * chose, or -1: none free (even after a look), or its events cannot be
 * created.
 */
static int sctx_kd_pick(struct streams_ctx *c, uint64_t key)
{
	struct sctx_kd_pair *p;
	int i;

	if (c->kd_inflight == STREAMS_KD_PAIRS)
		sctx_kd_harvest(c);
	for (i = 0; i < STREAMS_KD_PAIRS; i++)
		if (!c->kd_pair[i].key)
			break;
	if (i == STREAMS_KD_PAIRS)
		return -1;
	p = &c->kd_pair[i];
	if ((!p->start &&
	     REAL(cuEventCreate)(&p->start, CU_EVENT_DEFAULT) != CUDA_SUCCESS) ||
	    (!p->end &&
	     REAL(cuEventCreate)(&p->end, CU_EVENT_DEFAULT) != CUDA_SUCCESS))
		return -1;
	p->key = key;
	c->kd_inflight++;
	return i;
}

/* Lock held.  The timed launch was issued on t with result r. */
static void sctx_kd_end(struct streams_ctx *c, int kd, CUstream t,
			CUresult r)
{
	if (r != CUDA_SUCCESS ||
	    sctx_record(c->kd_pair[kd].end, t) != CUDA_SUCCESS)
		sctx_kd_drop(c, kd);
}

/* Lock held.  The pool goes: its pairs' events with it. */
static void sctx_kd_teardown(struct streams_ctx *c)
{
	for (int i = 0; i < STREAMS_KD_PAIRS; i++) {
		struct sctx_kd_pair *p = &c->kd_pair[i];

		if (p->start)
			REAL(cuEventDestroy_v2)(p->start);
		if (p->end)
			REAL(cuEventDestroy_v2)(p->end);
		*p = (struct sctx_kd_pair){ 0 };
	}
	c->kd_inflight = 0;
	if (c->kd) {
		c->kd_kinds += c->kd->kinds;
		c->kd_timed += c->kd->timed;
	}
	free(c->kd);
	c->kd = NULL;
}

/*
 * Lock held.  A record or wait of slot did not happen: the host makes the
 * work it stood for, (stream, seq), complete instead.
 */
static void sctx_lost(struct streams_ctx *c, int slot, int stream,
		      uint64_t seq)
{
	sched_event_lost(c->s, slot);
	REAL(cuStreamSynchronize)(c->pool[stream]);
	sched_complete(c->s, stream, seq);
	c->failures++;
}

/*
 * Lock held.  Carry out d as sched.h describes: lazy records, waits, the
 * operation on its pool stream, the record after it; with kd >= 0, the
 * operation between the two events of timing pair kd (after its waits, so
 * that what it waited for is not its time).  The operation's result is
 * returned; the records and waits happen whatever it is.
 */
static CUresult sctx_issue_timed(struct streams_ctx *c,
				 const struct sched_decision *d,
				 streams_issue_fn issue, void *arg, int kd)
{
	CUstream t = c->pool[d->stream];
	CUevent ev;
	CUresult r;

	c->issued++;
	for (int i = 0; i < d->nrecord; i++) {
		const struct sched_event_ref *e = &d->record[i];

		ev = sctx_event(c, e->event);
		if (!ev || sctx_record(ev, c->pool[e->stream]) != CUDA_SUCCESS)
			sctx_lost(c, e->event, e->stream, e->seq);
	}
	for (int i = 0; i < d->nwait; i++) {
		const struct sched_event_ref *w = &d->wait[i];

		/* No event: its record failed above and the host waited. */
		ev = c->ev[w->event];
		if (!ev || sctx_wait(t, ev) != CUDA_SUCCESS)
			sctx_lost(c, w->event, w->stream, w->seq);
	}
	/* Not timed: a stale end record of the pair would make a time. */
	if (kd >= 0 && sctx_record(c->kd_pair[kd].start, t) != CUDA_SUCCESS) {
		sctx_kd_drop(c, kd);
		kd = -1;
	}
	r = issue(arg, t);
	if (kd >= 0)
		sctx_kd_end(c, kd, t, r);
	if (d->record_after >= 0) {
		ev = sctx_event(c, d->record_after);
		if (!ev || sctx_record(ev, t) != CUDA_SUCCESS)
			sctx_lost(c, d->record_after, d->stream, d->seq);
	}
	return r;
}

static CUresult sctx_issue(struct streams_ctx *c,
			   const struct sched_decision *d,
			   streams_issue_fn issue, void *arg)
{
	return sctx_issue_timed(c, d, issue, arg, -1);
}

static uint32_t sctx_weight(const struct streams_ctx *c, uint64_t blocks)
{
	uint64_t w = (blocks + (uint64_t)c->sms - 1) / (uint64_t)c->sms;

	if (w < 1)
		return 1;
	return w > (1u << 20) ? 1u << 20 : (uint32_t)w;
}

/*
 * Keeping up.  A program that launches small kernels one at a time (a
 * PyTorch model at a small batch) is bound by its own launch rate: the GPU
 * finishes each operation before the next arrives, so spreading its work
 * buys no overlap, while every cross-stream wait and event record costs
 * the host a driver call or two (bench/results/streams.md).  Every
 * STREAMS_PROBE_EVERY decisions, before the next one, kmux asks the pool
 * streams with pending work whether they are done (cuStreamQuery, stopping
 * at the first busy one; a done stream is reported to the scheduler, which
 * then drops dependencies on it).  All done means the device was idle when
 * this operation arrived.  Such a check counts only when no host wait
 * happened since the previous one and the host issued those decisions
 * quickly (a host synchronization or a pause in the program drains the
 * GPU without saying anything about its launch rate).  A drained check
 * raises a score by one, a busy one lowers it by STREAMS_PROBE_BUSY; from
 * STREAMS_PROBE_ON the scheduler is told the GPU keeps up
 * (sched_set_kept_up(): it keeps work on one stream).  A launch-bound
 * program's occasional larger kernel costs one busy check; two in a row
 * turn keeping up off.  While
 * on, checks come every STREAMS_PROBE_EVERY_ON decisions (one query: the
 * work is on one stream), so that when the program turns to heavy kernels
 * at most that many of them are placed one behind the other.  Only
 * placement changes, never an order.
 */
/*
 * Passing through.  Placement alone still leaves the host paying for each
 * decision; on the H200 googlenet at batch 4 ran 8.5% slower scheduled
 * than with the scheduler paused in the same process, 3.4% even on a pool
 * of one stream (bench/results/streams.md, run 7).  So once the score is
 * at STREAMS_PROBE_MAX, at a check that found every pool stream done, the
 * context passes its default-stream work through as submitted (nothing
 * is pending in the pool, so nothing submitted now can overtake it).
 * What ends it is depth, not a busy GPU: every so many operations kmux
 * records an event on the stream the operation names, after asking
 * whether the previous one has completed.  Not yet means the GPU is at
 * least that many operations behind; STREAMS_PT_BUSY such checks in a
 * row, and scheduling resumes.  The gap starts at STREAMS_PT_EVERY and
 * doubles after each shallow check up to STREAMS_PT_EVERY_MAX (a record
 * and a query every 16 operations were still about 1% of googlenet's host
 * time), back to the shortest after a deep one; a GPU-bound phase is
 * noticed within STREAMS_PT_EVERY_MAX + STREAMS_PT_EVERY operations.  A
 * launch-bound program is often a kernel or two behind (a third of the
 * checks found googlenet's GPU busy), which gives scheduling nothing to
 * overlap; with "busy" as the signal, the first version came back to
 * scheduling 500-800 times per process and was still 5-7% slower.
 * Scheduling resumes behind an event recorded on the legacy stream (which
 * follows every blocking stream's earlier work, so the per-thread default
 * streams' too) that the next decision, a barrier, makes the pool wait for.
 */
#define STREAMS_PROBE_EVERY 8
#define STREAMS_PROBE_EVERY_ON 4
#define STREAMS_PT_EVERY 16
#define STREAMS_PT_EVERY_MAX 128
#define STREAMS_PT_BUSY 2
#define STREAMS_PROBE_ON 3
#define STREAMS_PROBE_MAX 6
#define STREAMS_PROBE_BUSY 2
static uint64_t probe_clock_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void sctx_dfr_idle(struct streams_ctx *c);

/* Lock held, pool set up: one check, when it is due. */
static void sctx_probe(struct streams_ctx *c)
{
	unsigned every = c->probe_score >= STREAMS_PROBE_ON ?
			 STREAMS_PROBE_EVERY_ON : STREAMS_PROBE_EVERY;
	uint64_t now, seq;
	int drained = 1;

	if (++c->probe_ops < every)
		return;
	c->probe_ops = 0;
	now = probe_clock_ns();

	if (c->probe_hostwaits == c->hostwaits && c->probe_ns &&
	    now - c->probe_ns < every * streams_probe_op_ns) {
		for (int j = 0; j < sched_nstreams(c->s); j++) {
			if (!(seq = sched_pending(c->s, j)))
				continue;
			if (REAL(cuStreamQuery)(c->pool[j]) != CUDA_SUCCESS) {
				drained = 0;
				break;
			}
			sched_complete(c->s, j, seq);
		}
		c->probe_checks++;
		c->probe_drained += drained;
		if (drained) {
			/* The pool is idle: deferred frees cost nothing now. */
			sctx_dfr_idle(c);
			if (c->probe_score < STREAMS_PROBE_MAX)
				c->probe_score++;
		} else {
			c->probe_score = c->probe_score > STREAMS_PROBE_BUSY ?
					 c->probe_score - STREAMS_PROBE_BUSY : 0;
		}
		sched_set_kept_up(c->s, c->probe_score >= STREAMS_PROBE_ON);
		if (drained && streams_passthru_on &&
		    c->probe_score >= STREAMS_PROBE_MAX && !c->capturing) {
			sctx_set_passthru(c, 1);
			c->pt_busy = 0;
			c->pt_have = 0;
			c->pt_every = STREAMS_PT_EVERY;
			c->pt_stretches++;
		}
	}
	c->probe_ns = now;
	c->probe_hostwaits = c->hostwaits;
}

/*
 * Lock held.  A decision for the request, of weight w; a bad argument
 * becomes a barrier.
 */
static void sctx_decide(struct streams_ctx *c, const struct sched_access *acc,
			int nacc, unsigned flags, uint32_t w,
			struct sched_decision *d)
{
	if (kmux_verify)
		verify_note_placed();
	if (sched_submit_weighted(c->s, acc, nacc,
				  flags & (SCHED_BARRIER | SCHED_JOIN), w,
				  d) == 0)
		return;
	/* Cannot fail: no accesses, and a barrier needs no memory. */
	sched_submit_weighted(c->s, NULL, 0, SCHED_BARRIER, w, d);
}

/*
 * Lock held (and kept: the waits are short or this is a failure path).
 * Wait for every pool stream with pending work.
 */
static void sctx_drain(struct streams_ctx *c)
{
	struct sched_hostwait hw;

	c->hostwaits++;
	if (sched_sync_all(c->s, &hw))
		return;
	for (int i = 0; i < hw.n; i++) {
		const struct sched_hostwait_ent *e = &hw.ent[i];

		if (e->how == SCHED_HW_STREAM)
			REAL(cuStreamSynchronize)(c->pool[e->stream]);
		else if (e->how == SCHED_HW_EVENT)
			REAL(cuEventSynchronize)(c->ev[e->event]);
	}
	sched_complete_hostwait(c->s, &hw);
}

/*
 * Lock held on entry and on return, released while waiting.  Wait for the
 * entries of hw and report them complete (unless the pool went away
 * meanwhile).  The first error is returned.
 */
static CUresult sctx_hostwait(struct streams_ctx *c,
			      const struct sched_hostwait *hw)
{
	CUstream st[SCHED_MAX_STREAMS];
	CUevent ev[SCHED_MAX_STREAMS];
	unsigned gen = c->gen;
	CUresult r = CUDA_SUCCESS, x;
	int waits = 0;

	c->hostwaits++;

	for (int i = 0; i < hw->n; i++) {
		const struct sched_hostwait_ent *e = &hw->ent[i];

		st[i] = e->how == SCHED_HW_STREAM ? c->pool[e->stream] : NULL;
		ev[i] = e->how == SCHED_HW_EVENT ? c->ev[e->event] : NULL;
		waits += st[i] || ev[i];
	}
	if (!waits)
		goto complete;
	pthread_mutex_unlock(&c->mu);
	for (int i = 0; i < hw->n; i++) {
		if (st[i])
			x = REAL(cuStreamSynchronize)(st[i]);
		else if (ev[i])
			x = REAL(cuEventSynchronize)(ev[i]);
		else
			continue;
		if (x != CUDA_SUCCESS && r == CUDA_SUCCESS)
			r = x;
	}
	pthread_mutex_lock(&c->mu);
complete:
	if (r == CUDA_SUCCESS && c->gen == gen && c->s)
		sched_complete_hostwait(c->s, hw);
	return r;
}

/*
 * Lock held: the host waited for all of the pool's work (a synchronization,
 * a read kmux cannot place), so an epoch of the program ends; the next
 * one's placement is chosen at its first operation (pace.h).  Not after a
 * wait for some of it (a read that waits for its writer, a free): work
 * launched in the epoch would still be running, and its cost would land
 * in the next one.  At every such synchronization, whether the GPU was
 * still busy or not, so that where epochs end does not depend on timing.
 */
static void sctx_pace_end(struct streams_ctx *c)
{
	if (!streams_pace_on || !c->s)
		return;
	pace_epoch_end(&c->pace, probe_clock_ns());
	sched_set_narrow(c->s, 0);
}

/*
 * One operation for its epoch's kind (pace.h); at the epoch's first, the
 * placement for the whole epoch is chosen.
 */
static void sctx_pace_op(struct streams_ctx *c, const struct streams_req *rq)
{
	if (!pace_op(&c->pace, (uint64_t)(uintptr_t)rq->issue ^ rq->blocks,
		     (uint64_t)rq->nacc << 32 | rq->flags))
		return;
	/* Forced: the epoch is timed as what it runs as. */
	if (streams_pace_force == PACE_FORCE_INLINE)
		c->pace.mode = PACE_INLINE;
	else if (streams_pace_force == PACE_FORCE_ALTERNATE)
		c->pace.mode = c->hostwaits & 1 ? PACE_INLINE : PACE_SPREAD;
	else if (streams_pace_force == PACE_FORCE_SPREAD)
		c->pace.mode = PACE_SPREAD;
	sched_set_narrow(c->s, c->pace.mode == PACE_INLINE);
}

/* --- the bridge ----------------------------------------------------------- */

static CUresult record_issue(void *arg, CUstream s)
{
	return sctx_record((CUevent)arg, s);
}

static CUresult wait_issue(void *arg, CUstream s)
{
	return sctx_wait(s, (CUevent)arg);
}

/* Lock held.  orig waits for all of c's pool work. */
static void sctx_join_into(struct streams_ctx *c, CUstream orig)
{
	struct sched_decision d;
	CUevent in = sctx_bridge_event(&c->bridge_in);

	if (!in)
		goto err_drain;
	sctx_decide(c, NULL, 0, SCHED_JOIN, 1, &d);
	if (sctx_issue(c, &d, record_issue, in) != CUDA_SUCCESS)
		goto err_drain;
	if (sctx_wait(orig, in) != CUDA_SUCCESS)
		goto err_drain;
	return;

err_drain:
	c->failures++;
	sctx_drain(c);
}

/* Locks held.  Run the operation on its default stream, ordered. */
static CUresult sctx_bridge(struct streams_ctx **cs, int n,
			    const struct streams_req *rq)
{
	struct sched_decision d;
	CUevent out;
	CUresult r;
	int synced = 0;

	for (int i = 0; i < n; i++)
		sctx_join_into(cs[i], rq->orig);
	r = rq->issue(rq->arg, NULL);
	out = sctx_bridge_event(&cs[0]->bridge_out);
	if (!out || sctx_record(out, rq->orig) != CUDA_SUCCESS) {
		/* Done on the host instead: nothing later can overtake it. */
		REAL(cuStreamSynchronize)(rq->orig);
		cs[0]->failures++;
		synced = 1;
	}
	for (int i = 0; i < n; i++) {
		cs[i]->bridged++;
		ra_invalidate(&cs[i]->ra);
		if (synced)
			continue;
		sctx_decide(cs[i], NULL, 0, SCHED_BARRIER, 1, &d);
		if (sctx_issue(cs[i], &d, wait_issue, out) != CUDA_SUCCESS) {
			REAL(cuStreamSynchronize)(rq->orig);
			cs[i]->failures++;
			synced = 1;
		}
	}
	return r;
}

/* Lock held, passing through: schedule again, after everything passed. */
static void sctx_passthru_end(struct streams_ctx *c)
{
	struct sched_decision d;
	CUevent out = sctx_bridge_event(&c->bridge_out);

	sctx_set_passthru(c, 0);
	if (!out || sctx_record(out, CU_STREAM_LEGACY) != CUDA_SUCCESS)
		goto sync;
	sctx_decide(c, NULL, 0, SCHED_BARRIER, 1, &d);
	if (sctx_issue(c, &d, wait_issue, out) != CUDA_SUCCESS)
		goto sync;
	return;
sync:
	/* Done on the host instead: nothing later can overtake it. */
	c->failures++;
	c->hostwaits++;
	REAL(cuCtxSynchronize)();
}

/*
 * Lock held, passing through: the depth check when one is due; 1 while the
 * GPU stays close behind (the caller issues the operation as submitted), 0
 * once scheduling resumed.
 */
static int sctx_passthru_check(struct streams_ctx *c, CUstream orig)
{
	CUevent ev;
	CUresult r;

	if (++c->probe_ops < c->pt_every)
		return 1;
	c->probe_ops = 0;
	if (c->pt_have) {
		r = REAL(cuEventQuery)(c->pt_ev);
		c->probe_checks++;
		if (r == CUDA_SUCCESS) {
			c->probe_drained++;
			c->pt_busy = 0;
			if (c->pt_every < STREAMS_PT_EVERY_MAX)
				c->pt_every *= 2;
		} else if (r == CUDA_ERROR_NOT_READY) {
			c->pt_busy++;
			c->pt_every = STREAMS_PT_EVERY;
		} else {
			goto end;
		}
		if (c->pt_busy >= STREAMS_PT_BUSY)
			goto end;
	}
	/* Re-recorded each time: a query sees the latest record only. */
	ev = sctx_bridge_event(&c->pt_ev);
	if (!ev || sctx_record(ev, orig) != CUDA_SUCCESS) {
		c->failures++;
		goto end;
	}
	c->pt_have = 1;
	return 1;
end:
	/* Scheduling again, from a score that lets it spread. */
	c->pt_have = 0;
	c->pt_busy = 0;
	c->probe_score = 0;
	sched_set_kept_up(c->s, 0);
	sctx_passthru_end(c);
	return 0;
}

/* The default stream is being captured into a graph (or cannot be used). */
static int stream_capturing(CUstream s)
{
	CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_NONE;

	if (!REAL(cuStreamIsCapturing))
		return 0;
	if (REAL(cuStreamIsCapturing)(s, &st) != CUDA_SUCCESS)
		return 1;	/* let the driver tell the program why */
	return st != CU_STREAM_CAPTURE_STATUS_NONE;
}

static void lock_sorted(struct streams_ctx **cs, int n)
{
	struct streams_ctx *x;

	for (int i = 1; i < n; i++)
		for (int k = i; k > 0 && cs[k - 1] > cs[k]; k--) {
			x = cs[k - 1];
			cs[k - 1] = cs[k];
			cs[k] = x;
		}
	for (int i = 0; i < n; i++)
		pthread_mutex_lock(&cs[i]->mu);
}

static void unlock_all(struct streams_ctx **cs, int n)
{
	for (int i = n - 1; i >= 0; i--)
		pthread_mutex_unlock(&cs[i]->mu);
}

/* --- blocking streams ----------------------------------------------------
 *
 * A stream created without CU_STREAM_NON_BLOCKING synchronizes with the
 * legacy stream: its work waits for all earlier legacy-stream work, and
 * later legacy-stream work waits for it.  The pool is made of non-blocking
 * streams, so kmux keeps both orders itself, lazily:
 *
 *  - before an operation on blocking stream s, if pool work was issued since
 *    s last joined, s waits for all of it (a SCHED_JOIN recording bridge_in,
 *    then cuStreamWaitEvent(s)); s is then dirty;
 *  - before the next default-stream operation (or a host wait for the
 *    default stream), every dirty s records its `done` event and a
 *    SCHED_BARRIER makes the pool wait for them all.
 *
 * A run of operations on s costs one join, a run on the default stream one
 * barrier.  More than STREAMS_BLOCKING_MAX blocking streams in a context,
 * or a full registry, fall back to switching the context off.  The
 * per-thread default stream also counts as blocking for the legacy stream;
 * it is scheduled like the legacy one, so both orders hold already.
 */

struct sctx_waits {
	CUevent *ev;
	int n;
};

static CUresult waits_issue(void *arg, CUstream t)
{
	const struct sctx_waits *w = arg;
	CUresult r = CUDA_SUCCESS;

	for (int i = 0; i < w->n && r == CUDA_SUCCESS; i++)
		r = sctx_wait(t, w->ev[i]);
	return r;
}

/* Lock held.  The pool waits for the work of every dirty blocking stream. */
static void sctx_blk_flush(struct streams_ctx *c)
{
	CUevent ev[STREAMS_BLOCKING_MAX];
	struct sctx_waits w = { ev, 0 };
	struct sched_decision d;
	unsigned before;

	if (!c->ndirty || c->state != SCTX_ON)
		return;
	for (int i = 0; i < c->nblk; i++) {
		struct sctx_blocking *b = &c->blk[i];

		if (!b->dirty)
			continue;
		b->dirty = 0;
		if (!sctx_bridge_event(&b->done) ||
		    sctx_record(b->done, b->s) != CUDA_SUCCESS) {
			/* Done on the host instead. */
			REAL(cuStreamSynchronize)(b->s);
			c->failures++;
			continue;
		}
		ev[w.n++] = b->done;
	}
	c->ndirty = 0;
	if (!w.n)
		return;
	before = c->issued;
	sctx_decide(c, NULL, 0, SCHED_BARRIER, 1, &d);
	if (sctx_issue(c, &d, waits_issue, &w) != CUDA_SUCCESS) {
		for (int i = 0; i < w.n; i++)
			REAL(cuEventSynchronize)(ev[i]);
		c->failures++;
	}
	c->blk_barriers++;
	/* The barrier only waited for them: who was joined still is. */
	for (int i = 0; i < c->nblk; i++)
		if (c->blk[i].joined == before)
			c->blk[i].joined = c->issued;
}

static int blk_register(CUstream s, struct streams_ctx *c)
{
	for (int i = 0; i < STREAMS_BLOCKING_REG; i++) {
		CUstream none = NULL;

		if (atomic_compare_exchange_strong(&streams_blk_stream[i],
						   &none, s)) {
			atomic_store(&streams_blk_ctx[i], c);
			atomic_fetch_add(&streams_nblocking, 1);
			return 0;
		}
	}
	return -ENOSPC;
}

static void blk_unregister(CUstream s)
{
	for (int i = 0; i < STREAMS_BLOCKING_REG; i++) {
		if (atomic_load(&streams_blk_stream[i]) != s)
			continue;
		atomic_store(&streams_blk_ctx[i], NULL);
		atomic_store(&streams_blk_stream[i], NULL);
		atomic_fetch_sub(&streams_nblocking, 1);
		return;
	}
}

static struct streams_ctx *blk_lookup(CUstream s)
{
	for (int i = 0; i < STREAMS_BLOCKING_REG; i++)
		if (atomic_load_explicit(&streams_blk_stream[i],
					 memory_order_acquire) == s)
			return atomic_load(&streams_blk_ctx[i]);
	return NULL;
}

/* Lock held.  The entry of s in c, or NULL. */
static struct sctx_blocking *sctx_blk_find(struct streams_ctx *c, CUstream s)
{
	for (int i = 0; i < c->nblk; i++)
		if (c->blk[i].s == s)
			return &c->blk[i];
	return NULL;
}

/* Lock held.  Forget every blocking stream of c (its context is gone). */
static void sctx_blk_clear(struct streams_ctx *c)
{
	for (int i = 0; i < c->nblk; i++) {
		blk_unregister(c->blk[i].s);
		if (c->blk[i].done)
			REAL(cuEventDestroy_v2)(c->blk[i].done);
	}
	c->nblk = c->ndirty = 0;
}

CUresult streams_run_user(CUstream s, streams_issue_fn issue, void *arg)
{
	struct streams_ctx *c = blk_lookup(s);
	struct sctx_blocking *b;
	CUresult r;

	if (!c)
		return issue(arg, NULL);
	pthread_mutex_lock(&c->mu);
	b = sctx_blk_find(c, s);
	/* Captured work is recorded, not run; off: CUDA orders it itself. */
	if (!b || c->state == SCTX_OFF ||
	    (c->capturing && stream_capturing(s))) {
		pthread_mutex_unlock(&c->mu);
		return issue(arg, NULL);
	}
	if (c->state == SCTX_ON && b->joined != c->issued) {
		sctx_join_into(c, s);
		b->joined = c->issued;
		c->blk_joins++;
	}
	/* Under the lock: no default-stream operation may slip in between. */
	r = issue(arg, NULL);
	if (!b->dirty) {
		b->dirty = 1;
		c->ndirty++;
	}
	pthread_mutex_unlock(&c->mu);
	return r;
}

/* A peer copy: every context involved that schedules is bridged. */
static int streams_run_peer(struct streams_ctx *cur,
			    const struct streams_req *rq, CUresult *res)
{
	struct streams_ctx *all[STREAMS_BRIDGE_MAX], *on[STREAMS_BRIDGE_MAX];
	int n = 0, non = 0, capturing = 0;

	all[n++] = cur;
	for (int i = 0; i < 2; i++) {
		struct streams_ctx *p = rq->peer[i] ? sctx_find(rq->peer[i])
						    : NULL;

		if (p && p != cur && (n < 2 || p != all[1]))
			all[n++] = p;
	}
	lock_sorted(all, n);
	for (int i = 0; i < n; i++) {
		/* Only the current context may be set up here. */
		if (all[i]->paused)
			continue;
		if (all[i] == cur ? sctx_ready(cur) : all[i]->state == SCTX_ON)
			on[non++] = all[i];
		capturing |= all[i]->capturing;
	}
	if (!non && cur->paused) {
		/* As in streams_run(): issued under the locks. */
		*res = rq->issue(rq->arg, NULL);
		cur->paused_ops++;
		unlock_all(all, n);
		return 1;
	}
	if (!non || (capturing && stream_capturing(rq->orig))) {
		unlock_all(all, n);
		return 0;
	}
	*res = sctx_bridge(on, non, rq);
	unlock_all(all, n);
	return 1;
}

/*
 * Lock held, passing through: issue(arg, NULL) as submitted, counted.
 * Under the lock, as when paused: an end of passing through in another
 * thread must not come between.
 */
static CUresult sctx_as_submitted(struct streams_ctx *c,
				  streams_issue_fn issue, void *arg,
				  int unread)
{
	CUresult r = issue(arg, NULL);

	c->pt_ops++;
	c->pt_unread += unread;
	ra_invalidate(&c->ra);
	return r;
}

int streams_run(const struct streams_req *rq, CUresult *res)
{
	struct streams_ctx *c = sctx_current();
	struct sched_decision d;
	CUstream t;
	CUresult r, wr;
	uint32_t w;
	unsigned gen;
	int kd;

	if (!c)
		return 0;
	if ((rq->peer[0] && rq->peer[0] != c->ctx) ||
	    (rq->peer[1] && rq->peer[1] != c->ctx))
		return streams_run_peer(c, rq, res);
	pthread_mutex_lock(&c->mu);
	/* However it is run, a free comes after kmux's copies of it. */
	if (rq->flags & STREAMS_FREES)
		for (int k = 0; k < rq->nacc; k++)
			sctx_ra_drop(c, rq->acc[k].alloc_id);
	if (c->paused) {
		/*
		 * Under the lock: a kmux_streams_pause(0) in another thread
		 * synchronizes the context before the pool runs anything, and
		 * must not miss an operation between this check and its issue.
		 */
		*res = rq->issue(rq->arg, NULL);
		c->paused_ops++;
		ra_invalidate(&c->ra);
		goto done;
	}
	if (!sctx_ready(c))
		goto pass;
	if (c->capturing || (rq->flags & STREAMS_BRIDGE)) {
		/* Captured work is recorded, not run: leave it alone. */
		if (c->capturing && stream_capturing(rq->orig))
			goto pass;
		*res = sctx_bridge(&c, 1, rq);
		goto done;
	}
	if (c->passthru && sctx_passthru_check(c, rq->orig))
		goto as_submitted;
	sctx_blk_flush(c);
	if (streams_keep_up && REAL(cuStreamQuery))
		sctx_probe(c);
	if (c->passthru)
		goto as_submitted;
	/* What the operation is, for its epoch's kind (pace.h). */
	if (streams_pace_on)
		sctx_pace_op(c, rq);
	w = sctx_weight(c, rq->blocks);
	kd = -1;
	/* The kind only when learning: no hashing on the launch path else. */
	if (c->kd && rq->grid && !(rq->flags & SCHED_BARRIER)) {
		uint64_t kind = kdur_key(rq->fn, rq->grid);

		if (c->kd_inflight && c->kd_hostwaits != c->hostwaits)
			sctx_kd_harvest(c);
		if (kdur_launch(c->kd, kind))
			kd = sctx_kd_pick(c, kind);
		w = kdur_weight(c->kd, kind, w);
	}
	sctx_decide(c, rq->acc, rq->nacc, rq->flags, w, &d);
	sctx_ra_before(c, rq, d.stream);
	r = sctx_issue_timed(c, &d, rq->issue, rq->arg, kd);
	if (r == CUDA_SUCCESS)
		sctx_ra_after(c, rq, &d);
	if ((rq->flags & STREAMS_WAIT) && r == CUDA_SUCCESS) {
		t = c->pool[d.stream];
		gen = c->gen;
		c->hostwaits++;
		pthread_mutex_unlock(&c->mu);
		wr = REAL(cuStreamSynchronize)(t);
		pthread_mutex_lock(&c->mu);
		if (wr != CUDA_SUCCESS)
			r = wr;
		else if (c->gen == gen && c->s)
			sched_complete(c->s, d.stream, d.seq);
	}
	*res = r;
done:
	pthread_mutex_unlock(&c->mu);
	return 1;
as_submitted:
	*res = sctx_as_submitted(c, rq->issue, rq->arg,
				 !!(rq->flags & STREAMS_UNREAD));
	goto done;
pass:
	/* The caller runs it where the scheduler does not see it. */
	ra_invalidate(&c->ra);
	pthread_mutex_unlock(&c->mu);
	return 0;
}

/*
 * The short way through while the current context passes through: none of
 * streams_run()'s set-up, one context lookup.  Only for operations that
 * streams_run() would issue as submitted once passing through (the caller
 * knows: a kernel on a default stream, with no bridge and nothing else of
 * kmux's wanting to see it).  The check that may end passing through is
 * the same, under the same lock.
 */
int streams_pass_quick(CUstream orig, streams_issue_fn issue, void *arg,
		       CUresult *res)
{
	struct streams_ctx *c = sctx_passing_now();

	if (!c)
		return 0;
	pthread_mutex_lock(&c->mu);
	if (!c->passthru || c->paused || c->capturing ||
	    !sctx_passthru_check(c, orig)) {
		pthread_mutex_unlock(&c->mu);
		return 0;
	}
	*res = sctx_as_submitted(c, issue, arg, 1);
	pthread_mutex_unlock(&c->mu);
	return 1;
}

/* --- pausing (kmux_streams_pause(), include/kmux.h) --------------------- */

/*
 * Lock held.  Drain c completely (a context synchronization: the pool and
 * every stream the program's work went to), tell the scheduler, free what
 * was deferred, then flip the flag.  Both ways need the whole drain: work
 * a paused context ran on its default stream is not ordered with the
 * non-blocking pool, and pool work is not ordered with the default stream.
 * 0, or -EIO when the synchronization failed (the flag flips all the same:
 * a context with a sticky error fails everything anyway).
 */
static int sctx_pause(struct streams_ctx *c, int pause)
{
	struct sched_hostwait hw;
	CUcontext popped;
	CUresult r;
	int have_hw;

	if (c->paused == pause)
		return 0;
	if (c->state != SCTX_ON) {
		/* No pool: nothing of the program's was moved. */
		c->paused = pause;
		c->pauses += pause;
		return 0;
	}
	have_hw = c->s && sched_sync_all(c->s, &hw) == 0;
	r = REAL(cuCtxPushCurrent_v2)(c->ctx);
	if (r == CUDA_SUCCESS) {
		r = REAL(cuCtxSynchronize)();
		REAL(cuCtxPopCurrent_v2)(&popped);
	}
	if (r == CUDA_SUCCESS) {
		c->hostwaits++;
		if (have_hw)
			sched_complete_hostwait(c->s, &hw);
		sctx_dfr_idle(c);
	}
	/* Drained: nothing passed through can be overtaken any more. */
	sctx_set_passthru(c, 0);
	c->paused = pause;
	c->pauses += pause;
	return r == CUDA_SUCCESS ? 0 : -EIO;
}

KMUX_EXPORT int kmux_streams_pause(int pause)
{
	struct streams_ctx *c;
	int was, busy = 0, err = 0;

	if (!kmux_streams)
		return -ENOTSUP;
	pause = !!pause;
	pthread_mutex_lock(&streams_pause_mu);
	/* Captured work is recorded, not run: it cannot be drained. */
	for (c = atomic_load(&streams_list); c; c = c->next) {
		pthread_mutex_lock(&c->mu);
		busy |= c->capturing;
		pthread_mutex_unlock(&c->mu);
	}
	if (busy) {
		pthread_mutex_unlock(&streams_pause_mu);
		return -EBUSY;
	}
	was = atomic_exchange(&streams_paused, pause);
	for (c = atomic_load(&streams_list); c; c = c->next) {
		int e;

		pthread_mutex_lock(&c->mu);
		e = sctx_pause(c, pause);
		pthread_mutex_unlock(&c->mu);
		if (e && !err)
			err = e;
	}
	pthread_mutex_unlock(&streams_pause_mu);
	if (err)
		log_warn("kmux_streams_pause(%d): a context failed to "
			 "synchronize; scheduling %s all the same", pause,
			 pause ? "paused" : "resumed");
	return err ? err : was;
}

/* --- deferred frees ------------------------------------------------------ */

/*
 * cuMemFree synchronizes the whole device before it returns, whatever the
 * memory was used by: on an H200 it waited 19.9 ms for a kernel of another
 * stream that never touched the freed buffer (bench/gpu/probe-ctx.sh).  A
 * program that frees its scratch memory at the end of each phase therefore
 * drains every pool stream once per phase, which is the overlap kmux made.
 * Instead, a plain device allocation freed while the pool schedules this
 * context leaves the allocation table and the scheduler at once (the
 * program can no longer name it) but stays allocated, so work still queued
 * on it runs on valid memory; the real cuMemFree happens when it costs no
 * wait: after a host synchronization that left the pool idle
 * (cuCtxSynchronize, a synchronization of the default stream), or when the
 * keeping-up probe finds every pool stream done.  Memory
 * comes first: an allocation that fails for memory (or for the quota), a
 * cuMemGetInfo, or deferred bytes beyond a cap (an eighth of the device's
 * memory, at most 2 GiB) free everything deferred first, after draining the pool, which
 * is what the program's own cuMemFree would have cost.  The real free
 * always synchronizes the device itself, so work on the program's own
 * streams is waited for too.  The driver cannot hand the address out again
 * before the real free, so no later allocation can alias memory that work
 * still uses.
 */
/*
 * Give back every deferred allocation's quota charge and forget them; free
 * them for real first unless the driver already did (the context is gone).
 */
static void sctx_dfr_release(struct streams_ctx *c, int really_free)
{
	for (int i = 0; i < c->ndfr; i++) {
		const struct sctx_deferred *d = &c->dfr[i];

		if (really_free && REAL(cuMemFree_v2)(d->base) != CUDA_SUCCESS)
			log_warn("streams: deferred free of %#llx (%llu bytes) "
				 "failed", (unsigned long long)d->base,
				 (unsigned long long)d->size);
		if (d->charged)
			quota_release(d->charged);
	}
	c->ndfr = 0;
	c->dfr_bytes = 0;
}

/* Lock held; c is current.  Drain the pool (drain) and free what waits. */
static int sctx_dfr_flush(struct streams_ctx *c, int drain)
{
	if (!c->ndfr)
		return 0;
	if (drain && c->state == SCTX_ON)
		sctx_drain(c);
	sctx_dfr_release(c, 1);
	return 1;
}

/* Lock held: every pool stream known idle, and c current: free them. */
static void sctx_dfr_idle(struct streams_ctx *c)
{
	if (!c->ndfr || !c->s || current_ctx() != c->ctx)
		return;
	for (int j = 0; j < sched_nstreams(c->s); j++)
		if (sched_pending(c->s, j))
			return;
	c->dfr_idle++;
	sctx_dfr_release(c, 1);
}

/*
 * Memory a process holds past its frees is memory its neighbours on the GPU
 * cannot have: an eighth of the device, at most 2 GiB.
 */
#define STREAMS_DFR_CAP_MAX (2ull << 30)

static uint64_t sctx_dfr_cap(void)
{
	size_t total = 0;
	CUdevice dev;

	if (REAL(cuCtxGetDevice) && REAL(cuDeviceTotalMem_v2) &&
	    REAL(cuCtxGetDevice)(&dev) == CUDA_SUCCESS &&
	    REAL(cuDeviceTotalMem_v2)(&total, dev) == CUDA_SUCCESS && total)
		return (uint64_t)total / 8 < STREAMS_DFR_CAP_MAX ?
		       (uint64_t)total / 8 : STREAMS_DFR_CAP_MAX;
	return 1ull << 30;
}

int streams_defer_free(uint64_t base, uint64_t size, uint64_t charged)
{
	struct streams_ctx *c;
	int kept = 0;

	if (!streams_defer_on || !base || !(c = sctx_current()))
		return 0;
	pthread_mutex_lock(&c->mu);
	if (c->state != SCTX_ON || c->capturing || c->paused || c->passthru)
		goto out;
	if (!c->dfr_cap)
		c->dfr_cap = sctx_dfr_cap();
	if (c->dfr_bytes + size > c->dfr_cap) {
		/* Over the cap: as the program's free would, drain, then free. */
		c->dfr_short++;
		sctx_dfr_flush(c, 1);
		if (size > c->dfr_cap)
			goto out;
	}
	if (c->ndfr == c->dfr_alloc) {
		int n = c->dfr_alloc ? 2 * c->dfr_alloc : 16;
		struct sctx_deferred *d = realloc(c->dfr, (size_t)n * sizeof(*d));

		if (!d)
			goto out;
		c->dfr = d;
		c->dfr_alloc = n;
	}
	c->dfr[c->ndfr++] = (struct sctx_deferred){
		.base = base, .size = size, .charged = charged,
	};
	c->dfr_bytes += size;
	c->dfr_count++;
	kept = 1;
out:
	pthread_mutex_unlock(&c->mu);
	return kept;
}

int streams_flush_frees(void)
{
	struct streams_ctx *c = sctx_current();
	int r;

	if (!c)
		return 0;
	pthread_mutex_lock(&c->mu);
	if ((r = sctx_dfr_flush(c, 1)))
		c->dfr_short++;
	pthread_mutex_unlock(&c->mu);
	return r;
}

int streams_is_deferred(uint64_t base)
{
	struct streams_ctx *c = sctx_current();
	int found = 0;

	if (!c || !base)
		return 0;
	pthread_mutex_lock(&c->mu);
	for (int i = 0; i < c->ndfr && !found; i++)
		found = c->dfr[i].base == base;
	pthread_mutex_unlock(&c->mu);
	return found;
}

/* --- reading ahead --------------------------------------------------------- */

/*
 * Reading ahead (readahead.h).  A synchronous read of a small device range
 * into pageable memory costs the program a copy's round trip at the point
 * of reading; host_sync's five per step kept it 10% behind its
 * hand-written version even without its closing synchronization
 * (bench/results/streams.md, run 8).  Once the table knows a range is read
 * back after a write, the write's decision is followed by one more: a copy
 * of the range into a pinned shadow, with an event recorded after it; the
 * read then waits for that event and copies from the shadow.
 *
 * Off the program's streams: an event is recorded behind the write on its
 * pool stream, and the copy goes to a stream of kmux's own (ra_stream)
 * that waits for it.  Placed on the writer's pool stream, the copy sat
 * between the writer and the task's next kernel and made host_sync 4-5%
 * slower (run 8, calls 2 and 3).  The scheduler does not know the copy,
 * which only reads the range and writes kmux's shadow; so a later writer's
 * pool stream waits for the copy's event (sctx_ra_before(), unless the
 * host saw it complete), and a free waits for it (sctx_ra_drop()).
 *
 * Queued when the host is about to wait (sctx_ra_flush(): a synchronous
 * read, a synchronization), not at the write: the three driver calls cost
 * the host several microseconds, which right after a synchronization
 * delay the launches behind it; before a wait they cost nothing.  Only
 * the record is made at the write.
 *
 * Served only while nothing can write the range unseen: this is the one
 * context scheduling, the program has no stream of its own (its work is
 * not ordered by the pool), no capture, pause or passing through, the
 * memory manager is off; and nothing the scheduler did not see ran since
 * the write (ra_invalidate() at every barrier, bridged or passed-through
 * operation).  The same assumption as everywhere else stands: kernels
 * reach memory only through their parameters.
 */

/* Lock held.  Whether reads in c may be served (and read-aheads queued). */
static int sctx_ra_usable(const struct streams_ctx *c)
{
	return streams_ra_on && !mm_on && c->state == SCTX_ON && !c->paused &&
	       !c->passthru && !c->capturing &&
	       !atomic_load_explicit(&streams_own_nonblocking,
				     memory_order_relaxed) &&
	       !atomic_load_explicit(&streams_nblocking, memory_order_relaxed) &&
	       atomic_load_explicit(&streams_nsched, memory_order_relaxed) == 1;
}

/* Lock held.  The host waits for sl's copy, if one is running. */
static void sctx_ra_finish(struct ra_slot *sl)
{
	if (sl->copying &&
	    REAL(cuEventSynchronize)((CUevent)sl->ev) == CUDA_SUCCESS)
		sl->copying = 0;
}

/*
 * Lock held.  alloc_id is about to be freed: its copy, if one is running,
 * is waited for, and its slot goes now, not after the free, so that no
 * other thread's wait queues a copy of it in between.
 */
static void sctx_ra_drop(struct streams_ctx *c, uint64_t alloc_id)
{
	for (int i = 0; i < RA_SLOTS; i++)
		if (c->ra.slot[i].alloc_id == alloc_id)
			sctx_ra_finish(&c->ra.slot[i]);
	ra_forget(&c->ra, alloc_id);
}

/*
 * Lock held.  rq is about to be issued on pool stream `stream`: a write of
 * a range whose copy may still be running waits for it there (the copy
 * must read what came before the write, and must not race it).
 */
static void sctx_ra_before(struct streams_ctx *c, const struct streams_req *rq,
			   int stream)
{
	for (int k = 0; k < rq->nacc; k++) {
		const struct sched_access *a = &rq->acc[k];

		if (a->mode == SCHED_READ)
			continue;
		for (int i = 0; i < RA_SLOTS; i++) {
			struct ra_slot *sl = &c->ra.slot[i];
			CUresult q;

			if (!sl->copying || sl->alloc_id != a->alloc_id)
				continue;
			q = REAL(cuEventQuery)((CUevent)sl->ev);
			if (q == CUDA_SUCCESS ||
			    sctx_wait(c->pool[stream], (CUevent)sl->ev) ==
			    CUDA_SUCCESS) {
				if (q == CUDA_SUCCESS)
					sl->copying = 0;
				continue;
			}
			/* No wait: the host makes sure instead. */
			sctx_ra_finish(sl);
		}
	}
}

/* Lock held.  The stream, shadows and events go with the pool. */
static void sctx_ra_teardown(struct streams_ctx *c)
{
	if (c->ra_stream) {
		REAL(cuStreamSynchronize)(c->ra_stream);
		REAL(cuStreamDestroy_v2)(c->ra_stream);
		c->ra_stream = NULL;
	}
	for (int i = 0; i < RA_SLOTS; i++) {
		struct ra_slot *sl = &c->ra.slot[i];

		if (sl->shadow)
			REAL(cuMemFreeHost)(sl->shadow);
		if (sl->ev)
			REAL(cuEventDestroy_v2)((CUevent)sl->ev);
		if (sl->wev)
			REAL(cuEventDestroy_v2)((CUevent)sl->wev);
		*sl = (struct ra_slot){ 0 };
	}
	c->ra_due = 0;
	ra_invalidate(&c->ra);
}

/* Lock held.  An event, created on first use (through the failure knob). */
static CUevent sctx_ra_event(void **ev)
{
	if (!*ev && (streams_inject() ||
	    REAL(cuEventCreate)((CUevent *)ev, CU_EVENT_DISABLE_TIMING) !=
	    CUDA_SUCCESS))
		*ev = NULL;
	return (CUevent)*ev;
}

/* Lock held.  Queue slot i's copy on ra_stream, behind its writer. */
static void sctx_ra_queue(struct streams_ctx *c, int i)
{
	struct ra_slot *sl = &c->ra.slot[i];
	CUevent ev = sctx_ra_event(&sl->ev);

	if (!sl->shadow && (streams_inject() ||
	    REAL(cuMemHostAlloc)(&sl->shadow, RA_MAX_BYTES, 0) != CUDA_SUCCESS))
		sl->shadow = NULL;
	if (!c->ra_stream && (streams_inject() ||
	    REAL(cuStreamCreate)(&c->ra_stream, CU_STREAM_NON_BLOCKING) !=
	    CUDA_SUCCESS))
		c->ra_stream = NULL;
	if (!sl->shadow || !ev || !sl->wev || !c->ra_stream)
		goto failed;
	/* The test knob's wrong order: the copy follows nothing. */
	if (!streams_ra_unordered &&
	    sctx_wait(c->ra_stream, (CUevent)sl->wev) != CUDA_SUCCESS)
		goto failed;
	if (streams_inject() ||
	    REAL(cuMemcpyDtoHAsync_v2)(sl->shadow, sl->base + sl->off,
				       sl->bytes, c->ra_stream) != CUDA_SUCCESS)
		goto failed;
	if (sctx_record(ev, c->ra_stream) != CUDA_SUCCESS) {
		/* The copy is queued, with nothing to wait for it by. */
		REAL(cuStreamSynchronize)(c->ra_stream);
		goto failed;
	}
	sl->copying = 1;
	ra_queued(&c->ra, i);
	return;
failed:
	/* A copy that was queued reads the range and writes the shadow only. */
	ra_queue_failed(&c->ra, i);
}

/*
 * Lock held.  rq was just issued by the scheduler as d decided: mark
 * behind it the writes of ranges read back.
 */
static void sctx_ra_after(struct streams_ctx *c, const struct streams_req *rq,
			  const struct sched_decision *d)
{
	if (rq->flags & (SCHED_BARRIER | STREAMS_BRIDGE)) {
		ra_invalidate(&c->ra);
		return;
	}
	if ((rq->flags & STREAMS_FREES) || !sctx_ra_usable(c))
		return;
	for (int k = 0; k < rq->nacc; k++) {
		const struct sched_access *a = &rq->acc[k];
		struct ra_slot *sl;
		CUevent wev;
		int i;

		if (a->mode == SCHED_READ ||
		    (i = ra_written(&c->ra, a->alloc_id, a->off, a->len)) < 0)
			continue;
		sl = &c->ra.slot[i];
		wev = sctx_ra_event(&sl->wev);
		if (!wev || sctx_record(wev, c->pool[d->stream]) != CUDA_SUCCESS) {
			ra_queue_failed(&c->ra, i);
			continue;
		}
		sl->wstream = d->stream;
		sl->wseq = d->seq;
		c->ra_due++;
	}
}

/* Lock held.  The host is about to wait: queue the read-aheads due. */
static void sctx_ra_flush(struct streams_ctx *c)
{
	if (!c->ra_due)
		return;
	c->ra_due = 0;
	if (!sctx_ra_usable(c))
		return;
	for (int i = 0; i < RA_SLOTS; i++)
		if (ra_due(&c->ra, i))
			sctx_ra_queue(c, i);
}

void streams_ra_release(uint64_t alloc_id)
{
	if (alloc_id)
		sctx_each(sctx_ra_drop, alloc_id);
}

/* Lock held.  Work kmux will not see may write anything read ahead. */
static void sctx_ra_stale(struct streams_ctx *c, uint64_t unused)
{
	(void)unused;
	ra_invalidate(&c->ra);
}

int streams_host_read(uint64_t alloc_id, uint64_t base, uint64_t src,
		      void *dst, uint64_t bytes, CUresult *r)
{
	struct streams_ctx *c = sctx_current();
	struct ra_slot *sl;
	uint64_t off = src - base, gen;
	unsigned cgen;
	CUresult x;
	int i, served = 0;

	if (!c || !streams_ra_on || bytes > RA_MAX_BYTES || src < base)
		return 0;
	pthread_mutex_lock(&c->mu);
	if (!sctx_ra_usable(c))
		goto out;
	sctx_ra_flush(c);
	i = ra_lookup(&c->ra, alloc_id, off, bytes);
	if (i < 0) {
		ra_learn(&c->ra, alloc_id, base, off, bytes);
		goto out;
	}
	sl = &c->ra.slot[i];
	gen = sl->gen;
	cgen = c->gen;
	c->hostwaits++;
	pthread_mutex_unlock(&c->mu);
	x = REAL(cuEventSynchronize)((CUevent)sl->ev);
	pthread_mutex_lock(&c->mu);
	/*
	 * Another thread may have queued a newer copy into the shadow while
	 * this one waited: then read as before (the data race on the
	 * program's side, a read and a write of one buffer from two threads,
	 * is the program's; a torn shadow must not be kmux's).
	 */
	if (x != CUDA_SUCCESS || c->gen != cgen || !ra_still(&c->ra, i, gen))
		goto out;
	memcpy(dst, (const char *)sl->shadow + (off - sl->off), bytes);
	sl->copying = 0;
	/* As a read that waited for its writer tells the scheduler. */
	if (c->s && sl->wseq)
		sched_complete(c->s, sl->wstream, sl->wseq);
	ra_served(&c->ra, i);
	*r = CUDA_SUCCESS;
	served = 1;
out:
	pthread_mutex_unlock(&c->mu);
	return served;
}

/* --- host synchronization ------------------------------------------------- */

CUresult streams_host_access(const struct sched_access *acc, int nacc,
			     int full)
{
	struct streams_ctx *c = sctx_current();
	struct sched_hostwait hw;
	CUresult r = CUDA_SUCCESS;

	if (!c)
		return CUDA_SUCCESS;
	pthread_mutex_lock(&c->mu);
	if (c->state != SCTX_ON)
		goto out;
	/* A legacy-stream read also follows the blocking streams' work. */
	sctx_blk_flush(c);
	sctx_ra_flush(c);
	if (full || sched_sync_for(c->s, acc, nacc, &hw))
		sched_sync_all(c->s, &hw);
	r = sctx_hostwait(c, &hw);
	if (full && r == CUDA_SUCCESS)
		sctx_pace_end(c);
out:
	pthread_mutex_unlock(&c->mu);
	return r;
}

/* Lock held.  Poll the entries; complete them all if all are done. */
static CUresult sctx_query(struct streams_ctx *c,
			   const struct sched_hostwait *hw)
{
	CUresult r;

	for (int i = 0; i < hw->n; i++) {
		const struct sched_hostwait_ent *e = &hw->ent[i];

		if (e->how == SCHED_HW_STREAM)
			r = REAL(cuStreamQuery)(c->pool[e->stream]);
		else if (e->how == SCHED_HW_EVENT)
			r = REAL(cuEventQuery)(c->ev[e->event]);
		else
			continue;
		if (r != CUDA_SUCCESS)
			return r;
	}
	sched_complete_hostwait(c->s, hw);
	return CUDA_SUCCESS;
}

CUresult streams_sync_default(int query)
{
	struct streams_ctx *c = sctx_current();
	struct sched_hostwait hw;
	CUresult r = CUDA_SUCCESS;

	if (!c)
		return CUDA_SUCCESS;
	pthread_mutex_lock(&c->mu);
	if (c->state != SCTX_ON)
		goto out;
	sctx_blk_flush(c);
	if (!query)
		sctx_ra_flush(c);
	sched_sync_all(c->s, &hw);
	r = query ? sctx_query(c, &hw) : sctx_hostwait(c, &hw);
	if (r == CUDA_SUCCESS && c->s) {
		sctx_dfr_idle(c);
		if (!query)
			sctx_pace_end(c);
	}
out:
	pthread_mutex_unlock(&c->mu);
	return r;
}

void streams_ctx_sync_begin(CUcontext ctx, struct streams_sync *ss)
{
	struct streams_ctx *c = ctx ? sctx_find(ctx) : sctx_current();

	ss->c = NULL;
	if (!c)
		return;
	pthread_mutex_lock(&c->mu);
	sctx_ra_flush(c);
	if (c->state == SCTX_ON && sched_sync_all(c->s, &ss->hw) == 0) {
		ss->c = c;
		ss->gen = c->gen;
	}
	pthread_mutex_unlock(&c->mu);
}

void streams_ctx_sync_end(struct streams_sync *ss, CUresult r)
{
	struct streams_ctx *c = ss->c;

	if (!c || r != CUDA_SUCCESS)
		return;
	/* The real cuCtxSynchronize waited for every pool stream. */
	pthread_mutex_lock(&c->mu);
	c->hostwaits++;
	if (c->gen == ss->gen && c->s) {
		sched_complete_hostwait(c->s, &ss->hw);
		sctx_dfr_idle(c);
		sctx_pace_end(c);
	}
	pthread_mutex_unlock(&c->mu);
}

/* --- memory ------------------------------------------------------------ */

/* Lock held.  alloc_id is about to be freed: its users first. */
static void sctx_before_free(struct streams_ctx *c, uint64_t alloc_id)
{
	struct sched_access a = { .alloc_id = alloc_id, .mode = SCHED_WRITE };
	struct sched_hostwait hw;

	if (c->state == SCTX_ON && sched_sync_for(c->s, &a, 1, &hw) == 0)
		sctx_hostwait(c, &hw);
	sctx_ra_drop(c, alloc_id);
}

void streams_before_free(uint64_t alloc_id)
{
	if (alloc_id)
		sctx_each(sctx_before_free, alloc_id);
}

/* Lock held. */
static void sctx_forget(struct streams_ctx *c, uint64_t alloc_id)
{
	if (c->state == SCTX_ON)
		sched_forget(c->s, alloc_id);
	ra_forget(&c->ra, alloc_id);
}

void streams_forget(uint64_t alloc_id)
{
	if (alloc_id)
		sctx_each(sctx_forget, alloc_id);
}

uint64_t streams_placeholder(void)
{
	return atomic_fetch_add_explicit(&streams_next_placeholder, 1,
					 memory_order_relaxed);
}

void streams_rename(uint64_t from, uint64_t to)
{
	struct streams_ctx *c = sctx_current();
	int err;

	if (!c)
		return;
	pthread_mutex_lock(&c->mu);
	if (c->state != SCTX_ON)
		goto out;
	err = to ? sched_rename(c->s, from, to) : -ENOENT;
	if (err && err != -ENOENT) {
		/*
		 * Users of the new allocation would not wait for it: let the
		 * host wait for it instead.
		 */
		sctx_drain(c);
	}
	if (err)
		sched_forget(c->s, from);
	ra_forget(&c->ra, from);
out:
	pthread_mutex_unlock(&c->mu);
}

/* --- lifecycle --------------------------------------------------------- */

/* Lock held.  Scheduling ends in c: what is pending completes first. */
static void sctx_off(struct streams_ctx *c, const char *why)
{
	if (c->state == SCTX_ON) {
		sctx_drain(c);
		sctx_teardown(c);
	}
	/* Nothing frees them once the pool is gone. */
	if (current_ctx() == c->ctx)
		sctx_dfr_flush(c, 0);
	if (c->state != SCTX_OFF) {
		log_info("streams: context %p: %s; its default-stream work "
			 "runs unscheduled from now on", (void *)c->ctx, why);
		c->offs++;
	}
	c->state = SCTX_OFF;
}

atomic_int streams_own_nonblocking;

int streams_alloc_ok(void)
{
	struct streams_ctx *c = sctx_current();
	int ok;

	if (!c)
		return 0;
	pthread_mutex_lock(&c->mu);
	ok = sctx_ready(c) && !c->capturing;
	pthread_mutex_unlock(&c->mu);
	return ok;
}

void streams_stream_created(CUstream s, unsigned flags)
{
	struct streams_ctx *c;
	struct sctx_blocking *b;

	if (flags & CU_STREAM_NON_BLOCKING) {
		/* Its work is ordered with nothing kmux sees (stream-alloc.h). */
		atomic_store(&streams_own_nonblocking, 1);
		return;
	}
	/* Work on it may write what was read ahead, in any context. */
	sctx_each(sctx_ra_stale, 0);
	c = sctx_current();
	if (!c)
		return;
	pthread_mutex_lock(&c->mu);
	if (c->state == SCTX_OFF)
		goto out;
	if (c->nblk == STREAMS_BLOCKING_MAX || blk_register(s, c)) {
		sctx_off(c, "the program created more blocking streams than "
			 "kmux bridges");
		goto out;
	}
	b = &c->blk[c->nblk++];
	*b = (struct sctx_blocking){ .s = s };
	/* Its first operation waits for the pool work before it. */
	b->joined = c->issued - 1;
out:
	pthread_mutex_unlock(&c->mu);
}

void streams_stream_destroying(CUstream s)
{
	struct streams_ctx *c = blk_lookup(s);
	struct sctx_blocking *b;

	if (!c)
		return;
	pthread_mutex_lock(&c->mu);
	b = sctx_blk_find(c, s);
	if (b) {
		/* Its work still runs after the destroy: the pool follows. */
		sctx_blk_flush(c);
		blk_unregister(s);
		if (b->done)
			REAL(cuEventDestroy_v2)(b->done);
		*b = c->blk[--c->nblk];
	}
	pthread_mutex_unlock(&c->mu);
}

static struct streams_ctx *sctx_of_stream(CUstream s)
{
	CUcontext ctx = NULL;

	if (streams_is_default(s))
		return sctx_current();
	if (!REAL(cuStreamGetCtx) ||
	    REAL(cuStreamGetCtx)(s, &ctx) != CUDA_SUCCESS || !ctx)
		return NULL;
	return sctx_get(ctx);
}

void streams_capture_begin(CUstream s, int per_thread)
{
	struct streams_ctx *c = sctx_of_stream(s);

	(void)per_thread;
	if (!c)
		return;
	pthread_mutex_lock(&c->mu);
	c->capturing++;
	ra_invalidate(&c->ra);
	pthread_mutex_unlock(&c->mu);
}

int streams_capture_active(CUstream s, int per_thread)
{
	return stream_capturing(streams_default_handle(s, per_thread));
}

void streams_capture_end(CUstream s, int per_thread)
{
	struct streams_ctx *c = sctx_of_stream(s);

	(void)per_thread;
	if (!c)
		return;
	pthread_mutex_lock(&c->mu);
	if (c->capturing > 0)
		c->capturing--;
	pthread_mutex_unlock(&c->mu);
}

/* Lock held.  The pool goes; the context may come back as a new one. */
static void sctx_reset(struct streams_ctx *c, int forget_off)
{
	/*
	 * Called before the context goes: free for real while it is alive
	 * (a primary release need not be the last one); from another
	 * context, leave them to the driver.
	 */
	if (current_ctx() == c->ctx)
		sctx_dfr_flush(c, 1);
	else
		sctx_dfr_release(c, 0);
	if (c->state == SCTX_ON) {
		sctx_drain(c);
		sctx_teardown(c);
		c->state = SCTX_NEW;
	}
	if (forget_off) {
		c->state = SCTX_NEW;
		c->capturing = 0;
		/* Its streams die with it. */
		sctx_blk_clear(c);
	}
}

void streams_ctx_gone(CUcontext ctx)
{
	struct streams_ctx *c = ctx ? sctx_find(ctx) : NULL;

	if (!c)
		return;
	pthread_mutex_lock(&c->mu);
	sctx_reset(c, 1);
	pthread_mutex_unlock(&c->mu);
}

void streams_primary_retained(CUdevice dev, CUcontext ctx)
{
	if (dev >= 0 && dev < STREAMS_PRIMARY_MAX)
		atomic_store(&streams_primary[dev], ctx);
}

CUcontext streams_primary_ctx(CUdevice dev)
{
	if (dev < 0 || dev >= STREAMS_PRIMARY_MAX)
		return NULL;
	return atomic_load(&streams_primary[dev]);
}

void streams_primary_gone(CUdevice dev, int reset)
{
	CUcontext ctx = streams_primary_ctx(dev);
	struct streams_ctx *c = ctx ? sctx_find(ctx) : NULL;

	if (!c)
		return;
	/*
	 * A release may not be the last one, so a context switched off stays
	 * off; the pool goes either way (the last release destroys it).
	 */
	pthread_mutex_lock(&c->mu);
	sctx_reset(c, reset);
	pthread_mutex_unlock(&c->mu);
}

/* --- statistics -------------------------------------------------------- */

static void stats_add(struct sched_stats *a, const struct sched_stats *b)
{
	a->ops += b->ops;
	a->barriers += b->barriers;
	a->joins += b->joins;
	a->degraded += b->degraded;
	a->deps += b->deps;
	a->deps_same += b->deps_same;
	a->deps_done += b->deps_done;
	a->waits_issued += b->waits_issued;
	a->waits_pruned += b->waits_pruned;
	a->over_waits += b->over_waits;
	a->events_after += b->events_after;
	a->events_lazy += b->events_lazy;
	a->hot_cleared += b->hot_cleared;
	a->reader_collapses += b->reader_collapses;
	a->host_waits += b->host_waits;
	a->host_implied += b->host_implied;
	a->host_idle += b->host_idle;
	a->kept_up += b->kept_up;
	a->narrow += b->narrow;
	a->allocs += b->allocs;
}

void streams_get_totals(struct streams_totals *t)
{
	struct sched_stats st;
	struct streams_ctx *c;

	memset(t, 0, sizeof(*t));
	for (c = atomic_load_explicit(&streams_list, memory_order_acquire); c;
	     c = c->next) {
		/* At exit another thread may be stuck holding it: skip. */
		if (pthread_mutex_trylock(&c->mu))
			continue;
		t->contexts += c->had_pool;
		if (c->s) {
			sched_get_stats(c->s, &st);
			stats_add(&t->st, &st);
		}
		stats_add(&t->st, &c->retired);
		t->off += c->offs;
		t->bridged += c->bridged;
		t->blk_joins += c->blk_joins;
		t->blk_barriers += c->blk_barriers;
		t->failures += c->failures;
		t->probe_checks += c->probe_checks;
		t->probe_drained += c->probe_drained;
		t->dfr_count += c->dfr_count;
		t->dfr_idle += c->dfr_idle;
		t->dfr_short += c->dfr_short;
		t->pauses += c->pauses;
		t->paused_ops += c->paused_ops;
		t->pt_ops += c->pt_ops;
		t->pt_stretches += c->pt_stretches;
		t->pt_unread += c->pt_unread;
		t->ra_queued += c->ra.queued;
		t->ra_served += c->ra.served;
		t->ra_dropped += c->ra.dropped;
		t->pace_epochs += c->pace.epochs;
		t->pace_inline += c->pace.inline_epochs;
		t->pace_spread_kinds += c->pace.kinds_spread;
		t->pace_inline_kinds += c->pace.kinds_inline;
		t->pace_varied_kinds += c->pace.kinds_varied;
		t->kd_kinds += c->kd_kinds;
		t->kd_timed += c->kd_timed;
		if (c->kd) {
			t->kd_kinds += c->kd->kinds;
			t->kd_timed += c->kd->timed;
		}
		pthread_mutex_unlock(&c->mu);
	}
}

/* For the trace's exit line (trace.h). */
static int streams_trace_fields(char *buf, size_t len)
{
	struct streams_totals t;
	int n;

	streams_get_totals(&t);
	n = snprintf(buf, len, ",\"streams\":%d,\"sched_ops\":%llu,"
		     "\"sched_barriers\":%llu,\"bridged\":%llu,"
		     "\"waits_issued\":%llu,\"waits_pruned\":%llu",
		     kmux_streams, (unsigned long long)t.st.ops,
		     (unsigned long long)t.st.barriers,
		     (unsigned long long)t.bridged,
		     (unsigned long long)t.st.waits_issued,
		     (unsigned long long)t.st.waits_pruned);
	return n < 0 ? 0 : (size_t)n >= len ? 0 : n;
}

/* Pointer tables (ptrtab.h), when the program uploaded any. */
static void streams_report_tables(void)
{
	uint64_t tables, refs, opaque;

	if (!ptrtab_any())
		return;
	ptrtab_counts(&tables, &refs, &opaque);
	log_info("streams: pid %d: pointer tables %llu (%llu opaque; the "
		 "others reach %llu allocations)%s",
		 (int)getpid(), (unsigned long long)tables,
		 (unsigned long long)opaque, (unsigned long long)refs,
		 ptrtab_lost() ? "; one could not be kept: every kernel "
				 "is a barrier since" : "");
}

static void streams_report(void)
{
	struct streams_totals t;

	if (kmux_log_level < KMUX_LOG_INFO)
		return;
	streams_get_totals(&t);
	/* Processes of the command that never used CUDA have nothing to say. */
	if (!t.contexts && !t.off)
		return;
	log_info("streams: pid %d: %d streams in %d context(s), %d off; "
		 "%llu ops, %llu barriers (%llu degraded), %llu joins, "
		 "%llu bridged; blocking streams: %llu joins, %llu barriers; "
		 "waits issued %llu, pruned %llu; events after %llu, lazy "
		 "%llu, hot marks dropped %llu; host waits %llu (implied %llu, idle streams skipped "
		 "%llu); failures %llu; GPU idle at %llu of %llu checks, "
		 "%llu ops placed as keeping up, %llu passed through in %llu "
		 "stretches (%llu launches unread); spreading checked over %llu epochs (%llu in line): "
		 "%llu kinds kept spread, %llu in line, %llu varied, %llu ops "
		 "placed in line; durations learned for %llu kernel kinds "
		 "(%llu launches timed); "
		 "frees deferred %llu (freed "
		 "at idle syncs %llu times, after a drain %llu); paused %llu "
		 "times (%llu ops as submitted); read ahead %llu, reads "
		 "served %llu, given up %llu",
		 (int)getpid(), kmux_streams, t.contexts, t.off,
		 (unsigned long long)t.st.ops,
		 (unsigned long long)t.st.barriers,
		 (unsigned long long)t.st.degraded,
		 (unsigned long long)t.st.joins,
		 (unsigned long long)t.bridged,
		 (unsigned long long)t.blk_joins,
		 (unsigned long long)t.blk_barriers,
		 (unsigned long long)t.st.waits_issued,
		 (unsigned long long)t.st.waits_pruned,
		 (unsigned long long)t.st.events_after,
		 (unsigned long long)t.st.events_lazy,
		 (unsigned long long)t.st.hot_cleared,
		 (unsigned long long)t.st.host_waits,
		 (unsigned long long)t.st.host_implied,
		 (unsigned long long)t.st.host_idle,
		 (unsigned long long)t.failures,
		 (unsigned long long)t.probe_drained,
		 (unsigned long long)t.probe_checks,
		 (unsigned long long)t.st.kept_up,
		 (unsigned long long)t.pt_ops,
		 (unsigned long long)t.pt_stretches,
		 (unsigned long long)t.pt_unread,
		 (unsigned long long)t.pace_epochs,
		 (unsigned long long)t.pace_inline,
		 (unsigned long long)t.pace_spread_kinds,
		 (unsigned long long)t.pace_inline_kinds,
		 (unsigned long long)t.pace_varied_kinds,
		 (unsigned long long)t.st.narrow,
		 (unsigned long long)t.kd_kinds,
		 (unsigned long long)t.kd_timed,
		 (unsigned long long)t.dfr_count,
		 (unsigned long long)t.dfr_idle,
		 (unsigned long long)t.dfr_short,
		 (unsigned long long)t.pauses,
		 (unsigned long long)t.paused_ops,
		 (unsigned long long)t.ra_queued,
		 (unsigned long long)t.ra_served,
		 (unsigned long long)t.ra_dropped);
	streams_report_tables();
	salloc_report();
	ptxtab_report();
}

void streams_atfork_child(void)
{
	/* The parent's pools are not the child's; their memory is leaked. */
	atomic_store(&streams_list, NULL);
	pthread_mutex_init(&streams_list_mu, NULL);
	tls_sctx = NULL;
	for (int i = 0; i < STREAMS_PRIMARY_MAX; i++)
		atomic_store(&streams_primary[i], NULL);
	for (int i = 0; i < STREAMS_BLOCKING_REG; i++) {
		atomic_store(&streams_blk_stream[i], NULL);
		atomic_store(&streams_blk_ctx[i], NULL);
	}
	atomic_store(&streams_nblocking, 0);
	atomic_store(&streams_own_nonblocking, 0);
	atomic_store(&streams_nsched, 0);
}
