/*
 * mm.c - the memory manager: managed objects, their backing, eviction and
 * restore; see mm.h and docs/design-memory.md.
 *
 * An object is one cuMemAlloc the program made: a reserved range of
 * `span` bytes (its size rounded up to the device's granularity) that is
 * RESERVED (no physical memory), RESIDENT (one cuMemCreate handle mapped
 * over the whole span) or EVICTED (its bytes in pinned host memory, the
 * range unmapped).  The range never moves, so every address the program
 * holds stays valid.
 *
 * One mutex guards the objects.  Under evict it is held from mm_op_begin()
 * until mm_op_end(), across the submission: otherwise another thread could
 * evict an object between its restore and the operation that needs it.
 * Under lazy, backing is never undone before the free, so it is held only
 * while backing.
 *
 * Before an object is evicted or freed, the work that touched it must be
 * done.  Each object remembers the streams (as the program named them) its
 * operations were submitted to, up to MM_USERS: those are synchronized
 * (a default stream under the stream scheduler also waits for the pool
 * work that uses the object, streams_before_free()).  More streams, a
 * per-thread default stream (not nameable from another thread) or a
 * destroyed stream fall back to cuCtxSynchronize.
 *
 * Quiet (evict, the memory manager alone tracking): while no object is
 * evicted or unbacked, an operation has nothing to restore or back, so
 * most go to the driver undecoded (mm_skip_begin()).  The first
 * MM_QUIET_TRACK operations of every tick of the coarse clock (1-4 ms) are
 * still tracked, which keeps the LRU order and idle times current: all of
 * a slow program's, and a fast one's from a tick boundary that drifts
 * through its loop (a fixed one in N would see only one object of a loop
 * of N, the same one every time).  The streams of the skipped operations
 * are kept in one small set that every wait for an object's users also
 * synchronizes.  An eviction first ends the quiet state and waits for the
 * skipped operations already past their check to reach the driver
 * (mm_quiet_stop()), so none can be submitted over an object being
 * unmapped.
 *
 * Quota: under lazy, the quota (KMUX_MEM_QUOTA) is charged the span at the
 * allocation, so a first touch never exceeds it; under evict, the quota is
 * the budget of resident bytes and is charged at backing, given back at
 * eviction.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "alloc-table.h"
#include "log.h"
#include "mm.h"
#include "mm-host.h"
#include "trace.h"
#include "preload.h"
#include "quota.h"
#include "shrink.h"
#include "streams.h"
#include "suspend.h"
#include "thrash.h"

#define MM_BUCKETS 1024
#define MM_USERS 4
#define MM_MAX_DEVICES 64
/*
 * Evict mode: an object not touched for this long is idle, and may go
 * when kmuxd asks for budget back (mm_shrink).  Giving it up costs one
 * restore if it is touched again: ~10-20 ms for 512 MiB over PCIe, a few
 * percent of the second it sat idle; a shorter horizon would start to
 * evict objects between the requests of a working stage.
 */
#define MM_IDLE_MS 1000
/*
 * Quiet evict mode: the first this many operations after each tick of the
 * coarse clock are still tracked (a program slower than that, all of its).
 */
#define MM_QUIET_TRACK 32
/* Streams the skipped operations of the quiet state went to, at most. */
#define MM_QUIET_STREAMS 8
/* Not shrinking while the window detector asked to grow this recently. */
#define MM_SHRINK_CALM_MS 5000

enum mm_state { MM_RESERVED, MM_RESIDENT, MM_EVICTED };

struct mm_obj {
	uint64_t base, size, span, id;
	CUmemGenericAllocationHandle h;	/* RESIDENT */
	CUcontext ctx;			/* current at the allocation */
	void *host;			/* EVICTED: pinned copy */
	uint64_t host_size;		/* its buffer's real size */
	uint64_t last;			/* seq of the last operation */
	uint64_t touched_ms;		/* evict: when (coarse clock); 0 never */
	uint64_t win;			/* evict: thrash window last counted in */
	enum mm_state state;
	int dev;
	int pinned;
	int nusers, users_unknown;
	uint64_t users[MM_USERS];	/* stream_norm() values */
	struct mm_obj *hnext, *prev, *next;
};

int mm_on;
uint64_t mm_min = 2ULL << 20;

static pthread_mutex_t mm_mu = PTHREAD_MUTEX_INITIALIZER;
static struct mm_obj *mm_tab[MM_BUCKETS];
static struct mm_obj mm_list = { .prev = &mm_list, .next = &mm_list };
static _Atomic uint64_t mm_nobj;
static _Atomic uint64_t mm_res_bytes;
/*
 * Lazy mode's fast path: with no object still RESERVED, an operation has
 * nothing to back, so mm_op_begin() returns before the mutex and the
 * lookups (a training step launches hundreds of kernels; each would pay
 * them for nothing).  It then records no users, so from the first such
 * operation on a free waits for the whole context (mm_users_lost), as
 * cuMemFree itself does.
 */
static _Atomic uint64_t mm_unbacked;
static _Atomic uint64_t mm_fast_ops;
static _Atomic uint64_t mm_skip_ops;	/* of those, not even decoded */
/* Evict's quiet state (see the top of the file). */
static atomic_int mm_quiet;		/* written under mm_mu */
static atomic_int mm_quiet_inflight;	/* skipped, not yet returned */
static _Atomic uint64_t mm_quiet_n;	/* operations seen while quiet */
static _Atomic uint64_t mm_quiet_tick;	/* mm_coarse_ms() at the last tick */
static atomic_int mm_quiet_track;	/* left to track in this tick */
/* MM_QUIET_TRACK; tests set it (KMUX_DEBUG_QUIET_TRACK=0: skip all) */
static int mm_quiet_track_n = MM_QUIET_TRACK;
static _Atomic uint64_t mm_quiet_skips;	/* of those, skipped */
static _Atomic uint64_t mm_quiet_users[MM_QUIET_STREAMS];
static atomic_int mm_quiet_users_lost;	/* one of them was destroyed */
static atomic_int mm_users_lost;
static uint64_t mm_seq;
static struct mm_stats mm_st;
static size_t mm_gran[MM_MAX_DEVICES];
static unsigned mm_debug_host_fail, mm_host_allocs;
static int mm_debug_broken;	/* tests: never back anything */
/* tests: a skipped operation waits this long between its check and the
 * driver call, so that an eviction meets it there (mm_quiet_stop) */
static unsigned mm_debug_quiet_delay;
static int (*mm_prev_fields)(char *buf, size_t len);
static struct thrash mm_thrash;	/* mm_mu */
/* mm_thrash_reuse: more objects than it walks, once (mm_mu) */
#define MM_REUSE_SCAN_MAX 1024
static int mm_reuse_unknown;
static struct thrash_run mm_run;	/* mm_mu: evict, the whole run */
static atomic_bool mm_shrunk;		/* evict: mm_shrink gave budget back */
static uint64_t mm_first_ms;	/* mm_mu: evict, first operation's time
				 * (one that names a managed object) */

int (*mm_grow_budget)(uint64_t want, uint64_t *granted);
int (*mm_suspend_budget)(uint64_t want, uint64_t *granted);

/*
 * Load control (suspend.h): MM_SUSP_PENDING asks the next thread at an
 * operation boundary to suspend the task for mm_susp_want bytes; while
 * one does (MM_SUSP_ON) every other thread arriving at a boundary waits
 * on mm_susp_cv.  mm_susp_mu guards both; mm_susp is read without it
 * first (one relaxed load per operation).  Lock order: mm_susp_mu is
 * never held with mm_mu, nor across the wait for kmuxd.
 */
