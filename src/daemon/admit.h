/*
 * admit.h - kmuxd's admission and placement policy: which queued task may
 * start now, and on which GPUs.
 *
 * Owns: the GPU and task models the policy reasons about, the two-phase
 * placement (filter GPUs that fit, then rank them by a busyness score, after
 * Hay), a memory-safe round-robin placement to compare against, and the
 * queue policy (FIFO with backfill, priorities with aging, and a bound on
 * how long backfill may hold back the head of the queue).
 *
 * Pure policy: no I/O, no clock, no globals.  The daemon fills struct
 * admit_gpu from the preloads' accounting and NVML samples, calls
 * admit_next() whenever something changed (a task queued or ended, a sample
 * arrived), and applies each decision with admit_commit().  The unit tests
 * drive exactly the same functions with synthetic GPUs.
 */
#ifndef KMUX_ADMIT_H
#define KMUX_ADMIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Same bound as the wire protocol's GPU masks. */
#define ADMIT_MAX_GPUS 64
/* Tasks per GPU whose expected end is tracked (struct admit_gpu.runs); a
 * task beyond them counts as if it ran for ever, which is what an unknown
 * runtime means anyway. */
#define ADMIT_MAX_RUNS 32

/* A task running on a GPU, as the score weighs it (admit_commit). */
struct admit_run {
	uint64_t id;		/* the task's id */
	double busy;		/* its predicted busyness (admit_set_busy) */
	uint64_t end_us;	/* when it is expected to end; 0: unknown */
	uint64_t runtime_us;	/* its expected runtime */
};

/* Where a task's memory need came from: decides how far it is trusted. */
enum admit_mem_source {
	ADMIT_MEM_DECLARED = 0,	/* kmux run --mem: the user's word */
	ADMIT_MEM_LEARNED = 1,	/* peak of earlier runs, plus a margin */
	ADMIT_MEM_GUESSED = 2,	/* unknown: a conservative share of the GPU */
};

enum admit_placement_kind {
	ADMIT_PLACE_BUSYNESS = 0,	/* filter + busyness score (default) */
	ADMIT_PLACE_ROUND_ROBIN = 1,	/* memory-safe round robin, a baseline */
};

/* What the daemon knows about one GPU. */
struct admit_gpu {
	uint32_t index;		/* device index (NVML / CUDA ordinal), < 64 */
	uint64_t mem_total;	/* bytes */
	/*
	 * Sum of the quotas of the kmux tasks placed here.  Authoritative:
	 * each preload enforces its quota, so committed memory is a bound on
	 * what kmux tasks can ever hold, whatever they have touched so far.
	 */
	uint64_t mem_committed;
	/* NVML's used bytes: all processes, kmux's and anyone else's. */
	uint64_t mem_used;
	/* Exponentially weighted recent utilization, 0..1 (admit_gpu_sample). */
	double util;
	bool util_valid;	/* at least one sample taken */
	/* Sum of the predicted busyness of the tasks placed here (their
	 * active demand: what the score weighs). */
	double busy_committed;
	/* Sum of their predicted duty (their whole-life mean demand: what
	 * the busyness test of admission weighs). */
	double duty_committed;
	uint32_t ntasks;	/* kmux tasks placed here */
	bool exclusive;		/* holds a task that wants the GPU alone */
	uint32_t nwait_bound;	/* wait-bound tasks here (admit_task) */
	/* Stamp of the last placement here (admit_commit): round robin. */
	uint64_t last_placed;
	/* Running tasks here waiting for their quota to grow (the daemon
	 * counts them); while > 0 the GPU takes no new task. */
	uint32_t grow_waiting;
	/* Of those, evict-mode tasks suspended for room (load control,
	 * docs/design-memory.md): they hold new tasks off like any waiter,
	 * but not their running neighbours' evict growth
	 * (admit_grow_room), so the room they gave up goes to those. */
	uint32_t suspended;
	/* Running evict-mode tasks here that thrash and were refused the
	 * budget they asked for (the daemon counts them, admit_thrash_hold):
	 * while > 0 the GPU takes no new task either, so the room its
	 * neighbours free as they end goes to the thrashing task rather
	 * than to newcomers (bench/results/memory.md, run 3). */
	uint32_t thrash_hold;
	/* The tasks placed here with a known expected runtime (nruns of them,
	 * admit_commit / admit_release keep them): the score weighs each by
	 * how much of a newcomer's lifetime it will overlap. */
	struct admit_run runs[ADMIT_MAX_RUNS];
	uint32_t nruns;
};

