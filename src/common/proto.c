/*
 * proto.c - encoder and decoder of the kmux wire protocol (see proto.h).
 *
 * Owns: the frame codec, the per-type payload layouts and the validation
 * rules shared by both directions.
 *
 * One validator per message type runs on the host-form struct, after
 * decoding and before encoding.  So the encoder can never produce a frame
 * the decoder refuses, and the decoder refuses exactly what the encoder
 * would not produce: the encoding is canonical, which lets the fuzzer check
 * "decode, encode, compare bytes" on every input it finds acceptable.
 *
 * Reading goes through a cursor whose every read checks the bytes left, and
 * each variable field is checked (terminator, counts) before anything
 * points into it.  Nothing is allocated: decoded strings, string blocks and
 * job records stay in the caller's buffer.
 */
#include <endian.h>
#include <limits.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "proto.h"

/* Smallest wire size of one job record: fixed part + two "" strings. */
#define JOB_REC_MIN (sizeof(struct proto_wire_job_rec) + 2 * 5)

/* Bits of proto_ps.states that name a state. */
#define PS_STATES_ALL \
	(((1u << (PROTO_JOB_STATE_MAX + 1)) - 1) & ~((1u << PROTO_JOB_STATE_MIN) - 1))

static const uint8_t magic_bytes[4] = { 'K', 'M', 'U', 'X' };

_Static_assert(PROTO_MAGIC == ((uint32_t)'K' | (uint32_t)'M' << 8 |
			       (uint32_t)'U' << 16 | (uint32_t)'X' << 24),
	       "PROTO_MAGIC is the bytes KMUX");

/* ------------------------------------------------------------------------
 * Reading: a cursor over the payload.  Every function returns 0 or
 * -EBADMSG and leaves the cursor anywhere on error (the frame is dead).
 */
struct rd {
	const uint8_t *p;
	size_t left;
};

static int rd_bytes(struct rd *r, void *dst, size_t n)
{
	if (r->left < n)
		return -EBADMSG;
	memcpy(dst, r->p, n);
	r->p += n;
	r->left -= n;
	return 0;
}

static int rd_u32(struct rd *r, uint32_t *v)
{
	uint32_t le;

	if (rd_bytes(r, &le, sizeof(le)) < 0)
		return -EBADMSG;
	*v = le32toh(le);
	return 0;
}

/* A str: u32 n, n bytes, exactly one NUL and it is the last byte. */
static int rd_str(struct rd *r, const char **s)
{
	uint32_t n;

	if (rd_u32(r, &n) < 0)
		return -EBADMSG;
	if (n == 0 || n > r->left)
		return -EBADMSG;
	if (r->p[n - 1] != '\0' || memchr(r->p, '\0', n - 1) != NULL)
		return -EBADMSG;
	*s = (const char *)r->p;
	r->p += n;
	r->left -= n;
	return 0;
}

/* Do `bytes` bytes at b hold exactly count C strings back to back? */
static bool block_ok(const char *b, uint32_t bytes, uint32_t count)
{
	const char *end, *z;
	uint32_t seen = 0;

	/* Before any pointer arithmetic: an empty list has no block (NULL
	 * + 0 is undefined behaviour, which the fuzzer caught). */
	if (count == 0 || bytes == 0)
		return count == 0 && bytes == 0;
	if (b == NULL || count > bytes)
		return false;
	end = b + bytes;
	if (end[-1] != '\0')
		return false;
	while (b < end) {
		z = memchr(b, '\0', (size_t)(end - b));
		if (z == NULL)
			return false;	/* not reached: end[-1] is NUL */
		if (++seen > count)
			return false;
		b = z + 1;
	}
	return seen == count;
}

static int rd_strv(struct rd *r, struct proto_strv *v)
{
	uint32_t count, bytes;

	if (rd_u32(r, &count) < 0 || rd_u32(r, &bytes) < 0)
		return -EBADMSG;
	if (bytes > r->left)
		return -EBADMSG;
	if (!block_ok((const char *)r->p, bytes, count))
		return -EBADMSG;
	v->count = count;
	v->vec = NULL;
	v->block = bytes ? (const char *)r->p : NULL;
	v->bytes = bytes;
	r->p += bytes;
	r->left -= bytes;
	return 0;
}

/* ------------------------------------------------------------------------
 * Writing: a cursor over the caller's space that keeps counting past its
 * end, so one pass both sizes and fills the frame.  Sizes beyond
 * PROTO_MAX_MSG are not counted further (no size_t overflow on a huge
 * argv): `big` says the frame is over the limit.
 */
struct wr {
	uint8_t *p;
	size_t cap;
	size_t len;
	bool big;
};

static void wr_bytes(struct wr *w, const void *src, size_t n)
{
	if (w->big || n > PROTO_MAX_MSG - w->len) {
		w->big = true;
		return;
	}
	if (n && w->len + n <= w->cap)
		memcpy(w->p + w->len, src, n);
	w->len += n;
}

static void wr_u32(struct wr *w, uint32_t v)
{
	uint32_t le = htole32(v);

	wr_bytes(w, &le, sizeof(le));
}

static void wr_str(struct wr *w, const char *s)
{
	size_t n = s ? strlen(s) + 1 : 1;

	if (n > PROTO_MAX_MSG) {
		w->big = true;
		return;
	}
	wr_u32(w, (uint32_t)n);
	wr_bytes(w, s ? s : "", n);
}

static void wr_strv(struct wr *w, const struct proto_strv *v)
{
	size_t bytes = 0;
	uint32_t i;

	if (v->vec == NULL) {
		wr_u32(w, v->count);
		wr_u32(w, v->bytes);
		wr_bytes(w, v->block, v->bytes);
		return;
	}
	for (i = 0; i < v->count; i++) {
		bytes += strlen(v->vec[i]) + 1;
		if (bytes > PROTO_MAX_MSG) {
			w->big = true;
			return;
		}
	}
	wr_u32(w, v->count);
	wr_u32(w, (uint32_t)bytes);
	for (i = 0; i < v->count; i++)
		wr_bytes(w, v->vec[i], strlen(v->vec[i]) + 1);
}

/* ------------------------------------------------------------------------
 * Validation of host-form messages, shared by both directions.  Strings
 * here are C strings: the decoder has checked their terminators.
 */
static size_t slen(const char *s)
{
	return s ? strlen(s) : 0;
}

static bool exit_ok(int32_t code, int32_t sig)
{
	return code >= PROTO_EXIT_UNKNOWN && code <= 255 &&
	       sig >= 0 && sig <= PROTO_MAX_SIGNAL;
}

/* Structure of a strv in either form; per-string rules are the caller's. */
static bool strv_ok(const struct proto_strv *v)
{
	uint32_t i;

	if (v->vec == NULL)
		return block_ok(v->block, v->bytes, v->count);
	for (i = 0; i < v->count; i++)
		if (v->vec[i] == NULL)
			return false;
	return true;
}

