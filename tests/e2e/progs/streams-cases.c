/*
 * streams-cases.c - one small default-stream program per case the stream
 * scheduler must get right, each checking itself from simcuda's records
 * (simcuda_op_get: every operation's stream, submission order and times).
 *
 *   streams-cases MODE
 *
 * Barrier cases: two independent 30 ms kernels, then the operation X under
 * test, then two more kernels; X must start after everything submitted
 * before it ended and end before anything submitted after it started:
 *   graph      X is a graph launch (captured on a stream of the program's)
 *   hostfunc   X is cuLaunchHostFunc          callback  cuStreamAddCallback
 *   managed    X is a kernel given managed memory
 *   hostmem    X is a kernel given pinned, device-mapped host memory
 *   regex      X is the kernel "probe" (run with KMUX_BARRIER_KERNELS=^probe$;
 *              without it the check must fail: the control)
 *   opaque     X is a kernel without parameters launched with an `extra`
 *              blob kmux cannot read (also a barrier for having none)
 *   opaque-params  X is the kernel "probe", which writes buf[0] like the
 *              kernel before it, launched through an `extra` list longer
 *              than the 64 pairs kmux reads (the driver reads it to its
 *              end): kmux cannot see its pointer
 *   unknown    X is probe launched with kernelParams while its layout is
 *              unknown (run with SIMCUDA_NO_PARAM_INFO=probe: without it
 *              the check must fail, the control)
 *   unknown-extra  the same through a sized `extra` buffer, which kmux
 *              scans word by word when the layout is unknown
 *   extra      the control of opaque-params: probe through a short `extra`
 *              list kmux reads: an ordinary kernel, so the check must fail
 *   capture    X is a kernel on the default stream while the program
 *              captures a graph on a stream of its own (bridged)
 *   waitevent  the default stream waits for an event recorded after X on a
 *              stream of the program's: what follows starts after X
 *   texture    X is tex_sum given a texture object over the buffer the
 *              kernel before it writes (memory reached through a handle)
 *   surface    X is surf_bump given a surface object over an array
 *   texture-gone  the control: the kernel "word" given the value of a
 *              texture object destroyed before it, which is data now: no
 *              barrier, so the check must fail
 *   texture-word  "word" given the value of a live texture object: a
 *              barrier (kmux cannot tell data from a handle)
 *   texture-table  X is tex_via, which reads its texture object from a
 *              table the host uploaded into device memory: once a handle
 *              is uploaded, every launch is a barrier
 *   graph-mem  not a barrier: two 30 ms kernels on the default stream
 *              writing an allocation a graph's memory node made (live
 *              since the graph's launch on a stream of the program's; the
 *              graph launched, its allocation freed with cuMemFree, and
 *              launched again first): kmux learns its address from the
 *              graph, so the second must start after the first ended;
 *              prints "graph-mem ordered"
 * Other cases:
 *   independent  eight independent 20 ms kernels; prints how many pairs
 *                overlapped in time
 *   rendezvous   two kernels that meet only if they run at the same time;
 *                exit 0 when they met
 *   own          work on the program's own non-blocking streams only: no
 *                operation may land on any other stream
 *   blocking     a blocking stream appears mid-way: its work follows the
 *                default stream's and the default stream's follows it,
 *                while the pool keeps scheduling
 *   blockingN    (N from 1 to 64: blocking16, blocking17, blocking40) N
 *                blocking streams in one context, more than 16 of which
 *                switch that context off (kmux bridges 16): after two
 *                independent default-stream kernels, each stream is
 *                created, bumps a shared buffer (x = 3x + 1), then the
 *                default stream adds 1 to it and runs an unrelated
 *                kernel; a second round does the same on the streams that
 *                exist.  The value read back must be what that order
 *                gives (the blocking streams' order with the legacy
 *                stream kept, before and after the switch); under kmux the
 *                first two kernels must have overlapped (the pool was
 *                scheduling before it was switched off).  Prints
 *                "blocking N: acc V as expected"
 *   streamop     cuStreamWriteValue32 on the default stream (an entry
 *                point kmux does not model) runs alone, in order
 *   keepup       launch-bound then GPU-bound: 64 independent 1 us kernels,
 *                each followed by 1 ms of host time (the GPU is idle when
 *                the next arrives; run with KMUX_DEBUG_KEEP_UP_US=5000, as
 *                simcuda is slow), then 64 independent 5 ms kernels back to
 *                back; prints how many streams the last 16 short ones used
 *                and how many pairs of the long ones overlapped
 *   passthru     keepup's launch-bound start (kmux passes work through as
 *                submitted), then 64 long (5 ms) kernels on 8 buffers,
 *                kernel i and i + 8 on the same one: once the GPU falls behind, kmux
 *                schedules again, and every pair must still run in order
 *                (the scheduler never saw the passed-through ones).  Prints
 *                "passthru ordered" and the long kernels' overlapping pairs
 *   pace         12 epochs of 16 independent 2 ms kernels on 16 buffers,
 *                each epoch closed by cuCtxSynchronize: spreading gains
 *                on the simulated driver, so the check of pace.h keeps it
 *                spread after one in-line epoch; prints how many pairs of
 *                the last epoch's kernels overlapped
 *   weights      8 epochs of a 20 ms kernel (on 2 blocks: a kind of its
 *                own) and 6 independent 2 ms ones, each closed by
 *                cuCtxSynchronize; prints how many of the last epoch's
 *                short kernels ran beside the long one (kdur.h: all of
 *                them on 2 streams with KMUX_DURATIONS=1)
 *   pace-phases  host_sync's shape (bench/apps/host_sync.cu): 10 rounds of
 *                4 steps, each round begun by resetting the 4 tasks'
 *                buffers (device-to-device copies: the first step's
 *                work differs from the other three's, so a kind
 *                guessed before its work is seen would be wrong once a
 *                round); a step is 4 tasks x 4 kernels, a synchronous
 *                read of task 0's buffer, 4 x 2 more kernels, a read of
 *                each task's, then cuStreamSynchronize(NULL).  The reads
 *                wait for one writer each, so an epoch may end only at the
 *                synchronization: the in-line trial must show its cost
 *   d2d          a 30 ms kernel writes a buffer, then a synchronous
 *                device-to-device copy of it and a memset of it (both
 *                queued behind the kernel): prints how long each call held
 *                the host ("d2d_us
 *                N memset_us M"; CUDA does not make them wait) and "order
 *                ok" when the copy still started after the kernel ended
 *   d2d-own      the same after creating a non-blocking stream of its own
 *                (kmux then waits for both, as it cannot see that
 *                stream's ordering)
 *   d2d-blocking the same with a blocking stream of its own, on which a
 *                kernel then reads the memset buffer: it must start after
 *                the memset ended (CUDA orders a blocking stream after the
 *                legacy stream's earlier work); prints "blocking ok"
 *   pause        kmux_streams_pause(): two 30 ms kernels scheduled, pause,
 *                four independent 20 ms ones, resume, four more; the
 *                paused four must start after the first two ended and run
 *                one after another, the last four after them and side by
 *                side again; a pause during a capture is refused (-EBUSY).
 *                Prints "pause ok" and the return values ("pause: not
 *                under kmux" without the preload)
 *   chase        a kernel writes a buffer through a pointer stored in
 *                device memory by kernels; prints the
 *                hashes of two read-backs (scheduling breaks it: `kmux
 *                verify` must tell)
 *   table        the same pointer uploaded from the host (a pointer
 *                table kmux follows): the read-back must see the write;
 *                prints "table ok" (with KMUX_PTRTAB=0 it must fail: the
 *                control)
 *   table-unified the same, uploaded by cuMemcpy from pageable memory
 *   table-wide   the same with the pointer first in a table of 140
 *                allocations, more than kmux keeps: the kernel becomes a
 *                barrier, and the read-back must still see the write
 *   table-dtod   the table uploaded into a staging buffer and copied
 *                device to device into place
 *   table-large  a 72 KiB table, the pointer past its first 64 KiB
 *   table-huge   a 17 MiB table: opaque, the kernel a barrier
 *   readback     reading ahead (streams.c): 24 rounds of a 20 ms kernel
 *                writing a value into a small buffer, an unrelated 5 ms
 *                kernel, sometimes a second write (memset, upload, or
 *                inc_u32: a barrier under KMUX_BARRIER_KERNELS=^inc_u32$),
 *                then synchronous reads of the whole buffer and of a word
 *                inside it; each must see the round's value.  Prints
 *                "readback ok" (run with SIMCUDA_LOG: no read-ahead copy
 *                may overlap a write of the buffer)
 *   readback-own the same after creating a non-blocking stream of its own
 *                (kmux cannot see what that stream writes: nothing may be
 *                served from a read-ahead)
 * Exit 0 when the check held, 1 with the reason on stderr otherwise.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "e2e-common.h"
#include "sim-overlap.h"
#include "simcuda.h"

#define LONG_US		30000
#define TABLE_WIDE_LEN	140	/* > PTRTAB_REFS (src/preload/ptrtab.h) */
#define NWORDS		256
#define BLOCKING_MANY_MAX 64	/* STREAMS_BLOCKING_REG (src/preload/streams.h) */

