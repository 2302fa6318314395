/*
 * test-proto.c - unit tests of the wire protocol codec.
 *
 * Every message type is encoded from a sample, decoded and compared field
 * by field, and encoded again to the same bytes.  Then the decoder is
 * attacked: every truncation of every sample, wrong magic and version at
 * each byte, oversized lengths, strings without terminators, counts beyond
 * the payload, trailing bytes, reserved bits, every semantic rule, streams
 * cut into random pieces, and random mutations (a small in-process fuzzer,
 * so that CI exercises the decoder even without libFuzzer).
 *
 * KMUX_TEST_SEED=<n> replays the random tests with another seed.
 */
#include <endian.h>
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "proto.h"

#define BUFSZ (PROTO_MAX_MSG + 4096)

static uint64_t seed = 0x70726f746fu;	/* "proto" */

static uint64_t rnd(void)
{
	seed ^= seed >> 12;
	seed ^= seed << 25;
	seed ^= seed >> 27;
	return seed * 0x2545f4914f6cdd1dull;
}

/* ------------------------------------------------------------------------
 * Samples: one message of each type, with every field non-trivial.
 */
static const char *const argv3[] = { "python3", "train.py", "--epochs=3" };
static const char *const env2[] = { "CUDA_VISIBLE_DEVICES=0", "HOME=/root" };
static const char *const reg_argv[] = { "./a.out", "" };

static const struct proto_job_rec jobs3[] = {
	{ .id = 1, .gpus = 0x1, .mem_request = 1ull << 30, .mem_peak = 123,
	  .submit_us = 1700000000000000ull, .start_us = 1700000000000001ull,
	  .end_us = 1700000000000002ull, .uid = 1000, .pid = 4242,
	  .state = PROTO_JOB_EXITED, .exit_code = 3, .signal = 0, .ngpus = 1,
	  .mem_quota = 2ull << 30, .mem_used = 456, .kernel_rate = 1234,
	  .mem_evicted = 64ull << 20, .mem_reserved = 1ull << 30,
	  .evicts = 12, .restores = 7,
	  .name = "train", .cmd = "python3 train.py" },
	{ .id = 2, .gpus = 0, .state = PROTO_JOB_QUEUED,
	  .exit_code = PROTO_EXIT_UNKNOWN, .ngpus = 2, .name = "",
	  .cmd = "" },
	{ .id = UINT64_MAX, .gpus = UINT64_MAX, .uid = UINT32_MAX,
	  .state = PROTO_JOB_CANCELLED, .exit_code = 255, .signal = 9,
	  .ngpus = PROTO_MAX_GPUS, .mem_quota = UINT64_MAX,
	  .mem_used = UINT64_MAX, .kernel_rate = UINT32_MAX,
	  .wait_rate = UINT32_MAX, .mem_evicted = UINT64_MAX, .mem_reserved = UINT64_MAX,
	  .evicts = UINT64_MAX, .restores = UINT64_MAX, .name = "x",
	  .cmd = NULL },
	{ .id = 4, .gpus = 0x2, .state = PROTO_JOB_RUNNING,
	  .exit_code = PROTO_EXIT_UNKNOWN, .ngpus = 1, .mem_quota = 8 << 20,
	  .flags = PROTO_JOBREC_F_SUSPENDED, .name = "s", .cmd = "./m" },
	{ .id = 5, .gpus = 0x1, .state = PROTO_JOB_RUNNING,
	  .exit_code = PROTO_EXIT_UNKNOWN, .ngpus = 1, .wait_rate = 28000,
	  .flags = PROTO_JOBREC_F_WAIT_BOUND | PROTO_JOBREC_F_SUSPENDED,
	  .name = "w", .cmd = "./staged" },
	{ .id = 6, .state = PROTO_JOB_QUEUED, .exit_code = PROTO_EXIT_UNKNOWN,
	  .ngpus = 1, .flags = PROTO_JOBREC_F_WAIT_BOUND, .name = "",
	  .cmd = "./staged" },
	/* v10: held, a queued job the node cannot run as it is now. */
	{ .id = 7, .state = PROTO_JOB_QUEUED, .exit_code = PROTO_EXIT_UNKNOWN,
	  .ngpus = 2, .held = PROTO_HELD_GPUS, .name = "two", .cmd = "./t" },
	{ .id = 8, .state = PROTO_JOB_QUEUED, .exit_code = PROTO_EXIT_UNKNOWN,
	  .ngpus = 1, .held = PROTO_HELD_NO_GPUS, .name = "", .cmd = "./n" },
};

static const uint8_t log_bytes[] = { 0, 1, 2, 'h', 'i', '\n', 0xff, 0 };

/* The type list, in one place, for every loop over "all types". */
static const uint16_t all_types[] = {
	PROTO_HELLO, PROTO_SUBMIT, PROTO_RUN, PROTO_REGISTER,
	PROTO_ALLOC_UPDATE, PROTO_PS, PROTO_WAIT, PROTO_CANCEL, PROTO_LOGS,
	PROTO_TOP, PROTO_FINISHED, PROTO_OK, PROTO_ERROR, PROTO_ADMIT,
	PROTO_JOB_LIST, PROTO_EXITED, PROTO_GPU_LIST, PROTO_LOG_DATA,
	PROTO_QUEUED, PROTO_REGION_ENTER, PROTO_REGION_LEAVE, PROTO_DRAINED,
	PROTO_DRAIN, PROTO_REGION_GRANTED, PROTO_MEM_PRESSURE, PROTO_ATTACH,
	PROTO_STARTED,
};
#define NTYPES (sizeof(all_types) / sizeof(all_types[0]))

static void sample(uint16_t type, struct proto_msg *m)
{
	memset(m, 0, sizeof(*m));
	m->type = type;
	m->seq = 0x01020304u + type;
	switch (type) {
	case PROTO_HELLO:
		m->u.hello = (struct proto_hello){ PROTO_ROLE_PRELOAD, 77,
						   "kmux 0.1" };
		break;
	case PROTO_SUBMIT:
	case PROTO_RUN:
		m->u.job = (struct proto_job_req){
			.flags = PROTO_JOB_F_EXCLUSIVE, .ngpus = 2,
			.mem = 12ull << 30, .prio = -5, .name = "my job",
			.cwd = "/home/u/src",
			.argv = { .count = 3, .vec = argv3 },
			.env = { .count = 2, .vec = env2 },
		};
		break;
	case PROTO_REGISTER:
		m->u.reg = (struct proto_register){
			.job = 0, .pid_start = 987654321, .pid = 31337,
			.mem = 3ull << 30, .gpus = 0x5, .ngpus = 2,
			.name = "slurm-7.0.1",
			.argv = { .count = 2, .vec = reg_argv },
		};
		break;
	case PROTO_ALLOC_UPDATE:
		m->u.alloc = (struct proto_alloc_update){ 9, 100, 3, 1000,
							  2000, 4096, 777, 5000,
							  9000, 4, 3,
							  PROTO_ALLOC_F_EVICT,
							  48ull << 20, 31337 };
		break;
	case PROTO_PS:
		m->u.ps = (struct proto_ps){ PROTO_PS_F_ALL_USERS,
					     1u << PROTO_JOB_RUNNING };
		break;
	case PROTO_WAIT:
		m->u.wait.job = 17;
		break;
	case PROTO_ATTACH:
		m->u.attach.job = 0x8000000000000011ull;
		break;
	case PROTO_STARTED:
		m->u.started = (struct proto_started){ 0x8000000000000012ull,
						       0x7ffffffeu };
		break;
	case PROTO_CANCEL:
		m->u.cancel = (struct proto_cancel){ 18, 15 };
		break;
	case PROTO_LOGS:
		m->u.logs = (struct proto_logs){ 19, 1234, PROTO_LOGS_F_FOLLOW };
		break;
	case PROTO_TOP:
		break;
	case PROTO_FINISHED:
		m->u.finished = (struct proto_finished){ 20, 555, 1, 0, 0 };
		break;
	case PROTO_OK:
		m->u.ok.id = 0xfedcba9876543210ull;
		break;
	case PROTO_ERROR:
		m->u.error = (struct proto_error){ ENOSPC, "no GPU has 200 GiB" };
		break;
	case PROTO_ADMIT:
		m->u.admit.job = 21;
		m->u.admit.quota = 40ull << 30;
		m->u.admit.ngpus = 3;
		m->u.admit.gpus[0] = 5;
		m->u.admit.gpus[1] = 0;
		m->u.admit.gpus[2] = 63;
		m->u.admit.mps_pipe = "/run/user/1000/kmux/sock.mps/pipe";
		m->u.admit.mps_log = "/run/user/1000/kmux/sock.mps/log";
		break;
	case PROTO_JOB_LIST:
		m->u.jobs = (struct proto_job_list){
			.count = sizeof(jobs3) / sizeof(jobs3[0]), .vec = jobs3 };
		break;
	case PROTO_EXITED:
		m->u.exited = (struct proto_exited){ 22, PROTO_JOB_EXITED,
						     PROTO_EXIT_UNKNOWN, 0 };
		break;
	case PROTO_GPU_LIST:
		m->u.gpus.count = 2;
		m->u.gpus.gpu[0] = (struct proto_gpu_rec){ 0, 2, 80ull << 30,
			40ull << 30, 41ull << 30, 750, 1250 };
		m->u.gpus.gpu[1] = (struct proto_gpu_rec){ 7, 0, 141ull << 30,
			0, 1ull << 20, 0, 0 };
		m->u.gpus.note = "";
		break;
	case PROTO_LOG_DATA:
		m->u.log = (struct proto_log_data){ 23, 4096, PROTO_LOG_F_EOF,
						    sizeof(log_bytes), log_bytes };
		break;
	case PROTO_QUEUED:
		m->u.queued = (struct proto_queued){ 24, 2 };
		break;
	case PROTO_REGION_ENTER:
		m->u.renter = (struct proto_region_enter){ 25, 4242, 3, 0 };
		break;
	case PROTO_REGION_LEAVE:
		m->u.rleave = (struct proto_region_leave){ 4242 };
		break;
	case PROTO_DRAINED:
		m->u.drained = (struct proto_drained){ UINT64_MAX, 77 };
		break;
	case PROTO_DRAIN:
		m->u.drain = (struct proto_drain){ 9, PROTO_MAX_GPUS - 1 };
		break;
	case PROTO_REGION_GRANTED:
		m->u.granted = (struct proto_region_granted){ 5, 123456, 1, 3 };
		break;
	case PROTO_MEM_PRESSURE:
		m->u.pressure = (struct proto_mem_pressure){ 48ull << 20, 2,
							    PROTO_PRESSURE_F_BUDGET };
		break;
	default:
		fail_msg("no sample for type %u", type);
	}
}