static bool hello_ok(const struct proto_hello *m)
{
	return (m->role == PROTO_ROLE_CLI || m->role == PROTO_ROLE_PRELOAD) &&
	       m->pid > 0 && slen(m->ident) < PROTO_MAX_NAME;
}

static bool job_req_ok(const struct proto_job_req *m)
{
	struct proto_iter it = { 0 };
	const char *s;

	if (m->flags & ~PROTO_JOB_F_MASK)
		return false;
	if (m->ngpus < 1 || m->ngpus > PROTO_MAX_GPUS)
		return false;
	if (m->prio < -100 || m->prio > 100)
		return false;
	if (slen(m->name) >= PROTO_MAX_NAME)
		return false;
	if (m->cwd == NULL || m->cwd[0] != '/' ||
	    strlen(m->cwd) >= PROTO_MAX_PATH)
		return false;
	if (!strv_ok(&m->argv) || !strv_ok(&m->env) || m->argv.count < 1)
		return false;
	proto_strv_next(&m->argv, &it, &s);
	if (s[0] == '\0')
		return false;
	memset(&it, 0, sizeof(it));
	while (proto_strv_next(&m->env, &it, &s))
		if (s[0] == '=' || strchr(s, '=') == NULL)
			return false;
	return true;
}

static bool register_ok(const struct proto_register *m)
{
	uint32_t have = (uint32_t)__builtin_popcountll(m->gpus);

	if (m->pid == 0 || (m->flags & ~PROTO_REG_F_MASK) ||
	    m->ngpus < 1 || m->ngpus > PROTO_MAX_GPUS ||
	    (m->gpus != 0 && m->ngpus > have) ||
	    slen(m->name) >= PROTO_MAX_NAME)
		return false;
	if ((m->flags & PROTO_REG_F_RUNNING) &&
	    (m->job == 0 || m->gpus == 0 || m->ngpus != have))
		return false;
	return strv_ok(&m->argv) && m->argv.count >= 1;
}

static bool alloc_update_ok(const struct proto_alloc_update *m)
{
	return m->pid > 0 && m->gpu < PROTO_MAX_GPUS && m->resident <= m->peak &&
	       !(m->flags & ~PROTO_ALLOC_F_MASK) &&
	       (!m->thrash_ws || (m->flags & PROTO_ALLOC_F_EVICT)) &&
	       (!(m->flags & PROTO_ALLOC_F_SHRUNK) ||
		((m->flags & PROTO_ALLOC_F_EVICT) && m->want > 0)) &&
	       (!(m->flags & PROTO_ALLOC_F_SUSPEND) ||
		((m->flags & PROTO_ALLOC_F_EVICT) && m->want > 0 &&
		 !(m->flags & PROTO_ALLOC_F_SHRUNK)));
}

static bool job_rec_ok(const struct proto_job_rec *r)
{
	return r->id > 0 && r->state >= PROTO_JOB_STATE_MIN &&
	       r->state <= PROTO_JOB_STATE_MAX &&
	       exit_ok(r->exit_code, r->signal) &&
	       r->ngpus >= 1 && r->ngpus <= PROTO_MAX_GPUS &&
	       !(r->flags & ~PROTO_JOBREC_F_MASK) &&
	       (!(r->flags & PROTO_JOBREC_F_SUSPENDED) ||
		r->state == PROTO_JOB_RUNNING) &&
	       (!(r->flags & PROTO_JOBREC_F_WAIT_BOUND) ||
		r->state == PROTO_JOB_RUNNING ||
		r->state == PROTO_JOB_QUEUED) &&
	       r->held <= PROTO_HELD_MAX &&
	       (r->held == PROTO_HELD_NONE || r->state == PROTO_JOB_QUEUED) &&
	       slen(r->name) < PROTO_MAX_NAME;
}

/* ADMIT's MPS directories: "" (none), or an absolute path. */
static bool mps_dir_ok(const char *s)
{
	return slen(s) == 0 || (s[0] == '/' && slen(s) < PROTO_MAX_PATH);
}

static bool admit_ok(const struct proto_admit *m)
{
	uint64_t seen = 0;
	uint32_t i;

	if (m->job == 0 || m->ngpus < 1 || m->ngpus > PROTO_MAX_GPUS)
		return false;
	for (i = 0; i < m->ngpus; i++) {
		if (m->gpus[i] >= PROTO_MAX_GPUS ||
		    (seen & (UINT64_C(1) << m->gpus[i])))
			return false;
		seen |= UINT64_C(1) << m->gpus[i];
	}
	if (!mps_dir_ok(m->mps_pipe) || !mps_dir_ok(m->mps_log) ||
	    (slen(m->mps_pipe) == 0) != (slen(m->mps_log) == 0))
		return false;
	return true;
}

static bool gpu_list_ok(const struct proto_gpu_list *m)
{
	uint64_t seen = 0;
	uint32_t i;

	if (m->count > PROTO_MAX_GPUS || slen(m->note) >= PROTO_MAX_ERRMSG)
		return false;
	for (i = 0; i < m->count; i++) {
		const struct proto_gpu_rec *g = &m->gpu[i];

		if (g->index >= PROTO_MAX_GPUS || g->util_pm > 1000 ||
		    (seen & (UINT64_C(1) << g->index)))
			return false;
		seen |= UINT64_C(1) << g->index;
	}
	return true;
}

static bool exited_ok(const struct proto_exited *m)
{
	return m->job > 0 &&
	       (m->state == PROTO_JOB_EXITED || m->state == PROTO_JOB_CANCELLED ||
		m->state == PROTO_JOB_FAILED) &&
	       exit_ok(m->exit_code, m->signal);
}

