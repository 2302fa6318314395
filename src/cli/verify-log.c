/*
 * verify-log.c - parses and compares `kmux verify` logs (see
 * verify-log.h).  Lines come from programs under test, so they are checked
 * field by field and bounded; nothing in them is trusted.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "verify-log.h"

#define VLOG_LINE_MAX	8192

/* "key=" at *p: advance past it. */
static int expect_key(const char **p, const char *key)
{
	size_t n = strlen(key);

	if (strncmp(*p, key, n) != 0 || (*p)[n] != '=')
		return -EINVAL;
	*p += n + 1;
	return 0;
}

static int parse_u64(const char **p, int base, uint64_t *out)
{
	char *end;
	unsigned long long v;

	if (**p < '0' || **p > 'f' || (**p > '9' && **p < 'a'))
		return -EINVAL;
	errno = 0;
	v = strtoull(*p, &end, base);
	if (errno || end == *p || (*end != ' ' && *end != '\0'))
		return -EINVAL;
	*out = v;
	*p = end;
	return 0;
}

static void skip_space(const char **p)
{
	while (**p == ' ')
		(*p)++;
}

int vlog_parse_line(const char *line, long *pid, struct vlog_copy *c)
{
	const char *p = line, *k;
	uint64_t v;
	size_t n;

	memset(c, 0, sizeof(*c));
	if (strncmp(p, "copy ", 5) != 0)
		return -EINVAL;
	p += 5;
	if (expect_key(&p, "pid") || parse_u64(&p, 10, &v) || v > 0x7fffffff)
		return -EINVAL;
	*pid = (long)v;
	skip_space(&p);
	if (expect_key(&p, "idx") || parse_u64(&p, 10, &c->idx))
		return -EINVAL;
	skip_space(&p);
	if (expect_key(&p, "thr") || parse_u64(&p, 10, &v) || !v ||
	    v > 0x7fffffff)
		return -EINVAL;
	c->thread = (unsigned)v;
	skip_space(&p);
	if (expect_key(&p, "bytes") || parse_u64(&p, 10, &c->bytes))
		return -EINVAL;
	skip_space(&p);
	if (expect_key(&p, "hash"))
		return -EINVAL;
	if (*p == '-' && (p[1] == ' ' || !p[1])) {
		p++;
	} else {
		k = p;
		if (parse_u64(&p, 16, &c->hash) || p - k != 16)
			return -EINVAL;
		c->hashed = 1;
	}
	skip_space(&p);
	if (expect_key(&p, "kernels"))
		return -EINVAL;
	n = strcspn(p, " \n");
	if (!n || p[n] == ' ')
		return -EINVAL;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)p[i] <= ' ' || (unsigned char)p[i] > '~')
			return -EINVAL;
	c->kernels = strndup(p, n);
	return c->kernels ? 0 : -ENOMEM;
}

/* " key=N" with N decimal, at most max. */
static int sched_field(const char **p, const char *key, uint64_t max,
		       uint64_t *out)
{
	skip_space(p);
	if (expect_key(p, key) || parse_u64(p, 10, out) || *out > max)
		return -EINVAL;
	return 0;
}

int vlog_parse_sched(const char *line, long *pid, struct vlog_sched *s)
{
	const char *p = line;
	uint64_t v, streams;

	memset(s, 0, sizeof(*s));
	if (strncmp(p, "sched ", 6) != 0)
		return -EINVAL;
	p += 6;
	if (sched_field(&p, "pid", 0x7fffffff, &v))
		return -EINVAL;
	*pid = (long)v;
	if (sched_field(&p, "streams", 64, &streams) ||
	    sched_field(&p, "contexts", UINT32_MAX, &s->contexts) ||
	    sched_field(&p, "off", UINT32_MAX, &s->off) ||
	    sched_field(&p, "ops", UINT64_MAX, &s->ops) || *p)
		return -EINVAL;
	s->procs = 1;
	s->off_procs = streams == 0;
	return 0;
}

int vlog_parse_placed(const char *line, long *pid)
{
	const char *p = line;
	uint64_t v;

	if (strncmp(p, "placed ", 7) != 0)
		return -EINVAL;
	p += 7;
	if (sched_field(&p, "pid", 0x7fffffff, &v) || *p)
		return -EINVAL;
	*pid = (long)v;
	return 0;
}

