/*
 * fuzz-proto.c - libFuzzer harness for the kmux wire protocol decoder.
 *
 * The daemon decodes whatever any local process writes to its socket, so
 * proto_decode() must be total.  For every input this checks that:
 *   - decoding frame after frame returns 0 or one of the documented errors,
 *     never reads outside the input (ASan: libFuzzer's buffer is exactly
 *     sized) and reports *consumed within the input;
 *   - every accepted frame encodes back to exactly the bytes it came from
 *     (the encoding is canonical), and its string lists and job records
 *     can be walked and copied;
 *   - feeding the same bytes in pieces, as a socket would, gives the same
 *     frames and the same final answer as feeding them at once.
 *
 * Built with -DFUZZ_PROTO_SEEDS instead, it is a small program that writes
 * one encoded sample of every message type into a directory: the seed
 * corpus (tests/fuzz/build-proto.sh does both).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "proto.h"

#ifndef FUZZ_PROTO_SEEDS

#define MAX_FRAMES 64

static uint8_t again[PROTO_MAX_MSG];
/* Where walk() adds what it reads, so that the reads are not optimized out. */
static volatile size_t sum;

static void check(int cond, const char *what)
{
	if (!cond) {
		fprintf(stderr, "fuzz-proto: %s\n", what);
		abort();
	}
}

/* Touch every byte a decoded message points at. */
static void walk(const struct proto_msg *m)
{
	struct proto_iter it = { 0 };
	struct proto_job_rec rec;
	const struct proto_strv *v = NULL;
	const char *s;
	char **dup;

	switch (m->type) {
	case PROTO_SUBMIT:
	case PROTO_RUN:
		sum += strlen(m->u.job.name) + strlen(m->u.job.cwd);
		v = &m->u.job.argv;
		while (proto_strv_next(&m->u.job.env, &it, &s))
			sum += strlen(s);
		break;
	case PROTO_REGISTER:
		v = &m->u.reg.argv;
		break;
	case PROTO_JOB_LIST:
		while (proto_job_list_next(&m->u.jobs, &it, &rec))
			sum += strlen(rec.name) + strlen(rec.cmd);
		check(it.i == m->u.jobs.count, "job list walk short");
		break;
	case PROTO_HELLO:
		sum += strlen(m->u.hello.ident);
		break;
	case PROTO_ERROR:
		sum += strlen(m->u.error.message);
		break;
	case PROTO_GPU_LIST:
		sum += strlen(m->u.gpus.note);
		break;
	case PROTO_LOG_DATA:
		for (uint32_t i = 0; i < m->u.log.length; i++)
			sum += m->u.log.data[i];
		break;
	}
	if (v == NULL)
		return;
	memset(&it, 0, sizeof(it));
	while (proto_strv_next(v, &it, &s))
		sum += strlen(s);
	check(it.i == v->count, "strv walk short");
	if (proto_strv_dup(v, &dup) == 0) {
		for (char **p = dup; *p; p++)
			sum += strlen(*p);
		free(dup);
	}
}

/* Decode frames from buf until something other than 0; return that. */
static int decode_all(const uint8_t *buf, size_t len, size_t *nframes,
		      size_t *ends)
{
	struct proto_msg m;
	size_t off = 0, used;
	int rc;

	*nframes = 0;
	for (;;) {
		rc = proto_decode(buf + off, len - off, &m, &used);
		check(used <= len - off, "consumed beyond the input");
		check(rc == 0 || rc == -EAGAIN || rc == -EPROTO ||
		      rc == -EMSGSIZE || rc == -EBADMSG, "undocumented error");
		if (rc != 0)
			return rc;
		check(used >= PROTO_HDR_SIZE, "frame shorter than a header");
		walk(&m);
		{
			struct proto_buf out = { again, sizeof(again), 0 };

			check(proto_encode(&out, &m) == 0, "re-encode failed");
			check(out.len == used, "re-encoded size differs");
			check(memcmp(again, buf + off, used) == 0,
			      "re-encoded bytes differ");
		}
		if (*nframes < MAX_FRAMES)
			ends[*nframes] = off + used;
		(*nframes)++;
		off += used;
	}
}

/*
 * Feed buf in pieces whose sizes come from the input itself, through a
 * receive buffer, as kmuxd's connection code will.
 */