/* Job lists are validated record by record while being read or written. */
static bool msg_ok(const struct proto_msg *m)
{
	switch (m->type) {
	case PROTO_HELLO:
		return hello_ok(&m->u.hello);
	case PROTO_SUBMIT:
	case PROTO_RUN:
		return job_req_ok(&m->u.job);
	case PROTO_REGISTER:
		return register_ok(&m->u.reg);
	case PROTO_ALLOC_UPDATE:
		return alloc_update_ok(&m->u.alloc);
	case PROTO_PS:
		return !(m->u.ps.flags & ~PROTO_PS_F_MASK) &&
		       !(m->u.ps.states & ~PS_STATES_ALL);
	case PROTO_WAIT:
		return m->u.wait.job > 0;
	case PROTO_ATTACH:
		return m->u.attach.job > 0;
	case PROTO_CANCEL:
		return m->u.cancel.job > 0 && m->u.cancel.signal >= 0 &&
		       m->u.cancel.signal <= PROTO_MAX_SIGNAL;
	case PROTO_LOGS:
		return m->u.logs.job > 0 && !(m->u.logs.flags & ~PROTO_LOGS_F_MASK);
	case PROTO_TOP:
		return m->u.top.flags == 0;
	case PROTO_FINISHED:
		/* Not started: the shell's 127 or 126, no signal. */
		return m->u.finished.job > 0 && m->u.finished.pid > 0 &&
		       exit_ok(m->u.finished.exit_code, m->u.finished.signal) &&
		       !(m->u.finished.flags & ~PROTO_FINISHED_F_NOT_STARTED) &&
		       (!m->u.finished.flags ||
			((m->u.finished.exit_code == 126 ||
			  m->u.finished.exit_code == 127) &&
			 m->u.finished.signal == 0));
	case PROTO_STARTED:
		return m->u.started.job > 0 && m->u.started.pid > 0 &&
		       m->u.started.pid <= INT32_MAX;
	case PROTO_OK:
		return true;
	case PROTO_ERROR:
		return m->u.error.err > 0 && m->u.error.err < 4096 &&
		       slen(m->u.error.message) < PROTO_MAX_ERRMSG;
	case PROTO_ADMIT:
		return admit_ok(&m->u.admit);
	case PROTO_JOB_LIST:
		return true;
	case PROTO_EXITED:
		return exited_ok(&m->u.exited);
	case PROTO_GPU_LIST:
		return gpu_list_ok(&m->u.gpus);
	case PROTO_LOG_DATA:
		return m->u.log.job > 0 && !(m->u.log.flags & ~PROTO_LOG_F_MASK) &&
		       (m->u.log.length == 0 || m->u.log.data != NULL);
	case PROTO_QUEUED:
		return m->u.queued.job > 0;
	case PROTO_REGION_ENTER:
		return m->u.renter.pid > 0 && m->u.renter.gpu < PROTO_MAX_GPUS &&
		       m->u.renter.flags == 0;
	case PROTO_REGION_LEAVE:
		return m->u.rleave.pid > 0;
	case PROTO_DRAINED:
		return m->u.drained.token > 0 && m->u.drained.pid > 0;
	case PROTO_DRAIN:
		return m->u.drain.token > 0 && m->u.drain.gpu < PROTO_MAX_GPUS;
	case PROTO_REGION_GRANTED:
		return m->u.granted.region > 0 &&
		       m->u.granted.gpu < PROTO_MAX_GPUS;
	case PROTO_MEM_PRESSURE:
		return m->u.pressure.give > 0 &&
		       m->u.pressure.gpu < PROTO_MAX_GPUS &&
		       !(m->u.pressure.flags & ~PROTO_PRESSURE_F_MASK);
	}
	return false;
}

/* ------------------------------------------------------------------------
 * Job records, the one variable-size list.
 */
static int rd_job_rec(struct rd *r, struct proto_job_rec *rec)
{
	struct proto_wire_job_rec w;

	if (rd_bytes(r, &w, sizeof(w)) < 0)
		return -EBADMSG;
	rec->id = le64toh(w.id);
	rec->gpus = le64toh(w.gpus);
	rec->mem_request = le64toh(w.mem_request);
	rec->mem_peak = le64toh(w.mem_peak);
	rec->submit_us = le64toh(w.submit_us);
	rec->start_us = le64toh(w.start_us);
	rec->end_us = le64toh(w.end_us);
	rec->uid = le32toh(w.uid);
	rec->pid = le32toh(w.pid);
	rec->state = le32toh(w.state);
	rec->exit_code = (int32_t)le32toh((uint32_t)w.exit_code);
	rec->signal = (int32_t)le32toh((uint32_t)w.signal);
	rec->ngpus = le32toh(w.ngpus);
	rec->mem_quota = le64toh(w.mem_quota);
	rec->mem_used = le64toh(w.mem_used);
	rec->kernel_rate = le32toh(w.kernel_rate);
	rec->mem_evicted = le64toh(w.mem_evicted);
	rec->mem_reserved = le64toh(w.mem_reserved);
	rec->evicts = le64toh(w.evicts);
	rec->restores = le64toh(w.restores);
	rec->flags = le32toh(w.flags);
	rec->wait_rate = le32toh(w.wait_rate);
	rec->held = le32toh(w.held);
	if (rd_str(r, &rec->name) < 0 || rd_str(r, &rec->cmd) < 0)
		return -EBADMSG;
	return job_rec_ok(rec) ? 0 : -EBADMSG;
}

static void wr_job_rec(struct wr *w, const struct proto_job_rec *rec)
{
	struct proto_wire_job_rec x = {
		.id = htole64(rec->id),
		.gpus = htole64(rec->gpus),
		.mem_request = htole64(rec->mem_request),
		.mem_peak = htole64(rec->mem_peak),
		.submit_us = htole64(rec->submit_us),
		.start_us = htole64(rec->start_us),
		.end_us = htole64(rec->end_us),
		.uid = htole32(rec->uid),
		.pid = htole32(rec->pid),
		.state = htole32(rec->state),
		.exit_code = (int32_t)htole32((uint32_t)rec->exit_code),
		.signal = (int32_t)htole32((uint32_t)rec->signal),
		.ngpus = htole32(rec->ngpus),
		.mem_quota = htole64(rec->mem_quota),
		.mem_used = htole64(rec->mem_used),
		.kernel_rate = htole32(rec->kernel_rate),
		.flags = htole32(rec->flags),
		.mem_evicted = htole64(rec->mem_evicted),
		.mem_reserved = htole64(rec->mem_reserved),
		.evicts = htole64(rec->evicts),
		.restores = htole64(rec->restores),
		.wait_rate = htole32(rec->wait_rate),
		.held = htole32(rec->held),
	};

	wr_bytes(w, &x, sizeof(x));
	wr_str(w, rec->name);
	wr_str(w, rec->cmd);
}

/*
 * Read l->count records from r; on success l->raw/raw_len cover exactly
 * them.  Also used on the raw form of an encoder's input.
 */
static int rd_job_list(struct rd *r, struct proto_job_list *l)
{
	struct proto_job_rec rec;
	const uint8_t *start = r->p;
	uint32_t i;

	if (l->count > r->left / JOB_REC_MIN)
		return -EBADMSG;
	l->vec = NULL;
	if (l->count == 0) {
		/* No pointer arithmetic on a possibly NULL raw form. */
		l->raw = NULL;
		l->raw_len = 0;
		return 0;
	}
	for (i = 0; i < l->count; i++)
		if (rd_job_rec(r, &rec) < 0)
			return -EBADMSG;
	l->raw = start;
	l->raw_len = (size_t)(r->p - start);
	return 0;
}

int proto_job_list_next(const struct proto_job_list *l, struct proto_iter *it,
			struct proto_job_rec *rec)
{
	struct rd r;

