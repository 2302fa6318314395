/*
 * sim-stream.c - streams: a FIFO of operations executed in order by one
 * worker thread per stream, with CUDA's ordering rules between streams; the
 * stream API (create, destroy, synchronize, query, wait on an event, host
 * functions and callbacks, getters).
 *
 * Ordering rules, applied when an operation is submitted:
 *   - an operation on the legacy default stream waits for everything
 *     submitted so far to every blocking stream of the context (user streams
 *     without CU_STREAM_NON_BLOCKING and the per-thread default streams);
 *   - an operation on a blocking stream waits for everything submitted so
 *     far to the legacy default stream;
 *   - non-blocking streams do neither.
 * A dependency is "stream S has completed its first N operations"; the worker
 * starts an operation once all of its dependencies (and, for an event wait,
 * the event's mark) hold.  Each thread's per-thread default stream is an
 * ordinary blocking stream created on first use.
 *
 * Stream structures live until their context is torn down, because queued
 * operations may still name them in dependencies; a destroyed stream's
 * worker finishes the queue and exits, and is joined when the next stream of
 * the context is created or at teardown.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sim.h"

/* ---- marks and operations ----------------------------------------------- */

struct sim_mark *sim_mark_new(void)
{
	struct sim_mark *m = calloc(1, sizeof(*m));

	if (m != NULL)
		m->refs = 1;
	return m;
}

void sim_mark_put(struct sim_mark *m)
{
	if (m != NULL && --m->refs == 0)
		free(m);
}

struct sim_op *sim_op_new(enum sim_op_kind kind)
{
	struct sim_op *op = calloc(1, sizeof(*op));

	if (op != NULL)
		op->kind = kind;
	return op;
}

/* Lock held (marks and graph execs are reference counted under it). */
void sim_op_free(struct sim_op *op)
{
	if (op == NULL)
		return;
	free(op->deps);
	sim_mark_put(op->mark);
	switch (op->kind) {
	case SIM_OP_KERNEL:
		free(op->u.kernel.args);
		break;
	case SIM_OP_MEMCPY:
		free(op->u.copy.staged);
		break;
	case SIM_OP_GRAPH:
		sim_gexec_put(op->u.graph.g);
		break;
	default:
		break;
	}
	free(op);
}

/* Lock held.  A copy of op for a graph: no queue state, own buffers. */
struct sim_op *sim_op_clone(const struct sim_op *op)
{
	struct sim_op *n = sim_op_new(op->kind);

	if (n == NULL)
		return NULL;
	n->u = op->u;
	if (op->mark != NULL) {
		n->mark = op->mark;
		n->mark->refs++;
	}
	switch (op->kind) {
	case SIM_OP_KERNEL:
		n->u.kernel.args = NULL;
		if (op->u.kernel.args_len == 0)
			break;
		n->u.kernel.args = malloc(op->u.kernel.args_len);
		if (n->u.kernel.args == NULL)
			goto err;
		memcpy(n->u.kernel.args, op->u.kernel.args,
		       op->u.kernel.args_len);
		break;
	case SIM_OP_MEMCPY:
		n->u.copy.staged = NULL;
		if (op->u.copy.staged == NULL)
			break;
		n->u.copy.staged = malloc(op->u.copy.bytes);
		if (n->u.copy.staged == NULL)
			goto err;
		memcpy(n->u.copy.staged, op->u.copy.staged, op->u.copy.bytes);
		break;
	case SIM_OP_GRAPH:
		n->u.graph.g->refs++;
		break;
	default:
		break;
	}
	return n;
err:
	if (op->kind == SIM_OP_KERNEL)
		n->u.kernel.args = NULL;
	sim_mark_put(n->mark);
	free(n);
	return NULL;
}

/* ---- the worker ---------------------------------------------------------- */

static int blocking(const struct sim_stream *s)
{
	return !(s->flags & CU_STREAM_NON_BLOCKING);
}

