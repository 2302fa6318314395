/*
 * copy.c - the slow path shared by every memcpy and memset wrapper
 * (wrap-copy.c is generated and only describes each entry point): the
 * trace record, the `kmux verify` record of device-to-host copies, and the
 * rules by which default-stream copies are scheduled.
 *
 * Scheduling a copy (docs/design-streams.md, "Copies and memsets"):
 *  - 2D/3D and peer copies run as the program asked, bridged (streams.c):
 *    they are rare, and their ranges, arrays and second context are not
 *    worth modelling;
 *  - a synchronous copy into host memory (device-to-host, or cuMemcpy into
 *    pinned memory) waits on the host for the writers of its source and
 *    the users of its destination only, then is made as the program made
 *    it: it is complete when it returns, so nothing later can overtake it;
 *  - everything else runs on a pool stream in its asynchronous form.  A
 *    device side kmux does not know, or one in VMM-mapped memory (whose
 *    mappings may alias), makes it a barrier, except a module variable
 *    the program located (cudaMemcpyToSymbol): that is ordered by its
 *    pseudo allocation, as the kernels reaching it are (ptx-table.h);
 *    an unknown host side is
 *    pageable memory, which the driver stages (or completes) before
 *    returning.  A synchronous form waits for its pool stream up to
 *    itself before returning, except device-to-device copies and memsets
 *    of device memory, which CUDA does not make synchronous either (see
 *    copy_sync_waits()).
 */
#include <stdbool.h>
#include <string.h>

#include "alloc-table.h"
#include "copy.h"
#include "log.h"
#include "mm.h"
#include "ptrtab.h"
#include "ptx-table.h"
#include "real.h"
#include "texobj.h"
#include "verify.h"

void copy_begin(struct copy_call *cc, enum trace_copy_kind kind,
		uint64_t dst, uint64_t src, uint64_t bytes, CUstream s,
		int per_thread, int async)
{
	*cc = (struct copy_call){
		.c = {
			.kind = kind, .dst = dst, .src = src, .bytes = bytes,
			.stream = stream_norm(s, per_thread), .async = async,
		},
		.per_thread = per_thread,
		.orig = s,
	};
	cc->c.t_begin = trace_stamp();
}

struct copy_side {
	int known;
	int var;	/* a located module variable: a.id is its pseudo id */
	struct alloc a;
};

static void copy_find(uint64_t addr, struct copy_side *s)
{
	s->known = addr &&
		   alloc_table_find(alloc_table_global(), addr, &s->a) == 0;
	s->var = 0;
}

/*
 * copy_find(), and when the table does not know addr, the module variable
 * the program located there (device memory ordered by a pseudo id).
 */
static void copy_find_sched(uint64_t addr, struct copy_side *s)
{
	copy_find(addr, s);
	if (s->known || !addr || ptxtab_symbol_alloc(addr, &s->a) < 0)
		return;
	s->known = 1;
	s->var = 1;
}

/* What a side of a copy must be. */
enum copy_need {
	COPY_NEED_DEVICE,	/* unknown: a barrier */
	COPY_NEED_HOST,		/* unknown: pageable, not tracked */
	COPY_NEED_ANY,		/* unknown: could be either, a barrier */
};

struct copy_plan {
	struct sched_access acc[2];
	int nacc;
	int barrier;
};

static void copy_plan_side(struct copy_plan *p, const struct copy_side *s,
			   enum copy_need need, enum sched_mode mode)
{
	if (!s->known) {
		if (need != COPY_NEED_HOST)
			p->barrier = 1;
		return;
	}
	if (s->a.kind == ALLOC_VMM) {
		p->barrier = 1;
		return;
	}
	p->acc[p->nacc++] = (struct sched_access){
		.alloc_id = s->a.id, .mode = mode,
	};
}

/* Records the pool stream a copy really went to, for the trace. */
struct copy_tramp {
	streams_issue_fn issue;
	void *arg;
	struct copy_call *cc;
};

static CUresult copy_tramp_issue(void *p, CUstream s)
{
	struct copy_tramp *t = p;

	if (s)
		t->cc->c.stream = (uint64_t)(uintptr_t)s;
	return t->issue(t->arg, s);
}

