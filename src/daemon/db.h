/*
 * db.h - kmuxd's persistent state in SQLite: jobs, learned task profiles,
 * frozen processes.
 *
 * Owns: the schema and its migrations, every SQL statement kmuxd runs, the
 * job state machine as stored, and the recovery of jobs after the daemon
 * died (kill -9 included).  What must survive a restart lives here and only
 * here; everything else in the daemon is rebuilt from it and from the
 * preloads re-registering.
 *
 * Library style, as redis's modules: no logging.  Every function returns 0
 * or -errno and, on error, writes one line for people into err (which may
 * be NULL): "insert job 7: database or disk is full".  SQLite's errors are
 * mapped to errno values a caller can act on: SQLITE_FULL -> -ENOSPC,
 * SQLITE_READONLY -> -EROFS, SQLITE_BUSY/LOCKED -> -EBUSY, SQLITE_NOMEM
 * -> -ENOMEM, SQLITE_CORRUPT/NOTADB -> -EUCLEAN, SQLITE_CANTOPEN -> the
 * system's errno (-ENOENT, -EACCES, ...), SQLITE_PERM -> -EACCES, other I/O
 * errors -> -EIO.
 *
 * Not thread-safe per handle: kmuxd is one event loop with one handle.
 * Times are Unix microseconds.  Unsigned 64-bit values (sizes, GPU masks,
 * keys) are stored bit-for-bit in SQLite's signed 64-bit integers.
 */
#ifndef KMUX_DB_H
#define KMUX_DB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The schema this code reads and writes; older files are migrated. */
#define DB_SCHEMA_VERSION 6

/* db_open() flags. */
#define DB_OPEN_READONLY 0x1u	/* never write (kmux ps without a daemon; tests) */

/* How long a statement waits for another connection's lock. */
#define DB_BUSY_TIMEOUT_MS 5000

struct db;

/*
 * A job as stored.  Strings and blocks returned by db_job_get() and
 * db_job_list() are the caller's, freed by db_job_release().  For
 * db_job_insert() the caller owns them and they may be string literals.
 */
struct db_job {
	int64_t id;		/* > 0, never reused; set by db_job_insert() */
	char *name;		/* "" if none */
	uint32_t uid;		/* owner (SO_PEERCRED in system mode) */
	uint32_t argc;		/* >= 1 */
	char *argv;		/* argc C strings back to back, as on the wire */
	size_t argv_len;
	uint32_t envc;		/* the environment subset passed on */
	char *env;
	size_t env_len;
	char *cwd;
	uint32_t state;		/* enum proto_job_state */
	int32_t exit_code;	/* PROTO_EXIT_UNKNOWN until known */
	int32_t signal;		/* the signal that ended it, or 0 */
	uint32_t flags;		/* PROTO_JOB_F_* | DB_JOB_F_* */
	int32_t prio;
	uint32_t ngpus;		/* asked for */
	uint64_t gpus;		/* mask of the GPU indices given, once running */
	uint64_t mem_request;	/* bytes per GPU declared, 0: none */
	uint64_t mem_quota;	/* bytes per GPU admitted with */
	uint64_t mem_peak;	/* largest resident bytes reported */
	uint64_t submit_us, start_us, end_us;	/* 0: not yet */
	char *log_path;		/* SUBMIT jobs' output; NULL for RUN */
	int32_t pid;		/* 0 until known */
	uint64_t pid_start;	/* process start time (/proc stat field 22) */
	uint64_t profile_key;	/* db_profile_key(argv) */
};

/* Flags kept beside the protocol's: how the job was started. */
#define DB_JOB_F_FOREGROUND 0x10000u	/* kmux run: the client spawns it */
#define DB_JOB_F_REGISTERED 0x20000u	/* an uncooperative process */

struct db_profile {
	uint64_t peak_mem;	/* the largest peak over all runs */
	double mean_busy;	/* running mean over busy_runs, 0..1 */
	double mean_runtime_us;
	uint32_t runs;
	/* Runs whose busyness was measured (busy-est.h).  0: mean_busy is
	 * the prediction a run had, or an older daemon's whole-life mean
	 * (schema 2), and the first measured run replaces it. */
	uint32_t busy_runs;
	/* Running mean over duty_runs of the duty (busy-est.h: the demand
	 * over a run's whole life, start-up included), 0..1; < 0 (duty_runs
	 * 0): unknown, a profile learned before schema 4 or never measured. */
	double mean_duty;
	uint32_t duty_runs;
	/* Evict mode: the largest budget a thrashing run asked kmuxd for
	 * (all it had backed: its working set), over thrash_runs runs that
	 * thrashed (db_profile_note_thrash); 0, 0: never thrashed, or learned
	 * before schema 5. */
	uint64_t thrash_mem;
	uint32_t thrash_runs;
	/* Waits for the GPU per second of a run's active time (from its first
	 * kernel to its last report), running mean over wait_runs runs
	 * (db_profile_note_waits); < 0 (wait_runs 0): unknown, never
	 * measured or learned before schema 6. */
	double wait_rate;
	uint32_t wait_runs;
	uint64_t updated_us;
};

