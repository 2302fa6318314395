/*
 * wrap-graph.c - instantiation and destruction of executable graphs: where
 * kmux learns a graph's memory nodes (graph-mem.h), which allocate and
 * free memory at each launch without the driver saying so.  The launches
 * themselves are in wrap-launch.c, their books in wrap-mem.c.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "graph-mem.h"
#include "log.h"
#include "preload.h"
#include "quota.h"

/* Child graphs nest; a deeper graph is not believed. */
#define GRAPH_WALK_DEPTH 16

struct graph_walk {
	struct gmem_node *alloc;
	uint64_t *free_va;
	uint32_t nalloc, nfree, cap_alloc, cap_free;
};

static int walk_grow(void **p, uint32_t *cap, size_t elem)
{
	uint32_t n = *cap ? *cap * 2 : 8;
	void *q;

	if (n < *cap)
		return -ENOMEM;
	q = realloc(*p, (size_t)n * elem);
	if (!q)
		return -ENOMEM;
	*p = q;
	*cap = n;
	return 0;
}

static int walk_node(CUgraphNode node, struct graph_walk *w, int depth);

/* Every memory node of g and of its child graphs: 0 or -errno. */
static int walk_graph(CUgraph g, struct graph_walk *w, int depth)
{
	CUgraphNode *nodes = NULL;
	size_t n = 0, got;
	int err = 0;

	if (depth > GRAPH_WALK_DEPTH)
		return -ELOOP;
	if (!REAL(cuGraphGetNodes) || !REAL(cuGraphNodeGetType))
		return -ENOSYS;
	if (REAL(cuGraphGetNodes)(g, NULL, &n) != CUDA_SUCCESS)
		return -EIO;
	if (!n)
		return 0;
	nodes = calloc(n, sizeof(*nodes));
	if (!nodes)
		return -ENOMEM;
	got = n;
	if (REAL(cuGraphGetNodes)(g, nodes, &got) != CUDA_SUCCESS) {
		err = -EIO;
		goto out;
	}
	for (size_t i = 0; i < n && i < got && !err; i++)
		err = walk_node(nodes[i], w, depth);
out:
	free(nodes);
	return err;
}

static int walk_node(CUgraphNode node, struct graph_walk *w, int depth)
{
	CUDA_MEM_ALLOC_NODE_PARAMS ap = { 0 };
	CUgraphNodeType type;
	CUdeviceptr va = 0;
	CUgraph child;

	if (REAL(cuGraphNodeGetType)(node, &type) != CUDA_SUCCESS)
		return -EIO;
	switch (type) {
	case CU_GRAPH_NODE_TYPE_MEM_ALLOC:
		if (!REAL(cuGraphMemAllocNodeGetParams))
			return -ENOSYS;
		if (REAL(cuGraphMemAllocNodeGetParams)(node, &ap) !=
		    CUDA_SUCCESS)
			return -EIO;
		if (w->nalloc == w->cap_alloc &&
		    walk_grow((void **)&w->alloc, &w->cap_alloc,
			      sizeof(*w->alloc)))
			return -ENOMEM;
		w->alloc[w->nalloc++] = (struct gmem_node){ .va = ap.dptr,
							    .size = ap.bytesize };
		return 0;
	case CU_GRAPH_NODE_TYPE_MEM_FREE:
		if (!REAL(cuGraphMemFreeNodeGetParams))
			return -ENOSYS;
		if (REAL(cuGraphMemFreeNodeGetParams)(node, &va) !=
		    CUDA_SUCCESS)
			return -EIO;
		if (w->nfree == w->cap_free &&
		    walk_grow((void **)&w->free_va, &w->cap_free,
			      sizeof(*w->free_va)))
			return -ENOMEM;
		w->free_va[w->nfree++] = va;
		return 0;
	case CU_GRAPH_NODE_TYPE_GRAPH:
		if (!REAL(cuGraphChildGraphNodeGetGraph))
			return -ENOSYS;
		if (REAL(cuGraphChildGraphNodeGetGraph)(node, &child) !=
		    CUDA_SUCCESS)
			return -EIO;
		return walk_graph(child, w, depth + 1);
	default:
		return 0;
	}
}