	if (l == NULL || it == NULL || rec == NULL || it->i >= l->count)
		return 0;
	if (l->vec != NULL) {
		*rec = l->vec[it->i++];
		return 1;
	}
	if (l->raw == NULL || it->off > l->raw_len)
		return 0;
	r.p = l->raw + it->off;
	r.left = l->raw_len - it->off;
	if (rd_job_rec(&r, rec) < 0)
		return 0;	/* a raw list not from proto_decode() */
	it->off = (size_t)(r.p - l->raw);
	it->i++;
	return 1;
}

int proto_strv_next(const struct proto_strv *v, struct proto_iter *it,
		    const char **s)
{
	const char *p;
	size_t n;

	if (v == NULL || it == NULL || s == NULL || it->i >= v->count)
		return 0;
	if (v->vec != NULL) {
		*s = v->vec[it->i++];
		return 1;
	}
	if (v->block == NULL || it->off >= v->bytes)
		return 0;
	p = v->block + it->off;
	n = strnlen(p, v->bytes - it->off);
	if (n == v->bytes - it->off)
		return 0;	/* unterminated: not a validated block */
	*s = p;
	it->off += n + 1;
	it->i++;
	return 1;
}

int proto_strv_dup(const struct proto_strv *v, char ***out)
{
	struct proto_iter it = { 0 };
	const char *s;
	size_t bytes = 0, n = 0;
	char **vec, *dst;

	if (v == NULL || out == NULL)
		return -EINVAL;
	while (proto_strv_next(v, &it, &s)) {
		bytes += strlen(s) + 1;
		n++;
	}
	vec = malloc((n + 1) * sizeof(*vec) + bytes);
	if (vec == NULL)
		return -ENOMEM;
	dst = (char *)(vec + n + 1);
	memset(&it, 0, sizeof(it));
	n = 0;
	while (proto_strv_next(v, &it, &s)) {
		size_t len = strlen(s) + 1;

		memcpy(dst, s, len);
		vec[n++] = dst;
		dst += len;
	}
	vec[n] = NULL;
	*out = vec;
	return 0;
}

/* ------------------------------------------------------------------------
 * Payloads, one reader and one writer per type.
 */
