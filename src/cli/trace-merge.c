/*
 * trace-merge.c - owns the reading side of the preload's trace files: the
 * line parser, the merge of every process into one Chrome/Perfetto trace
 * (tracks, lanes, GPU times, the device-memory counter) and the summary.
 *
 * Output layout (docs/kmux-trace.1 has the reference):
 *   {"traceEvents":[...], "displayTimeUnit":"ns",
 *    "kmux":{"version":1, "processes":[...], "summary":{...}}}
 * Each process keeps its real pid.  Within it, every stream gets a track
 * (a Chrome "thread": tid 1, 2, ... in order of first use), and every host
 * thread that synchronized or allocated gets a "host thread N" track.  Host
 * call times of different threads on one stream may overlap without
 * nesting, which trace viewers cannot draw on one track: such events go to
 * extra lanes of that stream ("stream 0x.. #2").
 *
 * Events are held in one array in memory, but written one by one, so cJSON
 * never holds more than one event's tree.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "demangle.h"
#include "trace-merge.h"

#define WARNINGS_KEPT	32
#define LAUNCH_IDS_MAX	4096		/* allocation ids on one launch */
#define TOP_KERNELS	10
#define NAME_COL	28

/*
 * Bounds that keep every sum and difference of times inside int64: t0 and
 * t below 2^61, durations below ~31 years.
 */
#define T0_MAX		2.0e18
#define T_MIN		-1.0e18
#define T_MAX		2.0e18
#define D_MAX		1.0e18

#define STREAM_LEGACY		0x1ull
#define STREAM_PER_THREAD	0x2ull

static const char *const type_names[] = {
	[TL_PROCESS] = "process", [TL_LAUNCH] = "launch", [TL_GPU] = "gpu",
	[TL_COPY] = "copy", [TL_SYNC] = "sync", [TL_ALLOC] = "alloc",
	[TL_FREE] = "free", [TL_EXIT] = "exit", [TL_MM] = "mm",
};

static const char *const api_names[] = {
	[TL_API_LAUNCH] = "cuLaunchKernel",
	[TL_API_LAUNCH_EX] = "cuLaunchKernelEx",
	[TL_API_LAUNCH_COOP] = "cuLaunchCooperativeKernel",
	[TL_API_GRAPH] = "cuGraphLaunch",
	[TL_API_HOST_FUNC] = "cuLaunchHostFunc",
};

static const char *const copy_names[] = {
	[TL_COPY_HTOD] = "HtoD", [TL_COPY_DTOH] = "DtoH",
	[TL_COPY_DTOD] = "DtoD", [TL_COPY_ANY] = "any",
	[TL_COPY_PEER] = "peer", [TL_COPY_2D] = "2D", [TL_COPY_3D] = "3D",
	[TL_COPY_ARRAY] = "array", [TL_MEMSET] = "memset",
};

/* What a copy is called in the trace viewer. */
static const char *const copy_labels[] = {
	[TL_COPY_HTOD] = "HtoD", [TL_COPY_DTOH] = "DtoH",
	[TL_COPY_DTOD] = "DtoD", [TL_COPY_ANY] = "copy",
	[TL_COPY_PEER] = "PtoP", [TL_COPY_2D] = "copy 2D",
	[TL_COPY_3D] = "copy 3D", [TL_COPY_ARRAY] = "copy array",
	[TL_MEMSET] = "memset",
};

static const char *const sync_names[] = {
	[TL_SYNC_CTX] = "ctx", [TL_SYNC_STREAM] = "stream",
	[TL_SYNC_EVENT] = "event",
	[TL_SYNC_STREAM_WAIT_EVENT] = "stream_wait_event",
	[TL_SYNC_EVENT_RECORD] = "event_record",
	[TL_SYNC_STREAM_QUERY] = "stream_query",
	[TL_SYNC_EVENT_QUERY] = "event_query",
};

static const char *const sync_apis[] = {
	[TL_SYNC_CTX] = "cuCtxSynchronize",
	[TL_SYNC_STREAM] = "cuStreamSynchronize",
	[TL_SYNC_EVENT] = "cuEventSynchronize",
	[TL_SYNC_STREAM_WAIT_EVENT] = "cuStreamWaitEvent",
	[TL_SYNC_EVENT_RECORD] = "cuEventRecord",
	[TL_SYNC_STREAM_QUERY] = "cuStreamQuery",
	[TL_SYNC_EVENT_QUERY] = "cuEventQuery",
};

static const char *const alloc_names[] = {
	[TL_ALLOC_DEVICE] = "device", [TL_ALLOC_MANAGED] = "managed",
	[TL_ALLOC_HOST] = "host", [TL_ALLOC_VMM] = "vmm",
};

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

/* --- parsing one line --------------------------------------------------- */

