/*
 * test-db.c - unit tests of kmuxd's SQLite state on temporary databases.
 *
 * Each test gets a fresh directory under $TMPDIR (default /tmp).  Covered:
 * creation (0600, WAL, schema version), jobs through every state and every
 * refused transition, listing by user and state, profiles' running means,
 * frozen processes, recovery with a fake and with the real liveness test,
 * a writer killed with SIGKILL in the middle of its life, a full disk (the
 * page cap and the file switch as test knobs), a read-only database, and
 * files that are not kmux databases or come from a newer kmux.
 */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <sqlite3.h>

#include "db.h"
#include "proto.h"

struct fx {
	char dir[256];
	char path[300];
	char err[512];
	struct db *db;
};

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	const char *tmp = getenv("TMPDIR");

	if (f == NULL)
		return -1;
	snprintf(f->dir, sizeof(f->dir), "%s/kmux-test-db-XXXXXX",
		 tmp && *tmp ? tmp : "/tmp");
	if (mkdtemp(f->dir) == NULL)
		return -1;
	snprintf(f->path, sizeof(f->path), "%s/kmux.db", f->dir);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	char p[400];
	static const char *const sfx[] = { "", "-wal", "-shm", "-journal",
					   ".link" };

	db_close(f->db);
	for (size_t i = 0; i < sizeof(sfx) / sizeof(sfx[0]); i++) {
		snprintf(p, sizeof(p), "%s%s", f->path, sfx[i]);
		unlink(p);
	}
	snprintf(p, sizeof(p), "%s/other", f->dir);
	unlink(p);
	rmdir(f->dir);
	free(f);
	return 0;
}

static void open_ok(struct fx *f)
{
	int rc = db_open(f->path, 0, &f->db, f->err, sizeof(f->err));

	if (rc != 0)
		fail_msg("db_open: %d %s", rc, f->err);
}

static void reopen(struct fx *f)
{
	db_close(f->db);
	f->db = NULL;
	open_ok(f);
}

/* A job with every field set, owned by uid. */
static struct db_job sample_job(uint32_t uid, const char *name)
{
	static const char argv[] = "python3\0train.py\0--lr=0.1";
	static const char env[] = "CUDA_VISIBLE_DEVICES=0\0HOME=/home/u";
	struct db_job j = {
		.name = (char *)name, .uid = uid, .argc = 3,
		.argv = (char *)argv, .argv_len = sizeof(argv),
		.envc = 2, .env = (char *)env, .env_len = sizeof(env),
		.cwd = "/home/u/src", .flags = PROTO_JOB_F_EXCLUSIVE,
		.prio = -3, .ngpus = 2, .mem_request = 12ull << 30,
		.submit_us = 1700000000000000ull,
		.log_path = "/run/user/1000/kmux/logs/1.log",
	};

	return j;
}

static int64_t insert(struct fx *f, uint32_t uid, const char *name)
{
	struct db_job j = sample_job(uid, name);
	int rc = db_job_insert(f->db, &j, f->err, sizeof(f->err));

	if (rc != 0)
		fail_msg("insert: %d %s", rc, f->err);
	assert_true(j.id > 0);
	return j.id;
}

static void test_create(void **state)
{
	struct fx *f = *state;
	struct stat sb;
	sqlite3 *h;
	sqlite3_stmt *st;
	int v = 0;

	open_ok(f);
	assert_int_equal(db_schema_version(f->db, &v, f->err, sizeof(f->err)), 0);
	assert_int_equal(v, DB_SCHEMA_VERSION);
	assert_int_equal(stat(f->path, &sb), 0);
	assert_int_equal(sb.st_mode & 0777, 0600);
	/* WAL is in force, seen from another connection. */
	assert_int_equal(sqlite3_open(f->path, &h), SQLITE_OK);
	assert_int_equal(sqlite3_prepare_v2(h, "PRAGMA journal_mode", -1, &st,
					    NULL), SQLITE_OK);
	assert_int_equal(sqlite3_step(st), SQLITE_ROW);
	assert_string_equal((const char *)sqlite3_column_text(st, 0), "wal");
	sqlite3_finalize(st);
	sqlite3_close(h);
	/* Reopening migrates nothing and loses nothing. */
	reopen(f);
	assert_int_equal(db_schema_version(f->db, &v, f->err, sizeof(f->err)), 0);
	assert_int_equal(v, DB_SCHEMA_VERSION);
}

static void test_job_round_trip(void **state)
{
	struct fx *f = *state;
	struct db_job in = sample_job(1000, "train"), out;

	open_ok(f);
	assert_int_equal(db_job_insert(f->db, &in, f->err, sizeof(f->err)), 0);
	assert_int_equal(db_job_get(f->db, in.id, &out, f->err, sizeof(f->err)), 0);
	assert_int_equal(out.id, in.id);
	assert_string_equal(out.name, "train");
	assert_int_equal(out.uid, 1000);
	assert_int_equal(out.argc, 3);
	assert_int_equal(out.argv_len, in.argv_len);
	assert_memory_equal(out.argv, in.argv, in.argv_len);
	assert_int_equal(out.envc, 2);
	assert_memory_equal(out.env, in.env, in.env_len);
	assert_string_equal(out.cwd, "/home/u/src");
	assert_int_equal(out.state, PROTO_JOB_QUEUED);
	assert_int_equal(out.exit_code, PROTO_EXIT_UNKNOWN);
	assert_int_equal(out.flags, PROTO_JOB_F_EXCLUSIVE);
	assert_int_equal(out.prio, -3);
	assert_int_equal(out.ngpus, 2);
	assert_int_equal(out.mem_request, 12ull << 30);
	assert_int_equal(out.submit_us, 1700000000000000ull);
	assert_string_equal(out.log_path, in.log_path);
	assert_int_equal(out.profile_key, db_profile_key(in.argv, in.argv_len));
	assert_int_equal(out.start_us, 0);
	db_job_release(&out);

	/* No name, no env, no log: defaults. */
	in = sample_job(0, NULL);
	in.envc = 0;
	in.env = NULL;
	in.env_len = 0;
	in.log_path = NULL;
	assert_int_equal(db_job_insert(f->db, &in, f->err, sizeof(f->err)), 0);
	assert_int_equal(db_job_get(f->db, in.id, &out, f->err, sizeof(f->err)), 0);
	assert_string_equal(out.name, "");
	assert_int_equal(out.envc, 0);
	assert_int_equal(out.env_len, 0);
	assert_null(out.log_path);
	db_job_release(&out);

	assert_int_equal(db_job_get(f->db, 999, &out, f->err, sizeof(f->err)),
			 -ENOENT);
	assert_string_equal(f->err, "no job 999");
}

static void test_insert_validation(void **state)
{
	struct fx *f = *state;
	struct db_job j;

	open_ok(f);
#define BAD(stmt) do {							\
		j = sample_job(1, "x");					\
		stmt;							\
		assert_int_equal(db_job_insert(f->db, &j, f->err,	\
					       sizeof(f->err)), -EINVAL); \
	} while (0)
	BAD(j.argc = 2);			/* block holds 3 */
	BAD(j.argc = 0);
	BAD(j.argv_len--);			/* last not terminated */
	BAD(j.argv = NULL);
	BAD(j.envc = 0);
	BAD(j.cwd = NULL);
	BAD(j.ngpus = 0);
	BAD(j.ngpus = PROTO_MAX_GPUS + 1);
	BAD(j.state = PROTO_JOB_RUNNING);
