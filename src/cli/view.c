/*
 * view.c - owns the text and JSON that `kmux ps` and `kmux top` print
 * (see view.h).  No I/O beyond the FILE it is given, no clock of its own.
 */
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "size.h"
#include "view.h"

const char *view_signal_name(int sig, char *buf, size_t len)
{
	const char *s = sig > 0 && sig < NSIG ? sigabbrev_np(sig) : NULL;

	if (s)
		return s;
	snprintf(buf, len, "SIG%d", sig);
	return buf;
}

int view_signal_parse(const char *s)
{
	char *end;
	long v;

	if (!s || !*s)
		return -1;
	if (*s >= '0' && *s <= '9') {
		v = strtol(s, &end, 10);
		return *end || v < 1 || v >= NSIG ? -1 : (int)v;
	}
	if (strncasecmp(s, "SIG", 3) == 0)
		s += 3;
	for (int sig = 1; sig < NSIG; sig++) {
		const char *n = sigabbrev_np(sig);

		if (n && strcasecmp(n, s) == 0)
			return sig;
	}
	return -1;
}

/* Why a queued job is held, for people; NULL if it is not. */
static const char *held_text(uint32_t held)
{
	switch (held) {
	case PROTO_HELD_GPUS:
		return "GPUs";
	case PROTO_HELD_MEM:
		return "memory";
	case PROTO_HELD_NO_GPUS:
		return "no GPUs";
	}
	return NULL;
}

/* ... and for scripts (ps --json's "held"). */
static const char *held_key(uint32_t held)
{
	switch (held) {
	case PROTO_HELD_GPUS:
		return "gpus";
	case PROTO_HELD_MEM:
		return "memory";
	case PROTO_HELD_NO_GPUS:
		return "no-gpus";
	}
	return NULL;
}

void view_state(const struct proto_job_rec *r, char *buf, size_t len)
{
	const char *name = proto_job_state_name(r->state);
	char sb[16];

	if (!name)
		name = "?";
	/* Running but waiting for room for its working set (evict mode's
	 * load control). */
	if (r->state == PROTO_JOB_RUNNING &&
	    (r->flags & PROTO_JOBREC_F_SUSPENDED)) {
		snprintf(buf, len, "suspended");
	} else if (r->state == PROTO_JOB_QUEUED && held_text(r->held)) {
		/* Queued, but more than the node has now: it waits for a
		 * kmuxd that has it (kmux-ps(1)). */
		snprintf(buf, len, "held (%s)", held_text(r->held));
	} else if (r->state == PROTO_JOB_QUEUED ||
		   r->state == PROTO_JOB_RUNNING) {
		snprintf(buf, len, "%s", name);
	} else if (r->signal) {
		snprintf(buf, len, "%s %s",
			 r->state == PROTO_JOB_EXITED ? "killed" : name,
			 view_signal_name(r->signal, sb, sizeof(sb)));
	} else if (r->exit_code != PROTO_EXIT_UNKNOWN) {
		snprintf(buf, len, "%s %d", name, r->exit_code);
	} else {
		snprintf(buf, len, "%s%s", name,
			 r->state == PROTO_JOB_EXITED ? " ?" : "");
	}
}

void view_gpus(uint64_t mask, char *buf, size_t len)
{
	size_t off = 0;

	if (len == 0)
		return;
	buf[0] = '\0';
	if (!mask) {
		snprintf(buf, len, "-");
		return;
	}
	for (unsigned i = 0; i < 64 && off < len; i++)
		if (mask & (UINT64_C(1) << i))
			off += (size_t)snprintf(buf + off, len - off, "%s%u",
						off ? "," : "", i);
}

void view_duration(uint64_t us, char *buf, size_t len)
{
	uint64_t s = us / 1000000u;

	if (us == 0)
		snprintf(buf, len, "-");
	else if (us < 1000000u)
		snprintf(buf, len, "%llums", (unsigned long long)(us / 1000u));
	else if (s < 60)
		snprintf(buf, len, "%.1fs", (double)us / 1e6);
	else if (s < 3600)
		snprintf(buf, len, "%llum%02llus", (unsigned long long)(s / 60),
			 (unsigned long long)(s % 60));
	else if (s < 86400)
		snprintf(buf, len, "%lluh%02llum",
			 (unsigned long long)(s / 3600),
			 (unsigned long long)(s % 3600 / 60));
	else
		snprintf(buf, len, "%llud%02lluh",
			 (unsigned long long)(s / 86400),
			 (unsigned long long)(s % 86400 / 3600));
}