/*
 * A synchronous copy into host memory: wait for its conflicts, then do it.
 * A small device-to-host read into pageable memory may instead be served
 * from a read-ahead (streams.c, "Reading ahead").
 */
static CUresult copy_host_path(const struct copy_call *cc,
			       const struct copy_side *dst,
			       const struct copy_side *src,
			       streams_issue_fn issue, void *arg)
{
	struct sched_access acc[2];
	int n = 0, full = 0;
	CUresult r;

	if (cc->c.kind == TRACE_COPY_DTOH && !dst->known && src->known &&
	    src->a.kind == ALLOC_DEVICE && !src->var &&
	    streams_host_read(src->a.id, src->a.base, cc->c.src,
			      (void *)(uintptr_t)cc->c.dst, cc->c.bytes, &r))
		return r;

	if (src->known && src->a.kind != ALLOC_VMM)
		acc[n++] = (struct sched_access){ .alloc_id = src->a.id, .mode = SCHED_READ };
	else
		full = 1;
	if (dst->known && dst->a.kind == ALLOC_VMM)
		full = 1;
	else if (dst->known)
		acc[n++] = (struct sched_access){ .alloc_id = dst->a.id, .mode = SCHED_WRITE };
	r = streams_host_access(acc, n, full);
	if (r != CUDA_SUCCESS)
		return r;
	return issue(arg, NULL);
}

/* 1 and *r: scheduled; 0: the caller makes the call itself. */
/*
 * Whether a synchronous copy or memset kmux moved to a pool stream must be
 * waited for before the call returns.  CUDA's own rule ("API
 * synchronization behavior"): a device-to-device copy and a memset of
 * device memory do not synchronize the host, so they are not waited for
 * (on the legacy stream they were ordered only with later default-stream
 * and blocking-stream work, which the scheduler orders too), as long as
 * the program has no non-blocking stream of its own.  Everything
 * else is: from or to pinned memory the driver returns once the copy is
 * done, and a program may reuse the buffer at once; from pageable memory
 * it returns once the source is staged, which kmux does not model; an
 * unknown side may be either.  Only the operation and what it depends on
 * are waited for.
 */
static bool copy_wait_all;

void copy_debug_sync_wait(const char *value)
{
	copy_wait_all = value && strcmp(value, "1") == 0;
}

static int copy_sync_waits(enum trace_copy_kind k, const struct copy_side *dst,
			   const struct copy_side *src)
{
	bool dst_dev = dst->known && dst->a.kind == ALLOC_DEVICE;
	bool src_dev = src->known && src->a.kind == ALLOC_DEVICE;

	/*
	 * Work on the program's own non-blocking streams is ordered with the
	 * legacy stream's by nothing kmux sees, only by the host: its later
	 * synchronous calls (a copy from pageable memory synchronizes the
	 * legacy stream first) would have completed this one.  Wait then.
	 */
	if (copy_wait_all || atomic_load_explicit(&streams_own_nonblocking,
						  memory_order_relaxed))
		return 1;
	switch (k) {
	case TRACE_COPY_DTOD:
		return 0;
	case TRACE_MEMSET:
		return !dst_dev;
	case TRACE_COPY_ANY:
		return !(dst_dev && src_dev);
	default:
		return 1;
	}
}

