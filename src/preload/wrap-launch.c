/*
 * wrap-launch.c - kernel launches, graph launches, host functions and
 * stream callbacks.
 *
 * With nothing switched on, each wrapper is one predictable branch and a
 * call through the real table: no lock, no syscall, no getenv.  When
 * tracking, the tracker decodes the parameters into the allocations they
 * point into and the launch is recorded; under KMUX_STREAMS a launch on a
 * default stream goes to the stream scheduler with those allocations as its
 * accesses.  A launch kmux cannot see through (parameters it could not
 * decode, pointers into managed, host-mapped or VMM memory, a kernel named
 * by KMUX_BARRIER_KERNELS, a graph, host code) is a barrier.
 */
#include "graph-mem.h"
#include "kparams.h"
#include "mm.h"
#include "preload.h"
#include "region.h"
#include "register.h"
#include "streams.h"
#include "verify.h"

#define LAUNCH_MAX_ACCESS 64

enum launch_kind {
	LAUNCH_KERNEL,
	LAUNCH_KERNEL_EX,
	LAUNCH_COOP,
	LAUNCH_GRAPH,
	LAUNCH_HOST_FUNC,
	LAUNCH_CALLBACK,
};

/* The call as the program made it, so that it can be made on any stream. */
struct launch_call {
	enum launch_kind kind;
	int per_thread;
	CUstream orig;		/* the program's stream argument */
	CUfunction f;
	const unsigned *grid, *block;	/* kernels' (3 each) */
	unsigned shmem;
	void **params, **extra;
	const CUlaunchConfig *config;
	CUgraphExec graph;
	CUhostFn host_fn;
	CUstreamCallback callback;
	unsigned callback_flags;
	void *data;
};

struct launch_op {
	struct trace_launch tl;
	struct access acc[LAUNCH_MAX_ACCESS];
	void *token;
	CUstream stream;	/* where it went, an explicit handle */
	struct launch_call call;
	/* Its parameters were not read (launch_decode_skipped()). */
	int undecoded;
};

/*
 * A launch on stream s only the scheduler wants to see: it goes to a
 * default stream, and nothing else tracks (no trace, no memory manager,
 * no verify recording).  Passing through, such a launch need not be read.
 */
static int launch_sched_only(CUstream s)
{
	return kmux_streams && !trace_enabled && !mm_on && !kmux_verify &&
	       streams_is_default(s);
}

/*
 * While the scheduler passes a launch-bound context's work through as
 * submitted (streams.h), nothing reads what a launch reaches: reading its
 * parameters is host time on the program's critical path, for nothing.
 * Most such launches take the short way (launch_passed_quickly()); the
 * rest (cooperative ones, one that met a pause or a capture) are not
 * decoded.  Should passing through end at this very launch, it is a
 * barrier.
 */
static int launch_decode_skipped(CUstream s)
{
	return launch_sched_only(s) && streams_passing_through();
}

/*
 * Decode and describe the launch op->call (set by the caller); nothing is
 * issued yet.
 */
static void launch_op_begin(struct launch_op *op, enum trace_api api)
{
	struct launch_call *c = &op->call;
	struct trace_launch *tl = &op->tl;
	const unsigned *grid = c->grid, *block = c->block;

	*tl = (struct trace_launch){ .api = api, .shmem = c->shmem };
	for (int i = 0; i < 3; i++) {
		tl->grid[i] = grid ? grid[i] : 0;
		tl->block[i] = block ? block[i] : 0;
	}
	c->grid = tl->grid;
	c->block = tl->block;
	op->token = NULL;
	op->undecoded = 0;
	tl->stream = stream_norm(c->orig, c->per_thread);
	op->stream = (CUstream)(uintptr_t)tl->stream;
	if (c->f) {
		tl->ki = kparams_info(c->f);
		if (tl->ki && launch_decode_skipped(c->orig))
			op->undecoded = 1;
		else if (tl->ki)
			tl->nacc = kparams_collect_at(alloc_table_global(),
						      tl->ki, grid ? tl->grid :
						      NULL, block ? tl->block :
						      NULL, c->params,
						      c->extra, op->acc,
						      LAUNCH_MAX_ACCESS,
						      &tl->kflags);
	}
	tl->acc = op->acc;
	tl->t_begin = trace_stamp();
}