uint64_t view_runtime_us(const struct proto_job_rec *r, uint64_t now_us)
{
	uint64_t end = r->end_us ? r->end_us : now_us;

	if (!r->start_us || end < r->start_us)
		return 0;
	/* Started in this very microsecond still shows as having run. */
	return end > r->start_us ? end - r->start_us : 1;
}

static void mem_or(uint64_t v, const char *none, char *buf, size_t len)
{
	if (v)
		size_format(v, buf, len);
	else
		snprintf(buf, len, "%s", none);
}

static void job_line(FILE *f, const struct proto_job_rec *r, uint64_t now_us)
{
	char state[32], gpus[200], mem[SIZE_FORMAT_MAX], peak[SIZE_FORMAT_MAX];
	char run[16];

	view_state(r, state, sizeof(state));
	view_gpus(r->gpus, gpus, sizeof(gpus));
	mem_or(r->mem_request, "auto", mem, sizeof(mem));
	mem_or(r->mem_peak, "-", peak, sizeof(peak));
	view_duration(view_runtime_us(r, now_us), run, sizeof(run));
	fprintf(f, "%6llu  %-14s %-6s %10s %10s %8s  %-12s %s\n",
		(unsigned long long)r->id, state, gpus, mem, peak, run,
		*r->name ? r->name : "-", r->cmd);
}

static void job_header(FILE *f)
{
	fprintf(f, "%6s  %-14s %-6s %10s %10s %8s  %-12s %s\n", "ID", "STATE",
		"GPUS", "MEM", "PEAK", "RUNTIME", "NAME", "COMMAND");
}

void view_ps_table(FILE *f, const struct proto_job_list *jobs,
		   uint64_t now_us)
{
	struct proto_iter it = { 0 };
	struct proto_job_rec r;

	job_header(f);
	while (proto_job_list_next(jobs, &it, &r))
		job_line(f, &r, now_us);
}

/*
 * 64-bit integers as JSON integers: cJSON holds numbers as doubles and
 * prints large ones with an exponent ("1.79598304012733e+15").
 */
static cJSON *u64_json(uint64_t v)
{
	char buf[24];

	snprintf(buf, sizeof(buf), "%llu", (unsigned long long)v);
	return cJSON_CreateRaw(buf);
}

static void add_u64(cJSON *o, const char *key, uint64_t v)
{
	cJSON_AddItemToObject(o, key, u64_json(v));
}

static cJSON *num_or_null(double v, int is_null)
{
	return is_null ? cJSON_CreateNull() : cJSON_CreateNumber(v);
}

static cJSON *u64_or_null(uint64_t v)
{
	return v ? u64_json(v) : cJSON_CreateNull();
}