/* The longest cgroup directory a frozen row records, NUL included. */
#define DB_CGROUP_MAX 4096

struct db_frozen {
	int32_t pid;
	uint64_t pid_start;
	int64_t job_id;		/* 0 if none */
	uint64_t since_us;
	/* "": stopped with SIGSTOP; else the cgroup v2 directory whose
	 * cgroup.freeze holds it (the whole cgroup is thawed). */
	char cgroup[DB_CGROUP_MAX];
};

struct db_filter {
	int64_t uid;		/* -1: every user's jobs */
	uint32_t states;	/* mask of 1 << state; 0: all */
};

/* What db_recover() did. */
struct db_recovery {
	size_t running_kept;	/* still alive, or a `kmux run` job with no
				 * pid yet: left running */
	size_t lost;		/* gone: now exited, exit code unknown */
	size_t queued;		/* left queued */
	size_t frozen_alive;
	size_t frozen_gone;	/* forgotten */
};

/* Is the process pid, started at pid_start, still there? */
typedef bool (*db_alive_fn)(int32_t pid, uint64_t pid_start, void *arg);

/*
 * Open or create the database at path (created 0600, never through a
 * symlink), switch it to WAL, migrate it to DB_SCHEMA_VERSION.  A file of a
 * newer schema is refused with -EPROTONOSUPPORT.  READONLY opens an existing
 * file without migrating it (an older schema is then -EROFS).
 */
int db_open(const char *path, unsigned flags, struct db **out, char *err,
	    size_t errlen);
void db_close(struct db *db);

int db_schema_version(struct db *db, int *version, char *err, size_t errlen);

/*
 * Test knob: cap the file at `pages` pages (0: back to SQLite's default
 * maximum), so that writes fail with SQLITE_FULL as on a full disk.
 */
int db_set_max_pages(struct db *db, uint32_t pages, char *err, size_t errlen);

/*
 * Test knob (db-full.c): while the file at path exists, every write to a
 * database's files (the WAL included) fails with SQLITE_FULL, as on a full
 * disk, so db_* writes return -ENOSPC; remove the file and there is room
 * again.  Unlike the page cap, an UPDATE in place fails too, and the disk
 * frees up without a restart.  Process-wide; applies to databases opened
 * after the call.  NULL or "": off (for later opens).  0 or -errno.
 */
int db_full_set(const char *path, char *err, size_t errlen);
/* The VFS db_open() uses: the knob's, or NULL (SQLite's default). */
const char *db_full_vfs(void);

/* FNV-1a over the argument block: the key of a command's profile. */
uint64_t db_profile_key(const char *argv, size_t argv_len);

/*
 * Insert a new job in state QUEUED (job->state 0 or QUEUED) and set
 * job->id.  submit_us is stored as given (the caller's clock); profile_key
 * is computed from argv when 0.  -EINVAL if argc and the argv block
 * disagree, env likewise, cwd is missing or ngpus is out of 1..64.
 */
int db_job_insert(struct db *db, struct db_job *job, char *err, size_t errlen);

/*
 * QUEUED -> RUNNING on the given GPUs with the given quota.  pid may be 0
 * (kmux run: the client spawns after admission; db_job_set_pid() later).
 * -ENOENT: no such job; -EALREADY: it has ended; -EINVAL: already running.
 */
int db_job_start(struct db *db, int64_t id, uint64_t gpus, uint64_t quota,
		 int32_t pid, uint64_t pid_start, uint64_t now_us, char *err,
		 size_t errlen);

/* Record the process of a job that is queued or running. */
int db_job_set_pid(struct db *db, int64_t id, int32_t pid, uint64_t pid_start,
		   char *err, size_t errlen);

/*
 * QUEUED or RUNNING -> EXITED, CANCELLED or FAILED.  exit_code is 0..255 or
 * PROTO_EXIT_UNKNOWN.  -ENOENT, -EALREADY (already ended), -EINVAL.
 */
int db_job_finish(struct db *db, int64_t id, uint32_t state, int32_t exit_code,
		  int32_t signal, uint64_t now_us, char *err, size_t errlen);

/*
 * A job that ended while no daemon watched it (EXITED, or CANCELLED once
 * started, by a daemon that then saw it gone; exit code unknown, no
 * signal) gets its
 * status after all: its `kmux run` client knew it and came back.  The
 * state stays.  -EALREADY when the job is not such a job (its status is
 * known, or it did not run); -ENOENT when there is no such job.
 */