enum { MM_SUSP_NONE, MM_SUSP_PENDING, MM_SUSP_ON };
static pthread_mutex_t mm_susp_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t mm_susp_cv = PTHREAD_COND_INITIALIZER;
static atomic_int mm_susp;
static uint64_t mm_susp_want;		/* mm_susp_mu */
static struct suspend_asks mm_asks;	/* mm_mu */
static uint64_t mm_budget_max;		/* mm_mu: the largest budget held */

static unsigned mm_bucket(uint64_t base)
{
	return (unsigned)((base * 0x9E3779B97F4A7C15ULL) >> 54) % MM_BUCKETS;
}

static struct mm_obj *mm_find(uint64_t base)
{
	struct mm_obj *o;

	for (o = mm_tab[mm_bucket(base)]; o; o = o->hnext)
		if (o->base == base)
			return o;
	return NULL;
}

/*
 * The hull of every managed range ever linked (never narrowed: a filter,
 * not a set): an address outside it is in no managed object, so kmux need
 * not look it up for the memory manager.  Widened before mm_alloc()
 * returns the address, so any operation that can name it sees it.
 */
static _Atomic uint64_t mm_hull_lo = UINT64_MAX, mm_hull_hi;

void mm_span(uint64_t *lo, uint64_t *hi)
{
	*lo = atomic_load_explicit(&mm_hull_lo, memory_order_relaxed);
	*hi = atomic_load_explicit(&mm_hull_hi, memory_order_relaxed);
}

static void mm_link(struct mm_obj *o)
{
	unsigned b = mm_bucket(o->base);

	if (o->base < atomic_load_explicit(&mm_hull_lo, memory_order_relaxed))
		atomic_store_explicit(&mm_hull_lo, o->base,
				      memory_order_relaxed);
	if (o->base + o->span >
	    atomic_load_explicit(&mm_hull_hi, memory_order_relaxed))
		atomic_store_explicit(&mm_hull_hi, o->base + o->span,
				      memory_order_relaxed);

	o->hnext = mm_tab[b];
	mm_tab[b] = o;
	o->next = &mm_list;
	o->prev = mm_list.prev;
	mm_list.prev->next = o;
	mm_list.prev = o;
	atomic_fetch_add(&mm_nobj, 1);
}

static void mm_unlink(struct mm_obj *o)
{
	struct mm_obj **p;

	for (p = &mm_tab[mm_bucket(o->base)]; *p; p = &(*p)->hnext) {
		if (*p == o) {
			*p = o->hnext;
			break;
		}
	}
	o->prev->next = o->next;
	o->next->prev = o->prev;
	atomic_fetch_sub(&mm_nobj, 1);
}

int mm_parse_mode(const char *s)
{
	if (!s || !strcmp(s, "quota"))
		return MM_OFF;
	if (!strcmp(s, "lazy"))
		return MM_LAZY;
	if (!strcmp(s, "evict"))
		return MM_EVICT;
	return -EINVAL;
}

/* The totals after a change, for `kmux trace`'s memory-manager counter. */
static void mm_trace_totals(void)
{
	trace_mm(mm_st.resident, mm_st.evicted, mm_st.reserved, trace_now());
}

static int mm_trace_fields(char *buf, size_t len)
{
	struct mm_stats s;
	int n = 0, k;

	if (mm_prev_fields)
		n = mm_prev_fields(buf, len);
	if (n < 0 || (size_t)n >= len)
		return n;
	mm_get_stats(&s);
	k = snprintf(buf + n, len - (size_t)n,
		     ",\"mm_reserved\":%llu,\"mm_resident\":%llu,"
		     "\"mm_peak_resident\":%llu,\"mm_evicted\":%llu,"
		     "\"mm_evicts\":%llu,\"mm_evict_bytes\":%llu,"
		     "\"mm_restores\":%llu,\"mm_restore_bytes\":%llu,"
		     "\"mm_budget\":%llu,\"mm_budget_grows\":%llu",
		     (unsigned long long)s.reserved,
		     (unsigned long long)s.resident,
		     (unsigned long long)s.peak_resident,
		     (unsigned long long)s.evicted,
		     (unsigned long long)s.evicts,
		     (unsigned long long)s.evict_bytes,
		     (unsigned long long)s.restores,
		     (unsigned long long)s.restore_bytes,
		     (unsigned long long)s.budget,
		     (unsigned long long)s.grows);
	if (k < 0 || (size_t)k >= len - (size_t)n)
		return n;
	return n + k;
}

static void mm_report(void)
{
	struct mm_host_stats h;
	struct mm_stats s;
	char grew[160] = "", ratio[160] = "", fast[128] = "", shrank[128] = "";

	mm_get_stats(&s);
	pthread_mutex_lock(&mm_mu);
	mm_host_get_stats(&h);
	pthread_mutex_unlock(&mm_mu);
	if (mm_on == MM_EVICT && s.budget)
		snprintf(grew, sizeof(grew), "; thrashing in %llu of %llu "
			 "windows; budget grew %llu times (of %llu asks) to "
			 "%llu bytes", (unsigned long long)s.thrashing,
			 (unsigned long long)s.thrash_windows,
			 (unsigned long long)s.grows,
			 (unsigned long long)s.grow_asks,
			 (unsigned long long)s.budget);
	/* The whole run's ratio (thrash.h, THRASH_RUN_DIV): 1/N, N rounded
	 * down, so "1/64" may be a little under 1/64 and not thrash. */
	if (mm_on == MM_EVICT && s.run_restored)
		snprintf(ratio, sizeof(ratio), "; restored %llu of %llu "
			 "touched bytes (1/%llu): %s",
			 (unsigned long long)s.run_restored,
			 (unsigned long long)s.run_touched,
			 (unsigned long long)(s.run_touched / s.run_restored),
			 s.run_thrashed ? "thrashed" : "did not thrash");
	else if (mm_on == MM_EVICT)
		snprintf(ratio, sizeof(ratio), "; restored 0 of %llu touched "
			 "bytes (none): did not thrash",
			 (unsigned long long)s.run_touched);
	if (mm_on == MM_EVICT && s.shrinks)
		snprintf(shrank, sizeof(shrank), "; budget shrank %llu times "
			 "to %llu bytes", (unsigned long long)s.shrinks,
			 (unsigned long long)s.shrunk_to);
	if (mm_on == MM_EVICT && s.suspends)
		snprintf(shrank + strlen(shrank), sizeof(shrank) -
			 strlen(shrank), "; suspended %llu times",
			 (unsigned long long)s.suspends);
	if (mm_on == MM_LAZY)
		snprintf(fast, sizeof(fast), "; fast path: %llu operations "
			 "(%llu not decoded), %llu objects unbacked now",
			 (unsigned long long)s.fast_ops,
			 (unsigned long long)s.skip_ops,
			 (unsigned long long)s.unbacked);
	else
		snprintf(fast, sizeof(fast), "; quiet: %llu operations, %llu "
			 "not decoded", (unsigned long long)s.quiet_ops,
			 (unsigned long long)s.quiet_skips);
	log_info("memory: pid %d: %s; %llu objects now, %llu bytes reserved, "
		 "%llu resident (peak %llu), %llu evicted; %llu backed "
		 "(%llu bytes), %llu evictions (%llu bytes), %llu restores "
		 "(%llu bytes), %llu evictions abandoned, %llu backing "
		 "failures, %llu pinned; largest object %llu bytes; %llu "
		 "daemon requests freed %llu bytes%s%s%s%s",
		 (int)getpid(), mm_on == MM_EVICT ? "evict" : "lazy",
		 (unsigned long long)s.objects, (unsigned long long)s.reserved,
		 (unsigned long long)s.resident,
		 (unsigned long long)s.peak_resident,
		 (unsigned long long)s.evicted, (unsigned long long)s.backs,
		 (unsigned long long)s.back_bytes,
		 (unsigned long long)s.evicts,
		 (unsigned long long)s.evict_bytes,
		 (unsigned long long)s.restores,
		 (unsigned long long)s.restore_bytes,
		 (unsigned long long)s.evict_failed,
		 (unsigned long long)s.back_failed,
		 (unsigned long long)s.pinned,
		 (unsigned long long)s.largest,
		 (unsigned long long)s.reclaims,
		 (unsigned long long)s.reclaim_bytes, grew, shrank, ratio,
		 fast);
	if (h.allocs || h.reuses)
		log_info("memory: pid %d: pinned host buffers: %llu allocated, "
			 "%llu reused, %llu freed, %llu bytes kept, peak %llu "
			 "bytes pinned", (int)getpid(),
			 (unsigned long long)h.allocs,
			 (unsigned long long)h.reuses,
			 (unsigned long long)h.frees,
			 (unsigned long long)h.kept,
			 (unsigned long long)h.peak_out);
}