static int rd_payload(struct rd *r, struct proto_msg *m)
{
	switch (m->type) {
	case PROTO_HELLO: {
		struct proto_wire_hello w;

		if (rd_bytes(r, &w, sizeof(w)) < 0 || w.reserved != 0)
			return -EBADMSG;
		m->u.hello.role = le16toh(w.role);
		m->u.hello.pid = le32toh(w.pid);
		return rd_str(r, &m->u.hello.ident);
	}
	case PROTO_SUBMIT:
	case PROTO_RUN: {
		struct proto_wire_job_req w;
		struct proto_job_req *j = &m->u.job;

		if (rd_bytes(r, &w, sizeof(w)) < 0 || w.reserved != 0)
			return -EBADMSG;
		j->flags = le32toh(w.flags);
		j->ngpus = le32toh(w.ngpus);
		j->mem = le64toh(w.mem);
		j->prio = (int32_t)le32toh((uint32_t)w.prio);
		if (rd_str(r, &j->name) < 0 || rd_str(r, &j->cwd) < 0 ||
		    rd_strv(r, &j->argv) < 0 || rd_strv(r, &j->env) < 0)
			return -EBADMSG;
		return 0;
	}
	case PROTO_REGISTER: {
		struct proto_wire_register w;

		if (rd_bytes(r, &w, sizeof(w)) < 0 || w.reserved != 0)
			return -EBADMSG;
		m->u.reg.job = le64toh(w.job);
		m->u.reg.pid_start = le64toh(w.pid_start);
		m->u.reg.mem = le64toh(w.mem);
		m->u.reg.gpus = le64toh(w.gpus);
		m->u.reg.pid = le32toh(w.pid);
		m->u.reg.flags = le32toh(w.flags);
		m->u.reg.ngpus = le32toh(w.ngpus);
		if (rd_str(r, &m->u.reg.name) < 0)
			return -EBADMSG;
		return rd_strv(r, &m->u.reg.argv);
	}
	case PROTO_ALLOC_UPDATE: {
		struct proto_wire_alloc_update w;

		if (rd_bytes(r, &w, sizeof(w)) < 0 || w.reserved2 != 0)
			return -EBADMSG;
		m->u.alloc.job = le64toh(w.job);
		m->u.alloc.pid = le32toh(w.pid);
		m->u.alloc.gpu = le32toh(w.gpu);
		m->u.alloc.resident = le64toh(w.resident);
		m->u.alloc.peak = le64toh(w.peak);
		m->u.alloc.want = le64toh(w.want);
		m->u.alloc.kernels = le64toh(w.kernels);
		m->u.alloc.evicted = le64toh(w.evicted);
		m->u.alloc.reserved = le64toh(w.reserved);
		m->u.alloc.evicts = le64toh(w.evicts);
		m->u.alloc.restores = le64toh(w.restores);
		m->u.alloc.flags = le32toh(w.flags);
		m->u.alloc.thrash_ws = le64toh(w.thrash_ws);
		m->u.alloc.waits = le64toh(w.waits);
		return 0;
	}
	case PROTO_PS: {
		struct proto_wire_ps w;

		if (rd_bytes(r, &w, sizeof(w)) < 0)
			return -EBADMSG;
		m->u.ps.flags = le32toh(w.flags);
		m->u.ps.states = le32toh(w.states);
		return 0;
	}
	case PROTO_WAIT: {
		struct proto_wire_job_ref w;

		if (rd_bytes(r, &w, sizeof(w)) < 0)
			return -EBADMSG;
		m->u.wait.job = le64toh(w.job);
		return 0;
	}
	case PROTO_ATTACH: {
		struct proto_wire_job_ref w;

		if (rd_bytes(r, &w, sizeof(w)) < 0)
			return -EBADMSG;
		m->u.attach.job = le64toh(w.job);
		return 0;
	}
	case PROTO_CANCEL: {
		struct proto_wire_cancel w;

		if (rd_bytes(r, &w, sizeof(w)) < 0 || w.reserved != 0)
			return -EBADMSG;
		m->u.cancel.job = le64toh(w.job);
		m->u.cancel.signal = (int32_t)le32toh((uint32_t)w.signal);
		return 0;
	}
	case PROTO_LOGS: {
		struct proto_wire_logs w;

		if (rd_bytes(r, &w, sizeof(w)) < 0 || w.reserved != 0)
			return -EBADMSG;
		m->u.logs.job = le64toh(w.job);
		m->u.logs.offset = le64toh(w.offset);
		m->u.logs.flags = le32toh(w.flags);
		return 0;
	}
	case PROTO_TOP: {
		struct proto_wire_top w;

		if (rd_bytes(r, &w, sizeof(w)) < 0 || w.reserved != 0)
			return -EBADMSG;
		m->u.top.flags = le32toh(w.flags);
		return 0;
	}
	case PROTO_FINISHED: {
		struct proto_wire_finished w;

		if (rd_bytes(r, &w, sizeof(w)) < 0)
			return -EBADMSG;
		m->u.finished.job = le64toh(w.job);
		m->u.finished.pid = le32toh(w.pid);
		m->u.finished.exit_code = (int32_t)le32toh((uint32_t)w.exit_code);
		m->u.finished.signal = (int32_t)le32toh((uint32_t)w.signal);
		m->u.finished.flags = le32toh(w.flags);
		return 0;
	}
	case PROTO_STARTED: {
		struct proto_wire_started w;

		if (rd_bytes(r, &w, sizeof(w)) < 0 || w.reserved != 0)
			return -EBADMSG;
		m->u.started.job = le64toh(w.job);
		m->u.started.pid = le32toh(w.pid);
		return 0;
	}
	case PROTO_OK: {
		struct proto_wire_ok w;

		if (rd_bytes(r, &w, sizeof(w)) < 0)
			return -EBADMSG;
		m->u.ok.id = le64toh(w.id);
		return 0;
	}
	case PROTO_ERROR: {
		struct proto_wire_error w;

		if (rd_bytes(r, &w, sizeof(w)) < 0 || w.reserved != 0)
			return -EBADMSG;
		m->u.error.err = (int32_t)le32toh((uint32_t)w.err);
		return rd_str(r, &m->u.error.message);
	}
	case PROTO_ADMIT: {
		struct proto_wire_admit w;
		struct proto_admit *a = &m->u.admit;
		uint32_t i;

		if (rd_bytes(r, &w, sizeof(w)) < 0 || w.reserved != 0)
			return -EBADMSG;
		a->job = le64toh(w.job);
		a->quota = le64toh(w.quota);
		a->ngpus = le32toh(w.ngpus);
		if (a->ngpus > PROTO_MAX_GPUS)
			return -EBADMSG;
		for (i = 0; i < a->ngpus; i++)
			if (rd_u32(r, &a->gpus[i]) < 0)
				return -EBADMSG;
		if (rd_str(r, &a->mps_pipe) < 0)
			return -EBADMSG;
		return rd_str(r, &a->mps_log);
	}
	case PROTO_JOB_LIST: {
		struct proto_wire_count w;

		if (rd_bytes(r, &w, sizeof(w)) < 0 || w.reserved != 0)
			return -EBADMSG;
		m->u.jobs.count = le32toh(w.count);
		return rd_job_list(r, &m->u.jobs);
	}
	case PROTO_EXITED: {
		struct proto_wire_exited w;

		if (rd_bytes(r, &w, sizeof(w)) < 0 || w.reserved != 0)
			return -EBADMSG;
		m->u.exited.job = le64toh(w.job);
		m->u.exited.state = le32toh(w.state);
		m->u.exited.exit_code = (int32_t)le32toh((uint32_t)w.exit_code);
		m->u.exited.signal = (int32_t)le32toh((uint32_t)w.signal);
		return 0;
	}
	case PROTO_GPU_LIST: {
		struct proto_wire_count w;
		struct proto_wire_gpu_rec g;
		uint32_t i;

		if (rd_bytes(r, &w, sizeof(w)) < 0 || w.reserved != 0)
			return -EBADMSG;
		m->u.gpus.count = le32toh(w.count);
		if (m->u.gpus.count > PROTO_MAX_GPUS)
			return -EBADMSG;
		for (i = 0; i < m->u.gpus.count; i++) {
			struct proto_gpu_rec *x = &m->u.gpus.gpu[i];

			if (rd_bytes(r, &g, sizeof(g)) < 0)
				return -EBADMSG;
			x->index = le32toh(g.index);
			x->ntasks = le32toh(g.ntasks);
			x->mem_total = le64toh(g.mem_total);
			x->mem_committed = le64toh(g.mem_committed);
			x->mem_used = le64toh(g.mem_used);
			x->util_pm = le32toh(g.util_pm);
			x->busy_pm = le32toh(g.busy_pm);
		}
		return rd_str(r, &m->u.gpus.note);
	}
	case PROTO_LOG_DATA: {
		struct proto_wire_log_data w;
		struct proto_log_data *l = &m->u.log;

		if (rd_bytes(r, &w, sizeof(w)) < 0)
			return -EBADMSG;
		l->job = le64toh(w.job);
		l->offset = le64toh(w.offset);
		l->flags = le32toh(w.flags);
		l->length = le32toh(w.length);
		if (l->length > r->left)
			return -EBADMSG;
		l->data = l->length ? r->p : NULL;
		r->p += l->length;
		r->left -= l->length;
		return 0;
	}
	case PROTO_QUEUED: {
		struct proto_wire_queued w;

		if (rd_bytes(r, &w, sizeof(w)) < 0 || w.reserved != 0)
			return -EBADMSG;
		m->u.queued.job = le64toh(w.job);
		m->u.queued.position = le32toh(w.position);
		return 0;
	}
	case PROTO_REGION_ENTER: {
		struct proto_wire_region_enter w;

		if (rd_bytes(r, &w, sizeof(w)) < 0 || w.reserved != 0)
			return -EBADMSG;
		m->u.renter.job = le64toh(w.job);
		m->u.renter.pid = le32toh(w.pid);
		m->u.renter.gpu = le32toh(w.gpu);
		m->u.renter.flags = le32toh(w.flags);
		return 0;
	}
	case PROTO_REGION_LEAVE: {
		struct proto_wire_region_leave w;

		if (rd_bytes(r, &w, sizeof(w)) < 0 || w.reserved != 0)
			return -EBADMSG;
		m->u.rleave.pid = le32toh(w.pid);
		return 0;
	}
	case PROTO_DRAINED: {
		struct proto_wire_drained w;

		if (rd_bytes(r, &w, sizeof(w)) < 0 || w.reserved != 0)
			return -EBADMSG;
		m->u.drained.token = le64toh(w.token);
		m->u.drained.pid = le32toh(w.pid);
		return 0;
	}
	case PROTO_DRAIN: {
		struct proto_wire_drain w;

		if (rd_bytes(r, &w, sizeof(w)) < 0 || w.reserved != 0)
			return -EBADMSG;
		m->u.drain.token = le64toh(w.token);
		m->u.drain.gpu = le32toh(w.gpu);
		return 0;
	}
	case PROTO_REGION_GRANTED: {
		struct proto_wire_region_granted w;

		if (rd_bytes(r, &w, sizeof(w)) < 0)
			return -EBADMSG;
		m->u.granted.region = le64toh(w.region);
		m->u.granted.waited_us = le64toh(w.waited_us);
		m->u.granted.gpu = le32toh(w.gpu);
		m->u.granted.frozen = le32toh(w.frozen);
		return 0;
	}
	case PROTO_MEM_PRESSURE: {
		struct proto_wire_mem_pressure w;

		if (rd_bytes(r, &w, sizeof(w)) < 0)
			return -EBADMSG;
		m->u.pressure.give = le64toh(w.give);
		m->u.pressure.gpu = le32toh(w.gpu);
		m->u.pressure.flags = le32toh(w.flags);
		return 0;
	}
	}
	return -EBADMSG;	/* unknown type */
}

