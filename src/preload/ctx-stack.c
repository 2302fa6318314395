/*
 * ctx-stack.c - the context's stack reservation under the memory modes
 * (see ctx-stack.h for the rule, docs/design-memory.md for the numbers).
 *
 * Owns: the table of contexts kmux lowered (their limit before), whether
 * an image that could need the default stack was loaded, and the counts
 * for the exit line.  The limit is changed with the context pushed
 * current, since cuCtxSetLimit acts on the current context.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ctx-stack.h"
#include "log.h"
#include "preload.h"
#include "ptx-readonly.h"

/* Contexts tracked; more (unusual) are left at the default. */
#define CTXSTACK_MAX 64
/* PTX text read per image, as ptx-table.c reads. */
#define CTXSTACK_TEXT_MAX (256u << 20)

enum ctxstack_state {
	CTXSTACK_LOWERED = 1,	/* limit 0 by kmux; orig is the program's */
	CTXSTACK_DEFAULT,	/* left at (or put back to) orig */
	CTXSTACK_PROGRAM,	/* the program set the limit: its own */
};

struct ctxstack_ctx {
	CUcontext ctx;
	size_t orig;
	enum ctxstack_state state;
};

int ctxstack_on;

static pthread_mutex_t ctxstack_mu = PTHREAD_MUTEX_INITIALIZER;
static struct ctxstack_ctx ctxstack_tab[CTXSTACK_MAX];
static int ctxstack_n;
/* An image that may need the default stack was loaded: never lower again. */
static int ctxstack_unsafe;
static const char *ctxstack_why;
static unsigned ctxstack_lowered, ctxstack_restored, ctxstack_images;

static void ctxstack_report(void)
{
	if (kmux_log_level < KMUX_LOG_INFO || !ctxstack_images)
		return;
	log_info("ctx-stack: pid %d: %u context(s) with the stack limit "
		 "lowered to 0, %u put back (%s), %u images checked",
		 (int)getpid(), ctxstack_lowered, ctxstack_restored,
		 ctxstack_why ? ctxstack_why : "every image proven",
		 ctxstack_images);
}

void ctxstack_init(const char *value, int memory_mode)
{
	ctxstack_on = kmux_log_switch("KMUX_CTX_STACK", value,
				      "the lowered stack") && memory_mode;
	if (ctxstack_on)
		atexit(ctxstack_report);
}

static struct ctxstack_ctx *ctxstack_find(CUcontext ctx)
{
	for (int i = 0; i < ctxstack_n; i++)
		if (ctxstack_tab[i].ctx == ctx)
			return &ctxstack_tab[i];
	return NULL;
}

/* Lock held.  Set ctx's stack limit to v with ctx current; 0 or -1. */
static int ctxstack_set(CUcontext ctx, size_t v, size_t *before)
{
	CUcontext popped;
	int err = -1;

	if (!REAL(cuCtxPushCurrent_v2) || !REAL(cuCtxPopCurrent_v2) ||
	    !REAL(cuCtxSetLimit) || !REAL(cuCtxGetLimit) ||
	    REAL(cuCtxPushCurrent_v2)(ctx) != CUDA_SUCCESS)
		return -1;
	if ((!before || REAL(cuCtxGetLimit)(before, CU_LIMIT_STACK_SIZE) ==
			CUDA_SUCCESS) &&
	    REAL(cuCtxSetLimit)(CU_LIMIT_STACK_SIZE, v) == CUDA_SUCCESS)
		err = 0;
	REAL(cuCtxPopCurrent_v2)(&popped);
	return err;
}