int mm_init(const char *mode, const char *min, const char *budget)
{
	const char *dbg = getenv("KMUX_DEBUG_MM_HOST_FAIL");
	int m = mm_parse_mode(mode && *mode ? mode : NULL);
	uint64_t v;

	if (m < 0) {
		log_warn("KMUX_MEMORY=%s is not quota, lazy or evict; memory "
			 "is not managed", mode);
		return -EINVAL;
	}
	if (m == MM_OFF)
		return 0;
	if (min && *min) {
		if (quota_parse(min, &v) || v == 0) {
			log_warn("KMUX_LAZY_MIN=%s is not a byte count > 0; "
				 "memory is not managed", min);
			return -EINVAL;
		}
		mm_min = v;
	}
	if (m == MM_EVICT && budget && *budget) {
		if (quota_parse(budget, &v)) {
			log_warn("KMUX_MEM_BUDGET=%s is not a byte count; "
				 "memory is not managed", budget);
			return -EINVAL;
		}
		/* The budget is a quota on resident bytes. */
		if (!quota_on || v < quota_global.limit)
			quota_global.limit = v;
		quota_on = 1;
	}
	if (dbg && *dbg)
		mm_debug_host_fail = (unsigned)strtoul(dbg, NULL, 10);
	(void)mm_host_init(getenv("KMUX_MM_HOST_KEEP"));
	dbg = getenv("KMUX_DEBUG_MM_BROKEN");
	mm_debug_broken = dbg && *dbg && strcmp(dbg, "0") != 0;
	dbg = getenv("KMUX_DEBUG_QUIET_DELAY_US");
	mm_debug_quiet_delay = dbg ? (unsigned)strtoul(dbg, NULL, 10) : 0;
	dbg = getenv("KMUX_DEBUG_QUIET_TRACK");
	if (dbg && *dbg)
		mm_quiet_track_n = (int)strtol(dbg, NULL, 10);
	mm_on = m;
	mm_prev_fields = trace_exit_fields;
	trace_exit_fields = mm_trace_fields;
	atexit(mm_report);
	log_debug("memory: %s, objects from %llu bytes%s", m == MM_EVICT ?
		  "evict" : "lazy", (unsigned long long)mm_min,
		  quota_on ? ", with a budget" : "");
	return 0;
}

static int mm_device(void)
{
	CUdevice d;

	if (REAL(cuCtxGetDevice) && REAL(cuCtxGetDevice)(&d) == CUDA_SUCCESS)
		return (int)d;
	return -1;
}

static CUmemAllocationProp mm_prop(int dev)
{
	CUmemAllocationProp p;

	memset(&p, 0, sizeof(p));
	p.type = CU_MEM_ALLOCATION_TYPE_PINNED;
	p.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	p.location.id = dev;
	return p;
}

static CUresult mm_granularity(int dev, size_t *g)
{
	CUmemAllocationProp p = mm_prop(dev);
	CUresult r;

	if (dev < 0 || dev >= MM_MAX_DEVICES)
		return CUDA_ERROR_INVALID_DEVICE;
	if (mm_gran[dev]) {
		*g = mm_gran[dev];
		return CUDA_SUCCESS;
	}
	if (!REAL(cuMemGetAllocationGranularity))
		return CUDA_ERROR_NOT_SUPPORTED;
	r = REAL(cuMemGetAllocationGranularity)(g, &p,
			CU_MEM_ALLOC_GRANULARITY_MINIMUM);
	if (r == CUDA_SUCCESS && *g == 0)
		r = CUDA_ERROR_NOT_SUPPORTED;
	if (r == CUDA_SUCCESS)
		mm_gran[dev] = *g;
	return r;
}

static uint64_t mm_budget_max_get(void)
{
	uint64_t m, l = atomic_load(&quota_global.limit);

	pthread_mutex_lock(&mm_mu);
	m = mm_budget_max > l ? mm_budget_max : l;
	pthread_mutex_unlock(&mm_mu);
	return m;
}

static uint64_t mm_evict_lru(uint64_t give, uint64_t idle_before);

/*
 * Suspend the task (no lock held, in the thread at an operation
 * boundary; the others wait at theirs): evict every object that may go,
 * tell kmuxd what it still holds and wait until it grants want bytes of
 * budget.  Objects come back when touched, as after any eviction.  The
 * budget is never lowered here: on any failure (no daemon, the daemon
 * died, an old one) the task resumes with what it had, evicting.
 */
static void mm_suspend_now(uint64_t want)
{
	uint64_t before, hold, freed, got = 0;
	int e;

	pthread_mutex_lock(&mm_mu);
	freed = REAL(cuCtxPushCurrent_v2) && REAL(cuCtxPopCurrent_v2) ?
		mm_evict_lru(UINT64_MAX, UINT64_MAX) : 0;
	hold = quota_used(&quota_global);
	before = atomic_load(&quota_global.limit);
	mm_st.suspends++;
	pthread_mutex_unlock(&mm_mu);
	log_info("memory: no room to grow the budget of %llu bytes to %llu: "
		 "suspended (evicted %llu bytes, holds %llu); waiting for "
		 "kmuxd", (unsigned long long)before, (unsigned long long)want,
		 (unsigned long long)freed, (unsigned long long)hold);
	e = mm_suspend_budget(want, &got);
	pthread_mutex_lock(&mm_mu);
	if (!e && got) {
		/* What kmuxd committed: want, or past its wait bound the
		 * budget before (never below what is charged: all that
		 * could go went). */
		atomic_store(&quota_global.limit, got);
		if (got > mm_budget_max)
			mm_budget_max = got;
		if (got >= want)
			mm_st.grows++;
	} else if (e == -ENOTCONN && mm_budget_max > before) {
		/* The daemon is gone: nobody holds the room it lent; it
		 * resumes with the most it held (a daemon that comes back
		 * takes what it holds as committed). */
		atomic_store(&quota_global.limit, mm_budget_max);
	}
	pthread_mutex_unlock(&mm_mu);
	if (e)
		log_info("memory: resumed without kmuxd's grant (%s); the "
			 "budget is %llu bytes", strerror(-e),
			 (unsigned long long)atomic_load(&quota_global.limit));
	else
		log_info("memory: resumed with a budget of %llu bytes "
			 "(asked %llu)", (unsigned long long)got,
			 (unsigned long long)want);
}