#undef BAD
	{
		struct db_job *v;
		size_t n;

		assert_int_equal(db_job_list(f->db, NULL, &v, &n, f->err,
					     sizeof(f->err)), 0);
		assert_int_equal(n, 0);
		db_job_list_free(v, n);
	}
}

static void test_transitions(void **state)
{
	struct fx *f = *state;
	struct db_job j;
	int64_t a, b, c;
	char *e = f->err;
	size_t el = sizeof(f->err);

	open_ok(f);
	a = insert(f, 1, "a");
	b = insert(f, 1, "b");
	c = insert(f, 1, "c");

	/* queued -> running -> exited */
	assert_int_equal(db_job_start(f->db, a, 0x5, 3ull << 30, 0, 0, 100, e, el), 0);
	assert_int_equal(db_job_set_pid(f->db, a, 4242, 777, e, el), 0);
	assert_int_equal(db_job_update_peak(f->db, a, 2ull << 30, e, el), 0);
	assert_int_equal(db_job_update_peak(f->db, a, 1ull << 30, e, el), 0);
	assert_int_equal(db_job_finish(f->db, a, PROTO_JOB_EXITED, 3, 0, 200, e, el), 0);
	assert_int_equal(db_job_get(f->db, a, &j, e, el), 0);
	assert_int_equal(j.state, PROTO_JOB_EXITED);
	assert_int_equal(j.gpus, 0x5);
	assert_int_equal(j.mem_quota, 3ull << 30);
	assert_int_equal(j.pid, 4242);
	assert_int_equal(j.pid_start, 777);
	assert_int_equal(j.mem_peak, 2ull << 30);	/* the larger stays */
	assert_int_equal(j.start_us, 100);
	assert_int_equal(j.end_us, 200);
	assert_int_equal(j.exit_code, 3);
	db_job_release(&j);

	/* Ended jobs refuse everything, with a reason. */
	assert_int_equal(db_job_start(f->db, a, 1, 1, 1, 1, 1, e, el), -EALREADY);
	assert_non_null(strstr(e, "already ended (exited)"));
	assert_int_equal(db_job_finish(f->db, a, PROTO_JOB_CANCELLED, -1, 0, 1, e, el),
			 -EALREADY);
	assert_int_equal(db_job_set_pid(f->db, a, 1, 1, e, el), -EALREADY);

	/* running twice */
	assert_int_equal(db_job_start(f->db, b, 1, 1, 10, 10, 1, e, el), 0);
	assert_int_equal(db_job_start(f->db, b, 1, 1, 10, 10, 1, e, el), -EINVAL);
	assert_non_null(strstr(e, "is running"));
	/* killed by a signal */
	assert_int_equal(db_job_finish(f->db, b, PROTO_JOB_EXITED, -1, 9, 5, e, el), 0);
	assert_int_equal(db_job_get(f->db, b, &j, e, el), 0);
	assert_int_equal(j.exit_code, PROTO_EXIT_UNKNOWN);
	assert_int_equal(j.signal, 9);
	db_job_release(&j);

	/* queued -> cancelled */
	assert_int_equal(db_job_finish(f->db, c, PROTO_JOB_CANCELLED, -1, 0, 5, e, el), 0);
	assert_int_equal(db_job_get(f->db, c, &j, e, el), 0);
	assert_int_equal(j.state, PROTO_JOB_CANCELLED);
	db_job_release(&j);

	/* Unknown jobs and bad arguments. */
	assert_int_equal(db_job_start(f->db, 99, 1, 1, 1, 1, 1, e, el), -ENOENT);
	assert_string_equal(e, "start job 99: no job 99");
	assert_int_equal(db_job_finish(f->db, 99, PROTO_JOB_EXITED, 0, 0, 1, e, el),
			 -ENOENT);
	assert_int_equal(db_job_update_peak(f->db, 99, 1, e, el), -ENOENT);
	assert_int_equal(db_job_set_pid(f->db, 99, 1, 1, e, el), -ENOENT);
	assert_int_equal(db_job_finish(f->db, c, PROTO_JOB_RUNNING, 0, 0, 1, e, el),
			 -EINVAL);
	assert_int_equal(db_job_finish(f->db, c, PROTO_JOB_EXITED, 256, 0, 1, e, el),
			 -EINVAL);
	assert_int_equal(db_job_set_pid(f->db, c, 0, 0, e, el), -EINVAL);
	/* err may be NULL. */
	assert_int_equal(db_job_start(f->db, 99, 1, 1, 1, 1, 1, NULL, 0), -ENOENT);
}

static void test_list_filters(void **state)
{
	struct fx *f = *state;
	struct db_job *v;
	size_t n;
	struct db_filter flt = { .uid = -1 };
	int64_t ids[6];

	open_ok(f);
	for (int i = 0; i < 6; i++)
		ids[i] = insert(f, i % 2 ? 1000 : 2000, "j");
	db_job_start(f->db, ids[0], 1, 1, 0, 0, 1, NULL, 0);
	db_job_start(f->db, ids[1], 1, 1, 0, 0, 1, NULL, 0);
	db_job_finish(f->db, ids[1], PROTO_JOB_EXITED, 0, 0, 2, NULL, 0);

	assert_int_equal(db_job_list(f->db, &flt, &v, &n, f->err, sizeof(f->err)), 0);
	assert_int_equal(n, 6);
	for (size_t i = 0; i < n; i++)
		assert_int_equal(v[i].id, ids[i]);	/* by id */
	db_job_list_free(v, n);

	/* System mode: a user sees only theirs. */
	flt.uid = 1000;
	assert_int_equal(db_job_list(f->db, &flt, &v, &n, f->err, sizeof(f->err)), 0);
	assert_int_equal(n, 3);
	for (size_t i = 0; i < n; i++)
		assert_int_equal(v[i].uid, 1000);
	db_job_list_free(v, n);

	flt.uid = -1;
	flt.states = 1u << PROTO_JOB_QUEUED;
	assert_int_equal(db_job_list(f->db, &flt, &v, &n, f->err, sizeof(f->err)), 0);
	assert_int_equal(n, 4);
	db_job_list_free(v, n);
	flt.states = 1u << PROTO_JOB_RUNNING | 1u << PROTO_JOB_EXITED;
	flt.uid = 2000;
	assert_int_equal(db_job_list(f->db, &flt, &v, &n, f->err, sizeof(f->err)), 0);
	assert_int_equal(n, 1);
	assert_int_equal(v[0].id, ids[0]);
	db_job_list_free(v, n);
	flt.uid = 4;
	assert_int_equal(db_job_list(f->db, &flt, &v, &n, f->err, sizeof(f->err)), 0);
	assert_int_equal(n, 0);
	db_job_list_free(v, n);
}

