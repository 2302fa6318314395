/*
 * admit.c - admission and placement policy (see admit.h).
 *
 * Owns: the fit test, the busyness score, both placements, the queue order
 * (aging, priority, FIFO), backfill and the head's reservation.
 *
 * Placement, after Hay, in two phases.  Filter (the same for round
 * robin): a GPU is a candidate for task t when
 *
 *	occupied(g) + need(t, g) <= capacity(g)
 *	    occupied = max(committed, used), capacity = total - headroom x total
 *	and (g has no task, or gate(g) + duty(t) <= busy_max)
 *	    gate = max(util, duty_committed)
 *	and exclusivity allows it (an exclusive task wants an empty GPU; a GPU
 *	    holding one takes nothing else)
 *	and t is not wait-bound, or no wait-bound task runs on g (fits_wait:
 *	    without MPS, two tasks that wait for the GPU thousands of times a
 *	    second each give up their turn at every wait and get it back only
 *	    after the other's: together they do less than one after the other)
 *	and no running task there waits to grow (admit_grow_may_wait: the
 *	    memory that frees up is theirs first, or a stream of newcomers
 *	    could keep a task that is already running waiting for ever)
 *	and no evict-mode task there thrashes for want of room it was refused
 *	    (thrash_hold, admit_thrash_hold: the same reasoning; eviction keeps
 *	    it correct meanwhile, but at a fraction of its speed).
 *
 * `occupied` takes the larger of the preloads' commitments and NVML's used
 * memory so that memory held by processes kmux does not manage still
 * counts.  `gate` takes the larger of the measured utilization and the
 * predicted duty of the tasks placed there, so a task admitted a moment
 * ago counts before NVML has seen it, and a task running hotter than
 * predicted counts as measured.  An empty GPU always passes the busyness
 * test: otherwise a task predicted busier than busy_max could never run.
 *
 * The test sums duties (each task's demand averaged over its whole life,
 * start-up and host work included), not the active demands the score
 * weighs: co-located jobs are seldom all running kernels at once, and
 * summing what each wants while it does overstated a GPU's load enough to
 * keep jobs queued with the GPU half idle (docs/design-daemon.md, "Admission
 * uses duty, placement uses active demand").
 *
 * Score: each candidate is ranked by its busyness after placement, over
 * the time t is expected to run,
 *
 *	score = w_util x (load_t + busy(t))
 *	      + w_mem  x (occupied + need) / total
 *	      + w_tasks x ntasks_t
 *	    load_t   = sum over tasks i there of busy(i) x overlap(i, t)
 *	             + max(0, util - busy_committed)
 *	    ntasks_t = sum over tasks i there of overlap(i, t)
 *	    overlap  = min(remaining(i), runtime(t)) / runtime(t), or 1 when
 *	               either runtime is unknown (no profile)
 *
 * Why the overlap: placement decides whom t shares a GPU with for t's whole
 * life, not for the instant it starts.  A training job admitted beside one
 * that ends in two seconds barely shares anything with it; beside one with
 * ten minutes left it shares all of them.  Counting every task whole (as
 * the score did) sends a long job away from a GPU whose heavy task is
 * about to end, onto a GPU whose lighter tasks will outlast it.  With
 * learned runtimes (the profile keeps the mean) the load a newcomer will
 * see is weighted by how long it will see it; without them the score is
 * what it was.  The measured utilization counts only beyond what the tasks
 * predict (foreign processes, tasks hotter than predicted): it is the
 * same max(util, busy_committed) as `load` when every overlap is 1, and
 * never counts a task twice.
 *
 * lowest first, equal scores (within 1e-9) by GPU index.  The load term
 * steers tasks away from busy GPUs (interference), the memory term keeps
 * room for large tasks spread evenly, the task count breaks near-ties
 * toward fewer co-runners (each one adds context switches and cache
 * pressure the utilization average does not see yet).  A task wanting K
 * GPUs takes the K best candidates, each of which must fit on its own.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "admit.h"

#define MiB (UINT64_C(1) << 20)
#define GiB (UINT64_C(1) << 30)
#define SCORE_EPS 1e-9
/* A task past its expected end is taken to have this share of its runtime
 * left: the runtime is a mean, so many runs end after it, but one running
 * over has little left on average, and counting it whole would make a GPU
 * look busiest just before it frees up. */
#define OVERDUE_FRAC 0.25