/* What earlier runs of the same command taught (kept in the database). */
struct admit_profile {
	uint64_t peak_mem;	/* bytes, the largest peak seen */
	double mean_busy;	/* mean busyness (active phase), 0..1 */
	/* Mean duty (whole life, start-up included), 0..1, over duty_runs
	 * runs; duty_runs 0: not known (a profile learned before kmuxd
	 * measured it), the busyness is used. */
	double mean_duty;
	uint32_t duty_runs;
	uint64_t runtime_us;	/* mean run time, start to end; 0: unknown */
	uint32_t runs;		/* 0: nothing learned */
	/* Evict mode: the largest budget a thrashing run asked for (what it
	 * had backed, its working set), over thrash_runs runs that thrashed;
	 * 0: it never thrashed. */
	uint64_t thrash_mem;
	uint32_t thrash_runs;
	/* Waits for the GPU per second of active time, mean over wait_runs
	 * runs; wait_runs 0: not known. */
	double wait_rate;
	uint32_t wait_runs;
};

/* A task that wants to run. */
struct admit_task {
	uint64_t id;
	/*
	 * Bytes per GPU.  DECLARED and LEARNED: the need itself.  GUESSED:
	 * what the task is known to need so far (0 at first, raised as the
	 * preload reports allocations); the need is then at least the guess
	 * of admit_need().
	 */
	uint64_t mem;
	enum admit_mem_source mem_source;
	/* Predicted busyness it adds to a GPU while it runs kernels (its
	 * active demand), 0..1: the score places it by this. */
	double busy;
	/* Predicted duty: the load it adds on average over its whole life,
	 * start-up and host work included, 0..busy: admission's busyness
	 * test (busy_max) sums this, since co-located tasks are seldom all
	 * in their active phase at once. */
	double duty;
	/*
	 * Evict mode: the working set an earlier run thrashed without
	 * (admit_task_evict), 0: none learned, or not evict mode.  The need
	 * is at least this (at most a GPU's capacity): a budget below it
	 * only thrashes, and admitting the task at it lets in neighbours
	 * whose memory it then cannot get.
	 */
	uint64_t evict_ws;
	/* Expected run time from its profile (learned), 0: unknown. */
	uint64_t runtime_us;
	/* What admit_task_init() predicted it from: true when a learned
	 * profile gave its busyness and runtime (whatever its memory's
	 * source), for the daemon's log. */
	bool from_profile;
	uint32_t ngpus;		/* GPUs wanted, each with `mem` free */
	int32_t prio;		/* higher first; 0 normal */
	bool exclusive;		/* wants GPUs with no other task */
	/* Waits for the GPU so often that time slicing with another such
	 * task costs both more than sharing gains (admit_wait_bound): never
	 * placed beside one. */
	bool wait_bound;
	/*
	 * GPU indices it may be placed on (bit i: index i), 0: any.  A
	 * process that registered with CUDA_VISIBLE_DEVICES already set (by
	 * Slurm, say) can use those GPUs only.
	 */
	uint64_t gpu_mask;
	uint64_t wait_start_us;	/* when it was queued (any monotonic µs) */
};

/*
 * Tunables.  admit_policy_default() gives the defaults written after each
 * field; docs/design-daemon.md explains the formulas they feed.
 */
struct admit_policy {
	enum admit_placement_kind placement;	/* BUSYNESS */
	/* Fraction of each GPU's memory never committed (fragmentation,
	 * contexts, foreign processes appearing): 0.05. */
	double headroom;
	/* Load a GPU may reach with the new task's duty: 1.5 (the larger of
	 * its utilization and its tasks' summed duty, plus the newcomer's).
	 * More than 1 on purpose: NVML's utilization is "a kernel was
	 * running", not "the SMs were full", and co-running such tasks
	 * still pays. */
	double busy_max;
	/* Score weights: load, memory pressure, tasks present: 1.0, 0.5, 0.1. */
	double w_util;
	double w_mem;
	double w_tasks;
	/* An unknown task starts with this share of a GPU as its quota:
	 * 0.10 ...  Small on purpose: it grows as the task allocates (and
	 * waits for room rather than failing, see admit_grow_may_wait), so
	 * the guess only has to cover a task's start, and every byte of it
	 * a small task does not use keeps another task out. */
	double guess_frac;
	/* ... and never less than this: 1 GiB. */
	uint64_t guess_min;
	/* A learned peak is multiplied by this: 1.10. */
	double learned_margin;
	/* Busyness of a task never seen before: 0.25.  Only until its own
	 * NVML samples correct it (about 2 s); too high a guess keeps a GPU
	 * idle for that long, too low a one costs only contention, which
	 * the correction then stops. */
	double default_busy;
	/* How long a running task may wait for its quota to grow before the
	 * allocation fails for it: 600 s. */
	uint64_t grow_wait_us;
	/* Time constant of the utilization average, seconds: 10. */
	double util_tau_s;
	/* Start smaller tasks when the head does not fit: true. */
	bool backfill;
	/* A task waiting this long is ahead of every task that is not, whatever
	 * the priorities: 300 s. */
	uint64_t age_us;
	/* Once the head has waited this long, backfill may no longer use the
	 * GPUs reserved for it: 120 s.  UINT64_MAX: never (starvation!). */
	uint64_t backfill_bound_us;
	/* A task that waits for the GPU at least this many times a second
	 * (learned, or seen while it runs) is wait-bound: never placed beside
	 * another wait-bound task, unless the GPUs are shared through MPS:
	 * 1000.  0: never.  Without MPS the driver time-slices co-located
	 * contexts, and each wait costs a task its co-runners' turns (0.25
	 * ms beside another waiting task, 2 ms beside one that always has
	 * work queued, on an H200: bench/results/share.md): two such tasks
	 * together do less than one after the other. */
	double slice_waits;
	/* The GPUs are shared through MPS (kmux daemon --mps): co-located
	 * tasks run side by side, not in time slices. */
	bool mps;
};

