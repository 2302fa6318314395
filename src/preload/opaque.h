/*
 * opaque.h - what the generated wrappers of wrap-opaque.c call: run a
 * stream operation whose effect kmux does not model, keeping every order.
 */
#ifndef KMUX_OPAQUE_H
#define KMUX_OPAQUE_H

#include "preload.h"
#include "region.h"
#include "streams.h"

/*
 * The operation issue(arg, NULL) makes, on stream s as the program named it
 * (per_thread: a _ptsz/_ptds entry point, so NULL means the per-thread
 * default stream).  On a default stream under the scheduler it runs there
 * itself, after all pool work and before any later (the bridge); on a
 * blocking stream of the program's it keeps that stream's order with the
 * pool; under the memory manager every managed allocation is backed first.
 * Its result, or the error that kept memory from being backed.
 */
CUresult opaque_run(CUstream s, int per_thread, streams_issue_fn issue,
		    void *arg);

#endif