static int decode_pieces(const uint8_t *buf, size_t len, size_t *nframes)
{
	uint8_t *rx = malloc(len ? len : 1);
	size_t rxlen = 0, pos = 0, used;
	struct proto_msg m;
	int rc = -EAGAIN;
	unsigned h = 2166136261u;

	check(rx != NULL, "malloc");
	*nframes = 0;
	while (pos < len) {
		size_t piece;

		h = (h ^ buf[pos]) * 16777619u;
		piece = 1 + h % 97;
		if (piece > len - pos)
			piece = len - pos;
		memcpy(rx + rxlen, buf + pos, piece);
		rxlen += piece;
		pos += piece;
		for (;;) {
			rc = proto_decode(rx, rxlen, &m, &used);
			if (rc != 0)
				break;
			(*nframes)++;
			memmove(rx, rx + used, rxlen - used);
			rxlen -= used;
		}
		if (rc != -EAGAIN)
			break;
	}
	free(rx);
	return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t ends[MAX_FRAMES], n_all, n_pieces;
	int rc_all, rc_pieces;

	rc_all = decode_all(data, size, &n_all, ends);
	rc_pieces = decode_pieces(data, size, &n_pieces);
	check(n_all == n_pieces, "pieces gave another number of frames");
	/*
	 * Whole, the last answer may be -EAGAIN (a partial frame at the end)
	 * or an error; in pieces the same, except that an error found while
	 * the bad frame was still partial is reported just the same (the
	 * header checks do not wait for the payload).
	 */
	check(rc_all == rc_pieces, "pieces gave another final answer");
	return 0;
}

#else /* FUZZ_PROTO_SEEDS */

static const char *const argv3[] = { "python3", "train.py", "--epochs=3" };
static const char *const env1[] = { "CUDA_VISIBLE_DEVICES=0" };
static const struct proto_job_rec recs[] = {
	{ .id = 1, .gpus = 1, .mem_request = 1 << 30, .state = PROTO_JOB_RUNNING,
	  .exit_code = PROTO_EXIT_UNKNOWN, .ngpus = 1, .mem_quota = 1 << 30,
	  .mem_used = 1 << 20, .kernel_rate = 50, .name = "train",
	  .cmd = "python3 train.py" },
	{ .id = 2, .state = PROTO_JOB_EXITED, .exit_code = 1, .ngpus = 2,
	  .name = "", .cmd = "./a.out" },
	{ .id = 3, .gpus = 1, .state = PROTO_JOB_RUNNING,
	  .exit_code = PROTO_EXIT_UNKNOWN, .ngpus = 1, .mem_quota = 8 << 20,
	  .flags = PROTO_JOBREC_F_SUSPENDED, .name = "", .cmd = "./m" },
	{ .id = 4, .state = PROTO_JOB_QUEUED, .exit_code = PROTO_EXIT_UNKNOWN,
	  .ngpus = 2, .held = PROTO_HELD_GPUS, .name = "", .cmd = "./two" },
};
static const uint8_t logb[] = "epoch 1 loss 0.5\n";

static int write_seed(const char *dir, const char *name,
		      const struct proto_msg *m)
{
	static uint8_t buf[8192];
	struct proto_buf out = { buf, sizeof(buf), 0 };
	char path[4096];
	FILE *f;
	int rc = proto_encode(&out, m);

	if (rc < 0) {
		fprintf(stderr, "fuzz-proto-seeds: %s: %s\n", name, strerror(-rc));
		return rc;
	}
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "wb");
	if (f == NULL || fwrite(buf, 1, out.len, f) != out.len) {
		perror(path);
		if (f)
			fclose(f);
		return -EIO;
	}
	return fclose(f) == 0 ? 0 : -EIO;
}

