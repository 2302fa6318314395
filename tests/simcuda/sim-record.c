/*
 * sim-record.c - the process's operation records: kept in memory in
 * completion order, appended to SIMCUDA_LOG (one line each, see sim-log.c)
 * when their context is torn down, when the test clears them and at process
 * exit, and checked in-process by simcuda_check().
 *
 * Each line goes out in a single write(2) on an O_APPEND descriptor, so
 * several processes may share one log file without tearing lines.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sim.h"

static struct sim_rec **recs;
static size_t nrecs, caprecs;

struct sim_rec *sim_rec_new(struct sim_ctx *c, struct sim_stream *s, int kind,
			    const char *name, uint64_t seq)
{
	struct sim_rec *r = calloc(1, sizeof(*r));

	if (r == NULL)
		return NULL;
	r->seq = seq;
	r->pid = (long)sim.pid;
	r->ctx = c != NULL ? c->id : 0;
	r->dev = c != NULL ? c->dev->ordinal : 0;
	r->stream = s != NULL ? s->id : 0;
	r->kind = kind;
	snprintf(r->name, sizeof(r->name), "%s", name ? name : "-");
	return r;
}

void sim_rec_commit(struct sim_rec *r)
{
	static int warned;

	if (nrecs == caprecs) {
		size_t cap = caprecs ? caprecs * 2 : 1024;
		struct sim_rec **n = realloc(recs, cap * sizeof(*n));

		if (n == NULL) {
			if (!warned++)
				sim_warn("out of memory: records are being "
					 "dropped");
			sim_rec_free(r);
			free(r);
			return;
		}
		recs = n;
		caprecs = cap;
	}
	recs[nrecs++] = r;
}

/* write(2) all of buf, retrying short writes. */
static int write_all(int fd, const char *buf, size_t len)
{
	while (len > 0) {
		ssize_t n = write(fd, buf, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

static int write_rec(int fd, const struct sim_rec *r)
{
	char small[1024];
	char *buf = small;
	size_t n = sim_rec_format(r, small, sizeof(small));
	int rc;

	if (n >= sizeof(small)) {
		buf = malloc(n + 1);
		if (buf == NULL)
			return -1;
		sim_rec_format(r, buf, n + 1);
	}
	rc = write_all(fd, buf, n);
	if (buf != small)
		free(buf);
	return rc;
}

void sim_rec_flush(uint64_t ctx_id)
{
	static int warned;
	char head[96];
	size_t i;
	int fd, n;

	if (sim.log_path[0] == '\0')
		return;
	for (i = 0; i < nrecs; i++)
		if (!recs[i]->logged && (ctx_id == 0 || recs[i]->ctx == ctx_id))
			break;
	if (i == nrecs)
		return;
	fd = open(sim.log_path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC,
		  0644);
	if (fd < 0) {
		if (!warned++)
			sim_warn("cannot open SIMCUDA_LOG %s: %s", sim.log_path,
				 strerror(errno));
		return;
	}
	n = snprintf(head, sizeof(head), "# simcuda-log v%d pid=%ld\n",
		     SIM_LOG_VERSION, (long)sim.pid);
	if (write_all(fd, head, (size_t)n) < 0)
		goto err;
	for (; i < nrecs; i++) {
		struct sim_rec *r = recs[i];

		if (r->logged || (ctx_id != 0 && r->ctx != ctx_id))
			continue;
		if (write_rec(fd, r) < 0)
			goto err;
		r->logged = 1;
	}
	close(fd);
	return;
err:
	if (!warned++)
		sim_warn("cannot write SIMCUDA_LOG %s: %s", sim.log_path,
			 strerror(errno));
	close(fd);
}

static void recs_free(void)
{
	size_t i;

	for (i = 0; i < nrecs; i++) {
		sim_rec_free(recs[i]);
		free(recs[i]);
	}
	free(recs);
	recs = NULL;
	nrecs = caprecs = 0;
}

void sim_rec_fini(void)
{
	recs_free();
}

SIM_API int simcuda_check(char *msg, size_t len)
{
	struct sim_rec **copy, *a, *b;
	int rc;

	if (len > 0)
		msg[0] = '\0';
	sim_lock();
	if (nrecs == 0) {
		sim_unlock();
		return 0;
	}
	/* The check sorts; the kept order is completion order. */
	copy = malloc(nrecs * sizeof(*copy));
	if (copy == NULL) {
		sim_unlock();
		if (len > 0)
			snprintf(msg, len, "simcuda_check: out of memory");
		return 1;
	}
	memcpy(copy, recs, nrecs * sizeof(*copy));
	rc = sim_check_run(copy, nrecs, &a, &b);
	if (rc == 1)
		sim_check_describe(a, b, msg, len);
	else if (rc < 0 && len > 0)
		snprintf(msg, len, "simcuda_check: out of memory");
	sim_unlock();
	free(copy);
	return rc == 0 ? 0 : 1;
}

SIM_API size_t simcuda_op_count(void)
{
	size_t n;

	sim_lock();
	n = nrecs;
	sim_unlock();
	return n;
}

SIM_API int simcuda_op_get(size_t i, struct simcuda_op_info *out)
{
	struct sim_rec *r;

	if (out == NULL)
		return -1;
	sim_lock();
	if (i >= nrecs) {
		sim_unlock();
		return -1;
	}
	r = recs[i];
	memset(out, 0, sizeof(*out));
	out->seq = r->seq;
	out->stream = r->stream;
	out->ctx = r->ctx;
	out->graph = r->graph;
	out->kind = r->kind;
	snprintf(out->name, sizeof(out->name), "%s", r->name);
	out->start_ns = r->start;
	out->end_ns = r->end;
	out->nacc = r->nacc;
	out->nfault = r->nfault;
	sim_unlock();
	return 0;
}

SIM_API void simcuda_records_clear(void)
{
	sim_lock();
	sim_rec_flush(0);
	recs_free();
	sim_unlock();
}