/* An operation boundary while a suspension is asked for or under way. */
static void mm_susp_boundary(void)
{
	uint64_t want;

	pthread_mutex_lock(&mm_susp_mu);
	while (atomic_load(&mm_susp) == MM_SUSP_ON)
		pthread_cond_wait(&mm_susp_cv, &mm_susp_mu);
	if (atomic_load(&mm_susp) != MM_SUSP_PENDING) {
		pthread_mutex_unlock(&mm_susp_mu);
		return;
	}
	atomic_store(&mm_susp, MM_SUSP_ON);
	want = mm_susp_want;
	pthread_mutex_unlock(&mm_susp_mu);
	mm_suspend_now(want);
	pthread_mutex_lock(&mm_susp_mu);
	atomic_store(&mm_susp, MM_SUSP_NONE);
	pthread_cond_broadcast(&mm_susp_cv);
	pthread_mutex_unlock(&mm_susp_mu);
}

static inline void mm_susp_check(void)
{
	if (unlikely(atomic_load_explicit(&mm_susp, memory_order_relaxed)))
		mm_susp_boundary();
}

/* Ask for a suspension at the next boundary (any thread); one at a time. */
static void mm_susp_request(uint64_t want)
{
	if (!mm_suspend_budget)
		return;
	pthread_mutex_lock(&mm_susp_mu);
	if (atomic_load(&mm_susp) == MM_SUSP_NONE) {
		mm_susp_want = want;
		atomic_store(&mm_susp, MM_SUSP_PENDING);
	}
	pthread_mutex_unlock(&mm_susp_mu);
}

/* Suspend now, from this boundary (or wait for the suspension under way). */
static void mm_suspend_for(uint64_t want)
{
	mm_susp_request(want);
	mm_susp_boundary();
}

CUresult mm_alloc(CUdeviceptr *dptr, uint64_t size)
{
	int dev = mm_device();
	CUdeviceptr base;
	struct mm_obj *o;
	size_t g;
	uint64_t span;
	CUresult r;

	if (!dptr)
		return CUDA_ERROR_INVALID_VALUE;
	mm_susp_check();
	r = mm_granularity(dev, &g);
	if (r != CUDA_SUCCESS)
		return r;
	if (size > UINT64_MAX - g)
		return CUDA_ERROR_OUT_OF_MEMORY;
	span = (size + g - 1) / g * g;
	/* Under evict the budget is fixed; a lazy quota may still grow.  A
	 * budget given back to kmuxd (mm_shrink) may have gone below an
	 * object allocated later: ask for it back, at once or never. */
	if (quota_on && mm_on == MM_EVICT && span > quota_global.limit) {
		uint64_t got = 0;

		if (!atomic_load(&mm_shrunk) || !mm_grow_budget)
			return CUDA_ERROR_OUT_OF_MEMORY;
		/* Room now, or else wait for the budget it gave back
		 * (suspend.h) rather than fail. */
		if (mm_grow_budget(span, &got) &&
		    suspend_for_need(span, atomic_load(&quota_global.limit),
				     mm_budget_max_get()))
			mm_suspend_for(mm_budget_max_get());
		if (span > quota_global.limit)
			return CUDA_ERROR_OUT_OF_MEMORY;
	}
	if (quota_on && mm_on == MM_LAZY && quota_reserve(span))
		return CUDA_ERROR_OUT_OF_MEMORY;
	o = calloc(1, sizeof(*o));
	if (!o) {
		r = CUDA_ERROR_OUT_OF_MEMORY;
		goto err_quota;
	}
	r = REAL(cuMemAddressReserve)(&base, span, g, 0, 0);
	if (r != CUDA_SUCCESS)
		goto err_free;
	o->base = base;
	o->size = size;
	o->span = span;
	o->dev = dev;
	o->state = MM_RESERVED;
	if (REAL(cuCtxGetCurrent))
		REAL(cuCtxGetCurrent)(&o->ctx);
	pthread_mutex_lock(&mm_mu);
	mm_link(o);
	atomic_fetch_add(&mm_unbacked, 1);
	/* Nothing in flight can name it yet: no need to drain. */
	atomic_store(&mm_quiet, 0);
	mm_st.reserved += span;
	if (span > mm_st.largest)
		mm_st.largest = span;
	mm_trace_totals();
	pthread_mutex_unlock(&mm_mu);
	*dptr = base;
	return CUDA_SUCCESS;

err_free:
	free(o);
err_quota:
	if (quota_on && mm_on == MM_LAZY)
		quota_release(span);
	return r;
}

int mm_owns(uint64_t base)
{
	int yes;

	if (!atomic_load_explicit(&mm_nobj, memory_order_relaxed))
		return 0;
	pthread_mutex_lock(&mm_mu);
	yes = mm_find(base) != NULL;
	pthread_mutex_unlock(&mm_mu);
	return yes;
}

/* Map physical memory over o's range (mm_mu held). */
static CUresult mm_map(struct mm_obj *o)
{
	CUmemAllocationProp p = mm_prop(o->dev);
	CUmemAccessDesc ad;
	CUmemGenericAllocationHandle h;
	CUresult r;

	memset(&ad, 0, sizeof(ad));
	ad.location = p.location;
	ad.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
	r = REAL(cuMemCreate)(&h, o->span, &p, 0);
	if (r != CUDA_SUCCESS)
		return r;
	r = REAL(cuMemMap)(o->base, o->span, 0, h, 0);
	if (r != CUDA_SUCCESS)
		goto err_release;
	r = REAL(cuMemSetAccess)(o->base, o->span, &ad, 1);
	if (r != CUDA_SUCCESS)
		goto err_unmap;
	o->h = h;
	return CUDA_SUCCESS;

err_unmap:
	REAL(cuMemUnmap)(o->base, o->span);
err_release:
	REAL(cuMemRelease)(h);
	return r;
}

static void mm_unmap(struct mm_obj *o)
{
	CUresult r = REAL(cuMemUnmap)(o->base, o->span);

	if (r != CUDA_SUCCESS)
		log_warn("memory: cannot unmap 0x%llx+%llu: error %d",
			 (unsigned long long)o->base,
			 (unsigned long long)o->span, (int)r);
	REAL(cuMemRelease)(o->h);
	o->h = 0;
	mm_st.resident -= o->span;
	atomic_store_explicit(&mm_res_bytes, mm_st.resident,
			      memory_order_relaxed);
}

static void mm_now_resident(struct mm_obj *o)
{
	o->state = MM_RESIDENT;
	mm_st.resident += o->span;
	if (mm_st.resident > mm_st.peak_resident)
		mm_st.peak_resident = mm_st.resident;
	atomic_store_explicit(&mm_res_bytes, mm_st.resident,
			      memory_order_relaxed);
	mm_trace_totals();
}

static void mm_add_user(struct mm_obj *o, uint64_t s)
{
	for (int i = 0; i < o->nusers; i++)
		if (o->users[i] == s)
			return;
	if (o->nusers < MM_USERS)
		o->users[o->nusers++] = s;
	else
		o->users_unknown = 1;
}

/* Wait for the work that touched o (mm_mu held).  0 or a CUDA error. */
static CUresult mm_wait_users(struct mm_obj *o)
{
	CUresult r = CUDA_SUCCESS;

	if (o->users_unknown || atomic_load(&mm_users_lost) ||
	    atomic_load(&mm_quiet_users_lost))
		goto ctx;
	/* The quiet state's skipped operations may have touched o too. */
	for (int i = 0; i < MM_QUIET_STREAMS; i++) {
		uint64_t u = atomic_load(&mm_quiet_users[i]);

		if (u)
			mm_add_user(o, u);
	}
	if (o->users_unknown)
		goto ctx;
	for (int i = 0; i < o->nusers && r == CUDA_SUCCESS; i++) {
		uint64_t u = o->users[i];

		if (u == TRACE_STREAM_PER_THREAD)
			goto ctx;
		if (u == TRACE_STREAM_LEGACY) {
			if (kmux_streams)
				streams_before_free(o->id);
			r = REAL(cuStreamSynchronize)(CU_STREAM_LEGACY);
		} else {
			r = REAL(cuStreamSynchronize)((CUstream)(uintptr_t)u);
		}
	}
	if (r == CUDA_SUCCESS)
		goto done;
ctx:
	if (kmux_streams)
		streams_before_free(o->id);
	r = REAL(cuCtxSynchronize)();
	if (r != CUDA_SUCCESS)
		return r;
done:
	o->nusers = 0;
	o->users_unknown = 0;
	return CUDA_SUCCESS;
}

