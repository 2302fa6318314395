/*
 * sim-exec.c - running one operation on a stream worker: the access check
 * every kernel, copy and set goes through (sim_exec_access, and sim_mem for
 * kernels), the record of what the operation touched and when, pinning of
 * the allocations in use, and faults.
 *
 * An access is valid when [p, p+bytes) lies inside one live allocation (for
 * a VMM range: every page mapped with sufficient access rights).  A valid
 * access is added to the operation's record as (allocation id, base, r/w)
 * and pins the allocation until the operation ends, so a concurrent free
 * cannot pull the backing out from under it.  An invalid one is recorded as
 * a fault; when the operation ends, its context gets the sticky
 * CUDA_ERROR_ILLEGAL_ADDRESS that the next synchronization reports.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sim.h"

#define SCRATCH_MAX (1ULL << 30)	/* largest fault scratch buffer */

static struct sim_list running = { &running, &running };

void sim_exec_fault(struct sim_exec *x, uint64_t p, uint64_t bytes,
		    unsigned rw, const char *why)
{
	x->faulted = 1;
	if (x->rec != NULL && sim_rec_add_fault(x->rec, p, bytes, rw, why) < 0)
		sim_warn("out of memory recording a fault");
}

static int pin(struct sim_exec *x, struct sim_alloc *a, uint64_t lo,
	       uint64_t hi)
{
	struct sim_pin *n;
	unsigned i;

	for (i = 0; i < x->npins; i++) {
		if (x->pins[i].a == a) {
			if (lo < x->pins[i].lo)
				x->pins[i].lo = lo;
			if (hi > x->pins[i].hi)
				x->pins[i].hi = hi;
			return 0;
		}
	}
	if (x->npins == x->pins_cap) {
		unsigned cap = x->pins_cap ? x->pins_cap * 2 : 4;

		n = realloc(x->pins, cap * sizeof(*n));
		if (n == NULL)
			return -1;
		x->pins = n;
		x->pins_cap = cap;
	}
	x->pins[x->npins].a = a;
	x->pins[x->npins].lo = lo;
	x->pins[x->npins].hi = hi;
	x->npins++;
	a->pins++;
	return 0;
}

void *sim_exec_access(struct sim_exec *x, uint64_t p, size_t bytes,
		      unsigned rw, unsigned side)
{
	struct sim_alloc *a;
	const char *why = NULL;
	int host_kind;

	if (bytes == 0)
		return NULL;
	a = sim_alloc_find(p);
	if (a == NULL) {
		/* Plain (pageable) host memory is the program's business. */
		if ((side & (SIM_SIDE_ANY | SIM_SIDE_HOST)) &&
		    !sim_addr_is_simulated(p))
			return (void *)(uintptr_t)p;
		sim_exec_fault(x, p, bytes, rw, "unmapped");
		return NULL;
	}
	host_kind = a->kind == SIM_ALLOC_HOST ||
		    a->kind == SIM_ALLOC_REGISTERED ||
		    a->kind == SIM_ALLOC_MANAGED;
	if ((side & SIM_SIDE_HOST) && !host_kind) {
		sim_exec_fault(x, p, bytes, rw, "not-host");
		return NULL;
	}
	if (bytes > a->size || p - a->base > a->size - bytes) {
		/* A host buffer may run past a registered range in it. */
		if ((side & (SIM_SIDE_ANY | SIM_SIDE_HOST)) && host_kind &&
		    a->kind != SIM_ALLOC_MANAGED)
			return (void *)(uintptr_t)p;
		sim_exec_fault(x, p, bytes, rw, "bounds");
		return NULL;
	}
	if (a->kind == SIM_ALLOC_VMM) {
		if (sim_vmm_access(x, a, p, bytes, rw, &why) < 0) {
			sim_exec_fault(x, p, bytes, rw, why);
			return NULL;
		}
	} else if (x->rec != NULL &&
		   sim_rec_add_range(x->rec, a->id, a->base, p - a->base,
				     p - a->base + bytes, rw) < 0) {
		sim_warn("out of memory recording an access");
	}
	if (pin(x, a, p, p + bytes) < 0) {
		sim_exec_fault(x, p, bytes, rw, "nomem");
		return NULL;
	}
	return (char *)a->host + (p - a->base);
}

static void *scratch(struct sim_exec *x, size_t bytes)
{
	void **n;
	void *p;

	if (bytes > SCRATCH_MAX)
		return NULL;
	n = realloc(x->scratch, (x->nscratch + 1) * sizeof(*n));
	if (n == NULL)
		return NULL;
	x->scratch = n;
	p = calloc(1, bytes);
	if (p != NULL)
		x->scratch[x->nscratch++] = p;
	return p;
}