static int wr_job_list(struct wr *w, const struct proto_job_list *l)
{
	struct proto_wire_count c = { .count = htole32(l->count) };
	uint32_t i;

	wr_bytes(w, &c, sizeof(c));
	if (l->vec == NULL) {
		/* Raw form: must be what proto_decode() would accept. */
		struct proto_job_list chk = { .count = l->count };
		struct rd r = { l->raw, l->raw_len };

		if ((l->raw == NULL && l->raw_len != 0) ||
		    rd_job_list(&r, &chk) < 0 || r.left != 0)
			return -EINVAL;
		wr_bytes(w, l->raw, l->raw_len);
		return 0;
	}
	for (i = 0; i < l->count; i++) {
		if (!job_rec_ok(&l->vec[i]))
			return -EINVAL;
		wr_job_rec(w, &l->vec[i]);
		if (w->big)
			break;
	}
	return 0;
}

static int wr_payload(struct wr *w, const struct proto_msg *m)
{
	switch (m->type) {
	case PROTO_HELLO: {
		struct proto_wire_hello x = {
			.role = htole16(m->u.hello.role),
			.pid = htole32(m->u.hello.pid),
		};

		wr_bytes(w, &x, sizeof(x));
		wr_str(w, m->u.hello.ident);
		return 0;
	}
	case PROTO_SUBMIT:
	case PROTO_RUN: {
		const struct proto_job_req *j = &m->u.job;
		struct proto_wire_job_req x = {
			.flags = htole32(j->flags),
			.ngpus = htole32(j->ngpus),
			.mem = htole64(j->mem),
			.prio = (int32_t)htole32((uint32_t)j->prio),
		};

		wr_bytes(w, &x, sizeof(x));
		wr_str(w, j->name);
		wr_str(w, j->cwd);
		wr_strv(w, &j->argv);
		wr_strv(w, &j->env);
		return 0;
	}
	case PROTO_REGISTER: {
		struct proto_wire_register x = {
			.job = htole64(m->u.reg.job),
			.pid_start = htole64(m->u.reg.pid_start),
			.mem = htole64(m->u.reg.mem),
			.gpus = htole64(m->u.reg.gpus),
			.pid = htole32(m->u.reg.pid),
			.flags = htole32(m->u.reg.flags),
			.ngpus = htole32(m->u.reg.ngpus),
		};

		wr_bytes(w, &x, sizeof(x));
		wr_str(w, m->u.reg.name);
		wr_strv(w, &m->u.reg.argv);
		return 0;
	}
	case PROTO_ALLOC_UPDATE: {
		struct proto_wire_alloc_update x = {
			.job = htole64(m->u.alloc.job),
			.pid = htole32(m->u.alloc.pid),
			.gpu = htole32(m->u.alloc.gpu),
			.resident = htole64(m->u.alloc.resident),
			.peak = htole64(m->u.alloc.peak),
			.want = htole64(m->u.alloc.want),
			.kernels = htole64(m->u.alloc.kernels),
			.evicted = htole64(m->u.alloc.evicted),
			.reserved = htole64(m->u.alloc.reserved),
			.evicts = htole64(m->u.alloc.evicts),
			.restores = htole64(m->u.alloc.restores),
			.flags = htole32(m->u.alloc.flags),
			.thrash_ws = htole64(m->u.alloc.thrash_ws),
			.waits = htole64(m->u.alloc.waits),
		};

		wr_bytes(w, &x, sizeof(x));
		return 0;
	}
	case PROTO_PS: {
		struct proto_wire_ps x = {
			.flags = htole32(m->u.ps.flags),
			.states = htole32(m->u.ps.states),
		};

		wr_bytes(w, &x, sizeof(x));
		return 0;
	}
	case PROTO_WAIT: {
		struct proto_wire_job_ref x = { .job = htole64(m->u.wait.job) };

		wr_bytes(w, &x, sizeof(x));
		return 0;
	}
	case PROTO_ATTACH: {
		struct proto_wire_job_ref x = {
			.job = htole64(m->u.attach.job) };

		wr_bytes(w, &x, sizeof(x));
		return 0;
	}
	case PROTO_CANCEL: {
		struct proto_wire_cancel x = {
			.job = htole64(m->u.cancel.job),
			.signal = (int32_t)htole32((uint32_t)m->u.cancel.signal),
		};

		wr_bytes(w, &x, sizeof(x));
		return 0;
	}
	case PROTO_LOGS: {
		struct proto_wire_logs x = {
			.job = htole64(m->u.logs.job),
			.offset = htole64(m->u.logs.offset),
			.flags = htole32(m->u.logs.flags),
		};

		wr_bytes(w, &x, sizeof(x));
		return 0;
	}
	case PROTO_TOP: {
		struct proto_wire_top x = { .flags = htole32(m->u.top.flags) };

		wr_bytes(w, &x, sizeof(x));
		return 0;
	}
	case PROTO_FINISHED: {
		const struct proto_finished *f = &m->u.finished;
		struct proto_wire_finished x = {
			.job = htole64(f->job),
			.pid = htole32(f->pid),
			.exit_code = (int32_t)htole32((uint32_t)f->exit_code),
			.signal = (int32_t)htole32((uint32_t)f->signal),
			.flags = htole32(f->flags),
		};

		wr_bytes(w, &x, sizeof(x));
		return 0;
	}
	case PROTO_STARTED: {
		struct proto_wire_started x = {
			.job = htole64(m->u.started.job),
			.pid = htole32(m->u.started.pid),
		};

		wr_bytes(w, &x, sizeof(x));
		return 0;
	}
	case PROTO_OK: {
		struct proto_wire_ok x = { .id = htole64(m->u.ok.id) };

		wr_bytes(w, &x, sizeof(x));
		return 0;
	}
	case PROTO_ERROR: {
		struct proto_wire_error x = {
			.err = (int32_t)htole32((uint32_t)m->u.error.err),
		};

		wr_bytes(w, &x, sizeof(x));
		wr_str(w, m->u.error.message);
		return 0;
	}
	case PROTO_ADMIT: {
		const struct proto_admit *a = &m->u.admit;
		struct proto_wire_admit x = {
			.job = htole64(a->job),
			.quota = htole64(a->quota),
			.ngpus = htole32(a->ngpus),
		};
		uint32_t i;

		wr_bytes(w, &x, sizeof(x));
		for (i = 0; i < a->ngpus; i++)
			wr_u32(w, a->gpus[i]);
		wr_str(w, a->mps_pipe);
		wr_str(w, a->mps_log);
		return 0;
	}
	case PROTO_JOB_LIST:
		return wr_job_list(w, &m->u.jobs);
	case PROTO_EXITED: {
		const struct proto_exited *e = &m->u.exited;
		struct proto_wire_exited x = {
			.job = htole64(e->job),
			.state = htole32(e->state),
			.exit_code = (int32_t)htole32((uint32_t)e->exit_code),
			.signal = (int32_t)htole32((uint32_t)e->signal),
		};

		wr_bytes(w, &x, sizeof(x));
		return 0;
	}
	case PROTO_GPU_LIST: {
		struct proto_wire_count c = { .count = htole32(m->u.gpus.count) };
		uint32_t i;

		wr_bytes(w, &c, sizeof(c));
		for (i = 0; i < m->u.gpus.count; i++) {
			const struct proto_gpu_rec *g = &m->u.gpus.gpu[i];
			struct proto_wire_gpu_rec x = {
				.index = htole32(g->index),
				.ntasks = htole32(g->ntasks),
				.mem_total = htole64(g->mem_total),
				.mem_committed = htole64(g->mem_committed),
				.mem_used = htole64(g->mem_used),
				.util_pm = htole32(g->util_pm),
				.busy_pm = htole32(g->busy_pm),
			};

			wr_bytes(w, &x, sizeof(x));
		}
		wr_str(w, m->u.gpus.note);
		return 0;
	}
	case PROTO_LOG_DATA: {
		const struct proto_log_data *l = &m->u.log;
		struct proto_wire_log_data x = {
			.job = htole64(l->job),
			.offset = htole64(l->offset),
			.flags = htole32(l->flags),
			.length = htole32(l->length),
		};

		wr_bytes(w, &x, sizeof(x));
		wr_bytes(w, l->data, l->length);
		return 0;
	}
	case PROTO_QUEUED: {
		struct proto_wire_queued x = {
			.job = htole64(m->u.queued.job),
			.position = htole32(m->u.queued.position),
		};

		wr_bytes(w, &x, sizeof(x));
		return 0;
	}
	case PROTO_REGION_ENTER: {
		struct proto_wire_region_enter x = {
			.job = htole64(m->u.renter.job),
			.pid = htole32(m->u.renter.pid),
			.gpu = htole32(m->u.renter.gpu),
			.flags = htole32(m->u.renter.flags),
		};

		wr_bytes(w, &x, sizeof(x));
		return 0;
	}
	case PROTO_REGION_LEAVE: {
		struct proto_wire_region_leave x = {
			.pid = htole32(m->u.rleave.pid),
		};

		wr_bytes(w, &x, sizeof(x));
		return 0;
	}
	case PROTO_DRAINED: {
		struct proto_wire_drained x = {
			.token = htole64(m->u.drained.token),
			.pid = htole32(m->u.drained.pid),
		};

		wr_bytes(w, &x, sizeof(x));
		return 0;
	}
	case PROTO_DRAIN: {
		struct proto_wire_drain x = {
			.token = htole64(m->u.drain.token),
			.gpu = htole32(m->u.drain.gpu),
		};

		wr_bytes(w, &x, sizeof(x));
		return 0;
	}
	case PROTO_REGION_GRANTED: {
		struct proto_wire_region_granted x = {
			.region = htole64(m->u.granted.region),
			.waited_us = htole64(m->u.granted.waited_us),
			.gpu = htole32(m->u.granted.gpu),
			.frozen = htole32(m->u.granted.frozen),
		};

		wr_bytes(w, &x, sizeof(x));
		return 0;
	}
	case PROTO_MEM_PRESSURE: {
		struct proto_wire_mem_pressure x = {
			.give = htole64(m->u.pressure.give),
			.gpu = htole32(m->u.pressure.gpu),
			.flags = htole32(m->u.pressure.flags),
		};

		wr_bytes(w, &x, sizeof(x));
		return 0;
	}
	}
	return -EINVAL;
}