static size_t encode(uint8_t *buf, size_t cap, const struct proto_msg *m)
{
	struct proto_buf out = { buf, cap, 0 };

	assert_int_equal(proto_encode(&out, m), 0);
	return out.len;
}

static void str_eq(const char *got, const char *want)
{
	assert_string_equal(got, want ? want : "");
}

static void strv_eq(const struct proto_strv *got, const char *const *want,
		    uint32_t n)
{
	struct proto_iter it = { 0 };
	const char *s;
	uint32_t i = 0;

	assert_int_equal(got->count, n);
	assert_null(got->vec);
	while (proto_strv_next(got, &it, &s)) {
		assert_true(i < n);
		assert_string_equal(s, want[i]);
		i++;
	}
	assert_int_equal(i, n);
}

/* Field-by-field: a swapped pair of fields would survive a bytes check. */
static void msg_eq(const struct proto_msg *a, const struct proto_msg *b)
{
	uint32_t i;

	assert_int_equal(a->type, b->type);
	assert_int_equal(a->seq, b->seq);
	switch (a->type) {
	case PROTO_HELLO:
		assert_int_equal(a->u.hello.role, b->u.hello.role);
		assert_int_equal(a->u.hello.pid, b->u.hello.pid);
		str_eq(a->u.hello.ident, b->u.hello.ident);
		break;
	case PROTO_SUBMIT:
	case PROTO_RUN:
		assert_int_equal(a->u.job.flags, b->u.job.flags);
		assert_int_equal(a->u.job.ngpus, b->u.job.ngpus);
		assert_int_equal(a->u.job.mem, b->u.job.mem);
		assert_int_equal(a->u.job.prio, b->u.job.prio);
		str_eq(a->u.job.name, b->u.job.name);
		str_eq(a->u.job.cwd, b->u.job.cwd);
		strv_eq(&a->u.job.argv, b->u.job.argv.vec, b->u.job.argv.count);
		strv_eq(&a->u.job.env, b->u.job.env.vec, b->u.job.env.count);
		break;
	case PROTO_REGISTER:
		assert_int_equal(a->u.reg.job, b->u.reg.job);
		assert_int_equal(a->u.reg.pid_start, b->u.reg.pid_start);
		assert_int_equal(a->u.reg.pid, b->u.reg.pid);
		assert_true(a->u.reg.mem == b->u.reg.mem);
		assert_true(a->u.reg.gpus == b->u.reg.gpus);
		assert_int_equal(a->u.reg.flags, b->u.reg.flags);
		assert_int_equal(a->u.reg.ngpus, b->u.reg.ngpus);
		str_eq(a->u.reg.name, b->u.reg.name);
		strv_eq(&a->u.reg.argv, b->u.reg.argv.vec, b->u.reg.argv.count);
		break;
	case PROTO_ALLOC_UPDATE:
		assert_int_equal(a->u.alloc.job, b->u.alloc.job);
		assert_int_equal(a->u.alloc.pid, b->u.alloc.pid);
		assert_int_equal(a->u.alloc.gpu, b->u.alloc.gpu);
		assert_int_equal(a->u.alloc.resident, b->u.alloc.resident);
		assert_int_equal(a->u.alloc.peak, b->u.alloc.peak);
		assert_int_equal(a->u.alloc.want, b->u.alloc.want);
		assert_int_equal(a->u.alloc.kernels, b->u.alloc.kernels);
		assert_int_equal(a->u.alloc.evicted, b->u.alloc.evicted);
		assert_int_equal(a->u.alloc.reserved, b->u.alloc.reserved);
		assert_int_equal(a->u.alloc.evicts, b->u.alloc.evicts);
		assert_int_equal(a->u.alloc.restores, b->u.alloc.restores);
		assert_int_equal(a->u.alloc.flags, b->u.alloc.flags);
		assert_int_equal(a->u.alloc.thrash_ws, b->u.alloc.thrash_ws);
		assert_int_equal(a->u.alloc.waits, b->u.alloc.waits);
		break;
	case PROTO_PS:
		assert_int_equal(a->u.ps.flags, b->u.ps.flags);
		assert_int_equal(a->u.ps.states, b->u.ps.states);
		break;
	case PROTO_WAIT:
		assert_int_equal(a->u.wait.job, b->u.wait.job);
		break;
	case PROTO_ATTACH:
		assert_true(a->u.attach.job == b->u.attach.job);
		break;
	case PROTO_STARTED:
		assert_true(a->u.started.job == b->u.started.job);
		assert_int_equal(a->u.started.pid, b->u.started.pid);
		break;
	case PROTO_CANCEL:
		assert_int_equal(a->u.cancel.job, b->u.cancel.job);
		assert_int_equal(a->u.cancel.signal, b->u.cancel.signal);
		break;
	case PROTO_LOGS:
		assert_int_equal(a->u.logs.job, b->u.logs.job);
		assert_int_equal(a->u.logs.offset, b->u.logs.offset);
		assert_int_equal(a->u.logs.flags, b->u.logs.flags);
		break;
	case PROTO_TOP:
		assert_int_equal(a->u.top.flags, b->u.top.flags);
		break;
	case PROTO_FINISHED:
		assert_int_equal(a->u.finished.job, b->u.finished.job);
		assert_int_equal(a->u.finished.pid, b->u.finished.pid);
		assert_int_equal(a->u.finished.exit_code, b->u.finished.exit_code);
		assert_int_equal(a->u.finished.signal, b->u.finished.signal);
		assert_int_equal(a->u.finished.flags, b->u.finished.flags);
		break;
	case PROTO_OK:
		assert_true(a->u.ok.id == b->u.ok.id);
		break;
	case PROTO_ERROR:
		assert_int_equal(a->u.error.err, b->u.error.err);
		str_eq(a->u.error.message, b->u.error.message);
		break;
	case PROTO_ADMIT:
		assert_int_equal(a->u.admit.job, b->u.admit.job);
		assert_int_equal(a->u.admit.quota, b->u.admit.quota);
		assert_int_equal(a->u.admit.ngpus, b->u.admit.ngpus);
		for (i = 0; i < a->u.admit.ngpus; i++)
			assert_int_equal(a->u.admit.gpus[i], b->u.admit.gpus[i]);
		str_eq(a->u.admit.mps_pipe, b->u.admit.mps_pipe);
		str_eq(a->u.admit.mps_log, b->u.admit.mps_log);
		break;
	case PROTO_JOB_LIST: {
		struct proto_iter it = { 0 };
		struct proto_job_rec r;

		assert_int_equal(a->u.jobs.count, b->u.jobs.count);
		assert_null(a->u.jobs.vec);
		for (i = 0; proto_job_list_next(&a->u.jobs, &it, &r); i++) {
			const struct proto_job_rec *w = &b->u.jobs.vec[i];

			assert_true(i < b->u.jobs.count);
			assert_true(r.id == w->id && r.gpus == w->gpus);
			assert_true(r.mem_request == w->mem_request);
			assert_true(r.mem_peak == w->mem_peak);
			assert_true(r.submit_us == w->submit_us);
			assert_true(r.start_us == w->start_us);
			assert_true(r.end_us == w->end_us);
			assert_int_equal(r.uid, w->uid);
			assert_int_equal(r.pid, w->pid);
			assert_int_equal(r.state, w->state);
			assert_int_equal(r.exit_code, w->exit_code);
			assert_int_equal(r.signal, w->signal);
			assert_int_equal(r.ngpus, w->ngpus);
			assert_true(r.mem_quota == w->mem_quota);
			assert_true(r.mem_used == w->mem_used);
			assert_int_equal(r.kernel_rate, w->kernel_rate);
			assert_int_equal(r.wait_rate, w->wait_rate);
			assert_true(r.mem_evicted == w->mem_evicted);
			assert_true(r.mem_reserved == w->mem_reserved);
			assert_true(r.evicts == w->evicts);
			assert_true(r.restores == w->restores);
			assert_int_equal(r.flags, w->flags);
			assert_int_equal(r.held, w->held);
			str_eq(r.name, w->name);
			str_eq(r.cmd, w->cmd);
		}
		assert_int_equal(i, b->u.jobs.count);
		break;
	}
	case PROTO_EXITED:
		assert_int_equal(a->u.exited.job, b->u.exited.job);
		assert_int_equal(a->u.exited.state, b->u.exited.state);
		assert_int_equal(a->u.exited.exit_code, b->u.exited.exit_code);
		assert_int_equal(a->u.exited.signal, b->u.exited.signal);
		break;
	case PROTO_GPU_LIST:
		assert_int_equal(a->u.gpus.count, b->u.gpus.count);
		for (i = 0; i < a->u.gpus.count; i++)
			assert_memory_equal(&a->u.gpus.gpu[i], &b->u.gpus.gpu[i],
					    sizeof(struct proto_gpu_rec));
		str_eq(a->u.gpus.note, b->u.gpus.note);
		break;
	case PROTO_LOG_DATA:
		assert_int_equal(a->u.log.job, b->u.log.job);
		assert_int_equal(a->u.log.offset, b->u.log.offset);
		assert_int_equal(a->u.log.flags, b->u.log.flags);
		assert_int_equal(a->u.log.length, b->u.log.length);
		assert_memory_equal(a->u.log.data, b->u.log.data, a->u.log.length);
		break;
	case PROTO_QUEUED:
		assert_int_equal(a->u.queued.job, b->u.queued.job);
		assert_int_equal(a->u.queued.position, b->u.queued.position);
		break;
	case PROTO_REGION_ENTER:
		assert_memory_equal(&a->u.renter, &b->u.renter,
				    sizeof(a->u.renter));
		break;
	case PROTO_REGION_LEAVE:
		assert_int_equal(a->u.rleave.pid, b->u.rleave.pid);
		break;
	case PROTO_DRAINED:
		assert_memory_equal(&a->u.drained, &b->u.drained,
				    sizeof(a->u.drained));
		break;
	case PROTO_DRAIN:
		assert_memory_equal(&a->u.drain, &b->u.drain,
				    sizeof(a->u.drain));
		break;
	case PROTO_REGION_GRANTED:
		assert_memory_equal(&a->u.granted, &b->u.granted,
				    sizeof(a->u.granted));
		break;
	case PROTO_MEM_PRESSURE:
		assert_memory_equal(&a->u.pressure, &b->u.pressure,
				    sizeof(a->u.pressure));
		break;
	default:
		fail_msg("type %u", a->type);
	}
}