/* The real call on stream s, or as the program made it (s NULL). */
static CUresult launch_real(const struct launch_call *c, CUstream s)
{
	const unsigned *g = c->grid, *b = c->block;
	CUstream to = s ? s : c->orig;
	int pt = s ? 0 : c->per_thread;
	CUlaunchConfig cfg;

	switch (c->kind) {
	case LAUNCH_KERNEL:
		if (pt)
			return REAL(cuLaunchKernel_ptsz)(c->f, g[0], g[1],
					g[2], b[0], b[1], b[2], c->shmem,
					to, c->params, c->extra);
		return REAL(cuLaunchKernel)(c->f, g[0], g[1], g[2], b[0],
					    b[1], b[2], c->shmem, to,
					    c->params, c->extra);
	case LAUNCH_KERNEL_EX:
		cfg = *c->config;
		cfg.hStream = to;
		if (pt)
			return REAL(cuLaunchKernelEx_ptsz)(&cfg, c->f,
							   c->params,
							   c->extra);
		return REAL(cuLaunchKernelEx)(&cfg, c->f, c->params,
					      c->extra);
	case LAUNCH_COOP:
		if (pt)
			return REAL(cuLaunchCooperativeKernel_ptsz)(c->f, g[0],
					g[1], g[2], b[0], b[1], b[2],
					c->shmem, to, c->params);
		return REAL(cuLaunchCooperativeKernel)(c->f, g[0], g[1], g[2],
				b[0], b[1], b[2], c->shmem, to,
				c->params);
	case LAUNCH_GRAPH:
		if (pt)
			return REAL(cuGraphLaunch_ptsz)(c->graph, to);
		return REAL(cuGraphLaunch)(c->graph, to);
	case LAUNCH_HOST_FUNC:
		if (pt)
			return REAL(cuLaunchHostFunc_ptsz)(to, c->host_fn,
							   c->data);
		return REAL(cuLaunchHostFunc)(to, c->host_fn, c->data);
	case LAUNCH_CALLBACK:
		if (pt)
			return REAL(cuStreamAddCallback_ptsz)(to, c->callback,
					c->data, c->callback_flags);
		return REAL(cuStreamAddCallback)(to, c->callback, c->data,
						 c->callback_flags);
	}
	return CUDA_ERROR_INVALID_VALUE;
}

/*
 * streams_issue_fn: the launch on stream s (a pool stream, or NULL: as the
 * program asked), with --timing's start event on that same stream.
 */
static CUresult launch_issue(void *arg, CUstream s)
{
	struct launch_op *op = arg;

	if (s) {
		op->stream = s;
		op->tl.stream = (uint64_t)(uintptr_t)s;
	}
	op->token = trace_launch_begin(op->stream);
	return launch_real(&op->call, s);
}

#if CUDA_VERSION >= 12030
#define LAUNCH_ATTR_COMPLETION_EVENT CU_LAUNCH_ATTRIBUTE_LAUNCH_COMPLETION_EVENT
#else
#define LAUNCH_ATTR_COMPLETION_EVENT CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_EVENT
#endif

/*
 * Launch attributes that record events or tie the launch to its stream's
 * previous kernel: only the program's own stream keeps their meaning.
 */
static int launch_ex_bound_to_stream(const CUlaunchConfig *c)
{
	for (unsigned i = 0; c->attrs && i < c->numAttrs; i++) {
		CUlaunchAttributeID id = c->attrs[i].id;

		if (id == CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_EVENT ||
		    id == LAUNCH_ATTR_COMPLETION_EVENT ||
		    id == CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION)
			return 1;
	}
	return 0;
}

