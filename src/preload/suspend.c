/*
 * suspend.c - the evict mode's load control rules; the rules and why:
 * suspend.h.
 */
#include "suspend.h"

bool suspend_after_ask(struct suspend_asks *s, bool granted)
{
	if (granted) {
		s->refused = 0;
		return false;
	}
	if (++s->refused < SUSPEND_REFUSALS)
		return false;
	s->refused = 0;
	return true;
}

bool suspend_for_need(uint64_t need, uint64_t limit, uint64_t max)
{
	return need > limit && need <= max;
}
