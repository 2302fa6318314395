/*
 * graph-mem.c - the books of graph memory (graph-mem.h): executable graphs
 * with memory nodes and the graph allocations now live, two lists under
 * one mutex.  Programs hold few executable graphs and launch each many
 * times, so a launch walks a short list; a program without memory nodes
 * never takes the mutex.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "graph-mem.h"

struct gm_exec {
	uint64_t x;
	struct gmem_node *alloc;
	uint64_t *free_va;
	uint32_t nalloc, nfree;
	bool auto_free;
	struct gm_exec *next;
};

struct gm_live {
	struct gmem_node n;
	struct gm_live *next;
};

static pthread_mutex_t gm_lock = PTHREAD_MUTEX_INITIALIZER;
static struct gm_exec *gm_execs;
static struct gm_live *gm_lives;
static unsigned gm_nlive;
/* Written under gm_lock; read without it. */
static atomic_bool gm_some;

static void gm_update_some(void)
{
	atomic_store_explicit(&gm_some, gm_execs || gm_lives,
			      memory_order_relaxed);
}

bool gmem_any(void)
{
	return atomic_load_explicit(&gm_some, memory_order_relaxed);
}

static struct gm_exec *gm_exec_find(uint64_t x)
{
	for (struct gm_exec *e = gm_execs; e; e = e->next)
		if (e->x == x)
			return e;
	return NULL;
}

static void gm_exec_free(struct gm_exec *e)
{
	free(e->alloc);
	free(e->free_va);
	free(e);
}

/* Unlink the exec entry of x; the caller frees it. */
static struct gm_exec *gm_exec_unlink(uint64_t x)
{
	for (struct gm_exec **p = &gm_execs; *p; p = &(*p)->next) {
		if ((*p)->x == x) {
			struct gm_exec *e = *p;

			*p = e->next;
			return e;
		}
	}
	return NULL;
}