/* Whether kmux cannot see all the kernel reaches. */
static int launch_is_barrier(const struct launch_op *op)
{
	const struct trace_launch *tl = &op->tl;

	if (!tl->ki || tl->ki->nparams < 0 || op->undecoded)
		return 1;
	if (tl->kflags & KPARAMS_NOT_ALL)
		return 1;
	for (int i = 0; i < tl->nacc; i++)
		if (op->acc[i].kind != ALLOC_DEVICE)
			return 1;	/* managed, host-mapped, VMM */
	/*
	 * Without parameters a kernel reaches memory only through its
	 * module's variables (or no memory at all): unless its PTX told.
	 */
	if (tl->ki->nparams == 0 &&
	    tl->ki->vars.rw == KPARAMS_GLOBALS_UNKNOWN)
		return 1;
	return streams_barrier_kernel(tl->ki);
}

/* 1 and *r when the scheduler ran it; 0: pass it through. */
static int launch_sched(struct launch_op *op, CUresult *r)
{
	struct sched_access acc[LAUNCH_MAX_ACCESS + 2];
	struct streams_req rq = {
		.orig = streams_default_handle(op->call.orig,
					       op->call.per_thread),
		.issue = launch_issue,
		.arg = op,
	};
	const unsigned *g = op->tl.grid;

	switch (op->call.kind) {
	case LAUNCH_GRAPH:
	case LAUNCH_HOST_FUNC:
	case LAUNCH_CALLBACK:
		rq.flags = SCHED_BARRIER;
		break;
	case LAUNCH_KERNEL_EX:
		if (launch_ex_bound_to_stream(op->call.config)) {
			rq.flags = STREAMS_BRIDGE;
			break;
		}
		/* fall through */
	case LAUNCH_KERNEL:
	case LAUNCH_COOP:
		rq.blocks = (uint64_t)g[0] * g[1] * g[2];
		rq.fn = op->call.f;
		rq.grid = g;
		if (launch_is_barrier(op)) {
			rq.flags = SCHED_BARRIER |
				   (op->undecoded ? STREAMS_UNREAD : 0);
			break;
		}
		/*
		 * Read-write unless every parameter pointing into the
		 * allocation is proven read-only (ptx-table.h); a byte range
		 * when every one has an exact extent (kparams.h).
		 */
		for (int i = 0; i < op->tl.nacc; i++)
			acc[i] = (struct sched_access){
				.alloc_id = op->acc[i].alloc_id,
				.mode = op->acc[i].readonly ? SCHED_READ
							    : SCHED_RW,
				.off = op->acc[i].off,
				.len = op->acc[i].len,
			};
		rq.acc = acc;
		rq.nacc = op->tl.nacc;
		/*
		 * Its module's variables are in no allocation: kernels that
		 * reach them are ordered by pseudo ones (and so are copies
		 * to the variables, copy.c).
		 */
		if (op->tl.ki->vars.rw &&
		    op->tl.ki->vars.rw != KPARAMS_GLOBALS_UNKNOWN)
			acc[rq.nacc++] = (struct sched_access){
				.alloc_id = op->tl.ki->vars.rw,
				.mode = SCHED_RW,
			};
		if (op->tl.ki->vars.ro &&
		    op->tl.ki->vars.ro != KPARAMS_GLOBALS_UNKNOWN)
			acc[rq.nacc++] = (struct sched_access){
				.alloc_id = op->tl.ki->vars.ro,
				.mode = SCHED_READ,
			};
		break;
	}
	return streams_run(&rq, r);
}

/*
 * The memory manager: back what the launch touches; everything when kmux
 * cannot see what it touches (graphs are also pinned: their nodes may be
 * replayed at any later launch).  Host code touches nothing: it may not
 * make CUDA calls, and device memory is not host memory
 * (docs/design-memory.md says where that is false).
 */
