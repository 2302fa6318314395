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
 * Memory nodes (cuGraphAddMemAllocNode / cuGraphAddMemFreeNode, or
 * cuMemAllocAsync / cuMemFreeAsync captured) are graph allocations
 * (sim-mem.c): their address is fixed at the node, their memory live from
 * a launch reaching the allocation node to a free.  cuGraphGetNodes and
 * the node getters see a graph's operations as its nodes.
 *
 * cuGraphLaunch submits one GRAPH operation; when the stream reaches it the
 * worker replays the nodes in order, each with its own record (carrying the
 * graph exec id), inside a "graph" record of its own.
 */
#include <stdlib.h>
#include <string.h>

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

/* Lock held.  op becomes g's last node. */
static void graph_append(struct sim_graph *g, struct sim_op *op)
{
	op->next = NULL;
	if (g->tail != NULL)
		g->tail->next = op;
	else
		g->head = op;
	g->tail = op;
	g->nops++;
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
	graph_append(g, op);
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

	/* upload / priority: nothing to do */
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
	x->auto_free = !!(flags & CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH);
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

SIM_API CUresult cuGraphInstantiateWithParams(CUgraphExec *phGraphExec,
		CUgraph hGraph, CUDA_GRAPH_INSTANTIATE_PARAMS *params)
{
	CUresult err;

	if (params == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	err = cuGraphInstantiateWithFlags(phGraphExec, hGraph, params->flags);
	params->result_out = err == CUDA_SUCCESS ?
			     CUDA_GRAPH_INSTANTIATE_SUCCESS :
			     CUDA_GRAPH_INSTANTIATE_ERROR;
	params->hErrNode_out = NULL;
	return err;
}

SIM_API CUresult cuGraphInstantiateWithParams_ptsz(CUgraphExec *phGraphExec,
		CUgraph hGraph, CUDA_GRAPH_INSTANTIATE_PARAMS *params)
{
	return cuGraphInstantiateWithParams(phGraphExec, hGraph, params);
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

	/* Auto-free: what the last launch left live is freed first. */
	sim_lock();
	for (i = 0; g->auto_free && i < g->nops; i++) {
		struct sim_alloc *a = g->ops[i]->kind == SIM_OP_GALLOC ?
				      sim_alloc_find(g->ops[i]->u.galloc.ptr) :
				      NULL;

		if (a != NULL && a->graph)
			a->live = 0;
	}
	sim_unlock();

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

/* ---- nodes ----------------------------------------------------------------
 *
 * A node is one of its graph's operations (its handle is the sim_op); the
 * graph keeps them in the order they were added, which is a valid order of
 * the dependencies given (each names nodes added before).  Only memory
 * nodes are made here; the other kinds come from capture.
 */

/* Lock held.  Whether n is a node of g. */
static int graph_has(const struct sim_graph *g, CUgraphNode n)
{
	for (const struct sim_op *op = g->head; op != NULL; op = op->next)
		if ((const void *)op == (const void *)n)
			return 1;
	return 0;
}

/* Lock held.  The operation of node n in the current context's graphs. */
static struct sim_op *node_op(CUgraphNode n)
{
	struct sim_list *l;
	struct sim_ctx *c;

	if (n == NULL || sim_ctx_get(&c) != CUDA_SUCCESS)
		return NULL;
	for (l = c->graphs.next; l != &c->graphs; l = l->next) {
		struct sim_graph *g = sim_container_of(l, struct sim_graph,
						       link);

		if (graph_has(g, n))
			return (struct sim_op *)n;
	}
	return NULL;
}

/* Lock held.  A new node of g: op is appended, deps must be g's nodes. */
static CUresult graph_add(struct sim_graph *g, const CUgraphNode *deps,
			  size_t ndeps, struct sim_op *op, CUgraphNode *out)
{
	for (size_t i = 0; i < ndeps; i++) {
		if (deps == NULL || !graph_has(g, deps[i])) {
			sim_op_free(op);
			return CUDA_ERROR_INVALID_VALUE;
		}
	}
	graph_append(g, op);
	*out = (CUgraphNode)op;
	return CUDA_SUCCESS;
}

SIM_API CUresult cuGraphAddMemAllocNode(CUgraphNode *phGraphNode,
		CUgraph hGraph, const CUgraphNode *dependencies,
		size_t numDependencies, CUDA_MEM_ALLOC_NODE_PARAMS *nodeParams)
{
	struct sim_graph *g = (struct sim_graph *)hGraph;
	struct sim_op *op;
	CUdeviceptr p;
	CUresult err = sim_check_init();

	if (err != CUDA_SUCCESS)
		return err;
	if (phGraphNode == NULL || nodeParams == NULL ||
	    nodeParams->bytesize == 0 ||
	    nodeParams->poolProps.location.type != CU_MEM_LOCATION_TYPE_DEVICE)
		return CUDA_ERROR_INVALID_VALUE;
	sim_lock();
	if (!sim_handle_ok(g, SIM_H_GRAPH) ||
	    nodeParams->poolProps.location.id != g->ctx->dev->ordinal) {
		err = CUDA_ERROR_INVALID_VALUE;
		goto out;
	}
	op = sim_op_new(SIM_OP_GALLOC);
	if (op == NULL) {
		err = CUDA_ERROR_OUT_OF_MEMORY;
		goto out;
	}
	err = sim_graph_alloc_new(g->ctx, nodeParams->bytesize, &p);
	if (err != CUDA_SUCCESS) {
		sim_op_free(op);
		goto out;
	}
	op->u.galloc.ptr = p;
	err = graph_add(g, dependencies, numDependencies, op, phGraphNode);
	if (err == CUDA_SUCCESS)
		nodeParams->dptr = p;
out:
	sim_unlock();
	return err;
}

SIM_API CUresult cuGraphAddMemFreeNode(CUgraphNode *phGraphNode,
		CUgraph hGraph, const CUgraphNode *dependencies,
		size_t numDependencies, CUdeviceptr dptr)
{
	struct sim_graph *g = (struct sim_graph *)hGraph;
	struct sim_alloc *a;
	struct sim_op *op;
	CUresult err = sim_check_init();

	if (err != CUDA_SUCCESS)
		return err;
	if (phGraphNode == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	sim_lock();
	a = sim_alloc_find(dptr);
	/* Only what an allocation node returned. */
	if (!sim_handle_ok(g, SIM_H_GRAPH) || a == NULL || a->base != dptr ||
	    !a->graph) {
		err = CUDA_ERROR_INVALID_VALUE;
		goto out;
	}
	op = sim_op_new(SIM_OP_FREE);
	if (op == NULL) {
		err = CUDA_ERROR_OUT_OF_MEMORY;
		goto out;
	}
	op->u.free.ptr = dptr;
	err = graph_add(g, dependencies, numDependencies, op, phGraphNode);
out:
	sim_unlock();
	return err;
}

SIM_API CUresult cuGraphGetNodes(CUgraph hGraph, CUgraphNode *nodes,
				 size_t *numNodes)
{
	struct sim_graph *g = (struct sim_graph *)hGraph;
	CUresult err = sim_check_init();
	size_t i = 0;

	if (err != CUDA_SUCCESS)
		return err;
	if (numNodes == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	sim_lock();
	if (!sim_handle_ok(g, SIM_H_GRAPH)) {
		err = CUDA_ERROR_INVALID_VALUE;
		goto out;
	}
	if (nodes != NULL) {
		/* As the driver: at most *numNodes, the rest NULL. */
		for (struct sim_op *op = g->head; op != NULL && i < *numNodes;
		     op = op->next)
			nodes[i++] = (CUgraphNode)op;
		for (; i < *numNodes; i++)
			nodes[i] = NULL;
	}
	*numNodes = g->nops;
out:
	sim_unlock();
	return err;
}

SIM_API CUresult cuGraphNodeGetType(CUgraphNode hNode, CUgraphNodeType *type)
{
	struct sim_op *op;
	CUresult err = sim_check_init();

	if (err != CUDA_SUCCESS)
		return err;
	if (type == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	sim_lock();
	op = node_op(hNode);
	if (op == NULL) {
		err = CUDA_ERROR_INVALID_VALUE;
		goto out;
	}
	switch (op->kind) {
	case SIM_OP_KERNEL:
		*type = CU_GRAPH_NODE_TYPE_KERNEL;
		break;
	case SIM_OP_MEMCPY:
		*type = CU_GRAPH_NODE_TYPE_MEMCPY;
		break;
	case SIM_OP_MEMSET:
		*type = CU_GRAPH_NODE_TYPE_MEMSET;
		break;
	case SIM_OP_HOST:
	case SIM_OP_CALLBACK:
		*type = CU_GRAPH_NODE_TYPE_HOST;
		break;
	case SIM_OP_GRAPH:
		*type = CU_GRAPH_NODE_TYPE_GRAPH;
		break;
	case SIM_OP_FREE:
		*type = CU_GRAPH_NODE_TYPE_MEM_FREE;
		break;
	case SIM_OP_GALLOC:
		*type = CU_GRAPH_NODE_TYPE_MEM_ALLOC;
		break;
	default:
		*type = CU_GRAPH_NODE_TYPE_EMPTY;
	}
out:
	sim_unlock();
	return err;
}

SIM_API CUresult cuGraphMemAllocNodeGetParams(CUgraphNode hNode,
		CUDA_MEM_ALLOC_NODE_PARAMS *params_out)
{
	struct sim_alloc *a;
	struct sim_op *op;
	CUresult err = sim_check_init();

	if (err != CUDA_SUCCESS)
		return err;
	if (params_out == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	sim_lock();
	op = node_op(hNode);
	a = op != NULL && op->kind == SIM_OP_GALLOC ?
	    sim_alloc_find(op->u.galloc.ptr) : NULL;
	if (a == NULL) {
		err = CUDA_ERROR_INVALID_VALUE;
		goto out;
	}
	memset(params_out, 0, sizeof(*params_out));
	params_out->poolProps.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
	params_out->poolProps.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	params_out->poolProps.location.id = a->dev;
	params_out->bytesize = a->size;
	params_out->dptr = a->base;
out:
	sim_unlock();
	return err;
}

SIM_API CUresult cuGraphMemFreeNodeGetParams(CUgraphNode hNode,
					     CUdeviceptr *dptr_out)
{
	struct sim_op *op;
	CUresult err = sim_check_init();

	if (err != CUDA_SUCCESS)
		return err;
	if (dptr_out == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	sim_lock();
	op = node_op(hNode);
	if (op == NULL || op->kind != SIM_OP_FREE)
		err = CUDA_ERROR_INVALID_VALUE;
	else
		*dptr_out = op->u.free.ptr;
	sim_unlock();
	return err;
}