/* ------------------------------------------------------------------------
 * Round trips.
 */
static void test_round_trip_all_types(void **state)
{
	static uint8_t buf[4096], again[4096];
	struct proto_msg m, d;
	size_t i, n, used;

	(void)state;
	for (i = 0; i < NTYPES; i++) {
		struct proto_buf out = { again, sizeof(again), 0 };

		sample(all_types[i], &m);
		n = encode(buf, sizeof(buf), &m);
		assert_int_equal(proto_decode(buf, n, &d, &used), 0);
		assert_int_equal(used, n);
		msg_eq(&d, &m);
		/* The decoded form (views into buf) encodes to the same bytes. */
		assert_int_equal(proto_encode(&out, &d), 0);
		assert_int_equal(out.len, n);
		assert_memory_equal(again, buf, n);
		assert_string_not_equal(proto_type_name(m.type), "?");
		assert_int_equal(proto_type_is_request(m.type), m.type < 200);
	}
	assert_string_equal(proto_type_name(999), "?");
	assert_true(proto_type_is_request(114));	/* ATTACH, v11 */
	assert_true(proto_type_is_request(115));	/* STARTED, v12 */
	assert_false(proto_type_is_request(116));
	assert_false(proto_type_is_request(99));
}

/* The per-type wrappers produce the same bytes as proto_encode(). */
static void test_typed_encoders(void **state)
{
	static uint8_t a[4096], b[4096];
	struct proto_msg m;
	size_t i;

	(void)state;
	for (i = 0; i < NTYPES; i++) {
		struct proto_buf out = { b, sizeof(b), 0 };
		size_t n;
		int rc = -1;

		sample(all_types[i], &m);
		n = encode(a, sizeof(a), &m);
		switch (m.type) {
#define CASE(T, fn, f) case T: rc = proto_encode_##fn(&out, m.seq, &m.u.f); break
		CASE(PROTO_HELLO, hello, hello);
		CASE(PROTO_SUBMIT, submit, job);
		CASE(PROTO_RUN, run, job);
		CASE(PROTO_REGISTER, register, reg);
		CASE(PROTO_ALLOC_UPDATE, alloc_update, alloc);
		CASE(PROTO_PS, ps, ps);
		CASE(PROTO_WAIT, wait, wait);
		CASE(PROTO_ATTACH, attach, attach);
		CASE(PROTO_STARTED, started, started);
		CASE(PROTO_CANCEL, cancel, cancel);
		CASE(PROTO_LOGS, logs, logs);
		CASE(PROTO_TOP, top, top);
		CASE(PROTO_FINISHED, finished, finished);
		CASE(PROTO_OK, ok, ok);
		CASE(PROTO_ERROR, error, error);
		CASE(PROTO_ADMIT, admit, admit);
		CASE(PROTO_JOB_LIST, job_list, jobs);
		CASE(PROTO_EXITED, exited, exited);
		CASE(PROTO_GPU_LIST, gpu_list, gpus);
		CASE(PROTO_LOG_DATA, log_data, log);
		CASE(PROTO_QUEUED, queued, queued);
		CASE(PROTO_REGION_ENTER, region_enter, renter);
		CASE(PROTO_REGION_LEAVE, region_leave, rleave);
		CASE(PROTO_DRAINED, drained, drained);
		CASE(PROTO_DRAIN, drain, drain);
		CASE(PROTO_REGION_GRANTED, region_granted, granted);
		CASE(PROTO_MEM_PRESSURE, mem_pressure, pressure);
#undef CASE
		}
		assert_int_equal(rc, 0);
		assert_int_equal(out.len, n);
		assert_memory_equal(a, b, n);
	}
	assert_int_equal(proto_encode_wait(NULL, 0, &(struct proto_wait){ 1 }),
			 -EINVAL);
	{
		struct proto_buf out = { a, sizeof(a), 0 };

		assert_int_equal(proto_encode_wait(&out, 0, NULL), -EINVAL);
	}
}

/* The exact bytes of one frame, so the layout cannot drift unnoticed. */
static void test_golden_bytes(void **state)
{
	static const uint8_t want[] = {
		'K', 'M', 'U', 'X', 13, 0, 106, 0,	/* magic, v13, WAIT */
		8, 0, 0, 0, 0x78, 0x56, 0x34, 0x12,	/* length 8, seq */
		0x2a, 0, 0, 0, 0, 0, 0, 0x80,		/* job */
	};
	uint8_t buf[128];
	struct proto_buf out = { buf, sizeof(buf), 0 };

	(void)state;
	assert_int_equal(proto_encode_wait(&out, 0x12345678,
		&(struct proto_wait){ 0x800000000000002aull }), 0);
	assert_int_equal(out.len, sizeof(want));
	assert_memory_equal(buf, want, sizeof(want));

	/* REGISTER, the preload's layout (v2). */
	static const uint8_t reg[] = {
		'K', 'M', 'U', 'X', 13, 0, 103, 0,
		65, 0, 0, 0, 1, 0, 0, 0,
		7, 0, 0, 0, 0, 0, 0, 0,		/* job */
		9, 0, 0, 0, 0, 0, 0, 0,		/* pid_start */
		0, 0, 0, 0x40, 0, 0, 0, 0,	/* mem 1 GiB */
		0x06, 0, 0, 0, 0, 0, 0, 0,	/* gpus {1,2} */
		0x39, 0x30, 0, 0,		/* pid 12345 */
		1, 0, 0, 0,			/* flags RUNNING */
		2, 0, 0, 0, 0, 0, 0, 0,		/* ngpus, reserved */
		2, 0, 0, 0, 'n', 0,		/* name */
		1, 0, 0, 0, 3, 0, 0, 0, 'a', 'b', 0,	/* argv */
	};
	static const char *const ab[] = { "ab" };

	out.len = 0;
	assert_int_equal(proto_encode_register(&out, 1,
		&(struct proto_register){ .job = 7, .pid_start = 9,
			.mem = 1u << 30, .gpus = 6, .pid = 12345,
			.flags = PROTO_REG_F_RUNNING, .ngpus = 2, .name = "n",
			.argv = { 1, ab, NULL, 0 } }), 0);
	assert_int_equal(out.len, sizeof(reg));
	assert_memory_equal(buf, reg, sizeof(reg));

	/* MEM_PRESSURE (v4; flags v7). */
	{
		static const uint8_t mp[] = {
			'K', 'M', 'U', 'X', 13, 0, 210, 0,
			16, 0, 0, 0, 5, 0, 0, 0,
			0, 0, 0, 0x03, 0, 0, 0, 0,	/* give 48 MiB */
			2, 0, 0, 0, 1, 0, 0, 0,		/* gpu 2, flags */
		};

		out.len = 0;
		assert_int_equal(proto_encode_mem_pressure(&out, 5,
			&(struct proto_mem_pressure){ 48u << 20, 2,
				PROTO_PRESSURE_F_BUDGET }), 0);
		assert_int_equal(out.len, sizeof(mp));
		assert_memory_equal(buf, mp, sizeof(mp));
	}

	/* ATTACH (v11): WAIT's layout under its own number. */
	{
		static const uint8_t at[] = {
			'K', 'M', 'U', 'X', 13, 0, 114, 0,
			8, 0, 0, 0, 3, 0, 0, 0,
			0x2a, 0, 0, 0, 0, 0, 0, 0,	/* job 42 */
		};

		out.len = 0;
		assert_int_equal(proto_encode_attach(&out, 3,
			&(struct proto_attach){ 42 }), 0);
		assert_int_equal(out.len, sizeof(at));
		assert_memory_equal(buf, at, sizeof(at));
	}

	/*
	 * FINISHED (v13): job, pid, exit code, signal, flags; NOT_STARTED only
	 * with the shell's 126 or 127 and no signal, no other flag.
	 */
	{
		static const uint8_t fd[] = {
			'K', 'M', 'U', 'X', 13, 0, 110, 0,
			24, 0, 0, 0, 5, 0, 0, 0,
			0x2a, 0, 0, 0, 0, 0, 0, 0,	/* job 42 */
			0x39, 0x30, 0, 0,		/* pid 12345 */
			127, 0, 0, 0, 0, 0, 0, 0,	/* exit 127, signal 0 */
			1, 0, 0, 0,			/* NOT_STARTED */
		};
		struct proto_msg d;
		uint8_t bad[sizeof(fd)];
		size_t used;

		out.len = 0;
		assert_int_equal(proto_encode_finished(&out, 5,
			&(struct proto_finished){ 42, 12345, 127, 0,
				PROTO_FINISHED_F_NOT_STARTED }), 0);
		assert_int_equal(out.len, sizeof(fd));
		assert_memory_equal(buf, fd, sizeof(fd));
		assert_int_equal(proto_decode(fd, sizeof(fd), &d, &used), 0);
		assert_int_equal(d.u.finished.flags,
				 PROTO_FINISHED_F_NOT_STARTED);
		memcpy(bad, fd, sizeof(fd));
		bad[sizeof(fd) - 4] = 2;	/* an unknown flag */
		assert_int_equal(proto_decode(bad, sizeof(bad), &d, &used),
				 -EBADMSG);
		memcpy(bad, fd, sizeof(fd));
		bad[28] = 0;			/* not started, exit 0 */
		assert_int_equal(proto_decode(bad, sizeof(bad), &d, &used),
				 -EBADMSG);
	}

	/* STARTED (v12): job, pid, a reserved word that must be 0. */
	{
		static const uint8_t sd[] = {
			'K', 'M', 'U', 'X', 13, 0, 115, 0,
			16, 0, 0, 0, 4, 0, 0, 0,
			0x2a, 0, 0, 0, 0, 0, 0, 0,	/* job 42 */
			0x39, 0x30, 0, 0, 0, 0, 0, 0,	/* pid 12345, 0 */
		};
		struct proto_msg d;
		uint8_t bad[sizeof(sd)];
		size_t used;

		out.len = 0;
		assert_int_equal(proto_encode_started(&out, 4,
			&(struct proto_started){ 42, 12345 }), 0);
		assert_int_equal(out.len, sizeof(sd));
		assert_memory_equal(buf, sd, sizeof(sd));
		memcpy(bad, sd, sizeof(sd));
		bad[sizeof(sd) - 1] = 1;	/* reserved */
		assert_int_equal(proto_decode(bad, sizeof(bad), &d, &used),
				 -EBADMSG);
	}

	/* GPU_LIST of a node without GPUs, with why (v10's note). */
	{
		static const uint8_t gl[] = {
			'K', 'M', 'U', 'X', 13, 0, 205, 0,
			15, 0, 0, 0, 6, 0, 0, 0,
			0, 0, 0, 0, 0, 0, 0, 0,		/* count 0, 0 */
			3, 0, 0, 0, 'n', 'o', 0,	/* note "no" */
		};

		out.len = 0;
		assert_int_equal(proto_encode_gpu_list(&out, 6,
			&(struct proto_gpu_list){ .count = 0, .note = "no" }), 0);
		assert_int_equal(out.len, sizeof(gl));
		assert_memory_equal(buf, gl, sizeof(gl));
	}
}

