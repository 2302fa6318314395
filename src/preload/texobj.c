/*
 * texobj.c - the set of live texture and surface objects (texobj.h): a
 * chained hash under one mutex.  Objects are created rarely and looked up
 * only at launches and uploads of programs that hold some, so nothing here
 * is on the path of a program that has none.  The range of live handles
 * [tx_min, tx_max] is kept beside the hash so that most words (pointers,
 * sizes past the largest handle) are answered without the mutex.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "log.h"
#include "texobj.h"

#define TX_BUCKETS 256

struct tx_entry {
	uint64_t h;
	struct tx_entry *next;
};

static pthread_mutex_t tx_lock = PTHREAD_MUTEX_INITIALIZER;
static struct tx_entry *tx_tab[TX_BUCKETS];
static unsigned tx_live;		/* under tx_lock */
/* Written under tx_lock; read without it. */
static atomic_bool tx_some;		/* tx_live > 0 or tx_lost */
static atomic_bool tx_lost;
static atomic_bool tx_escaped;
static _Atomic uint64_t tx_min = UINT64_MAX, tx_max;

static unsigned tx_bucket(uint64_t h)
{
	return (unsigned)((h * 0x9E3779B97F4A7C15ULL) >> 56) % TX_BUCKETS;
}

bool texobj_any(void)
{
	return atomic_load_explicit(&tx_some, memory_order_relaxed);
}

bool texobj_escaped(void)
{
	return atomic_load_explicit(&tx_escaped, memory_order_relaxed);
}

bool texobj_is_live(uint64_t w)
{
	bool found = false;

	if (w == 0 || !texobj_any())
		return false;
	if (atomic_load_explicit(&tx_lost, memory_order_relaxed))
		return true;
	/*
	 * A handle added since these loads is not live for this launch yet:
	 * the program could not have passed it to one before creating it.
	 */
	if (w < atomic_load_explicit(&tx_min, memory_order_relaxed) ||
	    w > atomic_load_explicit(&tx_max, memory_order_relaxed))
		return false;
	pthread_mutex_lock(&tx_lock);
	for (struct tx_entry *e = tx_tab[tx_bucket(w)]; e; e = e->next) {
		if (e->h == w) {
			found = true;
			break;
		}
	}
	pthread_mutex_unlock(&tx_lock);
	return found;
}

int texobj_add(uint64_t h)
{
	struct tx_entry *e;
	unsigned b = tx_bucket(h);

	if (h == 0)
		return 0;
	e = malloc(sizeof(*e));
	pthread_mutex_lock(&tx_lock);
	if (!e) {
		atomic_store(&tx_lost, true);
		atomic_store(&tx_some, true);
		pthread_mutex_unlock(&tx_lock);
		return -ENOMEM;
	}
	e->h = h;
	e->next = tx_tab[b];
	tx_tab[b] = e;
	tx_live++;
	if (h < atomic_load(&tx_min))
		atomic_store(&tx_min, h);
	if (h > atomic_load(&tx_max))
		atomic_store(&tx_max, h);
	atomic_store(&tx_some, true);
	pthread_mutex_unlock(&tx_lock);
	return 0;
}

void texobj_remove(uint64_t h)
{
	struct tx_entry **p, *e = NULL;

	pthread_mutex_lock(&tx_lock);
	for (p = &tx_tab[tx_bucket(h)]; *p; p = &(*p)->next) {
		if ((*p)->h == h) {
			e = *p;
			*p = e->next;
			tx_live--;
			break;
		}
	}
	/* None left: nothing can reach memory through one any more. */
	if (tx_live == 0 && !atomic_load(&tx_lost)) {
		atomic_store(&tx_some, false);
		atomic_store(&tx_escaped, false);
		atomic_store(&tx_min, UINT64_MAX);
		atomic_store(&tx_max, 0);
	}
	pthread_mutex_unlock(&tx_lock);
	free(e);
}

void texobj_escape(void)
{
	if (!atomic_exchange(&tx_escaped, true))
		log_info("a texture or surface object was uploaded into device "
			 "memory: every launch is a barrier while one lives");
}

unsigned texobj_count(void)
{
	unsigned n;

	pthread_mutex_lock(&tx_lock);
	n = tx_live;
	pthread_mutex_unlock(&tx_lock);
	return n;
}

void texobj_atfork_prepare(void)
{
	pthread_mutex_lock(&tx_lock);
}

void texobj_atfork_parent(void)
{
	pthread_mutex_unlock(&tx_lock);
}

void texobj_atfork_child(void)
{
	pthread_mutex_unlock(&tx_lock);
}
