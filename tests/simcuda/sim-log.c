/*
 * sim-log.c - operation records as text: one line per record.
 *
 *   op v=1 seq=12 pid=4242 ctx=1 dev=0 stream=3 graph=0 kind=kernel
 *      name=vec_add start=1000 end=2000 acc=5:0x7d0000000000:r,... fault=-
 *
 * (one line; wrapped here).  Fields are space-separated key=value pairs after
 * the leading "op"; unknown keys are ignored so the format can grow.  acc is
 * a comma-separated list of alloc:base:rw (rw is r, w or rw), each with an
 * optional :lo:hi (the byte range touched, from base; absent: the whole
 * allocation), or "-".  fault
 * is a comma-separated list of addr:size:rw:why, or "-".  Numbers are decimal
 * or 0x-prefixed hex.  Lines starting with '#' and blank lines are comments.
 *
 * The checker parses logs it did not write, so the parser trusts nothing:
 * every field is bounds-checked, lines are limited to SIM_LINE_MAX bytes and
 * lists to SIM_REC_MAX_ACC / SIM_REC_MAX_FAULT entries.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim-log.h"
#include "simcuda.h"

static const char *const kind_names[SIM_REC_NKINDS] = {
	[SIM_REC_KERNEL] = "kernel",
	[SIM_REC_MEMCPY] = "memcpy",
	[SIM_REC_MEMSET] = "memset",
	[SIM_REC_HOST] = "host",
	[SIM_REC_GRAPH] = "graph",
	[SIM_REC_FREE] = "free",
};

const char *sim_rec_kind_name(int kind)
{
	if (kind < 0 || kind >= SIM_REC_NKINDS)
		return "?";
	return kind_names[kind];
}

static const char *rw_name(unsigned rw)
{
	switch (rw & SIM_RW) {
	case SIM_READ:
		return "r";
	case SIM_WRITE:
		return "w";
	case SIM_RW:
		return "rw";
	}
	return "-";
}

int sim_rec_add_acc(struct sim_rec *r, uint64_t alloc, uint64_t base,
		    unsigned rw)
{
	return sim_rec_add_range(r, alloc, base, 0, SIM_ACC_WHOLE, rw);
}

int sim_rec_add_range(struct sim_rec *r, uint64_t alloc, uint64_t base,
		      uint64_t lo, uint64_t hi, unsigned rw)
{
	struct sim_acc *n;
	unsigned i;

	for (i = 0; i < r->nacc; i++) {
		if (r->acc[i].alloc == alloc) {
			r->acc[i].rw |= rw;
			if (lo < r->acc[i].lo)
				r->acc[i].lo = lo;
			if (hi > r->acc[i].hi)
				r->acc[i].hi = hi;
			return 0;
		}
	}
	if (r->nacc == r->acc_cap) {
		unsigned cap = r->acc_cap ? r->acc_cap * 2 : 4;

		n = realloc(r->acc, cap * sizeof(*n));
		if (n == NULL)
			return -1;
		r->acc = n;
		r->acc_cap = cap;
	}
	r->acc[r->nacc].alloc = alloc;
	r->acc[r->nacc].base = base;
	r->acc[r->nacc].rw = rw;
	r->acc[r->nacc].lo = lo;
	r->acc[r->nacc].hi = hi;
	r->nacc++;
	return 0;
}

int sim_rec_add_fault(struct sim_rec *r, uint64_t addr, uint64_t size,
		      unsigned rw, const char *why)
{
	struct sim_fault *n, *f;

	/* One fault per record is enough to fail; keep a few for context. */
	if (r->nfault >= SIM_REC_MAX_FAULT)
		return 0;
	if (r->nfault == r->fault_cap) {
		unsigned cap = r->fault_cap ? r->fault_cap * 2 : 2;

		n = realloc(r->fault, cap * sizeof(*n));
		if (n == NULL)
			return -1;
		r->fault = n;
		r->fault_cap = cap;
	}
	f = &r->fault[r->nfault++];
	f->addr = addr;
	f->size = size;
	f->rw = rw;
	snprintf(f->why, sizeof(f->why), "%s", why);
	return 0;
}