/* Empty strings and lists, NULL strings, an empty log chunk. */
static void test_round_trip_edges(void **state)
{
	static uint8_t buf[4096];
	static const char *const one[] = { "x" };
	struct proto_msg m = { .type = PROTO_SUBMIT, .seq = 0 }, d;
	size_t n, used;

	(void)state;
	m.u.job = (struct proto_job_req){ .ngpus = 1, .cwd = "/",
					  .argv = { .count = 1, .vec = one } };
	n = encode(buf, sizeof(buf), &m);
	assert_int_equal(proto_decode(buf, n, &d, &used), 0);
	assert_string_equal(d.u.job.name, "");
	assert_int_equal(d.u.job.env.count, 0);
	assert_null(d.u.job.env.block);

	memset(&m, 0, sizeof(m));
	m.type = PROTO_LOG_DATA;
	m.u.log.job = 1;
	n = encode(buf, sizeof(buf), &m);
	assert_int_equal(n, PROTO_HDR_SIZE + sizeof(struct proto_wire_log_data));
	assert_int_equal(proto_decode(buf, n, &d, &used), 0);
	assert_int_equal(d.u.log.length, 0);

	memset(&m, 0, sizeof(m));
	m.type = PROTO_JOB_LIST;
	n = encode(buf, sizeof(buf), &m);
	assert_int_equal(proto_decode(buf, n, &d, &used), 0);
	assert_int_equal(d.u.jobs.count, 0);

	memset(&m, 0, sizeof(m));
	m.type = PROTO_GPU_LIST;
	m.u.gpus.count = PROTO_MAX_GPUS;
	for (int i = 0; i < PROTO_MAX_GPUS; i++)
		m.u.gpus.gpu[i].index = (uint32_t)(PROTO_MAX_GPUS - 1 - i);
	n = encode(buf, sizeof(buf), &m);
	assert_int_equal(proto_decode(buf, n, &d, &used), 0);
	assert_int_equal(d.u.gpus.gpu[63].index, 0);
	assert_string_equal(d.u.gpus.note, "");	/* NULL encodes as "" */

	memset(&m, 0, sizeof(m));
	m.type = PROTO_ERROR;
	m.u.error.err = EPROTONOSUPPORT;
	n = encode(buf, sizeof(buf), &m);
	assert_int_equal(proto_decode(buf, n, &d, &used), 0);
	assert_string_equal(d.u.error.message, "");
}

/* A strv given as a block encodes like the same strings given as a vec. */
static void test_strv_block_form(void **state)
{
	static uint8_t a[4096], b[4096];
	static const char block[] = "python3\0train.py\0--epochs=3";
	struct proto_msg m;
	size_t na, nb;
	char **dup;

	(void)state;
	sample(PROTO_SUBMIT, &m);
	na = encode(a, sizeof(a), &m);
	m.u.job.argv = (struct proto_strv){ .count = 3, .block = block,
					    .bytes = sizeof(block) };
	nb = encode(b, sizeof(b), &m);
	assert_int_equal(na, nb);
	assert_memory_equal(a, b, na);

	assert_int_equal(proto_strv_dup(&m.u.job.argv, &dup), 0);
	assert_string_equal(dup[0], "python3");
	assert_string_equal(dup[2], "--epochs=3");
	assert_null(dup[3]);
	free(dup);

	/* Blocks that do not hold exactly count strings are refused. */
	{
		struct proto_buf out = { b, sizeof(b), 0 };

		m.u.job.argv.count = 2;
		assert_int_equal(proto_encode(&out, &m), -EINVAL);
		m.u.job.argv.count = 4;
		assert_int_equal(proto_encode(&out, &m), -EINVAL);
		m.u.job.argv = (struct proto_strv){ .count = 1, .block = "ab",
						    .bytes = 2 };	/* no NUL */
		assert_int_equal(proto_encode(&out, &m), -EINVAL);
		m.u.job.argv = (struct proto_strv){ .count = 1, .block = NULL,
						    .bytes = 0 };
		assert_int_equal(proto_encode(&out, &m), -EINVAL);
		assert_int_equal(out.len, 0);
	}
}

/* ------------------------------------------------------------------------
 * Partial input and framing errors.
 */
static void test_truncation_every_byte(void **state)
{
	static uint8_t buf[4096];
	struct proto_msg m, d;
	size_t i, k, n, used;

	(void)state;
	for (i = 0; i < NTYPES; i++) {
		sample(all_types[i], &m);
		n = encode(buf, sizeof(buf), &m);
		for (k = 0; k < n; k++) {
			/* Copy so that ASan catches a read past k. */
			uint8_t *cut = malloc(k ? k : 1);

			memcpy(cut, buf, k);
			used = 99;
			assert_int_equal(proto_decode(cut, k, &d, &used), -EAGAIN);
			assert_int_equal(used, 0);
			free(cut);
		}
		assert_int_equal(proto_decode(buf, n, &d, &used), 0);
	}
	assert_int_equal(proto_decode(NULL, 0, &d, &used), -EAGAIN);
}

/* A frame whose declared length is shorter than its payload: -EBADMSG. */
static void test_length_shorter_than_payload(void **state)
{
	static uint8_t buf[4096];
	struct proto_msg m, d;
	size_t i, n, used;
	uint32_t len;

	(void)state;
	for (i = 0; i < NTYPES; i++) {
		sample(all_types[i], &m);
		n = encode(buf, sizeof(buf), &m);
		for (len = 0; len < n - PROTO_HDR_SIZE; len++) {
			uint32_t le = htole32(len);

			memcpy(buf + 8, &le, 4);
			assert_int_equal(proto_decode(buf, n, &d, &used),
					 -EBADMSG);
			assert_int_equal(used, PROTO_HDR_SIZE + len);
		}
	}
}