static cJSON *job_json(const struct proto_job_rec *r, uint64_t now_us)
{
	cJSON *o = cJSON_CreateObject(), *g = cJSON_CreateArray();
	bool ended = r->state >= PROTO_JOB_EXITED;
	char sb[16];

	if (!o || !g) {
		cJSON_Delete(o);
		cJSON_Delete(g);
		return NULL;
	}
	add_u64(o, "id", r->id);
	cJSON_AddStringToObject(o, "name", r->name);
	cJSON_AddStringToObject(o, "state", proto_job_state_name(r->state) ?: "?");
	cJSON_AddItemToObject(o, "exit_code", num_or_null(r->exit_code,
			      !ended || r->exit_code == PROTO_EXIT_UNKNOWN));
	if (r->signal)
		cJSON_AddStringToObject(o, "signal", view_signal_name(
						r->signal, sb, sizeof(sb)));
	else
		cJSON_AddNullToObject(o, "signal");
	cJSON_AddNumberToObject(o, "uid", r->uid);
	cJSON_AddItemToObject(o, "pid", num_or_null(r->pid, r->pid == 0));
	for (unsigned i = 0; i < 64; i++)
		if (r->gpus & (UINT64_C(1) << i))
			cJSON_AddItemToArray(g, cJSON_CreateNumber(i));
	cJSON_AddItemToObject(o, "gpus", g);
	cJSON_AddNumberToObject(o, "ngpus", r->ngpus);
	add_u64(o, "mem_request", r->mem_request);
	add_u64(o, "mem_peak", r->mem_peak);
	add_u64(o, "mem_quota", r->mem_quota);
	add_u64(o, "mem_used", r->mem_used);
	add_u64(o, "mem_evicted", r->mem_evicted);
	add_u64(o, "mem_reserved", r->mem_reserved);
	add_u64(o, "evicts", r->evicts);
	add_u64(o, "restores", r->restores);
	cJSON_AddBoolToObject(o, "suspended",
			      (r->flags & PROTO_JOBREC_F_SUSPENDED) != 0);
	cJSON_AddNumberToObject(o, "kernel_rate", r->kernel_rate);
	cJSON_AddNumberToObject(o, "wait_rate", r->wait_rate);
	cJSON_AddBoolToObject(o, "wait_bound",
			      (r->flags & PROTO_JOBREC_F_WAIT_BOUND) != 0);
	if (r->state == PROTO_JOB_QUEUED && held_key(r->held))
		cJSON_AddStringToObject(o, "held", held_key(r->held));
	else
		cJSON_AddNullToObject(o, "held");
	add_u64(o, "submit_us", r->submit_us);
	cJSON_AddItemToObject(o, "start_us", u64_or_null(r->start_us));
	cJSON_AddItemToObject(o, "end_us", u64_or_null(r->end_us));
	add_u64(o, "runtime_us", view_runtime_us(r, now_us));
	cJSON_AddStringToObject(o, "cmd", r->cmd);
	return o;
}

cJSON *view_ps_json(const struct proto_job_list *jobs, uint64_t now_us)
{
	cJSON *a = cJSON_CreateArray(), *o;
	struct proto_iter it = { 0 };
	struct proto_job_rec r;

	if (!a)
		return NULL;
	while (proto_job_list_next(jobs, &it, &r)) {
		o = job_json(&r, now_us);
		if (!o) {
			cJSON_Delete(a);
			return NULL;
		}
		cJSON_AddItemToArray(a, o);
	}
	return a;
}

static void gpu_line(FILE *f, const struct proto_gpu_rec *g)
{
	char com[SIZE_FORMAT_MAX + 8], used[SIZE_FORMAT_MAX];
	char tot[SIZE_FORMAT_MAX], c[SIZE_FORMAT_MAX];
	unsigned pct = g->mem_total ?
		       (unsigned)(g->mem_committed * 100 / g->mem_total) : 0;

	size_format(g->mem_committed, c, sizeof(c));
	snprintf(com, sizeof(com), "%s (%u%%)", c, pct);
	size_format(g->mem_used, used, sizeof(used));
	size_format(g->mem_total, tot, sizeof(tot));
	fprintf(f, "%3u  %5.2f %4u%% %5u  %-18s %-10s %s\n", g->index,
		g->busy_pm / 1000.0, (g->util_pm + 5) / 10, g->ntasks, com,
		used, tot);
}

/* Does r report a memory manager (kmux run --memory=lazy|evict)? */
static bool has_mm(const struct proto_job_rec *r)
{
	return r->mem_reserved || r->mem_evicted || r->evicts;
}

/*
 * A task line of top: what it uses now, beside what it may use (its
 * quota), what its memory manager holds in host memory (the EVICTED
 * column, only when some task has one: it would push the names off an
 * 80-column terminal), and how fast it launches kernels.
 */
static void task_line(FILE *f, const struct proto_job_rec *r, uint64_t now_us,
		      bool mm)
{
	char state[32], gpus[200], used[SIZE_FORMAT_MAX], quota[SIZE_FORMAT_MAX];
	char mem[2 * SIZE_FORMAT_MAX + 4], run[16], kps[24];
	char ev[SIZE_FORMAT_MAX];

	view_state(r, state, sizeof(state));
	view_gpus(r->gpus, gpus, sizeof(gpus));
	mem_or(r->mem_used, "-", used, sizeof(used));
	mem_or(r->mem_quota, "-", quota, sizeof(quota));
	snprintf(mem, sizeof(mem), "%s / %s", used, quota);
	/* "-": no memory manager (or it never managed anything). */
	if (has_mm(r))
		size_format(r->mem_evicted, ev, sizeof(ev));
	else
		snprintf(ev, sizeof(ev), "-");
	if (r->state == PROTO_JOB_RUNNING)
		snprintf(kps, sizeof(kps), "%u", r->kernel_rate);
	else
		snprintf(kps, sizeof(kps), "-");
	view_duration(view_runtime_us(r, now_us), run, sizeof(run));
	fprintf(f, "%6llu  %-10s %-6s %23s%*s %8s %8s  %-12s %s\n",
		(unsigned long long)r->id, state, gpus, mem, mm ? 11 : 0,
		mm ? ev : "", kps, run,
		*r->name ? r->name : "-", r->cmd);
}

