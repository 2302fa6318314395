/*
 * sim-vmm.c - the virtual memory management API: address reservations,
 * physical allocations (handles), mapping, unmapping and access rights, and
 * the page-level check behind every access to a reserved range.
 *
 * A reservation is one allocation-table entry (SIM_ALLOC_VMM) whose host
 * backing is a PROT_NONE "shadow" region of the same size.  A physical
 * allocation is a memfd; cuMemMap maps it (MAP_SHARED | MAP_FIXED) into the
 * shadow at the right offset, so a handle mapped twice aliases as on a GPU
 * and a contiguous device range is contiguous on the host.  Each 2 MiB page
 * of a reservation records what is mapped there and the access rights each
 * device has.  An access to a page that is unmapped, or without the right
 * it needs, is a fault.  Unmapping a range that a running operation is
 * using records a fault on that operation and waits for it to end before
 * the host mapping changes, so the simulator itself never touches a hole.
 * Records name the physical allocation (its handle value is its id).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "sim.h"

struct phys {
	uint64_t id;		/* the CUmemGenericAllocationHandle */
	uint64_t size;
	int fd;
	int dev;
	int refs;		/* handle references (create, retain) */
	int maps;		/* pages mapping it */
	struct sim_list link;
};

struct page {
	struct phys *phys;	/* NULL: unmapped */
	uint64_t off;		/* of this page in phys */
	uint64_t map_base, map_size;	/* the cuMemMap call it came from */
	unsigned access[SIM_MAX_DEVICES];
};

struct sim_vmm_va {
	struct sim_alloc *a;
	size_t npages;
	struct page *pages;
	struct sim_list link;
};

static struct sim_list physs = { &physs, &physs };
static struct sim_list vas = { &vas, &vas };
static uint64_t va_next = SIM_VA_VMM_BASE;

static int aligned(uint64_t v)
{
	return (v % SIM_GRANULARITY) == 0;
}

static struct phys *phys_find(uint64_t id)
{
	struct sim_list *l;

	for (l = physs.next; l != &physs; l = l->next) {
		struct phys *p = sim_container_of(l, struct phys, link);

		if (p->id == id)
			return p;
	}
	return NULL;
}

/* Free p once it has no handle references and no mappings. */
static void phys_put_check(struct phys *p)
{
	if (p->refs > 0 || p->maps > 0)
		return;
	sim.dev[p->dev].used -= p->size;
	close(p->fd);
	sim_list_del(&p->link);
	free(p);
}

static CUresult prop_ok(const CUmemAllocationProp *prop)
{
	if (prop == NULL || prop->type != CU_MEM_ALLOCATION_TYPE_PINNED ||
	    prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE)
		return CUDA_ERROR_INVALID_VALUE;
	if (prop->location.id < 0 || prop->location.id >= sim.ndev)
		return CUDA_ERROR_INVALID_DEVICE;
	return CUDA_SUCCESS;
}

SIM_API CUresult cuMemGetAllocationGranularity(size_t *granularity,
		const CUmemAllocationProp *prop,
		CUmemAllocationGranularity_flags option)
{
	CUresult err = sim_check_init();

	if (err != CUDA_SUCCESS)
		return err;
	if (granularity == NULL ||
	    (option != CU_MEM_ALLOC_GRANULARITY_MINIMUM &&
	     option != CU_MEM_ALLOC_GRANULARITY_RECOMMENDED))
		return CUDA_ERROR_INVALID_VALUE;
	err = prop_ok(prop);
	if (err == CUDA_SUCCESS)
		*granularity = SIM_GRANULARITY;
	return err;
}

