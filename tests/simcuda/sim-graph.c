/*
 * sim-graph.c - CUDA graphs, as far as stream capture makes them: begin and
 * end capture, capture status, instantiation, launch and destruction.
 *
 * While a stream captures, the operations submitted to it are appended to
 * the graph instead of running.  Recording an event in a capturing stream
 * and waiting for it from another stream makes that stream join the capture
 * (the usual fork/join pattern); its operations are appended to the same
 * graph, so a replay runs the captured operations one after another in
 * capture order, which is a valid order of the captured dependency graph
 * (less concurrent, never less ordered).  Synchronizing or querying a
 * capturing stream is refused with CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED and
 * invalidates the capture, as the driver does.
 *
 * cuGraphLaunch submits one GRAPH operation; when the stream reaches it the
 * worker replays the nodes in order, each with its own record (carrying the
 * graph exec id), inside a "graph" record of its own.
 */
#include <stdlib.h>

#include "sim.h"

static struct sim_graph *graph_new(struct sim_ctx *c)
{
	struct sim_graph *g = calloc(1, sizeof(*g));

	if (g == NULL)
		return NULL;
	g->id = sim_new_id();
	g->ctx = c;
	sim_list_add_tail(&c->graphs, &g->link);
	return g;
}

static void graph_free(struct sim_graph *g)
{
	while (g->head != NULL) {
		struct sim_op *op = g->head;

		g->head = op->next;
		sim_op_free(op);
	}
	if (g->registered)
		sim_handle_del(g);
	sim_list_del(&g->link);
	free(g);
}

static void gexec_free(struct sim_gexec *x)
{
	unsigned i;

	for (i = 0; i < x->nops; i++)
		sim_op_free(x->ops[i]);
	free(x->ops);
	sim_list_del(&x->link);
	free(x);
}

void sim_gexec_put(struct sim_gexec *x)
{
	if (x != NULL && --x->refs == 0)
		gexec_free(x);
}

void sim_graph_free_all(struct sim_ctx *c)
{
	while (!sim_list_empty(&c->gexecs)) {
		struct sim_gexec *x = sim_container_of(c->gexecs.next,
						       struct sim_gexec, link);

		if (!x->destroyed)
			sim_handle_del(x);
		gexec_free(x);
	}
	while (!sim_list_empty(&c->graphs))
		graph_free(sim_container_of(c->graphs.next, struct sim_graph,
					    link));
}

CUresult sim_graph_capture_op(struct sim_stream *s, struct sim_op *op)
{
	struct sim_graph *g = s->cap;

	if (g->invalid) {
		sim_op_free(op);
		return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
	}
	if (op->kind == SIM_OP_MARK || op->kind == SIM_OP_WAIT ||
	    op->kind == SIM_OP_NOP) {
		sim_op_free(op);
		return CUDA_SUCCESS;
	}
	op->next = NULL;
	if (g->tail != NULL)
		g->tail->next = op;
	else
		g->head = op;
	g->tail = op;
	g->nops++;
	return CUDA_SUCCESS;
}

void sim_graph_capture_invalidate(struct sim_stream *s)
{
	if (s->cap != NULL)
		s->cap->invalid = 1;
}

/* ---- capture ------------------------------------------------------------- */

static CUresult begin_capture(CUstream h, CUstreamCaptureMode mode, int pt)
{
	struct sim_stream *s;
	struct sim_graph *g;
	CUresult err;

	if ((unsigned)mode > CU_STREAM_CAPTURE_MODE_RELAXED)
		return CUDA_ERROR_INVALID_VALUE;
	sim_lock();
	err = sim_stream_resolve(h, pt, &s);
	if (err != CUDA_SUCCESS)
		goto out;
	if (s->kind == SIM_STREAM_LEGACY) {
		err = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
		goto out;
	}
	if (s->cap != NULL) {
		err = CUDA_ERROR_ILLEGAL_STATE;
		goto out;
	}
	g = graph_new(s->ctx);
	if (g == NULL) {
		err = CUDA_ERROR_OUT_OF_MEMORY;
		goto out;
	}
	s->cap = g;
	s->cap_origin = 1;
	s->cap_id = sim_new_id();
	s->cap_mode = mode;
out:
	sim_unlock();
	return err;
}

SIM_API CUresult cuStreamBeginCapture_v2(CUstream hStream,
					 CUstreamCaptureMode mode)
{
	return begin_capture(hStream, mode, 0);
}

SIM_API CUresult cuStreamBeginCapture_v2_ptsz(CUstream hStream,
					      CUstreamCaptureMode mode)
{
	return begin_capture(hStream, mode, 1);
}