static int mm_host_alloc(CUcontext ctx, void **p, uint64_t size,
			 uint64_t *got)
{
	mm_host_allocs++;
	if (mm_debug_host_fail && mm_host_allocs % mm_debug_host_fail == 0)
		return -ENOMEM;
	return mm_host_take(ctx, size, p, got);
}

/* Objects' touch times: the coarse clock (a vDSO read, no syscall); its
 * few ms of resolution are nothing beside MM_IDLE_MS.  Never 0. */
static uint64_t mm_coarse_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000 + 1;
}

/*
 * Lazy mode's fast path (see mm_unbacked): nothing is left to back, so the
 * operation needs nothing from the memory manager.  Counts it and gives up
 * the users record.
 */
static inline bool mm_lazy_fast(void)
{
	if (mm_on != MM_LAZY || atomic_load(&mm_unbacked) ||
	    unlikely(mm_debug_broken))
		return false;
	if (!atomic_load_explicit(&mm_users_lost, memory_order_relaxed))
		atomic_store(&mm_users_lost, 1);
	atomic_fetch_add_explicit(&mm_fast_ops, 1, memory_order_relaxed);
	return true;
}

/* Lazy mode: the wrapper may skip the operation (mm_skip_begin). */
static int mm_lazy_skip(void)
{
	if (!atomic_load_explicit(&mm_nobj, memory_order_relaxed))
		return 1;
	if (!mm_lazy_fast())
		return 0;
	atomic_fetch_add_explicit(&mm_skip_ops, 1, memory_order_relaxed);
	return 1;
}

/* Evict's quiet state: whether it holds now (mm_mu held). */
static void mm_quiet_update(void)
{
	int q = mm_on == MM_EVICT && !mm_debug_broken && mm_st.evicted == 0 &&
		!atomic_load(&mm_unbacked) &&
		atomic_load_explicit(&mm_nobj, memory_order_relaxed);

	if (atomic_load_explicit(&mm_quiet, memory_order_relaxed) != q)
		atomic_store(&mm_quiet, q);
}

/*
 * Before an eviction (mm_mu held): end the quiet state, then wait for the
 * operations that were waved through before it ended to be submitted.
 * They hold no lock and wait for nothing of ours, only the driver call.
 */
static void mm_quiet_stop(void)
{
	atomic_store(&mm_quiet, 0);
	while (atomic_load(&mm_quiet_inflight))
		sched_yield();
}

/* Remember that a skipped operation went to stream u: 0 if no room. */
static int mm_quiet_user(uint64_t u)
{
	for (int i = 0; i < MM_QUIET_STREAMS; i++) {
		uint64_t v = atomic_load_explicit(&mm_quiet_users[i],
						  memory_order_relaxed);

		if (v == u)
			return 1;
		if (!v) {
			uint64_t zero = 0;

			if (atomic_compare_exchange_strong(&mm_quiet_users[i],
							   &zero, u) ||
			    zero == u)
				return 1;
		}
	}
	return 0;
}

/*
 * preload.h: whether the memory manager, tracking alone, lets the next
 * operation through undecoded.  Lazy: when nothing is left to back (the
 * fast path), the common case once a program's memory is in use.  Evict:
 * in the quiet state, past the first MM_QUIET_TRACK of the clock's tick,
 * on at most MM_QUIET_STREAMS streams.  Either saves the decoding, the
 * lookups and (evict) the mutex: bench/results/memory.md run 16.
 */
int mm_skip_begin(uint64_t user)
{
	uint64_t tick;

	if (mm_on == MM_LAZY)
		return mm_lazy_skip();
	if (!atomic_load_explicit(&mm_quiet, memory_order_relaxed))
		return 0;
	atomic_fetch_add_explicit(&mm_quiet_n, 1, memory_order_relaxed);
	/* Racy by design: a few more or fewer tracked in a tick is fine. */
	tick = mm_coarse_ms();
	if (atomic_load_explicit(&mm_quiet_tick, memory_order_relaxed) != tick) {
		atomic_store_explicit(&mm_quiet_tick, tick,
				      memory_order_relaxed);
		atomic_store_explicit(&mm_quiet_track, mm_quiet_track_n,
				      memory_order_relaxed);
	}
	if (atomic_load_explicit(&mm_quiet_track, memory_order_relaxed) > 0 &&
	    atomic_fetch_sub_explicit(&mm_quiet_track, 1,
				      memory_order_relaxed) > 0)
		return 0;
	if (!mm_quiet_user(user))
		return 0;
	/* Counted in, then checked again: mm_quiet_stop() either sees it or
	 * ended the state before this load (both sequentially consistent). */
	atomic_fetch_add(&mm_quiet_inflight, 1);
	if (!atomic_load(&mm_quiet)) {
		atomic_fetch_sub(&mm_quiet_inflight, 1);
		return 0;
	}
	atomic_fetch_add_explicit(&mm_quiet_skips, 1, memory_order_relaxed);
	if (unlikely(mm_debug_quiet_delay))
		usleep(mm_debug_quiet_delay);
	return 2;
}

void mm_skip_end(int ticket)
{
	if (ticket == 2)
		atomic_fetch_sub(&mm_quiet_inflight, 1);
}

/*
 * Copy o out and unmap it (mm_mu held).  Any failure leaves it resident
 * and intact: 0 or -errno.
 */
static int mm_evict(struct mm_obj *o)
{
	void *host = NULL;
	uint64_t got = 0;
	CUresult r;

	mm_quiet_stop();
	r = mm_wait_users(o);
	if (r != CUDA_SUCCESS)
		goto abandon;
	if (mm_host_alloc(o->ctx, &host, o->size, &got))
		goto abandon;
	r = REAL(cuMemcpyDtoH_v2)(host, o->base, o->size);
	if (r != CUDA_SUCCESS)
		goto abandon;
	mm_unmap(o);
	if (quota_on)
		quota_release(o->span);
	o->host = host;
	o->host_size = got;
	o->state = MM_EVICTED;
	mm_st.evicted += o->span;
	mm_st.evicts++;
	mm_st.evict_bytes += o->size;
	mm_trace_totals();
	return 0;

abandon:
	if (host)
		mm_host_give(o->ctx, host, got);
	mm_st.evict_failed++;
	log_info("memory: eviction of 0x%llx+%llu abandoned (%s)",
		 (unsigned long long)o->base, (unsigned long long)o->size,
		 r != CUDA_SUCCESS ? "a CUDA error" : "no pinned host memory");
	return -ENOMEM;
}

/*
 * The least recently used object that may be evicted before the operation
 * seq (resident, not pinned, not touched by seq itself, nor at or after
 * idle_before ms: UINT64_MAX for any time), or NULL (mm_mu held).
 */
static struct mm_obj *mm_lru_victim(uint64_t seq, uint64_t idle_before)
{
	struct mm_obj *o, *best = NULL;

