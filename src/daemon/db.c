/*
 * db.c - kmuxd's persistent state in SQLite (see db.h).
 *
 * Owns: the schema (migrations[]), the mapping of SQLite errors to errno,
 * and every statement.  Statements are prepared per call: kmuxd writes a
 * few rows per job, not thousands a second, and per-call statements keep
 * each function self-contained (nothing to invalidate on close).
 *
 * Durability.  WAL with synchronous=FULL: a committed transaction is on
 * disk before the call returns, so a queued job survives kill -9 of the
 * daemon and a power cut.  WAL also lets `kmux ps` read while kmuxd writes.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sqlite3.h>

#include "db.h"
#include "proto.h"

struct db {
	sqlite3 *h;
	bool readonly;
};

/*
 * Schema, one entry per version step: migrations[v] takes a file from
 * version v to v + 1, inside the same transaction that records v + 1.
 * Never edit a released entry; append one.
 */
static const char *const migrations[] = {
	/* 0 -> 1 */
	"CREATE TABLE jobs ("
	"  id INTEGER PRIMARY KEY AUTOINCREMENT,"	/* ids never reused */
	"  name TEXT NOT NULL DEFAULT '',"
	"  uid INTEGER NOT NULL,"
	"  argc INTEGER NOT NULL CHECK (argc >= 1),"
	"  argv BLOB NOT NULL,"
	"  envc INTEGER NOT NULL DEFAULT 0,"
	"  env BLOB NOT NULL DEFAULT x'',"
	"  cwd TEXT NOT NULL,"
	"  state TEXT NOT NULL CHECK (state IN"
	"    ('queued', 'running', 'exited', 'cancelled', 'failed')),"
	"  exit_code INTEGER,"				/* NULL: not known */
	"  signal INTEGER NOT NULL DEFAULT 0,"
	"  flags INTEGER NOT NULL DEFAULT 0,"
	"  prio INTEGER NOT NULL DEFAULT 0,"
	"  ngpus INTEGER NOT NULL DEFAULT 1,"
	"  gpus INTEGER NOT NULL DEFAULT 0,"
	"  mem_request INTEGER NOT NULL DEFAULT 0,"
	"  mem_quota INTEGER NOT NULL DEFAULT 0,"
	"  mem_peak INTEGER NOT NULL DEFAULT 0,"
	"  submit_us INTEGER NOT NULL,"
	"  start_us INTEGER NOT NULL DEFAULT 0,"
	"  end_us INTEGER NOT NULL DEFAULT 0,"
	"  log_path TEXT,"
	"  pid INTEGER NOT NULL DEFAULT 0,"
	"  pid_start INTEGER NOT NULL DEFAULT 0,"
	"  profile_key INTEGER NOT NULL DEFAULT 0"
	");"
	"CREATE INDEX jobs_state ON jobs (state);"
	"CREATE INDEX jobs_uid ON jobs (uid, id);"
	"CREATE TABLE profiles ("
	"  key INTEGER PRIMARY KEY,"
	"  peak_mem INTEGER NOT NULL,"
	"  mean_busy REAL NOT NULL,"
	"  mean_runtime_us REAL NOT NULL,"
	"  runs INTEGER NOT NULL,"
	"  updated_us INTEGER NOT NULL"
	");"
	"CREATE TABLE frozen ("
	"  pid INTEGER NOT NULL,"
	"  pid_start INTEGER NOT NULL,"
	"  job_id INTEGER NOT NULL DEFAULT 0,"
	"  since_us INTEGER NOT NULL,"
	"  PRIMARY KEY (pid, pid_start)"
	");",
	/* 1 -> 2: how each process was frozen, so that a restart thaws it
	 * the same way ('' : SIGSTOP; else the cgroup v2 directory whose
	 * cgroup.freeze was written).  Old rows were all SIGSTOP. */
	"ALTER TABLE frozen ADD COLUMN cgroup TEXT NOT NULL DEFAULT '';",
	/* 2 -> 3: how many runs measured a profile's busyness as busy-est.c
	 * does (the active phase, corrected for contention).  Old rows'
	 * mean_busy is a whole-life mean of shares, which under time-slicing
	 * says how crowded the GPU was more than what the job needs: 0, so
	 * they are still used until their first measured run replaces it. */
	"ALTER TABLE profiles ADD COLUMN busy_runs INTEGER NOT NULL DEFAULT 0;",
	/* 3 -> 4: the duty (busy-est.h: the demand over a run's whole life,
	 * which admission gates by) beside the active-phase mean_busy
	 * (which placement scores by), with its own count: old rows were
	 * measured without it, so it is unknown (-1, duty_runs 0) until
	 * their next measured run. */
	"ALTER TABLE profiles ADD COLUMN mean_duty REAL NOT NULL DEFAULT -1;"
	"ALTER TABLE profiles ADD COLUMN duty_runs INTEGER NOT NULL DEFAULT 0;",
	/* 4 -> 5: evict mode's learned working set: the largest budget a
	 * thrashing run asked for, and how many runs thrashed.  Old rows
	 * never recorded it: 0, 0 (not known to thrash). */
	"ALTER TABLE profiles ADD COLUMN thrash_mem INTEGER NOT NULL DEFAULT 0;"
	"ALTER TABLE profiles ADD COLUMN thrash_runs INTEGER NOT NULL DEFAULT 0;",
	/* 5 -> 6: how often a run made the host wait for the GPU (waits per
	 * second of its active time), a running mean over wait_runs runs.
	 * Old rows never measured it: unknown (-1, 0). */
	"ALTER TABLE profiles ADD COLUMN wait_rate REAL NOT NULL DEFAULT -1;"
	"ALTER TABLE profiles ADD COLUMN wait_runs INTEGER NOT NULL DEFAULT 0;",
};
_Static_assert(sizeof(migrations) / sizeof(migrations[0]) == DB_SCHEMA_VERSION,
	       "one migration per schema version");

#define JOB_COLS \
	"id, name, uid, argc, argv, envc, env, cwd, state, exit_code, " \
	"signal, flags, prio, ngpus, gpus, mem_request, mem_quota, mem_peak, " \
	"submit_us, start_us, end_us, log_path, pid, pid_start, profile_key"

/* ------------------------------------------------------------------------
 * Errors.
 */