void admit_policy_default(struct admit_policy *p)
{
	memset(p, 0, sizeof(*p));
	p->placement = ADMIT_PLACE_BUSYNESS;
	p->headroom = 0.05;
	p->busy_max = 1.5;
	p->w_util = 1.0;
	p->w_mem = 0.5;
	p->w_tasks = 0.1;
	p->guess_frac = 0.10;
	p->guess_min = GiB;
	p->learned_margin = 1.10;
	p->default_busy = 0.25;
	p->grow_wait_us = UINT64_C(600) * 1000000;
	p->util_tau_s = 10.0;
	p->backfill = true;
	p->age_us = UINT64_C(300) * 1000000;
	p->backfill_bound_us = UINT64_C(120) * 1000000;
	p->slice_waits = 1000.0;
}

bool admit_wait_bound(double wait_rate, const struct admit_policy *p)
{
	return p && !p->mps && p->slice_waits > 0.0 && wait_rate >= 0.0 &&
	       wait_rate >= p->slice_waits;
}

static const char *const placement_names[] = {
	[ADMIT_PLACE_BUSYNESS] = "busyness",
	[ADMIT_PLACE_ROUND_ROBIN] = "roundrobin",
};

int admit_placement_parse(const char *name, enum admit_placement_kind *out)
{
	size_t i;

	if (name == NULL || out == NULL)
		return -EINVAL;
	for (i = 0; i < sizeof(placement_names) / sizeof(placement_names[0]); i++)
		if (strcmp(name, placement_names[i]) == 0) {
			*out = (enum admit_placement_kind)i;
			return 0;
		}
	return -EINVAL;
}

const char *admit_placement_name(enum admit_placement_kind kind)
{
	if ((size_t)kind >= sizeof(placement_names) / sizeof(placement_names[0]))
		return "?";
	return placement_names[kind];
}

/* In [lo, hi] and not NaN. */
static bool in_range(double x, double lo, double hi)
{
	return x >= lo && x <= hi;
}

int admit_policy_check(const struct admit_policy *p)
{
	if (p == NULL)
		return -EINVAL;
	if (p->placement != ADMIT_PLACE_BUSYNESS &&
	    p->placement != ADMIT_PLACE_ROUND_ROBIN)
		return -EINVAL;
	if (!in_range(p->headroom, 0.0, 0.99) || !in_range(p->busy_max, 0.0, 1e6) ||
	    p->busy_max <= 0.0)
		return -EINVAL;
	if (!in_range(p->w_util, 0.0, 1e6) || !in_range(p->w_mem, 0.0, 1e6) ||
	    !in_range(p->w_tasks, 0.0, 1e6))
		return -EINVAL;
	/* A guess above the capacity would make unknown tasks unplaceable. */
	if (!in_range(p->guess_frac, 0.0, 1.0 - p->headroom))
		return -EINVAL;
	if (!in_range(p->learned_margin, 1.0, 100.0) ||
	    !in_range(p->default_busy, 0.0, 1.0) ||
	    !in_range(p->util_tau_s, 0.0, 1e9) ||
	    !in_range(p->slice_waits, 0.0, 1e9))
		return -EINVAL;
	return 0;
}

static double clamp01(double x)
{
	if (!(x > 0.0))
		return 0.0;	/* NaN too */
	return x > 1.0 ? 1.0 : x;
}

/* x rounded up to a whole MiB, saturating. */
static uint64_t round_mib(double x)
{
	uint64_t v;

	if (!(x > 0.0))
		return 0;
	if (x >= 18446744073709549568.0)	/* largest double < 2^64 */
		return UINT64_MAX;
	v = (uint64_t)x;
	if ((double)v < x)
		v++;
	if (v > UINT64_MAX - (MiB - 1))
		return UINT64_MAX;
	return (v + MiB - 1) & ~(MiB - 1);
}

int admit_task_init(struct admit_task *t, uint64_t id, uint32_t ngpus,
		    uint64_t declared, const struct admit_profile *learned,
		    const struct admit_policy *p, uint64_t now_us)
{
	bool have_profile = learned != NULL && learned->runs > 0;

	if (t == NULL || p == NULL || ngpus < 1 || ngpus > ADMIT_MAX_GPUS)
		return -EINVAL;
	memset(t, 0, sizeof(*t));
	t->id = id;
	t->ngpus = ngpus;
	t->wait_start_us = now_us;
	t->busy = have_profile ? clamp01(learned->mean_busy) : p->default_busy;
	/* The duty is at most the active demand (a job cannot average more
	 * than it runs at); a duty learned over fewer runs than the
	 * busyness may say otherwise for a while. */
	t->duty = have_profile && learned->duty_runs > 0 &&
		  clamp01(learned->mean_duty) < t->busy ?
		  clamp01(learned->mean_duty) : t->busy;
	t->runtime_us = have_profile ? learned->runtime_us : 0;
	t->from_profile = have_profile;
	if (declared > 0) {
		t->mem = declared;
		t->mem_source = ADMIT_MEM_DECLARED;
	} else if (have_profile) {
		t->mem = round_mib((double)learned->peak_mem * p->learned_margin);
		t->mem_source = ADMIT_MEM_LEARNED;
	} else {
		t->mem = 0;
		t->mem_source = ADMIT_MEM_GUESSED;
	}
	return 0;
}