/* Queued jobs survive closing, and ids are never reused. */
static void test_reopen_keeps_queue(void **state)
{
	struct fx *f = *state;
	struct db_job *v;
	size_t n;
	int64_t a, b;

	open_ok(f);
	a = insert(f, 1, "first");
	b = insert(f, 1, "second");
	reopen(f);
	assert_int_equal(db_job_list(f->db, NULL, &v, &n, f->err, sizeof(f->err)), 0);
	assert_int_equal(n, 2);
	assert_int_equal(v[0].id, a);
	assert_string_equal(v[1].name, "second");
	assert_int_equal(v[1].state, PROTO_JOB_QUEUED);
	db_job_list_free(v, n);
	/* Even after the newest row is deleted by hand, its id stays used. */
	{
		sqlite3 *h;

		assert_int_equal(sqlite3_open(f->path, &h), SQLITE_OK);
		assert_int_equal(sqlite3_exec(h, "DELETE FROM jobs WHERE id = 2",
					      NULL, NULL, NULL), SQLITE_OK);
		sqlite3_close(h);
	}
	assert_true(insert(f, 1, "third") > b);
}

/*
 * A daemon killed with SIGKILL right after a commit: the job is there
 * after the next open (WAL replay), and so is the state it had.
 */
static void test_survives_sigkill(void **state)
{
	struct fx *f = *state;
	struct db_job *v;
	size_t n;
	pid_t pid;
	int status;

	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct db *db;
		struct db_job j = sample_job(7, "victim");

		if (db_open(f->path, 0, &db, NULL, 0) != 0 ||
		    db_job_insert(db, &j, NULL, 0) != 0 ||
		    db_job_insert(db, &j, NULL, 0) != 0 ||
		    db_job_start(db, j.id, 1, 1, 0, 0, 1, NULL, 0) != 0)
			_exit(1);
		raise(SIGKILL);
		_exit(2);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	open_ok(f);
	assert_int_equal(db_job_list(f->db, NULL, &v, &n, f->err, sizeof(f->err)), 0);
	assert_int_equal(n, 2);
	assert_string_equal(v[0].name, "victim");
	assert_int_equal(v[0].state, PROTO_JOB_QUEUED);
	assert_int_equal(v[1].state, PROTO_JOB_RUNNING);
	db_job_list_free(v, n);
}

static void test_profiles(void **state)
{
	struct fx *f = *state;
	struct db_profile p;
	static const char a1[] = "python3\0train.py", a2[] = "python3\0eval.py";
	uint64_t k1 = db_profile_key(a1, sizeof(a1));
	uint64_t k2 = db_profile_key(a2, sizeof(a2));

	open_ok(f);
	assert_true(k1 != k2);
	assert_int_equal(k1, db_profile_key(a1, sizeof(a1)));
	assert_true(db_profile_key("", 0) != 0);

	assert_int_equal(db_profile_get(f->db, k1, &p, f->err, sizeof(f->err)),
			 -ENOENT);
	/* A first run NVML could not measure keeps its prediction (0.7)
	 * only until a measured run replaces it; the measured ones are
	 * averaged; an unmeasured run later changes nothing. */
	assert_int_equal(db_profile_update(f->db, k1, 4ull << 30, 0.7, 0.5, false,
					   1000, 1, f->err, sizeof(f->err)), 0);
	assert_int_equal(db_profile_get(f->db, k1, &p, f->err, sizeof(f->err)), 0);
	assert_true(p.mean_busy > 0.7 - 1e-12 && p.mean_busy < 0.7 + 1e-12);
	assert_int_equal(p.busy_runs, 0);
	/* Its duty was not measured either: unknown, whatever was passed. */
	assert_int_equal(p.duty_runs, 0);
	assert_true(p.mean_duty < 0);
	assert_int_equal(db_profile_update(f->db, k1, 6ull << 30, 0.2, 0.1, true,
					   3000, 2, f->err, sizeof(f->err)), 0);
	assert_int_equal(db_profile_get(f->db, k1, &p, f->err, sizeof(f->err)), 0);
	assert_true(p.mean_busy > 0.2 - 1e-12 && p.mean_busy < 0.2 + 1e-12);
	assert_int_equal(p.duty_runs, 1);
	assert_true(p.mean_duty > 0.1 - 1e-12 && p.mean_duty < 0.1 + 1e-12);
	assert_int_equal(db_profile_update(f->db, k1, 5ull << 30, 0.4, 0.2, true,
					   2000, 3, f->err, sizeof(f->err)), 0);
	assert_int_equal(db_profile_update(f->db, k1, 5ull << 30, 0.9, 0.9, false,
					   2000, 3, f->err, sizeof(f->err)), 0);
	assert_int_equal(db_profile_get(f->db, k1, &p, f->err, sizeof(f->err)), 0);
	assert_int_equal(p.runs, 4);
	assert_int_equal(p.busy_runs, 2);
	assert_int_equal(p.peak_mem, 6ull << 30);
	assert_true(p.mean_busy > 0.3 - 1e-12 && p.mean_busy < 0.3 + 1e-12);
	/* The duty's running mean, like the busyness's: measured runs only. */
	assert_int_equal(p.duty_runs, 2);
	assert_true(p.mean_duty > 0.15 - 1e-12 && p.mean_duty < 0.15 + 1e-12);
	assert_true(p.mean_runtime_us > 2000 - 1e-6 && p.mean_runtime_us < 2000 + 1e-6);
	assert_int_equal(p.updated_us, 3);
	assert_int_equal(db_profile_get(f->db, k2, &p, f->err, sizeof(f->err)),
			 -ENOENT);
	/* Keys with the top bit set survive the signed column. */
	assert_int_equal(db_profile_update(f->db, UINT64_MAX, 1, 0, 0, true, 0, 0,
					   f->err, sizeof(f->err)), 0);
	assert_int_equal(db_profile_get(f->db, UINT64_MAX, &p, f->err,
					sizeof(f->err)), 0);
	assert_int_equal(db_profile_update(f->db, k1, 1, 1.5, 0.1, true, 0, 0,
					   f->err, sizeof(f->err)), -EINVAL);
	assert_int_equal(db_profile_update(f->db, k1, 1, 0.5, 1.5, true, 0, 0,
					   f->err, sizeof(f->err)), -EINVAL);
	assert_int_equal(db_profile_update(f->db, k1, 1, 0.5, NAN, true, 0, 0,
					   f->err, sizeof(f->err)), -EINVAL);
	reopen(f);
	assert_int_equal(db_profile_get(f->db, k1, &p, f->err, sizeof(f->err)), 0);
	assert_int_equal(p.runs, 4);
	assert_int_equal(p.duty_runs, 2);
	assert_true(p.mean_duty > 0.15 - 1e-12 && p.mean_duty < 0.15 + 1e-12);
}