static int map_sqlite(sqlite3 *h, int src)
{
	int sys;

	switch (src & 0xff) {
	case SQLITE_OK:
	case SQLITE_ROW:
	case SQLITE_DONE:
		return 0;
	case SQLITE_FULL:
		return -ENOSPC;
	case SQLITE_READONLY:
		return -EROFS;
	case SQLITE_BUSY:
	case SQLITE_LOCKED:
		return -EBUSY;
	case SQLITE_NOMEM:
		return -ENOMEM;
	case SQLITE_CORRUPT:
	case SQLITE_NOTADB:
		return -EUCLEAN;
	case SQLITE_PERM:
	case SQLITE_AUTH:
		return -EACCES;
	case SQLITE_TOOBIG:
		return -E2BIG;
	case SQLITE_CONSTRAINT:
		if (src == SQLITE_CONSTRAINT_PRIMARYKEY ||
		    src == SQLITE_CONSTRAINT_UNIQUE)
			return -EEXIST;
		return -EINVAL;
	case SQLITE_CANTOPEN:
	case SQLITE_IOERR:
		/* The system call's own errno says more (ENOENT, EACCES,
		 * ENOSPC from a write) than SQLite's class does. */
		sys = h ? sqlite3_system_errno(h) : 0;
		if (sys > 0)
			return -sys;
		return (src & 0xff) == SQLITE_CANTOPEN ? -EACCES : -EIO;
	}
	return -EIO;
}

static int set_err(char *err, size_t errlen, int rc, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static int set_err(char *err, size_t errlen, int rc, const char *fmt, ...)
{
	va_list ap;

	if (err != NULL && errlen > 0) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return rc;
}

/*
 * A failed SQLite call: map src to -errno and write "<what>: <SQLite's
 * message>".  Called right after the failure, before anything else runs on
 * the handle and replaces the message.
 */
/*
 * Make room for one more element in a growing result array (doubling, from
 * 16).  *v is left as it was on failure, so the caller frees what it has.
 */
static int db_grow(void *v, size_t *cap, size_t len, size_t elem)
{
	void **pv = v;
	size_t ncap;
	void *nv;

	if (len < *cap)
		return 0;
	ncap = *cap ? 2 * *cap : 16;
	nv = realloc(*pv, ncap * elem);
	if (nv == NULL)
		return -ENOMEM;
	*pv = nv;
	*cap = ncap;
	return 0;
}

static int fail(struct db *db, int src, char *err, size_t errlen,
		const char *fmt, ...) __attribute__((format(printf, 5, 6)));

static int fail(struct db *db, int src, char *err, size_t errlen,
		const char *fmt, ...)
{
	int rc = map_sqlite(db->h, src);
	char what[256];
	va_list ap;

	if (rc == 0)
		rc = -EIO;
	if (err == NULL || errlen == 0)
		return rc;
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	snprintf(err, errlen, "%s: %s", what,
		 db->h ? sqlite3_errmsg(db->h) : sqlite3_errstr(src));
	return rc;
}

static int exec(struct db *db, const char *sql, char *err, size_t errlen,
		const char *what)
{
	int s = sqlite3_exec(db->h, sql, NULL, NULL, NULL);

	if (s != SQLITE_OK)
		return fail(db, s, err, errlen, "%s", what);
	return 0;
}

static int prepare(struct db *db, const char *sql, sqlite3_stmt **st,
		   char *err, size_t errlen, const char *what)
{
	int s = sqlite3_prepare_v2(db->h, sql, -1, st, NULL);

	if (s != SQLITE_OK) {
		*st = NULL;
		return fail(db, s, err, errlen, "%s", what);
	}
	return 0;
}

/* Run a statement that returns no rows. */
static int step_done(struct db *db, sqlite3_stmt *st, char *err, size_t errlen,
		     const char *what)
{
	int s = sqlite3_step(st);

	if (s != SQLITE_DONE)
		return fail(db, s, err, errlen, "%s", what);
	return 0;
}

static void rollback(struct db *db)
{
	/* Nothing more to report if this fails too: the first error stands. */
	sqlite3_exec(db->h, "ROLLBACK", NULL, NULL, NULL);
}

/* Sizes compared in SQL must stay positive as signed 64-bit. */
static int64_t clamp_i64(uint64_t v)
{
	return v > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)v;
}

/* ------------------------------------------------------------------------
 * Open, migrate, close.
 */
static int read_version(struct db *db, int *version, char *err, size_t errlen)
{
	sqlite3_stmt *st = NULL;
	int rc, s;

	rc = prepare(db, "SELECT version FROM schema_version", &st, err, errlen,
		     "read schema version");
	if (rc < 0)
		return rc;
	s = sqlite3_step(st);
	if (s == SQLITE_ROW)
		*version = sqlite3_column_int(st, 0);
	else if (s == SQLITE_DONE)
		*version = 0;
	else
		rc = fail(db, s, err, errlen, "read schema version");
	sqlite3_finalize(st);
	return rc;
}

static int migrate(struct db *db, char *err, size_t errlen)
{
	char sql[128];
	int rc, v;

	rc = exec(db, "BEGIN IMMEDIATE", err, errlen, "begin migration");
	if (rc < 0)
		return rc;
	rc = exec(db, "CREATE TABLE IF NOT EXISTS schema_version "
		      "(version INTEGER NOT NULL)", err, errlen,
		  "create schema_version");
	if (rc < 0)
		goto err_rollback;
	rc = read_version(db, &v, err, errlen);
	if (rc < 0)
		goto err_rollback;
	if (v > DB_SCHEMA_VERSION) {
		rc = set_err(err, errlen, -EPROTONOSUPPORT,
			     "database schema version %d is newer than this "
			     "kmuxd's (%d): use a newer kmuxd or another "
			     "database", v, DB_SCHEMA_VERSION);
		goto err_rollback;
	}
	if (v == 0) {
		rc = exec(db, "INSERT INTO schema_version VALUES (0)", err,
			  errlen, "init schema_version");
		if (rc < 0)
			goto err_rollback;
	}
	for (; v < DB_SCHEMA_VERSION; v++) {
		char what[64];

		snprintf(what, sizeof(what), "migrate schema %d -> %d", v, v + 1);
		rc = exec(db, migrations[v], err, errlen, what);
		if (rc < 0)
			goto err_rollback;
		snprintf(sql, sizeof(sql),
			 "UPDATE schema_version SET version = %d", v + 1);
		rc = exec(db, sql, err, errlen, what);
		if (rc < 0)
			goto err_rollback;
	}
	return exec(db, "COMMIT", err, errlen, "commit migration");

err_rollback:
	rollback(db);
	return rc;
}

static int table_exists(struct db *db, const char *name, bool *yes, char *err,
			size_t errlen)
{
	sqlite3_stmt *st = NULL;
	int rc, s;

	rc = prepare(db, "SELECT 1 FROM sqlite_master WHERE type = 'table'"
		     " AND name = ?", &st, err, errlen, "read schema");
	if (rc < 0)
		return rc;
	sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
	s = sqlite3_step(st);
	if (s == SQLITE_ROW || s == SQLITE_DONE)
		*yes = s == SQLITE_ROW;
	else
		rc = fail(db, s, err, errlen, "read schema");
	sqlite3_finalize(st);
	return rc;
}