void view_top_tasks(FILE *f, const struct proto_job_list *jobs,
		    uint64_t now_us)
{
	struct proto_iter it = { 0 };
	struct proto_job_rec r;
	bool mm = false;

	while (proto_job_list_next(jobs, &it, &r))
		mm |= has_mm(&r);
	fprintf(f, "%6s  %-10s %-6s %23s%*s %8s %8s  %-12s %s\n", "ID",
		"STATE", "GPUS", "USED / QUOTA", mm ? 11 : 0, mm ? "EVICTED" : "",
		"KERN/S", "RUNTIME", "NAME", "COMMAND");
	it = (struct proto_iter){ 0 };
	while (proto_job_list_next(jobs, &it, &r))
		task_line(f, &r, now_us, mm);
}

void view_top_text(FILE *f, const struct proto_gpu_list *gpus,
		   const struct proto_job_list *jobs, uint64_t now_us)
{
	struct proto_iter it = { 0 };
	struct proto_job_rec r;
	unsigned running = 0, queued = 0;

	while (proto_job_list_next(jobs, &it, &r)) {
		running += r.state == PROTO_JOB_RUNNING;
		queued += r.state == PROTO_JOB_QUEUED;
	}
	fprintf(f, "kmux top: %u GPU%s, %u running, %u queued\n\n",
		gpus->count, gpus->count == 1 ? "" : "s", running, queued);
	/* A node without GPUs admits nothing: say why, first. */
	if (gpus->count == 0)
		fprintf(f, "kmuxd has no GPUs: %s\n\n",
			gpus->note && *gpus->note ? gpus->note :
			"(no reason given)");
	fprintf(f, "%3s  %5s %5s %5s  %-18s %-10s %s\n", "GPU", "BUSY",
		"UTIL", "TASKS", "COMMITTED", "USED", "TOTAL");
	for (uint32_t i = 0; i < gpus->count; i++)
		gpu_line(f, &gpus->gpu[i]);
	fputc('\n', f);
	view_top_tasks(f, jobs, now_us);
}

cJSON *view_top_json(const struct proto_gpu_list *gpus,
		     const struct proto_job_list *jobs, uint64_t now_us)
{
	cJSON *o = cJSON_CreateObject(), *a = cJSON_CreateArray(), *j;

	if (!o || !a)
		goto err;
	for (uint32_t i = 0; i < gpus->count; i++) {
		const struct proto_gpu_rec *g = &gpus->gpu[i];
		cJSON *e = cJSON_CreateObject();

		if (!e)
			goto err;
		cJSON_AddNumberToObject(e, "index", g->index);
		cJSON_AddNumberToObject(e, "tasks", g->ntasks);
		add_u64(e, "mem_total", g->mem_total);
		add_u64(e, "mem_committed", g->mem_committed);
		add_u64(e, "mem_used", g->mem_used);
		cJSON_AddNumberToObject(e, "util", g->util_pm / 1000.0);
		cJSON_AddNumberToObject(e, "busyness", g->busy_pm / 1000.0);
		cJSON_AddItemToArray(a, e);
	}
	cJSON_AddItemToObject(o, "gpus", a);
	a = NULL;
	if (gpus->count == 0 && gpus->note && *gpus->note)
		cJSON_AddStringToObject(o, "no_gpus", gpus->note);
	else
		cJSON_AddNullToObject(o, "no_gpus");
	j = view_ps_json(jobs, now_us);
	if (!j)
		goto err;
	cJSON_AddItemToObject(o, "jobs", j);
	return o;
err:
	cJSON_Delete(a);
	cJSON_Delete(o);
	return NULL;
}