static CUresult launch_mm_begin(struct launch_op *op, struct mm_op *mo)
{
	const struct trace_launch *tl = &op->tl;
	const struct launch_call *c = &op->call;
	int all;

	if (c->kind == LAUNCH_HOST_FUNC || c->kind == LAUNCH_CALLBACK)
		return mm_op_begin(mo, NULL, 0, 0, 0, c->orig, c->per_thread);
	all = c->kind == LAUNCH_GRAPH || !tl->ki ||
		  tl->ki->nparams < 0 ||
		  (tl->kflags & KPARAMS_NOT_ALL) ||
		  streams_barrier_kernel(tl->ki);

	return mm_op_begin_acc(mo, op->acc, all ? 0 : tl->nacc, all,
			       c->kind == LAUNCH_GRAPH, c->orig,
			       c->per_thread);
}

/* For kmuxd's kernels/s (register.c): one relaxed add, no fence. */
static inline void launch_count(void)
{
	atomic_fetch_add_explicit(&kmux_launches, 1, memory_order_relaxed);
}

static CUresult launch_go(struct launch_op *op)
{
	struct mm_op mo = { 0 };
	CUresult r;

	if (kmux_verify && op->tl.ki)
		verify_kernel(op->tl.ki->name);
	if (unlikely(mm_on) &&
	    (r = launch_mm_begin(op, &mo)) != CUDA_SUCCESS)
		op->token = NULL;
	else if (!(kmux_streams && streams_is_default(op->call.orig) &&
		   launch_sched(op, &r)))
		r = streams_pass(op->call.orig, launch_issue, op);
	mm_op_end(&mo);
	op->tl.t_end = trace_stamp();
	op->tl.result = r;
	trace_launch_end(op->token, op->stream, &op->tl);
	return r;
}

/* streams_pass_quick()'s issue: always as submitted. */
static CUresult launch_call_issue(void *arg, CUstream to)
{
	(void)to;
	return launch_real(arg, NULL);
}

/*
 * While the scheduler passes this context's work through, a kernel on a
 * default stream is issued as submitted with nothing read or recorded
 * (launch_sched_only()): 1 and *r when it was.
 */
static int launch_passed_quickly(const struct launch_call *c, CUresult *r)
{
	if (!launch_sched_only(c->orig))
		return 0;
	return streams_pass_quick(streams_default_handle(c->orig,
							 c->per_thread),
				  launch_call_issue, (void *)c, r);
}

static CUresult launch_kernel(int per_thread, CUfunction f, unsigned gx,
			      unsigned gy, unsigned gz, unsigned bx,
			      unsigned by, unsigned bz, unsigned shmem,
			      CUstream s, void **params, void **extra)
{
	const unsigned grid[3] = { gx, gy, gz }, block[3] = { bx, by, bz };
	struct launch_op op;
	CUresult r;

	op.call = (struct launch_call){ .kind = LAUNCH_KERNEL,
		.per_thread = per_thread, .orig = s, .f = f, .grid = grid,
		.block = block, .shmem = shmem, .params = params,
		.extra = extra };
	if (launch_passed_quickly(&op.call, &r))
		return r;
	launch_op_begin(&op, TRACE_API_LAUNCH);
	return launch_go(&op);
}

KMUX_EXPORT CUresult CUDAAPI cuLaunchKernel(CUfunction f, unsigned gx,
		unsigned gy, unsigned gz, unsigned bx, unsigned by,
		unsigned bz, unsigned shmem, CUstream s, void **params,
		void **extra)
{
	if (NO_DRIVER(cuLaunchKernel))
		return CUDA_ERROR_NOT_INITIALIZED;
	KMUX_GATE();
	launch_count();
	if (likely(!kmux_tracking))
		return REAL(cuLaunchKernel)(f, gx, gy, gz, bx, by, bz, shmem,
					    s, params, extra);
	KMUX_MM_SKIP(s, 0,
		     REAL(cuLaunchKernel)(f, gx, gy, gz, bx, by, bz, shmem, s,
					     params, extra));
	return launch_kernel(0, f, gx, gy, gz, bx, by, bz, shmem, s, params,
			     extra);
}