uint64_t admit_capacity(const struct admit_gpu *g, const struct admit_policy *p)
{
	double reserve = (double)g->mem_total * p->headroom;
	uint64_t r;

	if (!(reserve > 0.0))
		return g->mem_total;
	r = reserve >= (double)g->mem_total ? g->mem_total : (uint64_t)reserve;
	/* Round the reserve up: headroom is a floor, never a ceiling. */
	if ((double)r < reserve && r < g->mem_total)
		r++;
	return g->mem_total - r;
}

bool admit_task_evict(struct admit_task *t, const struct admit_profile *learned)
{
	if (t == NULL || learned == NULL || learned->thrash_runs == 0 ||
	    learned->thrash_mem == 0)
		return false;
	t->evict_ws = round_mib((double)learned->thrash_mem);
	return true;
}

uint64_t admit_need(const struct admit_task *t, const struct admit_gpu *g,
		    const struct admit_policy *p)
{
	uint64_t need = t->mem, guess, ws, cap;

	if (t->mem_source == ADMIT_MEM_GUESSED) {
		guess = round_mib((double)g->mem_total * p->guess_frac);
		if (guess < p->guess_min)
			guess = p->guess_min;
		if (guess > need)
			need = guess;
	}
	/* A learned working set larger than the GPU still admits the task,
	 * on a GPU of its own: it evicts, as it would have anyway. */
	cap = admit_capacity(g, p);
	ws = t->evict_ws < cap ? t->evict_ws : cap;
	return ws > need ? ws : need;
}

static uint64_t occupied(const struct admit_gpu *g)
{
	return g->mem_committed > g->mem_used ? g->mem_committed : g->mem_used;
}

/* What admission's busyness test sees on g: the larger of what NVML
 * measures and the duty of the tasks placed there. */
static double gate_load(const struct admit_gpu *g)
{
	double u = g->util_valid ? clamp01(g->util) : 0.0;
	double d = g->duty_committed > 0.0 ? g->duty_committed : 0.0;

	return u > d ? u : d;
}

/*
 * What the tasks with a known end on g do not share with t (runtime rt µs,
 * starting at now): *busy_off, the busyness, and *tasks_off, the task count
 * the overlap takes off (see the comment at the top).
 */
static void overlap_off(const struct admit_gpu *g, uint64_t rt, uint64_t now,
			double *busy_off, double *tasks_off)
{
	uint32_t i, n = g->nruns < ADMIT_MAX_RUNS ? g->nruns : ADMIT_MAX_RUNS;

	*busy_off = 0.0;
	*tasks_off = 0.0;
	if (rt == 0)
		return;
	for (i = 0; i < n; i++) {
		const struct admit_run *r = &g->runs[i];
		double rem, w;

		if (r->end_us == 0)
			continue;
		rem = r->end_us > now ? (double)(r->end_us - now) : 0.0;
		if (rem < OVERDUE_FRAC * (double)r->runtime_us)
			rem = OVERDUE_FRAC * (double)r->runtime_us;
		w = rem >= (double)rt ? 1.0 : rem / (double)rt;
		*busy_off += (r->busy > 0.0 ? r->busy : 0.0) * (1.0 - w);
		*tasks_off += 1.0 - w;
	}
}

/* load_t and ntasks_t of the score, for t (NULL: as it stands). */
static void load_over(const struct admit_gpu *g, const struct admit_task *t,
		      uint64_t now, double *ld, double *ntasks)
{
	double u = g->util_valid ? clamp01(g->util) : 0.0;
	double b = g->busy_committed > 0.0 ? g->busy_committed : 0.0;
	double boff, toff, bt;

	overlap_off(g, t ? t->runtime_us : 0, now, &boff, &toff);
	bt = b - boff;
	*ld = (bt > 0.0 ? bt : 0.0) + (u > b ? u - b : 0.0);
	*ntasks = (double)g->ntasks - toff;
	if (*ntasks < 0.0)
		*ntasks = 0.0;
}