/* Where a task goes. */
struct admit_placement {
	uint32_t ngpus;
	/* Positions in the caller's gpus[] array, best first. */
	uint32_t slot[ADMIT_MAX_GPUS];
	/* Bytes per GPU to commit and to hand the preload as its quota. */
	uint64_t quota;
	/* Score of the worst GPU chosen (lower is better); 0 for round robin. */
	double score;
};

/* The queue's answer. */
struct admit_decision {
	size_t task;		/* position in the caller's queue[] */
	struct admit_placement place;
	bool backfilled;	/* started ahead of the head of the queue */
};

void admit_policy_default(struct admit_policy *p);

/*
 * Whether a task that waits for the GPU wait_rate times a second (< 0:
 * not known) is wait-bound under p (admit_task.wait_bound): never under
 * MPS or with slice_waits 0; else when the rate is known and at least
 * slice_waits.
 */
bool admit_wait_bound(double wait_rate, const struct admit_policy *p);

/*
 * t (placed, per pl) has just turned out to be wait-bound while it runs:
 * set t->wait_bound and count it on its GPUs, so that no other wait-bound
 * task joins it there.  Nothing when it already was.
 */
void admit_mark_wait_bound(struct admit_gpu *gpus, size_t n,
			   struct admit_task *t,
			   const struct admit_placement *pl);

/*
 * "busyness" or "roundrobin" (what `kmux daemon --placement` takes) to the
 * kind, and back.  0, or -EINVAL for any other name (NULL included).
 * admit_placement_name() gives "?" for a kind it does not know.
 */
int admit_placement_parse(const char *name, enum admit_placement_kind *out);
const char *admit_placement_name(enum admit_placement_kind kind);

/* -EINVAL if a tunable is out of range (headroom + guess_frac > 1, ...). */
int admit_policy_check(const struct admit_policy *p);

/*
 * Fill *t for a new task.  declared > 0 wins; else a profile with runs > 0
 * gives a learned need (peak x learned_margin, rounded up to a MiB) and
 * busyness; else the need is guessed.  The duty is the profile's when
 * known (never above the busyness), else the busyness (default_busy
 * without a profile).  0, or -EINVAL (ngpus 0 or > 64).
 */
int admit_task_init(struct admit_task *t, uint64_t id, uint32_t ngpus,
		    uint64_t declared, const struct admit_profile *learned,
		    const struct admit_policy *p, uint64_t now_us);

/*
 * t runs in evict mode (kmux run --memory=evict): when its profile says
 * earlier runs thrashed (thrash_runs > 0), t->evict_ws is the working set
 * they asked for, rounded up to a MiB, and true is returned (the need
 * admit_need() gives is then at least that); else t is left as it was.
 */
bool admit_task_evict(struct admit_task *t, const struct admit_profile *learned);

/* Bytes task t needs on GPU g: t->mem, or for a guess at least the guess;
 * never less than t->evict_ws, unless that is more than g's capacity (then
 * the capacity: the task still runs, evicting, on a GPU of its own). */
uint64_t admit_need(const struct admit_task *t, const struct admit_gpu *g,
		    const struct admit_policy *p);

/* Bytes of g that may be committed at all: total less the headroom. */
uint64_t admit_capacity(const struct admit_gpu *g, const struct admit_policy *p);

/*
 * The GPU's busyness score as it stands (what `kmux top` shows), the same
 * formula placement ranks by, without a new task.  Lower is less busy.
 */
