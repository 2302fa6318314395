/*
 * stream-alloc.c - kmux's memory pools for stream-ordered allocation under
 * the scheduler (stream-alloc.h): one pool per device, one idle stream per
 * context, the bytes each pool keeps, trimming, and the counters.  The
 * wrappers' side (which allocation goes where, the ordered free) is in
 * wrap-mem.c.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "mm.h"
#include "preload.h"
#include "quota.h"
#include "stream-alloc.h"
#include "streams.h"

#define SALLOC_DEVS 64
#define SALLOC_CTXS 32

int salloc_on;

struct salloc_dev {
	int state;		/* 0 not tried, 1 pool ready, -1 unusable */
	CUmemoryPool pool;
	uint64_t kept;		/* freed bytes the pool keeps (still charged) */
};

struct salloc_ctx {
	CUcontext ctx;		/* NULL: free slot */
	CUstream s;		/* kmux's idle stream there */
};

static pthread_mutex_t salloc_mu = PTHREAD_MUTEX_INITIALIZER;
static struct salloc_dev salloc_devs[SALLOC_DEVS];
static struct salloc_ctx salloc_ctxs[SALLOC_CTXS];
static uint64_t salloc_keep = UINT64_MAX;

static _Atomic uint64_t st_allocs, st_ordered, st_sync, st_fallbacks,
			st_trims;

void salloc_init(const char *on, const char *keep)
{
	uint64_t v;

	if (!on || !*on || !strcmp(on, "0"))
		return;
	if (strcmp(on, "1")) {
		log_warn("KMUX_STREAM_ALLOC=%s: not 0 or 1; off", on);
		return;
	}
	if (!kmux_streams) {
		log_warn("KMUX_STREAM_ALLOC needs KMUX_STREAMS; off");
		return;
	}
	if (mm_on) {
		log_warn("KMUX_STREAM_ALLOC does not go with KMUX_MEMORY "
			 "lazy or evict; off");
		return;
	}
	if (keep && *keep) {
		if (quota_parse(keep, &v))
			log_warn("KMUX_STREAM_ALLOC_KEEP=%s: not a size; the "
				 "pool keeps all freed memory", keep);
		else
			salloc_keep = v;
	}
	salloc_on = 1;
}

/* Lock held.  The device's pool, created on first use. */
static struct salloc_dev *salloc_dev_get(int dev)
{
	CUmemPoolProps props = {
		.allocType = CU_MEM_ALLOCATION_TYPE_PINNED,
		.handleTypes = CU_MEM_HANDLE_TYPE_NONE,
		.location = { .type = CU_MEM_LOCATION_TYPE_DEVICE, .id = dev },
	};
	struct salloc_dev *d;
	uint64_t keep = salloc_keep;
	int sup = 0;
	CUresult r;

	if (dev < 0 || dev >= SALLOC_DEVS)
		return NULL;
	d = &salloc_devs[dev];
	if (d->state)
		return d->state > 0 ? d : NULL;
	d->state = -1;
	if (!REAL(cuDeviceGetAttribute) || !REAL(cuMemPoolCreate) ||
	    !REAL(cuMemPoolSetAttribute) || !REAL(cuMemPoolTrimTo) ||
	    !REAL(cuMemAllocFromPoolAsync) || !REAL(cuMemFreeAsync)) {
		log_info("stream-alloc: the driver has no memory pools; "
			 "cuMemAlloc stays synchronous");
		return NULL;
	}
	r = REAL(cuDeviceGetAttribute)(&sup,
			CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED, dev);
	if (r != CUDA_SUCCESS || !sup) {
		log_info("stream-alloc: device %d does not support memory "
			 "pools; cuMemAlloc stays synchronous there", dev);
		return NULL;
	}
	r = REAL(cuMemPoolCreate)(&d->pool, &props);
	if (r != CUDA_SUCCESS) {
		log_info("stream-alloc: cannot create a memory pool on device "
			 "%d (error %d); cuMemAlloc stays synchronous there",
			 dev, (int)r);
		return NULL;
	}
	/* Freed memory is kept for reuse, not given back at each sync. */
	r = REAL(cuMemPoolSetAttribute)(d->pool,
			CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &keep);
	if (r != CUDA_SUCCESS)
		log_info("stream-alloc: device %d: cannot raise the pool's "
			 "release threshold (error %d)", dev, (int)r);
	d->state = 1;
	return d;
}

