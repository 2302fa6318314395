/*
 * suspend.h - the evict mode's load control rules (docs/design-memory.md,
 * "Load control: suspending a task that cannot get room"): when a task
 * that cannot get the room it needs stops competing, and what it asks
 * for.  Pure functions (libc only), unit tested by test-suspend.
 *
 * Denning's remedy for thrashing: a task whose working set does not fit
 * beside the others' should not run at all rather than run evicting, so
 * that the others' fit.  The preload suspends (evicts all it can and
 * waits for kmuxd to grant its working set) in two cases:
 *
 * - Thrashing, refused: SUSPEND_REFUSALS consecutive thrash growth asks
 *   were refused.  Asks come from the window detector (thrash.h), at most
 *   one a window of THRASH_WINDOW budgets of touched bytes, so two
 *   refusals in a row mean the task thrashed on through a whole window
 *   after being refused once: counted in windows, the rule is the same
 *   for a 16 MiB and a 16 GiB budget.  One refusal is not enough: a
 *   neighbour may be ending, and its room comes at the next ask.
 * - A budget given back (shrunk) that an allocation or an operation now
 *   needs back: need > the budget now, need <= the largest budget the
 *   task held (admitted or grown).  It was admitted with it, so it will
 *   fit once neighbours end; failing with out of memory would punish the
 *   task for having lent it.  It asks for that largest budget.
 */
#ifndef KMUX_SUSPEND_H
#define KMUX_SUSPEND_H

#include <stdbool.h>
#include <stdint.h>

#define SUSPEND_REFUSALS 2	/* consecutive refused thrash asks */

struct suspend_asks {
	unsigned refused;	/* thrash asks refused in a row */
};

/*
 * A thrash growth ask was answered: granted (the budget rose) or not.
 * True when the task should suspend now (the SUSPEND_REFUSALS-th refusal
 * in a row; the count starts again).
 */
bool suspend_after_ask(struct suspend_asks *s, bool granted);

/*
 * A shrunk task needs need bytes of budget (an allocation's span, or an
 * operation's objects) under a budget of limit, having held at most max:
 * should it suspend and wait for max, rather than fail?  True when
 * limit < need <= max.
 */
bool suspend_for_need(uint64_t need, uint64_t limit, uint64_t max);

#endif