/* sim_mem(), as kernels reach it through struct sim_kctx. */
static void *kernel_mem(struct sim_kctx *k, CUdeviceptr p, size_t bytes,
			int rw)
{
	struct sim_exec *x = sim_container_of(k, struct sim_exec, k);
	void *h;

	if (bytes == 0)
		return NULL;
	sim_lock();
	if (!(rw & SIM_RW) || (rw & ~SIM_RW)) {
		sim_exec_fault(x, p, bytes, SIM_RW, "bad-mode");
		h = NULL;
	} else {
		h = sim_exec_access(x, p, bytes, (unsigned)rw, SIM_SIDE_DEVICE);
	}
	if (h == NULL)
		h = scratch(x, bytes);
	sim_unlock();
	return h;
}

/* sim_kctx.var: the launching module's variable, or 0. */
static CUdeviceptr kernel_var(struct sim_kctx *k, const char *name)
{
	struct sim_exec *x = sim_container_of(k, struct sim_exec, k);
	CUdeviceptr p;

	sim_lock();
	p = x->op->kind == SIM_OP_KERNEL ?
	    sim_module_var(x->op->u.kernel.f->mod, name, NULL) : 0;
	sim_unlock();
	return p;
}

/* sim_kctx.res: a texture or surface object's range, or 0. */
static CUdeviceptr kernel_res(struct sim_kctx *k, unsigned long long obj,
			      size_t *bytes)
{
	CUdeviceptr p;

	(void)k;
	sim_lock();
	p = sim_texobj_range(obj, bytes);
	sim_unlock();
	return p;
}

int sim_exec_fault_users(struct sim_alloc *a, uint64_t lo, uint64_t hi,
			 const char *why)
{
	struct sim_list *l;
	unsigned i;
	int n = 0;

	for (l = running.next; l != &running; l = l->next) {
		struct sim_exec *x = sim_container_of(l, struct sim_exec, link);

		for (i = 0; i < x->npins; i++) {
			if (x->pins[i].a != a || x->pins[i].hi <= lo ||
			    x->pins[i].lo >= hi)
				continue;
			sim_exec_fault(x, lo, hi - lo, SIM_RW, why);
			n++;
		}
	}
	return n;
}

void sim_exec_wait_unpinned(struct sim_alloc *a)
{
	while (a->pins > 0)
		sim_wait();
}

/* Sleep until the absolute CLOCK_MONOTONIC time t (ns). */
static void sleep_until(uint64_t t)
{
	struct timespec ts = {
		.tv_sec = (time_t)(t / 1000000000ULL),
		.tv_nsec = (long)(t % 1000000000ULL),
	};

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) ==
	       EINTR)
		;
}

void sim_kernel_run(struct sim_exec *x)
{
	struct sim_op *op = x->op;
	struct sim_func *f = op->u.kernel.f;
	void *params[SIM_MAX_PARAMS];
	unsigned i;

	for (i = 0; i < f->k->nparams; i++)
		params[i] = op->u.kernel.args + f->offset[i];
	f->k->fn(&x->k, params);
	if (x->k.duration_us > 0)
		sleep_until(sim_now() + x->k.duration_us * 1000ULL);
}

/* Lock held.  A cuMemFreeAsync reached by its stream. */
static void free_run(struct sim_exec *x)
{
	uint64_t p = x->op->u.free.ptr;
	struct sim_alloc *a = sim_alloc_find(p);

	if (x->rec != NULL)
		x->rec->start = x->rec->end = sim_now();
	if (a == NULL || a->base != p || a->kind != SIM_ALLOC_DEVICE) {
		sim_exec_fault(x, p, 1, SIM_WRITE, "double-free");
		return;
	}
	/* Freeing is a write: a concurrent user conflicts with it. */
	if (x->rec != NULL &&
	    sim_rec_add_acc(x->rec, a->id, a->base, SIM_WRITE) < 0)
		sim_warn("out of memory recording a free");
	if (sim_mem_free_locked(p, 1) != CUDA_SUCCESS)
		sim_exec_fault(x, p, 1, SIM_WRITE, "double-free");
}

/*
 * Lock held.  A graph's allocation node: the memory is live until a free
 * (the graph's, or the program's after the launch).  Allocating is a
 * write, like freeing.
 */
static void galloc_run(struct sim_exec *x)
{
	uint64_t p = x->op->u.galloc.ptr;
	struct sim_alloc *a = sim_alloc_find(p);

	if (x->rec != NULL)
		x->rec->start = x->rec->end = sim_now();
	if (a == NULL || a->base != p || !a->graph || a->live) {
		sim_exec_fault(x, p, 1, SIM_WRITE,
			       "graph-alloc-live-or-unknown");
		return;
	}
	if (x->rec != NULL &&
	    sim_rec_add_acc(x->rec, a->id, a->base, SIM_WRITE) < 0)
		sim_warn("out of memory recording a graph allocation");
	a->live = 1;
}

