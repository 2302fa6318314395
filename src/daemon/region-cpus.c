/*
 * region-cpus.c - CPU isolation for exclusive regions (--region-cpus):
 * while any region is held its holder runs on the reserved cores alone,
 * and every other registered task is kept off them.
 *
 * Every thread kmuxd changes is remembered with its mask from before, and
 * gets it back exactly once no region is held, or once its process is no
 * longer a registered task.  A thread that appeared during the region
 * inherited a changed mask, so it is given its process's main thread's
 * original.  A task whose mask holds nothing but reserved cores is left
 * alone (and logged): an empty mask is no mask.  With several GPUs' regions
 * held at once, their holders share the reserved cores.
 *
 * The masks live in the daemon's memory only: a daemon killed with -9
 * leaves them changed (docs/design-exclusive.md).
 */
#include <dirent.h>
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cpulist.h"
#include "daemon.h"
#include "db.h"
#include "log.h"

enum cpus_role { CPUS_HOLDER, CPUS_OTHER, CPUS_UNTOUCHED };

struct region_cpus_thread {
	pid_t pid, tid;
	uint64_t start;		/* the process's, against pid reuse */
	cpu_set_t orig;
	enum cpus_role role;
	bool seen;		/* in this pass (mark and sweep) */
	bool told;		/* "left as they are" logged */		/* in this pass (mark and sweep) */
};

static struct region_cpus_thread *find(struct server *srv, pid_t pid,
				       pid_t tid)
{
	for (size_t i = 0; i < srv->ncpus_threads; i++)
		if (srv->cpus_threads[i].pid == pid &&
		    srv->cpus_threads[i].tid == tid)
			return &srv->cpus_threads[i];
	return NULL;
}

static struct region_cpus_thread *add(struct server *srv)
{
	struct region_cpus_thread *v;
	size_t cap;

	if (srv->ncpus_threads == srv->cpus_threads_cap) {
		cap = srv->cpus_threads_cap ? 2 * srv->cpus_threads_cap : 32;
		v = realloc(srv->cpus_threads, cap * sizeof(*v));
		if (!v)
			return NULL;
		srv->cpus_threads = v;
		srv->cpus_threads_cap = cap;
	}
	v = &srv->cpus_threads[srv->ncpus_threads++];
	memset(v, 0, sizeof(*v));
	return v;
}

static void set_mask(pid_t tid, const cpu_set_t *m, const char *what)
{
	char list[256];

	if (sched_setaffinity(tid, sizeof(*m), m) == 0 || errno == ESRCH)
		return;
	cpulist_format(m, list, sizeof(list));
	log_warn("daemon: cannot %s thread %d to CPUs %s: %s", what, (int)tid,
		 list, strerror(errno));
}

/* Is tid still a thread of pid, the process started at start? */
static bool thread_alive(const struct region_cpus_thread *t)
{
	char path[64];
	uint64_t now;
	struct stat sb;

	snprintf(path, sizeof(path), "/proc/%d/task/%d", (int)t->pid,
		 (int)t->tid);
	return db_proc_start_time(t->pid, &now) == 0 && now == t->start &&
	       stat(path, &sb) == 0;
}

static void restore(struct region_cpus_thread *t)
{
	if (t->role != CPUS_UNTOUCHED && thread_alive(t))
		set_mask(t->tid, &t->orig, "restore");
}

