/*
 * sim-event.c - events.  Recording an event submits a mark operation to the
 * stream; the mark completes, with its timestamp, when the stream reaches
 * it (after everything before it and, on the legacy stream, after the
 * blocking streams' earlier work).  Querying, synchronizing, waiting from
 * another stream and elapsed time all read that mark.  Re-recording makes a
 * new mark, so earlier waiters keep the position they were given.
 */
#include <stdlib.h>

#include "sim.h"

SIM_API CUresult cuEventCreate(CUevent *phEvent, unsigned int Flags)
{
	struct sim_event *ev;
	struct sim_ctx *c;
	CUresult err;

	if (phEvent == NULL ||
	    (Flags & ~(unsigned)(CU_EVENT_BLOCKING_SYNC |
				 CU_EVENT_DISABLE_TIMING |
				 CU_EVENT_INTERPROCESS)) ||
	    ((Flags & CU_EVENT_INTERPROCESS) &&
	     !(Flags & CU_EVENT_DISABLE_TIMING)))
		return CUDA_ERROR_INVALID_VALUE;
	sim_lock();
	err = sim_ctx_get(&c);
	if (err != CUDA_SUCCESS)
		goto out;
	ev = calloc(1, sizeof(*ev));
	if (ev == NULL || sim_handle_add(ev, SIM_H_EVENT) < 0) {
		free(ev);
		err = CUDA_ERROR_OUT_OF_MEMORY;
		goto out;
	}
	ev->ctx = c;
	ev->flags = Flags;
	sim_list_add_tail(&c->events, &ev->link);
	*phEvent = (CUevent)ev;
out:
	sim_unlock();
	return err;
}

static void event_free(struct sim_event *ev)
{
	sim_handle_del(ev);
	sim_list_del(&ev->link);
	sim_mark_put(ev->mark);
	free(ev);
}

void sim_event_free_all(struct sim_ctx *c)
{
	while (!sim_list_empty(&c->events))
		event_free(sim_container_of(c->events.next, struct sim_event,
					    link));
}

SIM_API CUresult cuEventDestroy_v2(CUevent hEvent)
{
	struct sim_event *ev = (struct sim_event *)hEvent;
	CUresult err = sim_check_init();

	if (err != CUDA_SUCCESS)
		return err;
	sim_lock();
	if (!sim_handle_ok(ev, SIM_H_EVENT))
		err = CUDA_ERROR_INVALID_HANDLE;
	else
		event_free(ev);	/* a pending mark keeps its own reference */
	sim_unlock();
	return err;
}

SIM_API CUresult cuEventDestroy(CUevent hEvent)
{
	return cuEventDestroy_v2(hEvent);
}

static CUresult event_record(CUevent hEvent, CUstream h, unsigned flags,
			     int pt)
{
	struct sim_event *ev = (struct sim_event *)hEvent;
	struct sim_stream *s;
	struct sim_mark *m;
	struct sim_op *op;
	CUresult err;

	if (flags & ~(unsigned)CU_EVENT_RECORD_EXTERNAL)
		return CUDA_ERROR_INVALID_VALUE;
	sim_lock();
	err = sim_stream_resolve(h, pt, &s);
	if (err != CUDA_SUCCESS)
		goto out;
	if (!sim_handle_ok(ev, SIM_H_EVENT) || ev->ctx != s->ctx) {
		err = CUDA_ERROR_INVALID_HANDLE;
		goto out;
	}
	if (s->cap != NULL) {
		/* Recorded into a capture: other streams join through it. */
		ev->captured = s->cap;
		goto out;
	}
	err = s->ctx->sticky;
	if (err != CUDA_SUCCESS)
		goto out;
	m = sim_mark_new();
	op = sim_op_new(SIM_OP_MARK);
	if (m == NULL || op == NULL) {
		sim_mark_put(m);
		free(op);
		err = CUDA_ERROR_OUT_OF_MEMORY;
		goto out;
	}
	op->mark = m;
	m->refs++;
	err = sim_stream_submit(s, op);
	if (err != CUDA_SUCCESS) {
		sim_mark_put(m);
		goto out;
	}
	sim_mark_put(ev->mark);
	ev->mark = m;
	ev->captured = NULL;
out:
	sim_unlock();
	return err;
}