static int check_readonly_version(struct db *db, char *err, size_t errlen)
{
	bool have = false;
	int rc, v = 0;

	rc = table_exists(db, "schema_version", &have, err, errlen);
	if (rc == 0 && have)
		rc = read_version(db, &v, err, errlen);
	if (rc < 0)
		return rc;
	if (v > DB_SCHEMA_VERSION)
		return set_err(err, errlen, -EPROTONOSUPPORT,
			       "database schema version %d is newer than this "
			       "kmux's (%d)", v, DB_SCHEMA_VERSION);
	if (v < DB_SCHEMA_VERSION)
		return set_err(err, errlen, -EROFS,
			       "database schema version %d needs migrating to "
			       "%d, but it is open read-only", v,
			       DB_SCHEMA_VERSION);
	return 0;
}

/* journal_mode answers with the mode now in force, not an error. */
static int enable_wal(struct db *db, const char *path, char *err, size_t errlen)
{
	sqlite3_stmt *st = NULL;
	const unsigned char *mode;
	int rc, s;

	rc = prepare(db, "PRAGMA journal_mode = WAL", &st, err, errlen,
		     path);
	if (rc < 0)
		return rc;
	s = sqlite3_step(st);
	if (s != SQLITE_ROW) {
		rc = fail(db, s, err, errlen, "%s: enable WAL", path);
		goto out;
	}
	mode = sqlite3_column_text(st, 0);
	if (mode == NULL || strcmp((const char *)mode, "wal") != 0)
		rc = set_err(err, errlen, -EIO,
			     "%s: cannot use WAL (journal mode stays %s)", path,
			     mode ? (const char *)mode : "?");
out:
	sqlite3_finalize(st);
	return rc;
}

int db_open(const char *path, unsigned flags, struct db **out, char *err,
	    size_t errlen)
{
	struct db *db;
	int rc, s, fd, oflags;

	if (path == NULL || out == NULL || (flags & ~DB_OPEN_READONLY))
		return set_err(err, errlen, -EINVAL, "db_open: bad arguments");
	*out = NULL;
	db = calloc(1, sizeof(*db));
	if (db == NULL)
		return set_err(err, errlen, -ENOMEM, "%s: out of memory", path);
	db->readonly = flags & DB_OPEN_READONLY;

	/*
	 * Create the file ourselves: SQLite would honour the umask (often
	 * 0644), and the jobs' command lines and environments are private.
	 */
	if (!db->readonly) {
		fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
		if (fd < 0) {
			rc = -errno;
			set_err(err, errlen, rc, "%s: %s", path, strerror(-rc));
			goto err_free;
		}
		close(fd);
	}

	oflags = (db->readonly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE) |
		 SQLITE_OPEN_NOFOLLOW;
	s = sqlite3_open_v2(path, &db->h, oflags, db_full_vfs());
	if (s != SQLITE_OK) {
		rc = fail(db, s, err, errlen, "%s", path);
		goto err_close;
	}
	sqlite3_extended_result_codes(db->h, 1);
	sqlite3_busy_timeout(db->h, DB_BUSY_TIMEOUT_MS);

	if (!db->readonly) {
		rc = enable_wal(db, path, err, errlen);
		if (rc < 0)
			goto err_close;
		rc = exec(db, "PRAGMA synchronous = FULL", err, errlen, path);
		if (rc < 0)
			goto err_close;
		rc = migrate(db, err, errlen);
	} else {
		rc = check_readonly_version(db, err, errlen);
	}
	if (rc < 0)
		goto err_close;
	*out = db;
	return 0;

err_close:
	sqlite3_close(db->h);
err_free:
	free(db);
	return rc;
}

void db_close(struct db *db)
{
	if (db == NULL)
		return;
	/* All statements are finalized by the functions that made them. */
	sqlite3_close(db->h);
	free(db);
}

int db_schema_version(struct db *db, int *version, char *err, size_t errlen)
{
	if (db == NULL || version == NULL)
		return set_err(err, errlen, -EINVAL, "db_schema_version: bad arguments");
	return read_version(db, version, err, errlen);
}

int db_set_max_pages(struct db *db, uint32_t pages, char *err, size_t errlen)
{
	char sql[64];

	if (db == NULL)
		return set_err(err, errlen, -EINVAL, "db_set_max_pages: no db");
	/* SQLite never lowers the cap below the pages in use. */
	snprintf(sql, sizeof(sql), "PRAGMA max_page_count = %" PRIu32,
		 pages ? pages : UINT32_MAX - 1);
	return exec(db, sql, err, errlen, "set max_page_count");
}

/* ------------------------------------------------------------------------
 * Jobs.
 */
uint64_t db_profile_key(const char *argv, size_t argv_len)
{
	uint64_t h = 0xcbf29ce484222325ull;
	size_t i;

	for (i = 0; i < argv_len; i++) {
		h ^= (uint8_t)argv[i];
		h *= 0x100000001b3ull;
	}
	/* 0 means "not computed" in struct db_job. */
	return h ? h : 1;
}

/* Does [b, b + len) hold exactly count C strings back to back? */
static bool block_ok(const char *b, size_t len, uint32_t count)
{
	size_t i, seen = 0;

	if (count == 0 || len == 0)
		return count == 0 && len == 0;
	if (b == NULL || b[len - 1] != '\0')
		return false;
	for (i = 0; i < len; i++)
		seen += b[i] == '\0';
	return seen == count;
}

static bool exit_ok(int32_t code, int32_t sig)
{
	return code >= PROTO_EXIT_UNKNOWN && code <= 255 &&
	       sig >= 0 && sig <= PROTO_MAX_SIGNAL;
}