void ctxstack_ctx_made(CUcontext ctx)
{
	struct ctxstack_ctx *c;
	size_t orig = 0;

	if (!ctxstack_on || !ctx)
		return;
	pthread_mutex_lock(&ctxstack_mu);
	/* A retain of a primary context already seen. */
	if (ctxstack_find(ctx) || ctxstack_n == CTXSTACK_MAX)
		goto out;
	c = &ctxstack_tab[ctxstack_n++];
	*c = (struct ctxstack_ctx){ .ctx = ctx, .state = CTXSTACK_DEFAULT };
	if (ctxstack_unsafe)
		goto out;
	if (ctxstack_set(ctx, 0, &orig) == 0) {
		c->orig = orig;
		c->state = CTXSTACK_LOWERED;
		ctxstack_lowered++;
		log_debug("ctx-stack: context %p: stack limit %zu -> 0",
			  (void *)ctx, orig);
	}
out:
	pthread_mutex_unlock(&ctxstack_mu);
}

void ctxstack_ctx_gone(CUcontext ctx)
{
	struct ctxstack_ctx *c;

	if (!ctxstack_on || !ctx)
		return;
	pthread_mutex_lock(&ctxstack_mu);
	c = ctxstack_find(ctx);
	/* The handle may come back as another context: forget it. */
	if (c)
		*c = ctxstack_tab[--ctxstack_n];
	pthread_mutex_unlock(&ctxstack_mu);
}

/* Lock held: the first image that may need the default stack. */
static void ctxstack_put_back(const char *why)
{
	ctxstack_unsafe = 1;
	ctxstack_why = why;
	for (int i = 0; i < ctxstack_n; i++) {
		struct ctxstack_ctx *c = &ctxstack_tab[i];

		if (c->state != CTXSTACK_LOWERED)
			continue;
		/* May wait for the context's work: once per process. */
		if (ctxstack_set(c->ctx, c->orig, NULL) == 0) {
			ctxstack_restored++;
		} else {
			/* Its kernels may then run short of stack: say so. */
			log_warn("ctx-stack: cannot put the stack limit of "
				 "context %p back to %zu bytes",
				 (void *)c->ctx, c->orig);
		}
		c->state = CTXSTACK_DEFAULT;
	}
}

void ctxstack_image(const void *image)
{
	struct ptxro_image_stats st = { 0 };
	const char *why = NULL;
	size_t n;

	if (!ctxstack_on)
		return;
	pthread_mutex_lock(&ctxstack_mu);
	ctxstack_images++;
	if (ctxstack_unsafe)
		goto out;
	if (!image) {
		why = "an image loaded from a file";
	} else {
		n = ptxro_image_size(image, CTXSTACK_TEXT_MAX);
		if (ptxro_scan_image(image, n, 1, NULL, &st) < 0)
			st.bad++;
		if (!st.ptx || st.no_ptx || st.compressed || st.bad)
			why = "an image without readable PTX";
		else if (st.calls)
			why = "PTX with a call instruction";
	}
	if (why)
		ctxstack_put_back(why);
out:
	pthread_mutex_unlock(&ctxstack_mu);
}

void ctxstack_set_limit(CUlimit limit)
{
	struct ctxstack_ctx *c;
	CUcontext cur = NULL;

	if (!ctxstack_on || limit != CU_LIMIT_STACK_SIZE ||
	    !REAL(cuCtxGetCurrent) || REAL(cuCtxGetCurrent)(&cur) ||
	    !cur)
		return;
	pthread_mutex_lock(&ctxstack_mu);
	c = ctxstack_find(cur);
	if (c)
		c->state = CTXSTACK_PROGRAM;
	pthread_mutex_unlock(&ctxstack_mu);
}

void ctxstack_get_limit(CUlimit limit, size_t *value)
{
	struct ctxstack_ctx *c;
	CUcontext cur = NULL;

	if (!ctxstack_on || limit != CU_LIMIT_STACK_SIZE || !value ||
	    !REAL(cuCtxGetCurrent) || REAL(cuCtxGetCurrent)(&cur) || !cur)
		return;
	pthread_mutex_lock(&ctxstack_mu);
	c = ctxstack_find(cur);
	/* The driver's own growth may have passed the default: the larger. */
	if (c && c->state == CTXSTACK_LOWERED && *value < c->orig)
		*value = c->orig;
	pthread_mutex_unlock(&ctxstack_mu);
}