SIM_API CUresult cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size,
			     const CUmemAllocationProp *prop,
			     unsigned long long flags)
{
	struct sim_device *d;
	struct phys *p;
	CUresult err = sim_check_init();

	if (err != CUDA_SUCCESS)
		return err;
	if (handle == NULL || size == 0 || !aligned(size) || flags != 0)
		return CUDA_ERROR_INVALID_VALUE;
	err = prop_ok(prop);
	if (err != CUDA_SUCCESS)
		return err;
	sim_lock();
	d = &sim.dev[prop->location.id];
	if (size > d->total - d->used) {
		err = CUDA_ERROR_OUT_OF_MEMORY;
		goto out;
	}
	p = calloc(1, sizeof(*p));
	if (p == NULL) {
		err = CUDA_ERROR_OUT_OF_MEMORY;
		goto out;
	}
	p->fd = memfd_create("simcuda-vmm", MFD_CLOEXEC);
	if (p->fd < 0 || ftruncate(p->fd, (off_t)size) < 0) {
		sim_warn("cuMemCreate: memfd: %s", strerror(errno));
		if (p->fd >= 0)
			close(p->fd);
		free(p);
		err = CUDA_ERROR_OUT_OF_MEMORY;
		goto out;
	}
	p->id = sim_new_id();
	p->size = size;
	p->dev = d->ordinal;
	p->refs = 1;
	sim_list_add_tail(&physs, &p->link);
	d->used += size;
	*handle = p->id;
out:
	sim_unlock();
	return err;
}

SIM_API CUresult cuMemRelease(CUmemGenericAllocationHandle handle)
{
	struct phys *p;
	CUresult err = sim_check_init();

	if (err != CUDA_SUCCESS)
		return err;
	sim_lock();
	p = phys_find(handle);
	if (p == NULL || p->refs == 0) {
		err = CUDA_ERROR_INVALID_VALUE;
	} else {
		/* Mapped memory stays until its last unmap, as on a GPU. */
		p->refs--;
		phys_put_check(p);
	}
	sim_unlock();
	return err;
}