	for (o = mm_list.next; o != &mm_list; o = o->next) {
		if (o->state != MM_RESIDENT || o->pinned || o->last >= seq ||
		    o->touched_ms >= idle_before)
			continue;
		if (!best || o->last < best->last)
			best = o;
	}
	return best;
}

/*
 * Evict the least recently used object not touched by the operation seq
 * (mm_mu held).  0 when one was evicted, -ENOSPC when none can be.  An
 * object whose eviction failed is not tried again for this operation.
 */
static int mm_evict_one(uint64_t seq)
{
	for (;;) {
		struct mm_obj *best = mm_lru_victim(seq, UINT64_MAX);

		if (!best)
			return -ENOSPC;
		if (mm_evict(best) == 0)
			return 0;
		best->last = seq;
	}
}

/* Make o resident for the operation seq (mm_mu held). */
static CUresult mm_back(struct mm_obj *o, uint64_t seq)
{
	int charge = quota_on && mm_on == MM_EVICT;
	CUresult r;

	if (o->state == MM_RESIDENT)
		return CUDA_SUCCESS;
	/* The budget is the limit here: evict rather than grow it. */
	while (charge && quota_try_reserve(&quota_global, o->span)) {
		if (mm_evict_one(seq)) {
			log_warn("memory: 0x%llx+%llu does not fit in the "
				 "budget beside the operation's other objects",
				 (unsigned long long)o->base,
				 (unsigned long long)o->size);
			mm_st.back_failed++;
			return CUDA_ERROR_OUT_OF_MEMORY;
		}
	}
	r = mm_map(o);
	if (r != CUDA_SUCCESS) {
		if (charge)
			quota_release(o->span);
		mm_st.back_failed++;
		log_warn("memory: cannot back 0x%llx+%llu: error %d",
			 (unsigned long long)o->base,
			 (unsigned long long)o->size, (int)r);
		return r;
	}
	if (o->state == MM_EVICTED) {
		r = REAL(cuMemcpyHtoD_v2)(o->base, o->host, o->size);
		if (r != CUDA_SUCCESS) {
			/* The copy stays in host memory; try again later. */
			REAL(cuMemUnmap)(o->base, o->span);
			REAL(cuMemRelease)(o->h);
			o->h = 0;
			if (charge)
				quota_release(o->span);
			mm_st.back_failed++;
			return r;
		}
		mm_host_give(o->ctx, o->host, o->host_size);
		o->host = NULL;
		mm_st.evicted -= o->span;
		mm_st.restores++;
		mm_st.restore_bytes += o->size;
	} else {
		mm_st.backs++;
		mm_st.back_bytes += o->span;
		atomic_fetch_sub(&mm_unbacked, 1);
	}
	mm_now_resident(o);
	return CUDA_SUCCESS;
}

void mm_set_id(uint64_t base, uint64_t id)
{
	struct mm_obj *o;

	pthread_mutex_lock(&mm_mu);
	o = mm_find(base);
	if (o) {
		o->id = id;
		/*
		 * Not in the allocation table: no launch would name it, so
		 * it is backed now and never evicted.
		 */
		if (!id) {
			o->pinned = 1;
			mm_st.pinned++;
			mm_back(o, ++mm_seq);
		}
	}
	pthread_mutex_unlock(&mm_mu);
}

int mm_reserve(uint64_t n)
{
	int err = 0;

	if (mm_on != MM_EVICT)
		return quota_reserve(n) ? -ENOSPC : 0;
	mm_susp_check();
	if (!quota_try_reserve(&quota_global, n))
		return 0;
	pthread_mutex_lock(&mm_mu);
	mm_seq++;
	while (quota_try_reserve(&quota_global, n)) {
		if (mm_evict_one(mm_seq + 1)) {
			err = -ENOSPC;
			break;
		}
	}
	pthread_mutex_unlock(&mm_mu);
	return err;
}

static void mm_touch(struct mm_obj *o, uint64_t seq, int pin, uint64_t user,
		     uint64_t now_ms)
{
	o->last = seq;
	o->touched_ms = now_ms;
	if (pin && !o->pinned) {
		o->pinned = 1;
		mm_st.pinned++;
	}
	mm_add_user(o, user);
}

static uint64_t mm_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/*
 * Evict mode under kmuxd (mm_mu held), before o is touched: at its first
 * touch in the thrash detector's open window, note its reuse distance
 * (thrash.h: the bytes of the objects touched since it was, itself
 * included), for the working set kmuxd learns.  A walk over
 * every object, at most once per object and window; past
 * MM_REUSE_SCAN_MAX objects it is not made, and the run's working set is
 * unknown (mm_learn_ws then falls back to all it backed).
 */
static void mm_thrash_reuse(struct mm_obj *o)
{
	uint64_t w = thrash_window_id(&mm_thrash), d;
	struct mm_obj *p;

	if (o->win == w)
		return;
	o->win = w;
	if (!o->last)
		return;		/* never touched: backed, not reused */
	if (atomic_load_explicit(&mm_nobj, memory_order_relaxed) >
	    MM_REUSE_SCAN_MAX) {
		mm_reuse_unknown = 1;
		return;
	}
	d = o->size;
	for (p = mm_list.next; p != &mm_list; p = p->next)
		if (p->last > o->last)
			d += p->size;
	thrash_note_reuse(&mm_thrash, o->size, d);
}

/*
 * Evict mode under kmuxd (mm_mu held): feed the thrash detector this
 * operation's touched and restored bytes.  Thrashing: ask, once the
 * operation is submitted and the mutex released (mm_op_end), for a budget
 * that holds every object backed so far (resident and evicted), so the
 * working set the task cycles through stays resident.
 */
static void mm_thrash_check(struct mm_op *op, uint64_t touched,
			    uint64_t restored)
{
	uint64_t budget = atomic_load(&quota_global.limit), want;

	if (!thrash_note(&mm_thrash, touched, restored, budget, mm_now_ms()))
		return;
	want = quota_used(&quota_global) + mm_st.evicted;
	if (want > budget)
		op->grow_to = want;
}

/*
 * Ask kmuxd for a budget of want bytes (no mutex held: the answer comes
 * at once, granted or refused, but it is a round trip to the daemon).
 */
static void mm_grow(uint64_t want)
{
	uint64_t before = atomic_load(&quota_global.limit), got = 0;
	bool suspend = false;
	int e;

	e = mm_grow_budget(want, &got);
	pthread_mutex_lock(&mm_mu);
	mm_st.grow_asks++;
	if (!e && got > before)
		mm_st.grows++;
	if (!e && got > mm_budget_max)
		mm_budget_max = got;
	/* Thrashed on through a window after a refusal: stop competing
	 * (suspend.h), at the next operation boundary. */
	if (e == -E2BIG)
		mm_asks.refused = 0;	/* never fits: suspending won't help */
	else
		suspend = suspend_after_ask(&mm_asks, !e && got >= want);
	pthread_mutex_unlock(&mm_mu);
	if (suspend)
		mm_susp_request(want);
	if (e)
		log_info("memory: thrashing (restores are most of what "
			 "operations touch); kmuxd did not grow the budget of "
			 "%llu bytes to %llu: %s; still evicting",
			 (unsigned long long)before, (unsigned long long)want,
			 strerror(-e));
	else
		log_info("memory: thrashing (restores are most of what "
			 "operations touch); kmuxd grew the budget from %llu "
			 "to %llu bytes (asked %llu)",
			 (unsigned long long)before, (unsigned long long)got,
			 (unsigned long long)want);
}