static void test_bad_magic_version(void **state)
{
	static uint8_t buf[4096];
	struct proto_msg m, d;
	size_t n, used, k;
	int byte;

	(void)state;
	sample(PROTO_HELLO, &m);
	n = encode(buf, sizeof(buf), &m);
	/* A wrong magic byte is seen as soon as it arrives. */
	for (byte = 0; byte < 4; byte++) {
		buf[byte] ^= 0x20;
		for (k = (size_t)byte + 1; k <= n; k++) {
			used = 7;
			assert_int_equal(proto_decode(buf, k, &d, &used), -EPROTO);
			assert_int_equal(used, 0);
		}
		buf[byte] ^= 0x20;
	}
	uint16_t ver = htole16(PROTO_VERSION + 1);
	memcpy(buf + 4, &ver, 2);
	assert_int_equal(proto_decode(buf, 5, &d, &used), -EAGAIN);
	assert_int_equal(proto_decode(buf, 6, &d, &used), -EPROTO);
	assert_int_equal(proto_decode(buf, n, &d, &used), -EPROTO);
	ver = 0;
	memcpy(buf + 4, &ver, 2);
	assert_int_equal(proto_decode(buf, n, &d, &used), -EPROTO);

	/* proto_peek_header() still reads it, to answer in the peer's seq. */
	{
		uint16_t v, t;
		uint32_t l, s;

		assert_int_equal(proto_peek_header(buf, n, &v, &t, &l, &s), 0);
		assert_int_equal(v, 0);
		assert_int_equal(t, PROTO_HELLO);
		assert_int_equal(s, m.seq);
		assert_int_equal(l, n - PROTO_HDR_SIZE);
		assert_int_equal(proto_peek_header(buf, 15, &v, &t, &l, &s),
				 -EAGAIN);
		buf[0] = 'k';
		assert_int_equal(proto_peek_header(buf, n, &v, &t, &l, &s),
				 -EPROTO);
	}
	/* Text from some other protocol. */
	assert_int_equal(proto_decode((const uint8_t *)"GET / HTTP/1.1\r\n",
				      16, &d, &used), -EPROTO);
}

static void test_oversized_length(void **state)
{
	uint8_t hdr[PROTO_HDR_SIZE];
	struct proto_wire_hdr h = {
		.magic = htole32(PROTO_MAGIC),
		.version = htole16(PROTO_VERSION),
		.type = htole16(PROTO_LOG_DATA),
	};
	struct proto_msg d;
	size_t used;
	uint8_t *big;

	(void)state;
	h.length = htole32(PROTO_MAX_PAYLOAD + 1);
	memcpy(hdr, &h, sizeof(h));
	/* Known from the 12th byte on, without waiting for the payload. */
	assert_int_equal(proto_decode(hdr, 11, &d, &used), -EAGAIN);
	assert_int_equal(proto_decode(hdr, 12, &d, &used), -EMSGSIZE);
	assert_int_equal(proto_decode(hdr, 16, &d, &used), -EMSGSIZE);
	h.length = htole32(UINT32_MAX);
	memcpy(hdr, &h, sizeof(h));
	assert_int_equal(proto_decode(hdr, 16, &d, &used), -EMSGSIZE);

	/* Exactly the maximum is a frame: a LOG_DATA of the largest chunk. */
	big = calloc(1, PROTO_MAX_MSG);
	assert_non_null(big);
	h.length = htole32(PROTO_MAX_PAYLOAD);
	memcpy(big, &h, sizeof(h));
	assert_int_equal(proto_decode(big, PROTO_MAX_MSG - 1, &d, &used),
			 -EAGAIN);
	{
		struct proto_wire_log_data l = {
			.job = htole64(1),
			.length = htole32(PROTO_MAX_PAYLOAD - sizeof(l)),
		};

		memcpy(big + PROTO_HDR_SIZE, &l, sizeof(l));
	}
	assert_int_equal(proto_decode(big, PROTO_MAX_MSG, &d, &used), 0);
	assert_int_equal(used, PROTO_MAX_MSG);
	assert_int_equal(d.u.log.length,
			 PROTO_MAX_PAYLOAD - sizeof(struct proto_wire_log_data));
	free(big);
}

static void test_encoder_limits(void **state)
{
	static uint8_t buf[BUFSZ];
	struct proto_msg m;
	struct proto_buf out;
	size_t n;
	char *huge;
	const char *vec[2];

	(void)state;
	sample(PROTO_SUBMIT, &m);
	n = encode(buf, sizeof(buf), &m);

	/* Too small a buffer: -ENOSPC at every size, nothing appended. */
	for (size_t cap = 0; cap < n; cap++) {
		out = (struct proto_buf){ buf, cap, 0 };
		assert_int_equal(proto_encode(&out, &m), -ENOSPC);
		assert_int_equal(out.len, 0);
	}
	out = (struct proto_buf){ NULL, 0, 0 };
	assert_int_equal(proto_encode(&out, &m), -ENOSPC);
	out = (struct proto_buf){ NULL, 10, 0 };
	assert_int_equal(proto_encode(&out, &m), -EINVAL);
	out = (struct proto_buf){ buf, 10, 11 };
	assert_int_equal(proto_encode(&out, &m), -EINVAL);

	/* Two frames back to back in one buffer. */
	out = (struct proto_buf){ buf, sizeof(buf), 0 };
	assert_int_equal(proto_encode(&out, &m), 0);
	assert_int_equal(proto_encode(&out, &m), 0);
	assert_int_equal(out.len, 2 * n);

	/* An argv over 1 MiB: -EMSGSIZE, whatever the buffer. */
	huge = malloc(PROTO_MAX_MSG);
	memset(huge, 'a', PROTO_MAX_MSG - 1);
	huge[PROTO_MAX_MSG - 1] = '\0';
	vec[0] = huge;
	m.u.job.argv = (struct proto_strv){ .count = 1, .vec = vec };
	out = (struct proto_buf){ buf, sizeof(buf), 0 };
	assert_int_equal(proto_encode(&out, &m), -EMSGSIZE);
	assert_int_equal(out.len, 0);
	/* The largest argument that still fits, and one byte more. */
	{
		struct proto_msg d;
		size_t used, base;

		huge[0] = '\0';
		out = (struct proto_buf){ buf, sizeof(buf), 0 };
		assert_int_equal(proto_encode(&out, &m), -EINVAL); /* argv[0] "" */
		huge[0] = 'a';
		huge[1] = '\0';
		assert_int_equal(proto_encode(&out, &m), 0);
		base = out.len - 1;	/* frame size less the one char */
		memset(huge, 'a', PROTO_MAX_MSG - 1);
		huge[PROTO_MAX_MSG - base] = '\0';
		out.len = 0;
		assert_int_equal(proto_encode(&out, &m), 0);
		assert_int_equal(out.len, PROTO_MAX_MSG);
		assert_int_equal(proto_decode(buf, out.len, &d, &used), 0);
		assert_int_equal(strlen(d.u.job.argv.block),
				 PROTO_MAX_MSG - base);
		huge[PROTO_MAX_MSG - base] = 'a';
		huge[PROTO_MAX_MSG - base + 1] = '\0';
		out.len = 0;
		assert_int_equal(proto_encode(&out, &m), -EMSGSIZE);
	}
	free(huge);
}