static CUfunction f_touch, f_probe, f_pause0, f_store_via, f_rendezvous;
static CUfunction f_fill_slow, f_inc, f_fill, f_bump;
static CUfunction f_tex_sum, f_surf_bump, f_word, f_tex_via;
static CUdeviceptr buf[8];

static int fail(const char *why)
{
	fprintf(stderr, "streams-cases: %s\n", why);
	return 1;
}

static void touch(CUstream s, CUdeviceptr p, unsigned us)
{
	size_t bytes = NWORDS * 4;
	int rw = SIM_RW;
	void *a[] = { &p, &bytes, &rw, &us };

	CHECK(cuLaunchKernel(f_touch, 1, 1, 1, 32, 1, 1, 0, s, a, NULL));
}

static void probe(CUstream s, CUdeviceptr p, unsigned us)
{
	int n = NWORDS;
	void *a[] = { &p, &n, &us };

	CHECK(cuLaunchKernel(f_probe, 1, 1, 1, 32, 1, 1, 0, s, a, NULL));
}

/* --- checks over simcuda's records ---------------------------------------- */

typedef int (*op_pred)(const struct simcuda_op_info *);

static int is_probe(const struct simcuda_op_info *o)
{
	return o->kind == SIMCUDA_OP_KERNEL && !strcmp(o->name, "probe");
}

static int is_host(const struct simcuda_op_info *o)
{
	return o->kind == SIMCUDA_OP_HOST;
}

static int is_graph(const struct simcuda_op_info *o)
{
	return o->kind == SIMCUDA_OP_GRAPH || o->graph != 0;
}

static int is_pause0(const struct simcuda_op_info *o)
{
	return o->kind == SIMCUDA_OP_KERNEL && !strcmp(o->name, "pause0");
}

/*
 * The operations matching x ran alone: everything submitted before them
 * had ended when they started (if before), everything submitted after
 * them started once they had ended.
 */
static int check_barrier(op_pred x, int before)
{
	size_t n = simcuda_op_count();
	uint64_t xs = UINT64_MAX, xe = 0, lo = UINT64_MAX, hi = 0;
	struct simcuda_op_info o;
	int nx = 0, nbefore = 0, nafter = 0;

	for (size_t i = 0; i < n; i++) {
		if (simcuda_op_get(i, &o) || !x(&o))
			continue;
		nx++;
		xs = o.start_ns < xs ? o.start_ns : xs;
		xe = o.end_ns > xe ? o.end_ns : xe;
		/* Replayed graph nodes are numbered when they run. */
		if (o.graph)
			continue;
		lo = o.seq < lo ? o.seq : lo;
		hi = o.seq > hi ? o.seq : hi;
	}
	if (!nx)
		return fail("the operation under test never ran");
	for (size_t i = 0; i < n; i++) {
		if (simcuda_op_get(i, &o) || x(&o))
			continue;
		if (o.seq < lo && before) {
			nbefore++;
			if (o.end_ns > xs) {
				fprintf(stderr, "streams-cases: %s (seq %llu) "
					"still ran when the barrier started\n",
					o.name, (unsigned long long)o.seq);
				return 1;
			}
		}
		if (o.seq > hi) {
			nafter++;
			if (o.start_ns < xe) {
				fprintf(stderr, "streams-cases: %s (seq %llu) "
					"started before the barrier ended\n",
					o.name, (unsigned long long)o.seq);
				return 1;
			}
		}
	}
	if ((before && nbefore < 2) || nafter < 2)
		return fail("too few operations around the barrier");
	printf("barrier held (%d before, %d after)\n", nbefore, nafter);
	return 0;
}

/* --- the cases -------------------------------------------------------------- */

static void around_before(void)
{
	touch(NULL, buf[0], LONG_US);
	touch(NULL, buf[1], LONG_US);
}

static void around_after(void)
{
	touch(NULL, buf[2], LONG_US / 2);
	touch(NULL, buf[3], LONG_US / 2);
	CHECK(cuCtxSynchronize());
}

static void host_noop(void *arg)
{
	(void)arg;
}

static void CUDA_CB callback_noop(CUstream s, CUresult r, void *arg)
{
	(void)s;
	(void)r;
	(void)arg;
}

static int case_graph(void)
{
	CUgraphExec exec;
	CUgraph g;
	CUstream s;

	CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	CHECK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
	probe(s, buf[4], 1000);
	CHECK(cuStreamEndCapture(s, &g));
	CHECK(cuGraphInstantiate(&exec, g, 0));
	around_before();
	CHECK(cuGraphLaunch(exec, NULL));
	around_after();
	return check_barrier(is_graph, 1);
}

static int case_host(int callback)
{
	around_before();
	if (callback)
		CHECK(cuStreamAddCallback(NULL, callback_noop, NULL, 0));
	else
		CHECK(cuLaunchHostFunc(NULL, host_noop, NULL));
	around_after();
	return check_barrier(is_host, 1);
}

static int case_memory(const char *mode)
{
	CUdeviceptr p = buf[4];
	void *h;

	if (!strcmp(mode, "managed")) {
		CHECK(cuMemAllocManaged(&p, NWORDS * 4, CU_MEM_ATTACH_GLOBAL));
	} else if (!strcmp(mode, "hostmem")) {
		CHECK(cuMemHostAlloc(&h, NWORDS * 4,
				     CU_MEMHOSTALLOC_DEVICEMAP));
		p = (CUdeviceptr)(uintptr_t)h;
	}
	around_before();
	probe(NULL, p, 1000);
	around_after();
	return check_barrier(is_probe, 1);
}