/* Give thread tid of pid the mask its role asks for, remembering its own. */
static void place(struct server *srv, pid_t pid, uint64_t start, pid_t tid,
		  bool holder)
{
	struct region_cpus_thread *t = find(srv, pid, tid), *main_t;
	enum cpus_role want = holder ? CPUS_HOLDER : CPUS_OTHER;
	cpu_set_t m;

	if (t && t->start != start) {	/* a new process on an old pid */
		t->role = CPUS_UNTOUCHED;
		t->start = start;
		if (sched_getaffinity(tid, sizeof(t->orig), &t->orig))
			return;
	}
	if (!t) {
		/* A thread that came later inherited a changed mask: it gets
		 * its main thread's from before (copied: add() may move it). */
		main_t = tid != pid ? find(srv, pid, pid) : NULL;
		if (main_t && main_t->start == start)
			m = main_t->orig;
		else if (sched_getaffinity(tid, sizeof(m), &m))
			return;		/* gone already */
		if (!(t = add(srv))) {
			log_warn("daemon: out of memory isolating CPUs");
			return;
		}
		t->pid = pid;
		t->tid = tid;
		t->start = start;
		t->role = CPUS_UNTOUCHED;
		t->orig = m;
	}
	t->seen = true;
	if (t->role == want)
		return;
	if (holder) {
		set_mask(tid, &srv->region_cpus, "pin");
		t->role = CPUS_HOLDER;
		return;
	}
	cpulist_without(&m, &t->orig, &srv->region_cpus);
	if (CPU_COUNT(&m) == 0) {
		if (!t->told && tid == pid)
			log_info("daemon: pid %d may run on reserved cores only; "
				 "its CPUs are left as they are", (int)pid);
		if (t->role == CPUS_HOLDER)
			set_mask(tid, &t->orig, "restore");
		t->role = CPUS_UNTOUCHED;
		t->told = true;
		return;
	}
	set_mask(tid, &m, "move");
	t->role = CPUS_OTHER;
}

/* Every thread of pid: the main one first, whose mask the others inherit. */
static void place_process(struct server *srv, pid_t pid, bool holder)
{
	char path[64];
	struct dirent *de;
	uint64_t start;
	DIR *d;

	if (db_proc_start_time(pid, &start))
		return;
	place(srv, pid, start, pid, holder);
	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	d = opendir(path);
	if (!d)
		return;
	while ((de = readdir(d))) {
		long tid = strtol(de->d_name, NULL, 10);

		if (tid > 0 && tid != pid)
			place(srv, pid, start, (pid_t)tid, holder);
	}
	closedir(d);
}

static bool is_holder(struct server *srv, pid_t pid)
{
	for (size_t g = 0; g < ADMIT_MAX_GPUS; g++)
		if (srv->regions[g].holder &&
		    srv->regions[g].holder->state == REGION_HELD &&
		    srv->regions[g].holder->pid == pid)
			return true;
	return false;
}

void region_cpus_update(struct server *srv)
{
	bool any = false;
	struct conn *o;
	size_t i, k;

	if (!srv->region_cpus_on)
		return;
	for (size_t g = 0; g < ADMIT_MAX_GPUS; g++)
		any |= srv->regions[g].holder &&
		       srv->regions[g].holder->state == REGION_HELD;
	for (i = 0; i < srv->ncpus_threads; i++)
		srv->cpus_threads[i].seen = false;
	if (any) {
		for (size_t g = 0; g < ADMIT_MAX_GPUS; g++) {
			struct region *r = srv->regions[g].holder;

			if (r && r->state == REGION_HELD)
				place_process(srv, r->pid, true);
		}
		TAILQ_FOREACH(o, &srv->conns, entry)
			if (o->role == PROTO_ROLE_PRELOAD && o->reg_job &&
			    !o->closing && !is_holder(srv, o->reg_pid))
				place_process(srv, o->reg_pid, false);
	}
	/* Sweep: whatever no longer takes part gets its mask back. */
	for (i = k = 0; i < srv->ncpus_threads; i++) {
		if (!srv->cpus_threads[i].seen) {
			restore(&srv->cpus_threads[i]);
			continue;
		}
		srv->cpus_threads[k++] = srv->cpus_threads[i];
	}
	srv->ncpus_threads = k;
}

void region_cpus_free(struct server *srv)
{
	for (size_t i = 0; i < srv->ncpus_threads; i++)
		restore(&srv->cpus_threads[i]);
	free(srv->cpus_threads);
	srv->cpus_threads = NULL;
	srv->ncpus_threads = srv->cpus_threads_cap = 0;
}