int db_job_insert(struct db *db, struct db_job *j, char *err, size_t errlen)
{
	static const char sql[] =
		"INSERT INTO jobs (name, uid, argc, argv, envc, env, cwd, state,"
		" flags, prio, ngpus, mem_request, submit_us, log_path, pid,"
		" pid_start, profile_key) VALUES"
		" (?, ?, ?, ?, ?, ?, ?, 'queued', ?, ?, ?, ?, ?, ?, ?, ?, ?)";
	sqlite3_stmt *st = NULL;
	int rc, i = 1;

	if (db == NULL || j == NULL)
		return set_err(err, errlen, -EINVAL, "insert job: bad arguments");
	if (j->state != 0 && j->state != PROTO_JOB_QUEUED)
		return set_err(err, errlen, -EINVAL,
			       "insert job: a new job is queued, not %s",
			       proto_job_state_name(j->state) ?: "?");
	if (j->argc < 1 || !block_ok(j->argv, j->argv_len, j->argc) ||
	    !block_ok(j->env, j->env_len, j->envc) || j->cwd == NULL ||
	    j->ngpus < 1 || j->ngpus > PROTO_MAX_GPUS)
		return set_err(err, errlen, -EINVAL,
			       "insert job: malformed job (argv, env, cwd or gpus)");
	if (j->argv_len > INT32_MAX || j->env_len > INT32_MAX)
		return set_err(err, errlen, -E2BIG, "insert job: argv or env too large");
	if (j->profile_key == 0)
		j->profile_key = db_profile_key(j->argv, j->argv_len);

	rc = prepare(db, sql, &st, err, errlen, "insert job");
	if (rc < 0)
		return rc;
	sqlite3_bind_text(st, i++, j->name ? j->name : "", -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, i++, j->uid);
	sqlite3_bind_int64(st, i++, j->argc);
	sqlite3_bind_blob(st, i++, j->argv, (int)j->argv_len, SQLITE_STATIC);
	sqlite3_bind_int64(st, i++, j->envc);
	sqlite3_bind_blob(st, i++, j->env_len ? j->env : "", (int)j->env_len,
			  SQLITE_STATIC);
	sqlite3_bind_text(st, i++, j->cwd, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, i++, j->flags);
	sqlite3_bind_int64(st, i++, j->prio);
	sqlite3_bind_int64(st, i++, j->ngpus);
	sqlite3_bind_int64(st, i++, clamp_i64(j->mem_request));
	sqlite3_bind_int64(st, i++, (int64_t)j->submit_us);
	if (j->log_path)
		sqlite3_bind_text(st, i++, j->log_path, -1, SQLITE_STATIC);
	else
		sqlite3_bind_null(st, i++);
	sqlite3_bind_int64(st, i++, j->pid);
	sqlite3_bind_int64(st, i++, (int64_t)j->pid_start);
	sqlite3_bind_int64(st, i++, (int64_t)j->profile_key);
	rc = step_done(db, st, err, errlen, "insert job");
	if (rc == 0) {
		j->id = sqlite3_last_insert_rowid(db->h);
		j->state = PROTO_JOB_QUEUED;
		j->exit_code = PROTO_EXIT_UNKNOWN;
	}
	sqlite3_finalize(st);
	return rc;
}

/*
 * An UPDATE of job id changed nothing: say why (no such job, it ended, or
 * it is in a state the transition does not start from).
 */
static int explain_no_change(struct db *db, int64_t id, const char *what,
			     char *err, size_t errlen)
{
	sqlite3_stmt *st = NULL;
	const char *state;
	int rc, s;

	rc = prepare(db, "SELECT state FROM jobs WHERE id = ?", &st, err,
		     errlen, what);
	if (rc < 0)
		return rc;
	sqlite3_bind_int64(st, 1, id);
	s = sqlite3_step(st);
	if (s == SQLITE_DONE) {
		rc = set_err(err, errlen, -ENOENT, "%s: no job %" PRId64, what, id);
	} else if (s != SQLITE_ROW) {
		rc = fail(db, s, err, errlen, "%s", what);
	} else {
		state = (const char *)sqlite3_column_text(st, 0);
		if (state && strcmp(state, "queued") && strcmp(state, "running"))
			rc = set_err(err, errlen, -EALREADY,
				     "%s: job %" PRId64 " has already ended (%s)",
				     what, id, state);
		else
			rc = set_err(err, errlen, -EINVAL,
				     "%s: job %" PRId64 " is %s", what, id,
				     state ? state : "?");
	}
	sqlite3_finalize(st);
	return rc;
}

/* Step an UPDATE of one job; 0 if it changed the row, else why not. */
static int update_one(struct db *db, sqlite3_stmt *st, int64_t id,
		      const char *what, char *err, size_t errlen)
{
	int rc = step_done(db, st, err, errlen, what);

	if (rc < 0)
		return rc;
	if (sqlite3_changes(db->h) == 0)
		return explain_no_change(db, id, what, err, errlen);
	return 0;
}

int db_job_start(struct db *db, int64_t id, uint64_t gpus, uint64_t quota,
		 int32_t pid, uint64_t pid_start, uint64_t now_us, char *err,
		 size_t errlen)
{
	sqlite3_stmt *st = NULL;
	char what[64];
	int rc;

	if (db == NULL || pid < 0)
		return set_err(err, errlen, -EINVAL, "start job: bad arguments");
	snprintf(what, sizeof(what), "start job %" PRId64, id);
	rc = prepare(db, "UPDATE jobs SET state = 'running', gpus = ?,"
		     " mem_quota = ?, pid = ?, pid_start = ?, start_us = ?"
		     " WHERE id = ? AND state = 'queued'", &st, err, errlen, what);
	if (rc < 0)
		return rc;
	sqlite3_bind_int64(st, 1, (int64_t)gpus);
	sqlite3_bind_int64(st, 2, clamp_i64(quota));
	sqlite3_bind_int64(st, 3, pid);
	sqlite3_bind_int64(st, 4, (int64_t)pid_start);
	sqlite3_bind_int64(st, 5, (int64_t)now_us);
	sqlite3_bind_int64(st, 6, id);
	rc = update_one(db, st, id, what, err, errlen);
	sqlite3_finalize(st);
	return rc;
}

int db_job_set_pid(struct db *db, int64_t id, int32_t pid, uint64_t pid_start,
		   char *err, size_t errlen)
{
	sqlite3_stmt *st = NULL;
	char what[64];
	int rc;

	if (db == NULL || pid <= 0)
		return set_err(err, errlen, -EINVAL, "set pid: bad arguments");
	snprintf(what, sizeof(what), "set pid of job %" PRId64, id);
	rc = prepare(db, "UPDATE jobs SET pid = ?, pid_start = ? WHERE id = ?"
		     " AND state IN ('queued', 'running')", &st, err, errlen,
		     what);
	if (rc < 0)
		return rc;
	sqlite3_bind_int64(st, 1, pid);
	sqlite3_bind_int64(st, 2, (int64_t)pid_start);
	sqlite3_bind_int64(st, 3, id);
	rc = update_one(db, st, id, what, err, errlen);
	sqlite3_finalize(st);
	return rc;
}

int db_job_finish(struct db *db, int64_t id, uint32_t state, int32_t exit_code,
		  int32_t signal, uint64_t now_us, char *err, size_t errlen)
{
	sqlite3_stmt *st = NULL;
	char what[64];
	int rc;

	if (db == NULL)
		return set_err(err, errlen, -EINVAL, "finish job: no db");
	if ((state != PROTO_JOB_EXITED && state != PROTO_JOB_CANCELLED &&
	     state != PROTO_JOB_FAILED) || !exit_ok(exit_code, signal))
		return set_err(err, errlen, -EINVAL,
			       "finish job %" PRId64 ": bad state or exit status",
			       id);
	snprintf(what, sizeof(what), "finish job %" PRId64, id);
	rc = prepare(db, "UPDATE jobs SET state = ?, exit_code = ?, signal = ?,"
		     " end_us = ? WHERE id = ? AND state IN ('queued', 'running')",
		     &st, err, errlen, what);
	if (rc < 0)
		return rc;
	sqlite3_bind_text(st, 1, proto_job_state_name(state), -1, SQLITE_STATIC);
	if (exit_code == PROTO_EXIT_UNKNOWN)
		sqlite3_bind_null(st, 2);
	else
		sqlite3_bind_int(st, 2, exit_code);
	sqlite3_bind_int(st, 3, signal);
	sqlite3_bind_int64(st, 4, (int64_t)now_us);
	sqlite3_bind_int64(st, 5, id);
	rc = update_one(db, st, id, what, err, errlen);
	sqlite3_finalize(st);
	return rc;
}