static int case_opaque(void)
{
	int unused = 0;
	/* A buffer without its size: the driver ignores it, kmux cannot
	 * know what the kernel is given. */
	void *e[] = { CU_LAUNCH_PARAM_BUFFER_POINTER, &unused,
		      CU_LAUNCH_PARAM_END };

	around_before();
	CHECK(cuLaunchKernel(f_pause0, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, e));
	around_after();
	return check_barrier(is_pause0, 1);
}

/* probe's parameters as simcuda lays them out (simcuda.h). */
struct probe_args {
	CUdeviceptr p;
	int n;
	unsigned us;
};

/* BUFFER_POINTER pairs before the real ones: more than kmux reads (64). */
#define EXTRA_LONG	64

/*
 * The kernel probe, given buf[0] (which the first kernel before it also
 * writes), launched in a way kmux cannot read fully (see the cases above).
 * As anything but a barrier it would run beside that kernel or the one
 * after it.
 */
static int case_unreadable(const char *how)
{
	struct probe_args pa = { buf[0], NWORDS, 1000 };
	size_t size = sizeof(pa);
	void *a[] = { &pa.p, &pa.n, &pa.us };
	void *e[2 * EXTRA_LONG + 5];
	int k = 0;

	if (!strcmp(how, "opaque-params"))
		for (; k < 2 * EXTRA_LONG; k += 2) {
			e[k] = CU_LAUNCH_PARAM_BUFFER_POINTER;
			e[k + 1] = &pa;
		}
	e[k++] = CU_LAUNCH_PARAM_BUFFER_POINTER;
	e[k++] = &pa;
	e[k++] = CU_LAUNCH_PARAM_BUFFER_SIZE;
	e[k++] = &size;
	e[k] = CU_LAUNCH_PARAM_END;
	around_before();
	if (!strcmp(how, "unknown"))
		CHECK(cuLaunchKernel(f_probe, 1, 1, 1, 32, 1, 1, 0, NULL, a,
				     NULL));
	else
		CHECK(cuLaunchKernel(f_probe, 1, 1, 1, 32, 1, 1, 0, NULL, NULL,
				     e));
	around_after();
	return check_barrier(is_probe, 1);
}

static int is_memset(const struct simcuda_op_info *o)
{
	return o->kind == SIMCUDA_OP_MEMSET;
}

/*
 * An entry point kmux does not model (wrap-opaque.c) on the default
 * stream: it runs there, after all earlier default-stream work and before
 * all later.
 */
static int case_streamop(void)
{
	around_before();
	CHECK(cuStreamWriteValue32(NULL, buf[5], 7, 0));
	around_after();
	return check_barrier(is_memset, 1);
}

static int case_capture(void)
{
	CUstream s;
	CUgraph g;

	CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	around_before();
	CHECK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_RELAXED));
	touch(s, buf[5], 10);		/* captured, not run */
	probe(NULL, buf[4], 1000);	/* runs, ordered like legacy work */
	CHECK(cuStreamEndCapture(s, &g));
	around_after();
	return check_barrier(is_probe, 1);
}

static int case_waitevent(void)
{
	CUstream s;
	CUevent ev;

	CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	CHECK(cuEventCreate(&ev, CU_EVENT_DISABLE_TIMING));
	around_before();
	probe(s, buf[4], LONG_US);
	CHECK(cuEventRecord(ev, s));
	CHECK(cuStreamWaitEvent(NULL, ev, 0));
	around_after();
	return check_barrier(is_probe, 0);
}

static int case_independent(void)
{
	for (int i = 0; i < 8; i++)
		touch(NULL, buf[i], 20000);
	CHECK(cuCtxSynchronize());
	printf("overlapping pairs %d\n", sim_overlapping_pairs("touch"));
	return 0;
}

static int by_seq(const void *a, const void *b)
{
	const struct simcuda_op_info *x = a, *y = b;

	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Pairs of t[lo..hi) that overlapped in time. */
static int overlaps_in(const struct simcuda_op_info *t, int lo, int hi)
{
	int pairs = 0;

	for (int i = lo; i < hi; i++)
		for (int j = i + 1; j < hi; j++)
			pairs += t[i].start_ns < t[j].end_ns &&
				 t[j].start_ns < t[i].end_ns;
	return pairs;
}

/* Every op of t[a..b) ended before any of t[b..c) started. */
static int all_before(const struct simcuda_op_info *t, int a, int b, int c)
{
	for (int i = a; i < b; i++)
		for (int j = b; j < c; j++)
			if (t[j].start_ns < t[i].end_ns)
				return 0;
	return 1;
}

static int case_pause(void)
{
	int (*pause)(int);
	struct simcuda_op_info t[10], o;
	int r[3], busy, n = 0;
	CUstream s;
	CUgraph g;

	*(void **)&pause = dlsym(RTLD_DEFAULT, "kmux_streams_pause");
	if (!pause) {
		printf("pause: not under kmux\n");
		return 0;
	}
	touch(NULL, buf[0], LONG_US);
	touch(NULL, buf[1], LONG_US);
	r[0] = pause(1);
	r[1] = pause(1);
	for (int i = 0; i < 4; i++)
		touch(NULL, buf[2 + i], 20000);
	r[2] = pause(0);
	for (int i = 0; i < 4; i++)
		touch(NULL, buf[4 + i], 20000);
	CHECK(cuCtxSynchronize());
	CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	CHECK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_RELAXED));
	busy = pause(1);
	CHECK(cuStreamEndCapture(s, &g));
	CHECK(cuGraphDestroy(g));
	CHECK(cuStreamDestroy(s));
	printf("pause returned %d %d %d, during a capture %d\n", r[0], r[1],
	       r[2], busy);

	for (size_t i = 0; i < simcuda_op_count() && n < 10; i++)
		if (!simcuda_op_get(i, &o) && o.kind == SIMCUDA_OP_KERNEL &&
		    !strcmp(o.name, "touch"))
			t[n++] = o;
	if (n != 10)
		return fail("pause: expected 10 kernels in the records");
	qsort(t, (size_t)n, sizeof(t[0]), by_seq);
	printf("pause overlaps: scheduled %d, paused %d, resumed %d\n",
	       overlaps_in(t, 0, 2), overlaps_in(t, 2, 6), overlaps_in(t, 6, 10));
	if (r[0] != 0 || r[1] != 1 || r[2] != 1 || busy != -EBUSY)
		return fail("pause: unexpected return values");
	if (!all_before(t, 0, 2, 6))
		return fail("pause: paused work started before scheduled work ended");
	if (!all_before(t, 2, 6, 10))
		return fail("pause: resumed work started before paused work ended");
	if (overlaps_in(t, 2, 6))
		return fail("pause: paused kernels overlapped");
	printf("pause ok\n");
	return 0;
}

/* Sleeping, not spinning: simcuda's workers need the CPU to run kernels. */
static void host_pause_us(unsigned us)
{
	struct timespec ts = { 0, (long)us * 1000 };

	while (nanosleep(&ts, &ts) == -1)
		;
}

/*
 * keepup's and passthru's launch-bound start: n short kernels on p[], each
 * followed by 1 ms of host time, recorded from an empty record.
 */