SIM_API CUresult cuEventRecord(CUevent hEvent, CUstream hStream)
{
	return event_record(hEvent, hStream, 0, 0);
}

SIM_API CUresult cuEventRecord_ptsz(CUevent hEvent, CUstream hStream)
{
	return event_record(hEvent, hStream, 0, 1);
}

SIM_API CUresult cuEventRecordWithFlags(CUevent hEvent, CUstream hStream,
					unsigned int flags)
{
	return event_record(hEvent, hStream, flags, 0);
}

SIM_API CUresult cuEventRecordWithFlags_ptsz(CUevent hEvent, CUstream hStream,
					     unsigned int flags)
{
	return event_record(hEvent, hStream, flags, 1);
}

SIM_API CUresult cuEventQuery(CUevent hEvent)
{
	struct sim_event *ev = (struct sim_event *)hEvent;
	CUresult err = sim_check_init();

	if (err != CUDA_SUCCESS)
		return err;
	sim_lock();
	if (!sim_handle_ok(ev, SIM_H_EVENT))
		err = CUDA_ERROR_INVALID_HANDLE;
	else if (ev->mark != NULL && !ev->mark->done)
		err = CUDA_ERROR_NOT_READY;
	else
		err = ev->ctx->sticky;
	sim_unlock();
	return err;
}

SIM_API CUresult cuEventSynchronize(CUevent hEvent)
{
	struct sim_event *ev = (struct sim_event *)hEvent;
	struct sim_mark *m;
	CUresult err = sim_check_init();

	if (err != CUDA_SUCCESS)
		return err;
	sim_lock();
	if (!sim_handle_ok(ev, SIM_H_EVENT)) {
		err = CUDA_ERROR_INVALID_HANDLE;
		goto out;
	}
	m = ev->mark;
	if (m != NULL) {
		/* The event may be destroyed or re-recorded meanwhile. */
		m->refs++;
		while (!m->done)
			sim_wait();
		sim_mark_put(m);
	}
	if (sim_handle_ok(ev, SIM_H_EVENT))
		err = ev->ctx->sticky;
out:
	sim_unlock();
	return err;
}

SIM_API CUresult cuEventElapsedTime_v2(float *pMilliseconds, CUevent hStart,
				       CUevent hEnd)
{
	struct sim_event *a = (struct sim_event *)hStart;
	struct sim_event *b = (struct sim_event *)hEnd;
	CUresult err = sim_check_init();

	if (err != CUDA_SUCCESS)
		return err;
	if (pMilliseconds == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	sim_lock();
	if (!sim_handle_ok(a, SIM_H_EVENT) || !sim_handle_ok(b, SIM_H_EVENT) ||
	    (a->flags & CU_EVENT_DISABLE_TIMING) ||
	    (b->flags & CU_EVENT_DISABLE_TIMING) ||
	    a->mark == NULL || b->mark == NULL) {
		err = CUDA_ERROR_INVALID_HANDLE;
		goto out;
	}
	if (!a->mark->done || !b->mark->done) {
		err = CUDA_ERROR_NOT_READY;
		goto out;
	}
	*pMilliseconds = (float)((double)((int64_t)(b->mark->t_ns -
						    a->mark->t_ns)) / 1e6);
out:
	sim_unlock();
	return err;
}

SIM_API CUresult cuEventElapsedTime(float *pMilliseconds, CUevent hStart,
				    CUevent hEnd)
{
	return cuEventElapsedTime_v2(pMilliseconds, hStart, hEnd);
}