KMUX_EXPORT CUresult CUDAAPI cuLaunchKernel_ptsz(CUfunction f, unsigned gx,
		unsigned gy, unsigned gz, unsigned bx, unsigned by,
		unsigned bz, unsigned shmem, CUstream s, void **params,
		void **extra)
{
	if (NO_DRIVER(cuLaunchKernel_ptsz))
		return CUDA_ERROR_NOT_INITIALIZED;
	KMUX_GATE();
	launch_count();
	if (likely(!kmux_tracking))
		return REAL(cuLaunchKernel_ptsz)(f, gx, gy, gz, bx, by, bz,
						 shmem, s, params, extra);
	KMUX_MM_SKIP(s, 1,
		     REAL(cuLaunchKernel_ptsz)(f, gx, gy, gz, bx, by, bz, shmem,
						  s, params, extra));
	return launch_kernel(1, f, gx, gy, gz, bx, by, bz, shmem, s, params,
			     extra);
}

static CUresult launch_kernel_ex(int per_thread, const CUlaunchConfig *c,
				 CUfunction f, void **params, void **extra)
{
	struct launch_op op;
	unsigned grid[3], block[3];
	CUresult r;

	if (!c) {
		/* Let the driver report the bad argument. */
		return per_thread ? REAL(cuLaunchKernelEx_ptsz)(c, f, params, extra)
				  : REAL(cuLaunchKernelEx)(c, f, params, extra);
	}
	grid[0] = c->gridDimX, grid[1] = c->gridDimY, grid[2] = c->gridDimZ;
	block[0] = c->blockDimX, block[1] = c->blockDimY, block[2] = c->blockDimZ;
	op.call = (struct launch_call){ .kind = LAUNCH_KERNEL_EX,
		.per_thread = per_thread, .orig = c->hStream, .f = f,
		.grid = grid, .block = block, .shmem = c->sharedMemBytes,
		.params = params, .extra = extra, .config = c };
	/* Attributes bound to the stream are bridged, even passing through. */
	if (!launch_ex_bound_to_stream(c) &&
	    launch_passed_quickly(&op.call, &r))
		return r;
	launch_op_begin(&op, TRACE_API_LAUNCH_EX);
	return launch_go(&op);
}

KMUX_EXPORT CUresult CUDAAPI cuLaunchKernelEx(const CUlaunchConfig *c,
		CUfunction f, void **params, void **extra)
{
	if (NO_DRIVER(cuLaunchKernelEx))
		return CUDA_ERROR_NOT_INITIALIZED;
	KMUX_GATE();
	launch_count();
	if (likely(!kmux_tracking))
		return REAL(cuLaunchKernelEx)(c, f, params, extra);
	KMUX_MM_SKIP(c ? c->hStream : NULL, 0,
		     REAL(cuLaunchKernelEx)(c, f, params, extra));
	return launch_kernel_ex(0, c, f, params, extra);
}

KMUX_EXPORT CUresult CUDAAPI cuLaunchKernelEx_ptsz(const CUlaunchConfig *c,
		CUfunction f, void **params, void **extra)
{
	if (NO_DRIVER(cuLaunchKernelEx_ptsz))
		return CUDA_ERROR_NOT_INITIALIZED;
	KMUX_GATE();
	launch_count();
	if (likely(!kmux_tracking))
		return REAL(cuLaunchKernelEx_ptsz)(c, f, params, extra);
	KMUX_MM_SKIP(c ? c->hStream : NULL, 1,
		     REAL(cuLaunchKernelEx_ptsz)(c, f, params, extra));
	return launch_kernel_ex(1, c, f, params, extra);
}