static void launch_bound_start(CUdeviceptr *p, int n)
{
	for (int i = 0; i < n; i++)
		CHECK(cuMemAlloc(&p[i], NWORDS * 4));
	CHECK(cuCtxSynchronize());
	simcuda_records_clear();
	for (int i = 0; i < n; i++) {
		touch(NULL, p[i], 1);
		host_pause_us(1000);
	}
}

static int case_passthru(void)
{
	enum { NSHORT = 64, NLONG = 64, NQ = 8 };
	CUdeviceptr p[NSHORT], q[NQ];
	struct simcuda_op_info o, lg[NLONG];
	int k = 0, nl = 0;

	for (int i = 0; i < NQ; i++)
		CHECK(cuMemAlloc(&q[i], NWORDS * 4));
	launch_bound_start(p, NSHORT);
	for (int i = 0; i < NLONG; i++)
		touch(NULL, q[i % NQ], 5000);
	CHECK(cuCtxSynchronize());
	for (size_t i = 0; i < simcuda_op_count(); i++) {
		if (simcuda_op_get(i, &o) || strcmp(o.name, "touch"))
			continue;
		if (k++ >= NSHORT && nl < NLONG)
			lg[nl++] = o;
	}
	if (nl != NLONG)
		return fail("not every kernel was recorded");
	qsort(lg, NLONG, sizeof(lg[0]), by_seq);
	for (int i = 0; i + NQ < NLONG; i++)
		if (lg[i + NQ].start_ns < lg[i].end_ns)
			return fail("passthru: a kernel overtook the one before it on its buffer");
	printf("passthru ordered\n");
	printf("long overlapping pairs %d\n", overlaps_in(lg, 0, NLONG));
	for (int i = 0; i < NSHORT; i++)
		CHECK(cuMemFree(p[i]));
	for (int i = 0; i < NQ; i++)
		CHECK(cuMemFree(q[i]));
	return 0;
}

static int case_pace(void)
{
	enum { NB = 16, EPOCHS = 12 };
	CUdeviceptr p[NB];
	struct simcuda_op_info o, last[NB];
	size_t n;
	int nl = 0;

	for (int i = 0; i < NB; i++)
		CHECK(cuMemAlloc(&p[i], NWORDS * 4));
	CHECK(cuCtxSynchronize());
	for (int e = 0; e < EPOCHS; e++) {
		if (e == EPOCHS - 1)
			simcuda_records_clear();
		for (int i = 0; i < NB; i++)
			touch(NULL, p[i], 2000);
		CHECK(cuCtxSynchronize());
	}
	n = simcuda_op_count();
	for (size_t i = 0; i < n && nl < NB; i++)
		if (!simcuda_op_get(i, &o) && !strcmp(o.name, "touch"))
			last[nl++] = o;
	if (nl != NB)
		return fail("pace: the last epoch's kernels were not recorded");
	printf("pace last epoch overlapping pairs %d\n", overlaps_in(last, 0, NB));
	for (int i = 0; i < NB; i++)
		CHECK(cuMemFree(p[i]));
	return 0;
}

/*
 * Learned durations (kdur.h): per epoch one 20 ms kernel (touch on two
 * blocks: a kind of its own) and six independent 2 ms ones, then a
 * synchronization.  On two streams, weighed by waves the long one counts
 * as one short one, so every other short kernel queues behind it; weighed
 * by what they took, all six run beside it once the kinds are timed.
 */
static int case_weights(void)
{
	enum { NS = 6, EPOCHS = 8 };
	const unsigned us_long = 20000, us_short = 2000;
	CUdeviceptr lp, p[NS];
	struct simcuda_op_info o, lo = { 0 };
	size_t bytes = NWORDS * 4, n;
	int rw = SIM_RW, beside = 0, nl = 0;
	void *a[] = { &lp, &bytes, &rw, (void *)&us_long };

	CHECK(cuMemAlloc(&lp, bytes));
	for (int i = 0; i < NS; i++)
		CHECK(cuMemAlloc(&p[i], bytes));
	CHECK(cuCtxSynchronize());
	for (int e = 0; e < EPOCHS; e++) {
		if (e == EPOCHS - 1)
			simcuda_records_clear();
		CHECK(cuLaunchKernel(f_touch, 2, 1, 1, 32, 1, 1, 0, NULL, a,
				     NULL));
		for (int i = 0; i < NS; i++)
			touch(NULL, p[i], us_short);
		CHECK(cuCtxSynchronize());
	}
	n = simcuda_op_count();
	for (size_t i = 0; i < n; i++)
		if (!simcuda_op_get(i, &o) && !strcmp(o.name, "touch") &&
		    o.end_ns - o.start_ns >= us_long * 1000ull)
			lo = o, nl++;
	if (nl != 1)
		return fail("weights: the last epoch's long kernel not recorded");
	for (size_t i = 0; i < n; i++)
		if (!simcuda_op_get(i, &o) && !strcmp(o.name, "touch") &&
		    o.end_ns - o.start_ns < us_long * 1000ull)
			beside += o.start_ns < lo.end_ns && lo.start_ns < o.end_ns;
	printf("weights last epoch short kernels beside the long one %d\n",
	       beside);
	CHECK(cuMemFree(lp));
	for (int i = 0; i < NS; i++)
		CHECK(cuMemFree(p[i]));
	return 0;
}

static int case_pace_phases(void)
{
	enum { NT = 4, ROUNDS = 10, STEPS = 4 };
	CUdeviceptr p[NT], init;
	uint32_t h;

	for (int t = 0; t < NT; t++)
		CHECK(cuMemAlloc(&p[t], NWORDS * 4));
	CHECK(cuMemAlloc(&init, NWORDS * 4));
	CHECK(cuMemsetD32(init, 7, NWORDS));
	CHECK(cuCtxSynchronize());
	for (int r = 0; r < ROUNDS; r++) {
		for (int st = 0; st < STEPS; st++) {
			for (int t = 0; t < NT && st == 0; t++)
				CHECK(cuMemcpyDtoD(p[t], init, NWORDS * 4));
			for (int t = 0; t < NT; t++)
				for (int k = 0; k < 4; k++)
					touch(NULL, p[t], 1000);
			CHECK(cuMemcpyDtoH(&h, p[0], sizeof(h)));
			for (int t = 0; t < NT; t++)
				for (int k = 0; k < 2; k++)
					touch(NULL, p[t], 1000);
			for (int t = 0; t < NT; t++)
				CHECK(cuMemcpyDtoH(&h, p[t], sizeof(h)));
			CHECK(cuStreamSynchronize(NULL));
		}
	}
	printf("pace-phases done\n");
	for (int t = 0; t < NT; t++)
		CHECK(cuMemFree(p[t]));
	CHECK(cuMemFree(init));
	return 0;
}