static int perr(char *err, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int perr(char *err, size_t len, const char *fmt, ...)
{
	va_list ap;

	if (err && len) {
		va_start(ap, fmt);
		vsnprintf(err, len, fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

/*
 * Field getters: 0 when found and valid, 1 when absent and optional, -EINVAL
 * (reason in err) otherwise.
 */
struct pf {
	const cJSON *o;
	char *err;
	size_t errlen;
};

static const cJSON *pf_item(struct pf *p, const char *key)
{
	return cJSON_GetObjectItemCaseSensitive(p->o, key);
}

static int pf_num(struct pf *p, const char *key, int req, double min,
		  double max, int integer, double *out)
{
	const cJSON *it = pf_item(p, key);
	double v;

	if (!it)
		return req ? perr(p->err, p->errlen, "missing \"%s\"", key) : 1;
	if (!cJSON_IsNumber(it) || !isfinite(it->valuedouble))
		return perr(p->err, p->errlen, "\"%s\" is not a number", key);
	v = it->valuedouble;
	if (v < min || v > max || (integer && v != floor(v)))
		return perr(p->err, p->errlen, "\"%s\" is out of range", key);
	*out = v;
	return 0;
}

static int pf_i64(struct pf *p, const char *key, int req, double min,
		  double max, int64_t *out)
{
	double v;
	int r = pf_num(p, key, req, min, max, 1, &v);

	if (r == 0)
		*out = (int64_t)v;
	return r;
}

static int pf_int(struct pf *p, const char *key, int req, double min,
		  double max, int *out)
{
	double v;
	int r = pf_num(p, key, req, min, max, 1, &v);

	if (r == 0)
		*out = (int)v;
	return r;
}

/* 2^64 is exact in a double; anything below it fits a uint64_t. */
static int pf_u64(struct pf *p, const char *key, int req, uint64_t *out)
{
	const cJSON *it = pf_item(p, key);
	double v;

	if (!it)
		return req ? perr(p->err, p->errlen, "missing \"%s\"", key) : 1;
	if (!cJSON_IsNumber(it) || !isfinite(it->valuedouble))
		return perr(p->err, p->errlen, "\"%s\" is not a number", key);
	v = it->valuedouble;
	if (v < 0 || v >= 18446744073709551616.0 || v != floor(v))
		return perr(p->err, p->errlen, "\"%s\" is out of range", key);
	*out = (uint64_t)v;
	return 0;
}

/* "0x" and 1 to 16 hex digits: handles and addresses exceed a double. */
static int pf_hex(struct pf *p, const char *key, int req, uint64_t *out)
{
	const cJSON *it = pf_item(p, key);
	const char *s;
	uint64_t v = 0;
	size_t n;

	if (!it)
		return req ? perr(p->err, p->errlen, "missing \"%s\"", key) : 1;
	s = cJSON_GetStringValue(it);
	if (!s || s[0] != '0' || (s[1] != 'x' && s[1] != 'X'))
		return perr(p->err, p->errlen, "\"%s\" is not a hex string",
			    key);
	s += 2;
	n = strlen(s);
	if (n == 0 || n > 16)
		return perr(p->err, p->errlen, "\"%s\" is not a hex string",
			    key);
	for (; *s; s++) {
		int c = (unsigned char)*s, d;

		if (c >= '0' && c <= '9')
			d = c - '0';
		else if (c >= 'a' && c <= 'f')
			d = c - 'a' + 10;
		else if (c >= 'A' && c <= 'F')
			d = c - 'A' + 10;
		else
			return perr(p->err, p->errlen,
				    "\"%s\" is not a hex string", key);
		v = v << 4 | (uint64_t)d;
	}
	*out = v;
	return 0;
}

static int pf_str(struct pf *p, const char *key, int req, const char **out)
{
	const cJSON *it = pf_item(p, key);

	if (!it)
		return req ? perr(p->err, p->errlen, "missing \"%s\"", key) : 1;
	if (!cJSON_IsString(it) || !it->valuestring)
		return perr(p->err, p->errlen, "\"%s\" is not a string", key);
	*out = it->valuestring;
	return 0;
}

static int pf_enum(struct pf *p, const char *key, const char *const *tab,
		   size_t n, int *out)
{
	const char *s;
	int r = pf_str(p, key, 1, &s);

	if (r)
		return r;
	for (size_t i = 0; i < n; i++) {
		if (tab[i] && strcmp(tab[i], s) == 0) {
			*out = (int)i;
			return 0;
		}
	}
	return perr(p->err, p->errlen, "unknown %s \"%.40s\"", key, s);
}

static int pf_bool(struct pf *p, const char *key, int *out)
{
	const cJSON *it = pf_item(p, key);

	if (!it)
		return 1;
	if (cJSON_IsBool(it))
		*out = cJSON_IsTrue(it);
	else if (cJSON_IsNumber(it) && isfinite(it->valuedouble))
		*out = it->valuedouble != 0;
	else
		return perr(p->err, p->errlen, "\"%s\" is not a boolean", key);
	return 0;
}

static int pf_dim3(struct pf *p, const char *key, unsigned out[3])
{
	const cJSON *it = pf_item(p, key), *e;
	int i = 0;

	if (!it)
		return 1;
	if (!cJSON_IsArray(it) || cJSON_GetArraySize(it) != 3)
		return perr(p->err, p->errlen, "\"%s\" is not [x,y,z]", key);
	cJSON_ArrayForEach(e, it) {
		if (!cJSON_IsNumber(e) || !(e->valuedouble >= 0) ||
		    e->valuedouble > 4294967295.0 ||
		    e->valuedouble != floor(e->valuedouble))
			return perr(p->err, p->errlen,
				    "\"%s\" is not [x,y,z]", key);
		out[i++] = (unsigned)e->valuedouble;
	}
	return 0;
}

static int pf_ids(struct pf *p, const char *key, uint64_t **out, size_t *n)
{
	const cJSON *it = pf_item(p, key), *e;
	int size;

	*out = NULL;
	*n = 0;
	if (!it)
		return 1;
	if (!cJSON_IsArray(it))
		return perr(p->err, p->errlen, "\"%s\" is not an array", key);
	size = cJSON_GetArraySize(it);
	if (size > LAUNCH_IDS_MAX)
		return perr(p->err, p->errlen, "\"%s\" is too long", key);
	if (size == 0)
		return 0;
	*out = malloc((size_t)size * sizeof(**out));
	if (!*out)
		return perr(p->err, p->errlen, "out of memory");
	cJSON_ArrayForEach(e, it) {
		if (!cJSON_IsNumber(e) || !(e->valuedouble >= 0) ||
		    e->valuedouble >= 18446744073709551616.0 ||
		    e->valuedouble != floor(e->valuedouble)) {
			free(*out);
			*out = NULL;
			*n = 0;
			return perr(p->err, p->errlen,
				    "\"%s\" holds a bad id", key);
		}
		(*out)[(*n)++] = (uint64_t)e->valuedouble;
	}
	return 0;
}

static char *dup_or_fail(const char *s, int *r, struct pf *p)
{
	char *d = strdup(s);

	if (!d)
		*r = perr(p->err, p->errlen, "out of memory");
	return d;
}

static int parse_process(struct pf *p, struct trace_line *l)
{
	const char *cmd = "";
	int version = TRACE_LINE_VERSION, r = 0;

	if (pf_int(p, "version", 0, 0, 1e9, &version) < 0 ||
	    pf_int(p, "pid", 1, 1, 2147483647.0, &l->pid) < 0 ||
	    pf_int(p, "ppid", 0, 0, 2147483647.0, &l->ppid) < 0 ||
	    pf_str(p, "cmdline", 0, &cmd) < 0 ||
	    pf_i64(p, "t0", 1, 0, T0_MAX, &l->t0) < 0 ||
	    pf_i64(p, "wall0", 0, 0, 9.2e18, &l->wall0) < 0 ||
	    pf_bool(p, "timing", &l->timing) < 0)
		return -EINVAL;
	if (version != TRACE_LINE_VERSION)
		return perr(p->err, p->errlen,
			    "unsupported format version %d", version);
	l->cmdline = dup_or_fail(cmd, &r, p);
	return r;
}

static int parse_times(struct pf *p, struct trace_line *l, int with_tid,
		       int with_d)
{
	if ((with_tid &&
	     pf_int(p, "tid", 1, -2147483648.0, 2147483647.0, &l->tid) < 0) ||
	    pf_i64(p, "t", 1, T_MIN, T_MAX, &l->t) < 0 ||
	    (with_d && pf_i64(p, "d", 1, 0, D_MAX, &l->d) < 0))
		return -EINVAL;
	return 0;
}

static int parse_launch(struct pf *p, struct trace_line *l)
{
	const char *name = NULL;
	double kflags = 0;
	int r = 0;

	if (parse_times(p, l, 1, 1) ||
	    pf_enum(p, "api", api_names, NELEM(api_names), &l->api) < 0 ||
	    pf_str(p, "name", 0, &name) < 0 ||
	    pf_hex(p, "s", 1, &l->stream) < 0 ||
	    pf_dim3(p, "grid", l->grid) < 0 ||
	    pf_dim3(p, "block", l->block) < 0 ||
	    pf_u64(p, "shmem", 0, &l->shmem) < 0 ||
	    pf_int(p, "r", 0, -2147483648.0, 2147483647.0, &l->result) < 0 ||
	    pf_num(p, "kflags", 0, 0, 4294967295.0, 1, &kflags) < 0 ||
	    pf_u64(p, "seq", 0, &l->seq) < 0 ||
	    pf_bool(p, "captured", &l->captured) < 0 ||
	    pf_ids(p, "allocs", &l->allocs, &l->nallocs) < 0)
		return -EINVAL;
	l->kflags = (unsigned)kflags;
	if (l->api <= TL_API_LAUNCH_COOP && !name)
		name = "?";
	if (name)
		l->name = dup_or_fail(name, &r, p);
	return r;
}

static int parse_copy(struct pf *p, struct trace_line *l)
{
	if (parse_times(p, l, 1, 1) ||
	    pf_enum(p, "kind", copy_names, NELEM(copy_names), &l->kind) < 0 ||
	    pf_u64(p, "bytes", 1, &l->bytes) < 0 ||
	    pf_hex(p, "dst", 0, &l->dst) < 0 ||
	    pf_hex(p, "src", 0, &l->src) < 0 ||
	    pf_hex(p, "s", 1, &l->stream) < 0 ||
	    pf_bool(p, "async", &l->async) < 0 ||
	    pf_int(p, "r", 0, -2147483648.0, 2147483647.0, &l->result) < 0)
		return -EINVAL;
	return 0;
}

static int parse_sync(struct pf *p, struct trace_line *l)
{
	if (parse_times(p, l, 1, 1) ||
	    pf_enum(p, "kind", sync_names, NELEM(sync_names), &l->kind) < 0 ||
	    pf_hex(p, "obj", 0, &l->obj) < 0 ||
	    pf_int(p, "r", 0, -2147483648.0, 2147483647.0, &l->result) < 0)
		return -EINVAL;
	return 0;
}

static int parse_alloc(struct pf *p, struct trace_line *l)
{
	l->dev = -1;
	if (parse_times(p, l, 1, 0) ||
	    pf_u64(p, "id", 1, &l->id) < 0 ||
	    pf_hex(p, "base", 0, &l->base) < 0 ||
	    pf_u64(p, "size", 1, &l->size) < 0 ||
	    pf_enum(p, "kind", alloc_names, NELEM(alloc_names), &l->kind) < 0 ||
	    pf_int(p, "dev", 0, -1, 1e6, &l->dev) < 0)
		return -EINVAL;
	return 0;
}

int trace_line_parse(const char *s, size_t len, struct trace_line *out,
		     char *err, size_t errlen)
{
	const char *end = NULL;
	cJSON *root;
	struct pf p = { NULL, err, errlen };
	int type = 0, r;

	memset(out, 0, sizeof(*out));
	if (err && errlen)
		err[0] = '\0';
	root = cJSON_ParseWithLengthOpts(s, len, &end, 0);
	if (!root)
		return perr(err, errlen, "not JSON");
	while (end && end < s + len && isspace((unsigned char)*end))
		end++;
	if (!end || end != s + len) {
		r = perr(err, errlen, "trailing characters after JSON");
		goto out;
	}
	if (!cJSON_IsObject(root)) {
		r = perr(err, errlen, "not a JSON object");
		goto out;
	}
	p.o = root;
	r = pf_enum(&p, "type", type_names, NELEM(type_names), &type);
	if (r) {
		r = -EINVAL;
		goto out;
	}
	out->type = (enum trace_line_type)type;
	switch (out->type) {
	case TL_PROCESS:
		r = parse_process(&p, out);
		break;
	case TL_LAUNCH:
		r = parse_launch(&p, out);
		break;
	case TL_GPU:
		r = pf_u64(&p, "seq", 1, &out->seq);
		if (!r && out->seq == 0)
			r = perr(err, errlen, "\"seq\" is out of range");
		if (!r)
			r = parse_times(&p, out, 0, 1);
		break;
	case TL_COPY:
		r = parse_copy(&p, out);
		break;
	case TL_SYNC:
		r = parse_sync(&p, out);
		break;
	case TL_ALLOC:
	case TL_FREE:
		r = parse_alloc(&p, out);
		break;
	case TL_EXIT:
		r = parse_times(&p, out, 0, 0);
		if (!r && pf_u64(&p, "timing_dropped", 0,
				 &out->timing_dropped) < 0)
			r = -EINVAL;
		break;
	case TL_MM:
		r = parse_times(&p, out, 0, 0);
		if (!r && (pf_u64(&p, "resident", 1, &out->resident) < 0 ||
			   pf_u64(&p, "evicted", 1, &out->evicted) < 0 ||
			   pf_u64(&p, "reserved", 1, &out->reserved) < 0))
			r = -EINVAL;
		break;
	}
out:
	cJSON_Delete(root);
	if (r < 0) {
		trace_line_release(out);
		return -EINVAL;
	}
	return 0;
}

void trace_line_release(struct trace_line *l)
{
	free(l->cmdline);
	free(l->name);
	free(l->allocs);
	l->cmdline = l->name = NULL;
	l->allocs = NULL;
	l->nallocs = 0;
}

/* --- small containers ---------------------------------------------------- */

static int grow(void **p, size_t *cap, size_t need, size_t size)
{
	size_t n = *cap ? *cap : 16;
	void *q;

	if (need <= *cap)
		return 0;
	while (n < need)
		n *= 2;
	q = realloc(*p, n * size);
	if (!q)
		return -ENOMEM;
	*p = q;
	*cap = n;
	return 0;
}

#define GROW(arr, cap, need) grow((void **)&(arr), &(cap), (need), sizeof(*(arr)))

/* Open addressing map from a key pair to a value. */
struct pmap_ent {
	uint64_t a, b, v;
	int used;
};

struct pmap {
	struct pmap_ent *e;
	size_t cap, n;
};

static uint64_t mix(uint64_t a, uint64_t b)
{
	uint64_t h = a * 0x9e3779b97f4a7c15ull ^ (b + 0x632be59bd9b4e019ull);

	h ^= h >> 31;
	h *= 0xbf58476d1ce4e5b9ull;
	h ^= h >> 29;
	return h;
}

static struct pmap_ent *pmap_slot(const struct pmap *m, uint64_t a,
				  uint64_t b)
{
	size_t i = mix(a, b) & (m->cap - 1);

	while (m->e[i].used && (m->e[i].a != a || m->e[i].b != b))
		i = (i + 1) & (m->cap - 1);
	return &m->e[i];
}

static struct pmap_ent *pmap_find(const struct pmap *m, uint64_t a,
				  uint64_t b)
{
	struct pmap_ent *e;

	if (!m->cap)
		return NULL;
	e = pmap_slot(m, a, b);
	return e->used ? e : NULL;
}

static int pmap_put(struct pmap *m, uint64_t a, uint64_t b, uint64_t v)
{
	struct pmap_ent *e;

	if ((m->n + 1) * 2 > m->cap) {
		struct pmap old = *m;
		size_t cap = m->cap ? m->cap * 2 : 64;

		m->e = calloc(cap, sizeof(*m->e));
		if (!m->e) {
			*m = old;
			return -ENOMEM;
		}
		m->cap = cap;
		m->n = 0;
		for (size_t i = 0; i < old.cap; i++) {
			if (old.e[i].used) {
				*pmap_slot(m, old.e[i].a, old.e[i].b) = old.e[i];
				m->n++;
			}
		}
		free(old.e);
	}
	e = pmap_slot(m, a, b);
	if (!e->used) {
		e->used = 1;
		e->a = a;
		e->b = b;
		m->n++;
	}
	e->v = v;
	return 0;
}

/*
 * Removal by backward-shift, so probes stay correct without tombstones.
 */
static void pmap_del(struct pmap *m, struct pmap_ent *e)
{
	size_t i = (size_t)(e - m->e), j = i, k;

	m->e[i].used = 0;
	m->n--;
	for (;;) {
		j = (j + 1) & (m->cap - 1);
		if (!m->e[j].used)
			return;
		k = mix(m->e[j].a, m->e[j].b) & (m->cap - 1);
		/* Move j back to i unless its home lies cyclically in (i, j]. */
		if (i <= j ? (i < k && k <= j) : (i < k || k <= j))
			continue;
		m->e[i] = m->e[j];
		m->e[j].used = 0;
		i = j;
	}
}

/* --- the merge model ------------------------------------------------------- */

struct mproc {
	int pid, ppid;
	char *cmdline;
	int64_t t0;		/* absolute ns, first segment */
	int64_t end;		/* absolute ns: exit, else the last event */
	int exited, timing, has_mem;
	uint64_t mem_left;	/* device bytes not freed at the end */
	uint32_t next_tid;
};

/* One event, host times absolute (ns on CLOCK_MONOTONIC). */
struct mev {
	uint8_t type;		/* TL_LAUNCH, TL_COPY, TL_SYNC, TL_ALLOC/FREE */
	uint8_t sub;		/* api, copy/sync/alloc kind */
	uint8_t async, has_gpu, captured;
	int32_t result;
	uint32_t proc;
	int32_t tid;
	int64_t t, d;		/* host */
	int64_t gt, gd;		/* GPU, when has_gpu */
	int64_t dt, dd;		/* displayed: GPU if known, else host */
	uint64_t stream;	/* launch, copy; sync: the object */
	uint64_t seq, shmem;
	uint64_t bytes, dst, src;	/* copy */
	uint64_t id, base, size;	/* alloc/free */
	int32_t dev;
	uint32_t name;		/* interned, or NO_NAME */
	uint32_t grid[3], block[3];
	uint32_t kflags;
	uint32_t ids_off, nids;
	uint32_t track, lane;
	uint64_t mem_after;	/* alloc/free: process device bytes after */
};

#define NO_NAME UINT32_MAX
#define HOST_TRACK_STREAM UINT64_MAX

struct mtrack {
	uint32_t proc;
	int host;
	uint64_t stream;	/* HOST_TRACK_STREAM for host tracks */
	int32_t tid;		/* per-thread stream / host thread, else 0 */
	int64_t first;
	uint32_t nlanes;
	uint32_t out_tid;	/* first Chrome tid; lanes follow */
};

struct gpurec {
	uint32_t proc;
	uint64_t seq;
	int64_t t, d;
};

/* A "mm" line: the memory manager's totals in one process after a change. */
struct mmrec {
	uint32_t proc;
	int64_t t;
	uint64_t resident, evicted, reserved;
};

struct kstat {
	uint64_t count, timed;
	int64_t total_ns;
};

struct trace_merge {
	struct mproc *procs;
	size_t nprocs, capprocs;
	struct mev *evs;
	size_t nevs, capevs;
	uint64_t *ids;
	size_t nids, capids;
	struct gpurec *gpus;
	size_t ngpus, capgpus;
	struct mmrec *mms;
	size_t nmms, capmms;

	char **names;		/* interned kernel names, as the driver gave them */
	char **dnames;		/* the same for display (demangled), or NULL */
	size_t ndnames;		/* names demangled so far */
	struct kstat *kstats;	/* parallel to names */
	size_t nnames, capnames, capkstats;
	struct pmap name_map;	/* hash -> candidates by probing */

	struct mtrack *tracks;
	size_t ntracks, captracks;
	struct pmap track_map;

	char *warnings[WARNINGS_KEPT];
	size_t nwarnings;

	uint32_t *order;	/* events in output order */
	uint32_t *memorder;	/* alloc/free events in time order */
	size_t nmem;

	int64_t base;		/* time zero of the trace: earliest t0 */
	struct trace_summary sum;
	int finished;
};

static void warn(struct trace_merge *m, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void warn(struct trace_merge *m, const char *fmt, ...)
{
	va_list ap;
	char *s;

	if (m->nwarnings++ >= WARNINGS_KEPT)
		return;
	va_start(ap, fmt);
	if (vasprintf(&s, fmt, ap) < 0)
		s = NULL;
	va_end(ap);
	m->warnings[m->nwarnings - 1] = s;
}

struct trace_merge *trace_merge_new(void)
{
	return calloc(1, sizeof(struct trace_merge));
}

void trace_merge_free(struct trace_merge *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->nprocs; i++)
		free(m->procs[i].cmdline);
	for (size_t i = 0; i < m->nnames; i++) {
		free(m->names[i]);
		if (m->dnames && i < m->ndnames)
			free(m->dnames[i]);
	}
	free(m->dnames);
	for (size_t i = 0; i < WARNINGS_KEPT && i < m->nwarnings; i++)
		free(m->warnings[i]);
	free(m->procs);
	free(m->evs);
	free(m->ids);
	free(m->gpus);
	free(m->mms);
	free(m->names);
	free(m->kstats);
	free(m->name_map.e);
	free(m->tracks);
	free(m->track_map.e);
	free(m->order);
	free(m->memorder);
	free(m->sum.kernels);
	free(m);
}

static uint64_t str_hash(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
	return h;
}

/*
 * Interned name index.  The map's key is (hash, k) for the k-th name with
 * that hash, so colliding names each get their own entry.
 */
static int name_intern(struct trace_merge *m, const char *s, uint32_t *out)
{
	uint64_t h = str_hash(s);
	struct pmap_ent *e;
	uint64_t k;

	for (k = 0; (e = pmap_find(&m->name_map, h, k)); k++) {
		if (strcmp(m->names[e->v], s) == 0) {
			*out = (uint32_t)e->v;
			return 0;
		}
	}
	if (GROW(m->names, m->capnames, m->nnames + 1) ||
	    GROW(m->kstats, m->capkstats, m->nnames + 1))
		return -ENOMEM;
	m->names[m->nnames] = strdup(s);
	if (!m->names[m->nnames] || pmap_put(&m->name_map, h, k, m->nnames)) {
		free(m->names[m->nnames]);
		return -ENOMEM;
	}
	memset(&m->kstats[m->nnames], 0, sizeof(m->kstats[0]));
	*out = (uint32_t)m->nnames++;
	return 0;
}

/*
 * Names for people: demangled once, when all input is read
 * (trace_merge_finish), since they are only displayed after that.
 */
static void names_demangle(struct trace_merge *m)
{
	if (m->dnames || !m->nnames)
		return;
	m->dnames = calloc(m->nnames, sizeof(*m->dnames));
	if (!m->dnames)
		return;	/* the driver's names will do */
	for (size_t k = 0; k < m->nnames; k++)
		m->dnames[k] = demangle_dup(m->names[k]);
	m->ndnames = m->nnames;
}

static const char *display_name(const struct trace_merge *m, uint32_t i)
{
	if (i >= m->ndnames || !m->dnames[i])
		return m->names[i];
	return m->dnames[i];
}

/* Reading state of one file. */
struct reader {
	const char *name;
	size_t lineno;
	long proc;		/* index, -1 before the first header */
	int64_t seg_t0;		/* t0 of the current segment */
};

static int proc_for_header(struct trace_merge *m, const struct trace_line *l,
			   struct reader *rd)
{
	struct mproc *p = NULL;
	char *cmd;

	for (size_t i = 0; i < m->nprocs; i++) {
		if (m->procs[i].pid == l->pid) {
			p = &m->procs[i];
			break;
		}
	}
	if (!p) {
		if (GROW(m->procs, m->capprocs, m->nprocs + 1))
			return -ENOMEM;
		p = &m->procs[m->nprocs++];
		memset(p, 0, sizeof(*p));
		p->pid = l->pid;
		p->t0 = l->t0;
		p->end = l->t0;
		p->next_tid = 1;
	}
	/*
	 * A second header for a pid we know: an exec'd image (or a reused
	 * pid).  One process in the trace; the newest command line names it.
	 */
	cmd = strdup(l->cmdline ? l->cmdline : "");
	if (!cmd)
		return -ENOMEM;
	free(p->cmdline);
	p->cmdline = cmd;
	p->ppid = l->ppid;
	p->timing |= l->timing;
	if (l->t0 < p->t0)
		p->t0 = l->t0;
	rd->proc = p - m->procs;
	rd->seg_t0 = l->t0;
	return 0;
}

static int add_event(struct trace_merge *m, struct reader *rd,
		     const struct trace_line *l)
{
	struct mproc *p = &m->procs[rd->proc];
	struct mev *e;
	int64_t t = rd->seg_t0 + l->t;

	if (l->type == TL_GPU) {
		if (GROW(m->gpus, m->capgpus, m->ngpus + 1))
			return -ENOMEM;
		m->gpus[m->ngpus++] = (struct gpurec){ (uint32_t)rd->proc,
						       l->seq, t, l->d };
		return 0;
	}
	if (l->type == TL_MM) {
		if (GROW(m->mms, m->capmms, m->nmms + 1))
			return -ENOMEM;
		m->mms[m->nmms++] = (struct mmrec){ (uint32_t)rd->proc, t,
						    l->resident, l->evicted,
						    l->reserved };
		return 0;
	}
	if (l->type == TL_EXIT) {
		p->exited = 1;
		if (t > p->end)
			p->end = t;
		return 0;
	}
	if (GROW(m->evs, m->capevs, m->nevs + 1))
		return -ENOMEM;
	e = &m->evs[m->nevs];
	memset(e, 0, sizeof(*e));
	e->type = (uint8_t)l->type;
	e->proc = (uint32_t)rd->proc;
	e->tid = l->tid;
	e->t = t;
	e->d = l->d;
	e->result = l->result;
	e->name = NO_NAME;
	switch (l->type) {
	case TL_LAUNCH:
		e->sub = (uint8_t)l->api;
		e->stream = l->stream;
		e->seq = l->seq;
		e->captured = (uint8_t)l->captured;
		e->shmem = l->shmem;
		e->kflags = l->kflags;
		memcpy(e->grid, l->grid, sizeof(e->grid));
		memcpy(e->block, l->block, sizeof(e->block));
		if (l->name && name_intern(m, l->name, &e->name))
			return -ENOMEM;
		if (l->nallocs) {
			if (GROW(m->ids, m->capids, m->nids + l->nallocs))
				return -ENOMEM;
			memcpy(m->ids + m->nids, l->allocs,
			       l->nallocs * sizeof(*l->allocs));
			e->ids_off = (uint32_t)m->nids;
			e->nids = (uint32_t)l->nallocs;
			m->nids += l->nallocs;
		}
		break;
	case TL_COPY:
		e->sub = (uint8_t)l->kind;
		e->stream = l->stream;
		e->bytes = l->bytes;
		e->dst = l->dst;
		e->src = l->src;
		e->async = (uint8_t)l->async;
		break;
	case TL_SYNC:
		e->sub = (uint8_t)l->kind;
		e->stream = l->obj;
		break;
	case TL_ALLOC:
	case TL_FREE:
		e->sub = (uint8_t)l->kind;
		e->id = l->id;
		e->base = l->base;
		e->size = l->size;
		e->dev = l->dev;
		break;
	default:
		return 0;
	}
	m->nevs++;
	if (t + e->d > p->end)
		p->end = t + e->d;
	return 0;
}

/* One line of a file; complete: it ended with a newline. */
static int feed_line(struct trace_merge *m, struct reader *rd, const char *s,
		     size_t len, int complete)
{
	struct trace_line l;
	char err[128];
	int r;

	rd->lineno++;
	if (!complete) {
		warn(m, "%s:%zu: incomplete last line skipped (was the process "
		     "killed?)", rd->name, rd->lineno);
		m->sum.lines_skipped++;
		return 0;
	}
	if (len == 0)
		return 0;
	if (trace_line_parse(s, len, &l, err, sizeof(err))) {
		warn(m, "%s:%zu: bad line skipped: %s", rd->name, rd->lineno,
		     err);
		m->sum.lines_skipped++;
		return 0;
	}
	if (l.type == TL_PROCESS) {
		r = proc_for_header(m, &l, rd);
	} else if (rd->proc < 0) {
		warn(m, "%s:%zu: record before the process header skipped",
		     rd->name, rd->lineno);
		m->sum.lines_skipped++;
		r = 0;
	} else {
		r = add_event(m, rd, &l);
	}
	trace_line_release(&l);
	return r;
}

int trace_merge_add_buffer(struct trace_merge *m, const char *name,
			   const char *buf, size_t len)
{
	struct reader rd = { name, 0, -1, 0 };
	const char *p = buf, *end = buf + len, *nl;
	int r;

	while (p < end) {
		nl = memchr(p, '\n', (size_t)(end - p));
		r = feed_line(m, &rd, p, nl ? (size_t)(nl - p)
					    : (size_t)(end - p), nl != NULL);
		if (r)
			return r;
		if (!nl)
			break;
		p = nl + 1;
	}
	return 0;
}

int trace_merge_add_file(struct trace_merge *m, const char *path)
{
	struct reader rd = { path, 0, -1, 0 };
	FILE *f = fopen(path, "re");
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	int r = 0;

	if (!f)
		return -errno;
	while ((n = getline(&line, &cap, f)) > 0) {
		int complete = line[n - 1] == '\n';

		r = feed_line(m, &rd, line, (size_t)n - (complete ? 1 : 0),
			      complete);
		if (r)
			break;
	}
	if (!r && ferror(f))
		r = -EIO;
	free(line);
	fclose(f);
	return r;
}

/* kmux-trace.<digits>.jsonl */
static int trace_file_pid(const char *name, long *pid)
{
	const char *p = name + strlen("kmux-trace.");
	char *end;

	if (strncmp(name, "kmux-trace.", strlen("kmux-trace.")) != 0 ||
	    !isdigit((unsigned char)*p))
		return 0;
	*pid = strtol(p, &end, 10);
	return strcmp(end, ".jsonl") == 0;
}

struct dirent_pid {
	long pid;
	char *name;
};

static int dirent_pid_cmp(const void *a, const void *b)
{
	const struct dirent_pid *x = a, *y = b;

	return (x->pid > y->pid) - (x->pid < y->pid);
}

int trace_merge_add_dir(struct trace_merge *m, const char *dir)
{
	struct dirent_pid *files = NULL;
	size_t n = 0, cap = 0;
	struct dirent *de;
	DIR *d = opendir(dir);
	int r = 0;
	long pid;

	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		if (!trace_file_pid(de->d_name, &pid))
			continue;
		if (GROW(files, cap, n + 1)) {
			r = -ENOMEM;
			goto out;
		}
		if (asprintf(&files[n].name, "%s/%s", dir, de->d_name) < 0) {
			r = -ENOMEM;
			goto out;
		}
		files[n++].pid = pid;
	}
	/* Deterministic order: by pid. */
	if (n)
		qsort(files, n, sizeof(*files), dirent_pid_cmp);
	for (size_t i = 0; i < n && !r; i++) {
		r = trace_merge_add_file(m, files[i].name);
		if (r && r != -ENOMEM) {
			warn(m, "cannot read %s: %s", files[i].name,
			     strerror(-r));
			r = 0;
		}
	}
out:
	for (size_t i = 0; i < n; i++)
		free(files[i].name);
	free(files);
	closedir(d);
	return r;
}

/* --- finishing: join, tracks, lanes, memory, summary --------------------- */

struct seqkey {
	uint32_t proc;
	uint64_t seq;
	uint32_t ev;
};

static int seqkey_cmp(const void *a, const void *b)
{
	const struct seqkey *x = a, *y = b;

	if (x->proc != y->proc)
		return x->proc < y->proc ? -1 : 1;
	if (x->seq != y->seq)
		return x->seq < y->seq ? -1 : 1;
	return (x->ev > y->ev) - (x->ev < y->ev);
}

/* GPU times of timed launches ("gpu" lines), found by (process, seq). */
static int join_gpu(struct trace_merge *m)
{
	struct seqkey *keys;
	size_t n = 0;

	for (size_t i = 0; i < m->nevs; i++)
		if (m->evs[i].type == TL_LAUNCH && m->evs[i].seq)
			n++;
	if (!n)
		return 0;
	keys = malloc(n * sizeof(*keys));
	if (!keys)
		return -ENOMEM;
	n = 0;
	for (size_t i = 0; i < m->nevs; i++)
		if (m->evs[i].type == TL_LAUNCH && m->evs[i].seq)
			keys[n++] = (struct seqkey){ m->evs[i].proc,
						     m->evs[i].seq,
						     (uint32_t)i };
	qsort(keys, n, sizeof(*keys), seqkey_cmp);
	for (size_t g = 0; g < m->ngpus; g++) {
		struct seqkey k = { m->gpus[g].proc, m->gpus[g].seq, 0 };
		size_t lo = 0, hi = n;

		/* First key >= (proc, seq). */
		while (lo < hi) {
			size_t mid = lo + (hi - lo) / 2;

			if (seqkey_cmp(&keys[mid], &k) < 0)
				lo = mid + 1;
			else
				hi = mid;
		}
		if (lo < n && keys[lo].proc == k.proc &&
		    keys[lo].seq == k.seq) {
			struct mev *e = &m->evs[keys[lo].ev];

			if (!e->has_gpu) {
				e->has_gpu = 1;
				e->gt = m->gpus[g].t;
				e->gd = m->gpus[g].d;
			}
		}
	}
	free(keys);
	return 0;
}

static int is_stream_event(const struct mev *e)
{
	return e->type == TL_LAUNCH || e->type == TL_COPY;
}

static int assign_tracks(struct trace_merge *m)
{
	for (size_t i = 0; i < m->nevs; i++) {
		struct mev *e = &m->evs[i];
		struct pmap_ent *pe;
		int host = !is_stream_event(e);
		uint64_t stream = host ? HOST_TRACK_STREAM
				       : (e->stream ? e->stream : STREAM_LEGACY);
		/* The per-thread default stream is one stream per thread. */
		int32_t tid = host || stream == STREAM_PER_THREAD ? e->tid : 0;
		uint64_t a = (uint64_t)e->proc << 32 | (uint32_t)tid;

		if (!host)
			e->stream = stream;	/* NULL is the legacy stream */
		pe = pmap_find(&m->track_map, a, stream);
		if (pe) {
			e->track = (uint32_t)pe->v;
			if (e->dt < m->tracks[pe->v].first)
				m->tracks[pe->v].first = e->dt;
			continue;
		}
		if (GROW(m->tracks, m->captracks, m->ntracks + 1) ||
		    pmap_put(&m->track_map, a, stream, m->ntracks))
			return -ENOMEM;
		m->tracks[m->ntracks] = (struct mtrack){
			.proc = e->proc, .host = host, .stream = stream,
			.tid = tid, .first = e->dt, .nlanes = 1,
		};
		e->track = (uint32_t)m->ntracks++;
	}
	return 0;
}

static int cmp_i64(int64_t a, int64_t b)
{
	return (a > b) - (a < b);
}

/* *acc += v, held at INT64_MAX/MIN: durations come from trace files,
 * which can say anything (the fuzzer gave 9e18 + 1e18). */
static void add_i64_sat(int64_t *acc, int64_t v)
{
	if (__builtin_add_overflow(*acc, v, acc))
		*acc = v > 0 ? INT64_MAX : INT64_MIN;
}

/* By track, then start, longest first (so parents precede children). */
static int lane_cmp(const void *a, const void *b, void *arg)
{
	const struct mev *evs = arg;
	const struct mev *x = &evs[*(const uint32_t *)a];
	const struct mev *y = &evs[*(const uint32_t *)b];
	int c;

	if (x->track != y->track)
		return x->track < y->track ? -1 : 1;
	if ((c = cmp_i64(x->dt, y->dt)))
		return c;
	if ((c = cmp_i64(y->dd, x->dd)))
		return c;
	return cmp_i64(*(const uint32_t *)a, *(const uint32_t *)b);
}

struct lane {
	int64_t *ends;		/* stack of open events' ends */
	size_t n, cap;
};

/*
 * Trace viewers need the events of a track to nest.  Put each event in the
 * first lane of its track where it nests (after popping what ended before
 * it starts); open a lane when none fits.
 */
static int assign_lanes(struct trace_merge *m, uint32_t *idx)
{
	struct lane *lanes = NULL;
	size_t nlanes = 0, caplanes = 0, i = 0;
	int r = 0;

	for (size_t k = 0; k < m->nevs; k++)
		idx[k] = (uint32_t)k;
	qsort_r(idx, m->nevs, sizeof(*idx), lane_cmp, m->evs);
	while (i < m->nevs) {
		uint32_t track = m->evs[idx[i]].track;

		for (size_t l = 0; l < nlanes; l++)
			lanes[l].n = 0;
		for (; i < m->nevs && m->evs[idx[i]].track == track; i++) {
			struct mev *e = &m->evs[idx[i]];
			int64_t end = e->dt + e->dd;
			size_t l;

			for (l = 0; l < nlanes; l++) {
				struct lane *ln = &lanes[l];

				while (ln->n && ln->ends[ln->n - 1] <= e->dt)
					ln->n--;
				if (!ln->n || end <= ln->ends[ln->n - 1])
					break;
			}
			if (l == nlanes) {
				if (GROW(lanes, caplanes, nlanes + 1)) {
					r = -ENOMEM;
					goto out;
				}
				memset(&lanes[nlanes++], 0, sizeof(*lanes));
			}
			if (GROW(lanes[l].ends, lanes[l].cap, lanes[l].n + 1)) {
				r = -ENOMEM;
				goto out;
			}
			lanes[l].ends[lanes[l].n++] = end;
			e->lane = (uint32_t)l;
			if (l + 1 > m->tracks[track].nlanes)
				m->tracks[track].nlanes = (uint32_t)l + 1;
		}
	}
out:
	for (size_t l = 0; l < nlanes; l++)
		free(lanes[l].ends);
	free(lanes);
	return r;
}

/* Streams before host threads, each in order of first use. */
static int track_cmp(const void *a, const void *b, void *arg)
{
	const struct mtrack *tr = arg;
	const struct mtrack *x = &tr[*(const uint32_t *)a];
	const struct mtrack *y = &tr[*(const uint32_t *)b];
	int c;

	if (x->proc != y->proc)
		return x->proc < y->proc ? -1 : 1;
	if (x->host != y->host)
		return x->host - y->host;
	if ((c = cmp_i64(x->first, y->first)))
		return c;
	if (x->stream != y->stream)
		return x->stream < y->stream ? -1 : 1;
	return (x->tid > y->tid) - (x->tid < y->tid);
}

static int number_tracks(struct trace_merge *m)
{
	uint32_t *idx = malloc((m->ntracks + 1) * sizeof(*idx));

	if (!idx)
		return -ENOMEM;
	for (size_t i = 0; i < m->ntracks; i++)
		idx[i] = (uint32_t)i;
	qsort_r(idx, m->ntracks, sizeof(*idx), track_cmp, m->tracks);
	for (size_t i = 0; i < m->ntracks; i++) {
		struct mtrack *t = &m->tracks[idx[i]];
		struct mproc *p = &m->procs[t->proc];

		t->out_tid = p->next_tid;
		p->next_tid += t->nlanes;
	}
	free(idx);
	return 0;
}

/* Output order: by process, then time. */
static int out_cmp(const void *a, const void *b, void *arg)
{
	const struct mev *evs = arg;
	const struct mev *x = &evs[*(const uint32_t *)a];
	const struct mev *y = &evs[*(const uint32_t *)b];
	int c;

	if (x->proc != y->proc)
		return x->proc < y->proc ? -1 : 1;
	if ((c = cmp_i64(x->dt, y->dt)))
		return c;
	return cmp_i64(*(const uint32_t *)a, *(const uint32_t *)b);
}

static int counts_as_device(int kind)
{
	return kind != TL_ALLOC_HOST;
}

/* Frees before allocations at the same instant: no phantom peak. */
static int mem_cmp(const void *a, const void *b, void *arg)
{
	const struct mev *evs = arg;
	const struct mev *x = &evs[*(const uint32_t *)a];
	const struct mev *y = &evs[*(const uint32_t *)b];
	int c;

	if ((c = cmp_i64(x->t, y->t)))
		return c;
	if (x->type != y->type)
		return x->type == TL_FREE ? -1 : 1;
	return cmp_i64(*(const uint32_t *)a, *(const uint32_t *)b);
}

/*
 * Device memory over time, all processes together.  A process's memory is
 * released when it ends (the driver does that); what it had not freed
 * itself is reported as current_device_bytes.
 */
static int sweep_memory(struct trace_merge *m)
{
	struct pmap live = { 0 };
	uint64_t *cur, total = 0, peak = 0;
	size_t np = 0, k = 0;
	uint32_t *pend;
	int r = 0;

	for (size_t i = 0; i < m->nevs; i++)
		if (m->evs[i].type == TL_ALLOC || m->evs[i].type == TL_FREE)
			m->nmem++;
	m->memorder = malloc((m->nmem + 1) * sizeof(*m->memorder));
	cur = calloc(m->nprocs + 1, sizeof(*cur));
	pend = malloc((m->nprocs + 1) * sizeof(*pend));
	if (!m->memorder || !cur || !pend) {
		r = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < m->nevs; i++)
		if (m->evs[i].type == TL_ALLOC || m->evs[i].type == TL_FREE)
			m->memorder[k++] = (uint32_t)i;
	qsort_r(m->memorder, m->nmem, sizeof(*m->memorder), mem_cmp, m->evs);
	/* Processes by end time, to release their memory in order. */
	for (size_t i = 0; i < m->nprocs; i++)
		pend[np++] = (uint32_t)i;
	for (size_t i = 1; i < np; i++) {
		uint32_t v = pend[i];
		size_t j = i;

		for (; j && m->procs[pend[j - 1]].end > m->procs[v].end; j--)
			pend[j] = pend[j - 1];
		pend[j] = v;
	}
	k = 0;
	for (size_t i = 0; i <= m->nmem; i++) {
		struct mev *e = i < m->nmem ? &m->evs[m->memorder[i]] : NULL;
		struct pmap_ent *pe;

		/* Processes that ended before this event give theirs back. */
		for (; k < np && (!e || m->procs[pend[k]].end < e->t); k++) {
			struct mproc *p = &m->procs[pend[k]];

			p->mem_left = cur[pend[k]];
			total -= cur[pend[k]];
			cur[pend[k]] = 0;
		}
		if (!e)
			break;
		m->procs[e->proc].has_mem = 1;
		if (!counts_as_device(e->sub)) {
			e->mem_after = cur[e->proc];
			continue;
		}
		if (e->type == TL_ALLOC) {
			pe = pmap_find(&live, e->proc, e->id);
			if (pe) {
				/* Same id live twice: keep the newer. */
				cur[e->proc] -= pe->v;
				total -= pe->v;
			}
			if (pmap_put(&live, e->proc, e->id, e->size)) {
				r = -ENOMEM;
				goto out;
			}
			cur[e->proc] += e->size;
			total += e->size;
			if (total > peak)
				peak = total;
		} else if ((pe = pmap_find(&live, e->proc, e->id))) {
			cur[e->proc] -= pe->v;
			total -= pe->v;
			pmap_del(&live, pe);
		}
		e->mem_after = cur[e->proc];
	}
	m->sum.peak_device_bytes = peak;
	for (size_t i = 0; i < m->nprocs; i++)
		m->sum.current_device_bytes += m->procs[i].mem_left;
out:
	free(live.e);
	free(cur);
	free(pend);
	return r;
}

static int kstat_cmp(const void *a, const void *b)
{
	const struct trace_kernel_stat *x = a, *y = b;
	int c;

	if ((c = cmp_i64(y->total_ns, x->total_ns)))
		return c;
	if (x->count != y->count)
		return x->count > y->count ? -1 : 1;
	return strcmp(x->name, y->name);
}

static int summarize(struct trace_merge *m, double wall_s)
{
	struct trace_summary *s = &m->sum;
	int64_t end = m->base;

	s->processes = (unsigned)m->nprocs;
	for (size_t i = 0; i < m->nprocs; i++) {
		s->timing |= m->procs[i].timing;
		if (m->procs[i].end > end)
			end = m->procs[i].end;
	}
	for (size_t i = 0; i < m->nevs; i++) {
		const struct mev *e = &m->evs[i];
		int timing = m->procs[e->proc].timing;

		switch (e->type) {
		case TL_LAUNCH:
			s->launches++;
			if (e->result)
				s->failed_launches++;
			if (e->captured)
				s->captured_launches++;
			else if (timing && !e->has_gpu && !e->result)
				s->timing_unresolved++;
			if (e->sub == TL_API_GRAPH) {
				s->graph_launches++;
			} else if (e->sub == TL_API_HOST_FUNC) {
				s->host_funcs++;
			} else {
				struct kstat *k = &m->kstats[e->name];

				s->kernel_launches++;
				k->count++;
				if (!timing) {
					add_i64_sat(&k->total_ns, e->d);
				} else if (e->has_gpu) {
					k->timed++;
					add_i64_sat(&k->total_ns, e->gd);
				}
			}
			break;
		case TL_COPY:
			if (e->sub == TL_MEMSET)
				s->memsets++;
			else
				s->memcpys++;
			break;
		case TL_SYNC:
			if (e->sub == TL_SYNC_CTX || e->sub == TL_SYNC_STREAM ||
			    e->sub == TL_SYNC_EVENT)
				s->syncs++;
			break;
		default:
			break;
		}
	}
	s->kernels = calloc(m->nnames + 1, sizeof(*s->kernels));
	if (!s->kernels)
		return -ENOMEM;
	for (size_t i = 0; i < m->nnames; i++) {
		if (!m->kstats[i].count)
			continue;
		s->kernels[s->nkernels++] = (struct trace_kernel_stat){
			display_name(m, (uint32_t)i), m->kstats[i].count,
			m->kstats[i].timed,
			m->kstats[i].total_ns,
		};
	}
	qsort(s->kernels, s->nkernels, sizeof(*s->kernels), kstat_cmp);
	s->wall_s = wall_s > 0 ? wall_s : (double)(end - m->base) / 1e9;
	s->launches_per_s = s->wall_s > 0 ? (double)s->launches / s->wall_s
					  : 0;
	return 0;
}

int trace_merge_finish(struct trace_merge *m, double wall_s)
{
	int r;

	names_demangle(m);
	if (m->finished)
		return 0;
	m->base = 0;
	for (size_t i = 0; i < m->nprocs; i++)
		if (i == 0 || m->procs[i].t0 < m->base)
			m->base = m->procs[i].t0;
	r = join_gpu(m);
	if (r)
		return r;
	for (size_t i = 0; i < m->nevs; i++) {
		struct mev *e = &m->evs[i];

		e->dt = e->has_gpu ? e->gt : e->t;
		e->dd = e->has_gpu ? e->gd : e->d;
	}
	m->order = malloc((m->nevs + 1) * sizeof(*m->order));
	if (!m->order)
		return -ENOMEM;
	r = assign_tracks(m);
	if (!r)
		r = assign_lanes(m, m->order);
	if (!r)
		r = number_tracks(m);
	if (!r)
		r = sweep_memory(m);
	if (!r)
		r = summarize(m, wall_s);
	if (r)
		return r;
	for (size_t k = 0; k < m->nevs; k++)
		m->order[k] = (uint32_t)k;
	qsort_r(m->order, m->nevs, sizeof(*m->order), out_cmp, m->evs);
	m->finished = 1;
	return 0;
}

const struct trace_summary *trace_merge_summary(const struct trace_merge *m)
{
	return &m->sum;
}

size_t trace_merge_nwarnings(const struct trace_merge *m)
{
	return m->nwarnings;
}

size_t trace_merge_nkept_warnings(const struct trace_merge *m)
{
	return m->nwarnings < WARNINGS_KEPT ? m->nwarnings : WARNINGS_KEPT;
}

const char *trace_merge_warning(const struct trace_merge *m, size_t i)
{
	if (i >= trace_merge_nkept_warnings(m))
		return NULL;
	return m->warnings[i] ? m->warnings[i] : "(out of memory)";
}

/* --- human formats ------------------------------------------------------- */

void trace_fmt_bytes(char *buf, size_t len, uint64_t bytes)
{
	static const char *const units[] = { "KiB", "MiB", "GiB", "TiB",
					     "PiB", "EiB" };
	double v = (double)bytes;
	size_t u = 0;

	if (bytes < 1024) {
		snprintf(buf, len, "%" PRIu64 " B", bytes);
		return;
	}
	v /= 1024;
	while (v >= 1024 && u + 1 < NELEM(units)) {
		v /= 1024;
		u++;
	}
	snprintf(buf, len, "%.1f %s", v, units[u]);
}

void trace_fmt_ns(char *buf, size_t len, double ns)
{
	if (ns < 1e3)
		snprintf(buf, len, "%.0f ns", ns);
	else if (ns < 1e6)
		snprintf(buf, len, "%.1f us", ns / 1e3);
	else if (ns < 1e9)
		snprintf(buf, len, "%.1f ms", ns / 1e6);
	else
		snprintf(buf, len, "%.2f s", ns / 1e9);
}

void trace_fmt_count(char *buf, size_t len, double n)
{
	if (n < 1e3)
		snprintf(buf, len, n == floor(n) ? "%.0f" : "%.1f", n);
	else if (n < 1e6)
		snprintf(buf, len, "%.1fk", n / 1e3);
	else if (n < 1e9)
		snprintf(buf, len, "%.1fM", n / 1e6);
	else
		snprintf(buf, len, "%.1fG", n / 1e9);
}

/* --- writing ------------------------------------------------------------- */

struct out {
	FILE *f;
	int first;
	int err;
};

/* Print one event object and free it. */
static void emit(struct out *o, cJSON *j)
{
	char *s;

	if (!j) {
		o->err = -ENOMEM;
		return;
	}
	s = cJSON_PrintUnformatted(j);
	cJSON_Delete(j);
	if (!s) {
		o->err = -ENOMEM;
		return;
	}
	if (!o->first)
		fputs(",\n", o->f);
	o->first = 0;
	fputs(s, o->f);
	free(s);
}

static double us(const struct trace_merge *m, int64_t t)
{
	return (double)(t - m->base) / 1e3;
}

static void add_hex(cJSON *o, const char *key, uint64_t v)
{
	char buf[24];

	snprintf(buf, sizeof(buf), "0x%" PRIx64, v);
	cJSON_AddStringToObject(o, key, buf);
}

static cJSON *meta(const char *what, int pid, uint32_t tid, const char *key,
		   cJSON *val)
{
	cJSON *j = cJSON_CreateObject(), *args;

	if (!j)
		goto err;
	cJSON_AddStringToObject(j, "name", what);
	cJSON_AddStringToObject(j, "ph", "M");
	cJSON_AddNumberToObject(j, "pid", pid);
	cJSON_AddNumberToObject(j, "tid", tid);
	args = cJSON_AddObjectToObject(j, "args");
	if (!args)
		goto err;
	cJSON_AddItemToObject(args, key, val);
	return j;
err:
	cJSON_Delete(val);
	cJSON_Delete(j);
	return NULL;
}

static void track_name(const struct mtrack *t, uint32_t lane, char *buf,
		       size_t len)
{
	int n;

	if (t->host)
		n = snprintf(buf, len, "host thread %d", (int)t->tid);
	else if (t->stream == STREAM_LEGACY)
		n = snprintf(buf, len, "default stream (legacy)");
	else if (t->stream == STREAM_PER_THREAD)
		n = snprintf(buf, len,
			     "default stream (per-thread, thread %d)",
			     (int)t->tid);
	else
		n = snprintf(buf, len, "stream 0x%" PRIx64, t->stream);
	if (lane && n > 0 && (size_t)n < len)
		snprintf(buf + n, len - (size_t)n, " #%u", lane + 1);
}

static void write_metadata(const struct trace_merge *m, struct out *o)
{
	char name[128];

	for (size_t i = 0; i < m->nprocs; i++) {
		const struct mproc *p = &m->procs[i];

		snprintf(name, sizeof(name), "%.100s",
			 p->cmdline && *p->cmdline ? p->cmdline : "?");
		emit(o, meta("process_name", p->pid, 0, "name",
			     cJSON_CreateString(name)));
	}
	for (size_t i = 0; i < m->ntracks; i++) {
		const struct mtrack *t = &m->tracks[i];
		int pid = m->procs[t->proc].pid;

		for (uint32_t l = 0; l < t->nlanes; l++) {
			track_name(t, l, name, sizeof(name));
			emit(o, meta("thread_name", pid, t->out_tid + l, "name",
				     cJSON_CreateString(name)));
			emit(o, meta("thread_sort_index", pid, t->out_tid + l,
				     "sort_index",
				     cJSON_CreateNumber(t->out_tid + l)));
		}
	}
}

static void launch_args(const struct trace_merge *m, const struct mev *e,
			cJSON *args)
{
	const struct mproc *p = &m->procs[e->proc];
	cJSON *a;

	if (e->sub <= TL_API_LAUNCH_COOP) {
		cJSON_AddItemToObject(args, "grid", cJSON_CreateIntArray(
			(const int[]){ (int)e->grid[0], (int)e->grid[1],
				       (int)e->grid[2] }, 3));
		cJSON_AddItemToObject(args, "block", cJSON_CreateIntArray(
			(const int[]){ (int)e->block[0], (int)e->block[1],
				       (int)e->block[2] }, 3));
		cJSON_AddNumberToObject(args, "shmem", (double)e->shmem);
	}
	add_hex(args, "stream", e->stream);
	a = cJSON_AddArrayToObject(args, "allocs");
	for (uint32_t i = 0; a && i < e->nids; i++)
		cJSON_AddItemToArray(a, cJSON_CreateNumber(
			(double)m->ids[e->ids_off + i]));
	cJSON_AddStringToObject(args, "api", api_names[e->sub]);
	cJSON_AddNumberToObject(args, "result", e->result);
	if (e->kflags)
		cJSON_AddNumberToObject(args, "kflags", e->kflags);
	if (e->has_gpu) {
		cJSON_AddNumberToObject(args, "gpu_ts", us(m, e->gt));
		cJSON_AddNumberToObject(args, "gpu_dur", (double)e->gd / 1e3);
		cJSON_AddNumberToObject(args, "launch_ts", us(m, e->t));
		cJSON_AddNumberToObject(args, "launch_us", (double)e->d / 1e3);
	} else if (e->captured) {
		cJSON_AddBoolToObject(args, "captured", 1);
	} else if (p->timing && !e->result) {
		cJSON_AddStringToObject(args, "gpu", "unresolved");
	}
}

static cJSON *event_json(const struct trace_merge *m, const struct mev *e)
{
	const struct mtrack *t = &m->tracks[e->track];
	cJSON *j = cJSON_CreateObject(), *args;
	const char *cat = "kernel";
	char name[160], size[32];

	if (!j)
		return NULL;
	switch (e->type) {
	case TL_LAUNCH:
		if (e->sub == TL_API_GRAPH) {
			cat = "graph";
			cJSON_AddStringToObject(j, "name", "graph launch");
		} else if (e->sub == TL_API_HOST_FUNC) {
			cat = "hostfunc";
			cJSON_AddStringToObject(j, "name", "host function");
		} else {
			cJSON_AddStringToObject(j, "name",
				e->name != NO_NAME ? display_name(m, e->name) : "?");
		}
		break;
	case TL_COPY:
		cat = e->sub == TL_MEMSET ? "memset" : "memcpy";
		trace_fmt_bytes(size, sizeof(size), e->bytes);
		snprintf(name, sizeof(name), "%s %s", copy_labels[e->sub], size);
		cJSON_AddStringToObject(j, "name", name);
		break;
	case TL_SYNC:
		cat = "sync";
		cJSON_AddStringToObject(j, "name", sync_apis[e->sub]);
		break;
	default:
		cat = "alloc";
		trace_fmt_bytes(size, sizeof(size), e->size);
		snprintf(name, sizeof(name), "%s %s (%s)",
			 e->type == TL_ALLOC ? "alloc" : "free", size,
			 alloc_names[e->sub]);
		cJSON_AddStringToObject(j, "name", name);
		break;
	}
	cJSON_AddStringToObject(j, "cat", cat);
	cJSON_AddStringToObject(j, "ph", "X");
	cJSON_AddNumberToObject(j, "ts", us(m, e->dt));
	cJSON_AddNumberToObject(j, "dur", (double)e->dd / 1e3);
	cJSON_AddNumberToObject(j, "pid", m->procs[e->proc].pid);
	cJSON_AddNumberToObject(j, "tid", t->out_tid + e->lane);
	args = cJSON_AddObjectToObject(j, "args");
	if (!args) {
		cJSON_Delete(j);
		return NULL;
	}
	switch (e->type) {
	case TL_LAUNCH:
		launch_args(m, e, args);
		break;
	case TL_COPY:
		cJSON_AddStringToObject(args, "kind", copy_names[e->sub]);
		cJSON_AddNumberToObject(args, "bytes", (double)e->bytes);
		add_hex(args, "dst", e->dst);
		if (e->sub != TL_MEMSET)
			add_hex(args, "src", e->src);
		add_hex(args, "stream", e->stream);
		cJSON_AddBoolToObject(args, "async", e->async);
		cJSON_AddNumberToObject(args, "result", e->result);
		cJSON_AddNumberToObject(args, "thread", e->tid);
		break;
	case TL_SYNC:
		add_hex(args, "obj", e->stream);
		cJSON_AddNumberToObject(args, "result", e->result);
		break;
	default:
		cJSON_AddNumberToObject(args, "id", (double)e->id);
		add_hex(args, "base", e->base);
		cJSON_AddNumberToObject(args, "size", (double)e->size);
		cJSON_AddStringToObject(args, "kind", alloc_names[e->sub]);
		cJSON_AddNumberToObject(args, "device", e->dev);
		break;
	}
	return j;
}

static cJSON *counter_json(const struct trace_merge *m, int pid, int64_t t,
			   uint64_t bytes)
{
	cJSON *j = cJSON_CreateObject(), *args;

	if (!j)
		return NULL;
	cJSON_AddStringToObject(j, "name", "device memory");
	cJSON_AddStringToObject(j, "ph", "C");
	cJSON_AddNumberToObject(j, "ts", us(m, t));
	cJSON_AddNumberToObject(j, "pid", pid);
	cJSON_AddNumberToObject(j, "tid", 0);
	args = cJSON_AddObjectToObject(j, "args");
	if (!args) {
		cJSON_Delete(j);
		return NULL;
	}
	cJSON_AddNumberToObject(args, "bytes", (double)bytes);
	return j;
}

/*
 * The memory manager's track (KMUX_MEMORY): resident, evicted, and
 * "reserved" = address ranges with neither (never backed), so that the
 * stacked counter adds up to every managed range.
 */
static cJSON *mm_counter_json(const struct trace_merge *m,
			      const struct mmrec *r)
{
	cJSON *j = cJSON_CreateObject(), *args;

	if (!j)
		return NULL;
	cJSON_AddStringToObject(j, "name", "kmux memory manager");
	cJSON_AddStringToObject(j, "ph", "C");
	cJSON_AddNumberToObject(j, "ts", us(m, r->t));
	cJSON_AddNumberToObject(j, "pid", m->procs[r->proc].pid);
	cJSON_AddNumberToObject(j, "tid", 0);
	args = cJSON_AddObjectToObject(j, "args");
	if (!args) {
		cJSON_Delete(j);
		return NULL;
	}
	cJSON_AddNumberToObject(args, "resident", (double)r->resident);
	cJSON_AddNumberToObject(args, "evicted", (double)r->evicted);
	cJSON_AddNumberToObject(args, "reserved",
				r->reserved > r->resident + r->evicted ?
				(double)(r->reserved - r->resident - r->evicted) :
				0.0);
	return j;
}

static void write_counters(const struct trace_merge *m, struct out *o)
{
	for (size_t i = 0; i < m->nmms; i++)
		emit(o, mm_counter_json(m, &m->mms[i]));
	for (size_t i = 0; i < m->nmem; i++) {
		const struct mev *e = &m->evs[m->memorder[i]];

		if (counts_as_device(e->sub))
			emit(o, counter_json(m, m->procs[e->proc].pid, e->t,
					     e->mem_after));
	}
	/* The driver releases what is left when a process ends. */
	for (size_t i = 0; i < m->nprocs; i++)
		if (m->procs[i].mem_left)
			emit(o, counter_json(m, m->procs[i].pid,
					     m->procs[i].end, 0));
}

cJSON *trace_merge_summary_json(const struct trace_merge *m)
{
	const struct trace_summary *s = &m->sum;
	cJSON *j = cJSON_CreateObject(), *ks;

	if (!j)
		return NULL;
	cJSON_AddNumberToObject(j, "processes", s->processes);
	cJSON_AddNumberToObject(j, "launches", (double)s->launches);
	cJSON_AddNumberToObject(j, "kernel_launches",
				(double)s->kernel_launches);
	cJSON_AddNumberToObject(j, "graph_launches", (double)s->graph_launches);
	cJSON_AddNumberToObject(j, "host_funcs", (double)s->host_funcs);
	cJSON_AddNumberToObject(j, "failed_launches",
				(double)s->failed_launches);
	ks = cJSON_AddArrayToObject(j, "kernels");
	for (size_t i = 0; ks && i < s->nkernels; i++) {
		const struct trace_kernel_stat *k = &s->kernels[i];
		uint64_t n = s->timing ? k->timed : k->count;
		cJSON *o = cJSON_CreateObject();

		if (!o)
			break;
		cJSON_AddStringToObject(o, "name", k->name);
		cJSON_AddNumberToObject(o, "count", (double)k->count);
		cJSON_AddNumberToObject(o, "total_us", (double)k->total_ns / 1e3);
		cJSON_AddNumberToObject(o, "mean_us",
			n ? (double)k->total_ns / 1e3 / (double)n : 0);
		if (s->timing)
			cJSON_AddNumberToObject(o, "timed", (double)k->timed);
		cJSON_AddItemToArray(ks, o);
	}
	cJSON_AddNumberToObject(j, "syncs", (double)s->syncs);
	cJSON_AddNumberToObject(j, "memcpys", (double)s->memcpys);
	cJSON_AddNumberToObject(j, "memsets", (double)s->memsets);
	cJSON_AddNumberToObject(j, "peak_device_bytes",
				(double)s->peak_device_bytes);
	cJSON_AddNumberToObject(j, "current_device_bytes",
				(double)s->current_device_bytes);
	cJSON_AddNumberToObject(j, "wall_s", s->wall_s);
	cJSON_AddNumberToObject(j, "launches_per_s", s->launches_per_s);
	cJSON_AddBoolToObject(j, "timing", s->timing);
	cJSON_AddStringToObject(j, "kernel_time", s->timing ? "gpu" : "host");
	if (s->timing) {
		cJSON_AddNumberToObject(j, "timing_unresolved",
					(double)s->timing_unresolved);
		cJSON_AddNumberToObject(j, "captured_launches",
					(double)s->captured_launches);
	}
	cJSON_AddNumberToObject(j, "lines_skipped", (double)s->lines_skipped);
	return j;
}

static cJSON *kmux_json(const struct trace_merge *m)
{
	cJSON *j = cJSON_CreateObject(), *ps, *sum;

	if (!j)
		return NULL;
	cJSON_AddNumberToObject(j, "version", TRACE_MERGE_VERSION);
	ps = cJSON_AddArrayToObject(j, "processes");
	for (size_t i = 0; ps && i < m->nprocs; i++) {
		const struct mproc *p = &m->procs[i];
		cJSON *o = cJSON_CreateObject();

		if (!o)
			break;
		cJSON_AddNumberToObject(o, "pid", p->pid);
		cJSON_AddNumberToObject(o, "ppid", p->ppid);
		cJSON_AddStringToObject(o, "cmdline",
					p->cmdline ? p->cmdline : "");
		cJSON_AddNumberToObject(o, "start_us", us(m, p->t0));
		cJSON_AddNumberToObject(o, "end_us", us(m, p->end));
		cJSON_AddBoolToObject(o, "exited", p->exited);
		cJSON_AddItemToArray(ps, o);
	}
	sum = trace_merge_summary_json(m);
	if (!sum) {
		cJSON_Delete(j);
		return NULL;
	}
	cJSON_AddItemToObject(j, "summary", sum);
	return j;
}

int trace_merge_write(const struct trace_merge *m, FILE *f)
{
	struct out o = { f, 1, 0 };
	cJSON *k;
	char *s;

	if (!m->finished)
		return -EINVAL;
	fputs("{\"traceEvents\":[\n", f);
	write_metadata(m, &o);
	for (size_t i = 0; i < m->nevs && !o.err; i++)
		emit(&o, event_json(m, &m->evs[m->order[i]]));
	write_counters(m, &o);
	if (o.err)
		return o.err;
	k = kmux_json(m);
	s = k ? cJSON_PrintUnformatted(k) : NULL;
	cJSON_Delete(k);
	if (!s)
		return -ENOMEM;
	fprintf(f, "\n],\"displayTimeUnit\":\"ns\",\"kmux\":%s}\n", s);
	free(s);
	if (fflush(f) || ferror(f))
		return errno ? -errno : -EIO;
	return 0;
}

/* --- the summary for people ----------------------------------------------- */

void trace_merge_print_summary(const struct trace_merge *m, FILE *f,
			       const char *outname)
{
	const struct trace_summary *s = &m->sum;
	char rate[32], peak[32], left[32], total[32], mean[32];
	size_t top = s->nkernels < TOP_KERNELS ? s->nkernels : TOP_KERNELS;

	trace_fmt_count(rate, sizeof(rate), s->launches_per_s);
	fprintf(f, "kmux trace: %s%s (%u process%s, %" PRIu64 " launches, "
		"%s launches/s, %" PRIu64 " syncs, %" PRIu64 " copies)\n",
		outname ? "wrote " : "", outname ? outname : "summary",
		s->processes, s->processes == 1 ? "" : "es", s->launches, rate,
		s->syncs, s->memcpys);
	if (!s->processes)
		fprintf(f, "no process of the command used CUDA\n");
	trace_fmt_bytes(peak, sizeof(peak), s->peak_device_bytes);
	trace_fmt_bytes(left, sizeof(left), s->current_device_bytes);
	fprintf(f, "device memory: peak %s, at exit %s\n", peak, left);
	if (s->timing && s->timing_unresolved)
		fprintf(f, "timing: %" PRIu64 " launches without a GPU time "
			"(process killed, or timing failed)\n",
			s->timing_unresolved);
	if (!top)
		return;
	fprintf(f, "%-*s %10s %10s %10s\n", NAME_COL + 2,
		s->timing ? "top kernels (GPU time)"
			  : "top kernels (host launch time)",
		"count", "total", "mean");
	for (size_t i = 0; i < top; i++) {
		const struct trace_kernel_stat *k = &s->kernels[i];
		uint64_t n = s->timing ? k->timed : k->count;
		size_t len = strlen(k->name);

		trace_fmt_ns(total, sizeof(total), (double)k->total_ns);
		trace_fmt_ns(mean, sizeof(mean),
			     n ? (double)k->total_ns / (double)n : 0);
		if (len > NAME_COL)
			fprintf(f, "  %.*s... ", NAME_COL - 3, k->name);
		else
			fprintf(f, "  %-*s ", NAME_COL, k->name);
		fprintf(f, "%10" PRIu64 " %10s %10s\n", k->count, total, mean);
	}
	if (s->nkernels > top)
		fprintf(f, "  (%zu more kernels in the trace)\n",
			s->nkernels - top);
}