static CUresult launch_coop(int per_thread, CUfunction f, unsigned gx,
			    unsigned gy, unsigned gz, unsigned bx, unsigned by,
			    unsigned bz, unsigned shmem, CUstream s,
			    void **params)
{
	const unsigned grid[3] = { gx, gy, gz }, block[3] = { bx, by, bz };
	struct launch_op op;

	op.call = (struct launch_call){ .kind = LAUNCH_COOP,
		.per_thread = per_thread, .orig = s, .f = f, .grid = grid,
		.block = block, .shmem = shmem, .params = params };
	launch_op_begin(&op, TRACE_API_LAUNCH_COOP);
	return launch_go(&op);
}

KMUX_EXPORT CUresult CUDAAPI cuLaunchCooperativeKernel(CUfunction f,
		unsigned gx, unsigned gy, unsigned gz, unsigned bx,
		unsigned by, unsigned bz, unsigned shmem, CUstream s,
		void **params)
{
	if (NO_DRIVER(cuLaunchCooperativeKernel))
		return CUDA_ERROR_NOT_INITIALIZED;
	KMUX_GATE();
	launch_count();
	if (likely(!kmux_tracking))
		return REAL(cuLaunchCooperativeKernel)(f, gx, gy, gz, bx, by,
						       bz, shmem, s, params);
	KMUX_MM_SKIP(s, 0,
		     REAL(cuLaunchCooperativeKernel)(f, gx, gy, gz, bx, by, bz,
							shmem, s, params));
	return launch_coop(0, f, gx, gy, gz, bx, by, bz, shmem, s, params);
}

KMUX_EXPORT CUresult CUDAAPI cuLaunchCooperativeKernel_ptsz(CUfunction f,
		unsigned gx, unsigned gy, unsigned gz, unsigned bx,
		unsigned by, unsigned bz, unsigned shmem, CUstream s,
		void **params)
{
	if (NO_DRIVER(cuLaunchCooperativeKernel_ptsz))
		return CUDA_ERROR_NOT_INITIALIZED;
	KMUX_GATE();
	launch_count();
	if (likely(!kmux_tracking))
		return REAL(cuLaunchCooperativeKernel_ptsz)(f, gx, gy, gz, bx,
							    by, bz, shmem, s,
							    params);
	KMUX_MM_SKIP(s, 1,
		     REAL(cuLaunchCooperativeKernel_ptsz)(f, gx, gy, gz, bx, by,
							     bz, shmem, s, params));
	return launch_coop(1, f, gx, gy, gz, bx, by, bz, shmem, s, params);
}

static CUresult launch_graph(int per_thread, CUgraphExec g, CUstream s)
{
	struct launch_op op;

	op.call = (struct launch_call){ .kind = LAUNCH_GRAPH,
		.per_thread = per_thread, .orig = s, .graph = g };
	launch_op_begin(&op, TRACE_API_GRAPH);
	return launch_go(&op);
}

/* One graph launch as the wrapper would make it, for mem_graph_launch(). */
struct graph_launch_args {
	int per_thread;
	CUgraphExec g;
	CUstream s;
};

static CUresult graph_launch_now(void *arg)
{
	const struct graph_launch_args *a = arg;

	if (likely(!kmux_tracking))
		return a->per_thread ? REAL(cuGraphLaunch_ptsz)(a->g, a->s)
				     : REAL(cuGraphLaunch)(a->g, a->s);
	return launch_graph(a->per_thread, a->g, a->s);
}

KMUX_EXPORT CUresult CUDAAPI cuGraphLaunch(CUgraphExec g, CUstream s)
{
	if (NO_DRIVER(cuGraphLaunch))
		return CUDA_ERROR_NOT_INITIALIZED;
	KMUX_GATE();
	launch_count();
	/* A graph with memory nodes allocates as it launches. */
	if (unlikely(gmem_any()))
		return mem_graph_launch(g, graph_launch_now,
			&(struct graph_launch_args){ .g = g, .s = s });
	if (likely(!kmux_tracking))
		return REAL(cuGraphLaunch)(g, s);
	return launch_graph(0, g, s);
}

