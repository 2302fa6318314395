/*
 * mm-host.c - the pinned host buffers that evicted objects are copied to,
 * kept after a restore for the next eviction.
 *
 * Pinning is, by all signs, the expensive part of an eviction:
 * cuMemAllocHost of a few hundred MiB locks every page and costs far
 * more than the copy itself, and cuMemFreeHost unlocks them again.
 * A program that evicts and
 * restores its objects phase after phase would pay both every time.  So
 * a restored object's buffer is kept, per context (cuMemAllocHost memory
 * belongs to the context current at the allocation), and the next
 * eviction of an object that fits takes it.  By default the kept bytes
 * plus those still holding evicted objects never exceed the most the
 * process ever had pinned at once: kmux keeps no more host memory locked
 * than the program's own evictions already needed.  KMUX_MM_HOST_KEEP
 * sets a limit instead (0: keep nothing).  When pinning fails, the kept
 * buffers are freed and the allocation tried once more.
 */
#include "mm-host.h"

#include <errno.h>
#include <stdlib.h>

#include "log.h"
#include "preload.h"
#include "quota.h"
#include "real.h"

#define MM_HOST_SLOTS 64

struct mm_host_buf {
	CUcontext ctx;
	void *p;
	uint64_t size;
};

static struct mm_host_buf mm_host_kept[MM_HOST_SLOTS];
static int mm_host_nkept;
static int64_t mm_host_cap = -1;	/* -1: the peak of out */
static struct mm_host_stats mm_host_st;

int mm_host_init(const char *keep)
{
	uint64_t v;

	if (!keep || !*keep)
		return 0;
	if (quota_parse(keep, &v) || v > INT64_MAX) {
		log_warn("KMUX_MM_HOST_KEEP=%s is not a byte count; pinned "
			 "buffers are kept up to the process's own peak", keep);
		return -EINVAL;
	}
	mm_host_cap = (int64_t)v;
	return 0;
}

static void mm_host_drop(int i)
{
	mm_host_st.kept -= mm_host_kept[i].size;
	mm_host_kept[i] = mm_host_kept[--mm_host_nkept];
}

/* Free every kept buffer (cuMemFreeHost needs no particular context). */
static void mm_host_release_all(void)
{
	while (mm_host_nkept > 0) {
		REAL(cuMemFreeHost)(mm_host_kept[0].p);
		mm_host_st.frees++;
		mm_host_drop(0);
	}
}

int mm_host_take(CUcontext ctx, uint64_t size, void **p, uint64_t *got)
{
	int best = -1;

	for (int i = 0; i < mm_host_nkept; i++) {
		const struct mm_host_buf *b = &mm_host_kept[i];

		if (b->ctx == ctx && b->size >= size &&
		    (best < 0 || b->size < mm_host_kept[best].size))
			best = i;
	}
	if (best >= 0) {
		*p = mm_host_kept[best].p;
		*got = mm_host_kept[best].size;
		mm_host_drop(best);
		mm_host_st.reuses++;
		goto out;
	}
	if (REAL(cuMemAllocHost_v2)(p, size) != CUDA_SUCCESS) {
		if (mm_host_nkept == 0)
			return -ENOMEM;
		mm_host_release_all();
		if (REAL(cuMemAllocHost_v2)(p, size) != CUDA_SUCCESS)
			return -ENOMEM;
	}
	*got = size;
	mm_host_st.allocs++;
out:
	mm_host_st.out += *got;
	if (mm_host_st.out > mm_host_st.peak_out)
		mm_host_st.peak_out = mm_host_st.out;
	return 0;
}

void mm_host_give(CUcontext ctx, void *p, uint64_t size)
{
	uint64_t cap;

	mm_host_st.out -= size;
	cap = mm_host_cap >= 0 ? (uint64_t)mm_host_cap : mm_host_st.peak_out;
	if (mm_host_nkept < MM_HOST_SLOTS &&
	    mm_host_st.out + mm_host_st.kept + size <= cap) {
		mm_host_kept[mm_host_nkept++] =
			(struct mm_host_buf){ .ctx = ctx, .p = p, .size = size };
		mm_host_st.kept += size;
		return;
	}
	REAL(cuMemFreeHost)(p);
	mm_host_st.frees++;
}

void mm_host_ctx_gone(CUcontext ctx)
{
	for (int i = 0; i < mm_host_nkept;) {
		if (mm_host_kept[i].ctx == ctx)
			mm_host_drop(i);
		else
			i++;
	}
}

void mm_host_get_stats(struct mm_host_stats *st)
{
	*st = mm_host_st;
}