double admit_busyness(const struct admit_gpu *g, const struct admit_policy *p);

/*
 * Could t ever run on these GPUs, were they empty?  0, -ENODEV if it wants
 * more GPUs than there are, -ENOSPC if fewer than t->ngpus GPUs could hold
 * its memory even empty.  kmuxd calls this at submission for a clear error.
 */
int admit_check(const struct admit_task *t, const struct admit_gpu *gpus,
		size_t n, const struct admit_policy *p);

/*
 * The load a task t starting at now_us would share g with: what
 * placement ranks by, before t's own busyness.  Each task there with a
 * known expected end counts by the share of t's expected lifetime it will
 * overlap (a task about to end barely counts for a long newcomer); tasks
 * with no known end, and every task when t's runtime is unknown, count
 * whole; so does the utilization NVML measures beyond what the tasks
 * predict (foreign processes, tasks running hotter).  t may be NULL: the
 * load as it stands.
 */
double admit_load_for(const struct admit_gpu *g, const struct admit_task *t,
		      uint64_t now_us);

/*
 * Place t now.  0 and *out; -EAGAIN if it does not fit now but could later;
 * -ENODEV / -ENOSPC as admit_check(); -EINVAL on bad arguments (n > 64,
 * t->ngpus 0).  Deterministic: equal scores go to the lower GPU index.
 */
int admit_place(const struct admit_gpu *gpus, size_t n,
		const struct admit_task *t, const struct admit_policy *p,
		struct admit_placement *out);
/* The same at a given time (the overlap weighting needs one; admit_place()
 * uses 0, which leaves expected ends as stamped). */
int admit_place_at(const struct admit_gpu *gpus, size_t n,
		   const struct admit_task *t, const struct admit_policy *p,
		   uint64_t now_us, struct admit_placement *out);

/*
 * Pick the next task of queue[] to start now, and where.  Call again after
 * each admit_commit() until it says -EAGAIN.  Returns:
 *   0          start queue[out->task] on out->place;
 *   -EAGAIN    nothing can start now (or the queue is empty);
 *   -ENODEV, -ENOSPC
 *              queue[out->task] can never run on these GPUs
 *              (admit_check()): leave it out and call again (kmuxd holds
 *              such tasks out of the queue it passes: the GPUs may be
 *              back after a restart);
 *   -EINVAL    bad arguments; -ENOMEM.
 * Order: tasks waiting at least age_us first (oldest first), then by
 * priority, then FIFO.  If the first (the head) cannot start, later tasks
 * that fit may start (backfill) unless the head has waited backfill_bound_us:
 * from then on the GPUs reserved for the head take no new task, so the head
 * waits at most for the tasks already running there.
 */
int admit_next(const struct admit_task *queue, size_t nqueue,
	       const struct admit_gpu *gpus, size_t ngpus,
	       const struct admit_policy *p, uint64_t now_us,
	       struct admit_decision *out);

/*
 * Apply a placement to the GPU states: commit its quota and busyness, count
 * the task, stamp the GPUs (round robin) with stamp, and note its expected
 * end (now_us + t->runtime_us) when its runtime is known.  And the reverse
 * when the task ends (saturating at zero); admit_release() also takes the
 * task's busyness out of the GPUs' utilization average, which would go on
 * counting a task that has gone for util_tau_s (see admit.c).
 */
void admit_commit(struct admit_gpu *gpus, size_t n, const struct admit_task *t,
		  const struct admit_placement *pl, uint64_t stamp,
		  uint64_t now_us);
void admit_release(struct admit_gpu *gpus, size_t n, const struct admit_task *t,
		   const struct admit_placement *pl);

/*
 * A running task's predicted busyness becomes busy (measured, say): its
 * GPUs' committed busyness moves by the difference (never below 0) and
 * t->busy is busy.  Its duty moves in proportion (t->duty x busy / the
 * old t->busy; busy itself when the old one was 0), and the GPUs'
 * committed duty with it: what the profile says of the share of its life
 * the task is active stands, the measurement says how hard it runs then.
 */
void admit_set_busy(struct admit_gpu *gpus, size_t n, struct admit_task *t,
		    const struct admit_placement *pl, double busy);

/*
 * A running task placed by pl needs more memory than its quota (an unknown
 * task outgrowing its guess): raise pl->quota to want on every GPU of pl,
 * if each can commit the difference.  0 (pl->quota is want), -ENOSPC when
 * a GPU lacks the room (nothing changes), -EINVAL when want <= pl->quota.
 */