KMUX_EXPORT CUresult CUDAAPI cuGraphLaunch_ptsz(CUgraphExec g, CUstream s)
{
	if (NO_DRIVER(cuGraphLaunch_ptsz))
		return CUDA_ERROR_NOT_INITIALIZED;
	KMUX_GATE();
	launch_count();
	if (unlikely(gmem_any()))
		return mem_graph_launch(g, graph_launch_now,
			&(struct graph_launch_args){ .per_thread = 1, .g = g,
						     .s = s });
	if (likely(!kmux_tracking))
		return REAL(cuGraphLaunch_ptsz)(g, s);
	return launch_graph(1, g, s);
}

static CUresult launch_host_func(int per_thread, CUstream s, CUhostFn fn,
				 void *data)
{
	struct launch_op op;

	op.call = (struct launch_call){ .kind = LAUNCH_HOST_FUNC,
		.per_thread = per_thread, .orig = s, .host_fn = fn,
		.data = data };
	launch_op_begin(&op, TRACE_API_HOST_FUNC);
	return launch_go(&op);
}

KMUX_EXPORT CUresult CUDAAPI cuLaunchHostFunc(CUstream s, CUhostFn fn,
					      void *data)
{
	if (NO_DRIVER(cuLaunchHostFunc))
		return CUDA_ERROR_NOT_INITIALIZED;
	if (likely(!kmux_tracking))
		return REAL(cuLaunchHostFunc)(s, fn, data);
	return launch_host_func(0, s, fn, data);
}

KMUX_EXPORT CUresult CUDAAPI cuLaunchHostFunc_ptsz(CUstream s, CUhostFn fn,
						   void *data)
{
	if (NO_DRIVER(cuLaunchHostFunc_ptsz))
		return CUDA_ERROR_NOT_INITIALIZED;
	if (likely(!kmux_tracking))
		return REAL(cuLaunchHostFunc_ptsz)(s, fn, data);
	return launch_host_func(1, s, fn, data);
}

/*
 * cuStreamAddCallback: host code like cuLaunchHostFunc (recorded as one in
 * the trace).  Wrapped so that a callback on a default stream keeps its
 * place among scheduled work.
 */
static CUresult launch_callback(int per_thread, CUstream s,
				CUstreamCallback cb, void *data,
				unsigned flags)
{
	struct launch_op op;

	op.call = (struct launch_call){ .kind = LAUNCH_CALLBACK,
		.per_thread = per_thread, .orig = s, .callback = cb,
		.callback_flags = flags, .data = data };
	launch_op_begin(&op, TRACE_API_HOST_FUNC);
	return launch_go(&op);
}

KMUX_EXPORT CUresult CUDAAPI cuStreamAddCallback(CUstream s,
		CUstreamCallback cb, void *data, unsigned flags)
{
	if (NO_DRIVER(cuStreamAddCallback))
		return CUDA_ERROR_NOT_INITIALIZED;
	if (likely(!kmux_tracking))
		return REAL(cuStreamAddCallback)(s, cb, data, flags);
	return launch_callback(0, s, cb, data, flags);
}

KMUX_EXPORT CUresult CUDAAPI cuStreamAddCallback_ptsz(CUstream s,
		CUstreamCallback cb, void *data, unsigned flags)
{
	if (NO_DRIVER(cuStreamAddCallback_ptsz))
		return CUDA_ERROR_NOT_INITIALIZED;
	if (likely(!kmux_tracking))
		return REAL(cuStreamAddCallback_ptsz)(s, cb, data, flags);
	return launch_callback(1, s, cb, data, flags);
}
