/*
 * busy-est.c - a job's demand on the GPU from NVML's per-process
 * utilization: the active phase and the contention correction (busy-est.h;
 * reasoning in docs/design-daemon.md).
 */
#include <errno.h>
#include <math.h>

#include "busy-est.h"

static double unit(double x)
{
	/* !(x > 0) also catches NaN. */
	return !(x > 0.0) ? 0.0 : x > 1.0 ? 1.0 : x;
}

double busy_est_demand(double share, double total, double top)
{
	double s = unit(share), others, w;

	if (s <= 0.0)
		return 0.0;
	/* The caller's total and top include s; bad ones must not make a
	 * share look contended (or divide by less than itself). */
	if (!(top >= s))
		top = s;
	if (!(total >= s))
		total = s;
	others = total - s;
	if (others <= 0.0 || total <= BUSY_EST_SAT_LO)
		return s;
	/*
	 * How saturated the GPU was, 0..1.  Between the two bounds the
	 * correction is blended in, so that a reading a percent either side
	 * of one threshold does not flip a job from its share to a full GPU.
	 */
	w = (total - BUSY_EST_SAT_LO) / (BUSY_EST_SAT_HI - BUSY_EST_SAT_LO);
	if (w > 1.0)
		w = 1.0;
	return unit(s + w * (s / top - s));
}

void busy_est_add(struct busy_est *e, double demand, bool active)
{
	double d = unit(demand);

	e->seen++;
	e->sum_all += d;
	if (!active && e->n == 0)
		return;		/* still starting: not its demand */
	e->n++;
	e->sum += d;
	if (active) {
		e->n_last = e->n;
		e->sum_last = e->sum;
	}
}

int busy_est_final(const struct busy_est *e, uint32_t min, double *out)
{
	if (min < 1)
		min = 1;
	if (e->n_last >= min) {
		*out = unit(e->sum_last / e->n_last);
		return 0;
	}
	/* Never (or hardly ever) ran a kernel while watched: what it used
	 * over its whole life, which is about nothing. */
	if (e->seen >= min) {
		*out = unit(e->sum_all / e->seen);
		return 0;
	}
	return -ENODATA;
}

int busy_est_duty(const struct busy_est *e, uint32_t min, double *out)
{
	if (min < 1)
		min = 1;
	if (e->seen < min)
		return -ENODATA;
	*out = unit(e->sum_all / e->seen);
	return 0;
}

int busy_est_now(const struct busy_est *e, uint32_t min, double *out)
{
	if (min < 1)
		min = 1;
	if (e->n < min)
		return -ENODATA;
	*out = unit(e->sum / e->n);
	return 0;
}
