/*
 * ctx-stack.h - the memory modes give back the context's stack reservation
 * while it is provably not needed (docs/design-memory.md, "The context's
 * own memory").
 *
 * A context reserves, for the stack of every thread the device can hold,
 * the limit (1,024 bytes by default) times 2,048 threads per SM times the
 * SMs: 264 MiB of the 527 MiB an H200 context costs.  The driver grows the
 * reservation by itself at a launch that needs more than the limit, for
 * every kernel whose stack the compiler can bound.  It cannot bound
 * recursion or calls through pointers; such kernels rely on the default.
 * So under --memory lazy|evict kmux lowers the limit to 0 in each context
 * it sees made, as long as every image the process loaded carries PTX
 * with no call instruction; the first image without PTX (or with a call,
 * or loaded from a file, which kmux does not read) puts the default back in
 * every context before any of its kernels can run.  A context whose
 * program sets the stack limit itself is left to the program, and
 * cuCtxGetLimit reports at least the limit the program would have seen.
 *
 * KMUX_CTX_STACK=0 turns it off.  Locking: one mutex, taken on context
 * creation, image loads and the two limit calls (none is on a hot path).
 */
#ifndef KMUX_CTX_STACK_H
#define KMUX_CTX_STACK_H

#include "cuda-internal.h"

/* Written once by the constructor. */
extern int ctxstack_on;

/* From the constructor, after mm_init(): on only with a memory mode. */
void ctxstack_init(const char *value, int memory_mode);

/* A context was made or retained (current or not). */
void ctxstack_ctx_made(CUcontext ctx);

/* A context is about to go (destroy, last release, reset). */
void ctxstack_ctx_gone(CUcontext ctx);

/*
 * The driver accepted an image loaded from memory (image != NULL) or from
 * a file (image NULL: never read, so never proven).
 */
void ctxstack_image(const void *image);

/* The program sets a limit in the current context (before the real call). */
void ctxstack_set_limit(CUlimit limit);

/* The real cuCtxGetLimit returned *value for the current context. */
void ctxstack_get_limit(CUlimit limit, size_t *value);

#endif