int db_job_set_exit(struct db *db, int64_t id, int32_t exit_code,
		    int32_t signal, char *err, size_t errlen)
{
	sqlite3_stmt *st = NULL;
	char what[64];
	int rc;

	if (db == NULL || !exit_ok(exit_code, signal) ||
	    (exit_code == PROTO_EXIT_UNKNOWN && signal == 0))
		return set_err(err, errlen, -EINVAL,
			       "set exit status of job %" PRId64 ": bad "
			       "arguments", id);
	snprintf(what, sizeof(what), "set exit status of job %" PRId64, id);
	rc = prepare(db, "UPDATE jobs SET exit_code = ?, signal = ?"
		     " WHERE id = ? AND (state = 'exited' OR (state ="
		     " 'cancelled' AND start_us > 0)) AND exit_code IS NULL"
		     " AND signal = 0", &st, err, errlen, what);
	if (rc < 0)
		return rc;
	if (exit_code == PROTO_EXIT_UNKNOWN)
		sqlite3_bind_null(st, 1);
	else
		sqlite3_bind_int(st, 1, exit_code);
	sqlite3_bind_int(st, 2, signal);
	sqlite3_bind_int64(st, 3, id);
	rc = step_done(db, st, err, errlen, what);
	if (rc == 0 && sqlite3_changes(db->h) == 0) {
		rc = explain_no_change(db, id, what, err, errlen);
		/* Ended, but with its status known, or not by exiting. */
		if (rc == -EALREADY)
			rc = set_err(err, errlen, -EALREADY, "%s: its status "
				     "is known, or it did not run", what);
	}
	sqlite3_finalize(st);
	return rc;
}

int db_job_update_peak(struct db *db, int64_t id, uint64_t peak, char *err,
		       size_t errlen)
{
	sqlite3_stmt *st = NULL;
	char what[64];
	int rc;

	if (db == NULL)
		return set_err(err, errlen, -EINVAL, "update peak: no db");
	snprintf(what, sizeof(what), "update peak of job %" PRId64, id);
	rc = prepare(db, "UPDATE jobs SET mem_peak = max(mem_peak, ?)"
		     " WHERE id = ?", &st, err, errlen, what);
	if (rc < 0)
		return rc;
	sqlite3_bind_int64(st, 1, clamp_i64(peak));
	sqlite3_bind_int64(st, 2, id);
	rc = update_one(db, st, id, what, err, errlen);
	sqlite3_finalize(st);
	return rc;
}

int db_job_set_quota(struct db *db, int64_t id, uint64_t quota, char *err,
		     size_t errlen)
{
	sqlite3_stmt *st = NULL;
	char what[64];
	int rc;

	if (db == NULL)
		return set_err(err, errlen, -EINVAL, "set quota: no db");
	snprintf(what, sizeof(what), "set quota of job %" PRId64, id);
	rc = prepare(db, "UPDATE jobs SET mem_quota = ? WHERE id = ?", &st,
		     err, errlen, what);
	if (rc < 0)
		return rc;
	sqlite3_bind_int64(st, 1, clamp_i64(quota));
	sqlite3_bind_int64(st, 2, id);
	rc = update_one(db, st, id, what, err, errlen);
	sqlite3_finalize(st);
	return rc;
}

void db_job_release(struct db_job *j)
{
	if (j == NULL)
		return;
	free(j->name);
	free(j->argv);
	free(j->env);
	free(j->cwd);
	free(j->log_path);
	memset(j, 0, sizeof(*j));
}

static char *col_strdup(sqlite3_stmt *st, int i, bool *oom)
{
	const unsigned char *s = sqlite3_column_text(st, i);
	char *d;

	if (s == NULL)
		return NULL;
	d = strdup((const char *)s);
	if (d == NULL)
		*oom = true;
	return d;
}

/* A blob, with a NUL after it so that a stray reader stops there. */
static char *col_blob(sqlite3_stmt *st, int i, size_t *len, bool *oom)
{
	const void *b = sqlite3_column_blob(st, i);
	int n = sqlite3_column_bytes(st, i);
	char *d = malloc((size_t)n + 1);

	if (d == NULL) {
		*oom = true;
		*len = 0;
		return NULL;
	}
	if (n > 0)
		memcpy(d, b, (size_t)n);
	d[n] = '\0';
	*len = (size_t)n;
	return d;
}

/* The current row (columns JOB_COLS) into *j. */
static int row_to_job(sqlite3_stmt *st, struct db_job *j)
{
	bool oom = false;
	int i = 0;
	const char *state;

	memset(j, 0, sizeof(*j));
	j->id = sqlite3_column_int64(st, i++);
	j->name = col_strdup(st, i++, &oom);
	j->uid = (uint32_t)sqlite3_column_int64(st, i++);
	j->argc = (uint32_t)sqlite3_column_int64(st, i++);
	j->argv = col_blob(st, i++, &j->argv_len, &oom);
	j->envc = (uint32_t)sqlite3_column_int64(st, i++);
	j->env = col_blob(st, i++, &j->env_len, &oom);
	j->cwd = col_strdup(st, i++, &oom);
	state = (const char *)sqlite3_column_text(st, i++);
	if (state == NULL || proto_job_state_parse(state, &j->state) < 0) {
		db_job_release(j);
		return -EUCLEAN;	/* the CHECK constraint forbids it */
	}
	if (sqlite3_column_type(st, i) == SQLITE_NULL)
		j->exit_code = PROTO_EXIT_UNKNOWN;
	else
		j->exit_code = sqlite3_column_int(st, i);
	i++;
	j->signal = sqlite3_column_int(st, i++);
	j->flags = (uint32_t)sqlite3_column_int64(st, i++);
	j->prio = sqlite3_column_int(st, i++);
	j->ngpus = (uint32_t)sqlite3_column_int64(st, i++);
	j->gpus = (uint64_t)sqlite3_column_int64(st, i++);
	j->mem_request = (uint64_t)sqlite3_column_int64(st, i++);
	j->mem_quota = (uint64_t)sqlite3_column_int64(st, i++);
	j->mem_peak = (uint64_t)sqlite3_column_int64(st, i++);
	j->submit_us = (uint64_t)sqlite3_column_int64(st, i++);
	j->start_us = (uint64_t)sqlite3_column_int64(st, i++);
	j->end_us = (uint64_t)sqlite3_column_int64(st, i++);
	j->log_path = col_strdup(st, i++, &oom);
	j->pid = sqlite3_column_int(st, i++);
	j->pid_start = (uint64_t)sqlite3_column_int64(st, i++);
	j->profile_key = (uint64_t)sqlite3_column_int64(st, i++);
	if (oom || j->name == NULL || j->cwd == NULL) {
		db_job_release(j);
		return -ENOMEM;
	}
	return 0;
}