double admit_load_for(const struct admit_gpu *g, const struct admit_task *t,
		      uint64_t now_us)
{
	double ld, nt;

	if (g == NULL)
		return 0.0;
	load_over(g, t, now_us, &ld, &nt);
	return ld;
}

static double score(const struct admit_gpu *g, const struct admit_task *t,
		    uint64_t need, uint64_t now, const struct admit_policy *p)
{
	double mem = 1.0, ld, nt;

	if (g->mem_total > 0)
		mem = ((double)occupied(g) + (double)need) / (double)g->mem_total;
	load_over(g, t, now, &ld, &nt);
	return p->w_util * (ld + (t ? t->busy : 0.0)) + p->w_mem * mem +
	       p->w_tasks * nt;
}

double admit_busyness(const struct admit_gpu *g, const struct admit_policy *p)
{
	return score(g, NULL, 0, 0, p);
}

static bool fits_mem(const struct admit_gpu *g, uint64_t need,
		     const struct admit_policy *p)
{
	uint64_t cap = admit_capacity(g, p), occ = occupied(g);

	return occ <= cap && need <= cap - occ;
}

static bool fits_exclusive(const struct admit_gpu *g, const struct admit_task *t)
{
	if (g->exclusive || g->grow_waiting > 0 || g->thrash_hold > 0)
		return false;
	return !t->exclusive || g->ntasks == 0;
}

static bool fits_wait(const struct admit_gpu *g, const struct admit_task *t)
{
	return !t->wait_bound || g->nwait_bound == 0;
}

static bool fits_busy(const struct admit_gpu *g, const struct admit_task *t,
		      const struct admit_policy *p)
{
	return g->ntasks == 0 ||
	       gate_load(g) + t->duty <= p->busy_max + SCORE_EPS;
}

/* May t go on g at all (its GPU mask)? */
static bool allowed(const struct admit_task *t, const struct admit_gpu *g)
{
	return t->gpu_mask == 0 ||
	       (g->index < 64 && (t->gpu_mask & (UINT64_C(1) << g->index)));
}

int admit_check(const struct admit_task *t, const struct admit_gpu *gpus,
		size_t n, const struct admit_policy *p)
{
	size_t i, could = 0, allowed_n = 0;

	if (t == NULL || p == NULL || (gpus == NULL && n > 0) ||
	    n > ADMIT_MAX_GPUS || t->ngpus < 1)
		return -EINVAL;
	if (t->ngpus > n)
		return -ENODEV;
	for (i = 0; i < n; i++) {
		if (!allowed(t, &gpus[i]))
			continue;
		allowed_n++;
		if (admit_need(t, &gpus[i], p) <= admit_capacity(&gpus[i], p))
			could++;
	}
	if (allowed_n < t->ngpus)
		return -ENODEV;
	return could >= t->ngpus ? 0 : -ENOSPC;
}

struct cand {
	uint32_t slot;
	uint32_t index;
	double score;		/* busyness placement */
	uint64_t stamp;		/* round robin */
	uint64_t need;
};

/* Does a rank before b?  Total order: GPU indices are distinct. */
static bool cand_before(const struct cand *a, const struct cand *b,
			enum admit_placement_kind kind)
{
	if (kind == ADMIT_PLACE_ROUND_ROBIN) {
		if (a->stamp != b->stamp)
			return a->stamp < b->stamp;
	} else {
		if (a->score < b->score - SCORE_EPS)
			return true;
		if (a->score > b->score + SCORE_EPS)
			return false;
	}
	if (a->index != b->index)
		return a->index < b->index;
	return a->slot < b->slot;
}

/*
 * Phase one and two for t, never using the slots in `avoid` (a bit per
 * slot).  0, or -EAGAIN when fewer than t->ngpus GPUs qualify.
 */
