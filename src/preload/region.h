/*
 * region.h - exclusive regions in the preload (issue 6): the public
 * kmux_exclusive_begin()/end() (include/kmux.h), the GPU gate every
 * submission passes, and the drain kmuxd asks of the other tasks.
 *
 * The gate: kmuxd's gate file (gates.h) has one word per GPU; after
 * admission the preload maps its GPU's page over kmux_gate_page, so that
 * KMUX_GATE() on the submit path is one relaxed load of a fixed address
 * and a predictable branch.  Before (or without) a daemon the page is the
 * library's own zeros: the gate is open and costs the same.
 */
#ifndef KMUX_REGION_H
#define KMUX_REGION_H

#include <stdatomic.h>
#include <stdint.h>

#include "compiler.h"
#include "cuda-internal.h"

#define REGION_GATE_PAGE 4096u

extern _Atomic uint32_t kmux_gate_page[REGION_GATE_PAGE / sizeof(uint32_t)];

/* The gate is closed to someone: wait unless it is this process's. */
void region_gate_wait(void);

#define KMUX_GATE()							\
	do {								\
		if (unlikely(atomic_load_explicit(&kmux_gate_page[0],	\
						  memory_order_relaxed)))\
			region_gate_wait();				\
	} while (0)

/* register.c, after admission: map GPU gpu's gate from sock's gate file. */
void region_gates_map(const char *sock, uint32_t gpu);
/* register.c's helper thread, on DRAIN: finish this process's GPU work. */
void region_drain(void);
/* wrap-ctx.c: contexts a drain synchronizes. */
void region_ctx_seen(CUcontext ctx);
void region_ctx_gone(CUcontext ctx);

#endif