SIM_API CUresult cuStreamBeginCapture(CUstream hStream)
{
	return begin_capture(hStream, CU_STREAM_CAPTURE_MODE_GLOBAL, 0);
}

SIM_API CUresult cuStreamBeginCapture_ptsz(CUstream hStream)
{
	return begin_capture(hStream, CU_STREAM_CAPTURE_MODE_GLOBAL, 1);
}

static CUresult end_capture(CUstream h, CUgraph *phGraph, int pt)
{
	struct sim_stream *s;
	struct sim_graph *g;
	struct sim_list *l;
	CUresult err;

	if (phGraph == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	sim_lock();
	err = sim_stream_resolve(h, pt, &s);
	if (err != CUDA_SUCCESS)
		goto out;
	g = s->cap;
	if (g == NULL) {
		err = CUDA_ERROR_ILLEGAL_STATE;
		goto out;
	}
	if (!s->cap_origin) {
		err = CUDA_ERROR_STREAM_CAPTURE_UNMATCHED;
		goto out;
	}
	/* Joined streams and captured events leave the capture with it. */
	for (l = s->ctx->streams.next; l != &s->ctx->streams; l = l->next) {
		struct sim_stream *t = sim_container_of(l, struct sim_stream,
							link);

		if (t->cap == g)
			t->cap = NULL;
	}
	for (l = s->ctx->events.next; l != &s->ctx->events; l = l->next) {
		struct sim_event *ev = sim_container_of(l, struct sim_event,
							link);

		if (ev->captured == g)
			ev->captured = NULL;
	}
	*phGraph = NULL;
	if (g->invalid) {
		graph_free(g);
		err = CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
		goto out;
	}
	if (sim_handle_add(g, SIM_H_GRAPH) < 0) {
		graph_free(g);
		err = CUDA_ERROR_OUT_OF_MEMORY;
		goto out;
	}
	g->registered = 1;
	*phGraph = (CUgraph)g;
out:
	sim_unlock();
	return err;
}

SIM_API CUresult cuStreamEndCapture(CUstream hStream, CUgraph *phGraph)
{
	return end_capture(hStream, phGraph, 0);
}

SIM_API CUresult cuStreamEndCapture_ptsz(CUstream hStream, CUgraph *phGraph)
{
	return end_capture(hStream, phGraph, 1);
}

static CUstreamCaptureStatus capture_status(const struct sim_stream *s)
{
	if (s->cap == NULL)
		return CU_STREAM_CAPTURE_STATUS_NONE;
	return s->cap->invalid ? CU_STREAM_CAPTURE_STATUS_INVALIDATED
			       : CU_STREAM_CAPTURE_STATUS_ACTIVE;
}

static CUresult capture_info(CUstream h, int pt, CUstreamCaptureStatus *st,
			     cuuint64_t *id, CUgraph *graph,
			     const CUgraphNode **deps,
			     const CUgraphEdgeData **edges, size_t *ndeps)
{
	struct sim_stream *s;
	CUresult err;

	if (st == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	sim_lock();
	err = sim_stream_resolve(h, pt, &s);
	if (err != CUDA_SUCCESS)
		goto out;
	*st = capture_status(s);
	if (id != NULL && s->cap != NULL)
		*id = s->cap_id;
	/* The graph of a capture in progress is not a public handle here. */
	if (graph != NULL)
		*graph = NULL;
	if (deps != NULL)
		*deps = NULL;
	if (edges != NULL)
		*edges = NULL;
	if (ndeps != NULL)
		*ndeps = 0;
out:
	sim_unlock();
	return err;
}

SIM_API CUresult cuStreamIsCapturing(CUstream hStream,
				     CUstreamCaptureStatus *captureStatus)
{
	return capture_info(hStream, 0, captureStatus, NULL, NULL, NULL, NULL,
			    NULL);
}

SIM_API CUresult cuStreamIsCapturing_ptsz(CUstream hStream,
					  CUstreamCaptureStatus *captureStatus)
{
	return capture_info(hStream, 1, captureStatus, NULL, NULL, NULL, NULL,
			    NULL);
}

SIM_API CUresult cuStreamGetCaptureInfo(CUstream hStream,
		CUstreamCaptureStatus *captureStatus_out, cuuint64_t *id_out)
{
	return capture_info(hStream, 0, captureStatus_out, id_out, NULL, NULL,
			    NULL, NULL);
}

SIM_API CUresult cuStreamGetCaptureInfo_ptsz(CUstream hStream,
		CUstreamCaptureStatus *captureStatus_out, cuuint64_t *id_out)
{
	return capture_info(hStream, 1, captureStatus_out, id_out, NULL, NULL,
			    NULL, NULL);
}

SIM_API CUresult cuStreamGetCaptureInfo_v2(CUstream hStream,
		CUstreamCaptureStatus *captureStatus_out, cuuint64_t *id_out,
		CUgraph *graph_out, const CUgraphNode **dependencies_out,
		size_t *numDependencies_out)
{
	return capture_info(hStream, 0, captureStatus_out, id_out, graph_out,
			    dependencies_out, NULL, numDependencies_out);
}

SIM_API CUresult cuStreamGetCaptureInfo_v2_ptsz(CUstream hStream,
		CUstreamCaptureStatus *captureStatus_out, cuuint64_t *id_out,
		CUgraph *graph_out, const CUgraphNode **dependencies_out,
		size_t *numDependencies_out)
{
	return capture_info(hStream, 1, captureStatus_out, id_out, graph_out,
			    dependencies_out, NULL, numDependencies_out);
}

SIM_API CUresult cuStreamGetCaptureInfo_v3(CUstream hStream,
		CUstreamCaptureStatus *captureStatus_out, cuuint64_t *id_out,
		CUgraph *graph_out, const CUgraphNode **dependencies_out,
		const CUgraphEdgeData **edgeData_out,
		size_t *numDependencies_out)
{
	return capture_info(hStream, 0, captureStatus_out, id_out, graph_out,
			    dependencies_out, edgeData_out,
			    numDependencies_out);
}

SIM_API CUresult cuStreamGetCaptureInfo_v3_ptsz(CUstream hStream,
		CUstreamCaptureStatus *captureStatus_out, cuuint64_t *id_out,
		CUgraph *graph_out, const CUgraphNode **dependencies_out,
		const CUgraphEdgeData **edgeData_out,
		size_t *numDependencies_out)
{
	return capture_info(hStream, 1, captureStatus_out, id_out, graph_out,
			    dependencies_out, edgeData_out,
			    numDependencies_out);
}

/* ---- graphs and executable graphs ---------------------------------------- */

SIM_API CUresult cuGraphCreate(CUgraph *phGraph, unsigned int flags)
{
	struct sim_graph *g;
	struct sim_ctx *c;
	CUresult err;

	if (phGraph == NULL || flags != 0)
		return CUDA_ERROR_INVALID_VALUE;
	sim_lock();
	err = sim_ctx_get(&c);
	if (err != CUDA_SUCCESS)
		goto out;
	g = graph_new(c);
	if (g == NULL || sim_handle_add(g, SIM_H_GRAPH) < 0) {
		if (g != NULL)
			graph_free(g);
		err = CUDA_ERROR_OUT_OF_MEMORY;
		goto out;
	}
	g->registered = 1;
	*phGraph = (CUgraph)g;
out:
	sim_unlock();
	return err;
}

SIM_API CUresult cuGraphDestroy(CUgraph hGraph)
{
	struct sim_graph *g = (struct sim_graph *)hGraph;
	CUresult err = sim_check_init();

	if (err != CUDA_SUCCESS)
		return err;
	sim_lock();
	if (!sim_handle_ok(g, SIM_H_GRAPH))
		err = CUDA_ERROR_INVALID_VALUE;
	else
		graph_free(g);
	sim_unlock();
	return err;
}

SIM_API CUresult cuGraphInstantiateWithFlags(CUgraphExec *phGraphExec,
					     CUgraph hGraph,
					     unsigned long long flags)
{
	struct sim_graph *g = (struct sim_graph *)hGraph;
	struct sim_gexec *x;
	struct sim_op *op;
	CUresult err = sim_check_init();

	(void)flags;	/* upload / auto-free / priority: nothing to do */
	if (err != CUDA_SUCCESS)
		return err;
	if (phGraphExec == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	sim_lock();
	if (!sim_handle_ok(g, SIM_H_GRAPH)) {
		err = CUDA_ERROR_INVALID_VALUE;
		goto out;
	}
	x = calloc(1, sizeof(*x));
	if (x == NULL) {
		err = CUDA_ERROR_OUT_OF_MEMORY;
		goto out;
	}
	sim_list_add_tail(&g->ctx->gexecs, &x->link);
	x->id = sim_new_id();
	x->ctx = g->ctx;
	x->refs = 1;
	x->ops = calloc(g->nops ? g->nops : 1, sizeof(*x->ops));
	if (x->ops == NULL)
		goto err_free;
	for (op = g->head; op != NULL; op = op->next) {
		x->ops[x->nops] = sim_op_clone(op);
		if (x->ops[x->nops] == NULL)
			goto err_free;
		x->nops++;
	}
	if (sim_handle_add(x, SIM_H_GEXEC) < 0)
		goto err_free;
	*phGraphExec = (CUgraphExec)x;
	goto out;

err_free:
	gexec_free(x);
	err = CUDA_ERROR_OUT_OF_MEMORY;
out:
	sim_unlock();
	return err;
}

SIM_API CUresult cuGraphInstantiate_v2(CUgraphExec *phGraphExec,
				       CUgraph hGraph, CUgraphNode *phErrorNode,
				       char *logBuffer, size_t bufferSize)
{
	if (phErrorNode != NULL)
		*phErrorNode = NULL;
	if (logBuffer != NULL && bufferSize > 0)
		logBuffer[0] = '\0';
	return cuGraphInstantiateWithFlags(phGraphExec, hGraph, 0);
}

SIM_API CUresult cuGraphInstantiate(CUgraphExec *phGraphExec, CUgraph hGraph,
				    CUgraphNode *phErrorNode, char *logBuffer,
				    size_t bufferSize)
{
	return cuGraphInstantiate_v2(phGraphExec, hGraph, phErrorNode,
				     logBuffer, bufferSize);
}

SIM_API CUresult cuGraphExecDestroy(CUgraphExec hGraphExec)
{
	struct sim_gexec *x = (struct sim_gexec *)hGraphExec;
	CUresult err = sim_check_init();

	if (err != CUDA_SUCCESS)
		return err;
	sim_lock();
	if (!sim_handle_ok(x, SIM_H_GEXEC)) {
		err = CUDA_ERROR_INVALID_VALUE;
	} else {
		/* Launches still queued keep it alive until they ran. */
		sim_handle_del(x);
		x->destroyed = 1;
		sim_gexec_put(x);
	}
	sim_unlock();
	return err;
}

static CUresult graph_launch(CUgraphExec hGraphExec, CUstream h, int pt)
{
	struct sim_gexec *x = (struct sim_gexec *)hGraphExec;
	struct sim_stream *s;
	struct sim_op *op;
	CUresult err;

	sim_lock();
	err = sim_stream_resolve(h, pt, &s);
	if (err == CUDA_SUCCESS)
		err = s->ctx->sticky;
	if (err != CUDA_SUCCESS)
		goto out;
	if (!sim_handle_ok(x, SIM_H_GEXEC)) {
		err = CUDA_ERROR_INVALID_VALUE;
		goto out;
	}
	op = sim_op_new(SIM_OP_GRAPH);
	if (op == NULL) {
		err = CUDA_ERROR_OUT_OF_MEMORY;
		goto out;
	}
	op->u.graph.g = x;
	x->refs++;
	err = sim_stream_submit(s, op);
out:
	sim_unlock();
	return err;
}

SIM_API CUresult cuGraphLaunch(CUgraphExec hGraphExec, CUstream hStream)
{
	return graph_launch(hGraphExec, hStream, 0);
}

SIM_API CUresult cuGraphLaunch_ptsz(CUgraphExec hGraphExec, CUstream hStream)
{
	return graph_launch(hGraphExec, hStream, 1);
}

static CUresult graph_upload(CUgraphExec hGraphExec, CUstream h, int pt)
{
	struct sim_stream *s;
	CUresult err;

	sim_lock();
	err = sim_stream_resolve(h, pt, &s);
	if (err == CUDA_SUCCESS && !sim_handle_ok(hGraphExec, SIM_H_GEXEC))
		err = CUDA_ERROR_INVALID_VALUE;
	sim_unlock();
	return err;
}

SIM_API CUresult cuGraphUpload(CUgraphExec hGraphExec, CUstream hStream)
{
	return graph_upload(hGraphExec, hStream, 0);
}

SIM_API CUresult cuGraphUpload_ptsz(CUgraphExec hGraphExec, CUstream hStream)
{
	return graph_upload(hGraphExec, hStream, 1);
}

/* Worker side: replay the nodes of x->op's graph exec, in order. */
void sim_graph_run(struct sim_exec *x)
{
	struct sim_gexec *g = x->op->u.graph.g;
	unsigned i;

	for (i = 0; i < g->nops; i++) {
		struct sim_op *op;

		sim_lock();
		op = sim_op_clone(g->ops[i]);
		if (op == NULL)
			sim_exec_fault(x, 0, 0, 0, "nomem");
		sim_unlock();
		if (op == NULL)
			return;
		sim_exec_op(x->s, op, g->id);
		sim_lock();
		sim_op_free(op);
		sim_unlock();
	}
}