/*
 * After a successful instantiation of g into *x: learn its memory nodes.
 * Only kmux's quota and its tracker need them.  A graph kmux cannot read
 * launches as before, its memory unseen, and the log says so.
 */
static void graph_learn(CUresult r, const CUgraphExec *x, CUgraph g,
			unsigned long long flags)
{
	struct graph_walk w = { 0 };
	int err;

	if (r != CUDA_SUCCESS || !x || !*x || !(quota_on || kmux_tracking))
		return;
	err = walk_graph(g, &w, 0);
	if (!err)
		err = gmem_exec_add((uint64_t)(uintptr_t)*x, w.alloc, w.nalloc,
				    w.free_va, w.nfree,
				    flags & CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH);
	if (err) {
		gmem_exec_forget((uint64_t)(uintptr_t)*x);
		log_warn("graph instantiated: cannot read its memory nodes "
			 "(%s): what they allocate is neither counted by "
			 "KMUX_MEM_QUOTA nor known to the scheduler",
			 strerror(-err));
	} else if (w.nalloc || w.nfree) {
		log_debug("graph instantiated: %u allocation and %u free "
			  "nodes", w.nalloc, w.nfree);
	}
	free(w.alloc);
	free(w.free_va);
}

KMUX_EXPORT CUresult CUDAAPI cuGraphInstantiateWithFlags(CUgraphExec *x,
		CUgraph g, unsigned long long flags)
{
	CUresult r;

	if (NO_DRIVER(cuGraphInstantiateWithFlags))
		return CUDA_ERROR_NOT_INITIALIZED;
	r = REAL(cuGraphInstantiateWithFlags)(x, g, flags);
	graph_learn(r, x, g, flags);
	return r;
}

KMUX_EXPORT CUresult CUDAAPI cuGraphInstantiate(CUgraphExec *x, CUgraph g,
		CUgraphNode *err_node, char *log_buf, size_t log_size)
{
	CUresult r;

	if (NO_DRIVER(cuGraphInstantiate))
		return CUDA_ERROR_NOT_INITIALIZED;
	r = REAL(cuGraphInstantiate)(x, g, err_node, log_buf, log_size);
	graph_learn(r, x, g, 0);
	return r;
}

KMUX_EXPORT CUresult CUDAAPI cuGraphInstantiate_v2(CUgraphExec *x, CUgraph g,
		CUgraphNode *err_node, char *log_buf, size_t log_size)
{
	CUresult r;

	if (NO_DRIVER(cuGraphInstantiate_v2))
		return CUDA_ERROR_NOT_INITIALIZED;
	r = REAL(cuGraphInstantiate_v2)(x, g, err_node, log_buf, log_size);
	graph_learn(r, x, g, 0);
	return r;
}

KMUX_EXPORT CUresult CUDAAPI cuGraphInstantiateWithParams(CUgraphExec *x,
		CUgraph g, CUDA_GRAPH_INSTANTIATE_PARAMS *p)
{
	CUresult r;

	if (NO_DRIVER(cuGraphInstantiateWithParams))
		return CUDA_ERROR_NOT_INITIALIZED;
	r = REAL(cuGraphInstantiateWithParams)(x, g, p);
	graph_learn(r, x, g, p ? p->flags : 0);
	return r;
}

KMUX_EXPORT CUresult CUDAAPI cuGraphInstantiateWithParams_ptsz(CUgraphExec *x,
		CUgraph g, CUDA_GRAPH_INSTANTIATE_PARAMS *p)
{
	CUresult r;

	if (NO_DRIVER(cuGraphInstantiateWithParams_ptsz))
		return CUDA_ERROR_NOT_INITIALIZED;
	r = REAL(cuGraphInstantiateWithParams_ptsz)(x, g, p);
	graph_learn(r, x, g, p ? p->flags : 0);
	return r;
}

/*
 * Its allocations that are live stay live (and charged) until their free:
 * only the graph's description goes.
 */
KMUX_EXPORT CUresult CUDAAPI cuGraphExecDestroy(CUgraphExec x)
{
	CUresult r;

	if (NO_DRIVER(cuGraphExecDestroy))
		return CUDA_ERROR_NOT_INITIALIZED;
	r = REAL(cuGraphExecDestroy)(x);
	if (r == CUDA_SUCCESS)
		gmem_exec_forget((uint64_t)(uintptr_t)x);
	return r;
}
