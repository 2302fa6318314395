/*
 * verify.h - the recorder behind `kmux verify` (KMUX_VERIFY_LOG=FILE).
 *
 * Every device-to-host copy the program makes gets a number in program
 * order, the names of the last VERIFY_KERNELS kernels its thread launched
 * before it (the process's last ones when its thread launched none),
 * and a 64-bit FNV-1a hash of the bytes it delivered.  A synchronous copy
 * (or one into pageable memory, which the driver completes before
 * returning) is hashed right away; an asynchronous one into pinned memory
 * when the program learns it is complete: at the next successful
 * synchronization or query of its context, of its stream, or of an event
 * recorded after it on that stream, before the call returns to the
 * program.  Since these points are the program's own calls, a scheduled and
 * an unscheduled run hash each copy at the same point of the program.
 * Copies never known complete (or whose memory went away first) are
 * written with hash "-" at exit.
 *
 * One line per copy, appended to FILE with one write(2) (O_APPEND: the
 * processes of a command share the file), in completion order:
 *
 *	copy pid=P idx=I thr=T bytes=N hash=HHHHHHHHHHHHHHHH kernels=a,b,c
 *
 * idx counts from 0 per process; thr numbers the threads of the process
 * from 1 in the order they made their first copy (threads race, so
 * `kmux verify` compares the copies of a multi-threaded process as a set,
 * not in order); kernels is "-" when none was launched
 * yet, names are cut at 200 bytes and bytes outside [!-~] or ',' become
 * '_'.
 *
 * At exit each process also appends what its scheduler did, so that `kmux
 * verify` does not call a run identical that was never scheduled:
 *
 *	sched pid=P streams=N contexts=C off=O ops=K
 *
 * streams is the pool size (0: scheduling off in this process, as unasked
 * or after a bad KMUX_STREAMS or KMUX_BARRIER_KERNELS), contexts the
 * contexts that had a pool, off how many times one was switched off (more
 * blocking streams than kmux bridges, a pool that could not be set up),
 * ops the operations the scheduler placed.  A process that ends without
 * exit() (_exit, exec, a signal) writes none, so each process also writes,
 * when its scheduler places its first operation,
 *
 *	placed pid=P
 *
 * which is what says the run was scheduled when no exit record can (a
 * program that leaves through _exit, a wrapper shell whose own record
 * says ops=0).  `kmux verify` (src/cli/verify-log.c) reads both.
 *
 * This module owns the pending copies, the event table that says which
 * copies an event covers, the ring of recent kernel names and the log
 * file.  Everything is under one mutex: verification is a debugging mode.
 */
#ifndef KMUX_VERIFY_H
#define KMUX_VERIFY_H

#include <stddef.h>
#include <stdint.h>

#include "cuda-internal.h"

#define VERIFY_KERNELS	4
#define VERIFY_FNV_INIT	0xcbf29ce484222325ull

/* Set once by verify_init(); read without synchronization afterwards. */
extern int kmux_verify;

/* Open FILE for appending; 0 or -errno (verification stays off). */
int verify_init(const char *path);

/* 64-bit FNV-1a of n bytes, continuing from h. */
uint64_t verify_fnv1a(uint64_t h, const void *p, size_t n);

/* A kernel launch (any stream), in program order. */
void verify_kernel(const char *name);

/* One device-to-host copy that the driver accepted. */
struct verify_copy {
	const unsigned char *host;	/* first byte delivered */
	uint64_t row_bytes;		/* bytes per row (1-D: all of them) */
	uint64_t rows;			/* rows per slice, 1 for 1-D copies */
	uint64_t pitch;			/* host bytes from row to row */
	uint64_t depth;			/* slices, 1 unless 3-D */
	uint64_t slice_pitch;		/* host bytes from slice to slice */
	uint64_t bytes;			/* row_bytes * rows * depth */
	CUstream stream;		/* as the program passed it */
	int per_thread;			/* _ptsz / _ptds entry point */
	int complete;			/* known complete on return */
};
void verify_copy(const struct verify_copy *v);

/* The program learned that work is complete (calls that succeeded). */
void verify_done_ctx(CUcontext ctx);		/* NULL: the current one */
void verify_done_stream(CUstream s, int per_thread);
void verify_event_recorded(CUevent e, CUstream s, int per_thread);
void verify_done_event(CUevent e);

/*
 * The memory behind pending copies goes away (host memory freed or
 * unregistered, a context destroyed or released): they get hash "-".
 */
void verify_host_gone(uint64_t base, uint64_t size);
void verify_ctx_gone(CUcontext ctx);

/* In a forked child: the parent's pending copies are not the child's. */
void verify_atfork_child(void);

/* The scheduler placed an operation: the "placed" record, once a process. */
void verify_note_placed(void);

#endif