int db_job_get(struct db *db, int64_t id, struct db_job *out, char *err,
	       size_t errlen)
{
	sqlite3_stmt *st = NULL;
	char what[64];
	int rc, s;

	if (db == NULL || out == NULL)
		return set_err(err, errlen, -EINVAL, "get job: bad arguments");
	snprintf(what, sizeof(what), "get job %" PRId64, id);
	rc = prepare(db, "SELECT " JOB_COLS " FROM jobs WHERE id = ?", &st,
		     err, errlen, what);
	if (rc < 0)
		return rc;
	sqlite3_bind_int64(st, 1, id);
	s = sqlite3_step(st);
	if (s == SQLITE_DONE)
		rc = set_err(err, errlen, -ENOENT, "no job %" PRId64, id);
	else if (s != SQLITE_ROW)
		rc = fail(db, s, err, errlen, "%s", what);
	else if ((rc = row_to_job(st, out)) < 0)
		set_err(err, errlen, rc, "%s: %s", what, strerror(-rc));
	sqlite3_finalize(st);
	return rc;
}

void db_job_list_free(struct db_job *jobs, size_t n)
{
	size_t i;

	for (i = 0; jobs != NULL && i < n; i++)
		db_job_release(&jobs[i]);
	free(jobs);
}

int db_job_list(struct db *db, const struct db_filter *f, struct db_job **jobs,
		size_t *n, char *err, size_t errlen)
{
	sqlite3_stmt *st = NULL;
	struct db_job *v = NULL;
	size_t cap = 0, len = 0;
	int rc, s;

	if (db == NULL || jobs == NULL || n == NULL)
		return set_err(err, errlen, -EINVAL, "list jobs: bad arguments");
	*jobs = NULL;
	*n = 0;
	rc = prepare(db, "SELECT " JOB_COLS " FROM jobs"
		     " WHERE ?1 < 0 OR uid = ?1 ORDER BY id", &st, err, errlen,
		     "list jobs");
	if (rc < 0)
		return rc;
	sqlite3_bind_int64(st, 1, f ? f->uid : -1);
	while ((s = sqlite3_step(st)) == SQLITE_ROW) {
		struct db_job j;

		rc = row_to_job(st, &j);
		if (rc < 0) {
			set_err(err, errlen, rc, "list jobs: %s", strerror(-rc));
			goto err_free;
		}
		if (f && f->states && !(f->states & (1u << j.state))) {
			db_job_release(&j);
			continue;
		}
		if (db_grow(&v, &cap, len, sizeof(*v)) < 0) {
			db_job_release(&j);
			rc = set_err(err, errlen, -ENOMEM,
				     "list jobs: out of memory");
			goto err_free;
		}
		v[len++] = j;
	}
	if (s != SQLITE_DONE) {
		rc = fail(db, s, err, errlen, "list jobs");
		goto err_free;
	}
	sqlite3_finalize(st);
	*jobs = v;
	*n = len;
	return 0;

err_free:
	sqlite3_finalize(st);
	db_job_list_free(v, len);
	return rc;
}

/* ------------------------------------------------------------------------
 * Profiles.
 */
int db_profile_get(struct db *db, uint64_t key, struct db_profile *out,
		   char *err, size_t errlen)
{
	sqlite3_stmt *st = NULL;
	int rc, s;

	if (db == NULL || out == NULL)
		return set_err(err, errlen, -EINVAL, "get profile: bad arguments");
	rc = prepare(db, "SELECT peak_mem, mean_busy, mean_runtime_us, runs,"
		     " updated_us, busy_runs, mean_duty, duty_runs, thrash_mem,"
		     " thrash_runs, wait_rate, wait_runs FROM profiles"
		     " WHERE key = ?", &st,
		     err, errlen,
		     "get profile");
	if (rc < 0)
		return rc;
	sqlite3_bind_int64(st, 1, (int64_t)key);
	s = sqlite3_step(st);
	if (s == SQLITE_ROW) {
		out->peak_mem = (uint64_t)sqlite3_column_int64(st, 0);
		out->mean_busy = sqlite3_column_double(st, 1);
		out->mean_runtime_us = sqlite3_column_double(st, 2);
		out->runs = (uint32_t)sqlite3_column_int64(st, 3);
		out->updated_us = (uint64_t)sqlite3_column_int64(st, 4);
		out->busy_runs = (uint32_t)sqlite3_column_int64(st, 5);
		out->duty_runs = (uint32_t)sqlite3_column_int64(st, 7);
		out->mean_duty = out->duty_runs > 0 ?
				 sqlite3_column_double(st, 6) : -1.0;
		out->thrash_mem = (uint64_t)sqlite3_column_int64(st, 8);
		out->thrash_runs = (uint32_t)sqlite3_column_int64(st, 9);
		out->wait_runs = (uint32_t)sqlite3_column_int64(st, 11);
		out->wait_rate = out->wait_runs > 0 ?
				 sqlite3_column_double(st, 10) : -1.0;
	} else if (s == SQLITE_DONE) {
		rc = set_err(err, errlen, -ENOENT,
			     "no profile for command %016" PRIx64, key);
	} else {
		rc = fail(db, s, err, errlen, "get profile");
	}
	sqlite3_finalize(st);
	return rc;
}