/* Lock held.  kmux's idle stream in ctx (the current context). */
static CUstream salloc_stream_get(CUcontext ctx)
{
	struct salloc_ctx *fr = NULL;

	for (int i = 0; i < SALLOC_CTXS; i++) {
		if (salloc_ctxs[i].ctx == ctx)
			return salloc_ctxs[i].s;
		if (!salloc_ctxs[i].ctx && !fr)
			fr = &salloc_ctxs[i];
	}
	if (!fr || REAL(cuStreamCreate)(&fr->s, CU_STREAM_NON_BLOCKING) !=
	    CUDA_SUCCESS)
		return NULL;
	fr->ctx = ctx;
	return fr->s;
}

/* The current context's device pool and kmux stream: 0, or -1. */
static int salloc_get(struct salloc_dev **dp, CUstream *sp)
{
	CUcontext ctx = NULL;
	CUdevice dev;
	int ret = -1;

	if (!REAL(cuCtxGetCurrent) || REAL(cuCtxGetCurrent)(&ctx) !=
	    CUDA_SUCCESS || !ctx || REAL(cuCtxGetDevice)(&dev) !=
	    CUDA_SUCCESS)
		return -1;
	pthread_mutex_lock(&salloc_mu);
	*dp = salloc_dev_get((int)dev);
	*sp = *dp ? salloc_stream_get(ctx) : NULL;
	if (*dp && *sp)
		ret = 0;
	pthread_mutex_unlock(&salloc_mu);
	return ret;
}

/*
 * Charge size bytes: kept bytes first (already charged), then the quota.
 * 0 and *take (the kept bytes used), or -ENOSPC.
 */
static int salloc_charge(struct salloc_dev *d, uint64_t size, uint64_t *take)
{
	pthread_mutex_lock(&salloc_mu);
	*take = d->kept < size ? d->kept : size;
	d->kept -= *take;
	pthread_mutex_unlock(&salloc_mu);
	if (!quota_on || *take == size || quota_reserve(size - *take) == 0)
		return 0;
	pthread_mutex_lock(&salloc_mu);
	d->kept += *take;
	pthread_mutex_unlock(&salloc_mu);
	return -1;
}

/*
 * Give the pool's kept memory back to the device (and the quota).  The
 * current context's pool streams finish first, so that every free issued
 * there has happened; s: kmux's stream (allocations waiting on frees).
 * 1 when bytes were given back.
 */
static int salloc_trim(struct salloc_dev *d, CUstream s)
{
	uint64_t k;

	streams_sync_default(0);
	if (s)
		REAL(cuStreamSynchronize)(s);
	if (REAL(cuMemPoolTrimTo)(d->pool, 0) != CUDA_SUCCESS)
		return 0;
	pthread_mutex_lock(&salloc_mu);
	k = d->kept;
	d->kept = 0;
	pthread_mutex_unlock(&salloc_mu);
	if (quota_on && k)
		quota_release(k);
	atomic_fetch_add(&st_trims, 1);
	log_debug("stream-alloc: trimmed the pool, %llu bytes back",
		  (unsigned long long)k);
	return k > 0;
}

int salloc_alloc(CUdeviceptr *dptr, size_t size, CUresult *res)
{
	struct salloc_dev *d;
	uint64_t take = 0;
	int trimmed = 0, retrimmed = 0;
	CUstream s;
	CUresult r;

	if (!size || !dptr || !streams_alloc_ok() || salloc_get(&d, &s))
		goto fallback;
	if (salloc_charge(d, size, &take)) {
		trimmed = salloc_trim(d, s) + 1;
		if (salloc_charge(d, size, &take)) {
			*res = CUDA_ERROR_OUT_OF_MEMORY;
			return 1;
		}
	}
	for (;;) {
		r = REAL(cuMemAllocFromPoolAsync)(dptr, size, d->pool, s);
		/*
		 * The pool may make s wait for an earlier free of the block,
		 * that is for that memory's last users: the wait below is
		 * theirs, and then the pointer is valid on every stream.
		 */
		if (r == CUDA_SUCCESS)
			r = REAL(cuStreamSynchronize)(s);
		if (r != CUDA_ERROR_OUT_OF_MEMORY || trimmed || retrimmed)
			break;
		retrimmed = 1;
		salloc_trim(d, s);
	}
	if (r == CUDA_SUCCESS) {
		atomic_fetch_add(&st_allocs, 1);
		*res = r;
		return 1;
	}
	/* Uncharge: a trim since the charge gave the kept part back too. */
	if (retrimmed || !take) {
		if (quota_on)
			quota_release(size);
	} else {
		pthread_mutex_lock(&salloc_mu);
		d->kept += take;
		pthread_mutex_unlock(&salloc_mu);
		if (quota_on)
			quota_release(size - take);
	}
	log_debug("stream-alloc: pool allocation of %zu bytes: error %d; "
		  "cuMemAlloc instead", size, (int)r);
fallback:
	atomic_fetch_add(&st_fallbacks, 1);
	return 0;
}