static int case_keepup(void)
{
	enum { NSHORT = 64, NLONG = 64, TAIL = 16 };
	CUdeviceptr p[NSHORT];
	uint64_t streams[TAIL];
	struct simcuda_op_info o;
	int nstreams = 0, k = 0;
	size_t n;

	launch_bound_start(p, NSHORT);
	for (int i = 0; i < NLONG; i++)
		touch(NULL, p[i], 5000);
	CHECK(cuCtxSynchronize());
	n = simcuda_op_count();
	for (size_t i = 0; i < n; i++) {
		if (simcuda_op_get(i, &o) || strcmp(o.name, "touch"))
			continue;
		if (k++ < NSHORT - TAIL || k > NSHORT)
			continue;
		int seen = 0;

		for (int j = 0; j < nstreams; j++)
			seen |= streams[j] == o.stream;
		if (!seen)
			streams[nstreams++] = o.stream;
	}
	if (k != NSHORT + NLONG)
		return fail("not every kernel was recorded");
	printf("tail streams %d\n", nstreams);
	/* Pairs among the long ones only: the short ones are over by then. */
	printf("long overlapping pairs %d\n", sim_overlapping_pairs("touch"));
	for (int i = 0; i < NSHORT; i++)
		CHECK(cuMemFree(p[i]));
	return 0;
}

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int case_d2d(int own)
{
	uint64_t kend = 0, cstart = 0, mend = 0, pstart = 0;
	struct simcuda_op_info o;
	double t0, t1, t2;
	CUstream mine;
	size_t n;

	if (own)
		CHECK(cuStreamCreate(&mine, own == 2 ? CU_STREAM_DEFAULT :
				     CU_STREAM_NON_BLOCKING));
	touch(NULL, buf[0], LONG_US);
	t0 = now_us();
	CHECK(cuMemcpyDtoD(buf[1], buf[0], NWORDS * 4));
	t1 = now_us();
	/* Of the kernel's buffer: queued behind it and the copy. */
	CHECK(cuMemsetD32(buf[0], 7, NWORDS));
	t2 = now_us();
	if (own == 2)
		probe(mine, buf[0], 1000);
	CHECK(cuCtxSynchronize());
	printf("d2d_us %.0f memset_us %.0f\n", t1 - t0, t2 - t1);
	n = simcuda_op_count();
	for (size_t i = 0; i < n; i++) {
		if (simcuda_op_get(i, &o))
			continue;
		if (o.kind == SIMCUDA_OP_KERNEL && is_probe(&o))
			pstart = o.start_ns;
		else if (o.kind == SIMCUDA_OP_KERNEL)
			kend = o.end_ns;
		else if (o.kind == SIMCUDA_OP_MEMCPY)
			cstart = o.start_ns;
		else if (o.kind == SIMCUDA_OP_MEMSET)
			mend = o.end_ns;
	}
	if (!kend || !cstart)
		return fail("the kernel or the copy was not recorded");
	if (cstart < kend)
		return fail("the copy started before the kernel that wrote "
			    "its source ended");
	printf("order ok\n");
	if (own == 2) {
		if (!mend || !pstart)
			return fail("the memset or the probe was not recorded");
		if (pstart < mend)
			return fail("the blocking stream's kernel started before "
				    "the memset it follows ended");
		printf("blocking ok\n");
	}
	if (own)
		CHECK(cuStreamDestroy(mine));
	return 0;
}

static int case_rendezvous(void)
{
	static int flags[3];
	unsigned long long fl = (unsigned long long)(uintptr_t)flags;
	size_t bytes = 64;
	int rw = SIM_WRITE, me0 = 0, me1 = 1;
	void *a0[] = { &buf[0], &bytes, &rw, &fl, &me0 };
	void *a1[] = { &buf[1], &bytes, &rw, &fl, &me1 };

	CHECK(cuLaunchKernel(f_rendezvous, 1, 1, 1, 32, 1, 1, 0, NULL, a0,
			     NULL));
	CHECK(cuLaunchKernel(f_rendezvous, 1, 1, 1, 32, 1, 1, 0, NULL, a1,
			     NULL));
	CHECK(cuCtxSynchronize());
	if (flags[2])
		return fail("the two kernels never ran at the same time");
	printf("met\n");
	return 0;
}

static unsigned long long stream_id(CUstream s)
{
	unsigned long long id = 0;

	CHECK(cuStreamGetId(s, &id));
	return id;
}

static int case_own(void)
{
	static unsigned h[NWORDS];
	unsigned long long id1, id2, legacy;
	struct simcuda_op_info o;
	CUstream s1, s2;
	CUevent ev;

	CHECK(cuStreamCreate(&s1, CU_STREAM_NON_BLOCKING));
	CHECK(cuStreamCreate(&s2, CU_STREAM_NON_BLOCKING));
	CHECK(cuEventCreate(&ev, CU_EVENT_DISABLE_TIMING));
	id1 = stream_id(s1);
	id2 = stream_id(s2);
	legacy = stream_id(CU_STREAM_LEGACY);
	for (int i = 0; i < 4; i++) {
		touch(s1, buf[0], 2000);
		touch(s2, buf[1], 2000);
		CHECK(cuMemsetD32Async(buf[2], (unsigned)i, NWORDS, s1));
		CHECK(cuEventRecord(ev, s1));
		CHECK(cuStreamWaitEvent(s2, ev, 0));
		CHECK(cuMemcpyDtoDAsync(buf[3], buf[2], NWORDS * 4, s2));
		CHECK(cuStreamSynchronize(s2));
		CHECK(cuMemcpyDtoH(h, buf[3], sizeof(h)));
		if (h[0] != (unsigned)i)
			return fail("wrong value read back");
	}
	CHECK(cuStreamSynchronize(s1));
	for (size_t i = 0; i < simcuda_op_count(); i++) {
		if (simcuda_op_get(i, &o) || o.stream == 0)
			continue;
		if (o.stream != id1 && o.stream != id2 && o.stream != legacy) {
			fprintf(stderr, "streams-cases: %s ran on stream %llu, "
				"not one of the program's (%llu %llu %llu)\n",
				o.name, (unsigned long long)o.stream, id1, id2,
				legacy);
			return 1;
		}
	}
	printf("streams %llu %llu untouched\n", id1, id2);
	return 0;
}

/*
 * A blocking stream keeps its order with the legacy stream, and the pool
 * keeps scheduling: its work follows all earlier default-stream work,
 * later default-stream work follows it.
 */
static int case_blocking(void)
{
	unsigned long long legacy = stream_id(CU_STREAM_LEGACY);
	struct simcuda_op_info k[5], o;
	int nk = 0;
	CUstream s;

	probe(NULL, buf[0], 20000);	/* k[0], k[1]: independent */
	probe(NULL, buf[1], 20000);
	CHECK(cuStreamCreate(&s, 0));
	touch(s, buf[2], 10000);	/* k[2]: after both, though unrelated */
	touch(NULL, buf[3], 1000);	/* k[3], k[4]: after k[2] */
	probe(NULL, buf[4], 1000);
	CHECK(cuCtxSynchronize());
	for (size_t i = 0; i < simcuda_op_count(); i++) {
		if (simcuda_op_get(i, &o) || o.kind != SIMCUDA_OP_KERNEL)
			continue;
		if (nk == 5)
			return fail("more kernels ran than were launched");
		/* By submission order. */
		int at = nk++;

		while (at > 0 && k[at - 1].seq > o.seq) {
			k[at] = k[at - 1];
			at--;
		}
		k[at] = o;
	}
	if (nk != 5)
		return fail("not every kernel ran");
	if (k[2].stream != stream_id(s))
		return fail("the blocking stream's kernel ran elsewhere");
	if (k[2].start_ns < k[0].end_ns || k[2].start_ns < k[1].end_ns)
		return fail("the blocking stream's kernel started before the "
			    "default-stream work before it ended");
	if (k[3].start_ns < k[2].end_ns || k[4].start_ns < k[2].end_ns)
		return fail("default-stream work started before the blocking "
			    "stream's kernel before it ended");
	if (getenv("KMUX_STREAMS")) {
		if (k[0].stream == legacy || k[3].stream == legacy)
			return fail("default-stream work left the pool");
		if (k[0].start_ns >= k[1].end_ns ||
		    k[1].start_ns >= k[0].end_ns)
			return fail("independent default-stream kernels did not "
				    "overlap: scheduling stopped");
	}
	CHECK(cuStreamDestroy(s));
	printf("a blocking stream keeps its order with the default stream\n");
	return 0;
}

