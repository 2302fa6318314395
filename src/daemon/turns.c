/*
 * turns.c - turns for wait-bound tasks that share a GPU (see daemon.h).
 *
 * Admission never places a wait-bound task beside another (admit.c,
 * fits_wait), but it cannot know a task is wait-bound before the task has
 * run: two first runs submitted together share a GPU, and without MPS the
 * driver's time slicing then costs each of them a context switch or a
 * time slice per wait (bench/results/share.md: four batch-1 pipelines do
 * 0.23 of one alone).  So while two or more wait-bound single-GPU tasks run
 * on a GPU, kmuxd pauses all but one of them at a time and rotates the
 * turn every TURNS_SLICE_US: the GPU serves one waiting task at full speed
 * instead of all of them at a fraction.  Tasks that are not wait-bound are
 * never paused.
 *
 * Pausing is the preload's: the paused pids go into the GPU's page of the
 * gate file (gates.h) and the gate word becomes GATES_TURNS, so each
 * submission of any task on the GPU takes the gate's slow path, where a
 * paused process waits until its pid leaves the list.  Its queued work
 * still runs; it only submits no more.  A region on the GPU takes
 * precedence (region.c writes the gate word; the next tick restores
 * GATES_TURNS after it).  With MPS, or --slice-waits 0, there are no
 * wait-bound tasks and so no turns.
 */
#include "daemon.h"
#include "gates.h"
#include "log.h"

#define TURNS_SLICE_US 500000u	/* each task's turn */

/* Word w of GPU gpu's page of the gate file (what region.c's gate_set
 * writes as word 0). */
static uint32_t *gate_word(struct server *srv, uint32_t gpu, uint32_t w)
{
	return (uint32_t *)(void *)(srv->gates + gates_offset(gpu)) + w;
}

/* Word 0 from -> to, unless someone else (a region) holds it. */
static bool gate_swap(struct server *srv, uint32_t gpu, uint32_t from,
		      uint32_t to)
{
	return __atomic_compare_exchange_n(gate_word(srv, gpu, 0), &from, to,
					   false, __ATOMIC_RELEASE,
					   __ATOMIC_RELAXED);
}

/* The running wait-bound single-GPU jobs on GPU index gpu, by job id. */
static size_t turn_jobs(struct server *srv, uint32_t gpu, struct job **v,
			size_t cap)
{
	struct job *j;
	size_t n = 0;

	TAILQ_FOREACH(j, &srv->running, entry) {
		if (!j->placed || !j->task.wait_bound || j->place.ngpus != 1 ||
		    j->place.slot[0] >= srv->ngpus ||
		    srv->gpus[j->place.slot[0]].index != gpu)
			continue;
		if (n < cap)
			v[n++] = j;
	}
	/* Sorted by id (insertion; a handful of jobs). */
	for (size_t i = 1; i < n; i++)
		for (size_t k = i; k > 0 && v[k - 1]->id > v[k]->id; k--) {
			struct job *t = v[k];

			v[k] = v[k - 1];
			v[k - 1] = t;
		}
	return n;
}

/* j is paused from now (now_us) or no longer (0): its pause time adds up
 * for the waits per second its profile learns (job_learn_waits). */
static void pause_mark(struct job *j, bool paused, uint64_t now_us)
{
	if (paused && !j->paused_since_us) {
		j->paused_since_us = now_us;
	} else if (!paused && j->paused_since_us) {
		j->paused_us += now_us - j->paused_since_us;
		j->paused_since_us = 0;
	}
}

/* Write the paused pids of GPU gpu: every registered process of jobs
 * v[0..n) but the holder's. */
static void write_paused(struct server *srv, uint32_t gpu,
			     struct job **v, size_t n, int64_t holder,
			     uint64_t now_us)
{
	uint32_t np = 0;
	struct conn *o;

	for (size_t i = 0; i < n; i++) {
		bool paused = v[i]->id != holder;

		pause_mark(v[i], paused, now_us);
		if (!paused)
			continue;
		TAILQ_FOREACH(o, &srv->conns, entry) {
			if (o->role != PROTO_ROLE_PRELOAD || o->closing ||
			    o->reg_job != v[i]->id || o->reg_pid <= 0 ||
			    np >= GATES_MAX_PAUSED)
				continue;
			__atomic_store_n(gate_word(srv, gpu,
						   GATES_W_PAUSED + np),
					 (uint32_t)o->reg_pid, __ATOMIC_RELAXED);
			np++;
		}
	}
	__atomic_store_n(gate_word(srv, gpu, GATES_W_NPAUSED), np,
			 __ATOMIC_RELEASE);
}

static void turns_stop(struct server *srv, uint32_t gpu, uint64_t now_us)
{
	struct turns_gpu *t = &srv->turns[gpu];
	struct job *j;

	if (!t->on)
		return;
	__atomic_store_n(gate_word(srv, gpu, GATES_W_NPAUSED), 0,
			 __ATOMIC_RELEASE);
	/* Only ours: a region's holder stays. */
	gate_swap(srv, gpu, GATES_TURNS, 0);
	TAILQ_FOREACH(j, &srv->running, entry)
		pause_mark(j, false, now_us);
	log_info("daemon: GPU %u: turns end (fewer than two wait-bound "
		 "tasks)", gpu);
	t->on = false;
	t->holder = 0;
}

void turns_tick(struct server *srv)
{
	struct job *v[GATES_MAX_PAUSED + 1];
	uint64_t now = server_now_us();

	if (!srv->gates)
		return;
	for (uint32_t g = 0; g < ADMIT_MAX_GPUS && g < GATES_MAX_GPUS; g++) {
		struct turns_gpu *t = &srv->turns[g];
		size_t n = turn_jobs(srv, g, v, sizeof(v) / sizeof(v[0]));
		size_t cur = n;

		if (n < 2) {
			turns_stop(srv, g, now);
			continue;
		}
		for (size_t i = 0; i < n; i++)
			if (v[i]->id == t->holder)
				cur = i;
		if (cur == n || now - t->since_us >= TURNS_SLICE_US) {
			/* The next by id after the holder, or the first. */
			size_t next = 0;

			for (size_t i = 0; i < n; i++)
				if (v[i]->id > t->holder) {
					next = i;
					break;
				}
			t->holder = v[next]->id;
			t->since_us = now;
		}
		write_paused(srv, g, v, n, t->holder, now);
		if (!t->on)
			log_info("daemon: GPU %u: %zu wait-bound tasks share it "
				 "without MPS: they take turns of %u ms",
				 g, n, TURNS_SLICE_US / 1000);
		t->on = true;
		/* An open gate becomes ours; a region's holder stays, and
		 * the tick after its region puts turns back. */
		gate_swap(srv, g, 0, GATES_TURNS);
	}
}

void turns_free(struct server *srv)
{
	uint64_t now = server_now_us();

	if (!srv->gates)
		return;
	for (uint32_t g = 0; g < ADMIT_MAX_GPUS && g < GATES_MAX_GPUS; g++)
		turns_stop(srv, g, now);
}
