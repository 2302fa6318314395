/*
 * gates.h - the layout of kmuxd's gate file: one word per GPU that says
 * whether the GPU is reserved for an exclusive region (issue 6).
 *
 * kmuxd creates <socket>.gates next to its socket (so a preload that found
 * the socket finds the gates) and is its only writer.  Every registered
 * preload maps one page of it read-only: GPU g's word is the first word of
 * page 1 + g, pages being GATES_STRIDE bytes apart (64 KiB: a page on every
 * Linux architecture), so that the preload can map exactly that page over
 * a page-aligned array of its own and test the gate with one relaxed load
 * of a fixed address on its submit path.
 *
 * A word is 0 when the GPU is open, else the pid of the region's holder
 * (which alone may submit).  The header on page 0 tells a preload how long
 * a gate can legitimately stay closed, so that a stale file (a daemon
 * killed while a gate was closed) never blocks a program for ever.
 *
 * Turns (version 2; kmuxd's turns.c): when wait-bound tasks share a GPU
 * without MPS, all but one are paused at a time.  Word GATES_W_NPAUSED of
 * the GPU's page counts the paused pids, which follow from word
 * GATES_W_PAUSED on; while there are any and no region holds the GPU, the
 * gate word is GATES_TURNS (no pid is that large), so that every
 * submission takes the slow path, where a paused process waits for its
 * turn and every other one goes on.
 */
#ifndef KMUX_GATES_H
#define KMUX_GATES_H

#include <stdint.h>

#define GATES_MAGIC 0x5441474bu		/* "KGAT" */
#define GATES_VERSION 2
#define GATES_STRIDE 65536u
#define GATES_MAX_GPUS 64
#define GATES_FILE_SIZE ((uint64_t)GATES_STRIDE * (1 + GATES_MAX_GPUS))
#define GATES_SUFFIX ".gates"

#define GATES_TURNS 0xffffffffu		/* the gate word while turns run */
#define GATES_W_NPAUSED 1		/* word index: paused pids */
#define GATES_W_PAUSED 2		/* word index of the first one */
#define GATES_MAX_PAUSED 62

struct gates_header {
	uint32_t magic;
	uint32_t version;
	uint32_t daemon_pid;
	uint32_t max_ms;	/* longest a region may last (--region-max) */
};

static inline uint64_t gates_offset(uint32_t gpu)
{
	return (uint64_t)GATES_STRIDE * (1 + gpu);
}

#endif