/* ------------------------------------------------------------------------
 * Frames.
 */
int proto_encode(struct proto_buf *out, const struct proto_msg *m)
{
	struct proto_wire_hdr h;
	struct wr w;
	int rc;

	if (out == NULL || m == NULL || out->len > out->cap ||
	    (out->data == NULL && out->cap != 0))
		return -EINVAL;
	if (!msg_ok(m))
		return -EINVAL;

	w.p = out->data ? out->data + out->len : NULL;
	w.cap = out->cap - out->len;
	w.len = PROTO_HDR_SIZE;	/* the header goes in last, with the length */
	w.big = false;
	rc = wr_payload(&w, m);
	if (rc < 0)
		return rc;
	if (w.big)
		return -EMSGSIZE;
	if (w.len > w.cap)
		return -ENOSPC;

	h.magic = htole32(PROTO_MAGIC);
	h.version = htole16(PROTO_VERSION);
	h.type = htole16(m->type);
	h.length = htole32((uint32_t)(w.len - PROTO_HDR_SIZE));
	h.seq = htole32(m->seq);
	memcpy(w.p, &h, sizeof(h));
	out->len += w.len;
	return 0;
}

int proto_peek_header(const uint8_t *buf, size_t len, uint16_t *version,
		      uint16_t *type, uint32_t *length, uint32_t *seq)
{
	struct proto_wire_hdr h;

	if (buf == NULL)
		return -EINVAL;
	if (len < sizeof(h))
		return -EAGAIN;
	memcpy(&h, buf, sizeof(h));
	if (le32toh(h.magic) != PROTO_MAGIC)
		return -EPROTO;
	if (version)
		*version = le16toh(h.version);
	if (type)
		*type = le16toh(h.type);
	if (length)
		*length = le32toh(h.length);
	if (seq)
		*seq = le32toh(h.seq);
	return 0;
}

