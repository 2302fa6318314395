/*
 * graph-mem.h - memory that CUDA graphs allocate through their memory
 * nodes (cuGraphAddMemAllocNode, or cuMemAllocAsync captured into a
 * graph), for the quota (quota.h) and the tracker's map (alloc-table.h).
 *
 * Such an allocation has an address from the node's creation, but memory
 * only while it is live: from a launch of the graph that allocates it to
 * its free, by a free node of the same or a later graph launch,
 * cuMemFreeAsync, cuMemFree, or the next launch of a graph instantiated
 * with CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH.  The driver says
 * nothing when that happens, so kmux learns each executable graph's memory
 * nodes when it is instantiated (the graph's nodes, child graphs
 * included) and settles the books at each launch.
 *
 * A launch needs room in the quota for every allocation its graph makes:
 * the graph may free one before it allocates the next and reuse the
 * memory, but kmux does not order the nodes, so it charges all of them
 * until the launch returns; those the graph frees itself are given back
 * then.  Those it leaves live stay charged until their free.
 *
 * This file keeps the books under one mutex; wrap-mem.c and wrap-launch.c
 * reserve, give back and track what they say.  While no executable graph
 * has memory nodes a launch pays one relaxed load (gmem_any()).
 */
#ifndef KMUX_GRAPH_MEM_H
#define KMUX_GRAPH_MEM_H

#include <stdbool.h>
#include <stdint.h>

/* One allocation node: its fixed address and size. */
struct gmem_node {
	uint64_t va, size;
};

/* Any executable graph with memory nodes, or any live graph allocation. */
bool gmem_any(void);

/*
 * Remember executable graph x with its alloc nodes (nalloc) and the
 * addresses its free nodes free (nfree); auto_free: instantiated with
 * CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH.  A graph without memory
 * nodes is not kept.  0 or -ENOMEM.
 */
int gmem_exec_add(uint64_t x, const struct gmem_node *alloc, uint32_t nalloc,
		  const uint64_t *free_va, uint32_t nfree, bool auto_free);

/* x was destroyed (or its instantiation failed). */
void gmem_exec_forget(uint64_t x);

/*
 * Bytes a launch of x must reserve before the driver is called: every
 * allocation it makes, less what it frees of its own earlier launch under
 * auto-free.  false when x has no memory nodes kmux knows of.
 */
bool gmem_launch_need(uint64_t x, uint64_t *need);

/*
 * What a launch of x that succeeded changed, from gmem_launch_done():
 * allocations that became live (track them), addresses freed (untrack
 * them), and how many of the reserved bytes go back to the quota.
 * gmem_change_free() releases the arrays.
 */
struct gmem_change {
	struct gmem_node *live;
	uint32_t nlive;
	uint64_t *freed;
	uint32_t nfreed;
	uint64_t give_back;
};

/*
 * A launch of x, for which reserved bytes were reserved, succeeded: mark
 * its allocations live, free what its free nodes (and auto-free) free.
 * -ENOMEM leaves *c empty with give_back = 0: the books are then behind
 * the driver (more charged than held, never less).
 */
int gmem_launch_done(uint64_t x, uint64_t reserved, struct gmem_change *c);
void gmem_change_free(struct gmem_change *c);

/*
 * A free of va outside any graph (cuMemFree, cuMemFreeAsync on a stream
 * that is not capturing): true and the bytes it was charged when va is a
 * live graph allocation, which it no longer is.
 */
bool gmem_free(uint64_t va, uint64_t *charged);

/* Live graph allocations (for tests and the log). */
unsigned gmem_live_count(void);

/* fork(2): the books' lock is held across fork. */
void gmem_atfork_prepare(void);
void gmem_atfork_parent(void);
void gmem_atfork_child(void);

#endif