static int place_avoiding(const struct admit_gpu *gpus, size_t n,
			  const struct admit_task *t,
			  const struct admit_policy *p, uint64_t avoid,
			  uint64_t now, struct admit_placement *out)
{
	struct cand c[ADMIT_MAX_GPUS], x;
	size_t i, j, nc = 0;

	for (i = 0; i < n; i++) {
		const struct admit_gpu *g = &gpus[i];
		uint64_t need = admit_need(t, g, p);

		if ((avoid & (UINT64_C(1) << i)) || !allowed(t, g))
			continue;
		/* Admission is the same for both placements, so that comparing
		 * them compares where jobs go, not how many run at once (on two
		 * H200s a round robin that skipped the busyness limit ran more
		 * jobs at once and won for that reason, bench/results/jobmix.md
		 * run 3). */
		if (!fits_mem(g, need, p) || !fits_exclusive(g, t) ||
		    !fits_wait(g, t) || !fits_busy(g, t, p))
			continue;
		x.slot = (uint32_t)i;
		x.index = g->index;
		x.score = score(g, t, need, now, p);
		x.stamp = g->last_placed;
		x.need = need;
		/* Insertion sort: at most 64 candidates. */
		for (j = nc; j > 0 && cand_before(&x, &c[j - 1], p->placement); j--)
			c[j] = c[j - 1];
		c[j] = x;
		nc++;
	}
	if (nc < t->ngpus)
		return -EAGAIN;

	memset(out, 0, sizeof(*out));
	out->ngpus = t->ngpus;
	out->quota = UINT64_MAX;
	for (i = 0; i < t->ngpus; i++) {
		out->slot[i] = c[i].slot;
		/* One quota for all: the smallest need is safe everywhere. */
		if (c[i].need < out->quota)
			out->quota = c[i].need;
		if (p->placement == ADMIT_PLACE_BUSYNESS)
			out->score = c[i].score;
	}
	return 0;
}

int admit_place_at(const struct admit_gpu *gpus, size_t n,
		   const struct admit_task *t, const struct admit_policy *p,
		   uint64_t now_us, struct admit_placement *out)
{
	int rc;

	if (out == NULL)
		return -EINVAL;
	rc = admit_check(t, gpus, n, p);
	if (rc < 0)
		return rc;
	return place_avoiding(gpus, n, t, p, 0, now_us, out);
}

int admit_place(const struct admit_gpu *gpus, size_t n,
		const struct admit_task *t, const struct admit_policy *p,
		struct admit_placement *out)
{
	return admit_place_at(gpus, n, t, p, 0, out);
}

/*
 * The GPUs a blocked head waits for: among those that could ever hold it,
 * the t->ngpus that are closest to fitting (for an exclusive task, first
 * those with the fewest tasks; for a wait-bound one, the fewest wait-bound
 * tasks), then the fewest tasks, then the lowest index.
 * While reserved they take no new task, so they drain toward the head.
 */
static uint64_t reserve_for(const struct admit_gpu *gpus, size_t n,
			    const struct admit_task *t,
			    const struct admit_policy *p)
{
	struct rkey {
		uint32_t slot;
		uint32_t blockers;	/* tasks that keep the head off g */
		uint64_t shortfall;
		uint32_t ntasks;
		uint32_t index;
	} k[ADMIT_MAX_GPUS], x;
	size_t i, j, nk = 0;
	uint64_t mask = 0;

	for (i = 0; i < n; i++) {
		const struct admit_gpu *g = &gpus[i];
		uint64_t need = admit_need(t, g, p), cap = admit_capacity(g, p);
		uint64_t occ = occupied(g);

		if (need > cap || !allowed(t, g))
			continue;
		x.slot = (uint32_t)i;
		x.blockers = t->exclusive ? g->ntasks :
			     t->wait_bound ? g->nwait_bound : 0;
		x.shortfall = occ > cap - need ? occ - (cap - need) : 0;
		x.ntasks = g->ntasks;
		x.index = g->index;
		for (j = nk; j > 0; j--) {
			const struct rkey *y = &k[j - 1];
			bool before;

			if (x.blockers != y->blockers)
				before = x.blockers < y->blockers;
			else if (x.shortfall != y->shortfall)
				before = x.shortfall < y->shortfall;
			else if (x.ntasks != y->ntasks)
				before = x.ntasks < y->ntasks;
			else
				before = x.index < y->index ||
					 (x.index == y->index && x.slot < y->slot);
			if (!before)
				break;
			k[j] = k[j - 1];
		}
		k[j] = x;
		nk++;
	}
	for (i = 0; i < nk && i < t->ngpus; i++)
		mask |= UINT64_C(1) << k[i].slot;
	return mask;
}

struct qkey {
	size_t pos;
	bool aged;
	int32_t prio;
	uint64_t wait_start;
};

static int qkey_cmp(const void *a_, const void *b_)
{
	const struct qkey *a = a_, *b = b_;

	if (a->aged != b->aged)
		return a->aged ? -1 : 1;
	/* Among aged tasks priority no longer counts: oldest first. */
	if (!a->aged && a->prio != b->prio)
		return a->prio > b->prio ? -1 : 1;
	if (a->wait_start != b->wait_start)
		return a->wait_start < b->wait_start ? -1 : 1;
	return a->pos < b->pos ? -1 : (a->pos > b->pos);
}