int proto_decode(const uint8_t *buf, size_t len, struct proto_msg *out,
		 size_t *consumed)
{
	struct proto_wire_hdr h;
	uint8_t hb[PROTO_HDR_SIZE] = { 0 };
	size_t have = len < sizeof(hb) ? len : sizeof(hb);
	uint32_t length;
	struct rd r;

	if (consumed == NULL || out == NULL || (buf == NULL && len != 0))
		return -EINVAL;
	*consumed = 0;
	if (have)
		memcpy(hb, buf, have);
	memcpy(&h, hb, sizeof(h));

	/* Judge each header field as soon as all of its bytes are here. */
	if (memcmp(hb, magic_bytes, have < 4 ? have : 4) != 0)
		return -EPROTO;
	if (have >= 6 && le16toh(h.version) != PROTO_VERSION)
		return -EPROTO;
	length = le32toh(h.length);
	if (have >= 12 && length > PROTO_MAX_PAYLOAD)
		return -EMSGSIZE;
	if (have < PROTO_HDR_SIZE || len - PROTO_HDR_SIZE < length)
		return -EAGAIN;

	*consumed = PROTO_HDR_SIZE + (size_t)length;
	memset(out, 0, sizeof(*out));
	out->type = le16toh(h.type);
	out->seq = le32toh(h.seq);
	r.p = buf + PROTO_HDR_SIZE;
	r.left = length;
	if (rd_payload(&r, out) < 0 || r.left != 0 || !msg_ok(out))
		return -EBADMSG;
	return 0;
}

/* ------------------------------------------------------------------------
 * Per-type encoders and names.
 */
#define PROTO_ENCODER(fn, TYPE, field, T)				\
int proto_encode_##fn(struct proto_buf *out, uint32_t seq, const T *m)	\
{									\
	struct proto_msg msg = { .type = TYPE, .seq = seq };		\
									\
	if (m == NULL)							\
		return -EINVAL;						\
	msg.u.field = *m;						\
	return proto_encode(out, &msg);					\
}

PROTO_ENCODER(hello, PROTO_HELLO, hello, struct proto_hello)
PROTO_ENCODER(submit, PROTO_SUBMIT, job, struct proto_job_req)
PROTO_ENCODER(run, PROTO_RUN, job, struct proto_job_req)
PROTO_ENCODER(register, PROTO_REGISTER, reg, struct proto_register)
PROTO_ENCODER(alloc_update, PROTO_ALLOC_UPDATE, alloc, struct proto_alloc_update)
PROTO_ENCODER(ps, PROTO_PS, ps, struct proto_ps)
PROTO_ENCODER(wait, PROTO_WAIT, wait, struct proto_wait)
PROTO_ENCODER(attach, PROTO_ATTACH, attach, struct proto_attach)
PROTO_ENCODER(cancel, PROTO_CANCEL, cancel, struct proto_cancel)
PROTO_ENCODER(logs, PROTO_LOGS, logs, struct proto_logs)
PROTO_ENCODER(top, PROTO_TOP, top, struct proto_top)
PROTO_ENCODER(finished, PROTO_FINISHED, finished, struct proto_finished)
PROTO_ENCODER(started, PROTO_STARTED, started, struct proto_started)
PROTO_ENCODER(ok, PROTO_OK, ok, struct proto_ok)
PROTO_ENCODER(error, PROTO_ERROR, error, struct proto_error)
PROTO_ENCODER(admit, PROTO_ADMIT, admit, struct proto_admit)
PROTO_ENCODER(job_list, PROTO_JOB_LIST, jobs, struct proto_job_list)
PROTO_ENCODER(exited, PROTO_EXITED, exited, struct proto_exited)
PROTO_ENCODER(gpu_list, PROTO_GPU_LIST, gpus, struct proto_gpu_list)
PROTO_ENCODER(log_data, PROTO_LOG_DATA, log, struct proto_log_data)
PROTO_ENCODER(queued, PROTO_QUEUED, queued, struct proto_queued)
PROTO_ENCODER(region_enter, PROTO_REGION_ENTER, renter, struct proto_region_enter)
PROTO_ENCODER(region_leave, PROTO_REGION_LEAVE, rleave, struct proto_region_leave)
PROTO_ENCODER(drained, PROTO_DRAINED, drained, struct proto_drained)
PROTO_ENCODER(drain, PROTO_DRAIN, drain, struct proto_drain)
PROTO_ENCODER(region_granted, PROTO_REGION_GRANTED, granted, struct proto_region_granted)
PROTO_ENCODER(mem_pressure, PROTO_MEM_PRESSURE, pressure, struct proto_mem_pressure)

const char *proto_type_name(uint16_t type)
{
	switch (type) {
	case PROTO_HELLO: return "HELLO";
	case PROTO_SUBMIT: return "SUBMIT";
	case PROTO_RUN: return "RUN";
	case PROTO_REGISTER: return "REGISTER";
	case PROTO_ALLOC_UPDATE: return "ALLOC_UPDATE";
	case PROTO_PS: return "PS";
	case PROTO_WAIT: return "WAIT";
	case PROTO_CANCEL: return "CANCEL";
	case PROTO_LOGS: return "LOGS";
	case PROTO_TOP: return "TOP";
	case PROTO_FINISHED: return "FINISHED";
	case PROTO_OK: return "OK";
	case PROTO_ERROR: return "ERROR";
	case PROTO_ADMIT: return "ADMIT";
	case PROTO_JOB_LIST: return "JOB_LIST";
	case PROTO_EXITED: return "EXITED";
	case PROTO_GPU_LIST: return "GPU_LIST";
	case PROTO_LOG_DATA: return "LOG_DATA";
	case PROTO_QUEUED: return "QUEUED";
	case PROTO_REGION_ENTER: return "REGION_ENTER";
	case PROTO_REGION_LEAVE: return "REGION_LEAVE";
	case PROTO_DRAINED: return "DRAINED";
	case PROTO_ATTACH: return "ATTACH";
	case PROTO_STARTED: return "STARTED";
	case PROTO_DRAIN: return "DRAIN";
	case PROTO_REGION_GRANTED: return "REGION_GRANTED";
	case PROTO_MEM_PRESSURE: return "MEM_PRESSURE";
	}
	return "?";
}

bool proto_type_is_request(uint16_t type)
{
	/* The 1xx block is numbered without gaps. */
	return type >= PROTO_HELLO && type <= PROTO_STARTED;
}

static const char *const state_names[] = {
	[PROTO_JOB_QUEUED] = "queued",
	[PROTO_JOB_RUNNING] = "running",
	[PROTO_JOB_EXITED] = "exited",
	[PROTO_JOB_CANCELLED] = "cancelled",
	[PROTO_JOB_FAILED] = "failed",
};

const char *proto_job_state_name(uint32_t state)
{
	if (state < PROTO_JOB_STATE_MIN || state > PROTO_JOB_STATE_MAX)
		return NULL;
	return state_names[state];
}

int proto_job_state_parse(const char *name, uint32_t *state)
{
	uint32_t s;

	if (name == NULL || state == NULL)
		return -EINVAL;
	for (s = PROTO_JOB_STATE_MIN; s <= PROTO_JOB_STATE_MAX; s++) {
		if (strcmp(name, state_names[s]) == 0) {
			*state = s;
			return 0;
		}
	}
	return -EINVAL;
}