/* Fields the decoder would refuse are refused by the encoder. */
static void test_encoder_rejects_invalid(void **state)
{
	static uint8_t buf[4096];
	static const char *const bad_env[] = { "NOEQUALS" };
	static const char *const bad_env2[] = { "=x" };
	static const char *const empty0[] = { "" };
	static const char *const nullv[] = { NULL };
	struct proto_msg m;
	struct proto_buf out = { buf, sizeof(buf), 0 };
	char longname[PROTO_MAX_NAME + 1];
	static char longmsg[PROTO_MAX_ERRMSG + 1];

	(void)state;
#define BAD(type, stmt) do {						\
		sample(type, &m);					\
		stmt;							\
		assert_int_equal(proto_encode(&out, &m), -EINVAL);	\
	} while (0)
	memset(longname, 'n', sizeof(longname) - 1);
	longname[PROTO_MAX_NAME] = '\0';
	memset(longmsg, 'm', sizeof(longmsg) - 1);

	BAD(PROTO_HELLO, m.u.hello.role = 3);
	BAD(PROTO_HELLO, m.u.hello.pid = 0);
	BAD(PROTO_HELLO, m.u.hello.ident = longname);
	BAD(PROTO_SUBMIT, m.u.job.ngpus = 0);
	BAD(PROTO_SUBMIT, m.u.job.ngpus = PROTO_MAX_GPUS + 1);
	BAD(PROTO_SUBMIT, m.u.job.flags = 0x2);
	BAD(PROTO_SUBMIT, m.u.job.prio = 101);
	BAD(PROTO_RUN, m.u.job.prio = -101);
	BAD(PROTO_SUBMIT, m.u.job.name = longname);
	BAD(PROTO_SUBMIT, m.u.job.cwd = "relative/dir");
	BAD(PROTO_SUBMIT, m.u.job.cwd = NULL);
	BAD(PROTO_SUBMIT, m.u.job.argv.count = 0);
	BAD(PROTO_SUBMIT, m.u.job.argv.vec = empty0; m.u.job.argv.count = 1);
	BAD(PROTO_SUBMIT, m.u.job.argv.vec = nullv; m.u.job.argv.count = 1);
	BAD(PROTO_SUBMIT, m.u.job.env.vec = bad_env; m.u.job.env.count = 1);
	BAD(PROTO_SUBMIT, m.u.job.env.vec = bad_env2; m.u.job.env.count = 1);
	BAD(PROTO_REGISTER, m.u.reg.pid = 0);
	BAD(PROTO_REGISTER, m.u.reg.argv.count = 0);
	BAD(PROTO_REGISTER, m.u.reg.flags = 2);
	BAD(PROTO_REGISTER, m.u.reg.ngpus = 0);
	BAD(PROTO_REGISTER, m.u.reg.ngpus = 3);		/* more than in gpus */
	BAD(PROTO_REGISTER, m.u.reg.gpus = 0; m.u.reg.ngpus = 65);
	BAD(PROTO_REGISTER, m.u.reg.name = longname);
	/* A re-registration names its job and exactly the GPUs it holds. */
	BAD(PROTO_REGISTER, m.u.reg.flags = PROTO_REG_F_RUNNING);
	BAD(PROTO_REGISTER, m.u.reg.flags = PROTO_REG_F_RUNNING;
	    m.u.reg.job = 4; m.u.reg.ngpus = 1);
	BAD(PROTO_REGISTER, m.u.reg.flags = PROTO_REG_F_RUNNING;
	    m.u.reg.job = 4; m.u.reg.gpus = 0; m.u.reg.ngpus = 1);
	BAD(PROTO_ALLOC_UPDATE, m.u.alloc.resident = m.u.alloc.peak + 1);
	BAD(PROTO_ALLOC_UPDATE, m.u.alloc.gpu = PROTO_MAX_GPUS);
	BAD(PROTO_ALLOC_UPDATE, m.u.alloc.pid = 0);
	/* A thrash verdict is evict mode's alone. */
	BAD(PROTO_ALLOC_UPDATE, m.u.alloc.flags = 0);
	BAD(PROTO_ALLOC_UPDATE, m.u.alloc.flags = PROTO_ALLOC_F_MASK + 1);
	BAD(PROTO_MEM_PRESSURE, m.u.pressure.give = 0);
	BAD(PROTO_MEM_PRESSURE, m.u.pressure.gpu = PROTO_MAX_GPUS);
	BAD(PROTO_MEM_PRESSURE, m.u.pressure.flags = PROTO_PRESSURE_F_MASK + 1);
	/* A budget given back is evict mode's, and names the new budget. */
	BAD(PROTO_ALLOC_UPDATE, m.u.alloc.thrash_ws = 0; m.u.alloc.want = 5;
	    m.u.alloc.flags = PROTO_ALLOC_F_SHRUNK);
	BAD(PROTO_ALLOC_UPDATE, m.u.alloc.want = 0;
	    m.u.alloc.flags = PROTO_ALLOC_F_EVICT | PROTO_ALLOC_F_SHRUNK);
	/* A suspended task's ask (v8): evict mode's, with a want, and never
	 * a budget given back at the same time. */
	BAD(PROTO_ALLOC_UPDATE, m.u.alloc.thrash_ws = 0; m.u.alloc.want = 5;
	    m.u.alloc.flags = PROTO_ALLOC_F_SUSPEND);
	BAD(PROTO_ALLOC_UPDATE, m.u.alloc.want = 0;
	    m.u.alloc.flags = PROTO_ALLOC_F_EVICT | PROTO_ALLOC_F_SUSPEND);
	BAD(PROTO_ALLOC_UPDATE, m.u.alloc.want = 5;
	    m.u.alloc.flags = PROTO_ALLOC_F_EVICT | PROTO_ALLOC_F_SUSPEND |
			      PROTO_ALLOC_F_SHRUNK);
	BAD(PROTO_PS, m.u.ps.flags = 2);
	BAD(PROTO_PS, m.u.ps.states = 1);	/* bit 0 is no state */
	BAD(PROTO_PS, m.u.ps.states = 1u << 6);
	BAD(PROTO_WAIT, m.u.wait.job = 0);
	BAD(PROTO_ATTACH, m.u.attach.job = 0);
	BAD(PROTO_STARTED, m.u.started.job = 0);
	BAD(PROTO_STARTED, m.u.started.pid = 0);
	BAD(PROTO_STARTED, m.u.started.pid = 0x80000000u);	/* not a pid_t */
	BAD(PROTO_CANCEL, m.u.cancel.job = 0);
	BAD(PROTO_CANCEL, m.u.cancel.signal = -1);
	BAD(PROTO_CANCEL, m.u.cancel.signal = PROTO_MAX_SIGNAL + 1);
	BAD(PROTO_LOGS, m.u.logs.job = 0);
	BAD(PROTO_LOGS, m.u.logs.flags = 4);
	BAD(PROTO_TOP, m.u.top.flags = 1);
	BAD(PROTO_FINISHED, m.u.finished.exit_code = 256);
	BAD(PROTO_FINISHED, m.u.finished.exit_code = -2);
	BAD(PROTO_FINISHED, m.u.finished.signal = 65);
	BAD(PROTO_FINISHED, m.u.finished.pid = 0);
	BAD(PROTO_FINISHED, m.u.finished.flags = 2);
	BAD(PROTO_FINISHED,
	    m.u.finished.flags = PROTO_FINISHED_F_NOT_STARTED);	/* exit 1 */
	BAD(PROTO_FINISHED, (m.u.finished.flags = PROTO_FINISHED_F_NOT_STARTED,
			     m.u.finished.exit_code = 127,
			     m.u.finished.signal = 9));
	BAD(PROTO_ERROR, m.u.error.err = 0);
	BAD(PROTO_ERROR, m.u.error.err = -5);
	BAD(PROTO_ERROR, m.u.error.err = 4096);
	BAD(PROTO_ADMIT, m.u.admit.ngpus = 0);
	BAD(PROTO_ADMIT, m.u.admit.ngpus = PROTO_MAX_GPUS + 1);
	BAD(PROTO_ADMIT, m.u.admit.gpus[1] = 5);	/* duplicate */
	BAD(PROTO_ADMIT, m.u.admit.gpus[2] = 64);
	BAD(PROTO_ADMIT, m.u.admit.job = 0);
	BAD(PROTO_ADMIT, m.u.admit.mps_pipe = "relative/pipe");
	BAD(PROTO_ADMIT, m.u.admit.mps_log = "");	/* one without the other */
	BAD(PROTO_ADMIT, m.u.admit.mps_pipe = NULL);
	BAD(PROTO_EXITED, m.u.exited.state = PROTO_JOB_RUNNING);
	BAD(PROTO_EXITED, m.u.exited.state = 0);
	BAD(PROTO_GPU_LIST, m.u.gpus.count = PROTO_MAX_GPUS + 1);
	BAD(PROTO_GPU_LIST, m.u.gpus.gpu[1].index = 0);	/* duplicate */
	BAD(PROTO_GPU_LIST, m.u.gpus.gpu[0].util_pm = 1001);
	BAD(PROTO_GPU_LIST, m.u.gpus.note = longmsg);	/* v10 */
	BAD(PROTO_LOG_DATA, m.u.log.data = NULL);
	BAD(PROTO_LOG_DATA, m.u.log.flags = 2);
	BAD(PROTO_QUEUED, m.u.queued.job = 0);
	BAD(PROTO_REGION_ENTER, m.u.renter.pid = 0);
	BAD(PROTO_REGION_ENTER, m.u.renter.gpu = PROTO_MAX_GPUS);
	BAD(PROTO_REGION_ENTER, m.u.renter.flags = 1);
	BAD(PROTO_REGION_LEAVE, m.u.rleave.pid = 0);
	BAD(PROTO_DRAINED, m.u.drained.token = 0);
	BAD(PROTO_DRAINED, m.u.drained.pid = 0);
	BAD(PROTO_DRAIN, m.u.drain.token = 0);
	BAD(PROTO_DRAIN, m.u.drain.gpu = PROTO_MAX_GPUS);
	BAD(PROTO_REGION_GRANTED, m.u.granted.region = 0);
	BAD(PROTO_REGION_GRANTED, m.u.granted.gpu = PROTO_MAX_GPUS);
	{
		struct proto_job_rec r[1] = { jobs3[0] };

		BAD(PROTO_JOB_LIST, r[0].state = 9; m.u.jobs.vec = r;
		    m.u.jobs.count = 1);
		r[0] = jobs3[0];
		BAD(PROTO_JOB_LIST, r[0].id = 0; m.u.jobs.vec = r;
		    m.u.jobs.count = 1);
		r[0] = jobs3[0];
		BAD(PROTO_JOB_LIST, r[0].ngpus = 0; m.u.jobs.vec = r;
		    m.u.jobs.count = 1);
		r[0] = jobs3[0];
		BAD(PROTO_JOB_LIST, r[0].name = longname; m.u.jobs.vec = r;
		    m.u.jobs.count = 1);
		r[0] = jobs3[0];
		/* Only a running job is suspended; no unknown flag. */
		BAD(PROTO_JOB_LIST, r[0].flags = PROTO_JOBREC_F_SUSPENDED;
		    m.u.jobs.vec = r; m.u.jobs.count = 1);
		r[0] = jobs3[3];
		BAD(PROTO_JOB_LIST, r[0].flags = PROTO_JOBREC_F_MASK + 1;
		    m.u.jobs.vec = r; m.u.jobs.count = 1);
		/* A job that ended is not wait-bound (v9). */
		r[0] = jobs3[0];
		BAD(PROTO_JOB_LIST, r[0].flags = PROTO_JOBREC_F_WAIT_BOUND;
		    m.u.jobs.vec = r; m.u.jobs.count = 1);
		/* Only a queued job is held, for a known reason (v10). */
		r[0] = jobs3[0];
		BAD(PROTO_JOB_LIST, r[0].held = PROTO_HELD_GPUS;
		    m.u.jobs.vec = r; m.u.jobs.count = 1);
		r[0] = jobs3[3];
		BAD(PROTO_JOB_LIST, r[0].held = PROTO_HELD_MEM;
		    m.u.jobs.vec = r; m.u.jobs.count = 1);
		r[0] = jobs3[1];
		BAD(PROTO_JOB_LIST, r[0].held = PROTO_HELD_MAX + 1;
		    m.u.jobs.vec = r; m.u.jobs.count = 1);
	}
	m.type = 150;
	assert_int_equal(proto_encode(&out, &m), -EINVAL);
	assert_int_equal(out.len, 0);
#undef BAD
	/* The rules above leave the valid forms alone. */
	sample(PROTO_REGISTER, &m);
	m.u.reg.flags = PROTO_REG_F_RUNNING;
	m.u.reg.job = 4;
	out.len = 0;
	assert_int_equal(proto_encode(&out, &m), 0);
	sample(PROTO_REGISTER, &m);
	m.u.reg.gpus = 0;
	m.u.reg.ngpus = PROTO_MAX_GPUS;
	m.u.reg.name = NULL;
	out.len = 0;
	assert_int_equal(proto_encode(&out, &m), 0);
}

