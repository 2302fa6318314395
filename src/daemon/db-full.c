/*
 * db-full.c - the full-disk test knob of db.h (db_full_set()): a SQLite VFS
 * over the default one whose writes fail with SQLITE_FULL, exactly as the
 * unix VFS reports ENOSPC, while a given file exists.
 *
 * Why a VFS and not the page cap (db_set_max_pages()): the cap fails only a
 * write that needs a new page of the database file, so whether an UPDATE in
 * place (a job's end) fails depends on how full its page is; and it cannot
 * be lifted without restarting the daemon.  A real full disk fails every
 * write that needs a block, WAL frames included, and frees up when someone
 * deletes a file.  The file switch gives the tests both, deterministically:
 * touch it and the disk is full, remove it and there is room.
 *
 * Every method but xWrite is passed through to the real file, which lives
 * right behind our header in the memory SQLite allocates (szOsFile).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sqlite3.h>

#include "db.h"

#define FULL_VFS_NAME "kmux-full"

struct full_file {
	sqlite3_file base;	/* pMethods: full_io */
	sqlite3_file *real;	/* right after this struct */
};

static sqlite3_vfs full_vfs;
static sqlite3_vfs *real_vfs;
static char *full_path;		/* NULL: off */

static sqlite3_file *real_of(sqlite3_file *f)
{
	return ((struct full_file *)f)->real;
}

static bool disk_full(void)
{
	return full_path && access(full_path, F_OK) == 0;
}

static int full_close(sqlite3_file *f)
{
	sqlite3_file *r = real_of(f);
	int rc = r->pMethods ? r->pMethods->xClose(r) : SQLITE_OK;

	f->pMethods = NULL;
	return rc;
}

static int full_read(sqlite3_file *f, void *buf, int n, sqlite3_int64 off)
{
	sqlite3_file *r = real_of(f);

	return r->pMethods->xRead(r, buf, n, off);
}

static int full_write(sqlite3_file *f, const void *buf, int n,
		      sqlite3_int64 off)
{
	sqlite3_file *r = real_of(f);

	if (disk_full())
		return SQLITE_FULL;
	return r->pMethods->xWrite(r, buf, n, off);
}

static int full_truncate(sqlite3_file *f, sqlite3_int64 size)
{
	sqlite3_file *r = real_of(f);

	return r->pMethods->xTruncate(r, size);
}

static int full_sync(sqlite3_file *f, int flags)
{
	sqlite3_file *r = real_of(f);

	return r->pMethods->xSync(r, flags);
}

static int full_file_size(sqlite3_file *f, sqlite3_int64 *size)
{
	sqlite3_file *r = real_of(f);

	return r->pMethods->xFileSize(r, size);
}

static int full_lock(sqlite3_file *f, int lock)
{
	sqlite3_file *r = real_of(f);

	return r->pMethods->xLock(r, lock);
}

static int full_unlock(sqlite3_file *f, int lock)
{
	sqlite3_file *r = real_of(f);

	return r->pMethods->xUnlock(r, lock);
}

static int full_check_reserved(sqlite3_file *f, int *out)
{
	sqlite3_file *r = real_of(f);

	return r->pMethods->xCheckReservedLock(r, out);
}

static int full_file_control(sqlite3_file *f, int op, void *arg)
{
	sqlite3_file *r = real_of(f);

	return r->pMethods->xFileControl(r, op, arg);
}

static int full_sector_size(sqlite3_file *f)
{
	sqlite3_file *r = real_of(f);

	return r->pMethods->xSectorSize(r);
}

static int full_device_chars(sqlite3_file *f)
{
	sqlite3_file *r = real_of(f);

	return r->pMethods->xDeviceCharacteristics(r);
}

/* The WAL index is shared memory (a mapped -shm file): passed through. */
static int full_shm_map(sqlite3_file *f, int pg, int pgsz, int extend,
			void volatile **p)
{
	sqlite3_file *r = real_of(f);

	return r->pMethods->xShmMap(r, pg, pgsz, extend, p);
}

static int full_shm_lock(sqlite3_file *f, int off, int n, int flags)
{
	sqlite3_file *r = real_of(f);

	return r->pMethods->xShmLock(r, off, n, flags);
}

static void full_shm_barrier(sqlite3_file *f)
{
	sqlite3_file *r = real_of(f);

	r->pMethods->xShmBarrier(r);
}

static int full_shm_unmap(sqlite3_file *f, int del)
{
	sqlite3_file *r = real_of(f);

	return r->pMethods->xShmUnmap(r, del);
}

static int full_fetch(sqlite3_file *f, sqlite3_int64 off, int n, void **p)
{
	sqlite3_file *r = real_of(f);

	return r->pMethods->xFetch(r, off, n, p);
}