static int copy_sched(struct copy_call *cc, streams_issue_fn issue, void *arg,
		      CUresult *r)
{
	enum trace_copy_kind k = cc->c.kind;
	struct copy_tramp t = { issue, arg, cc };
	struct streams_req rq = {
		.orig = streams_default_handle(cc->orig, cc->per_thread),
		.issue = copy_tramp_issue,
		.arg = &t,
	};
	struct copy_plan p = { .nacc = 0 };
	struct copy_side dst, src;
	int sync = !cc->c.async;

	switch (k) {
	case TRACE_COPY_2D:
	case TRACE_COPY_3D:
	case TRACE_COPY_PEER:
	case TRACE_COPY_ARRAY:
		rq.flags = STREAMS_BRIDGE;
		rq.peer[0] = cc->peer[0];
		rq.peer[1] = cc->peer[1];
		return streams_run(&rq, r);
	default:
		break;
	}
	/* The host side of a DtoH or HtoD copy is never a variable. */
	if (k == TRACE_COPY_DTOH)
		copy_find(cc->c.dst, &dst);
	else
		copy_find_sched(cc->c.dst, &dst);
	if (k == TRACE_COPY_HTOD)
		copy_find(cc->c.src, &src);
	else
		copy_find_sched(k == TRACE_MEMSET ? 0 : cc->c.src, &src);
	if (sync && (k == TRACE_COPY_DTOH ||
		     (k == TRACE_COPY_ANY && dst.known &&
		      dst.a.kind == ALLOC_HOST_MAPPED))) {
		*r = copy_host_path(cc, &dst, &src, issue, arg);
		return 1;
	}
	copy_plan_side(&p, &dst, k == TRACE_COPY_DTOH ? COPY_NEED_HOST :
		       k == TRACE_COPY_ANY ? COPY_NEED_ANY : COPY_NEED_DEVICE,
		       SCHED_WRITE);
	if (k != TRACE_MEMSET)
		copy_plan_side(&p, &src, k == TRACE_COPY_HTOD ? COPY_NEED_HOST :
			       k == TRACE_COPY_ANY ? COPY_NEED_ANY :
			       COPY_NEED_DEVICE, SCHED_READ);
	if (p.barrier) {
		rq.flags = SCHED_BARRIER;
	} else {
		rq.acc = p.acc;
		rq.nacc = p.nacc;
	}
	if (sync && copy_sync_waits(k, &dst, &src))
		rq.flags |= STREAMS_WAIT;
	return streams_run(&rq, r);
}

/* The part of a 2D/3D copy's host destination it writes. */
static int copy_verify_rows(const struct copy_call *cc, struct verify_copy *v)
{
	if (cc->c.kind == TRACE_COPY_2D) {
		const CUDA_MEMCPY2D *p = cc->desc;

		if (p->dstMemoryType != CU_MEMORYTYPE_HOST ||
		    p->srcMemoryType == CU_MEMORYTYPE_HOST)
			return 0;
		v->host = (const unsigned char *)p->dstHost +
			  p->dstY * p->dstPitch + p->dstXInBytes;
		v->row_bytes = p->WidthInBytes;
		v->rows = p->Height;
		v->pitch = p->dstPitch;
		return 1;
	}
	if (cc->c.kind == TRACE_COPY_3D) {
		const CUDA_MEMCPY3D *p = cc->desc;

		if (p->dstMemoryType != CU_MEMORYTYPE_HOST ||
		    p->srcMemoryType == CU_MEMORYTYPE_HOST)
			return 0;
		v->slice_pitch = (uint64_t)p->dstPitch * p->dstHeight;
		v->host = (const unsigned char *)p->dstHost +
			  p->dstZ * v->slice_pitch + p->dstY * p->dstPitch +
			  p->dstXInBytes;
		v->row_bytes = p->WidthInBytes;
		v->rows = p->Height;
		v->pitch = p->dstPitch;
		v->depth = p->Depth;
		return 1;
	}
	return 0;
}

/* Record a device-to-host copy for `kmux verify`. */
static void copy_verify(const struct copy_call *cc)
{
	struct verify_copy v = {
		.stream = cc->orig, .per_thread = cc->per_thread,
		.rows = 1, .depth = 1,
	};
	struct copy_side dst, src;

	copy_find(cc->c.dst, &dst);
	switch (cc->c.kind) {
	case TRACE_COPY_ANY:
		copy_find(cc->c.src, &src);
		/* Into host memory, out of memory the device owns. */
		if ((dst.known && dst.a.kind != ALLOC_HOST_MAPPED) ||
		    !src.known || src.a.kind == ALLOC_HOST_MAPPED)
			return;
		/* fall through */
	case TRACE_COPY_DTOH:
		v.host = (const unsigned char *)(uintptr_t)cc->c.dst;
		v.row_bytes = cc->c.bytes;
		v.pitch = cc->c.bytes;
		break;
	case TRACE_COPY_2D:
	case TRACE_COPY_3D:
		if (!cc->desc || !copy_verify_rows(cc, &v))
			return;
		break;
	default:
		return;
	}
	v.bytes = v.row_bytes * v.rows * v.depth;
	/* Into pageable memory the driver returns only once it is done. */
	v.complete = !cc->c.async || !dst.known;
	verify_copy(&v);
}