int db_profile_update(struct db *db, uint64_t key, uint64_t peak, double busy,
		      double duty, bool measured, uint64_t runtime_us,
		      uint64_t now_us, char *err, size_t errlen)
{
	/*
	 * Upsert.  In DO UPDATE every right-hand side sees the row as it was,
	 * so `runs + 1` is the new count in each running mean, and
	 * excluded.busy_runs (excluded.duty_runs) is 1 for a measured run,
	 * else 0.
	 */
	static const char sql[] =
		"INSERT INTO profiles (key, peak_mem, mean_busy,"
		" mean_runtime_us, runs, updated_us, busy_runs, mean_duty,"
		" duty_runs)"
		" VALUES (?, ?, ?, ?, 1, ?, ?, ?, ?)"
		" ON CONFLICT (key) DO UPDATE SET"
		" peak_mem = max(peak_mem, excluded.peak_mem),"
		" mean_busy = CASE"
		"   WHEN excluded.busy_runs = 0 THEN mean_busy"
		"   WHEN busy_runs = 0 THEN excluded.mean_busy"
		"   ELSE mean_busy + (excluded.mean_busy - mean_busy) /"
		"     (busy_runs + 1) END,"
		" busy_runs = busy_runs + excluded.busy_runs,"
		" mean_duty = CASE"
		"   WHEN excluded.duty_runs = 0 THEN mean_duty"
		"   WHEN duty_runs = 0 THEN excluded.mean_duty"
		"   ELSE mean_duty + (excluded.mean_duty - mean_duty) /"
		"     (duty_runs + 1) END,"
		" duty_runs = duty_runs + excluded.duty_runs,"
		" mean_runtime_us = mean_runtime_us +"
		"   (excluded.mean_runtime_us - mean_runtime_us) / (runs + 1),"
		" runs = runs + 1,"
		" updated_us = excluded.updated_us";
	sqlite3_stmt *st = NULL;
	int rc;

	if (db == NULL || !(busy >= 0.0 && busy <= 1.0))
		return set_err(err, errlen, -EINVAL,
			       "update profile: busyness must be within 0..1");
	if (measured && !(duty >= 0.0 && duty <= 1.0))
		return set_err(err, errlen, -EINVAL,
			       "update profile: duty must be within 0..1");
	rc = prepare(db, sql, &st, err, errlen, "update profile");
	if (rc < 0)
		return rc;
	sqlite3_bind_int64(st, 1, (int64_t)key);
	sqlite3_bind_int64(st, 2, clamp_i64(peak));
	sqlite3_bind_double(st, 3, busy);
	sqlite3_bind_double(st, 4, (double)runtime_us);
	sqlite3_bind_int64(st, 5, (int64_t)now_us);
	sqlite3_bind_int(st, 6, measured ? 1 : 0);
	/* An unmeasured run's duty is unknown: a new row says so. */
	sqlite3_bind_double(st, 7, measured ? duty : -1.0);
	sqlite3_bind_int(st, 8, measured ? 1 : 0);
	rc = step_done(db, st, err, errlen, "update profile");
	sqlite3_finalize(st);
	return rc;
}

/* Run st, an UPDATE of key's profile row, and finalize it: -ENOENT when
 * there is no such row (nothing is created). */
static int profile_update_one(struct db *db, sqlite3_stmt *st, uint64_t key,
			      const char *what, char *err, size_t errlen)
{
	int rc = step_done(db, st, err, errlen, what);

	sqlite3_finalize(st);
	if (rc == 0 && sqlite3_changes(db->h) == 0)
		rc = set_err(err, errlen, -ENOENT,
			     "no profile for command %016" PRIx64, key);
	return rc;
}

int db_profile_note_thrash(struct db *db, uint64_t key, uint64_t want,
			   char *err, size_t errlen)
{
	sqlite3_stmt *st = NULL;
	int rc;

	if (db == NULL || want == 0)
		return set_err(err, errlen, -EINVAL,
			       "note thrash: bad arguments");
	rc = prepare(db, "UPDATE profiles SET thrash_mem = max(thrash_mem, ?),"
		     " thrash_runs = thrash_runs + 1 WHERE key = ?", &st, err,
		     errlen, "note thrash");
	if (rc < 0)
		return rc;
	sqlite3_bind_int64(st, 1, clamp_i64(want));
	sqlite3_bind_int64(st, 2, (int64_t)key);
	return profile_update_one(db, st, key, "note thrash", err, errlen);
}

int db_profile_note_waits(struct db *db, uint64_t key, double rate,
			  char *err, size_t errlen)
{
	sqlite3_stmt *st = NULL;
	int rc;

	if (db == NULL || !(rate >= 0.0 && rate < 1e12))
		return set_err(err, errlen, -EINVAL,
			       "note waits: the rate must be within 0..1e12");
	rc = prepare(db, "UPDATE profiles SET wait_rate = CASE"
		     " WHEN wait_runs = 0 THEN ?1"
		     " ELSE wait_rate + (?1 - wait_rate) / (wait_runs + 1) END,"
		     " wait_runs = wait_runs + 1 WHERE key = ?2", &st, err,
		     errlen, "note waits");
	if (rc < 0)
		return rc;
	sqlite3_bind_double(st, 1, rate);
	sqlite3_bind_int64(st, 2, (int64_t)key);
	return profile_update_one(db, st, key, "note waits", err, errlen);
}

/* ------------------------------------------------------------------------
 * Frozen processes.
 */
int db_frozen_add(struct db *db, int32_t pid, uint64_t pid_start,
		  int64_t job_id, uint64_t now_us, const char *cgroup,
		  char *err, size_t errlen)
{
	sqlite3_stmt *st = NULL;
	int rc;

	if (db == NULL || pid <= 0 ||
	    (cgroup && (cgroup[0] != '/' || strlen(cgroup) >= DB_CGROUP_MAX)))
		return set_err(err, errlen, -EINVAL, "add frozen: bad arguments");
	rc = prepare(db, "INSERT OR REPLACE INTO frozen (pid, pid_start, job_id,"
		     " since_us, cgroup) VALUES (?, ?, ?, ?, ?)", &st, err,
		     errlen, "add frozen process");
	if (rc < 0)
		return rc;
	sqlite3_bind_int64(st, 1, pid);
	sqlite3_bind_int64(st, 2, (int64_t)pid_start);
	sqlite3_bind_int64(st, 3, job_id);
	sqlite3_bind_int64(st, 4, (int64_t)now_us);
	sqlite3_bind_text(st, 5, cgroup ? cgroup : "", -1, SQLITE_STATIC);
	rc = step_done(db, st, err, errlen, "add frozen process");
	sqlite3_finalize(st);
	return rc;
}

int db_frozen_remove(struct db *db, int32_t pid, uint64_t pid_start, char *err,
		     size_t errlen)
{
	sqlite3_stmt *st = NULL;
	int rc;

	if (db == NULL)
		return set_err(err, errlen, -EINVAL, "remove frozen: no db");
	rc = prepare(db, "DELETE FROM frozen WHERE pid = ? AND pid_start = ?",
		     &st, err, errlen, "remove frozen process");
	if (rc < 0)
		return rc;
	sqlite3_bind_int64(st, 1, pid);
	sqlite3_bind_int64(st, 2, (int64_t)pid_start);
	rc = step_done(db, st, err, errlen, "remove frozen process");
	if (rc == 0 && sqlite3_changes(db->h) == 0)
		rc = set_err(err, errlen, -ENOENT,
			     "no frozen process %d (start %" PRIu64 ")", pid,
			     pid_start);
	sqlite3_finalize(st);
	return rc;
}

