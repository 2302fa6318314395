/*
 * pressure.c - owns kmuxd's side of memory pressure (issue 5): finding
 * GPUs whose memory in use passes what may be committed, or keeps the head
 * of the queue out (admit_mem_short()), and asking the tasks there whose
 * memory manager evicts (kmux run --memory=evict) to give up resident
 * bytes with MEM_PRESSURE.  A task's budget and the GPU's commitments do
 * not change: what is given up is idle memory, restored when touched.
 *
 * When commitments alone keep the head of the queue out of a GPU
 * (admit_commit_short()), its evict-mode tasks are asked, largest budget
 * first, to give up budget (MEM_PRESSURE with PROTO_PRESSURE_F_BUDGET):
 * each keeps what it needs resident (docs/design-memory.md, "Giving back
 * budget to admit a queued task") and reports its new budget
 * (pressure_shrunk()), which lowers the commitment and runs admission.
 *
 * Memory in use is NVML's (every process's, kmux's or not).  Fake GPUs
 * have none; KMUX_FAKE_MEM_USED (a file of "GPU BYTES" lines: memory of
 * processes kmux does not manage) makes it the tasks' reported resident
 * bytes plus those, so that tests can put a GPU under pressure.
 *
 * A task is asked at most once per PRESSURE_HOLD_US: its answer comes in
 * its next usage report (within 250 ms), and the GPU's next sample shows
 * whether that was enough.  Budget asks back off (admit_ask_hold): a task
 * that kept its whole budget is asked again after twice the last wait.
 */
#include <stdio.h>
#include <stdlib.h>

#include "daemon.h"
#include "db.h"
#include "log.h"
#include "nvml.h"
#include "size.h"

#define PRESSURE_HOLD_US 2000000u
#define PRESSURE_MAX_ASK 64

/* The preload connection of a running job (its REGISTER's), or NULL. */
static struct conn *preload_of(struct server *srv, const struct job *j)
{
	struct conn *c;

	TAILQ_FOREACH(c, &srv->conns, entry)
		if (c->role == PROTO_ROLE_PRELOAD && c->reg_job == j->id &&
		    !c->closing)
			return c;
	return NULL;
}

/* KMUX_FAKE_MEM_USED's bytes for GPU i (0 when it names none). */
static uint64_t fake_foreign(const char *path, uint32_t i)
{
	unsigned long long b, sum = 0;
	unsigned int gpu;
	char line[128];
	FILE *f = fopen(path, "re");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%u %llu", &gpu, &b) == 2 && gpu == i)
			sum += b;
	fclose(f);
	return sum;
}

void pressure_fake_used(struct server *srv)
{
	const char *path = getenv("KMUX_FAKE_MEM_USED");
	struct job *j;

	if (!path || !*path || !srv->nvml || !nvml_is_fake(srv->nvml))
		return;
	for (size_t i = 0; i < srv->ngpus; i++) {
		struct admit_gpu *g = &srv->gpus[i];

		g->mem_used = fake_foreign(path, g->index);
		TAILQ_FOREACH(j, &srv->running, entry)
			if (job_gpu_mask(srv, j) & (UINT64_C(1) << g->index))
				g->mem_used += j->mem_used;
	}
}

/* The tasks on GPU i that can give, largest resident first. */
static size_t candidates(struct server *srv, const struct admit_gpu *g,
			 uint64_t now, struct job **v)
{
	struct job *j;
	size_t n = 0;

	TAILQ_FOREACH(j, &srv->running, entry) {
		size_t k;

		if (!j->evict || !j->mem_used || n == PRESSURE_MAX_ASK ||
		    !(job_gpu_mask(srv, j) & (UINT64_C(1) << g->index)) ||
		    (j->asked_us && now - j->asked_us < PRESSURE_HOLD_US))
			continue;
		for (k = n; k > 0 && v[k - 1]->mem_used < j->mem_used; k--)
			v[k] = v[k - 1];
		v[k] = j;
		n++;
	}
	return n;
}

/*
 * What job j may be asked to give: its budget above the working set its
 * profile learned from thrashed runs (job.c admits it at no less: below
 * that it thrashed before, bench/results/memory.md run 10), else all of
 * it; the task's own floor (mm_shrink) may keep more.
 */
static uint64_t budget_givable(const struct job *j)
{
	uint64_t ws = j->task.evict_ws;

	return j->place.quota > ws ? j->place.quota - ws : 0;
}

/* The evict-mode tasks on g that may be asked for budget, largest budget
 * first; *total: all they could give, asked lately or not. */