int db_job_set_exit(struct db *db, int64_t id, int32_t exit_code,
		    int32_t signal, char *err, size_t errlen);

/* mem_peak = max(mem_peak, peak).  -ENOENT if no such job. */
int db_job_update_peak(struct db *db, int64_t id, uint64_t peak, char *err,
		       size_t errlen);

/* A running job's quota grew (an unknown task outgrew its guess). */
int db_job_set_quota(struct db *db, int64_t id, uint64_t quota, char *err,
		     size_t errlen);

/* -ENOENT if no such job. */
int db_job_get(struct db *db, int64_t id, struct db_job *out, char *err,
	       size_t errlen);

/* Jobs matching f (NULL: all), by id.  Free with db_job_list_free(). */
int db_job_list(struct db *db, const struct db_filter *f, struct db_job **jobs,
		size_t *n, char *err, size_t errlen);
void db_job_list_free(struct db_job *jobs, size_t n);

/* Free what db_job_get() allocated in j (not j itself). */
void db_job_release(struct db_job *j);

/* -ENOENT if nothing learned yet for key. */
int db_profile_get(struct db *db, uint64_t key, struct db_profile *out,
		   char *err, size_t errlen);

/*
 * Fold one finished run into key's profile: runs + 1, running mean of
 * runtime, peak = the larger peak.  busy (0..1) goes into the running mean
 * of busyness when measured; else it is kept only by a new profile, until
 * a measured run replaces it.  duty (0..1) goes into the running mean of
 * duty when measured, and is ignored otherwise (the duty stays unknown).
 */
int db_profile_update(struct db *db, uint64_t key, uint64_t peak, double busy,
		      double duty, bool measured, uint64_t runtime_us,
		      uint64_t now_us, char *err, size_t errlen);

/*
 * A finished evict-mode run of key thrashed and asked for a budget of
 * want bytes: thrash_mem = max(thrash_mem, want), thrash_runs + 1.  Call
 * after db_profile_update() for the same run (the row must exist):
 * -ENOENT if it does not, -EINVAL for want 0.
 */
int db_profile_note_thrash(struct db *db, uint64_t key, uint64_t want,
			   char *err, size_t errlen);

/*
 * A finished run of key waited for the GPU rate times per second of its
 * active time: fold it into the profile's running mean (wait_runs + 1).
 * -EINVAL for a rate outside 0..1e12, -ENOENT when key has no profile.
 */
int db_profile_note_waits(struct db *db, uint64_t key, double rate,
			  char *err, size_t errlen);

/* cgroup: NULL for a SIGSTOP; else the absolute directory frozen. */
int db_frozen_add(struct db *db, int32_t pid, uint64_t pid_start,
		  int64_t job_id, uint64_t now_us, const char *cgroup,
		  char *err, size_t errlen);
/* -ENOENT if not there. */
int db_frozen_remove(struct db *db, int32_t pid, uint64_t pid_start, char *err,
		     size_t errlen);
int db_frozen_list(struct db *db, struct db_frozen **out, size_t *n, char *err,
		   size_t errlen);

/*
 * After a daemon start: RUNNING jobs whose process is still alive (same
 * pid, same start time) stay RUNNING, and so do `kmux run` jobs
 * (DB_JOB_F_FOREGROUND) with no pid yet, for the daemon to settle with
 * their client; the others become EXITED with the exit code unknown;
 * QUEUED jobs stay QUEUED, except registered processes that are gone; frozen processes that are gone are forgotten (not those
 * frozen through a cgroup: the cgroup is still to be thawed).  One
 * transaction.  alive NULL: db_proc_alive.  st may be NULL.
 */
int db_recover(struct db *db, db_alive_fn alive, void *arg, uint64_t now_us,
	       struct db_recovery *st, char *err, size_t errlen);

/*
 * db_recover()'s rule for one job, for a daemon that cannot write its
 * database and must apply it in memory: true when the job (running, or
 * queued with a process) has no live process any more and so has ended
 * (flags: the job's DB_JOB_F_*).  alive NULL: db_proc_alive.
 */
bool db_recover_job_lost(bool running, uint32_t flags, int32_t pid,
			 uint64_t pid_start, db_alive_fn alive, void *arg);

/*
 * The default liveness test: /proc/<pid>/stat exists and its start time
 * (field 22) equals pid_start (when pid_start is not 0), so that a reused
 * pid is not taken for the job's process.
 */
bool db_proc_alive(int32_t pid, uint64_t pid_start, void *arg);

/* Field 22 of /proc/<pid>/stat: 0 and *start, or -errno. */
int db_proc_start_time(int32_t pid, uint64_t *start);

#endif
