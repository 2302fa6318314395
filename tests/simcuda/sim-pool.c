/*
 * sim-pool.c - explicit memory pools: cuMemPoolCreate / Destroy, the
 * attributes kmux and the tests use, cuMemPoolTrimTo, and the bytes a pool
 * keeps after its blocks are freed.
 *
 * The model is only the byte accounting a caller can observe: a freed block
 * stays counted in the device's `used` (so cuMemGetInfo and out-of-memory
 * see it) until the pool releases it, either past the release threshold
 * (at the free itself; the real driver waits for a synchronization) or by
 * cuMemPoolTrimTo; an allocation from the pool is served from the kept
 * bytes when they are enough for all of it (the real pool reuses blocks,
 * it does not join them), else from the device.  Addresses are never reused, whatever the pool keeps, so
 * a use after free still faults and the overlap check still sees it.
 * SIMCUDA_NO_POOLS=1: pools are unsupported (the attribute says 0 and
 * cuMemPoolCreate fails with CUDA_ERROR_NOT_SUPPORTED).
 */
#include <stdlib.h>

#include "sim.h"

/* Lock held.  Give back to the device what the pool keeps above keep. */
static void pool_release_above(struct sim_pool *p, uint64_t keep)
{
	if (p->kept <= keep)
		return;
	sim.dev[p->dev].used -= p->kept - keep;
	p->kept = keep;
}

static void pool_maybe_free(struct sim_pool *p)
{
	if (p->destroyed && p->nlive == 0)
		free(p);
}

void sim_pool_put(struct sim_pool *p, uint64_t size)
{
	p->live -= size;
	p->nlive--;
	p->kept += size;
	pool_release_above(p, p->destroyed ? 0 : p->threshold);
	pool_maybe_free(p);
}

SIM_API CUresult cuMemPoolCreate(CUmemoryPool *pool,
				 const CUmemPoolProps *props)
{
	struct sim_pool *p;
	CUresult err;

	if (pool == NULL || props == NULL ||
	    props->allocType != CU_MEM_ALLOCATION_TYPE_PINNED ||
	    props->location.type != CU_MEM_LOCATION_TYPE_DEVICE)
		return CUDA_ERROR_INVALID_VALUE;
	err = sim_device_check(props->location.id);
	if (err != CUDA_SUCCESS)
		return err;
	if (sim.no_pools)
		return CUDA_ERROR_NOT_SUPPORTED;
	p = calloc(1, sizeof(*p));
	if (p == NULL)
		return CUDA_ERROR_OUT_OF_MEMORY;
	p->dev = props->location.id;
	sim_lock();
	if (sim_handle_add(p, SIM_H_POOL) < 0) {
		sim_unlock();
		free(p);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	sim_unlock();
	*pool = (CUmemoryPool)p;
	return CUDA_SUCCESS;
}

/* Lock held. */
static struct sim_pool *pool_get(CUmemoryPool pool)
{
	struct sim_pool *p = (struct sim_pool *)pool;

	return sim_handle_ok(p, SIM_H_POOL) ? p : NULL;
}

SIM_API CUresult cuMemPoolDestroy(CUmemoryPool pool)
{
	struct sim_pool *p;

	sim_lock();
	p = pool_get(pool);
	if (p == NULL) {
		sim_unlock();
		return CUDA_ERROR_INVALID_VALUE;
	}
	sim_handle_del(p);
	p->destroyed = 1;
	pool_release_above(p, 0);
	pool_maybe_free(p);
	sim_unlock();
	return CUDA_SUCCESS;
}

SIM_API CUresult cuMemPoolTrimTo(CUmemoryPool pool, size_t minBytesToKeep)
{
	struct sim_pool *p;

	sim_lock();
	p = pool_get(pool);
	if (p != NULL)
		pool_release_above(p, minBytesToKeep);
	sim_unlock();
	return p != NULL ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

SIM_API CUresult cuMemPoolSetAttribute(CUmemoryPool pool,
				       CUmemPool_attribute attr, void *value)
{
	CUresult err = CUDA_SUCCESS;
	struct sim_pool *p;

	if (value == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	sim_lock();
	p = pool_get(pool);
	if (p == NULL) {
		err = CUDA_ERROR_INVALID_VALUE;
		goto out;
	}
	switch (attr) {
	case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD:
		p->threshold = *(const uint64_t *)value;
		break;
	case CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES:
	case CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC:
	case CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES:
		break;	/* reuse policy: addresses are never reused here */
	default:
		err = CUDA_ERROR_INVALID_VALUE;
	}
out:
	sim_unlock();
	return err;
}

SIM_API CUresult cuMemPoolGetAttribute(CUmemoryPool pool,
				       CUmemPool_attribute attr, void *value)
{
	CUresult err = CUDA_SUCCESS;
	struct sim_pool *p;

	if (value == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	sim_lock();
	p = pool_get(pool);
	if (p == NULL) {
		err = CUDA_ERROR_INVALID_VALUE;
		goto out;
	}
	switch (attr) {
	case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD:
		*(uint64_t *)value = p->threshold;
		break;
	case CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT:
		*(uint64_t *)value = p->live + p->kept;
		break;
	case CU_MEMPOOL_ATTR_USED_MEM_CURRENT:
		*(uint64_t *)value = p->live;
		break;
	case CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES:
	case CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC:
	case CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES:
		*(int *)value = 1;
		break;
	default:
		err = CUDA_ERROR_INVALID_VALUE;
	}
out:
	sim_unlock();
	return err;
}
