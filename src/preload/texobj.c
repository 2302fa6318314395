/*
 * texobj.c - the set of live texture and surface objects (texobj.h): a
 * chained hash under one mutex.  Objects are created rarely and looked up
 * only at launches of programs that hold some, so nothing here is on the
 * path of a program that has none.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "texobj.h"

#define TX_BUCKETS 256

struct tx_entry {
	uint64_t h;
	struct tx_entry *next;
};

static pthread_mutex_t tx_lock = PTHREAD_MUTEX_INITIALIZER;
static struct tx_entry *tx_tab[TX_BUCKETS];
static unsigned tx_live;		/* under tx_lock */
static atomic_bool tx_some;		/* tx_live > 0 or tx_lost */
static atomic_bool tx_lost;

static unsigned tx_bucket(uint64_t h)
{
	return (unsigned)((h * 0x9E3779B97F4A7C15ULL) >> 56) % TX_BUCKETS;
}

bool texobj_any(void)
{
	return atomic_load_explicit(&tx_some, memory_order_relaxed);
}

bool texobj_is_live(uint64_t w)
{
	bool found = false;

	if (w == 0 || !texobj_any())
		return false;
	if (atomic_load_explicit(&tx_lost, memory_order_relaxed))
		return true;
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
	if (!e) {
		atomic_store(&tx_lost, true);
		atomic_store(&tx_some, true);
		return -ENOMEM;
	}
	e->h = h;
	pthread_mutex_lock(&tx_lock);
	e->next = tx_tab[b];
	tx_tab[b] = e;
	tx_live++;
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
	if (tx_live == 0 && !atomic_load(&tx_lost))
		atomic_store(&tx_some, false);
	pthread_mutex_unlock(&tx_lock);
	free(e);
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