static int full_unfetch(sqlite3_file *f, sqlite3_int64 off, void *p)
{
	sqlite3_file *r = real_of(f);

	return r->pMethods->xUnfetch(r, off, p);
}

static const sqlite3_io_methods full_io = {
	.iVersion = 3,
	.xClose = full_close,
	.xRead = full_read,
	.xWrite = full_write,
	.xTruncate = full_truncate,
	.xSync = full_sync,
	.xFileSize = full_file_size,
	.xLock = full_lock,
	.xUnlock = full_unlock,
	.xCheckReservedLock = full_check_reserved,
	.xFileControl = full_file_control,
	.xSectorSize = full_sector_size,
	.xDeviceCharacteristics = full_device_chars,
	.xShmMap = full_shm_map,
	.xShmLock = full_shm_lock,
	.xShmBarrier = full_shm_barrier,
	.xShmUnmap = full_shm_unmap,
	.xFetch = full_fetch,
	.xUnfetch = full_unfetch,
};

static int full_open(sqlite3_vfs *vfs, const char *name, sqlite3_file *f,
		     int flags, int *out_flags)
{
	struct full_file *ff = (struct full_file *)f;
	int rc;

	(void)vfs;
	ff->real = (sqlite3_file *)(ff + 1);
	rc = real_vfs->xOpen(real_vfs, name, ff->real, flags, out_flags);
	/* SQLite calls xClose only when pMethods is set, and the unix VFS
	 * leaves it NULL on failure: so do we. */
	f->pMethods = rc == SQLITE_OK && ff->real->pMethods ? &full_io : NULL;
	return rc;
}

static int full_delete(sqlite3_vfs *vfs, const char *name, int sync)
{
	(void)vfs;
	return real_vfs->xDelete(real_vfs, name, sync);
}

static int full_access(sqlite3_vfs *vfs, const char *name, int flags,
		       int *out)
{
	(void)vfs;
	return real_vfs->xAccess(real_vfs, name, flags, out);
}

static int full_full_pathname(sqlite3_vfs *vfs, const char *name, int n,
			      char *out)
{
	(void)vfs;
	return real_vfs->xFullPathname(real_vfs, name, n, out);
}

static int full_randomness(sqlite3_vfs *vfs, int n, char *out)
{
	(void)vfs;
	return real_vfs->xRandomness(real_vfs, n, out);
}

static int full_sleep(sqlite3_vfs *vfs, int us)
{
	(void)vfs;
	return real_vfs->xSleep(real_vfs, us);
}

static int full_current_time(sqlite3_vfs *vfs, double *out)
{
	(void)vfs;
	return real_vfs->xCurrentTime(real_vfs, out);
}

static int full_last_error(sqlite3_vfs *vfs, int n, char *out)
{
	(void)vfs;
	return real_vfs->xGetLastError(real_vfs, n, out);
}

static int full_current_time64(sqlite3_vfs *vfs, sqlite3_int64 *out)
{
	(void)vfs;
	return real_vfs->xCurrentTimeInt64(real_vfs, out);
}

int db_full_set(const char *path, char *err, size_t errlen)
{
	char *copy = NULL;
	int s;

	if (path && *path && !(copy = strdup(path))) {
		if (err && errlen)
			snprintf(err, errlen, "full-disk knob: out of memory");
		return -ENOMEM;
	}
	free(full_path);
	full_path = copy;
	if (!full_path || real_vfs)
		return 0;
	real_vfs = sqlite3_vfs_find(NULL);
	if (!real_vfs || real_vfs->iVersion < 2) {
		real_vfs = NULL;
		if (err && errlen)
			snprintf(err, errlen, "full-disk knob: SQLite has no "
				 "default VFS to wrap");
		return -ENOSYS;
	}
	full_vfs = (sqlite3_vfs){
		.iVersion = 2,
		.szOsFile = (int)sizeof(struct full_file) + real_vfs->szOsFile,
		.mxPathname = real_vfs->mxPathname,
		.zName = FULL_VFS_NAME,
		.xOpen = full_open,
		.xDelete = full_delete,
		.xAccess = full_access,
		.xFullPathname = full_full_pathname,
		.xRandomness = full_randomness,
		.xSleep = full_sleep,
		.xCurrentTime = full_current_time,
		.xGetLastError = full_last_error,
		.xCurrentTimeInt64 = full_current_time64,
	};
	s = sqlite3_vfs_register(&full_vfs, 0);
	if (s != SQLITE_OK) {
		real_vfs = NULL;
		if (err && errlen)
			snprintf(err, errlen, "full-disk knob: cannot register "
				 "a VFS: %s", sqlite3_errstr(s));
		return -EIO;
	}
	return 0;
}

const char *db_full_vfs(void)
{
	return full_path && real_vfs ? FULL_VFS_NAME : NULL;
}