static int op_ready(const struct sim_op *op)
{
	int i;

	for (i = 0; i < op->ndeps; i++)
		if (op->deps[i].s->completed < op->deps[i].pos)
			return 0;
	if (op->kind == SIM_OP_WAIT && op->mark != NULL && !op->mark->done)
		return 0;
	return 1;
}

static void *worker(void *arg)
{
	struct sim_stream *s = arg;
	struct sim_op *op;

	sim_lock();
	for (;;) {
		while (s->head == NULL && !s->stop)
			sim_wait();
		op = s->head;
		if (op == NULL)
			break;
		while (!op_ready(op))
			sim_wait();
		s->head = op->next;
		if (s->head == NULL)
			s->tail = NULL;
		s->running = 1;
		sim_unlock();

		sim_exec_op(s, op, 0);

		sim_lock();
		if (op->kind == SIM_OP_MARK) {
			op->mark->t_ns = sim_now();
			op->mark->done = 1;
		}
		s->running = 0;
		s->completed++;
		sim_op_free(op);
		sim_wake();
	}
	sim_unlock();
	return NULL;
}

static CUresult start_worker(struct sim_stream *s)
{
	int rc;

	if (s->has_thread)
		return CUDA_SUCCESS;
	rc = pthread_create(&s->thread, NULL, worker, s);
	if (rc != 0) {
		sim_warn("cannot start a stream worker thread: %s",
			 strerror(rc));
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	s->has_thread = 1;
	return CUDA_SUCCESS;
}

/* Lock held: drops it while joining. */
static void join_worker(struct sim_stream *s)
{
	pthread_t t = s->thread;

	if (!s->has_thread)
		return;
	s->has_thread = 0;
	s->stop = 1;
	sim_wake();
	sim_unlock();
	pthread_join(t, NULL);
	sim_lock();
}

/* Join the workers of destroyed, drained streams of c. */
static void reap(struct sim_ctx *c)
{
	struct sim_list *l;

restart:
	for (l = c->streams.next; l != &c->streams; l = l->next) {
		struct sim_stream *s = sim_container_of(l, struct sim_stream,
							link);

		if (s->destroyed && s->has_thread &&
		    s->completed == s->submitted) {
			join_worker(s);
			goto restart;
		}
	}
}

/* ---- submission ---------------------------------------------------------- */

static int add_dep(struct sim_op *op, int *cap, struct sim_stream *t)
{
	struct sim_dep *n;

	if (t->completed >= t->submitted)
		return 0;
	if (op->ndeps == *cap) {
		int ncap = *cap ? *cap * 2 : 4;

		n = realloc(op->deps, (size_t)ncap * sizeof(*n));
		if (n == NULL)
			return -1;
		op->deps = n;
		*cap = ncap;
	}
	op->deps[op->ndeps].s = t;
	op->deps[op->ndeps].pos = t->submitted;
	op->ndeps++;
	return 0;
}

/* The implicit synchronization of the legacy default stream. */
static int add_deps(struct sim_stream *s, struct sim_op *op)
{
	struct sim_ctx *c = s->ctx;
	struct sim_list *l;
	int cap = 0;

	if (s->kind == SIM_STREAM_LEGACY) {
		for (l = c->streams.next; l != &c->streams; l = l->next) {
			struct sim_stream *t = sim_container_of(
				l, struct sim_stream, link);

			if (t != s && blocking(t) && add_dep(op, &cap, t) < 0)
				return -1;
		}
		return 0;
	}
	if (blocking(s) && c->legacy != NULL)
		return add_dep(op, &cap, c->legacy);
	return 0;
}

CUresult sim_stream_submit(struct sim_stream *s, struct sim_op *op)
{
	CUresult err;

	if (s->cap != NULL)
		return sim_graph_capture_op(s, op);
	if (add_deps(s, op) < 0) {
		err = CUDA_ERROR_OUT_OF_MEMORY;
		goto err_free;
	}
	err = start_worker(s);
	if (err != CUDA_SUCCESS)
		goto err_free;
	if (op->seq == 0)
		op->seq = ++sim.next_seq;
	op->pos = ++s->submitted;
	op->next = NULL;
	if (s->tail != NULL)
		s->tail->next = op;
	else
		s->head = op;
	s->tail = op;
	sim_wake();
	return CUDA_SUCCESS;

err_free:
	sim_op_free(op);
	return err;
}

void sim_stream_wait_pos(struct sim_stream *s, uint64_t pos)
{
	while (s->completed < pos)
		sim_wait();
}

CUresult sim_stream_submit_sync(struct sim_stream *s, struct sim_op *op)
{
	CUresult err;

	if (s->cap != NULL) {
		sim_graph_capture_invalidate(s);
		sim_op_free(op);
		return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
	}
	err = sim_stream_submit(s, op);
	if (err != CUDA_SUCCESS)
		return err;
	sim_stream_wait_pos(s, s->submitted);
	return s->ctx->sticky;
}

CUresult sim_stream_sync(struct sim_stream *s)
{
	struct sim_op *op;

	if (s->kind != SIM_STREAM_LEGACY) {
		sim_stream_wait_pos(s, s->submitted);
		return s->ctx->sticky;
	}
	/*
	 * Synchronizing the legacy stream waits for the blocking streams too:
	 * a no-op submitted there gets exactly those dependencies.
	 */
	op = sim_op_new(SIM_OP_NOP);
	if (op == NULL)
		return CUDA_ERROR_OUT_OF_MEMORY;
	return sim_stream_submit_sync(s, op);
}

/* ---- creation, lookup, destruction --------------------------------------- */

struct sim_stream *sim_stream_new(struct sim_ctx *c, enum sim_stream_kind k,
				  unsigned flags, int prio)
{
	struct sim_stream *s = calloc(1, sizeof(*s));

	if (s == NULL)
		return NULL;
	s->id = sim_new_id();
	s->ctx = c;
	s->kind = k;
	s->flags = flags;
	s->prio = prio;
	if (k == SIM_STREAM_PTDS)
		s->owner = sim_thread_serial();
	if (k == SIM_STREAM_USER && sim_handle_add(s, SIM_H_STREAM) < 0) {
		free(s);
		return NULL;
	}
	sim_list_add_tail(&c->streams, &s->link);
	return s;
}

/* The calling thread's per-thread default stream in c, made on first use. */
static struct sim_stream *ptds(struct sim_ctx *c)
{
	uint64_t me = sim_thread_serial();
	struct sim_list *l;

	for (l = c->streams.next; l != &c->streams; l = l->next) {
		struct sim_stream *s = sim_container_of(l, struct sim_stream,
							link);

		if (s->kind == SIM_STREAM_PTDS && s->owner == me)
			return s;
	}
	return sim_stream_new(c, SIM_STREAM_PTDS, 0, 0);
}

CUresult sim_stream_resolve(CUstream h, int pt, struct sim_stream **out)
{
	struct sim_stream *s = (struct sim_stream *)h;
	struct sim_ctx *c;
	CUresult err;

	if (h == NULL || h == CU_STREAM_LEGACY || h == CU_STREAM_PER_THREAD) {
		err = sim_ctx_get(&c);
		if (err != CUDA_SUCCESS)
			return err;
		if (h == CU_STREAM_PER_THREAD || (h == NULL && pt))
			s = ptds(c);
		else
			s = c->legacy;
		if (s == NULL)
			return CUDA_ERROR_OUT_OF_MEMORY;
		*out = s;
		return CUDA_SUCCESS;
	}
	err = sim_check_init();
	if (err != CUDA_SUCCESS)
		return err;
	if (!sim_handle_ok(s, SIM_H_STREAM) || s->destroyed)
		return CUDA_ERROR_INVALID_HANDLE;
	if (!sim_ctx_usable(s->ctx))
		return CUDA_ERROR_INVALID_CONTEXT;
	*out = s;
	return CUDA_SUCCESS;
}

void sim_stream_free_all(struct sim_ctx *c)
{
	struct sim_list *l;

restart:
	for (l = c->streams.next; l != &c->streams; l = l->next) {
		struct sim_stream *s = sim_container_of(l, struct sim_stream,
							link);

		if (s->has_thread) {
			join_worker(s);
			goto restart;
		}
	}
	while (!sim_list_empty(&c->streams)) {
		struct sim_stream *s = sim_container_of(c->streams.next,
							struct sim_stream,
							link);

		while (s->head != NULL) {
			struct sim_op *op = s->head;

			s->head = op->next;
			sim_op_free(op);
		}
		if (s->kind == SIM_STREAM_USER)
			sim_handle_del(s);
		sim_list_del(&s->link);
		free(s);
	}
}

uint64_t sim_stream_handle_id(struct sim_stream *s)
{
	return s->id;
}

static CUresult stream_create(CUstream *phStream, unsigned int flags,
			      int prio)
{
	struct sim_stream *s;
	struct sim_ctx *c;
	CUresult err;

	if (phStream == NULL || (flags & ~(unsigned)CU_STREAM_NON_BLOCKING))
		return CUDA_ERROR_INVALID_VALUE;
	sim_lock();
	err = sim_ctx_get(&c);
	if (err != CUDA_SUCCESS)
		goto out;
	reap(c);
	if (!sim_ctx_usable(c)) {
		err = CUDA_ERROR_INVALID_CONTEXT;
		goto out;
	}
	s = sim_stream_new(c, SIM_STREAM_USER, flags, prio);
	if (s == NULL) {
		err = CUDA_ERROR_OUT_OF_MEMORY;
		goto out;
	}
	*phStream = (CUstream)s;
out:
	sim_unlock();
	return err;
}

SIM_API CUresult cuStreamCreate(CUstream *phStream, unsigned int Flags)
{
	return stream_create(phStream, Flags, 0);
}

SIM_API CUresult cuStreamCreateWithPriority(CUstream *phStream,
					    unsigned int flags, int priority)
{
	/* Clamp into [greatest, least] = [-5, 0] as the driver does. */
	if (priority > 0)
		priority = 0;
	if (priority < -5)
		priority = -5;
	return stream_create(phStream, flags, priority);
}

SIM_API CUresult cuStreamDestroy_v2(CUstream hStream)
{
	struct sim_stream *s = (struct sim_stream *)hStream;
	CUresult err = sim_check_init();

	if (err != CUDA_SUCCESS)
		return err;
	sim_lock();
	if (!sim_handle_ok(s, SIM_H_STREAM) || s->destroyed) {
		err = CUDA_ERROR_INVALID_HANDLE;
		goto out;
	}
	/* Queued work still runs; the worker exits once it is done. */
	s->destroyed = 1;
	s->stop = 1;
	s->cap = NULL;
	sim_handle_del(s);
	sim_wake();
out:
	sim_unlock();
	return err;
}

SIM_API CUresult cuStreamDestroy(CUstream hStream)
{
	return cuStreamDestroy_v2(hStream);
}

/* ---- synchronization ---------------------------------------------------- */

static CUresult stream_synchronize(CUstream h, int pt)
{
	struct sim_stream *s;
	CUresult err;

	sim_lock();
	err = sim_stream_resolve(h, pt, &s);
	if (err != CUDA_SUCCESS)
		goto out;
	if (s->cap != NULL) {
		sim_graph_capture_invalidate(s);
		err = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
		goto out;
	}
	err = sim_stream_sync(s);
out:
	sim_unlock();
	return err;
}

SIM_API CUresult cuStreamSynchronize(CUstream hStream)
{
	return stream_synchronize(hStream, 0);
}

SIM_API CUresult cuStreamSynchronize_ptsz(CUstream hStream)
{
	return stream_synchronize(hStream, 1);
}

static int stream_busy(struct sim_stream *s)
{
	struct sim_list *l;

	if (s->completed < s->submitted)
		return 1;
	if (s->kind != SIM_STREAM_LEGACY)
		return 0;
	/* Work on the legacy stream would wait for these: not idle. */
	for (l = s->ctx->streams.next; l != &s->ctx->streams; l = l->next) {
		struct sim_stream *t = sim_container_of(l, struct sim_stream,
							link);

		if (blocking(t) && t->completed < t->submitted)
			return 1;
	}
	return 0;
}

static CUresult stream_query(CUstream h, int pt)
{
	struct sim_stream *s;
	CUresult err;

	sim_lock();
	err = sim_stream_resolve(h, pt, &s);
	if (err != CUDA_SUCCESS)
		goto out;
	if (s->cap != NULL) {
		sim_graph_capture_invalidate(s);
		err = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
		goto out;
	}
	if (s->ctx->sticky != CUDA_SUCCESS)
		err = s->ctx->sticky;
	else if (stream_busy(s))
		err = CUDA_ERROR_NOT_READY;
out:
	sim_unlock();
	return err;
}

SIM_API CUresult cuStreamQuery(CUstream hStream)
{
	return stream_query(hStream, 0);
}

SIM_API CUresult cuStreamQuery_ptsz(CUstream hStream)
{
	return stream_query(hStream, 1);
}

static CUresult stream_wait_event(CUstream h, CUevent hEvent,
				  unsigned int flags, int pt)
{
	struct sim_event *ev = (struct sim_event *)hEvent;
	struct sim_stream *s;
	struct sim_op *op;
	CUresult err;

	if (flags & ~(unsigned)CU_EVENT_WAIT_EXTERNAL)
		return CUDA_ERROR_INVALID_VALUE;
	sim_lock();
	err = sim_stream_resolve(h, pt, &s);
	if (err != CUDA_SUCCESS)
		goto out;
	if (!sim_handle_ok(ev, SIM_H_EVENT)) {
		err = CUDA_ERROR_INVALID_HANDLE;
		goto out;
	}
	if (ev->captured != NULL) {
		/* Waiting on a captured event joins the capture (fork). */
		if (s->cap == NULL) {
			s->cap = ev->captured;
			s->cap_origin = 0;
		}
		goto out;
	}
	if (s->cap != NULL || ev->mark == NULL)
		goto out;	/* nothing recorded: nothing to wait for */
	op = sim_op_new(SIM_OP_WAIT);
	if (op == NULL) {
		err = CUDA_ERROR_OUT_OF_MEMORY;
		goto out;
	}
	op->mark = ev->mark;
	op->mark->refs++;
	err = sim_stream_submit(s, op);
out:
	sim_unlock();
	return err;
}

SIM_API CUresult cuStreamWaitEvent(CUstream hStream, CUevent hEvent,
				   unsigned int Flags)
{
	return stream_wait_event(hStream, hEvent, Flags, 0);
}

SIM_API CUresult cuStreamWaitEvent_ptsz(CUstream hStream, CUevent hEvent,
					unsigned int Flags)
{
	return stream_wait_event(hStream, hEvent, Flags, 1);
}

/* ---- host work in stream order ------------------------------------------ */

static CUresult submit_host(CUstream h, int pt, enum sim_op_kind kind,
			    CUhostFn fn, CUstreamCallback cb, void *data)
{
	struct sim_stream *s;
	struct sim_op *op;
	CUresult err;

	sim_lock();
	err = sim_stream_resolve(h, pt, &s);
	if (err == CUDA_SUCCESS)
		err = s->ctx->sticky;
	if (err != CUDA_SUCCESS)
		goto out;
	op = sim_op_new(kind);
	if (op == NULL) {
		err = CUDA_ERROR_OUT_OF_MEMORY;
		goto out;
	}
	op->u.host.fn = fn;
	op->u.host.cb = cb;
	op->u.host.handle = h;
	op->u.host.data = data;
	err = sim_stream_submit(s, op);
out:
	sim_unlock();
	return err;
}

SIM_API CUresult cuLaunchHostFunc(CUstream hStream, CUhostFn fn,
				  void *userData)
{
	if (fn == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	return submit_host(hStream, 0, SIM_OP_HOST, fn, NULL, userData);
}

SIM_API CUresult cuLaunchHostFunc_ptsz(CUstream hStream, CUhostFn fn,
				       void *userData)
{
	if (fn == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	return submit_host(hStream, 1, SIM_OP_HOST, fn, NULL, userData);
}

SIM_API CUresult cuStreamAddCallback(CUstream hStream,
				     CUstreamCallback callback,
				     void *userData, unsigned int flags)
{
	if (callback == NULL || flags != 0)
		return CUDA_ERROR_INVALID_VALUE;
	return submit_host(hStream, 0, SIM_OP_CALLBACK, NULL, callback,
			   userData);
}

SIM_API CUresult cuStreamAddCallback_ptsz(CUstream hStream,
					  CUstreamCallback callback,
					  void *userData, unsigned int flags)
{
	if (callback == NULL || flags != 0)
		return CUDA_ERROR_INVALID_VALUE;
	return submit_host(hStream, 1, SIM_OP_CALLBACK, NULL, callback,
			   userData);
}

/* ---- getters ------------------------------------------------------------- */

static CUresult stream_get(CUstream h, int pt, struct sim_stream **s)
{
	CUresult err;

	sim_lock();
	err = sim_stream_resolve(h, pt, s);
	sim_unlock();
	return err;
}

static CUresult get_flags(CUstream h, unsigned int *flags, int pt)
{
	struct sim_stream *s;
	CUresult err;

	if (flags == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	err = stream_get(h, pt, &s);
	if (err == CUDA_SUCCESS)
		*flags = s->flags;
	return err;
}

SIM_API CUresult cuStreamGetFlags(CUstream hStream, unsigned int *flags)
{
	return get_flags(hStream, flags, 0);
}

SIM_API CUresult cuStreamGetFlags_ptsz(CUstream hStream, unsigned int *flags)
{
	return get_flags(hStream, flags, 1);
}

static CUresult get_priority(CUstream h, int *priority, int pt)
{
	struct sim_stream *s;
	CUresult err;

	if (priority == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	err = stream_get(h, pt, &s);
	if (err == CUDA_SUCCESS)
		*priority = s->prio;
	return err;
}

SIM_API CUresult cuStreamGetPriority(CUstream hStream, int *priority)
{
	return get_priority(hStream, priority, 0);
}

SIM_API CUresult cuStreamGetPriority_ptsz(CUstream hStream, int *priority)
{
	return get_priority(hStream, priority, 1);
}

static CUresult get_ctx(CUstream h, CUcontext *pctx, int pt)
{
	struct sim_stream *s;
	CUresult err;

	if (pctx == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	err = stream_get(h, pt, &s);
	if (err == CUDA_SUCCESS)
		*pctx = (CUcontext)s->ctx;
	return err;
}

SIM_API CUresult cuStreamGetCtx(CUstream hStream, CUcontext *pctx)
{
	return get_ctx(hStream, pctx, 0);
}

SIM_API CUresult cuStreamGetCtx_ptsz(CUstream hStream, CUcontext *pctx)
{
	return get_ctx(hStream, pctx, 1);
}

static CUresult get_id(CUstream h, unsigned long long *id, int pt)
{
	struct sim_stream *s;
	CUresult err;

	if (id == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	err = stream_get(h, pt, &s);
	if (err == CUDA_SUCCESS)
		*id = s->id;
	return err;
}

SIM_API CUresult cuStreamGetId(CUstream hStream, unsigned long long *streamId)
{
	return get_id(hStream, streamId, 0);
}

SIM_API CUresult cuStreamGetId_ptsz(CUstream hStream,
				    unsigned long long *streamId)
{
	return get_id(hStream, streamId, 1);
}

static CUresult get_device(CUstream h, CUdevice *device, int pt)
{
	struct sim_stream *s;
	CUresult err;

	if (device == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	err = stream_get(h, pt, &s);
	if (err == CUDA_SUCCESS)
		*device = s->ctx->dev->ordinal;
	return err;
}

SIM_API CUresult cuStreamGetDevice(CUstream hStream, CUdevice *device)
{
	return get_device(hStream, device, 0);
}

SIM_API CUresult cuStreamGetDevice_ptsz(CUstream hStream, CUdevice *device)
{
	return get_device(hStream, device, 1);
}
