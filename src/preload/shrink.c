/*
 * shrink.c - the evict mode's budget-shrinking rule; the rule and why:
 * shrink.h.
 */
#include "shrink.h"

static uint64_t shrink_round(uint64_t x, uint64_t g)
{
	if (x % g == 0)
		return x;
	return x > UINT64_MAX - g ? UINT64_MAX / g * g : (x / g + 1) * g;
}

uint64_t shrink_floor(const struct shrink_in *in)
{
	uint64_t g = in->gran ? in->gran : 1;
	uint64_t r = in->untouched > UINT64_MAX - in->recent ? UINT64_MAX :
		     in->recent + in->untouched;
	uint64_t f = in->op_need > r ? in->op_need : r;

	f = in->pass > UINT64_MAX - f ? UINT64_MAX : f + in->pass;
	f = shrink_round(f, g);
	return f < g ? g : f;
}

uint64_t shrink_plan(const struct shrink_in *in)
{
	uint64_t g = in->gran ? in->gran : 1, f, want;

	if (in->thrashing || in->young)
		return 0;
	f = shrink_floor(in);
	/* Down: the task gives at least what was asked when it can. */
	want = in->give >= in->limit ? 0 : (in->limit - in->give) / g * g;
	if (want < f)
		want = f;
	return want < in->limit ? want : 0;
}
