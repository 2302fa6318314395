/*
 * readahead.h - which small device buffers the host reads back after they
 * are written, so that the stream scheduler can copy them out right behind
 * their writer (streams.c, "Reading ahead"; docs/design-streams.md).
 *
 * A program that reads a residual or a flag back with a synchronous
 * cudaMemcpy pays the copy's round trip (about 7 us on an H200) at the
 * point of reading, on its critical path.  A hand-written version queues
 * the copy behind the kernel that writes the value, into pinned memory,
 * and waits on an event.  This table learns which (allocation, range) the
 * host reads synchronously, and how many writes of it come between two
 * reads, so that the scheduler queues such a copy ("read-ahead") after the
 * write the next read is expected to follow.  A read whose range a
 * read-ahead holds, with no write of the allocation since, is served from
 * it.
 *
 * The copy is not queued at the write but at the host's next wait (a
 * synchronous read, a synchronization): queuing costs the host a few
 * microseconds, which at the write would delay the launches that follow
 * it, and before a wait cost nothing (bench/results/streams.md, run 8).
 *
 * Pure bookkeeping: no driver calls, no locking (the caller holds its
 * context's lock).  A slot's shadow buffer and event belong to the caller;
 * the table only keeps them with the slot so that a slot reused for
 * another range reuses them.
 *
 * What makes a read-ahead current: it was queued after the last write of
 * its allocation the scheduler saw, and nothing the scheduler did not see
 * ran since (the epoch: ra_invalidate() at every barrier, bridged or
 * passed-through operation).
 */
#ifndef KMUX_READAHEAD_H
#define KMUX_READAHEAD_H

#include <stdint.h>

/* Slots per context: the buffers read back in one loop, with room. */
#define RA_SLOTS	16
/* Larger reads are not read ahead: a read-ahead is a guess, and a wrong
 * one must stay cheap. */
#define RA_MAX_BYTES	4096
/* Read-aheads in a row that no read used before the slot is given up. */
#define RA_UNUSED_MAX	4

enum ra_state {
	RA_EMPTY = 0,
	RA_LEARNED,	/* read back before; no current read-ahead */
	RA_PENDING,	/* written: a read-ahead is due at the next wait */
	RA_QUEUED,	/* a read-ahead queued after the latest write */
};

struct ra_slot {
	uint64_t alloc_id;	/* alloc-table id; 0 when empty */
	uint64_t base;		/* the allocation's device address */
	uint64_t off, bytes;	/* the range read back last, from base */
	enum ra_state state;
	uint64_t epoch;		/* the table's epoch when written */
	uint64_t gen;		/* bumped at each queue */
	unsigned unused;	/* read-aheads no read used, in a row */
	int hit;		/* a read used the current read-ahead */
	unsigned w_since;	/* writes since the last read */
	unsigned w_per_read;	/* writes between the last two reads, >= 1 */
	uint64_t used;		/* the table's clock at its last use */
	/* The caller's: where the copy goes, what is recorded after it, and
	 * what is recorded after the write it follows. */
	void *shadow;
	void *ev;
	void *wev;
	int copying;		/* the copy may still be running */
	int wstream;		/* the write it follows: pool stream, */
	uint64_t wseq;		/* ... and number there */
};

struct ra_table {
	struct ra_slot slot[RA_SLOTS];
	uint64_t epoch;
	uint64_t clock;
	/* statistics */
	uint64_t learned, queued, served, dropped, stale;
};

/*
 * A synchronous read of [off, off + bytes) of alloc_id (at device address
 * base) that was not served: remember it, taking the least recently used
 * slot whose copy is not running if it is new; a slot that knows the
 * allocation keeps the span of the old range and the new one while that
 * fits in RA_MAX_BYTES.  The slot's index, or -1 when bytes is 0 or above
 * RA_MAX_BYTES, or every slot's copy is running.
 */
int ra_learn(struct ra_table *t, uint64_t alloc_id, uint64_t base,
	     uint64_t off, uint64_t bytes);

/*
 * An operation the scheduler placed writes [off, off + len) of alloc_id
 * (len 0: all of it).  The index of the slot a read-ahead is now due for
 * (marked RA_PENDING in the current epoch), or -1: nothing of that range
 * is read back, or this is not yet the write the next read is expected
 * after (the slot is then no longer current), or the slot was given up
 * after RA_UNUSED_MAX unused read-aheads.
 */
int ra_written(struct ra_table *t, uint64_t alloc_id, uint64_t off,
	       uint64_t len);

/*
 * Whether slot i's read-ahead is due (RA_PENDING in the current epoch); a
 * pending slot of an older epoch goes back to RA_LEARNED.
 */
int ra_due(struct ra_table *t, int i);

/* Slot i's read-ahead was queued (RA_QUEUED, gen bumped). */
void ra_queued(struct ra_table *t, int i);

/* Slot i's read-ahead could not be queued. */
void ra_queue_failed(struct ra_table *t, int i);

/*
 * A synchronous read of [off, off + bytes) of alloc_id: the slot whose
 * current read-ahead holds that range, or -1.
 */
int ra_lookup(const struct ra_table *t, uint64_t alloc_id, uint64_t off,
	      uint64_t bytes);

/* Slot i is still the read-ahead ra_lookup() found when its gen was gen. */
int ra_still(const struct ra_table *t, int i, uint64_t gen);

/* The read was served from slot i. */
void ra_served(struct ra_table *t, int i);

/* Something the scheduler did not see may have written anything. */
void ra_invalidate(struct ra_table *t);

/* alloc_id is freed (or renamed): its slot goes. */
void ra_forget(struct ra_table *t, uint64_t alloc_id);

#endif