/* x = 3x + 1 on p's NWORDS words, us of simulated time, on stream s. */
static void bump(CUstream s, CUdeviceptr p, unsigned us)
{
	int n = NWORDS;
	void *a[] = { &p, &n, &us };

	CHECK(cuLaunchKernel(f_bump, 1, 1, 1, 32, 1, 1, 0, s, a, NULL));
}

/* x = x + 1 on p's NWORDS words, on the default stream. */
static void inc(CUdeviceptr p)
{
	int n = NWORDS;
	void *a[] = { &p, &n };

	CHECK(cuLaunchKernel(f_inc, 1, 1, 1, 32, 1, 1, 0, NULL, a, NULL));
}

/*
 * n blocking streams in one context: kmux bridges 16, the 17th switches
 * the context off (drained; its default-stream work then runs on the
 * legacy stream).  Every step on the shared buffer must keep the legacy
 * order: a blocking stream's bump after the default-stream work before it,
 * the default stream's increment after the bump.  x = 3x + 1 and x + 1 do
 * not commute, so the value read back tells a wrong order.
 */
static int case_blocking_many(int n)
{
	CUstream s[BLOCKING_MANY_MAX];
	CUdeviceptr acc = buf[5];
	struct simcuda_op_info o, k[2];
	unsigned want = 0, got[NWORDS];
	int nk = 0;

	if (n < 1 || n > BLOCKING_MANY_MAX)
		return fail("blockingN: N must be in 1..64");
	CHECK(cuMemsetD32(acc, 0, NWORDS));
	touch(NULL, buf[0], 20000);	/* independent: side by side */
	touch(NULL, buf[1], 20000);
	for (int round = 0; round < 2; round++) {
		for (int i = 0; i < n; i++) {
			if (!round)
				CHECK(cuStreamCreate(&s[i], 0));
			bump(s[i], acc, 2000);
			want = want * 3 + 1;
			inc(acc);
			want++;
			touch(NULL, buf[2 + i % 3], 1000);
		}
	}
	CHECK(cuMemcpyDtoH(got, acc, sizeof(got)));
	for (int i = 0; i < NWORDS; i++)
		if (got[i] != want) {
			fprintf(stderr, "streams-cases: blocking %d: word %d "
				"read %u, want %u\n", n, i, got[i], want);
			return 1;
		}
	for (size_t i = 0; i < simcuda_op_count() && nk < 2; i++)
		if (!simcuda_op_get(i, &o) && !strcmp(o.name, "touch") &&
		    o.end_ns - o.start_ns >= 20000000ull)
			k[nk++] = o;
	if (nk != 2)
		return fail("blocking: the first two kernels were not recorded");
	if (getenv("KMUX_STREAMS") && (k[0].start_ns >= k[1].end_ns ||
				       k[1].start_ns >= k[0].end_ns))
		return fail("blocking: the first two kernels did not overlap: "
			    "the pool was not scheduling");
	for (int i = 0; i < n; i++)
		CHECK(cuStreamDestroy(s[i]));
	printf("blocking %d: acc %u as expected\n", n, want);
	return 0;
}