void sim_rec_free(struct sim_rec *r)
{
	free(r->acc);
	free(r->fault);
	r->acc = NULL;
	r->fault = NULL;
	r->nacc = r->acc_cap = 0;
	r->nfault = r->fault_cap = 0;
}

/* snprintf into buf at *off, tracking the length it would need. */
static void put(char *buf, size_t len, size_t *off, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static void put(char *buf, size_t len, size_t *off, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	if (*off < len)
		n = vsnprintf(buf + *off, len - *off, fmt, ap);
	else
		n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n > 0)
		*off += (size_t)n;
}

/* Names go on the line as one token: no spaces or control bytes. */
static void clean_name(const char *in, char *out, size_t len)
{
	size_t i;

	if (in == NULL || in[0] == '\0') {
		snprintf(out, len, "-");
		return;
	}
	for (i = 0; in[i] != '\0' && i + 1 < len; i++) {
		unsigned char c = (unsigned char)in[i];

		out[i] = (c <= 0x20 || c >= 0x7f) ? '_' : (char)c;
	}
	out[i] = '\0';
}

size_t sim_rec_format(const struct sim_rec *r, char *buf, size_t len)
{
	char name[SIM_NAME_MAX];
	size_t off = 0;
	unsigned i;

	clean_name(r->name, name, sizeof(name));
	put(buf, len, &off,
	    "op v=%d seq=%llu pid=%ld ctx=%llu dev=%d stream=%llu graph=%llu "
	    "kind=%s name=%s start=%llu end=%llu acc=",
	    SIM_LOG_VERSION, (unsigned long long)r->seq, r->pid,
	    (unsigned long long)r->ctx, r->dev, (unsigned long long)r->stream,
	    (unsigned long long)r->graph, sim_rec_kind_name(r->kind), name,
	    (unsigned long long)r->start, (unsigned long long)r->end);
	if (r->nacc == 0)
		put(buf, len, &off, "-");
	for (i = 0; i < r->nacc && i < SIM_REC_MAX_ACC; i++) {
		put(buf, len, &off, "%s%llu:0x%llx:%s", i ? "," : "",
		    (unsigned long long)r->acc[i].alloc,
		    (unsigned long long)r->acc[i].base, rw_name(r->acc[i].rw));
		/* A range only when not the whole allocation. */
		if (r->acc[i].lo != 0 || r->acc[i].hi != SIM_ACC_WHOLE)
			put(buf, len, &off, ":0x%llx:0x%llx",
			    (unsigned long long)r->acc[i].lo,
			    (unsigned long long)r->acc[i].hi);
	}
	put(buf, len, &off, " fault=");
	if (r->nfault == 0)
		put(buf, len, &off, "-");
	for (i = 0; i < r->nfault && i < SIM_REC_MAX_FAULT; i++)
		put(buf, len, &off, "%s0x%llx:%llu:%s:%s", i ? "," : "",
		    (unsigned long long)r->fault[i].addr,
		    (unsigned long long)r->fault[i].size,
		    rw_name(r->fault[i].rw), r->fault[i].why);
	put(buf, len, &off, "\n");
	return off;
}

/* ---- parsing ------------------------------------------------------------ */