SIM_API CUresult cuMemAddressReserve(CUdeviceptr *ptr, size_t size,
				     size_t alignment, CUdeviceptr addr,
				     unsigned long long flags)
{
	struct sim_vmm_va *va = NULL;
	struct sim_alloc *a = NULL;
	uint64_t base;
	CUresult err = sim_check_init();

	if (err != CUDA_SUCCESS)
		return err;
	if (ptr == NULL || size == 0 || !aligned(size) || flags != 0 ||
	    (alignment & (alignment - 1)) != 0)
		return CUDA_ERROR_INVALID_VALUE;
	if (alignment < SIM_GRANULARITY)
		alignment = SIM_GRANULARITY;
	sim_lock();
	/* The hint is honoured when it is free, as the driver may. */
	base = addr;
	if (base == 0 || base % alignment != 0 || base < SIM_VA_VMM_BASE ||
	    base + size > SIM_VA_VMM_BASE + SIM_VA_VMM_SIZE ||
	    sim_alloc_find(base) != NULL ||
	    sim_alloc_find(base + size - 1) != NULL || base < va_next)
		base = (va_next + alignment - 1) / alignment * alignment;
	if (base + size < base ||
	    base + size > SIM_VA_VMM_BASE + SIM_VA_VMM_SIZE) {
		err = CUDA_ERROR_OUT_OF_MEMORY;
		goto out;
	}
	a = calloc(1, sizeof(*a));
	va = calloc(1, sizeof(*va));
	if (a == NULL || va == NULL)
		goto err_nomem;
	va->npages = size / SIM_GRANULARITY;
	va->pages = calloc(va->npages, sizeof(*va->pages));
	if (va->pages == NULL)
		goto err_nomem;
	a->host = mmap(NULL, size, PROT_NONE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (a->host == MAP_FAILED) {
		a->host = NULL;
		goto err_nomem;
	}
	a->id = sim_new_id();
	a->kind = SIM_ALLOC_VMM;
	a->base = base;
	a->size = size;
	a->map_len = size;
	a->dev = -1;
	a->va = va;
	va->a = a;
	if (sim_alloc_insert(a) < 0) {
		munmap(a->host, size);
		goto err_nomem;
	}
	sim_list_add_tail(&vas, &va->link);
	va_next = base + size;
	*ptr = base;
	goto out;

err_nomem:
	if (va != NULL)
		free(va->pages);
	free(va);
	free(a);
	err = CUDA_ERROR_OUT_OF_MEMORY;
out:
	sim_unlock();
	return err;
}

/* Lock held.  The reservation holding all of [p, p+size), or NULL. */
static struct sim_alloc *va_find(uint64_t p, uint64_t size)
{
	struct sim_alloc *a = sim_alloc_find(p);

	if (a == NULL || a->kind != SIM_ALLOC_VMM || size == 0 ||
	    size > a->size || p - a->base > a->size - size)
		return NULL;
	return a;
}

/*
 * Lock held; dropped while waiting.  Unmap [p, p+size) of a: running
 * operations using it get a fault, then the host pages become PROT_NONE.
 * Returns -1 if the range stopped being fully mapped while waiting.
 */
static int unmap_range(struct sim_alloc *a, uint64_t p, uint64_t size)
{
	struct sim_vmm_va *va = a->va;
	size_t first = (p - a->base) / SIM_GRANULARITY;
	size_t n = size / SIM_GRANULARITY, i;

	sim_exec_fault_users(a, p, p + size, "unmapped-in-use");
	sim_exec_wait_unpinned(a);
	for (i = first; i < first + n; i++)
		if (va->pages[i].phys == NULL)
			return -1;
	if (mmap((char *)a->host + (p - a->base), size, PROT_NONE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1,
		 0) == MAP_FAILED)
		sim_warn("cuMemUnmap: cannot reset host pages: %s",
			 strerror(errno));
	for (i = first; i < first + n; i++) {
		struct phys *ph = va->pages[i].phys;

		memset(&va->pages[i], 0, sizeof(va->pages[i]));
		ph->maps--;
		phys_put_check(ph);
	}
	return 0;
}

static void va_free(struct sim_alloc *a)
{
	struct sim_vmm_va *va = a->va;

	sim_alloc_remove(a);
	sim_list_del(&va->link);
	munmap(a->host, a->size);
	a->host = NULL;
	free(va->pages);
	free(va);
	a->va = NULL;
	sim_alloc_release(a);
}

SIM_API CUresult cuMemAddressFree(CUdeviceptr ptr, size_t size)
{
	struct sim_alloc *a;
	size_t i;
	CUresult err = sim_check_init();

	if (err != CUDA_SUCCESS)
		return err;
	sim_lock();
	a = va_find(ptr, size);
	if (a == NULL || a->base != ptr || a->size != size) {
		err = CUDA_ERROR_INVALID_VALUE;
		goto out;
	}
	/* Whatever is still mapped goes with it. */
	for (i = 0; i < a->va->npages; i++) {
		struct page *pg = &a->va->pages[i];

		if (pg->phys != NULL &&
		    unmap_range(a, a->base + i * SIM_GRANULARITY,
				SIM_GRANULARITY) < 0) {
			err = CUDA_ERROR_INVALID_VALUE;
			goto out;
		}
	}
	sim_exec_wait_unpinned(a);
	if (va_find(ptr, size) != a) {
		err = CUDA_ERROR_INVALID_VALUE;
		goto out;
	}
	va_free(a);
out:
	sim_unlock();
	return err;
}

SIM_API CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset,
			  CUmemGenericAllocationHandle handle,
			  unsigned long long flags)
{
	struct sim_alloc *a;
	struct phys *p;
	size_t first, n, i;
	CUresult err = sim_check_init();

	if (err != CUDA_SUCCESS)
		return err;
	if (flags != 0 || !aligned(ptr) || !aligned(size) || !aligned(offset))
		return CUDA_ERROR_INVALID_VALUE;
	sim_lock();
	a = va_find(ptr, size);
	p = phys_find(handle);
	if (a == NULL || p == NULL || p->refs == 0 || offset > p->size ||
	    size > p->size - offset) {
		err = CUDA_ERROR_INVALID_VALUE;
		goto out;
	}
	first = (ptr - a->base) / SIM_GRANULARITY;
	n = size / SIM_GRANULARITY;
	for (i = first; i < first + n; i++) {
		if (a->va->pages[i].phys != NULL) {
			err = CUDA_ERROR_ALREADY_MAPPED;
			goto out;
		}
	}
	if (mmap((char *)a->host + (ptr - a->base), size,
		 PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, p->fd,
		 (off_t)offset) == MAP_FAILED) {
		sim_warn("cuMemMap: mmap: %s", strerror(errno));
		err = CUDA_ERROR_OUT_OF_MEMORY;
		goto out;
	}
	for (i = first; i < first + n; i++) {
		struct page *pg = &a->va->pages[i];

		pg->phys = p;
		pg->off = offset + (i - first) * SIM_GRANULARITY;
		pg->map_base = ptr;
		pg->map_size = size;
		memset(pg->access, 0, sizeof(pg->access));
		p->maps++;
	}
out:
	sim_unlock();
	return err;
}