static uint64_t hash(const unsigned *p, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (size_t i = 0; i < n; i++) {
		h ^= p[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

static int is_texobj_user(const struct simcuda_op_info *o)
{
	return o->kind == SIMCUDA_OP_KERNEL &&
	       (!strcmp(o->name, "tex_sum") || !strcmp(o->name, "surf_bump") ||
		!strcmp(o->name, "word") || !strcmp(o->name, "tex_via"));
}

/* A texture object over linear memory: the words of buffer p. */
static CUtexObject texture_over(CUdeviceptr p)
{
	CUDA_RESOURCE_DESC res = { .resType = CU_RESOURCE_TYPE_LINEAR };
	CUDA_TEXTURE_DESC tex = { .flags = CU_TRSF_READ_AS_INTEGER };
	CUtexObject t;

	res.res.linear.devPtr = p;
	res.res.linear.format = CU_AD_FORMAT_UNSIGNED_INT32;
	res.res.linear.numChannels = 1;
	res.res.linear.sizeInBytes = NWORDS * 4;
	CHECK(cuTexObjectCreate(&t, &res, &tex, NULL));
	return t;
}

/*
 * Texture and surface objects: the kernel's parameter is a handle, and
 * what it reaches (buf[0], written by the kernel just before; an array)
 * is in no parameter.
 */
static int case_texobj(const char *m)
{
	CUDA_ARRAY3D_DESCRIPTOR ad = {
		.Width = NWORDS, .Height = 1, .Format =
		CU_AD_FORMAT_UNSIGNED_INT32, .NumChannels = 1,
		.Flags = CUDA_ARRAY3D_SURFACE_LDST,
	};
	CUDA_RESOURCE_DESC res = { .resType = CU_RESOURCE_TYPE_ARRAY };
	unsigned long long v;
	unsigned us = 1000;
	CUsurfObject so;
	CUtexObject t;
	CUarray arr;
	void *a[3];

	if (!strcmp(m, "surface")) {
		CHECK(cuArray3DCreate(&arr, &ad));
		res.res.array.hArray = arr;
		CHECK(cuSurfObjectCreate(&so, &res));
		around_before();
		a[0] = &so;
		a[1] = &us;
		CHECK(cuLaunchKernel(f_surf_bump, 1, 1, 1, 32, 1, 1, 0, NULL,
				     a, NULL));
		around_after();
		CHECK(cuSurfObjectDestroy(so));
		CHECK(cuArrayDestroy(arr));
		return check_barrier(is_texobj_user, 1);
	}
	t = texture_over(buf[0]);
	if (!strcmp(m, "texture")) {
		around_before();
		a[0] = &t;
		a[1] = &buf[5];
		a[2] = &us;
		CHECK(cuLaunchKernel(f_tex_sum, 1, 1, 1, 32, 1, 1, 0, NULL, a,
				     NULL));
		around_after();
		CHECK(cuTexObjectDestroy(t));
		return check_barrier(is_texobj_user, 1);
	}
	if (!strcmp(m, "texture-table")) {
		CHECK(cuMemcpyHtoD(buf[6], &t, sizeof(t)));
		around_before();
		a[0] = &buf[6];
		a[1] = &buf[5];
		a[2] = &us;
		CHECK(cuLaunchKernel(f_tex_via, 1, 1, 1, 32, 1, 1, 0, NULL, a,
				     NULL));
		around_after();
		CHECK(cuTexObjectDestroy(t));
		return check_barrier(is_texobj_user, 1);
	}
	v = t;
	if (!strcmp(m, "texture-gone"))
		CHECK(cuTexObjectDestroy(t));
	around_before();
	a[0] = &v;
	a[1] = &us;
	CHECK(cuLaunchKernel(f_word, 1, 1, 1, 32, 1, 1, 0, NULL, a, NULL));
	around_after();
	if (strcmp(m, "texture-gone"))
		CHECK(cuTexObjectDestroy(t));
	return check_barrier(is_texobj_user, 1);
}

static int case_graph_mem(void)
{
	CUDA_MEM_ALLOC_NODE_PARAMS p = { 0 };
	uint64_t s1 = 0, e1 = 0, s2 = 0, e2 = 0;
	struct simcuda_op_info o;
	CUgraphExec exec;
	CUgraphNode node;
	CUgraph g;
	CUstream s;
	int seen = 0;

	p.poolProps.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
	p.poolProps.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	p.bytesize = NWORDS * 4;
	CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	CHECK(cuGraphCreate(&g, 0));
	CHECK(cuGraphAddMemAllocNode(&node, g, NULL, 0, &p));
	CHECK(cuGraphInstantiate(&exec, g, 0));
	CHECK(cuGraphLaunch(exec, s));
	CHECK(cuStreamSynchronize(s));
	CHECK(cuMemFree(p.dptr));
	CHECK(cuGraphLaunch(exec, s));
	CHECK(cuStreamSynchronize(s));
	simcuda_records_clear();
	probe(NULL, p.dptr, LONG_US);
	probe(NULL, p.dptr, LONG_US);
	CHECK(cuCtxSynchronize());
	for (size_t i = 0; i < simcuda_op_count(); i++) {
		if (simcuda_op_get(i, &o) || !is_probe(&o))
			continue;
		if (seen++ == 0) {
			s1 = o.start_ns;
			e1 = o.end_ns;
		} else {
			s2 = o.start_ns;
			e2 = o.end_ns;
		}
	}
	CHECK(cuMemFree(p.dptr));
	CHECK(cuGraphExecDestroy(exec));
	CHECK(cuGraphDestroy(g));
	CHECK(cuStreamDestroy(s));
	if (seen != 2)
		return fail("graph-mem: expected two probe kernels");
	if (s2 < e1 && s1 < e2)
		return fail("graph-mem: the two writers of the graph's "
			    "allocation overlapped");
	printf("graph-mem ordered\n");
	return 0;
}

static int case_chase(void)
{
	static unsigned h[NWORDS];
	CUdeviceptr ptrs = buf[6], target = buf[7], ptrs_hi = ptrs + 4;
	unsigned v = 7, ms = 100;
	unsigned lo = (unsigned)target, hi = (unsigned)(target >> 32);
	int n = NWORDS, one = 1;
	void *a[] = { &ptrs, &v, &n, &ms };
	void *flo[] = { &ptrs, &lo, &one }, *fhi[] = { &ptrs_hi, &hi, &one };

	/*
	 * The pointer reaches ptrs written by kernels, 32 bits at a time: a
	 * table kmux sees filled from the host, or copied from one (case
	 * table), would be followed.
	 */
	CHECK(cuLaunchKernel(f_fill, 1, 1, 1, 1, 1, 1, 0, NULL, flo, NULL));
	CHECK(cuLaunchKernel(f_fill, 1, 1, 1, 1, 1, 1, 0, NULL, fhi, NULL));
	CHECK(cuMemsetD32(target, 0, NWORDS));
	CHECK(cuMemcpyDtoH(h, ptrs, sizeof(target)));
	printf("a %016llx\n", (unsigned long long)hash(h, 2));
	/* Writes target, which is not among its parameters. */
	CHECK(cuLaunchKernel(f_store_via, 1, 1, 1, 32, 1, 1, 0, NULL, a, NULL));
	CHECK(cuMemcpyDtoH(h, target, sizeof(h)));
	printf("b %016llx\n", (unsigned long long)hash(h, NWORDS));
	return 0;
}

/* How case_table's table reaches the device. */
enum table_how {
	TABLE_HTOD,		/* cuMemcpyHtoD */
	TABLE_UNIFIED,		/* cuMemcpy from pageable memory */
	TABLE_WIDE,		/* TABLE_WIDE_LEN allocations: opaque */
	TABLE_DTOD,		/* uploaded into a staging buffer, copied over */
	TABLE_LARGE,		/* the pointer past the first 64 KiB */
	TABLE_HUGE,		/* over 16 MiB: not read to its end, opaque */
};

#define TABLE_LARGE_WORDS	9216		/* 72 KiB */
#define TABLE_LARGE_AT		9000
#define TABLE_HUGE_BYTES	(17u << 20)

/*
 * A pointer table built by the host: store_via writes target through it,
 * 100 ms after it starts; the read-back of target must see that write
 * (kmux follows the table, ptrtab.h), and the memset before it must not
 * run after it.
 */
static int case_table(enum table_how how)
{
	static unsigned h[NWORDS];
	static CUdeviceptr table[TABLE_WIDE_LEN];
	CUdeviceptr ptrs = buf[6], target = buf[7], pp, *big = NULL;
	unsigned v = 7, ms = 100;
	int n = NWORDS, len = 1;
	void *a[] = { &pp, &v, &n, &ms };

	table[0] = target;
	pp = ptrs;
	switch (how) {
	case TABLE_WIDE:
		/* More allocations than kmux keeps per table: opaque. */
		CHECK(cuMemAlloc(&ptrs, sizeof(table)));
		pp = ptrs;
		for (len = 1; len < TABLE_WIDE_LEN; len++)
			CHECK(cuMemAlloc(&table[len], 64));
		/* fall through */
	case TABLE_HTOD:
		CHECK(cuMemcpyHtoD(ptrs, table, (size_t)len * sizeof(table[0])));
		break;
	case TABLE_UNIFIED:	/* kmux asks the driver what the source is */
		CHECK(cuMemcpy(ptrs, (CUdeviceptr)(uintptr_t)table,
			       sizeof(table[0])));
		break;
	case TABLE_DTOD:
		CHECK(cuMemcpyHtoD(buf[5], table, sizeof(table[0])));
		CHECK(cuMemcpyDtoD(ptrs, buf[5], sizeof(table[0])));
		break;
	case TABLE_LARGE:
	case TABLE_HUGE: {
		/* Every other word points at buf[3]: the head is a table. */
		size_t bytes = how == TABLE_LARGE ?
			       TABLE_LARGE_WORDS * sizeof(CUdeviceptr) :
			       TABLE_HUGE_BYTES;
		size_t at = how == TABLE_LARGE ? TABLE_LARGE_AT : 0;

		big = malloc(bytes);
		if (!big)
			return fail("table: out of host memory");
		for (size_t i = 0; i < bytes / sizeof(*big); i++)
			big[i] = buf[3];
		big[at] = target;
		CHECK(cuMemAlloc(&ptrs, bytes));
		CHECK(cuMemcpyHtoD(ptrs, big, bytes));
		pp = ptrs + at * sizeof(*big);
		free(big);
		break;
	}
	}
	CHECK(cuMemsetD32(target, 0, NWORDS));
	CHECK(cuLaunchKernel(f_store_via, 1, 1, 1, 32, 1, 1, 0, NULL, a, NULL));
	touch(NULL, buf[0], 1000);	/* unrelated: may run beside it */
	CHECK(cuMemcpyDtoH(h, target, sizeof(h)));
	for (int i = 0; i < NWORDS; i++)
		if (h[i] != v)
			return fail("table: the read-back did not wait for the "
				    "kernel that writes through the table");
	printf("table ok\n");
	return 0;
}

static int case_readback(int own)
{
	CUdeviceptr r = buf[2];
	unsigned v[4], one, up[4], want;
	CUstream mine;
	int n = 4;

	if (own)
		CHECK(cuStreamCreate(&mine, CU_STREAM_NON_BLOCKING));
	for (unsigned i = 1; i <= 24; i++) {
		void *fa[] = { &r, &i, &n };
		void *ia[] = { &r, &n };

		CHECK(cuLaunchKernel(f_fill_slow, 1, 1, 1, 32, 1, 1, 0, NULL, fa,
				     NULL));
		want = i;
		touch(NULL, buf[3], 5000);
		switch (i % 6) {
		case 0:
			want = i * 1000;
			CHECK(cuMemsetD32(r, want, 4));
			break;
		case 3:
			want = i * 7;
			for (int k = 0; k < 4; k++)
				up[k] = want;
			CHECK(cuMemcpyHtoD(r, up, sizeof(up)));
			break;
		case 5:
			want = i + 1;
			CHECK(cuLaunchKernel(f_inc, 1, 1, 1, 32, 1, 1, 0, NULL,
					     ia, NULL));
			break;
		}
		CHECK(cuMemcpyDtoH(v, r, sizeof(v)));
		for (int k = 0; k < 4; k++)
			if (v[k] != want) {
				fprintf(stderr, "streams-cases: round %u: word %d "
					"read %u, want %u\n", i, k, v[k], want);
				return 1;
			}
		CHECK(cuMemcpyDtoH(&one, r + 8, sizeof(one)));
		if (one != want) {
			fprintf(stderr, "streams-cases: round %u: word 2 alone "
				"read %u, want %u\n", i, one, want);
			return 1;
		}
	}
	printf("readback ok\n");
	if (own)
		CHECK(cuStreamDestroy(mine));
	return 0;
}

int main(int argc, char **argv)
{
	const char *mod = e2e_module_path(), *slash, *m;
	CUmodule basic, dag;
	char path[4096];
	CUcontext ctx;
	CUdevice dev;
	int r;

	if (argc != 2) {
		fprintf(stderr, "usage: streams-cases MODE\n");
		return 2;
	}
	m = argv[1];
	slash = strrchr(mod, '/');
	snprintf(path, sizeof(path), "%.*s/dag.so",
		 slash ? (int)(slash - mod) : 1, slash ? mod : ".");
	CHECK(cuInit(0));
	CHECK(cuDeviceGet(&dev, 0));
	CHECK(cuCtxCreate(&ctx, NULL, 0, dev));
	CHECK(cuModuleLoad(&basic, mod));
	CHECK(cuModuleLoad(&dag, path));
	CHECK(cuModuleGetFunction(&f_touch, basic, "touch"));
	CHECK(cuModuleGetFunction(&f_rendezvous, basic, "rendezvous"));
	CHECK(cuModuleGetFunction(&f_probe, dag, "probe"));
	CHECK(cuModuleGetFunction(&f_pause0, dag, "pause0"));
	CHECK(cuModuleGetFunction(&f_store_via, dag, "store_via"));
	CHECK(cuModuleGetFunction(&f_bump, dag, "bump"));
	CHECK(cuModuleGetFunction(&f_tex_sum, dag, "tex_sum"));
	CHECK(cuModuleGetFunction(&f_surf_bump, dag, "surf_bump"));
	CHECK(cuModuleGetFunction(&f_word, dag, "word"));
	CHECK(cuModuleGetFunction(&f_tex_via, dag, "tex_via"));
	CHECK(cuModuleGetFunction(&f_fill_slow, basic, "fill_slow"));
	CHECK(cuModuleGetFunction(&f_inc, basic, "inc_u32"));
	CHECK(cuModuleGetFunction(&f_fill, basic, "fill_u32"));
	for (int i = 0; i < 8; i++)
		CHECK(cuMemAlloc(&buf[i], NWORDS * 4));
	/* Only what the case itself does is checked. */
	CHECK(cuCtxSynchronize());
	simcuda_records_clear();

	if (!strcmp(m, "graph"))
		r = case_graph();
	else if (!strcmp(m, "hostfunc") || !strcmp(m, "callback"))
		r = case_host(!strcmp(m, "callback"));
	else if (!strcmp(m, "managed") || !strcmp(m, "hostmem") ||
		 !strcmp(m, "regex"))
		r = case_memory(m);
	else if (!strcmp(m, "opaque"))
		r = case_opaque();
	else if (!strcmp(m, "opaque-params") || !strcmp(m, "unknown") ||
		 !strcmp(m, "unknown-extra") || !strcmp(m, "extra"))
		r = case_unreadable(m);
	else if (!strcmp(m, "streamop"))
		r = case_streamop();
	else if (!strcmp(m, "capture"))
		r = case_capture();
	else if (!strcmp(m, "waitevent"))
		r = case_waitevent();
	else if (!strcmp(m, "independent"))
		r = case_independent();
	else if (!strcmp(m, "rendezvous"))
		r = case_rendezvous();
	else if (!strcmp(m, "own"))
		r = case_own();
	else if (!strcmp(m, "blocking"))
		r = case_blocking();
	else if (!strncmp(m, "blocking", 8) && m[8] >= '1' && m[8] <= '9')
		r = case_blocking_many(atoi(m + 8));
	else if (!strcmp(m, "texture") || !strcmp(m, "surface") ||
		 !strcmp(m, "texture-gone") || !strcmp(m, "texture-word") ||
		 !strcmp(m, "texture-table"))
		r = case_texobj(m);
	else if (!strcmp(m, "graph-mem"))
		r = case_graph_mem();
	else if (!strcmp(m, "chase"))
		r = case_chase();
	else if (!strcmp(m, "table"))
		r = case_table(TABLE_HTOD);
	else if (!strcmp(m, "table-unified"))
		r = case_table(TABLE_UNIFIED);
	else if (!strcmp(m, "table-wide"))
		r = case_table(TABLE_WIDE);
	else if (!strcmp(m, "table-dtod"))
		r = case_table(TABLE_DTOD);
	else if (!strcmp(m, "table-large"))
		r = case_table(TABLE_LARGE);
	else if (!strcmp(m, "table-huge"))
		r = case_table(TABLE_HUGE);
	else if (!strcmp(m, "pause"))
		r = case_pause();
	else if (!strcmp(m, "readback") || !strcmp(m, "readback-own"))
		r = case_readback(!strcmp(m, "readback-own"));
	else if (!strcmp(m, "keepup"))
		r = case_keepup();
	else if (!strcmp(m, "passthru"))
		r = case_passthru();
	else if (!strcmp(m, "pace"))
		r = case_pace();
	else if (!strcmp(m, "pace-phases"))
		r = case_pace_phases();
	else if (!strcmp(m, "weights"))
		r = case_weights();
	else if (!strcmp(m, "d2d") || !strcmp(m, "d2d-own") ||
		 !strcmp(m, "d2d-blocking"))
		r = case_d2d(!strcmp(m, "d2d-own") ? 1 :
			     !strcmp(m, "d2d-blocking") ? 2 : 0);
	else
		return fail("unknown mode");
	CHECK(cuCtxDestroy(ctx));
	return r;
}