static int fail(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int fail(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (errlen > 0) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return -1;
}

/* A whole token [s, s+n) as an unsigned 64-bit number. */
static int parse_u64(const char *s, size_t n, uint64_t *out)
{
	char tmp[32];
	char *end;
	unsigned long long v;

	if (n == 0 || n >= sizeof(tmp) || s[0] == '-' || s[0] == '+')
		return -1;
	memcpy(tmp, s, n);
	tmp[n] = '\0';
	errno = 0;
	v = strtoull(tmp, &end, 0);
	if (errno != 0 || *end != '\0')
		return -1;
	*out = v;
	return 0;
}

static int parse_rw(const char *s, size_t n, unsigned *rw)
{
	if (n == 1 && s[0] == 'r')
		*rw = SIM_READ;
	else if (n == 1 && s[0] == 'w')
		*rw = SIM_WRITE;
	else if (n == 2 && s[0] == 'r' && s[1] == 'w')
		*rw = SIM_RW;
	else
		return -1;
	return 0;
}

/*
 * Split [s, s+n) at the first `sep`: the head is [s, s+*hn), the rest
 * starts at *rest.  -1 when sep does not occur.
 */
static int split(const char *s, size_t n, char sep, size_t *hn,
		 const char **rest, size_t *rn)
{
	const char *p = memchr(s, sep, n);

	if (p == NULL)
		return -1;
	*hn = (size_t)(p - s);
	*rest = p + 1;
	*rn = n - *hn - 1;
	return 0;
}

static int parse_acc_list(const char *s, size_t n, struct sim_rec *r)
{
	if (n == 1 && s[0] == '-')
		return 0;
	while (n > 0) {
		const char *item = s, *f2, *f3, *f4, *f5;
		size_t in, n1, n2, n3, n4, n5;
		uint64_t alloc, base, lo = 0, hi = SIM_ACC_WHOLE;
		unsigned rw;
		const char *comma = memchr(s, ',', n);

		in = comma ? (size_t)(comma - s) : n;
		if (r->nacc >= SIM_REC_MAX_ACC)
			return -1;
		if (split(item, in, ':', &n1, &f2, &n2) < 0 ||
		    split(f2, n2, ':', &n2, &f3, &n3) < 0)
			return -1;
		/* Optional ":lo:hi", a byte range. */
		if (split(f3, n3, ':', &n3, &f4, &n4) == 0 &&
		    (split(f4, n4, ':', &n4, &f5, &n5) < 0 ||
		     parse_u64(f4, n4, &lo) < 0 ||
		     parse_u64(f5, n5, &hi) < 0 || lo >= hi))
			return -1;
		if (parse_u64(item, n1, &alloc) < 0 ||
		    parse_u64(f2, n2, &base) < 0 || parse_rw(f3, n3, &rw) < 0)
			return -1;
		if (sim_rec_add_range(r, alloc, base, lo, hi, rw) < 0)
			return -1;
		if (comma == NULL)
			break;
		s = comma + 1;
		n -= in + 1;
		if (n == 0)
			return -1;	/* trailing comma */
	}
	return 0;
}

static int parse_fault_list(const char *s, size_t n, struct sim_rec *r)
{
	if (n == 1 && s[0] == '-')
		return 0;
	while (n > 0) {
		const char *item = s, *f2, *f3, *f4;
		size_t in, n1, n2, n3, n4;
		uint64_t addr, size;
		unsigned rw;
		char why[SIM_WHY_MAX];
		const char *comma = memchr(s, ',', n);

		in = comma ? (size_t)(comma - s) : n;
		if (r->nfault >= SIM_REC_MAX_FAULT)
			return -1;
		if (split(item, in, ':', &n1, &f2, &n2) < 0 ||
		    split(f2, n2, ':', &n2, &f3, &n3) < 0 ||
		    split(f3, n3, ':', &n3, &f4, &n4) < 0)
			return -1;
		if (parse_u64(item, n1, &addr) < 0 ||
		    parse_u64(f2, n2, &size) < 0 || parse_rw(f3, n3, &rw) < 0)
			return -1;
		if (n4 == 0 || n4 >= sizeof(why))
			return -1;
		memcpy(why, f4, n4);
		why[n4] = '\0';
		if (sim_rec_add_fault(r, addr, size, rw, why) < 0)
			return -1;
		if (comma == NULL)
			break;
		s = comma + 1;
		n -= in + 1;
		if (n == 0)
			return -1;
	}
	return 0;
}

static int parse_kind(const char *s, size_t n, int *kind)
{
	int k;

	for (k = 0; k < SIM_REC_NKINDS; k++) {
		if (strlen(kind_names[k]) == n &&
		    memcmp(kind_names[k], s, n) == 0) {
			*kind = k;
			return 0;
		}
	}
	return -1;
}

#define HAVE_SEQ 0x01
#define HAVE_PID 0x02
#define HAVE_STREAM 0x04
#define HAVE_KIND 0x08
#define HAVE_START 0x10
#define HAVE_END 0x20
#define HAVE_REQUIRED 0x3f

/* One key=value token of an op line. */
static int parse_field(const char *key, size_t kn, const char *val, size_t vn,
		       struct sim_rec *r, unsigned *have)
{
	uint64_t v;

#define KEY(s) (kn == sizeof(s) - 1 && memcmp(key, s, kn) == 0)
	if (KEY("acc"))
		return parse_acc_list(val, vn, r);
	if (KEY("fault"))
		return parse_fault_list(val, vn, r);
	if (KEY("kind")) {
		*have |= HAVE_KIND;
		return parse_kind(val, vn, &r->kind);
	}
	if (KEY("name")) {
		if (vn == 0 || vn >= sizeof(r->name))
			return -1;
		memcpy(r->name, val, vn);
		r->name[vn] = '\0';
		return 0;
	}
	if (!(KEY("v") || KEY("seq") || KEY("pid") || KEY("ctx") ||
	      KEY("dev") || KEY("stream") || KEY("graph") || KEY("start") ||
	      KEY("end")))
		return 0;	/* unknown key: a newer writer, ignore */
	if (parse_u64(val, vn, &v) < 0)
		return -1;
	if (KEY("v")) {
		if (v != SIM_LOG_VERSION)
			return -1;
	} else if (KEY("seq")) {
		r->seq = v;
		*have |= HAVE_SEQ;
	} else if (KEY("pid")) {
		if (v > 0x7fffffff)
			return -1;
		r->pid = (long)v;
		*have |= HAVE_PID;
	} else if (KEY("ctx")) {
		r->ctx = v;
	} else if (KEY("dev")) {
		if (v > 0xffff)
			return -1;
		r->dev = (int)v;
	} else if (KEY("stream")) {
		r->stream = v;
		*have |= HAVE_STREAM;
	} else if (KEY("graph")) {
		r->graph = v;
	} else if (KEY("start")) {
		r->start = v;
		*have |= HAVE_START;
	} else {
		r->end = v;
		*have |= HAVE_END;
	}
	return 0;
#undef KEY
}

int sim_rec_parse(const char *line, struct sim_rec *r, char *err,
		  size_t errlen)
{
	size_t n = strnlen(line, SIM_LINE_MAX + 1);
	unsigned have = 0;
	const char *p, *end;

	memset(r, 0, sizeof(*r));
	if (n > SIM_LINE_MAX)
		return fail(err, errlen, "line longer than %d bytes",
			    SIM_LINE_MAX);
	while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
		n--;
	p = line;
	end = line + n;
	while (p < end && (*p == ' ' || *p == '\t'))
		p++;
	if (p == end || *p == '#')
		return 1;
	if (end - p < 3 || memcmp(p, "op ", 3) != 0)
		return fail(err, errlen, "not an op line");
	p += 3;
	while (p < end) {
		const char *tok = p, *eq;
		size_t tn;

		while (p < end && *p != ' ')
			p++;
		tn = (size_t)(p - tok);
		while (p < end && *p == ' ')
			p++;
		if (tn == 0)
			continue;
		eq = memchr(tok, '=', tn);
		if (eq == NULL || eq == tok)
			return fail(err, errlen,
				    "field without key=value: %.*s",
				    (int)(tn > 40 ? 40 : tn), tok);
		if (parse_field(tok, (size_t)(eq - tok), eq + 1,
				tn - (size_t)(eq - tok) - 1, r, &have) < 0) {
			sim_rec_free(r);
			return fail(err, errlen, "bad field: %.*s",
				    (int)(tn > 60 ? 60 : tn), tok);
		}
	}
	if ((have & HAVE_REQUIRED) != HAVE_REQUIRED) {
		sim_rec_free(r);
		return fail(err, errlen,
			    "missing seq, pid, stream, kind, start or end");
	}
	if (r->end < r->start) {
		sim_rec_free(r);
		return fail(err, errlen, "end before start");
	}
	return 0;
}