/*
 * The memory manager: back the allocations the copy's sides lie in (peer
 * copies pin them: the other context's view is not followed).
 */
static CUresult copy_mm_begin(const struct copy_call *cc, struct mm_op *mo)
{
	uint64_t bases[2], ends[2], lo, hi;
	struct copy_side x;
	int n = 0;

	ends[0] = cc->c.dst;
	ends[1] = cc->c.kind == TRACE_MEMSET ? 0 : cc->c.src;
	/* Host memory and small allocations lie outside every managed
	 * object: no lookup for them. */
	mm_span(&lo, &hi);
	for (int i = 0; i < 2; i++) {
		if (ends[i] < lo || ends[i] >= hi)
			continue;
		copy_find(ends[i], &x);
		if (x.known)
			bases[n++] = x.a.base;
	}
	return mm_op_begin(mo, bases, n, 0, cc->c.kind == TRACE_COPY_PEER,
			   cc->orig, cc->per_thread);
}

/* KMUX_PTRTAB=0 turns pointer tables off (copy_tables_init()). */
static int copy_tables_on = 1;

void copy_tables_init(const char *value)
{
	copy_tables_on = kmux_log_switch("KMUX_PTRTAB", value,
					 "pointer tables");
}

/* Whether id is still the allocation at base (ptrtab_live_fn). */
static bool copy_table_live(uint64_t id, uint64_t base, void *arg)
{
	struct alloc a;

	return alloc_table_find(arg, base, &a) == 0 && a.id == id &&
	       a.base == base;
}

/*
 * Host memory the copy (an upload or a unified copy) reads: an upload's
 * source, or a unified copy's when the source is pinned host memory or
 * unknown to kmux and to the driver (pageable memory).  Device memory is
 * never read from the host.
 */
static bool copy_src_is_host(const struct copy_call *cc)
{
	struct copy_side src;
	CUmemorytype mt = 0;

	if (cc->c.kind == TRACE_COPY_HTOD)
		return true;
	copy_find(cc->c.src, &src);
	if (src.known)
		return src.a.kind == ALLOC_HOST_MAPPED;
	return REAL(cuPointerGetAttribute)(&mt,
			CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
			(CUdeviceptr)cc->c.src) != CUDA_SUCCESS ||
	       mt == CU_MEMORYTYPE_HOST;
}

/*
 * The candidate words w[0..n) of an upload into dst: those that point into
 * another allocation join dst's table.  -1 when the table cannot take
 * more (opaque, or lost): nothing more to note.
 */
static int copy_table_add(struct alloc_table *t, const struct alloc *dst,
			  const uint64_t *w, int n)
{
	struct ptrtab_ref ref[PTRTAB_REFS];
	struct alloc a[PTRTAB_REFS];
	int nref = 0;

	if (n == 0 || alloc_table_find_batch(t, w, n, a) <= 0)
		return 0;
	for (int i = 0; i < n; i++)
		if (a[i].id && a[i].id != dst->id)
			ref[nref++] = (struct ptrtab_ref){ a[i].id, w[i] };
	/* Deduplicated there; a full table turns opaque. */
	if (nref && ptrtab_note(dst->id, dst->base, ref, nref,
				copy_table_live, t) < 0)
		return -1;
	return 0;
}

/*
 * Pointer tables (ptrtab.h): an upload into device memory whose 8-byte
 * words, aligned where they land, point into allocations kmux knows makes
 * its destination a table of those allocations.  Read before the copy is
 * made, from the bytes the driver is handed: a small upload whole, a
 * large one past its head only when the head held a candidate (ptrtab.h).
 */