static CUresult mm_op_once(struct mm_op *op, const uint64_t *bases, int n,
			   int all, int pin, CUstream stream, int per_thread)
{
	uint64_t user = stream_norm(stream, per_thread), seq;
	struct mm_obj *o, *mine[MM_MAX_TOUCH];
	uint64_t touched = 0, need = 0, restored, backed, now = 0;
	int k = 0, grow;
	CUresult r = CUDA_SUCCESS;

	op->locked = 0;
	op->grow_to = 0;
	if (!atomic_load_explicit(&mm_nobj, memory_order_relaxed) ||
	    unlikely(mm_debug_broken))
		return CUDA_SUCCESS;
	/* Graph launches pin: the slow path counts them. */
	if (!pin && mm_lazy_fast())
		return CUDA_SUCCESS;
	/* Evict only: the lazy path pays no clock read. */
	if (mm_on == MM_EVICT)
		now = mm_coarse_ms();
	pthread_mutex_lock(&mm_mu);
	op->locked = 1;
	seq = ++mm_seq;
	if (now && !mm_first_ms)
		mm_first_ms = now;
	restored = mm_st.restore_bytes;
	grow = mm_on == MM_EVICT && mm_grow_budget && quota_on;
	/* Mark first: nothing this operation needs is an eviction victim. */
	if (all) {
		for (o = mm_list.next; o != &mm_list; o = o->next) {
			if (grow)
				mm_thrash_reuse(o);
			mm_touch(o, seq, pin, user, now);
			touched += o->size;
			need += o->span;
		}
		for (o = mm_list.next; o != &mm_list && !r; o = o->next)
			r = mm_back(o, seq);
	} else {
		for (int i = 0; i < n && k < MM_MAX_TOUCH; i++) {
			o = mm_find(bases[i]);
			if (o && o->last != seq) {
				if (grow)
					mm_thrash_reuse(o);
				mm_touch(o, seq, pin, user, now);
				mine[k++] = o;
				touched += o->size;
				need += o->span;
			}
		}
		for (int i = 0; i < k && !r; i++)
			r = mm_back(mine[i], seq);
	}
	if (mm_on != MM_EVICT) {
		pthread_mutex_unlock(&mm_mu);
		op->locked = 0;
		return r;
	}
	op->need = need;
	restored = mm_st.restore_bytes - restored;	/* by this operation */
	thrash_run_note(&mm_run, touched, restored);
	if (need > mm_st.op_need)
		mm_st.op_need = need;
	/* What a budget must hold for nothing to be evicted: all it is
	 * charged (managed objects resident, pass-through allocations) and
	 * all evicted, as the window detector asks for (mm_thrash_check).
	 * Sampled at operations, where backing happens. */
	backed = (quota_on ? quota_used(&quota_global) : mm_st.resident) +
		 mm_st.evicted;
	if (backed > mm_st.peak_backed)
		mm_st.peak_backed = backed;
	if (grow)
		mm_thrash_check(op, touched, restored);
	mm_quiet_update();
	return r;
}

CUresult mm_op_begin(struct mm_op *op, const uint64_t *bases, int n, int all,
		     int pin, CUstream stream, int per_thread)
{
	CUresult r;

	mm_susp_check();
	op->need = 0;
	/* Nothing managed named (mm_span() filtered): nothing to do. */
	if (!n && !all && !pin) {
		op->locked = 0;
		op->grow_to = 0;
		return CUDA_SUCCESS;
	}
	r = mm_op_once(op, bases, n, all, pin, stream, per_thread);
	/* A budget given back that this operation needs again: wait for
	 * it (suspend.h) rather than fail, then try once more. */
	if (r != CUDA_ERROR_OUT_OF_MEMORY || mm_on != MM_EVICT || !quota_on ||
	    !mm_suspend_budget || !atomic_load(&mm_shrunk) || !op->locked ||
	    !suspend_for_need(op->need, atomic_load(&quota_global.limit),
			      mm_budget_max))
		return r;
	op->locked = 0;
	op->grow_to = 0;
	pthread_mutex_unlock(&mm_mu);
	mm_suspend_for(mm_budget_max_get());
	return mm_op_once(op, bases, n, all, pin, stream, per_thread);
}

CUresult mm_op_begin_acc(struct mm_op *op, const struct access *acc, int n,
			 int all, int pin, CUstream stream, int per_thread)
{
	uint64_t bases[MM_MAX_TOUCH];

	if (n > MM_MAX_TOUCH) {
		n = 0;
		all = 1;
	}
	for (int i = 0; i < n; i++)
		bases[i] = acc[i].base;
	return mm_op_begin(op, bases, n, all, pin, stream, per_thread);
}

void mm_op_end(struct mm_op *op)
{
	if (op->locked) {
		op->locked = 0;
		pthread_mutex_unlock(&mm_mu);
	}
	if (op->grow_to) {
		mm_grow(op->grow_to);
		op->grow_to = 0;
	}
}

CUresult mm_free(uint64_t base)
{
	struct mm_obj *o;
	CUresult r;

	pthread_mutex_lock(&mm_mu);
	o = mm_find(base);
	if (!o) {
		pthread_mutex_unlock(&mm_mu);
		return CUDA_ERROR_INVALID_VALUE;
	}
	if (o->state == MM_RESIDENT) {
		r = mm_wait_users(o);
		if (r != CUDA_SUCCESS) {
			pthread_mutex_unlock(&mm_mu);
			return r;
		}
		mm_unmap(o);
		if (quota_on && mm_on == MM_EVICT)
			quota_release(o->span);
	} else if (o->state == MM_EVICTED) {
		mm_host_give(o->ctx, o->host, o->host_size);
		mm_st.evicted -= o->span;
	} else {
		atomic_fetch_sub(&mm_unbacked, 1);
	}
	r = REAL(cuMemAddressFree)(o->base, o->span);
	if (r != CUDA_SUCCESS)
		log_warn("memory: cannot free the range 0x%llx+%llu: error %d",
			 (unsigned long long)o->base,
			 (unsigned long long)o->span, (int)r);
	if (quota_on && mm_on == MM_LAZY)
		quota_release(o->span);
	mm_st.reserved -= o->span;
	if (o->pinned)
		mm_st.pinned--;
	mm_trace_totals();
	mm_unlink(o);
	mm_quiet_update();
	pthread_mutex_unlock(&mm_mu);
	free(o);
	return CUDA_SUCCESS;
}

/*
 * MEM_PRESSURE from kmuxd, on the helper thread: evict least recently
 * used objects until give bytes are free.  The thread has no context of
 * its own: each eviction runs in its object's.  Holding mm_mu, no
 * operation is between mm_op_begin() and mm_op_end(), so every resident
 * object that is not pinned may go.
 */
/*
 * Evict least recently used objects not touched at or after idle_before
 * until give bytes are free (mm_mu held, on the helper thread: each
 * eviction in its object's context).  Bytes freed.
 */
static uint64_t mm_evict_lru(uint64_t give, uint64_t idle_before)
{
	uint64_t freed = 0, seq = ++mm_seq;
	CUcontext old;

	while (freed < give) {
		struct mm_obj *best = mm_lru_victim(seq, idle_before);

		if (!best)
			break;
		if (best->ctx &&
		    REAL(cuCtxPushCurrent_v2)(best->ctx) != CUDA_SUCCESS) {
			best->last = seq;
			continue;
		}
		if (mm_evict(best) == 0)
			freed += best->span;
		else
			best->last = seq;	/* not again this time */
		if (best->ctx)
			REAL(cuCtxPopCurrent_v2)(&old);
	}
	return freed;
}

uint64_t mm_reclaim(uint64_t give)
{
	uint64_t freed;

	if (mm_on != MM_EVICT || !REAL(cuCtxPushCurrent_v2) ||
	    !REAL(cuCtxPopCurrent_v2))
		return 0;
	pthread_mutex_lock(&mm_mu);
	freed = mm_evict_lru(give, UINT64_MAX);
	mm_st.reclaims++;
	mm_st.reclaim_bytes += freed;
	pthread_mutex_unlock(&mm_mu);
	return freed;
}