static int rec_kind(enum sim_op_kind k)
{
	switch (k) {
	case SIM_OP_KERNEL:
		return SIM_REC_KERNEL;
	case SIM_OP_MEMCPY:
		return SIM_REC_MEMCPY;
	case SIM_OP_MEMSET:
		return SIM_REC_MEMSET;
	case SIM_OP_GRAPH:
		return SIM_REC_GRAPH;
	case SIM_OP_FREE:
	case SIM_OP_GALLOC:
		return SIM_REC_FREE;
	default:
		return SIM_REC_HOST;
	}
}

static const char *op_name(const struct sim_op *op)
{
	switch (op->kind) {
	case SIM_OP_KERNEL:
		return op->u.kernel.f->k->name;
	case SIM_OP_MEMCPY:
		return "memcpy";
	case SIM_OP_MEMSET:
		return "memset";
	case SIM_OP_HOST:
		return "host-func";
	case SIM_OP_CALLBACK:
		return "callback";
	case SIM_OP_GRAPH:
		return "graph";
	case SIM_OP_FREE:
		return "cuMemFreeAsync";
	case SIM_OP_GALLOC:
		return "graph-alloc";
	default:
		return "-";
	}
}

void sim_exec_op(struct sim_stream *s, struct sim_op *op, uint64_t graph)
{
	struct sim_exec x;
	CUresult status;
	unsigned i;

	if (op->kind == SIM_OP_MARK || op->kind == SIM_OP_WAIT ||
	    op->kind == SIM_OP_NOP)
		return;
	memset(&x, 0, sizeof(x));
	x.op = op;
	x.s = s;
	x.k.abi = SIMCUDA_ABI_VERSION;
	x.k.device = s->ctx->dev->ordinal;
	x.k.mem = kernel_mem;
	x.k.var = kernel_var;
	x.k.res = kernel_res;

	sim_lock();
	status = s->ctx->sticky;
	/* A context with an error runs nothing more, as on a GPU. */
	if (status != CUDA_SUCCESS && op->kind != SIM_OP_FREE &&
	    op->kind != SIM_OP_CALLBACK) {
		sim_unlock();
		return;
	}
	x.rec = sim_rec_new(s->ctx, s, rec_kind(op->kind), op_name(op),
			    graph ? ++sim.next_seq : op->seq);
	if (x.rec == NULL) {
		sim_warn("out of memory: operation %s not recorded",
			 op_name(op));
	} else {
		x.rec->graph = graph;
	}
	if (op->kind == SIM_OP_KERNEL) {
		memcpy(x.k.grid, op->u.kernel.grid, sizeof(x.k.grid));
		memcpy(x.k.block, op->u.kernel.block, sizeof(x.k.block));
		x.k.shared_bytes = op->u.kernel.shmem;
		x.k.duration_us = op->u.kernel.f->k->duration_us ?
				  op->u.kernel.f->k->duration_us :
				  sim.kernel_us;
	}
	sim_list_add_tail(&running, &x.link);
	if (op->kind == SIM_OP_FREE)
		free_run(&x);
	else if (op->kind == SIM_OP_GALLOC)
		galloc_run(&x);
	sim_unlock();

	if (x.rec != NULL && op->kind != SIM_OP_FREE &&
	    op->kind != SIM_OP_GALLOC)
		x.rec->start = sim_now();
	switch (op->kind) {
	case SIM_OP_KERNEL:
		sim_kernel_run(&x);
		break;
	case SIM_OP_MEMCPY:
		sim_copy_run(&x);
		break;
	case SIM_OP_MEMSET:
		sim_set_run(&x);
		break;
	case SIM_OP_HOST:
		op->u.host.fn(op->u.host.data);
		break;
	case SIM_OP_CALLBACK:
		op->u.host.cb(op->u.host.handle, status, op->u.host.data);
		break;
	case SIM_OP_GRAPH:
		sim_graph_run(&x);
		break;
	default:
		break;
	}
	if (x.rec != NULL && op->kind != SIM_OP_FREE &&
	    op->kind != SIM_OP_GALLOC)
		x.rec->end = sim_now();

	sim_lock();
	for (i = 0; i < x.npins; i++)
		sim_alloc_unpin(x.pins[i].a);
	sim_list_del(&x.link);
	if (x.faulted)
		sim_ctx_set_sticky(s->ctx, CUDA_ERROR_ILLEGAL_ADDRESS);
	if (x.rec != NULL)
		sim_rec_commit(x.rec);
	sim_wake();
	sim_unlock();
	for (i = 0; i < x.nscratch; i++)
		free(x.scratch[i]);
	free(x.scratch);
	free(x.pins);
}