static void test_frozen(void **state)
{
	struct fx *f = *state;
	struct db_frozen *v;
	size_t n;

	open_ok(f);
	assert_int_equal(db_frozen_add(f->db, 100, 5, 1, 10, NULL, f->err, sizeof(f->err)), 0);
	assert_int_equal(db_frozen_add(f->db, 200, 6, 0, 20, NULL, f->err, sizeof(f->err)), 0);
	assert_int_equal(db_frozen_add(f->db, 100, 5, 1, 30, NULL, f->err, sizeof(f->err)), 0);
	assert_int_equal(db_frozen_list(f->db, &v, &n, f->err, sizeof(f->err)), 0);
	assert_int_equal(n, 2);
	assert_int_equal(v[0].pid, 200);
	assert_int_equal(v[1].pid, 100);
	assert_int_equal(v[1].since_us, 30);	/* replaced, not doubled */
	free(v);
	assert_int_equal(db_frozen_remove(f->db, 100, 5, f->err, sizeof(f->err)), 0);
	assert_int_equal(db_frozen_remove(f->db, 100, 5, f->err, sizeof(f->err)),
			 -ENOENT);
	assert_int_equal(db_frozen_add(f->db, 0, 5, 1, 10, NULL, f->err, sizeof(f->err)),
			 -EINVAL);
	/* A cgroup row keeps its directory; a relative one is refused. */
	assert_int_equal(db_frozen_add(f->db, 300, 7, 2, 40, "/sys/fs/cgroup/k/j2",
				       f->err, sizeof(f->err)), 0);
	assert_int_equal(db_frozen_add(f->db, 301, 7, 2, 40, "k/j2", f->err,
				       sizeof(f->err)), -EINVAL);
	reopen(f);
	assert_int_equal(db_frozen_list(f->db, &v, &n, f->err, sizeof(f->err)), 0);
	assert_int_equal(n, 2);
	assert_string_equal(v[0].cgroup, "");
	assert_int_equal(v[1].pid, 300);
	assert_string_equal(v[1].cgroup, "/sys/fs/cgroup/k/j2");
	free(v);
}

/* The jobs table as schemas 1 to 3 had it: old databases for the
 * migration tests are built from it. */
#define OLD_JOBS_TABLE \
	"CREATE TABLE jobs (id INTEGER PRIMARY KEY AUTOINCREMENT," \
	"  name TEXT NOT NULL DEFAULT '', uid INTEGER NOT NULL," \
	"  argc INTEGER NOT NULL CHECK (argc >= 1), argv BLOB NOT NULL," \
	"  envc INTEGER NOT NULL DEFAULT 0, env BLOB NOT NULL DEFAULT x''," \
	"  cwd TEXT NOT NULL, state TEXT NOT NULL, exit_code INTEGER," \
	"  signal INTEGER NOT NULL DEFAULT 0, flags INTEGER NOT NULL DEFAULT 0," \
	"  prio INTEGER NOT NULL DEFAULT 0, ngpus INTEGER NOT NULL DEFAULT 1," \
	"  gpus INTEGER NOT NULL DEFAULT 0, mem_request INTEGER NOT NULL DEFAULT 0," \
	"  mem_quota INTEGER NOT NULL DEFAULT 0, mem_peak INTEGER NOT NULL DEFAULT 0," \
	"  submit_us INTEGER NOT NULL, start_us INTEGER NOT NULL DEFAULT 0," \
	"  end_us INTEGER NOT NULL DEFAULT 0, log_path TEXT," \
	"  pid INTEGER NOT NULL DEFAULT 0, pid_start INTEGER NOT NULL DEFAULT 0," \
	"  profile_key INTEGER NOT NULL DEFAULT 0);"

/*
 * A database of schema 1 (frozen rows without a method) migrates: its rows
 * read back as SIGSTOP ones, and new rows can name a cgroup.  Its profiles
 * (schema 2 has the same) keep predicting, their busyness marked as not
 * measured by busy-est.c (schema 3).
 */