/* The allocation granularity of the objects' device (mm_mu held). */
static uint64_t mm_any_gran(void)
{
	struct mm_obj *o = mm_list.next;

	if (o != &mm_list && o->dev >= 0 && o->dev < MM_MAX_DEVICES &&
	    mm_gran[o->dev])
		return mm_gran[o->dev];
	return 2u << 20;
}

/*
 * What kmuxd learns as this run's working set (ALLOC_UPDATE's thrash_ws,
 * mm_mu held or not: the fields are read apart).  A run that thrashed as a
 * whole needs all it backed.  A run that only asked to grow had windows
 * that thrashed, perhaps a transient (a warm-up that ran every model once,
 * a stage boundary): the working set its reuse distances say (thrash.h,
 * thrash_ws), at least what one operation needs; all it backed when
 * nothing was reused, or when it had too many objects to measure reuse.
 * Nothing else thrashed: 0, nothing to learn.
 */
static uint64_t mm_learn_ws(int run_thrashed)
{
	uint64_t ws = 0;

	if (mm_on != MM_EVICT)
		return 0;
	if (mm_thrash.asked && !run_thrashed && !mm_reuse_unknown)
		ws = thrash_ws(&mm_thrash);
	if ((mm_thrash.asked || run_thrashed) && !ws)
		ws = mm_st.peak_backed;
	if (ws && ws < mm_st.op_need)
		ws = mm_st.op_need;
	return (ws + (1 << 20) - 1) & ~(uint64_t)((1 << 20) - 1);
}

/*
 * kmuxd wants budget back (MEM_PRESSURE with PROTO_PRESSURE_F_BUDGET): the
 * rule is shrink.h's.  The floor's inputs are sampled here, under mm_mu:
 * the objects touched within MM_IDLE_MS (and pinned ones, which never
 * go), the largest operation so far, the pass-through bytes (what the
 * quota is charged beyond the resident objects).  Idle objects are then
 * evicted until what is charged fits the new budget; if some cannot go,
 * the budget stays above what is charged.
 */
uint64_t mm_shrink(uint64_t give, uint64_t *new_budget)
{
	uint64_t now = mm_coarse_ms(), limit, used, gran, nb, cutoff;
	struct shrink_in in = { .give = give };
	struct mm_obj *o;

	*new_budget = 0;
	if (mm_on != MM_EVICT || !quota_on || !REAL(cuCtxPushCurrent_v2) ||
	    !REAL(cuCtxPopCurrent_v2))
		return 0;
	cutoff = now > MM_IDLE_MS ? now - MM_IDLE_MS : 0;
	pthread_mutex_lock(&mm_mu);
	limit = atomic_load(&quota_global.limit);
	used = quota_used(&quota_global);
	gran = mm_any_gran();
	if (limit > mm_budget_max)
		mm_budget_max = limit;
	/* Suspended (or about to be): it holds only its floor already. */
	nb = 0;
	if (atomic_load(&mm_susp) != MM_SUSP_NONE)
		goto out;
	for (o = mm_list.next; o != &mm_list; o = o->next)
		if ((o->touched_ms && o->touched_ms >= cutoff) ||
		    (o->pinned && o->state == MM_RESIDENT))
			in.recent += o->span;
		else if (!o->touched_ms)
			in.untouched += o->span;
	in.young = !mm_first_ms || now - mm_first_ms < MM_IDLE_MS;
	in.limit = limit;
	in.op_need = mm_st.op_need;
	in.pass = used > mm_st.resident ? used - mm_st.resident : 0;
	in.gran = gran;
	in.thrashing = (mm_thrash.asked &&
			mm_now_ms() - mm_thrash.last_ask_ms < MM_SHRINK_CALM_MS) ||
		       thrash_run_verdict(&mm_run);
	nb = shrink_plan(&in);
	if (!nb)
		goto out;
	if (used > nb)
		mm_evict_lru(used - nb, cutoff);
	used = quota_used(&quota_global);
	if (used > nb)
		nb = (used + gran - 1) / gran * gran;
	if (nb >= limit) {
		nb = 0;
		goto out;
	}
	atomic_store(&quota_global.limit, nb);
	mm_st.shrinks++;
	mm_st.shrunk_to = nb;
	atomic_store(&mm_shrunk, true);
	*new_budget = nb;
out:
	pthread_mutex_unlock(&mm_mu);
	return nb ? limit - nb : 0;
}

void mm_ctx_gone(CUcontext ctx)
{
	if (!mm_on)
		return;
	pthread_mutex_lock(&mm_mu);
	mm_host_ctx_gone(ctx);
	pthread_mutex_unlock(&mm_mu);
}

void mm_stream_gone(CUstream s)
{
	uint64_t u = (uint64_t)(uintptr_t)s;
	struct mm_obj *o;

	if (!s || !atomic_load_explicit(&mm_nobj, memory_order_relaxed))
		return;
	/* A skipped operation may have gone there: its handle cannot be
	 * waited on any more, so every wait becomes the context's. */
	for (int i = 0; i < MM_QUIET_STREAMS; i++)
		if (atomic_load(&mm_quiet_users[i]) == u)
			atomic_store(&mm_quiet_users_lost, 1);
	pthread_mutex_lock(&mm_mu);
	for (o = mm_list.next; o != &mm_list; o = o->next)
		for (int i = 0; i < o->nusers; i++)
			if (o->users[i] == u)
				o->users_unknown = 1;
	pthread_mutex_unlock(&mm_mu);
}

uint64_t mm_resident(void)
{
	return atomic_load_explicit(&mm_res_bytes, memory_order_relaxed);
}

void mm_get_stats(struct mm_stats *st)
{
	/*
	 * At exit another thread may still hold the lock (evict holds it
	 * across a submission): a possibly torn snapshot beats a hang.
	 */
	int locked = pthread_mutex_trylock(&mm_mu) == 0;

	*st = mm_st;
	st->objects = atomic_load_explicit(&mm_nobj, memory_order_relaxed);
	st->thrash_windows = mm_thrash.windows;
	st->thrashing = mm_thrash.thrashing;
	st->run_touched = mm_run.touched;
	st->run_restored = mm_run.restored;
	st->fast_ops = atomic_load_explicit(&mm_fast_ops, memory_order_relaxed);
	st->skip_ops = atomic_load_explicit(&mm_skip_ops, memory_order_relaxed);
	st->quiet_ops = atomic_load_explicit(&mm_quiet_n, memory_order_relaxed);
	st->quiet_skips = atomic_load_explicit(&mm_quiet_skips,
					       memory_order_relaxed);
	st->unbacked = atomic_load_explicit(&mm_unbacked, memory_order_relaxed);
	st->run_thrashed = mm_on == MM_EVICT && thrash_run_verdict(&mm_run);
	st->thrash_ws = mm_learn_ws(st->run_thrashed);
	st->budget = mm_on == MM_EVICT && quota_on ?
		     atomic_load(&quota_global.limit) : 0;
	if (locked)
		pthread_mutex_unlock(&mm_mu);
}

void mm_atfork_prepare(void)
{
	pthread_mutex_lock(&mm_mu);
}

void mm_atfork_parent(void)
{
	pthread_mutex_unlock(&mm_mu);
}

void mm_atfork_child(void)
{
	/* Operations other threads were waving through are not the child's:
	 * an eviction there must not wait for them. */
	atomic_store(&mm_quiet_inflight, 0);
	pthread_mutex_unlock(&mm_mu);
}