int salloc_trim_current(void)
{
	struct salloc_dev *d;
	CUcontext ctx = NULL;
	CUdevice dev;
	CUstream s = NULL;
	uint64_t kept = 0;

	if (!salloc_on || !REAL(cuCtxGetCurrent) ||
	    REAL(cuCtxGetCurrent)(&ctx) != CUDA_SUCCESS || !ctx ||
	    REAL(cuCtxGetDevice)(&dev) != CUDA_SUCCESS || dev < 0 ||
	    dev >= SALLOC_DEVS)
		return 0;
	d = &salloc_devs[dev];
	pthread_mutex_lock(&salloc_mu);
	if (d->state > 0) {
		kept = d->kept;
		for (int i = 0; i < SALLOC_CTXS; i++)
			if (salloc_ctxs[i].ctx == ctx)
				s = salloc_ctxs[i].s;
	}
	pthread_mutex_unlock(&salloc_mu);
	return kept ? salloc_trim(d, s) : 0;
}

CUresult salloc_free_now(CUdeviceptr p)
{
	struct salloc_dev *d;
	CUstream s;
	CUresult r;

	if (salloc_get(&d, &s))
		s = CU_STREAM_LEGACY;	/* no slot for a stream here */
	r = REAL(cuMemFreeAsync)(p, s);
	if (r == CUDA_SUCCESS)
		r = REAL(cuStreamSynchronize)(s);
	return r;
}

void salloc_freed(int dev, uint64_t size, int ordered)
{
	uint64_t over = 0;

	atomic_fetch_add(ordered ? &st_ordered : &st_sync, 1);
	if (dev < 0 || dev >= SALLOC_DEVS)
		return;
	pthread_mutex_lock(&salloc_mu);
	salloc_devs[dev].kept += size;
	/* Past the release threshold the pool gives memory back itself. */
	if (salloc_devs[dev].kept > salloc_keep) {
		over = salloc_devs[dev].kept - salloc_keep;
		salloc_devs[dev].kept = salloc_keep;
	}
	pthread_mutex_unlock(&salloc_mu);
	if (quota_on && over)
		quota_release(over);
}

void salloc_ctx_gone(CUcontext ctx)
{
	if (!salloc_on)
		return;
	pthread_mutex_lock(&salloc_mu);
	for (int i = 0; i < SALLOC_CTXS; i++) {
		if (salloc_ctxs[i].ctx != ctx)
			continue;
		REAL(cuStreamDestroy_v2)(salloc_ctxs[i].s);
		salloc_ctxs[i] = (struct salloc_ctx){ 0 };
	}
	pthread_mutex_unlock(&salloc_mu);
}

void salloc_report(void)
{
	if (!salloc_on)
		return;
	log_info("stream-alloc: pid %d: %llu pool allocations, %llu frees "
		 "stream-ordered, %llu synchronous, %llu fallbacks, %llu "
		 "trims", (int)getpid(),
		 (unsigned long long)atomic_load(&st_allocs),
		 (unsigned long long)atomic_load(&st_ordered),
		 (unsigned long long)atomic_load(&st_sync),
		 (unsigned long long)atomic_load(&st_fallbacks),
		 (unsigned long long)atomic_load(&st_trims));
}

void salloc_atfork_child(void)
{
	/* The parent's pools and streams are not the child's. */
	pthread_mutex_init(&salloc_mu, NULL);
	memset(salloc_devs, 0, sizeof(salloc_devs));
	memset(salloc_ctxs, 0, sizeof(salloc_ctxs));
}