/* ------------------------------------------------------------------------
 * Hand-made payloads: each must be refused with -EBADMSG.
 */
struct frame {
	uint8_t b[512];
	size_t n;
};

static void f_bytes(struct frame *f, const void *p, size_t n)
{
	assert_true(f->n + n <= sizeof(f->b));
	memcpy(f->b + f->n, p, n);
	f->n += n;
}

static void f_u16(struct frame *f, uint16_t v)
{
	v = htole16(v);
	f_bytes(f, &v, 2);
}

static void f_u32(struct frame *f, uint32_t v)
{
	v = htole32(v);
	f_bytes(f, &v, 4);
}

static void f_u64(struct frame *f, uint64_t v)
{
	v = htole64(v);
	f_bytes(f, &v, 8);
}

static void f_begin(struct frame *f, uint16_t type)
{
	f->n = 0;
	f_u32(f, PROTO_MAGIC);
	f_u16(f, PROTO_VERSION);
	f_u16(f, type);
	f_u32(f, 0);		/* length, set by f_end() */
	f_u32(f, 7);
}

static void f_end(struct frame *f)
{
	uint32_t len = htole32((uint32_t)(f->n - PROTO_HDR_SIZE));

	memcpy(f->b + 8, &len, 4);
}

static int f_decode(struct frame *f)
{
	struct proto_msg d;
	size_t used = 12345;
	int rc;

	f_end(f);
	rc = proto_decode(f->b, f->n, &d, &used);
	if (rc == -EBADMSG || rc == 0)
		assert_int_equal(used, f->n);
	return rc;
}

/* A HELLO with the given ident bytes (n is the declared length). */
static void hello_with(struct frame *f, uint32_t n, const void *s, size_t slen)
{
	f_begin(f, PROTO_HELLO);
	f_u16(f, PROTO_ROLE_CLI);
	f_u16(f, 0);
	f_u32(f, 1);
	f_u32(f, n);
	f_bytes(f, s, slen);
}

static void test_bad_strings(void **state)
{
	struct frame f;

	(void)state;
	hello_with(&f, 3, "ab\0", 3);
	assert_int_equal(f_decode(&f), 0);
	hello_with(&f, 2, "ab", 2);		/* no terminator */
	assert_int_equal(f_decode(&f), -EBADMSG);
	hello_with(&f, 3, "a\0b", 3);		/* NUL inside, none at end */
	assert_int_equal(f_decode(&f), -EBADMSG);
	hello_with(&f, 4, "a\0b\0", 4);		/* two NULs */
	assert_int_equal(f_decode(&f), -EBADMSG);
	hello_with(&f, 0, "", 0);		/* n = 0 */
	assert_int_equal(f_decode(&f), -EBADMSG);
	hello_with(&f, 4, "ab\0", 3);		/* n beyond the payload */
	assert_int_equal(f_decode(&f), -EBADMSG);
	hello_with(&f, UINT32_MAX, "ab\0", 3);
	assert_int_equal(f_decode(&f), -EBADMSG);
	hello_with(&f, 3, "ab\0x", 4);		/* trailing byte */
	assert_int_equal(f_decode(&f), -EBADMSG);
	f_begin(&f, PROTO_HELLO);		/* string length cut */
	f_u16(&f, 1);
	f_u16(&f, 0);
	f_u32(&f, 1);
	f_u16(&f, 1);
	assert_int_equal(f_decode(&f), -EBADMSG);
}

/* A RUN frame whose argv strv is given raw. */
static void run_with_argv(struct frame *f, uint32_t count, uint32_t bytes,
			  const void *block, size_t blen)
{
	f_begin(f, PROTO_RUN);
	f_u32(f, 0);		/* flags */
	f_u32(f, 1);		/* ngpus */
	f_u64(f, 0);		/* mem */
	f_u32(f, 0);		/* prio */
	f_u32(f, 0);		/* reserved */
	f_u32(f, 1);
	f_bytes(f, "", 1);	/* name "" */
	f_u32(f, 2);
	f_bytes(f, "/", 2);	/* cwd "/" */
	f_u32(f, count);
	f_u32(f, bytes);
	f_bytes(f, block, blen);
	f_u32(f, 0);		/* env: empty */
	f_u32(f, 0);
}

static void test_bad_counts(void **state)
{
	struct frame f;

	(void)state;
	run_with_argv(&f, 2, 4, "a\0b\0", 4);
	assert_int_equal(f_decode(&f), 0);
	run_with_argv(&f, 3, 4, "a\0b\0", 4);	/* count > strings */
	assert_int_equal(f_decode(&f), -EBADMSG);
	run_with_argv(&f, 1, 4, "a\0b\0", 4);	/* count < strings */
	assert_int_equal(f_decode(&f), -EBADMSG);
	run_with_argv(&f, UINT32_MAX, 4, "a\0b\0", 4);
	assert_int_equal(f_decode(&f), -EBADMSG);
	run_with_argv(&f, 2, 4, "a\0bc", 4);	/* last not terminated */
	assert_int_equal(f_decode(&f), -EBADMSG);
	run_with_argv(&f, 2, 400, "a\0b\0", 4);	/* bytes > payload */
	assert_int_equal(f_decode(&f), -EBADMSG);
	run_with_argv(&f, 2, UINT32_MAX, "a\0b\0", 4);
	assert_int_equal(f_decode(&f), -EBADMSG);
	run_with_argv(&f, 0, 2, "a\0", 2);	/* count 0 with bytes */
	assert_int_equal(f_decode(&f), -EBADMSG);
	run_with_argv(&f, 1, 0, "", 0);		/* count 1 without bytes */
	assert_int_equal(f_decode(&f), -EBADMSG);
	run_with_argv(&f, 0, 0, "", 0);		/* argv empty: semantic */
	assert_int_equal(f_decode(&f), -EBADMSG);
	run_with_argv(&f, 2, 3, "\0b\0", 3);	/* argv[0] "" */
	assert_int_equal(f_decode(&f), -EBADMSG);

	/* ADMIT: ngpus beyond the GPUs present, beyond 64, below. */
	f_begin(&f, PROTO_ADMIT);
	f_u64(&f, 1);
	f_u64(&f, 1 << 20);
	f_u32(&f, 3);
	f_u32(&f, 0);
	f_u32(&f, 0);
	f_u32(&f, 1);
	assert_int_equal(f_decode(&f), -EBADMSG);
	f_u32(&f, 2);
	assert_int_equal(f_decode(&f), -EBADMSG);	/* no MPS strs (v4) */
	f_u32(&f, 1);
	f_bytes(&f, "", 1);				/* mps_pipe "" */
	assert_int_equal(f_decode(&f), -EBADMSG);	/* no mps_log */
	f_u32(&f, 1);
	f_bytes(&f, "", 1);				/* mps_log "" */
	assert_int_equal(f_decode(&f), 0);
	f_u32(&f, 3);
	assert_int_equal(f_decode(&f), -EBADMSG);	/* trailing */
	memset(f.b + PROTO_HDR_SIZE + 16, 0xff, 4);	/* ngpus = 2^32-1 */
	assert_int_equal(f_decode(&f), -EBADMSG);

	/* JOB_LIST claiming more records than could fit. */
	f_begin(&f, PROTO_JOB_LIST);
	f_u32(&f, UINT32_MAX);
	f_u32(&f, 0);
	assert_int_equal(f_decode(&f), -EBADMSG);
	f_begin(&f, PROTO_JOB_LIST);
	f_u32(&f, 1);
	f_u32(&f, 0);
	assert_int_equal(f_decode(&f), -EBADMSG);

	/* GPU_LIST: 65 GPUs, or fewer records than counted. */
	f_begin(&f, PROTO_GPU_LIST);
	f_u32(&f, PROTO_MAX_GPUS + 1);
	f_u32(&f, 0);
	assert_int_equal(f_decode(&f), -EBADMSG);
	f_begin(&f, PROTO_GPU_LIST);
	f_u32(&f, 2);
	f_u32(&f, 0);
	for (int i = 0; i < 10; i++)
		f_u32(&f, 0);
	assert_int_equal(f_decode(&f), -EBADMSG);

	/* LOG_DATA length beyond the payload, and short of it. */
	f_begin(&f, PROTO_LOG_DATA);
	f_u64(&f, 1);
	f_u64(&f, 0);
	f_u32(&f, 0);
	f_u32(&f, 5);
	f_bytes(&f, "abcd", 4);
	assert_int_equal(f_decode(&f), -EBADMSG);
	f_bytes(&f, "e", 1);
	assert_int_equal(f_decode(&f), 0);
	f_bytes(&f, "f", 1);
	assert_int_equal(f_decode(&f), -EBADMSG);
}