static size_t budget_candidates(struct server *srv, const struct admit_gpu *g,
				uint64_t now, struct job **v, uint64_t *total)
{
	struct job *j;
	size_t n = 0;

	*total = 0;
	TAILQ_FOREACH(j, &srv->running, entry) {
		size_t k;

		if (!j->evict || !j->placed || !budget_givable(j) ||
		    !(job_gpu_mask(srv, j) & (UINT64_C(1) << g->index)))
			continue;
		*total += budget_givable(j);
		if (n == PRESSURE_MAX_ASK ||
		    (j->shrink_asked_us &&
		     now - j->shrink_asked_us < j->shrink_hold_us))
			continue;
		for (k = n; k > 0 && v[k - 1]->place.quota < j->place.quota;
		     k--)
			v[k] = v[k - 1];
		v[k] = j;
		n++;
	}
	return n;
}

/*
 * One ask per GPU and round, to the largest budget not asked lately: it
 * gives what it can (perhaps less than asked), its answer lowers short_by
 * before the next round asks the next task.
 */
static void ask_budget(struct server *srv, struct admit_gpu *g,
		       uint64_t short_by, uint64_t now)
{
	struct job *v[PRESSURE_MAX_ASK];
	char s[SIZE_FORMAT_MAX], b[SIZE_FORMAT_MAX];
	uint64_t total;
	size_t n = budget_candidates(srv, g, now, v, &total);

	/* Not even all their budgets would let the head in. */
	if (short_by >= total)
		return;
	size_format(short_by, s, sizeof(s));
	for (size_t k = 0; k < n; k++) {
		struct proto_msg m = { .type = PROTO_MEM_PRESSURE };
		struct conn *c = preload_of(srv, v[k]);
		uint64_t give = budget_givable(v[k]) < short_by ?
				budget_givable(v[k]) : short_by;

		if (!c)
			continue;
		m.u.pressure.give = give;
		m.u.pressure.gpu = g->index;
		m.u.pressure.flags = PROTO_PRESSURE_F_BUDGET;
		if (!server_client_send(c, &m))
			continue;
		v[k]->shrink_hold_us = admit_ask_hold(v[k]->shrink_hold_us,
						      v[k]->shrink_quota_asked,
						      v[k]->place.quota);
		v[k]->shrink_quota_asked = v[k]->place.quota;
		v[k]->shrink_asked_us = now;
		size_format(give, b, sizeof(b));
		log_info("daemon: GPU %u is %s short of commitments: job %lld "
			 "asked to give up budget %s", g->index, s,
			 (long long)v[k]->id, b);
		return;
	}
}

void pressure_shrunk(struct server *srv, struct job *j, uint64_t to)
{
	char a[SIZE_FORMAT_MAX], b[SIZE_FORMAT_MAX], err[512];
	uint64_t from = j->place.quota;

	if (admit_shrink(srv->gpus, srv->ngpus, &j->place, to))
		return;		/* not lower (a growth crossed it): keep it */
	size_format(from, a, sizeof(a));
	size_format(to, b, sizeof(b));
	log_info("daemon: job %lld gave up budget: %s -> %s",
		 (long long)j->id, a, b);
	if (db_job_set_quota(srv->db, j->id, to, err, sizeof(err)))
		log_warn("daemon: job %lld: %s", (long long)j->id, err);
	server_kick(srv);
}

static void ask(struct server *srv, struct admit_gpu *g, uint64_t short_by,
		uint64_t now)
{
	struct job *v[PRESSURE_MAX_ASK];
	char s[SIZE_FORMAT_MAX], b[SIZE_FORMAT_MAX];
	size_t n = candidates(srv, g, now, v);

	size_format(short_by, s, sizeof(s));
	for (size_t k = 0; k < n && short_by > 0; k++) {
		struct proto_msg m = { .type = PROTO_MEM_PRESSURE };
		struct conn *c = preload_of(srv, v[k]);
		uint64_t give = v[k]->mem_used < short_by ? v[k]->mem_used :
				short_by;

		if (!c)
			continue;
		m.u.pressure.give = give;
		m.u.pressure.gpu = g->index;
		if (!server_client_send(c, &m))
			continue;
		v[k]->asked_us = now;
		short_by -= give;
		size_format(give, b, sizeof(b));
		log_info("daemon: GPU %u is %s short of memory: job %lld asked "
			 "to give up %s", g->index, s, (long long)v[k]->id, b);
	}
}

void pressure_check(struct server *srv)
{
	struct job *head = TAILQ_FIRST(&srv->queued);
	uint64_t now = server_now_us();

	for (size_t i = 0; i < srv->ngpus; i++) {
		struct admit_gpu *g = &srv->gpus[i];
		uint64_t s = admit_mem_short(g, head ? &head->task : NULL,
					     &srv->policy);

		if (s) {
			ask(srv, g, s, now);
			continue;
		}
		s = admit_commit_short(g, head ? &head->task : NULL,
				       &srv->policy);
		if (s)
			ask_budget(srv, g, s, now);
	}
}