int gmem_exec_add(uint64_t x, const struct gmem_node *alloc, uint32_t nalloc,
		  const uint64_t *free_va, uint32_t nfree, bool auto_free)
{
	struct gm_exec *e, *old;

	if (!nalloc && !nfree) {
		gmem_exec_forget(x);
		return 0;
	}
	e = calloc(1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	if (nalloc && !(e->alloc = malloc(nalloc * sizeof(*alloc))))
		goto nomem;
	if (nfree && !(e->free_va = malloc(nfree * sizeof(*free_va))))
		goto nomem;
	if (nalloc)
		memcpy(e->alloc, alloc, nalloc * sizeof(*alloc));
	if (nfree)
		memcpy(e->free_va, free_va, nfree * sizeof(*free_va));
	e->x = x;
	e->nalloc = nalloc;
	e->nfree = nfree;
	e->auto_free = auto_free;
	pthread_mutex_lock(&gm_lock);
	/* A handle the driver reuses after a destroy kmux did not see. */
	old = gm_exec_unlink(x);
	e->next = gm_execs;
	gm_execs = e;
	gm_update_some();
	pthread_mutex_unlock(&gm_lock);
	if (old)
		gm_exec_free(old);
	return 0;
nomem:
	gm_exec_free(e);
	return -ENOMEM;
}

void gmem_exec_forget(uint64_t x)
{
	struct gm_exec *e;

	if (!gmem_any())
		return;
	pthread_mutex_lock(&gm_lock);
	e = gm_exec_unlink(x);
	gm_update_some();
	pthread_mutex_unlock(&gm_lock);
	if (e)
		gm_exec_free(e);
}

static struct gm_live *gm_live_find(uint64_t va)
{
	for (struct gm_live *l = gm_lives; l; l = l->next)
		if (l->n.va == va)
			return l;
	return NULL;
}

/* Remove live allocation va: its size, or 0 when it was not live. */
static uint64_t gm_live_take(uint64_t va)
{
	for (struct gm_live **p = &gm_lives; *p; p = &(*p)->next) {
		if ((*p)->n.va == va) {
			struct gm_live *l = *p;
			uint64_t size = l->n.size;

			*p = l->next;
			free(l);
			gm_nlive--;
			return size;
		}
	}
	return 0;
}

bool gmem_launch_need(uint64_t x, uint64_t *need)
{
	struct gm_exec *e;
	uint64_t n = 0;
	bool found = false;

	if (!gmem_any())
		return false;
	pthread_mutex_lock(&gm_lock);
	e = gm_exec_find(x);
	if (e) {
		found = true;
		for (uint32_t i = 0; i < e->nalloc; i++) {
			struct gm_live *l = gm_live_find(e->alloc[i].va);

			/* Auto-free gives back the last launch's first. */
			if (!(l && e->auto_free))
				n += e->alloc[i].size;
		}
	}
	pthread_mutex_unlock(&gm_lock);
	*need = n;
	return found;
}

static bool gm_frees(const struct gm_exec *e, uint64_t va)
{
	for (uint32_t i = 0; i < e->nfree; i++)
		if (e->free_va[i] == va)
			return true;
	return false;
}

void gmem_change_free(struct gmem_change *c)
{
	free(c->live);
	free(c->freed);
	memset(c, 0, sizeof(*c));
}

int gmem_launch_done(uint64_t x, uint64_t reserved, struct gmem_change *c)
{
	struct gm_exec *e;
	uint64_t kept = 0, freed_bytes = 0;
	int err = 0;

	memset(c, 0, sizeof(*c));
	pthread_mutex_lock(&gm_lock);
	e = gm_exec_find(x);
	if (!e) {
		/* Destroyed by another thread meanwhile: nothing stays. */
		c->give_back = reserved;
		goto out;
	}
	c->live = calloc(e->nalloc ? e->nalloc : 1, sizeof(*c->live));
	c->freed = calloc(e->nalloc + e->nfree ? e->nalloc + e->nfree : 1,
			  sizeof(*c->freed));
	if (!c->live || !c->freed) {
		gmem_change_free(c);
		err = -ENOMEM;
		goto out;
	}
	/* Auto-free: the last launch's allocations end as this one starts. */
	for (uint32_t i = 0; e->auto_free && i < e->nalloc; i++) {
		uint64_t sz = gm_live_take(e->alloc[i].va);

		if (sz) {
			freed_bytes += sz;
			c->freed[c->nfreed++] = e->alloc[i].va;
		}
	}
	/* Free nodes of allocations an earlier launch made live. */
	for (uint32_t i = 0; i < e->nfree; i++) {
		uint64_t sz = gm_live_take(e->free_va[i]);

		if (sz) {
			freed_bytes += sz;
			c->freed[c->nfreed++] = e->free_va[i];
		}
	}
	for (uint32_t i = 0; i < e->nalloc; i++) {
		struct gm_live *l;

		if (gm_frees(e, e->alloc[i].va))
			continue;	/* freed by the graph itself */
		if (gm_live_find(e->alloc[i].va))
			continue;	/* the driver refused such a launch */
		l = malloc(sizeof(*l));
		if (!l) {
			err = -ENOMEM;
			break;
		}
		l->n = e->alloc[i];
		l->next = gm_lives;
		gm_lives = l;
		gm_nlive++;
		kept += l->n.size;
		c->live[c->nlive++] = l->n;
	}
	/*
	 * What was charged (the reservation, and what the allocations this
	 * launch freed held) less what stays live.  Auto-free reserved
	 * nothing for an allocation it frees and makes live again: its old
	 * charge carries over.
	 */
	if (err)
		kept = reserved;	/* behind the driver: keep it all */
	c->give_back = reserved + freed_bytes > kept ?
		       reserved + freed_bytes - kept : 0;
out:
	gm_update_some();
	pthread_mutex_unlock(&gm_lock);
	return err;
}

bool gmem_free(uint64_t va, uint64_t *charged)
{
	uint64_t sz;

	if (!gmem_any())
		return false;
	pthread_mutex_lock(&gm_lock);
	sz = gm_live_take(va);
	gm_update_some();
	pthread_mutex_unlock(&gm_lock);
	*charged = sz;
	return sz != 0;
}

unsigned gmem_live_count(void)
{
	unsigned n;

	pthread_mutex_lock(&gm_lock);
	n = gm_nlive;
	pthread_mutex_unlock(&gm_lock);
	return n;
}

void gmem_atfork_prepare(void)
{
	pthread_mutex_lock(&gm_lock);
}

void gmem_atfork_parent(void)
{
	pthread_mutex_unlock(&gm_lock);
}

void gmem_atfork_child(void)
{
	pthread_mutex_unlock(&gm_lock);
}