int main(int argc, char **argv)
{
	struct proto_msg m[40];
	int i = 0, rc = 0;

	if (argc != 2) {
		fprintf(stderr, "usage: %s DIR\n", argv[0]);
		return 2;
	}
	mkdir(argv[1], 0755);
	memset(m, 0, sizeof(m));
	m[i].type = PROTO_HELLO;
	m[i++].u.hello = (struct proto_hello){ PROTO_ROLE_CLI, 42, "kmux" };
	m[i].type = PROTO_SUBMIT;
	m[i++].u.job = (struct proto_job_req){ .ngpus = 1, .mem = 1 << 30,
		.name = "job", .cwd = "/tmp", .argv = { 3, argv3, NULL, 0 },
		.env = { 1, env1, NULL, 0 } };
	m[i] = m[i - 1];
	m[i++].type = PROTO_RUN;
	m[i].type = PROTO_REGISTER;
	m[i++].u.reg = (struct proto_register){ .pid_start = 12345,
		.pid = 99, .mem = 1 << 30, .gpus = 0x3, .ngpus = 1,
		.name = "slurm-1.0.0", .argv = { 1, argv3, NULL, 0 } };
	m[i].type = PROTO_ALLOC_UPDATE;
	m[i++].u.alloc = (struct proto_alloc_update){ .job = 1, .pid = 99,
		.gpu = 0, .resident = 10, .peak = 20, .want = 0, .kernels = 5,
		.flags = PROTO_ALLOC_F_EVICT, .thrash_ws = 1 << 20 };
	m[i].type = PROTO_PS;
	m[i++].u.ps = (struct proto_ps){ 0, 0 };
	m[i].type = PROTO_WAIT;
	m[i++].u.wait.job = 1;
	m[i].type = PROTO_ATTACH;	/* v11 */
	m[i++].u.attach.job = 1;
	m[i].type = PROTO_STARTED;	/* v12 */
	m[i++].u.started = (struct proto_started){ 1, 99 };
	m[i].type = PROTO_CANCEL;
	m[i++].u.cancel = (struct proto_cancel){ 1, 15 };
	m[i].type = PROTO_LOGS;
	m[i++].u.logs = (struct proto_logs){ 1, 0, PROTO_LOGS_F_FOLLOW };
	m[i++].type = PROTO_TOP;
	m[i].type = PROTO_FINISHED;
	m[i++].u.finished = (struct proto_finished){ 1, 99, 0, 0, 0 };
	m[i].type = PROTO_FINISHED;
	m[i++].u.finished = (struct proto_finished){
		1, 99, 127, 0, PROTO_FINISHED_F_NOT_STARTED };
	m[i].type = PROTO_OK;
	m[i++].u.ok.id = 1;
	m[i].type = PROTO_ERROR;
	m[i++].u.error = (struct proto_error){ ENOENT, "no job 7" };
	m[i].type = PROTO_ADMIT;
	m[i].u.admit = (struct proto_admit){ .job = 1, .quota = 1 << 30,
					     .ngpus = 2, .mps_pipe = "/r/s.mps/pipe",
					     .mps_log = "/r/s.mps/log" };
	m[i++].u.admit.gpus[1] = 1;
	m[i].type = PROTO_JOB_LIST;
	m[i++].u.jobs = (struct proto_job_list){ 4, recs, NULL, 0 };
	m[i].type = PROTO_EXITED;
	m[i++].u.exited = (struct proto_exited){ 1, PROTO_JOB_EXITED, 0, 0 };
	m[i].type = PROTO_GPU_LIST;
	m[i].u.gpus.count = 2;
	m[i].u.gpus.gpu[0] = (struct proto_gpu_rec){ 0, 1, 80ull << 30,
						     1ull << 30, 2ull << 30, 500, 600 };
	m[i++].u.gpus.gpu[1].index = 1;
	m[i].type = PROTO_GPU_LIST;	/* v10: none, and why */
	m[i++].u.gpus = (struct proto_gpu_list){ .count = 0,
		.note = "NVML not available (libnvidia-ml.so.1: not found)" };
	m[i].type = PROTO_LOG_DATA;
	m[i++].u.log = (struct proto_log_data){ 1, 0, 0, sizeof(logb) - 1, logb };
	m[i].type = PROTO_QUEUED;
	m[i++].u.queued = (struct proto_queued){ 1, 0 };
	m[i].type = PROTO_REGION_ENTER;
	m[i++].u.renter = (struct proto_region_enter){ 1, 100, 0, 0 };
	m[i].type = PROTO_REGION_LEAVE;
	m[i++].u.rleave = (struct proto_region_leave){ 100 };
	m[i].type = PROTO_DRAINED;
	m[i++].u.drained = (struct proto_drained){ 1, 101 };
	m[i].type = PROTO_DRAIN;
	m[i++].u.drain = (struct proto_drain){ 1, 0 };
	m[i].type = PROTO_REGION_GRANTED;
	m[i++].u.granted = (struct proto_region_granted){ 1, 500, 0, 2 };
	m[i].type = PROTO_MEM_PRESSURE;
	m[i++].u.pressure = (struct proto_mem_pressure){ 1 << 20, 0, 0 };
	m[i].type = PROTO_MEM_PRESSURE;
	m[i++].u.pressure = (struct proto_mem_pressure){ 1 << 20, 0,
		PROTO_PRESSURE_F_BUDGET };
	m[i].type = PROTO_ALLOC_UPDATE;
	m[i++].u.alloc = (struct proto_alloc_update){ .job = 1, .pid = 99,
		.gpu = 0, .resident = 10, .peak = 20, .want = 8 << 20,
		.flags = PROTO_ALLOC_F_EVICT | PROTO_ALLOC_F_SHRUNK, .waits = 4096 };
	m[i].type = PROTO_ALLOC_UPDATE;
	m[i++].u.alloc = (struct proto_alloc_update){ .job = 1, .pid = 99,
		.gpu = 0, .resident = 2 << 20, .peak = 20 << 20,
		.want = 16 << 20,
		.flags = PROTO_ALLOC_F_EVICT | PROTO_ALLOC_F_SUSPEND };

	for (int k = 0; k < i; k++) {
		char name[64];

		m[k].seq = (uint32_t)k;
		/* k too: several samples of one type (ALLOC_UPDATE's
		 * flags) must not overwrite each other. */
		snprintf(name, sizeof(name), "%03u-%02d-%s", m[k].type, k,
			 proto_type_name(m[k].type));
		if (write_seed(argv[1], name, &m[k]) < 0)
			rc = 1;
	}
	return rc;
}

#endif /* FUZZ_PROTO_SEEDS */
