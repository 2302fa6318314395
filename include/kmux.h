/*
 * kmux.h - the public API of libkmux.so: exclusive regions (issue 6) and
 * pausing the stream scheduler (issue 3, below).
 *
 * A region gives the calling process its GPU alone for as long as it
 * lasts, so that what is timed inside it is not disturbed by the other
 * tasks kmux runs on the same GPU.  Everything outside regions (imports,
 * compilation, input generation, correctness checks) runs concurrently.
 *
 *	if (kmux_exclusive_begin() < 0) ...	// waits for the GPU (FIFO)
 *	time_the_kernel();
 *	kmux_exclusive_end();			// synchronizes, then releases
 *
 * Entering a region: kmuxd closes the GPU's gate to every other task (its
 * submissions wait), has each drain its outstanding work, freezes those
 * processes and grants the region.  Leaving reverses it.  Regions of one
 * process nest (only the outermost pair talks to the daemon); they are
 * counted per process, not per thread.  See libkmux(7).
 *
 * Return codes:
 *   kmux_exclusive_begin()
 *	0                    the region is held (or a nested one entered)
 *	KMUX_EXCLUSIVE_NOOP  not under a kmux daemon (no daemon, or this
 *	                     process is not a task it admitted): the region
 *	                     is counted but not exclusive; warned once
 *	-EOVERFLOW           nested deeper than KMUX_EXCLUSIVE_MAX_DEPTH
 *	-errno               kmuxd refused (e.g. -EBUSY, -ESRCH) or the
 *	                     connection failed; no region is open
 *   kmux_exclusive_end()
 *	0                    left (or a nested level closed)
 *	-EPERM               no region open
 *	-ETIMEDOUT           the region had been revoked: it lasted longer
 *	                     than the daemon's --region-max
 *	-errno               the daemon went away meanwhile; the region is
 *	                     closed all the same
 *
 * Two ways to call it:
 *  1. Link with libkmux.so (-L.../lib/kmux -lkmux): the calls are the
 *     preload's own.  Run without LD_PRELOAD, the library is loaded
 *     anyway and the calls are no-ops returning KMUX_EXCLUSIVE_NOOP.
 *  2. No link dependency: define KMUX_DYNAMIC before including this
 *     header.  The same names then become static inline functions that
 *     look the preload's symbols up with dlsym(RTLD_DEFAULT) once (glibc
 *     2.34+ has dlsym in libc; older ones need -ldl) and return
 *     KMUX_EXCLUSIVE_NOOP when the program does not run under kmux.
 */
/*
 * Pausing the stream scheduler (kmux run --streams N, KMUX_STREAMS=N):
 *
 *	int was = kmux_streams_pause(1);	// drains, then runs work as submitted
 *	code_that_breaks_the_assumption();
 *	if (was == 0) kmux_streams_pause(0);	// drains, then schedules again
 *
 * While paused, the default-stream work of the process runs exactly as the
 * program submitted it, with no reordering: for a part of a program that
 * reaches device memory in a way kmux cannot see (docs/design-streams.md,
 * "The one assumption"), or to compare scheduled and unscheduled runs of
 * the same code in one process.  Each switch synchronizes every context
 * kmux schedules, so it costs a full drain: switch around phases, not
 * around kernels.  Process-wide, not per thread.
 *   kmux_streams_pause(p)
 *	0 or 1               the state before the call (1: it was paused)
 *	-ENOTSUP             the process is not scheduled (no KMUX_STREAMS,
 *	                     or not under kmux); nothing changed
 *	-EBUSY               a stream capture is in progress; nothing changed
 *	-EIO                 a context failed to synchronize (a sticky CUDA
 *	                     error); the switch is made all the same
 */

#ifndef KMUX_H
#define KMUX_H

#define KMUX_EXCLUSIVE_NOOP 1
#define KMUX_EXCLUSIVE_MAX_DEPTH 64

#ifdef __cplusplus
extern "C" {
#endif

#ifndef KMUX_DYNAMIC

int kmux_exclusive_begin(void);
int kmux_exclusive_end(void);
/* Regions open in this process (the nesting depth). */
int kmux_exclusive_depth(void);
int kmux_streams_pause(int pause);

#else /* KMUX_DYNAMIC */

#include <dlfcn.h>
#include <errno.h>

static inline void *kmux__sym(const char *name)
{
	return dlsym(RTLD_DEFAULT, name);
}

static inline int kmux_exclusive_begin(void)
{
	static int (*fn)(void);
	static int looked;

	if (!looked) {
		*(void **)&fn = kmux__sym("kmux_exclusive_begin");
		looked = 1;
	}
	return fn ? fn() : KMUX_EXCLUSIVE_NOOP;
}

/* Without kmux the begins were counted nowhere: an end is always fine. */
static inline int kmux_exclusive_end(void)
{
	static int (*fn)(void);
	static int looked;

	if (!looked) {
		*(void **)&fn = kmux__sym("kmux_exclusive_end");
		looked = 1;
	}
	return fn ? fn() : 0;
}

static inline int kmux_exclusive_depth(void)
{
	static int (*fn)(void);
	static int looked;

	if (!looked) {
		*(void **)&fn = kmux__sym("kmux_exclusive_depth");
		looked = 1;
	}
	return fn ? fn() : 0;
}

static inline int kmux_streams_pause(int pause)
{
	static int (*fn)(int);
	static int looked;

	if (!looked) {
		*(void **)&fn = kmux__sym("kmux_streams_pause");
		looked = 1;
	}
	return fn ? fn(pause) : -ENOTSUP;
}

#endif /* KMUX_DYNAMIC */

#ifdef __cplusplus
}
#endif

#endif