static uint64_t add_sat(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

static void vlog_sched_add(struct vlog_sched *sum, const struct vlog_sched *s)
{
	sum->procs += s->procs;
	sum->off_procs += s->off_procs;
	sum->contexts = add_sat(sum->contexts, s->contexts);
	sum->off = add_sat(sum->off, s->off);
	sum->ops = add_sat(sum->ops, s->ops);
}

const char *vlog_unscheduled(const struct vlog *l, char *buf, size_t len)
{
	const struct vlog_sched *s = &l->sched;

	if (s->off_procs)
		snprintf(buf, len, "scheduling was off in %zu of %zu "
			 "process(es): KMUX_STREAMS unset or bad there, or "
			 "KMUX_BARRIER_KERNELS bad; the preload says which",
			 s->off_procs, s->procs);
	else if (s->ops || s->placed)
		return NULL;
	else if (!s->procs)
		snprintf(buf, len, "no process recorded what its scheduler "
			 "did: none placed an operation, and none reached "
			 "exit() under the preload");
	else if (s->off)
		snprintf(buf, len, "%llu context(s) switched off before the "
			 "scheduler placed any operation",
			 (unsigned long long)s->off);
	else
		snprintf(buf, len, "the scheduler placed no operation: CMD "
			 "put no work on a default stream, or it all passed "
			 "through");
	return buf;
}

static struct vlog_proc *vlog_proc_get(struct vlog *l, long pid)
{
	struct vlog_proc *grown;
	size_t cap;

	for (size_t i = 0; i < l->n; i++)
		if (l->proc[i].pid == pid)
			return &l->proc[i];
	if (l->n == l->cap) {
		cap = l->cap ? 2 * l->cap : 4;
		grown = realloc(l->proc, cap * sizeof(*grown));
		if (!grown)
			return NULL;
		l->proc = grown;
		l->cap = cap;
	}
	memset(&l->proc[l->n], 0, sizeof(l->proc[0]));
	l->proc[l->n].pid = pid;
	return &l->proc[l->n++];
}

static int vlog_add(struct vlog *l, long pid, struct vlog_copy *c)
{
	struct vlog_proc *p = vlog_proc_get(l, pid);
	struct vlog_copy *grown;
	size_t cap;

	if (!p)
		return -ENOMEM;
	if (p->n == p->cap) {
		cap = p->cap ? 2 * p->cap : 16;
		grown = realloc(p->copy, cap * sizeof(*grown));
		if (!grown)
			return -ENOMEM;
		p->copy = grown;
		p->cap = cap;
	}
	p->copy[p->n++] = *c;
	if (c->thread > p->threads)
		p->threads = c->thread;
	return 0;
}

static int copy_cmp(const void *x, const void *y)
{
	const struct vlog_copy *a = x, *b = y;

	return a->idx < b->idx ? -1 : a->idx > b->idx;
}

/* Sorted by number, and every number from 0 there exactly once. */
static int vlog_finish(struct vlog *l, char *err, size_t errlen)
{
	for (size_t i = 0; i < l->n; i++) {
		struct vlog_proc *p = &l->proc[i];

		qsort(p->copy, p->n, sizeof(p->copy[0]), copy_cmp);
		for (size_t k = 0; k < p->n; k++) {
			if (p->copy[k].idx == k)
				continue;
			snprintf(err, errlen, "process %ld: copy %zu is %s",
				 p->pid, k, p->copy[k].idx < k ? "repeated"
							       : "missing");
			return -EINVAL;
		}
	}
	return 0;
}

int vlog_read(FILE *f, struct vlog *l, char *err, size_t errlen)
{
	char line[VLOG_LINE_MAX];
	struct vlog_sched s;
	struct vlog_copy c;
	size_t lineno = 0, len;
	long pid;
	int r;

	memset(l, 0, sizeof(*l));
	if (errlen)
		err[0] = '\0';
	while (fgets(line, sizeof(line), f)) {
		lineno++;
		len = strlen(line);
		if (len && line[len - 1] != '\n' && !feof(f)) {
			snprintf(err, errlen, "line %zu is too long", lineno);
			return -EINVAL;
		}
		if (len && line[len - 1] == '\n')
			line[--len] = '\0';
		if (!len || line[0] == '#')
			continue;
		if (!strncmp(line, "sched ", 6)) {
			if (vlog_parse_sched(line, &pid, &s)) {
				snprintf(err, errlen, "line %zu is malformed",
					 lineno);
				return -EINVAL;
			}
			vlog_sched_add(&l->sched, &s);
			continue;
		}
		if (!strncmp(line, "placed ", 7)) {
			if (vlog_parse_placed(line, &pid)) {
				snprintf(err, errlen, "line %zu is malformed",
					 lineno);
				return -EINVAL;
			}
			l->sched.placed++;
			continue;
		}
		r = vlog_parse_line(line, &pid, &c);
		if (r) {
			snprintf(err, errlen, "line %zu is malformed", lineno);
			return r;
		}
		r = vlog_add(l, pid, &c);
		if (r) {
			free(c.kernels);
			return r;
		}
	}
	if (ferror(f)) {
		snprintf(err, errlen, "read error");
		return -EIO;
	}
	return vlog_finish(l, err, errlen);
}

void vlog_release(struct vlog *l)
{
	for (size_t i = 0; i < l->n; i++) {
		for (size_t k = 0; k < l->proc[i].n; k++)
			free(l->proc[i].copy[k].kernels);
		free(l->proc[i].copy);
	}
	free(l->proc);
	memset(l, 0, sizeof(*l));
}

size_t vlog_count(const struct vlog *l)
{
	size_t n = 0;

	for (size_t i = 0; i < l->n; i++)
		n += l->proc[i].n;
	return n;
}

static int vlog_copy_differs(const struct vlog_copy *a,
			     const struct vlog_copy *b, const char **what)
{
	if (a->bytes != b->bytes)
		*what = "different sizes";
	else if (a->hashed != b->hashed)
		*what = "known complete in one run only";
	else if (a->hashed && a->hash != b->hash)
		*what = "different contents";
	else
		return 0;
	return 1;
}

/* Order for the multiset comparison: size, completion, hash, number. */
static int copy_key_cmp(const void *x, const void *y)
{
	const struct vlog_copy *a = *(const struct vlog_copy *const *)x;
	const struct vlog_copy *b = *(const struct vlog_copy *const *)y;

	if (a->bytes != b->bytes)
		return a->bytes < b->bytes ? -1 : 1;
	if (a->hashed != b->hashed)
		return a->hashed < b->hashed ? -1 : 1;
	if (a->hashed && a->hash != b->hash)
		return a->hash < b->hash ? -1 : 1;
	return a->idx < b->idx ? -1 : a->idx > b->idx;
}

static int copy_same(const struct vlog_copy *a, const struct vlog_copy *b)
{
	const char *what;

	return !vlog_copy_differs(a, b, &what);
}

static const struct vlog_copy **sorted_refs(const struct vlog_proc *p)
{
	const struct vlog_copy **r = calloc(p->n + 1, sizeof(*r));

	if (!r)
		return NULL;
	for (size_t i = 0; i < p->n; i++)
		r[i] = &p->copy[i];
	qsort(r, p->n, sizeof(*r), copy_key_cmp);
	return r;
}

/*
 * Several threads: the copies as multisets.  Marks what matches, then
 * reports the unmatched copy with the lowest number (of a, else of b).
 * -ENOMEM, 0 same, 1 different.
 */
static int vlog_compare_set(const struct vlog_proc *pa,
			    const struct vlog_proc *pb, struct vlog_diff *d)
{
	const struct vlog_copy **ra = sorted_refs(pa), **rb = sorted_refs(pb);
	const struct vlog_copy *fa = NULL, *fb = NULL;
	size_t i = 0, k = 0;
	int r = -ENOMEM;

	if (!ra || !rb)
		goto out;
	/* A merge of the two sorted lists: what is left over has no match. */
	while (i < pa->n || k < pb->n) {
		if (i < pa->n && k < pb->n && copy_same(ra[i], rb[k])) {
			i++;
			k++;
		} else if (k >= pb->n ||
			   (i < pa->n && copy_key_cmp(&ra[i], &rb[k]) < 0)) {
			if (!fa || ra[i]->idx < fa->idx)
				fa = ra[i];
			i++;
		} else {
			if (!fb || rb[k]->idx < fb->idx)
				fb = rb[k];
			k++;
		}
	}
	r = 0;
	if (fa || fb) {
		d->pos = fa ? fa->idx : fb->idx;
		d->a = fa;
		d->b = fa ? NULL : fb;
		d->what = "no match in the other run (the copies of several "
			  "threads are compared as a set)";
		r = 1;
	}
out:
	free(ra);
	free(rb);
	return r;
}

int vlog_compare(const struct vlog *a, const struct vlog *b,
		 struct vlog_diff *d)
{
	size_t np = a->n > b->n ? a->n : b->n;
	int r;

	memset(d, 0, sizeof(*d));
	for (size_t i = 0; i < np; i++) {
		static const struct vlog_proc none;
		const struct vlog_proc *pa = i < a->n ? &a->proc[i] : &none;
		const struct vlog_proc *pb = i < b->n ? &b->proc[i] : &none;
		size_t n = pa->n > pb->n ? pa->n : pb->n;

		d->proc = i;
		if (pa->threads > 1 || pb->threads > 1) {
			r = vlog_compare_set(pa, pb, d);
			if (r)
				return r < 0 ? r : 1;
			continue;
		}
		for (size_t k = 0; k < n; k++) {
			d->pos = k;
			d->a = k < pa->n ? &pa->copy[k] : NULL;
			d->b = k < pb->n ? &pb->copy[k] : NULL;
			if (!d->a || !d->b) {
				d->what = "made in one run only";
				return 1;
			}
			if (vlog_copy_differs(d->a, d->b, &d->what))
				return 1;
		}
	}
	memset(d, 0, sizeof(*d));
	return 0;
}
