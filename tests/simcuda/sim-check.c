/*
 * sim-check.c - the overlap check: no two operations of one process that
 * touched the same allocation, at least one of them writing, may overlap in
 * time, and no operation may have faulted.
 *
 * A sweep over the records sorted by start time, keeping the set of records
 * still running at the current start; each new record is compared with that
 * set only.  Overlap is strict (a.start < b.end && b.start < a.end): an
 * operation that starts the instant another ended was ordered after it,
 * since a stream worker stamps an operation's end before it publishes the
 * completion that lets a dependent operation start.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim-log.h"
#include "simcuda.h"

static int cmp_start(const void *pa, const void *pb)
{
	const struct sim_rec *a = *(const struct sim_rec *const *)pa;
	const struct sim_rec *b = *(const struct sim_rec *const *)pb;

	if (a->start != b->start)
		return a->start < b->start ? -1 : 1;
	if (a->pid != b->pid)
		return a->pid < b->pid ? -1 : 1;
	if (a->seq != b->seq)
		return a->seq < b->seq ? -1 : 1;
	return 0;
}

static int overlap(const struct sim_rec *a, const struct sim_rec *b)
{
	return a->start < b->end && b->start < a->end;
}

/* Two accesses to one allocation share a byte. */
static int same_bytes(const struct sim_acc *x, const struct sim_acc *y)
{
	return x->alloc == y->alloc && x->lo < y->hi && y->lo < x->hi;
}

static int conflict(const struct sim_rec *a, const struct sim_rec *b)
{
	unsigned i, j;

	if (a->pid != b->pid || !overlap(a, b))
		return 0;
	for (i = 0; i < a->nacc; i++) {
		for (j = 0; j < b->nacc; j++) {
			if (!same_bytes(&a->acc[i], &b->acc[j]))
				continue;
			if ((a->acc[i].rw | b->acc[j].rw) & SIM_WRITE)
				return 1;
		}
	}
	return 0;
}

int sim_check_run(struct sim_rec **recs, size_t n, struct sim_rec **a,
		  struct sim_rec **b)
{
	struct sim_rec **active;
	size_t nactive = 0, i, j, k;
	int ret = 0;

	*a = *b = NULL;
	if (n == 0)
		return 0;
	active = malloc(n * sizeof(*active));
	if (active == NULL)
		return -1;
	qsort(recs, n, sizeof(*recs), cmp_start);
	for (i = 0; i < n; i++) {
		struct sim_rec *r = recs[i];

		if (r->nfault > 0) {
			*a = r;
			ret = 1;
			goto out;
		}
		/* Drop what ended before r began: it cannot meet r or later. */
		for (j = 0, k = 0; j < nactive; j++) {
			if (active[j]->end > r->start)
				active[k++] = active[j];
		}
		nactive = k;
		for (j = 0; j < nactive; j++) {
			if (conflict(active[j], r)) {
				*a = active[j];
				*b = r;
				ret = 1;
				goto out;
			}
		}
		if (r->nacc > 0)
			active[nactive++] = r;
	}
out:
	free(active);
	return ret;
}

/* The allocation a and b share with a write, for the message. */
static const struct sim_acc *shared_acc(const struct sim_rec *a,
					const struct sim_rec *b)
{
	unsigned i, j;

	for (i = 0; i < a->nacc; i++)
		for (j = 0; j < b->nacc; j++)
			if (same_bytes(&a->acc[i], &b->acc[j]) &&
			    ((a->acc[i].rw | b->acc[j].rw) & SIM_WRITE))
				return &a->acc[i];
	return NULL;
}

void sim_check_describe(const struct sim_rec *a, const struct sim_rec *b,
			char *msg, size_t len)
{
	char la[1024], lb[1024];
	const struct sim_acc *s;

	if (len == 0)
		return;
	msg[0] = '\0';
	if (a == NULL)
		return;
	sim_rec_format(a, la, sizeof(la));
	if (b == NULL) {
		const struct sim_fault *f = &a->fault[0];

		snprintf(msg, len,
			 "fault: %s %s (seq %llu) made a bad access (%s) at "
			 "0x%llx, %llu bytes\n  %s",
			 sim_rec_kind_name(a->kind), a->name,
			 (unsigned long long)a->seq, f->why,
			 (unsigned long long)f->addr,
			 (unsigned long long)f->size, la);
		return;
	}
	sim_rec_format(b, lb, sizeof(lb));
	s = shared_acc(a, b);
	snprintf(msg, len,
		 "conflict: %s %s (seq %llu, stream %llu) and %s %s (seq %llu, "
		 "stream %llu) overlapped in time on allocation %llu "
		 "(base 0x%llx), at least one writing\n  %s  %s",
		 sim_rec_kind_name(a->kind), a->name,
		 (unsigned long long)a->seq, (unsigned long long)a->stream,
		 sim_rec_kind_name(b->kind), b->name,
		 (unsigned long long)b->seq, (unsigned long long)b->stream,
		 s ? (unsigned long long)s->alloc : 0ULL,
		 s ? (unsigned long long)s->base : 0ULL, la, lb);
}