int admit_grow(struct admit_gpu *gpus, size_t n, struct admit_placement *pl,
	       uint64_t want, const struct admit_policy *p);

/*
 * An evict-mode task thrashes and asks for more budget, granted now or not
 * at all: the bytes every GPU of pl can still commit (the least of them),
 * 0 when one has none or a task there waits to grow (its need comes
 * first; a suspended one, counted in suspended, does not keep it: it gave
 * its room up so that its neighbours stop thrashing).  The caller grows by
 * at most that much with admit_grow().
 */
uint64_t admit_grow_room(const struct admit_gpu *gpus, size_t n,
			 const struct admit_placement *pl,
			 const struct admit_policy *p);

/*
 * Memory pressure on g: bytes of memory in use (NVML's, which counts what
 * tasks touched, not what they may touch) to give back so that g is within
 * its capacity again, and, when head (may be NULL) is a one-GPU task that
 * g could take by its commitments but not by the memory in use, so that
 * head fits.  0: no pressure.  kmuxd asks evict-mode tasks for that much.
 */
uint64_t admit_mem_short(const struct admit_gpu *g,
			 const struct admit_task *head,
			 const struct admit_policy *p);

/*
 * Commitments keep head out of g: when head (may be NULL) is a one-GPU
 * task that g would take by everything but its commitments (its need
 * fits g's capacity, not what is left uncommitted), the bytes of
 * commitments to give back for it to fit; else 0.  kmuxd asks g's
 * evict-mode tasks to give up that much budget (pressure.c).
 */
uint64_t admit_commit_short(const struct admit_gpu *g,
			    const struct admit_task *head,
			    const struct admit_policy *p);

/*
 * An evict-mode task placed by pl gave up budget: lower pl->quota to `to`
 * and the commitments of its GPUs with it.  0, or -EINVAL when to is 0 or
 * not below pl->quota, or pl names a GPU not in gpus (nothing changes).
 */
int admit_shrink(struct admit_gpu *gpus, size_t n, struct admit_placement *pl,
		 uint64_t to);

/*
 * How long kmuxd waits before asking an evict-mode task for budget again
 * (MEM_PRESSURE with the BUDGET flag).  hold: the wait after the last ask
 * (0: never asked); quota_asked: its budget when last asked; quota_now: its
 * budget now.  A task that gave something since is asked again after
 * ADMIT_ASK_HOLD_US; one that kept its whole budget (everything in use, or
 * thrashing: kmuxd cannot know its floor) after twice the last wait, up to
 * ADMIT_ASK_HOLD_MAX_US, so that it is not asked, and does not log a
 * refusal, every 2 s for its whole life.
 */
#define ADMIT_ASK_HOLD_US UINT64_C(2000000)
#define ADMIT_ASK_HOLD_MAX_US UINT64_C(32000000)
uint64_t admit_ask_hold(uint64_t hold, uint64_t quota_asked,
			uint64_t quota_now);

/*
 * A growth admit_grow() refused for now (-ENOSPC): may the task wait for
 * room (its allocation blocked) rather than fail?  The caller counts the
 * task in grow_waiting of its GPUs first.  true while want could ever fit
 * on each of its GPUs and each holds a task that is not waiting (it will
 * end or free memory); false means waiting could last for ever (every task
 * there waits for another: the last to ask is refused, so that the others
 * can go on once it has failed and freed its memory).
 */
bool admit_grow_may_wait(const struct admit_gpu *gpus, size_t n,
			 const struct admit_placement *pl, uint64_t want,
			 const struct admit_policy *p);

/*
 * An evict-mode task placed by pl thrashes and was refused want (its whole
 * working set; admit_grow_room had too little).  Should its GPUs hold new
 * tasks off until it gets it (the caller then counts it in thrash_hold of
 * each, and takes it out once the growth is granted, the task ends or it
 * stops asking)?  true when want could ever be committed on each GPU
 * beside the other tasks' commitments taken away, i.e. want <= capacity:
 * room comes as the neighbours end.  false when it never could (the task
 * goes on evicting, and holding would only idle the GPU).
 */
bool admit_thrash_hold(const struct admit_gpu *gpus, size_t n,
		       const struct admit_placement *pl, uint64_t want,
		       const struct admit_policy *p);

/*
 * Fold a utilization sample (0..1, clamped) taken dt_s seconds after the
 * previous one into g->util: an exponential moving average with time
 * constant util_tau_s, weight dt / (tau + dt) (no libm needed).  The first
 * sample is taken as is.  mem_used is NVML's used bytes.
 */
void admit_gpu_sample(struct admit_gpu *g, double util, uint64_t mem_used,
		      double dt_s, const struct admit_policy *p);

#endif