static void test_migrate_v1_frozen(void **state)
{
	struct fx *f = *state;
	struct db_profile p;
	struct db_frozen *v;
	sqlite3 *h;
	size_t n;
	int ver = 0;

	assert_int_equal(sqlite3_open(f->path, &h), SQLITE_OK);
	assert_int_equal(sqlite3_exec(h,
		"CREATE TABLE schema_version (version INTEGER NOT NULL);"
		"INSERT INTO schema_version VALUES (1);"
		OLD_JOBS_TABLE
		"CREATE TABLE profiles (key INTEGER PRIMARY KEY, peak_mem INTEGER NOT NULL,"
		"  mean_busy REAL NOT NULL, mean_runtime_us REAL NOT NULL,"
		"  runs INTEGER NOT NULL, updated_us INTEGER NOT NULL);"
		"CREATE TABLE frozen (pid INTEGER NOT NULL, pid_start INTEGER NOT NULL,"
		"  job_id INTEGER NOT NULL DEFAULT 0, since_us INTEGER NOT NULL,"
		"  PRIMARY KEY (pid, pid_start));"
		"INSERT INTO frozen VALUES (42, 420, 3, 9);"
		"INSERT INTO profiles VALUES (7, 1024, 0.05, 2000.0, 3, 5);",
		NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(h);
	open_ok(f);
	/* An old profile still predicts, with its busyness marked as not
	 * measured by busy-est.c: the first measured run replaces it. */
	assert_int_equal(db_profile_get(f->db, 7, &p, f->err, sizeof(f->err)), 0);
	assert_int_equal(p.runs, 3);
	assert_int_equal(p.busy_runs, 0);
	assert_int_equal(p.duty_runs, 0);
	assert_true(p.mean_duty < 0);
	assert_true(p.mean_busy > 0.05 - 1e-12 && p.mean_busy < 0.05 + 1e-12);
	assert_int_equal(db_profile_update(f->db, 7, 1024, 0.8, 0.4, true, 2000, 6,
					   f->err, sizeof(f->err)), 0);
	assert_int_equal(db_profile_get(f->db, 7, &p, f->err, sizeof(f->err)), 0);
	assert_int_equal(p.runs, 4);
	assert_int_equal(p.busy_runs, 1);
	assert_true(p.mean_busy > 0.8 - 1e-12 && p.mean_busy < 0.8 + 1e-12);
	assert_int_equal(p.duty_runs, 1);
	assert_true(p.mean_duty > 0.4 - 1e-12 && p.mean_duty < 0.4 + 1e-12);
	assert_int_equal(db_schema_version(f->db, &ver, f->err, sizeof(f->err)), 0);
	assert_int_equal(ver, DB_SCHEMA_VERSION);
	assert_int_equal(db_frozen_list(f->db, &v, &n, f->err, sizeof(f->err)), 0);
	assert_int_equal(n, 1);
	assert_int_equal(v[0].pid, 42);
	assert_int_equal(v[0].pid_start, 420);
	assert_string_equal(v[0].cgroup, "");
	free(v);
	assert_int_equal(db_frozen_add(f->db, 43, 430, 3, 10, "/cg/a", f->err,
				       sizeof(f->err)), 0);
}

/*
 * A database of schema 3 (busyness measured over the active phase, no
 * duty) migrates and keeps its rows: its profiles' duty is unknown until
 * their next measured run, whose duty then stands alone (not averaged
 * with the busy_runs the busyness already had).
 */
static void test_migrate_v3_duty(void **state)
{
	struct fx *f = *state;
	struct db_profile p;
	struct db_job j;
	sqlite3 *h;
	int ver = 0;

	assert_int_equal(sqlite3_open(f->path, &h), SQLITE_OK);
	assert_int_equal(sqlite3_exec(h,
		"CREATE TABLE schema_version (version INTEGER NOT NULL);"
		"INSERT INTO schema_version VALUES (3);"
		OLD_JOBS_TABLE
		"CREATE TABLE profiles (key INTEGER PRIMARY KEY, peak_mem INTEGER NOT NULL,"
		"  mean_busy REAL NOT NULL, mean_runtime_us REAL NOT NULL,"
		"  runs INTEGER NOT NULL, updated_us INTEGER NOT NULL,"
		"  busy_runs INTEGER NOT NULL DEFAULT 0);"
		"CREATE TABLE frozen (pid INTEGER NOT NULL, pid_start INTEGER NOT NULL,"
		"  job_id INTEGER NOT NULL DEFAULT 0, since_us INTEGER NOT NULL,"
		"  cgroup TEXT NOT NULL DEFAULT '', PRIMARY KEY (pid, pid_start));"
		"INSERT INTO jobs (uid, argc, argv, cwd, state, submit_us)"
		"  VALUES (1000, 1, x'7400', '/w', 'exited', 5);"
		"INSERT INTO profiles VALUES (9, 2048, 0.6, 3000.0, 5, 8, 4);",
		NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(h);
	open_ok(f);
	assert_int_equal(db_schema_version(f->db, &ver, f->err, sizeof(f->err)), 0);
	assert_int_equal(ver, DB_SCHEMA_VERSION);
	assert_int_equal(db_job_get(f->db, 1, &j, f->err, sizeof(f->err)), 0);
	assert_int_equal(j.uid, 1000);
	assert_string_equal(j.cwd, "/w");
	db_job_release(&j);
	assert_int_equal(db_profile_get(f->db, 9, &p, f->err, sizeof(f->err)), 0);
	assert_int_equal(p.peak_mem, 2048);
	assert_int_equal(p.runs, 5);
	assert_int_equal(p.busy_runs, 4);
	assert_true(p.mean_busy > 0.6 - 1e-12 && p.mean_busy < 0.6 + 1e-12);
	assert_int_equal(p.duty_runs, 0);
	assert_true(p.mean_duty < 0);
	/* An unmeasured run leaves it unknown... */
	assert_int_equal(db_profile_update(f->db, 9, 2048, 0.6, 0.3, false, 3000,
					   9, f->err, sizeof(f->err)), 0);
	assert_int_equal(db_profile_get(f->db, 9, &p, f->err, sizeof(f->err)), 0);
	assert_int_equal(p.duty_runs, 0);
	assert_true(p.mean_duty < 0);
	/* ... the first measured one sets it, the next is averaged in. */
	assert_int_equal(db_profile_update(f->db, 9, 2048, 0.6, 0.3, true, 3000,
					   10, f->err, sizeof(f->err)), 0);
	assert_int_equal(db_profile_get(f->db, 9, &p, f->err, sizeof(f->err)), 0);
	assert_int_equal(p.duty_runs, 1);
	assert_int_equal(p.busy_runs, 5);
	assert_true(p.mean_duty > 0.3 - 1e-12 && p.mean_duty < 0.3 + 1e-12);
	assert_int_equal(db_profile_update(f->db, 9, 2048, 0.6, 0.1, true, 3000,
					   11, f->err, sizeof(f->err)), 0);
	assert_int_equal(db_profile_get(f->db, 9, &p, f->err, sizeof(f->err)), 0);
	assert_int_equal(p.duty_runs, 2);
	assert_true(p.mean_duty > 0.2 - 1e-12 && p.mean_duty < 0.2 + 1e-12);
	assert_int_equal(p.runs, 8);
}

/* Schema 4 -> 5: old profiles never thrashed (0, 0); a thrashing run's
 * working set is kept as the largest asked, counted per run. */
static void test_migrate_v4_thrash(void **state)
{
	struct fx *f = *state;
	struct db_profile p;
	sqlite3 *h;
	int ver = 0;

	assert_int_equal(sqlite3_open(f->path, &h), SQLITE_OK);
	assert_int_equal(sqlite3_exec(h,
		"CREATE TABLE schema_version (version INTEGER NOT NULL);"
		"INSERT INTO schema_version VALUES (4);"
		OLD_JOBS_TABLE
		"CREATE TABLE profiles (key INTEGER PRIMARY KEY, peak_mem INTEGER NOT NULL,"
		"  mean_busy REAL NOT NULL, mean_runtime_us REAL NOT NULL,"
		"  runs INTEGER NOT NULL, updated_us INTEGER NOT NULL,"
		"  busy_runs INTEGER NOT NULL DEFAULT 0,"
		"  mean_duty REAL NOT NULL DEFAULT -1,"
		"  duty_runs INTEGER NOT NULL DEFAULT 0);"
		"CREATE TABLE frozen (pid INTEGER NOT NULL, pid_start INTEGER NOT NULL,"
		"  job_id INTEGER NOT NULL DEFAULT 0, since_us INTEGER NOT NULL,"
		"  cgroup TEXT NOT NULL DEFAULT '', PRIMARY KEY (pid, pid_start));"
		"INSERT INTO profiles VALUES (9, 2048, 0.6, 3000.0, 5, 8, 4, 0.25, 3);",
		NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(h);
	open_ok(f);
	assert_int_equal(db_schema_version(f->db, &ver, f->err, sizeof(f->err)), 0);
	assert_int_equal(ver, DB_SCHEMA_VERSION);
	assert_int_equal(ver, 6);
	assert_int_equal(db_profile_get(f->db, 9, &p, f->err, sizeof(f->err)), 0);
	assert_int_equal(p.peak_mem, 2048);
	assert_int_equal(p.runs, 5);
	assert_int_equal(p.duty_runs, 3);
	assert_true(p.mean_duty > 0.25 - 1e-12 && p.mean_duty < 0.25 + 1e-12);
	assert_int_equal(p.thrash_mem, 0);
	assert_int_equal(p.thrash_runs, 0);
	/* A run that thrashed; a larger ask; a smaller one keeps the larger. */
	assert_int_equal(db_profile_note_thrash(f->db, 9, 1000, f->err,
						sizeof(f->err)), 0);
	assert_int_equal(db_profile_get(f->db, 9, &p, f->err, sizeof(f->err)), 0);
	assert_int_equal(p.thrash_mem, 1000);
	assert_int_equal(p.thrash_runs, 1);
	assert_int_equal(db_profile_note_thrash(f->db, 9, 3000, f->err,
						sizeof(f->err)), 0);
	assert_int_equal(db_profile_note_thrash(f->db, 9, 2000, f->err,
						sizeof(f->err)), 0);
	assert_int_equal(db_profile_get(f->db, 9, &p, f->err, sizeof(f->err)), 0);
	assert_int_equal(p.thrash_mem, 3000);
	assert_int_equal(p.thrash_runs, 3);
	/* A run that did not thrash leaves it (db_profile_update). */
	assert_int_equal(db_profile_update(f->db, 9, 2048, 0.6, 0.3, true, 3000,
					   10, f->err, sizeof(f->err)), 0);
	assert_int_equal(db_profile_get(f->db, 9, &p, f->err, sizeof(f->err)), 0);
	assert_int_equal(p.thrash_mem, 3000);
	assert_int_equal(p.thrash_runs, 3);
	assert_int_equal(p.runs, 6);
	/* No such profile, or nothing asked: refused, nothing created. */
	assert_int_equal(db_profile_note_thrash(f->db, 10, 1000, f->err,
						sizeof(f->err)), -ENOENT);
	assert_int_equal(db_profile_get(f->db, 10, &p, f->err, sizeof(f->err)),
			 -ENOENT);
	assert_int_equal(db_profile_note_thrash(f->db, 9, 0, f->err,
						sizeof(f->err)), -EINVAL);

	/* Schema 6: the wait rate, unknown in a migrated row, then the
	 * running mean of the runs that measured it. */
	assert_int_equal(p.wait_runs, 0);
	assert_true(p.wait_rate < 0);
	assert_int_equal(db_profile_note_waits(f->db, 9, 3000.0, f->err,
					       sizeof(f->err)), 0);
	assert_int_equal(db_profile_get(f->db, 9, &p, f->err, sizeof(f->err)), 0);
	assert_int_equal(p.wait_runs, 1);
	assert_true(p.wait_rate > 3000.0 - 1e-9 && p.wait_rate < 3000.0 + 1e-9);
	assert_int_equal(db_profile_note_waits(f->db, 9, 1000.0, f->err,
					       sizeof(f->err)), 0);
	assert_int_equal(db_profile_note_waits(f->db, 9, 0.0, f->err,
					       sizeof(f->err)), 0);
	assert_int_equal(db_profile_get(f->db, 9, &p, f->err, sizeof(f->err)), 0);
	assert_int_equal(p.wait_runs, 3);
	assert_true(p.wait_rate > 4000.0 / 3 - 1e-9 &&
		    p.wait_rate < 4000.0 / 3 + 1e-9);
	/* A later run folds into the profile without touching it. */
	assert_int_equal(db_profile_update(f->db, 9, 2048, 0.6, 0.3, true, 3000,
					   11, f->err, sizeof(f->err)), 0);
	assert_int_equal(db_profile_get(f->db, 9, &p, f->err, sizeof(f->err)), 0);
	assert_int_equal(p.wait_runs, 3);
	/* No such profile, or no rate: refused, nothing created. */
	assert_int_equal(db_profile_note_waits(f->db, 10, 5.0, f->err,
					       sizeof(f->err)), -ENOENT);
	assert_int_equal(db_profile_get(f->db, 10, &p, f->err, sizeof(f->err)),
			 -ENOENT);
	assert_int_equal(db_profile_note_waits(f->db, 9, -1.0, f->err,
					       sizeof(f->err)), -EINVAL);
	assert_int_equal(db_profile_note_waits(f->db, 9, NAN, f->err,
					       sizeof(f->err)), -EINVAL);
	assert_int_equal(db_profile_note_waits(NULL, 9, 5.0, f->err,
					       sizeof(f->err)), -EINVAL);
	reopen(f);
	assert_int_equal(db_profile_get(f->db, 9, &p, f->err, sizeof(f->err)), 0);
	assert_int_equal(p.wait_runs, 3);
}

/* A fake world: pids in alive_pids[] with pid_start == pid * 10 live. */
static const int32_t alive_pids[] = { 11, 13, 21 };

static bool fake_alive(int32_t pid, uint64_t start, void *arg)
{
	int *calls = arg;

	(*calls)++;
	for (size_t i = 0; i < sizeof(alive_pids) / sizeof(alive_pids[0]); i++)
		if (alive_pids[i] == pid && start == (uint64_t)pid * 10)
			return true;
	return false;
}

static void test_recover(void **state)
{
	struct fx *f = *state;
	struct db_recovery r;
	struct db_job j;
	struct db_frozen *fz;
	size_t n;
	int64_t id[7];
	int calls = 0;
	char *e = f->err;
	size_t el = sizeof(f->err);

	open_ok(f);
	for (int i = 0; i < 7; i++)
		id[i] = insert(f, 1, "r");
	/* 0: running, alive.  1: running, dead.  2: running, pid reused
	 * (same pid, other start).  3: queued, never started.  4: queued,
	 * registered process alive.  5: queued, registered process gone.
	 * 6: already exited. */
	db_job_start(f->db, id[0], 1, 1, 11, 110, 1, e, el);
	db_job_start(f->db, id[1], 1, 1, 12, 120, 1, e, el);
	db_job_start(f->db, id[2], 1, 1, 13, 999, 1, e, el);
	db_job_set_pid(f->db, id[4], 21, 210, e, el);
	db_job_set_pid(f->db, id[5], 22, 220, e, el);
	db_job_start(f->db, id[6], 1, 1, 14, 140, 1, e, el);
	db_job_finish(f->db, id[6], PROTO_JOB_EXITED, 0, 0, 2, e, el);
	db_frozen_add(f->db, 11, 110, id[0], 1, NULL, e, el);
	db_frozen_add(f->db, 12, 120, id[1], 1, NULL, e, el);
	/* Gone, but frozen through a cgroup: kept for the daemon to thaw. */
	db_frozen_add(f->db, 15, 150, id[1], 1, "/cg/x", e, el);

	reopen(f);	/* as a restarted daemon would */
	assert_int_equal(db_recover(f->db, fake_alive, &calls, 5000, &r, e, el), 0);
	assert_int_equal(r.running_kept, 1);
	assert_int_equal(r.lost, 3);
	assert_int_equal(r.queued, 2);
	assert_int_equal(r.frozen_alive, 2);
	assert_int_equal(r.frozen_gone, 1);
	assert_true(calls >= 7);

	static const uint32_t want[] = {
		PROTO_JOB_RUNNING, PROTO_JOB_EXITED, PROTO_JOB_EXITED,
		PROTO_JOB_QUEUED, PROTO_JOB_QUEUED, PROTO_JOB_EXITED,
		PROTO_JOB_EXITED,
	};
	for (int i = 0; i < 7; i++) {
		assert_int_equal(db_job_get(f->db, id[i], &j, e, el), 0);
		assert_int_equal(j.state, want[i]);
		if (i == 1 || i == 2 || i == 5) {
			assert_int_equal(j.exit_code, PROTO_EXIT_UNKNOWN);
			assert_int_equal(j.end_us, 5000);
		}
		if (i == 6) {
			assert_int_equal(j.exit_code, 0);
			assert_int_equal(j.end_us, 2);
		}
		db_job_release(&j);
	}
	assert_int_equal(db_frozen_list(f->db, &fz, &n, e, el), 0);
	assert_int_equal(n, 2);
	assert_int_equal(fz[0].pid, 11);
	assert_int_equal(fz[1].pid, 15);
	free(fz);
	/* Idempotent: a second pass changes nothing. */
	assert_int_equal(db_recover(f->db, fake_alive, &calls, 6000, &r, e, el), 0);
	assert_int_equal(r.lost, 0);
	assert_int_equal(r.running_kept, 1);
}

/*
 * Started with no pid yet (pid 0: the daemon died between recording the
 * start and learning the pid).  A submitted job was never forked, or its
 * pid is lost: recorded lost, never started twice.  A `kmux run` job stays
 * running: only its client knows whether ADMIT reached it (job_recover).
 */
static void test_recover_no_pid(void **state)
{
	struct fx *f = *state;
	struct db_job j = sample_job(1, "fg");
	struct db_recovery r;
	int64_t sub, fg;
	int calls = 0;
	char *e = f->err;
	size_t el = sizeof(f->err);

	open_ok(f);
	sub = insert(f, 1, "sub");
	j.flags |= DB_JOB_F_FOREGROUND;
	assert_int_equal(db_job_insert(f->db, &j, e, el), 0);
	fg = j.id;
	assert_int_equal(db_job_start(f->db, sub, 1, 1, 0, 0, 1, e, el), 0);
	assert_int_equal(db_job_start(f->db, fg, 1, 1, 0, 0, 1, e, el), 0);

	reopen(f);
	assert_int_equal(db_recover(f->db, fake_alive, &calls, 5000, &r, e, el), 0);
	assert_int_equal(r.lost, 1);
	assert_int_equal(r.running_kept, 1);
	assert_int_equal(db_job_get(f->db, sub, &j, e, el), 0);
	assert_int_equal(j.state, PROTO_JOB_EXITED);
	db_job_release(&j);
	assert_int_equal(db_job_get(f->db, fg, &j, e, el), 0);
	assert_int_equal(j.state, PROTO_JOB_RUNNING);
	assert_true(j.flags & DB_JOB_F_FOREGROUND);
	db_job_release(&j);
	assert_false(db_recover_job_lost(true, DB_JOB_F_FOREGROUND, 0, 0,
					 fake_alive, &calls));
	assert_true(db_recover_job_lost(true, 0, 0, 0, fake_alive, &calls));
	/* With a pid, a `kmux run` job is alive or not like any other. */
	assert_true(db_recover_job_lost(true, DB_JOB_F_FOREGROUND, 12, 120,
					fake_alive, &calls));
}

/* The real liveness test, on this process and on a reaped child. */
static void test_proc_alive(void **state)
{
	uint64_t start, cstart;
	pid_t child;
	int status;

	(void)state;
	assert_int_equal(db_proc_start_time(getpid(), &start), 0);
	assert_true(start > 0);
	assert_true(db_proc_alive(getpid(), start, NULL));
	assert_true(db_proc_alive(getpid(), 0, NULL));
	assert_false(db_proc_alive(getpid(), start + 1, NULL));	/* reused pid */
	assert_false(db_proc_alive(0, 0, NULL));
	assert_false(db_proc_alive(-5, 0, NULL));

	child = fork();
	assert_true(child >= 0);
	if (child == 0) {
		pause();
		_exit(0);
	}
	assert_int_equal(db_proc_start_time(child, &cstart), 0);
	assert_true(db_proc_alive(child, cstart, NULL));
	kill(child, SIGKILL);
	waitpid(child, &status, 0);
	assert_false(db_proc_alive(child, cstart, NULL));
	assert_int_equal(db_proc_start_time(child, &cstart), -ENOENT);
}

/*
 * A full disk, through the page cap: the write fails with -ENOSPC and a
 * message that says so, what was committed before is intact, and writes
 * work again once there is room.
 */
static void test_full_disk(void **state)
{
	struct fx *f = *state;
	struct db_job j, *v;
	size_t n;
	int64_t a;
	char *big;
	size_t biglen = 256 * 1024;
	int rc;

	open_ok(f);
	a = insert(f, 1, "before");
	assert_int_equal(db_set_max_pages(f->db, 1, f->err, sizeof(f->err)), 0);

	big = malloc(biglen);
	memset(big, 'x', biglen - 1);
	big[biglen - 1] = '\0';
	j = sample_job(1, "too big");
	j.argc = 1;
	j.argv = big;
	j.argv_len = biglen;
	rc = db_job_insert(f->db, &j, f->err, sizeof(f->err));
	assert_int_equal(rc, -ENOSPC);
	assert_non_null(strstr(f->err, "insert job"));
	assert_non_null(strstr(f->err, "full"));
	/* Updates that need no new page may still succeed; the queue is
	 * intact either way. */
	assert_int_equal(db_job_list(f->db, NULL, &v, &n, f->err, sizeof(f->err)), 0);
	assert_int_equal(n, 1);
	assert_int_equal(v[0].id, a);
	db_job_list_free(v, n);

	/* Room again. */
	assert_int_equal(db_set_max_pages(f->db, 0, f->err, sizeof(f->err)), 0);
	j.id = 0;
	assert_int_equal(db_job_insert(f->db, &j, f->err, sizeof(f->err)), 0);
	free(big);
	reopen(f);
	assert_int_equal(db_job_list(f->db, NULL, &v, &n, f->err, sizeof(f->err)), 0);
	assert_int_equal(n, 2);
	db_job_list_free(v, n);
}

/*
 * A full disk, through the file switch (db_full_set): a job's end, an
 * UPDATE in place that the page cap lets through, fails with -ENOSPC while
 * the file exists; the row is as it was; once the file is gone the same
 * write succeeds, on the same handle, and survives a reopen.
 */
static void test_full_file(void **state)
{
	struct fx *f = *state;
	struct db_job j;
	char flag[320];
	int64_t a;
	int rc;

	snprintf(flag, sizeof(flag), "%s/disk-full", f->dir);
	assert_int_equal(db_full_set(flag, f->err, sizeof(f->err)), 0);
	assert_string_equal(db_full_vfs(), "kmux-full");
	open_ok(f);
	a = insert(f, 1, "ends on a full disk");
	assert_int_equal(db_job_start(f->db, a, 1, 1 << 20, 42, 7, 10, f->err,
				      sizeof(f->err)), 0);
	fclose(fopen(flag, "w"));
	rc = db_job_finish(f->db, a, PROTO_JOB_EXITED, 3, 0, 20, f->err,
			   sizeof(f->err));
	assert_int_equal(rc, -ENOSPC);
	assert_non_null(strstr(f->err, "finish job"));
	assert_non_null(strstr(f->err, "full"));
	assert_int_equal(db_job_get(f->db, a, &j, f->err, sizeof(f->err)), 0);
	assert_int_equal(j.state, PROTO_JOB_RUNNING);
	db_job_release(&j);

	unlink(flag);
	assert_int_equal(db_job_finish(f->db, a, PROTO_JOB_EXITED, 3, 0, 20,
				       f->err, sizeof(f->err)), 0);
	reopen(f);
	assert_int_equal(db_job_get(f->db, a, &j, f->err, sizeof(f->err)), 0);
	assert_int_equal(j.state, PROTO_JOB_EXITED);
	assert_int_equal(j.exit_code, 3);
	assert_int_equal(j.end_us, 20);
	db_job_release(&j);
	/* Off again, for the tests after this one. */
	assert_int_equal(db_full_set(NULL, f->err, sizeof(f->err)), 0);
	assert_null(db_full_vfs());
}

/*
 * A job found gone at a restart (exited, code unknown), or cancelled while
 * it ran and then found gone, gets the status its `kmux run` client knew,
 * once; a known status, a job cancelled before it started, a running one
 * and a missing one are refused.
 */
static void test_set_exit(void **state)
{
	struct fx *f = *state;
	struct db_job j;
	int64_t a, b;

	open_ok(f);
	a = insert(f, 1, "lost");
	assert_int_equal(db_job_start(f->db, a, 1, 1, 0, 0, 10, f->err,
				      sizeof(f->err)), 0);
	assert_int_equal(db_job_set_exit(f->db, a, 7, 0, f->err,
					 sizeof(f->err)), -EINVAL);
	assert_int_equal(db_job_finish(f->db, a, PROTO_JOB_EXITED,
				       PROTO_EXIT_UNKNOWN, 0, 20, f->err,
				       sizeof(f->err)), 0);
	assert_int_equal(db_job_set_exit(f->db, a, PROTO_EXIT_UNKNOWN, 0,
					 f->err, sizeof(f->err)), -EINVAL);
	assert_int_equal(db_job_set_exit(f->db, a, 7, 0, f->err,
					 sizeof(f->err)), 0);
	assert_int_equal(db_job_get(f->db, a, &j, f->err, sizeof(f->err)), 0);
	assert_int_equal(j.state, PROTO_JOB_EXITED);
	assert_int_equal(j.exit_code, 7);
	assert_int_equal(j.end_us, 20);
	db_job_release(&j);
	assert_int_equal(db_job_set_exit(f->db, a, 9, 0, f->err,
					 sizeof(f->err)), -EALREADY);
	assert_non_null(strstr(f->err, "known"));
	b = insert(f, 1, "cancelled");
	assert_int_equal(db_job_finish(f->db, b, PROTO_JOB_CANCELLED,
				       PROTO_EXIT_UNKNOWN, 0, 20, f->err,
				       sizeof(f->err)), 0);
	assert_int_equal(db_job_set_exit(f->db, b, 0, 0, f->err,
					 sizeof(f->err)), -EALREADY);
	assert_non_null(strstr(f->err, "did not run"));
	b = insert(f, 1, "cancelled-running");
	assert_int_equal(db_job_start(f->db, b, 1, 1, 0, 0, 10, f->err,
				      sizeof(f->err)), 0);
	assert_int_equal(db_job_finish(f->db, b, PROTO_JOB_CANCELLED,
				       PROTO_EXIT_UNKNOWN, 0, 20, f->err,
				       sizeof(f->err)), 0);
	assert_int_equal(db_job_set_exit(f->db, b, 143, 0, f->err,
					 sizeof(f->err)), 0);
	assert_int_equal(db_job_get(f->db, b, &j, f->err, sizeof(f->err)), 0);
	assert_int_equal(j.state, PROTO_JOB_CANCELLED);
	assert_int_equal(j.exit_code, 143);
	db_job_release(&j);
	assert_int_equal(db_job_set_exit(f->db, 999, 0, 0, f->err,
					 sizeof(f->err)), -ENOENT);
}

static void test_readonly(void **state)
{
	struct fx *f = *state;
	struct db *ro;
	struct db_job j = sample_job(1, "x"), out;
	int64_t a;
	int rc;

	open_ok(f);
	a = insert(f, 1, "kept");
	reopen(f);	/* leave the file checkpointed by a clean close */
	db_close(f->db);
	f->db = NULL;

	assert_int_equal(db_open(f->path, DB_OPEN_READONLY, &ro, f->err,
				 sizeof(f->err)), 0);
	rc = db_job_insert(ro, &j, f->err, sizeof(f->err));
	assert_int_equal(rc, -EROFS);
	assert_non_null(strstr(f->err, "insert job"));
	assert_non_null(strstr(f->err, "readonly"));
	assert_int_equal(db_job_finish(ro, a, PROTO_JOB_CANCELLED, -1, 0, 1,
				       f->err, sizeof(f->err)), -EROFS);
	/* Reading still works. */
	assert_int_equal(db_job_get(ro, a, &out, f->err, sizeof(f->err)), 0);
	assert_string_equal(out.name, "kept");
	db_job_release(&out);
	db_close(ro);

	/* A file the daemon may not write: only testable when not root. */
	if (geteuid() != 0) {
		assert_int_equal(chmod(f->path, 0400), 0);
		rc = db_open(f->path, 0, &ro, f->err, sizeof(f->err));
		assert_int_equal(rc, -EACCES);
		assert_non_null(strstr(f->err, f->path));
		chmod(f->path, 0600);
	} else {
		print_message("      (root: the chmod 0400 case is skipped)\n");
	}
}

static void test_open_errors(void **state)
{
	struct fx *f = *state;
	struct db *db = NULL;
	char p[400];
	FILE *fp;
	sqlite3 *h;
	int rc;

	/* No such directory. */
	snprintf(p, sizeof(p), "%s/nodir/kmux.db", f->dir);
	rc = db_open(p, 0, &db, f->err, sizeof(f->err));
	assert_int_equal(rc, -ENOENT);
	assert_non_null(strstr(f->err, "No such file"));
	assert_null(db);

	/* Not a database. */
	fp = fopen(f->path, "w");
	fputs("this is not an SQLite database, not even close to one......\n"
	      "................................................................",
	      fp);
	fclose(fp);
	rc = db_open(f->path, 0, &db, f->err, sizeof(f->err));
	assert_int_equal(rc, -EUCLEAN);
	assert_non_null(strstr(f->err, "not a database"));
	unlink(f->path);

	/* A symlink is not followed (a planted link in /run/kmux). */
	snprintf(p, sizeof(p), "%s/other", f->dir);
	assert_int_equal(symlink(p, f->path), 0);
	rc = db_open(f->path, 0, &db, f->err, sizeof(f->err));
	assert_int_equal(rc, -ELOOP);
	unlink(f->path);
	unlink(p);

	/* A newer kmux's database. */
	open_ok(f);
	db_close(f->db);
	f->db = NULL;
	assert_int_equal(sqlite3_open(f->path, &h), SQLITE_OK);
	assert_int_equal(sqlite3_exec(h, "UPDATE schema_version SET version = 99",
				      NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(h);
	rc = db_open(f->path, 0, &db, f->err, sizeof(f->err));
	assert_int_equal(rc, -EPROTONOSUPPORT);
	assert_non_null(strstr(f->err, "version 99 is newer"));
	rc = db_open(f->path, DB_OPEN_READONLY, &db, f->err, sizeof(f->err));
	assert_int_equal(rc, -EPROTONOSUPPORT);
	unlink(f->path);

	/* Read-only open of a file never migrated. */
	fp = fopen(f->path, "w");
	fclose(fp);
	rc = db_open(f->path, DB_OPEN_READONLY, &db, f->err, sizeof(f->err));
	assert_int_equal(rc, -EROFS);
	assert_non_null(strstr(f->err, "needs migrating"));
	/* ... which a read-write open then migrates. */
	open_ok(f);

	assert_int_equal(db_open(NULL, 0, &db, f->err, sizeof(f->err)), -EINVAL);
	assert_int_equal(db_open(f->path, 0x80, &db, f->err, sizeof(f->err)),
			 -EINVAL);
	db_close(NULL);
}

/* WAL: a second connection reads what the first committed, while open. */
static void test_two_connections(void **state)
{
	struct fx *f = *state;
	struct db *other;
	struct db_job *v;
	size_t n;

	open_ok(f);
	assert_int_equal(db_open(f->path, 0, &other, f->err, sizeof(f->err)), 0);
	insert(f, 1, "from one");
	assert_int_equal(db_job_list(other, NULL, &v, &n, f->err, sizeof(f->err)), 0);
	assert_int_equal(n, 1);
	assert_string_equal(v[0].name, "from one");
	db_job_list_free(v, n);
	db_close(other);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(test_create),
		T(test_job_round_trip),
		T(test_insert_validation),
		T(test_transitions),
		T(test_list_filters),
		T(test_reopen_keeps_queue),
		T(test_survives_sigkill),
		T(test_profiles),
		T(test_frozen),
		T(test_migrate_v1_frozen),
		T(test_migrate_v3_duty),
		T(test_migrate_v4_thrash),
		T(test_recover),
		T(test_recover_no_pid),
		T(test_proc_alive),
		T(test_full_disk),
		T(test_full_file),
		T(test_set_exit),
		T(test_readonly),
		T(test_open_errors),
		T(test_two_connections),
	};
#undef T

	return cmocka_run_group_tests(tests, NULL, NULL);
}