static uint64_t waited(const struct admit_task *t, uint64_t now)
{
	return now > t->wait_start_us ? now - t->wait_start_us : 0;
}

int admit_next(const struct admit_task *queue, size_t nqueue,
	       const struct admit_gpu *gpus, size_t ngpus,
	       const struct admit_policy *p, uint64_t now_us,
	       struct admit_decision *out)
{
	struct qkey *keys;
	const struct admit_task *head;
	uint64_t avoid = 0;
	size_t i;
	int rc;

	if (out == NULL || p == NULL || (queue == NULL && nqueue > 0) ||
	    (gpus == NULL && ngpus > 0) || ngpus > ADMIT_MAX_GPUS)
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	if (nqueue == 0)
		return -EAGAIN;

	/* A task that can never run would block its place in line forever. */
	for (i = 0; i < nqueue; i++) {
		rc = admit_check(&queue[i], gpus, ngpus, p);
		if (rc < 0) {
			out->task = i;
			return rc;
		}
	}

	keys = malloc(nqueue * sizeof(*keys));
	if (keys == NULL)
		return -ENOMEM;
	for (i = 0; i < nqueue; i++) {
		keys[i].pos = i;
		keys[i].aged = waited(&queue[i], now_us) >= p->age_us;
		keys[i].prio = queue[i].prio;
		keys[i].wait_start = queue[i].wait_start_us;
	}
	qsort(keys, nqueue, sizeof(*keys), qkey_cmp);

	head = &queue[keys[0].pos];
	rc = place_avoiding(gpus, ngpus, head, p, 0, now_us, &out->place);
	if (rc == 0) {
		out->task = keys[0].pos;
		goto out;
	}
	if (!p->backfill)
		goto out;

	if (p->backfill_bound_us != UINT64_MAX &&
	    waited(head, now_us) >= p->backfill_bound_us)
		avoid = reserve_for(gpus, ngpus, head, p);

	for (i = 1; i < nqueue; i++) {
		rc = place_avoiding(gpus, ngpus, &queue[keys[i].pos], p, avoid,
				    now_us, &out->place);
		if (rc == 0) {
			out->task = keys[i].pos;
			out->backfilled = true;
			goto out;
		}
	}
	rc = -EAGAIN;
out:
	free(keys);
	return rc;
}

