/*
 * quota.h - the process's device-memory quota (KMUX_MEM_QUOTA, set by the
 * daemon for each job; issue 4, Enforcement).
 *
 * Device memory the process commits (cuMemAlloc, pitch, async / from pool,
 * managed, VMM physical memory from cuMemCreate, CUDA arrays, and graph
 * allocations while live, graph-mem.h) is counted in one atomic counter.  An allocation is reserved with a CAS loop before the driver is
 * called; one that would exceed the quota gets CUDA_ERROR_OUT_OF_MEMORY
 * without reaching the driver, and a driver failure gives the bytes back.
 * Frees give back the size the allocation table recorded (VMM: the size
 * remembered per handle).  Host memory is not counted.
 *
 * When KMUX_MEM_QUOTA is not set (or invalid) quota_on is 0 and the wrappers
 * test nothing else.
 */
#ifndef KMUX_QUOTA_H
#define KMUX_QUOTA_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

struct quota {
	_Atomic uint64_t limit;		/* bytes; grows through quota_grow */
	_Atomic uint64_t used;		/* bytes committed */
	_Atomic uint64_t peak;		/* the most `used` has been */
};

/* Written once by the constructor, read without synchronization after. */
extern int quota_on;
extern struct quota quota_global;

/*
 * A byte count in decimal (what the daemon sets), optionally followed by one
 * of K, M, G, T (powers of 1024); nothing else (no sign, no spaces).  0 and
 * *out, or -EINVAL (also on overflow or an empty string).
 */
int quota_parse(const char *s, uint64_t *out);

/*
 * From the constructor: KMUX_MEM_QUOTA's value (NULL: not set).  by_kmuxd:
 * kmuxd set it for a job it started (KMUX_JOB is set too); otherwise it is
 * the user's own limit, quota_cap, which kmuxd's quota never exceeds.
 */
void quota_init(const char *env, int by_kmuxd);

/*
 * The user's own KMUX_MEM_QUOTA for a process kmuxd did not start, or 0:
 * a registered process declares it as its need (register.c), and neither
 * kmuxd's quota nor a growth it grants goes past it.
 */
extern uint64_t quota_cap;

/* v, or quota_cap when that is set and smaller: what may be asked for. */
uint64_t quota_capped(uint64_t v);

/*
 * The quota kmuxd admitted the process with (register.c), set at the first
 * cuInit before the real one, so before any allocation: a limit of
 * UINT64_MAX counts without limiting.  Never past quota_cap.
 */
void quota_set_admitted(uint64_t limit);

/* Reserve n bytes: 0, or -ENOSPC when used + n would exceed the limit. */
int quota_try_reserve(struct quota *q, uint64_t n);
/* Give back n bytes (never below 0). */
void quota_give_back(struct quota *q, uint64_t n);
uint64_t quota_used(const struct quota *q);
uint64_t quota_peak(const struct quota *q);

/* cuMemGetInfo: total = min(limit, total), free = min(free, limit - used). */
void quota_clamp_info(const struct quota *q, size_t *free_bytes,
		      size_t *total_bytes);

/*
 * Set once admitted by kmuxd (register.c): ask the daemon to raise the
 * global limit to at least want bytes.  0 when the limit now allows it,
 * <0 when the daemon said no (a declared need, no room on the GPU) or could
 * not be asked.  NULL: the limit is fixed.
 */
extern int (*quota_grow)(uint64_t want);

/* quota_reserve()'s slow path: the limit is reached; try to grow it. */
int quota_reserve_grow(uint64_t n);

/*
 * The global quota's shorthands for the wrappers (only when quota_on).  An
 * allocation past the limit asks kmuxd for more first (a need kmuxd only
 * guessed follows the task as it allocates).
 */
static inline int quota_reserve(uint64_t n)
{
	if (quota_try_reserve(&quota_global, n) == 0)
		return 0;
	return quota_reserve_grow(n);
}

static inline void quota_release(uint64_t n)
{
	quota_give_back(&quota_global, n);
}

/*
 * The counted bytes of the allocation that starts at base, from the
 * allocation table: its size for device and managed memory, 0 for anything
 * else (host memory, VMM mappings, unknown addresses, graph allocations:
 * graph-mem.h keeps their charge).
 */
uint64_t quota_charged(uint64_t base);

/*
 * The bytes a CUDA array (levels 1) or mipmapped array holds, as the quota
 * counts them: its texels' size, level by level, without the padding and
 * tiling the driver adds (which it does not say for an array it backs
 * itself).  width, height, depth, format, channels and flags as in
 * CUDA_ARRAY3D_DESCRIPTOR; a height or depth of 0 counts as 1; a layered or
 * cubemap array keeps its depth (its layers) at every level.  Sparse and
 * deferred-mapping arrays hold nothing until memory is mapped into them
 * (cuMemCreate counts that): 0.  Formats kmux does not size (the YUV ones)
 * count one byte per channel.  UINT64_MAX on overflow.
 */
uint64_t quota_array_bytes(uint64_t width, uint64_t height, uint64_t depth,
			   unsigned format, unsigned channels, unsigned flags,
			   unsigned levels);

/*
 * Memory known by a handle, not an address: handle -> size, per kind (the
 * driver's handles of different kinds may share values).
 * quota_handle_add: 0 or -ENOMEM; quota_handle_take removes the handle
 * and returns its size (0: unknown).
 */
enum quota_handle_kind {
	QUOTA_H_VMM,		/* cuMemCreate */
	QUOTA_H_ARRAY,		/* cuArrayCreate, cuArray3DCreate */
	QUOTA_H_MIPMAP,		/* cuMipmappedArrayCreate */
};

int quota_handle_add(enum quota_handle_kind kind, uint64_t h, uint64_t size);
uint64_t quota_handle_take(enum quota_handle_kind kind, uint64_t h);

/* fork(2): the handle map's lock is held across fork. */
void quota_atfork_prepare(void);
void quota_atfork_parent(void);
void quota_atfork_child(void);

#endif