int db_frozen_list(struct db *db, struct db_frozen **out, size_t *n, char *err,
		   size_t errlen)
{
	sqlite3_stmt *st = NULL;
	struct db_frozen *v = NULL;
	size_t cap = 0, len = 0;
	const char *cg;
	int rc, s;

	if (db == NULL || out == NULL || n == NULL)
		return set_err(err, errlen, -EINVAL, "list frozen: bad arguments");
	*out = NULL;
	*n = 0;
	rc = prepare(db, "SELECT pid, pid_start, job_id, since_us, cgroup"
		     " FROM frozen"
		     " ORDER BY since_us, pid", &st, err, errlen,
		     "list frozen processes");
	if (rc < 0)
		return rc;
	while ((s = sqlite3_step(st)) == SQLITE_ROW) {
		if (db_grow(&v, &cap, len, sizeof(*v)) < 0) {
			rc = set_err(err, errlen, -ENOMEM,
				     "list frozen: out of memory");
			goto err_free;
		}
		v[len].pid = sqlite3_column_int(st, 0);
		v[len].pid_start = (uint64_t)sqlite3_column_int64(st, 1);
		v[len].job_id = sqlite3_column_int64(st, 2);
		v[len].since_us = (uint64_t)sqlite3_column_int64(st, 3);
		cg = (const char *)sqlite3_column_text(st, 4);
		snprintf(v[len].cgroup, sizeof(v[len].cgroup), "%s",
			 cg ? cg : "");
		len++;
	}
	if (s != SQLITE_DONE) {
		rc = fail(db, s, err, errlen, "list frozen processes");
		goto err_free;
	}
	sqlite3_finalize(st);
	*out = v;
	*n = len;
	return 0;

err_free:
	sqlite3_finalize(st);
	free(v);
	return rc;
}

/* ------------------------------------------------------------------------
 * Recovery.
 */
int db_proc_start_time(int32_t pid, uint64_t *start)
{
	char path[64], buf[1024], *p, *end;
	ssize_t n;
	int fd, field;

	if (pid <= 0 || start == NULL)
		return -EINVAL;
	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	if (n < 0) {
		int e = errno;

		close(fd);
		return -e;
	}
	close(fd);
	buf[n] = '\0';
	/* comm (field 2) may hold spaces and ')': skip to the last ')'. */
	p = strrchr(buf, ')');
	if (p == NULL)
		return -EBADMSG;
	p++;
	/* Fields 3.. follow, one blank before each: 20 to skip to 22. */
	for (field = 3; field < 22; field++) {
		p = strchr(p + 1, ' ');
		if (p == NULL)
			return -EBADMSG;
	}
	errno = 0;
	*start = strtoull(p + 1, &end, 10);
	if (errno != 0 || end == p + 1)
		return -EBADMSG;
	return 0;
}

bool db_proc_alive(int32_t pid, uint64_t pid_start, void *arg)
{
	uint64_t now;

	(void)arg;
	if (pid <= 0 || db_proc_start_time(pid, &now) < 0)
		return false;
	return pid_start == 0 || now == pid_start;
}

struct rec_item {
	int64_t id;
	int32_t pid;
	uint64_t pid_start;
	uint32_t flags;
	bool running;
};

/* Jobs that are queued or running, read out before any of them changes. */
static int live_jobs(struct db *db, struct rec_item **out, size_t *n,
		     char *err, size_t errlen)
{
	sqlite3_stmt *st = NULL;
	struct rec_item *v = NULL;
	size_t cap = 0, len = 0;
	int rc, s;

	rc = prepare(db, "SELECT id, state, pid, pid_start, flags FROM jobs"
		     " WHERE state IN ('queued', 'running') ORDER BY id", &st,
		     err, errlen, "recover: list jobs");
	if (rc < 0)
		return rc;
	while ((s = sqlite3_step(st)) == SQLITE_ROW) {
		if (db_grow(&v, &cap, len, sizeof(*v)) < 0) {
			rc = set_err(err, errlen, -ENOMEM,
				     "recover: out of memory");
			goto err_free;
		}
		v[len].id = sqlite3_column_int64(st, 0);
		v[len].running = strcmp((const char *)sqlite3_column_text(st, 1),
					"running") == 0;
		v[len].pid = sqlite3_column_int(st, 2);
		v[len].pid_start = (uint64_t)sqlite3_column_int64(st, 3);
		v[len].flags = (uint32_t)sqlite3_column_int64(st, 4);
		len++;
	}
	if (s != SQLITE_DONE) {
		rc = fail(db, s, err, errlen, "recover: list jobs");
		goto err_free;
	}
	sqlite3_finalize(st);
	*out = v;
	*n = len;
	return 0;

err_free:
	sqlite3_finalize(st);
	free(v);
	return rc;
}

bool db_recover_job_lost(bool running, uint32_t flags, int32_t pid,
			 uint64_t pid_start, db_alive_fn alive, void *arg)
{
	/* A queued job not yet started waits for admission again; one with
	 * a live process (running, or registered and still waiting) stays. */
	if (!running && pid <= 0)
		return false;
	/* A `kmux run` job admitted, its command's pid not known yet: only
	 * its client knows whether ADMIT reached it and the command started.
	 * The daemon gives it the chance to say so (job_recover). */
	if (running && pid <= 0 && (flags & DB_JOB_F_FOREGROUND))
		return false;
	if (pid > 0 && (alive ? alive : db_proc_alive)(pid, pid_start, arg))
		return false;
	return true;
}

int db_recover(struct db *db, db_alive_fn alive, void *arg, uint64_t now_us,
	       struct db_recovery *st, char *err, size_t errlen)
{
	struct db_recovery r = { 0 };
	struct rec_item *jobs = NULL;
	struct db_frozen *fz = NULL;
	size_t nj = 0, nf = 0, i;
	int rc;

	if (db == NULL)
		return set_err(err, errlen, -EINVAL, "recover: no db");
	if (alive == NULL)
		alive = db_proc_alive;
	rc = exec(db, "BEGIN IMMEDIATE", err, errlen, "recover: begin");
	if (rc < 0)
		return rc;
	rc = live_jobs(db, &jobs, &nj, err, errlen);
	if (rc < 0)
		goto err_rollback;
	for (i = 0; i < nj; i++) {
		if (!db_recover_job_lost(jobs[i].running, jobs[i].flags,
					 jobs[i].pid, jobs[i].pid_start, alive,
					 arg)) {
			if (jobs[i].running)
				r.running_kept++;
			else
				r.queued++;
			continue;
		}
		rc = db_job_finish(db, jobs[i].id, PROTO_JOB_EXITED,
				   PROTO_EXIT_UNKNOWN, 0, now_us, err, errlen);
		if (rc < 0)
			goto err_rollback;
		r.lost++;
	}
	rc = db_frozen_list(db, &fz, &nf, err, errlen);
	if (rc < 0)
		goto err_rollback;
	for (i = 0; i < nf; i++) {
		/* A frozen cgroup may hold processes other than the one
		 * recorded: it is thawed (by the daemon) even if that is gone. */
		if (fz[i].cgroup[0] ||
		    alive(fz[i].pid, fz[i].pid_start, arg)) {
			r.frozen_alive++;
			continue;
		}
		rc = db_frozen_remove(db, fz[i].pid, fz[i].pid_start, err, errlen);
		if (rc < 0)
			goto err_rollback;
		r.frozen_gone++;
	}
	rc = exec(db, "COMMIT", err, errlen, "recover: commit");
	if (rc < 0)
		goto err_rollback;
	if (st)
		*st = r;
	free(jobs);
	free(fz);
	return 0;

err_rollback:
	rollback(db);
	free(jobs);
	free(fz);
	return rc;
}