static void copy_note_table(const struct copy_call *cc,
			    const struct copy_side *dst)
{
	struct alloc_table *t = alloc_table_global();
	const unsigned char *h = (const unsigned char *)(uintptr_t)cc->c.src;
	uint64_t n = cc->c.bytes, lo, hi, w[PTRTAB_REFS], seen = 0;
	int nw = 0;

	if (n < 8 || !h)
		return;
	alloc_table_span(t, &lo, &hi);
	for (uint64_t j = (8 - (cc->c.dst & 7)) & 7; j + 8 <= n; j += 8) {
		uint64_t v;

		if (j >= PTRTAB_SCAN_HEAD && !seen && n > PTRTAB_SCAN_SMALL)
			return;		/* data */
		if (j >= PTRTAB_SCAN_MAX) {
			/* A table too large to read: its kernels are barriers. */
			ptrtab_note_opaque(dst->a.id, dst->a.base,
					   copy_table_live, t);
			return;
		}
		memcpy(&v, h + j, sizeof(v));
		if (v - lo >= hi - lo)
			continue;	/* most words: no pointer at all */
		seen++;
		w[nw++] = v;
		if (nw == PTRTAB_REFS) {
			if (copy_table_add(t, &dst->a, w, nw) < 0)
				return;
			nw = 0;
		}
	}
	copy_table_add(t, &dst->a, w, nw);
}

/*
 * Which copies make a table: uploads (read, above), and device-to-device
 * copies out of a table (the program staged it, or keeps one per batch):
 * the destination holds what the source holds.
 */
static void copy_note_tables(const struct copy_call *cc)
{
	struct copy_side dst, src;
	bool up = cc->c.kind == TRACE_COPY_HTOD;

	if (cc->c.kind != TRACE_COPY_HTOD && cc->c.kind != TRACE_COPY_DTOD &&
	    cc->c.kind != TRACE_COPY_ANY)
		return;
	copy_find(cc->c.dst, &dst);
	if (!dst.known || dst.a.kind == ALLOC_HOST_MAPPED)
		return;
	if (cc->c.kind == TRACE_COPY_ANY)
		up = copy_src_is_host(cc);
	if (up) {
		copy_note_table(cc, &dst);
		return;
	}
	if (!ptrtab_any())
		return;
	copy_find(cc->c.src, &src);
	if (src.known && src.a.kind != ALLOC_HOST_MAPPED)
		ptrtab_copy(src.a.id, dst.a.id, dst.a.base, copy_table_live,
			    alloc_table_global());
}

/*
 * Texture and surface objects uploaded into device memory (a table of
 * handles, a `__constant__` one set with cudaMemcpyToSymbol): a kernel
 * that reads one there reaches memory kmux cannot see, and kmux cannot
 * tell which kernels do, so every launch becomes a barrier while one lives
 * (texobj_escape()).  Read as a pointer table's upload is: a small upload
 * whole, a larger one's head (ptrtab.h), whatever its destination.
 */
static __attribute__((noinline, cold)) void
copy_note_handles(const struct copy_call *cc)
{
	const unsigned char *h = (const unsigned char *)(uintptr_t)cc->c.src;
	uint64_t n = cc->c.bytes, v;

	if (!h || n < 8 || texobj_escaped())
		return;
	if (cc->c.kind != TRACE_COPY_HTOD &&
	    (cc->c.kind != TRACE_COPY_ANY || !copy_src_is_host(cc)))
		return;
	if (n > PTRTAB_SCAN_SMALL)
		n = PTRTAB_SCAN_HEAD;
	for (uint64_t j = (8 - (cc->c.dst & 7)) & 7; j + 8 <= n; j += 8) {
		memcpy(&v, h + j, sizeof(v));
		if (texobj_is_live(v)) {
			texobj_escape();
			return;
		}
	}
}

CUresult copy_run(struct copy_call *cc, streams_issue_fn issue, void *arg)
{
	struct mm_op mo = { 0 };
	CUresult r;

	if (copy_tables_on && (kmux_streams || mm_on))
		copy_note_tables(cc);
	if (unlikely(texobj_any()) && (kmux_streams || mm_on))
		copy_note_handles(cc);

	if (unlikely(mm_on) && (r = copy_mm_begin(cc, &mo)) != CUDA_SUCCESS)
		;	/* not issued: what it touches could not be backed */
	else if (!(kmux_streams && streams_is_default(cc->orig) &&
		   copy_sched(cc, issue, arg, &r)))
		r = streams_pass(cc->orig, issue, arg);
	mm_op_end(&mo);
	cc->c.t_end = trace_stamp();
	cc->c.result = r;
	trace_copy(&cc->c);
	if (!cc->c.async)
		trace_resolve_timing(0);
	if (kmux_verify && r == CUDA_SUCCESS)
		copy_verify(cc);
	return r;
}