SIM_API CUresult cuMemUnmap(CUdeviceptr ptr, size_t size)
{
	struct sim_alloc *a;
	size_t first, n, i;
	CUresult err = sim_check_init();

	if (err != CUDA_SUCCESS)
		return err;
	if (!aligned(ptr) || !aligned(size))
		return CUDA_ERROR_INVALID_VALUE;
	sim_lock();
	a = va_find(ptr, size);
	if (a == NULL) {
		err = CUDA_ERROR_INVALID_VALUE;
		goto out;
	}
	first = (ptr - a->base) / SIM_GRANULARITY;
	n = size / SIM_GRANULARITY;
	for (i = first; i < first + n; i++) {
		if (a->va->pages[i].phys == NULL) {
			err = CUDA_ERROR_INVALID_VALUE;
			goto out;
		}
	}
	if (unmap_range(a, ptr, size) < 0)
		err = CUDA_ERROR_INVALID_VALUE;
out:
	sim_unlock();
	return err;
}

SIM_API CUresult cuMemSetAccess(CUdeviceptr ptr, size_t size,
				const CUmemAccessDesc *desc, size_t count)
{
	struct sim_alloc *a;
	size_t first, n, i, j;
	CUresult err = sim_check_init();

	if (err != CUDA_SUCCESS)
		return err;
	if (desc == NULL || count == 0 || !aligned(ptr) || !aligned(size))
		return CUDA_ERROR_INVALID_VALUE;
	for (j = 0; j < count; j++) {
		if (desc[j].location.type != CU_MEM_LOCATION_TYPE_DEVICE ||
		    desc[j].location.id < 0 || desc[j].location.id >= sim.ndev)
			return CUDA_ERROR_INVALID_DEVICE;
		if (desc[j].flags != CU_MEM_ACCESS_FLAGS_PROT_NONE &&
		    desc[j].flags != CU_MEM_ACCESS_FLAGS_PROT_READ &&
		    desc[j].flags != CU_MEM_ACCESS_FLAGS_PROT_READWRITE)
			return CUDA_ERROR_INVALID_VALUE;
	}
	sim_lock();
	a = va_find(ptr, size);
	if (a == NULL) {
		err = CUDA_ERROR_INVALID_VALUE;
		goto out;
	}
	first = (ptr - a->base) / SIM_GRANULARITY;
	n = size / SIM_GRANULARITY;
	for (i = first; i < first + n; i++) {
		if (a->va->pages[i].phys == NULL) {
			err = CUDA_ERROR_INVALID_VALUE;
			goto out;
		}
	}
	for (i = first; i < first + n; i++)
		for (j = 0; j < count; j++)
			a->va->pages[i].access[desc[j].location.id] =
				desc[j].flags;
out:
	sim_unlock();
	return err;
}

SIM_API CUresult cuMemGetAccess(unsigned long long *flags,
				const CUmemLocation *location,
				CUdeviceptr ptr)
{
	struct sim_alloc *a;
	struct page *pg;
	CUresult err = sim_check_init();

	if (err != CUDA_SUCCESS)
		return err;
	if (flags == NULL || location == NULL ||
	    location->type != CU_MEM_LOCATION_TYPE_DEVICE ||
	    location->id < 0 || location->id >= sim.ndev)
		return CUDA_ERROR_INVALID_VALUE;
	sim_lock();
	a = va_find(ptr, 1);
	pg = a ? &a->va->pages[(ptr - a->base) / SIM_GRANULARITY] : NULL;
	if (pg == NULL || pg->phys == NULL)
		err = CUDA_ERROR_INVALID_VALUE;
	else
		*flags = pg->access[location->id];
	sim_unlock();
	return err;
}