static uint64_t sat_add(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

void admit_commit(struct admit_gpu *gpus, size_t n, const struct admit_task *t,
		  const struct admit_placement *pl, uint64_t stamp,
		  uint64_t now_us)
{
	uint32_t i;

	for (i = 0; i < pl->ngpus && i < ADMIT_MAX_GPUS; i++) {
		struct admit_gpu *g;

		if (pl->slot[i] >= n)
			continue;
		g = &gpus[pl->slot[i]];
		g->mem_committed = sat_add(g->mem_committed, pl->quota);
		g->busy_committed += t->busy;
		g->duty_committed += t->duty;
		g->ntasks++;
		if (t->exclusive)
			g->exclusive = true;
		if (t->wait_bound)
			g->nwait_bound++;
		g->last_placed = stamp;
		if (t->runtime_us > 0 && g->nruns < ADMIT_MAX_RUNS)
			g->runs[g->nruns++] = (struct admit_run){
				.id = t->id, .busy = t->busy,
				.end_us = sat_add(now_us, t->runtime_us),
				.runtime_us = t->runtime_us };
	}
}

/* t's entry in g->runs, or NULL. */
static struct admit_run *run_of(struct admit_gpu *g, uint64_t id)
{
	uint32_t i, n = g->nruns < ADMIT_MAX_RUNS ? g->nruns : ADMIT_MAX_RUNS;

	for (i = 0; i < n; i++)
		if (g->runs[i].id == id)
			return &g->runs[i];
	return NULL;
}

void admit_set_busy(struct admit_gpu *gpus, size_t n, struct admit_task *t,
		    const struct admit_placement *pl, double busy)
{
	double d = busy - t->busy, duty, dd;
	uint32_t i;

	duty = t->busy > 0.0 ? t->duty * busy / t->busy : busy;
	if (duty > busy)
		duty = busy;
	if (!(duty > 0.0))
		duty = 0.0;
	dd = duty - t->duty;

	for (i = 0; i < pl->ngpus && i < ADMIT_MAX_GPUS; i++) {
		struct admit_gpu *g;
		struct admit_run *r;

		if (pl->slot[i] >= n)
			continue;
		g = &gpus[pl->slot[i]];
		g->busy_committed += d;
		if (g->busy_committed < 0.0)
			g->busy_committed = 0.0;
		g->duty_committed += dd;
		if (g->duty_committed < 0.0)
			g->duty_committed = 0.0;
		r = run_of(g, t->id);
		if (r)
			r->busy = busy;
	}
	t->busy = busy;
	t->duty = duty;
}

int admit_grow(struct admit_gpu *gpus, size_t n, struct admit_placement *pl,
	       uint64_t want, const struct admit_policy *p)
{
	uint64_t more;
	uint32_t i;

	if (want <= pl->quota || pl->ngpus > ADMIT_MAX_GPUS)
		return -EINVAL;
	more = want - pl->quota;
	/* All or nothing: a task's quota is the same on each of its GPUs. */
	for (i = 0; i < pl->ngpus; i++) {
		const struct admit_gpu *g;
		uint64_t cap;

		if (pl->slot[i] >= n)
			return -EINVAL;
		g = &gpus[pl->slot[i]];
		cap = admit_capacity(g, p);
		if (g->mem_committed > cap || more > cap - g->mem_committed)
			return -ENOSPC;
	}
	for (i = 0; i < pl->ngpus; i++) {
		struct admit_gpu *g = &gpus[pl->slot[i]];

		g->mem_committed = sat_add(g->mem_committed, more);
	}
	pl->quota = want;
	return 0;
}

uint64_t admit_grow_room(const struct admit_gpu *gpus, size_t n,
			 const struct admit_placement *pl,
			 const struct admit_policy *p)
{
	uint64_t room = UINT64_MAX;
	uint32_t i;

	if (pl->ngpus < 1 || pl->ngpus > ADMIT_MAX_GPUS)
		return 0;
	for (i = 0; i < pl->ngpus; i++) {
		const struct admit_gpu *g;
		uint64_t cap;

		if (pl->slot[i] >= n)
			return 0;
		g = &gpus[pl->slot[i]];
		cap = admit_capacity(g, p);
		/* A suspended waiter gave its room up for its neighbours:
		 * only other (quota-mode) waiters keep it for themselves. */
		if (g->grow_waiting > g->suspended || g->mem_committed >= cap)
			return 0;
		if (cap - g->mem_committed < room)
			room = cap - g->mem_committed;
	}
	return room;
}

bool admit_grow_may_wait(const struct admit_gpu *gpus, size_t n,
			 const struct admit_placement *pl, uint64_t want,
			 const struct admit_policy *p)
{
	uint32_t i;

	if (pl->ngpus < 1 || pl->ngpus > ADMIT_MAX_GPUS)
		return false;
	for (i = 0; i < pl->ngpus; i++) {
		const struct admit_gpu *g;

		if (pl->slot[i] >= n)
			return false;
		g = &gpus[pl->slot[i]];
		/* More than the GPU can ever commit: waiting cannot help. */
		if (want > admit_capacity(g, p))
			return false;
		/* Every task here waits (this one included): none of them will
		 * end or free anything, so no room can come. */
		if (g->grow_waiting >= g->ntasks)
			return false;
	}
	return true;
}

bool admit_thrash_hold(const struct admit_gpu *gpus, size_t n,
		       const struct admit_placement *pl, uint64_t want,
		       const struct admit_policy *p)
{
	uint32_t i;

	if (pl->ngpus < 1 || pl->ngpus > ADMIT_MAX_GPUS || want <= pl->quota)
		return false;
	for (i = 0; i < pl->ngpus; i++) {
		if (pl->slot[i] >= n)
			return false;
		if (want > admit_capacity(&gpus[pl->slot[i]], p))
			return false;
	}
	return true;
}

void admit_release(struct admit_gpu *gpus, size_t n, const struct admit_task *t,
		   const struct admit_placement *pl)
{
	uint32_t i;

	for (i = 0; i < pl->ngpus && i < ADMIT_MAX_GPUS; i++) {
		struct admit_run *r;
		struct admit_gpu *g;

		if (pl->slot[i] >= n)
			continue;
		g = &gpus[pl->slot[i]];
		g->mem_committed = g->mem_committed > pl->quota ?
				   g->mem_committed - pl->quota : 0;
		g->busy_committed -= t->busy;
		g->duty_committed -= t->duty;
		/* The utilization average still holds the task that just went
		 * (it decays over util_tau_s): left there, it would make the
		 * GPU that has just freed up look busier than the one whose
		 * tasks go on, the wrong way round.  Its busyness is the best
		 * estimate of its share; a low estimate only leaves the
		 * predictions to speak until the next samples. */
		if (g->util_valid && t->busy > 0.0) {
			g->util -= t->busy;
			if (g->util < 0.0)
				g->util = 0.0;
		}
		r = run_of(g, t->id);
		if (r)
			*r = g->runs[--g->nruns];
		if (g->ntasks > 0)
			g->ntasks--;
		/* Rounding must not leave a ghost of load on an empty GPU. */
		if (g->ntasks == 0 || g->busy_committed < 0.0)
			g->busy_committed = 0.0;
		if (g->ntasks == 0 || g->duty_committed < 0.0)
			g->duty_committed = 0.0;
		if (g->ntasks == 0)
			g->nruns = 0;
		if (t->exclusive)
			g->exclusive = false;
		if (t->wait_bound && g->nwait_bound > 0)
			g->nwait_bound--;
	}
}

void admit_mark_wait_bound(struct admit_gpu *gpus, size_t n,
			   struct admit_task *t,
			   const struct admit_placement *pl)
{
	uint32_t i;

	if (t->wait_bound)
		return;
	t->wait_bound = true;
	for (i = 0; i < pl->ngpus && i < ADMIT_MAX_GPUS; i++)
		if (pl->slot[i] < n)
			gpus[pl->slot[i]].nwait_bound++;
}

uint64_t admit_mem_short(const struct admit_gpu *g,
			 const struct admit_task *head,
			 const struct admit_policy *p)
{
	uint64_t cap = admit_capacity(g, p), used = g->mem_used, need;
	uint64_t s = used > cap ? used - cap : 0;

	if (!head || head->ngpus != 1 || !allowed(head, g) ||
	    !fits_exclusive(g, head) || !fits_wait(g, head) ||
	    !fits_busy(g, head, p))
		return s;
	need = admit_need(head, g, p);
	/* Only what eviction can fix: the commitments must leave room. */
	if (g->mem_committed > cap || need > cap - g->mem_committed)
		return s;
	if (used <= cap && need <= cap - used)
		return s;
	/* used + need - cap, saturating: used > cap - need here. */
	if (used > cap)
		need = need > UINT64_MAX - (used - cap) ? UINT64_MAX :
		       used - cap + need;
	else
		need -= cap - used;
	return need > s ? need : s;
}

uint64_t admit_commit_short(const struct admit_gpu *g,
			    const struct admit_task *head,
			    const struct admit_policy *p)
{
	uint64_t cap = admit_capacity(g, p), need;

	if (!head || head->ngpus != 1 || !allowed(head, g) ||
	    !fits_exclusive(g, head) || !fits_wait(g, head) ||
	    !fits_busy(g, head, p))
		return 0;
	need = admit_need(head, g, p);
	if (need > cap)
		return 0;	/* never fits: nothing to give would help */
	if (g->mem_committed <= cap && need <= cap - g->mem_committed)
		return 0;
	/* committed + need - cap: committed > cap - need here. */
	return g->mem_committed > UINT64_MAX - need ? UINT64_MAX :
	       g->mem_committed + need - cap;
}

int admit_shrink(struct admit_gpu *gpus, size_t n, struct admit_placement *pl,
		 uint64_t to)
{
	uint64_t less;
	uint32_t i;

	if (to == 0 || to >= pl->quota || pl->ngpus > ADMIT_MAX_GPUS)
		return -EINVAL;
	for (i = 0; i < pl->ngpus; i++)
		if (pl->slot[i] >= n)
			return -EINVAL;
	less = pl->quota - to;
	for (i = 0; i < pl->ngpus; i++) {
		struct admit_gpu *g = &gpus[pl->slot[i]];

		g->mem_committed = g->mem_committed > less ?
				   g->mem_committed - less : 0;
	}
	pl->quota = to;
	return 0;
}

void admit_gpu_sample(struct admit_gpu *g, double util, uint64_t mem_used,
		      double dt_s, const struct admit_policy *p)
{
	double x = clamp01(util), a;

	g->mem_used = mem_used;
	if (!g->util_valid) {
		g->util = x;
		g->util_valid = true;
		return;
	}
	if (!(dt_s > 0.0))
		return;		/* no time passed: nothing to weigh */
	a = p->util_tau_s > 0.0 ? dt_s / (p->util_tau_s + dt_s) : 1.0;
	g->util += a * (x - g->util);
}

uint64_t admit_ask_hold(uint64_t hold, uint64_t quota_asked,
			uint64_t quota_now)
{
	if (!hold || quota_now < quota_asked)
		return ADMIT_ASK_HOLD_US;
	if (hold >= ADMIT_ASK_HOLD_MAX_US / 2)
		return ADMIT_ASK_HOLD_MAX_US;
	return hold * 2;
}