/* Unknown types, empty payloads, nonzero reserved fields. */
static void test_bad_types_and_reserved(void **state)
{
	static uint8_t buf[4096];
	struct frame f;
	struct proto_msg m, d;
	size_t i, n, used;
	static const uint16_t unknown[] = { 0, 99, 115, 199, 211, 300, 65535 };

	(void)state;
	for (i = 0; i < sizeof(unknown) / sizeof(unknown[0]); i++) {
		f_begin(&f, unknown[i]);
		f_u64(&f, 1);
		assert_int_equal(f_decode(&f), -EBADMSG);
	}
	/* Every type with an empty payload: each has a fixed part. */
	for (i = 0; i < NTYPES; i++) {
		f_begin(&f, all_types[i]);
		assert_int_equal(f_decode(&f), -EBADMSG);
	}
	/* A reserved field set in each type that has one. */
	static const struct { uint16_t type; size_t off; } rsv[] = {
		{ PROTO_HELLO, 2 }, { PROTO_SUBMIT, 20 }, { PROTO_RUN, 20 },
		{ PROTO_REGISTER, 44 }, { PROTO_CANCEL, 12 },
		{ PROTO_LOGS, 20 }, { PROTO_TOP, 4 }, { PROTO_FINISHED, 20 },
		{ PROTO_ERROR, 4 }, { PROTO_ADMIT, 20 }, { PROTO_JOB_LIST, 4 },
		{ PROTO_EXITED, 20 }, { PROTO_GPU_LIST, 4 },
		{ PROTO_QUEUED, 12 }, { PROTO_REGION_ENTER, 20 },
		{ PROTO_REGION_LEAVE, 4 }, { PROTO_DRAINED, 12 },
		{ PROTO_DRAIN, 12 },
		{ PROTO_JOB_LIST, 8 + 100 },	/* the first record's */
		/* ... v9's reserved word is v10's held: an ended job is not */
		{ PROTO_JOB_LIST, 8 + 140 },
	};
	for (i = 0; i < sizeof(rsv) / sizeof(rsv[0]); i++) {
		sample(rsv[i].type, &m);
		n = encode(buf, sizeof(buf), &m);
		assert_int_equal(buf[PROTO_HDR_SIZE + rsv[i].off], 0);
		buf[PROTO_HDR_SIZE + rsv[i].off] = 1;
		assert_int_equal(proto_decode(buf, n, &d, &used), -EBADMSG);
	}
}

/* A frame valid in layout but breaking a rule: decoder says -EBADMSG. */
static void test_semantic_rules_on_decode(void **state)
{
	static uint8_t buf[4096];
	struct proto_msg m, d;
	size_t n, used;

	(void)state;
	/* EXITED with state RUNNING, patched in the bytes. */
	sample(PROTO_EXITED, &m);
	n = encode(buf, sizeof(buf), &m);
	buf[PROTO_HDR_SIZE + 8] = PROTO_JOB_RUNNING;
	assert_int_equal(proto_decode(buf, n, &d, &used), -EBADMSG);
	/* ALLOC_UPDATE with resident > peak. */
	sample(PROTO_ALLOC_UPDATE, &m);
	n = encode(buf, sizeof(buf), &m);
	memset(buf + PROTO_HDR_SIZE + 16, 0xff, 8);
	assert_int_equal(proto_decode(buf, n, &d, &used), -EBADMSG);
	/* JOB_LIST whose second record has id 0. */
	sample(PROTO_JOB_LIST, &m);
	n = encode(buf, sizeof(buf), &m);
	{
		size_t off = PROTO_HDR_SIZE + 8 + 144 + 4 + 6 + 4 + 17;

		assert_int_equal(buf[off], 2);
		buf[off] = 0;
		assert_int_equal(proto_decode(buf, n, &d, &used), -EBADMSG);
	}
	/* SUBMIT whose env lacks '='. */
	sample(PROTO_SUBMIT, &m);
	n = encode(buf, sizeof(buf), &m);
	{
		uint8_t *eq = memchr(buf + n - 20, '=', 20);

		assert_non_null(eq);
		*eq = '_';
		assert_int_equal(proto_decode(buf, n, &d, &used), -EBADMSG);
	}
}

/* ------------------------------------------------------------------------
 * Streams.
 */
static void test_stream_reassembly(void **state)
{
	static uint8_t stream[1 << 16], rx[1 << 16];
	size_t slen = 0, rxlen = 0, pos = 0, used;
	struct proto_msg m, d;
	int round, nframes = 0, got = 0;

	(void)state;
	for (round = 0; round < 20; round++) {
		for (size_t i = 0; i < NTYPES; i++) {
			sample(all_types[i], &m);
			slen += encode(stream + slen, sizeof(stream) - slen, &m);
			nframes++;
		}
	}
	/* Deliver in random pieces of 1..64 bytes; decode all we can. */
	while (pos < slen) {
		size_t piece = 1 + rnd() % 64;

		if (piece > slen - pos)
			piece = slen - pos;
		memcpy(rx + rxlen, stream + pos, piece);
		rxlen += piece;
		pos += piece;
		for (;;) {
			int rc = proto_decode(rx, rxlen, &d, &used);

			if (rc == -EAGAIN)
				break;
			assert_int_equal(rc, 0);
			sample(all_types[got % NTYPES], &m);
			msg_eq(&d, &m);
			got++;
			memmove(rx, rx + used, rxlen - used);
			rxlen -= used;
		}
	}
	assert_int_equal(got, nframes);
	assert_int_equal(rxlen, 0);
}

/*
 * A small fuzzer: random byte flips, truncations and splices of valid
 * frames.  The decoder must answer 0 or an error, never read outside the
 * (exactly sized, heap) copy, and whatever it accepts must encode back to
 * the very same bytes.
 */
static void test_random_mutations(void **state)
{
	static uint8_t enc[4096], again[4096];
	struct proto_msg m, d;
	int i, accepted = 0;

	(void)state;
	for (i = 0; i < 200000; i++) {
		size_t n, used, k, flips;
		uint8_t *copy;
		int rc;

		sample(all_types[rnd() % NTYPES], &m);
		n = encode(enc, sizeof(enc), &m);
		flips = rnd() % 4;
		for (k = 0; k < flips; k++) {
			size_t at = rnd() % n;

			/* Favour the payload; sometimes fix up the length. */
			if (rnd() % 4)
				at = PROTO_HDR_SIZE + rnd() % (n - PROTO_HDR_SIZE);
			enc[at] = (uint8_t)rnd();
		}
		if (rnd() % 8 == 0)
			n = rnd() % (n + 1);
		copy = malloc(n ? n : 1);
		memcpy(copy, enc, n);
		rc = proto_decode(copy, n, &d, &used);
		assert_true(rc == 0 || rc == -EAGAIN || rc == -EPROTO ||
			    rc == -EMSGSIZE || rc == -EBADMSG);
		assert_true(used <= n);
		if (rc == 0) {
			struct proto_buf out = { again, sizeof(again), 0 };

			accepted++;
			assert_int_equal(proto_encode(&out, &d), 0);
			assert_int_equal(out.len, used);
			assert_memory_equal(again, copy, used);
		}
		free(copy);
	}
	/* Flips in a seq or a size field still decode: some must pass. */
	assert_true(accepted > 1000);
}

/*
 * Inputs the fuzzer once found a fault with (tests/fuzz/fuzz-proto.c),
 * kept so that the fault stays fixed under `make SAN=1 unit`.
 */
static void test_fuzzer_regressions(void **state)
{
	/* REGISTER with an empty argv: block_ok() did NULL + 0 (UBSan).
	 * Found on protocol v1; here in v2's layout (v3 to v12 keep it), the
	 * same fault. */
	static const uint8_t reg_empty_argv[] = {
		0x4b, 0x4d, 0x55, 0x58, PROTO_VERSION, 0x00, 0x67, 0x00,
		0x3d, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00,
		0x00, 0x00, 0x00, 0x00, 0x14, 0x00, 0x00, 0x00, /* job */
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* pid_start */
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* mem */
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* gpus */
		0x00, 0x33, 0x00, 0x40, 0x00, 0x00, 0x00, 0x00, /* pid, flags */
		0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* ngpus, 0 */
		0x01, 0x00, 0x00, 0x00, 0x00,			/* name "" */
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* argv: none */
		0x01, 0x00, 0x00, 0x00, 0x08, 0x00, 0x00, 0x00,
		'p', 'y', 't', 'h', 'o', 'n', '3', 0x00,
	};
	struct proto_msg d;
	size_t used;

	(void)state;
	assert_int_equal(proto_decode(reg_empty_argv, sizeof(reg_empty_argv),
				      &d, &used), -EBADMSG);
	assert_int_equal(used, 16 + 61);
}

static void test_job_states(void **state)
{
	uint32_t s;

	(void)state;
	for (s = PROTO_JOB_STATE_MIN; s <= PROTO_JOB_STATE_MAX; s++) {
		uint32_t back = 0;

		assert_non_null(proto_job_state_name(s));
		assert_int_equal(proto_job_state_parse(proto_job_state_name(s),
						       &back), 0);
		assert_int_equal(back, s);
	}
	assert_null(proto_job_state_name(0));
	assert_null(proto_job_state_name(6));
	assert_int_equal(proto_job_state_parse("zombie", &s), -EINVAL);
	assert_int_equal(proto_job_state_parse(NULL, &s), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip_all_types),
		cmocka_unit_test(test_typed_encoders),
		cmocka_unit_test(test_golden_bytes),
		cmocka_unit_test(test_round_trip_edges),
		cmocka_unit_test(test_strv_block_form),
		cmocka_unit_test(test_truncation_every_byte),
		cmocka_unit_test(test_length_shorter_than_payload),
		cmocka_unit_test(test_bad_magic_version),
		cmocka_unit_test(test_oversized_length),
		cmocka_unit_test(test_encoder_limits),
		cmocka_unit_test(test_encoder_rejects_invalid),
		cmocka_unit_test(test_bad_strings),
		cmocka_unit_test(test_bad_counts),
		cmocka_unit_test(test_bad_types_and_reserved),
		cmocka_unit_test(test_semantic_rules_on_decode),
		cmocka_unit_test(test_stream_reassembly),
		cmocka_unit_test(test_random_mutations),
		cmocka_unit_test(test_fuzzer_regressions),
		cmocka_unit_test(test_job_states),
	};
	const char *s = getenv("KMUX_TEST_SEED");

	if (s != NULL)
		seed = strtoull(s, NULL, 0) | 1;
	return cmocka_run_group_tests(tests, NULL, NULL);
}