SIM_API CUresult cuMemGetAllocationPropertiesFromHandle(
		CUmemAllocationProp *prop, CUmemGenericAllocationHandle handle)
{
	struct phys *p;
	CUresult err = sim_check_init();

	if (err != CUDA_SUCCESS)
		return err;
	if (prop == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	sim_lock();
	p = phys_find(handle);
	if (p == NULL || p->refs == 0) {
		err = CUDA_ERROR_INVALID_VALUE;
	} else {
		memset(prop, 0, sizeof(*prop));
		prop->type = CU_MEM_ALLOCATION_TYPE_PINNED;
		prop->location.type = CU_MEM_LOCATION_TYPE_DEVICE;
		prop->location.id = p->dev;
	}
	sim_unlock();
	return err;
}

SIM_API CUresult cuMemRetainAllocationHandle(
		CUmemGenericAllocationHandle *handle, void *addr)
{
	struct sim_alloc *a;
	struct page *pg;
	uint64_t p = (uint64_t)(uintptr_t)addr;
	CUresult err = sim_check_init();

	if (err != CUDA_SUCCESS)
		return err;
	if (handle == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	sim_lock();
	a = va_find(p, 1);
	pg = a ? &a->va->pages[(p - a->base) / SIM_GRANULARITY] : NULL;
	if (pg == NULL || pg->phys == NULL) {
		err = CUDA_ERROR_INVALID_VALUE;
	} else {
		pg->phys->refs++;
		*handle = pg->phys->id;
	}
	sim_unlock();
	return err;
}

int sim_vmm_access(struct sim_exec *x, struct sim_alloc *a, uint64_t p,
		   uint64_t bytes, unsigned rw, const char **why)
{
	struct sim_vmm_va *va = a->va;
	size_t first = (p - a->base) / SIM_GRANULARITY;
	size_t last = (p + bytes - 1 - a->base) / SIM_GRANULARITY, i;
	unsigned need = (rw & SIM_WRITE) ? CU_MEM_ACCESS_FLAGS_PROT_READWRITE
					 : CU_MEM_ACCESS_FLAGS_PROT_READ;
	int dev = x->k.device;

	for (i = first; i <= last; i++) {
		struct page *pg = &va->pages[i];

		if (pg->phys == NULL) {
			*why = "unmapped";
			return -1;
		}
		if ((pg->access[dev] & need) != need) {
			*why = "no-access";
			return -1;
		}
	}
	for (i = first; i <= last; i++) {
		struct page *pg = &va->pages[i];

		if (i > first && pg->phys == va->pages[i - 1].phys)
			continue;
		if (x->rec != NULL &&
		    sim_rec_add_acc(x->rec, pg->phys->id, pg->map_base, rw) < 0)
			sim_warn("out of memory recording an access");
	}
	return 0;
}

int sim_vmm_range(struct sim_alloc *a, uint64_t p, uint64_t *base,
		  uint64_t *size)
{
	struct page *pg = &a->va->pages[(p - a->base) / SIM_GRANULARITY];

	if (pg->phys == NULL)
		return -1;
	*base = pg->map_base;
	*size = pg->map_size;
	return 0;
}

/* Process exit, nothing running: drop reservations and allocations. */
void sim_vmm_fini(void)
{
	while (!sim_list_empty(&vas)) {
		struct sim_vmm_va *va = sim_container_of(vas.next,
							 struct sim_vmm_va,
							 link);
		size_t i;

		for (i = 0; i < va->npages; i++) {
			if (va->pages[i].phys != NULL) {
				va->pages[i].phys->maps--;
				phys_put_check(va->pages[i].phys);
			}
		}
		va_free(va->a);
	}
	while (!sim_list_empty(&physs)) {
		struct phys *p = sim_container_of(physs.next, struct phys,
						  link);

		p->refs = 0;
		p->maps = 0;
		phys_put_check(p);
	}
}
