/*
 * region-cgroup.c - freezing a region's sibling processes through cgroup v2
 * (cgroup.freeze) instead of SIGSTOP, where kmuxd may (region.c decides
 * which processes; this file owns the cgroup file system side).
 *
 * A cgroup is frozen only when all of this holds:
 *	- its cgroup.freeze exists and this daemon may write it (a subtree
 *	  delegated to the daemon's user);
 *	- nobody froze it already (cgroup.freeze reads 0): a thaw must never
 *	  undo someone else's freeze;
 *	- every process in it and in every cgroup below it (the freeze is
 *	  hierarchical) passes the caller's test: a process of another kmux
 *	  task, never the region's holder, the daemon or anything unrelated.
 * Otherwise the caller falls back to SIGSTOP.
 *
 * The root (--cgroup-root, default the cgroup2 mount point) is where the
 * paths of /proc/PID/cgroup's "0::" line are resolved; tests point it at a
 * directory tree of plain files, which this code treats the same.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "daemon.h"

#define CG_DEPTH_MAX 8		/* below the frozen cgroup, checked */
#define CG_POLL_US 2000

int region_cgroup_default_root(char *buf, size_t len)
{
	char line[4096], mnt[PATH_MAX];
	FILE *f = fopen("/proc/self/mountinfo", "re");
	int r = -ENOENT;

	if (!f)
		return -errno;
	/* "id parent maj:min root mountpoint opts... - fstype src opts" */
	while (fgets(line, sizeof(line), f)) {
		char *sep = strstr(line, " - ");

		if (!sep || strncmp(sep + 3, "cgroup2 ", 8) ||
		    sscanf(line, "%*s %*s %*s %*s %4095s", mnt) != 1)
			continue;
		if (snprintf(buf, len, "%s", mnt) >= (int)len) {
			r = -ENAMETOOLONG;
			continue;
		}
		r = 0;
		break;
	}
	fclose(f);
	return r;
}

int region_cgroup_of(const char *root, pid_t pid, char *dir, size_t len)
{
	char path[64], line[4096];
	int r = -ENOENT;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		size_t n = strcspn(line, "\n");

		line[n] = '\0';
		if (strncmp(line, "0::/", 4))
			continue;
		/* A removed cgroup, or a path to climb out of the root. */
		if (strstr(line, " (deleted)") || strstr(line, "/.."))
			break;
		if (snprintf(dir, len, "%s%s", root,
			     strcmp(line + 3, "/") ? line + 3 : "") >= (int)len) {
			r = -ENAMETOOLONG;
			break;
		}
		r = 0;
		break;
	}
	fclose(f);
	return r;
}

static int read_small(const char *dir, const char *name, char *buf,
		      size_t len)
{
	char path[PATH_MAX + 32];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	if (n < 0) {
		int e = errno;

		close(fd);
		return -e;
	}
	close(fd);
	buf[n] = '\0';
	return 0;
}

/* Every pid in dir's cgroup.procs, and below, passes ok(). */
static int procs_ok(const char *dir, int depth, region_cgroup_ok_fn ok,
		    void *arg, char *why, size_t whylen)
{
	char path[PATH_MAX + 32];
	struct dirent *de;
	unsigned long pid;
	int r = 0;
	FILE *f;
	DIR *d;

	snprintf(path, sizeof(path), "%s/cgroup.procs", dir);
	f = fopen(path, "re");
	if (!f) {
		snprintf(why, whylen, "cannot read %s: %s", path,
			 strerror(errno));
		return -errno;
	}
	while (r == 0 && fscanf(f, "%lu", &pid) == 1) {
		if (!ok((pid_t)pid, arg)) {
			snprintf(why, whylen, "%s holds pid %lu, not another "
				 "kmux task's", path, pid);
			r = -EPERM;
		}
	}
	if (r == 0 && !feof(f)) {
		snprintf(why, whylen, "cannot parse %s", path);
		r = -EBADMSG;
	}
	fclose(f);
	if (r)
		return r;
	d = opendir(dir);
	if (!d) {
		snprintf(why, whylen, "cannot list %s: %s", dir,
			 strerror(errno));
		return -errno;
	}
	while (r == 0 && (de = readdir(d))) {
		struct stat sb;

		if (de->d_name[0] == '.' || (de->d_type != DT_DIR &&
		    (de->d_type != DT_UNKNOWN ||
		     fstatat(dirfd(d), de->d_name, &sb, AT_SYMLINK_NOFOLLOW) ||
		     !S_ISDIR(sb.st_mode))))
			continue;
		if (depth >= CG_DEPTH_MAX) {
			snprintf(why, whylen, "%s is nested too deep", dir);
			r = -ELOOP;
			break;
		}
		if (snprintf(path, sizeof(path), "%s/%s", dir, de->d_name) >=
		    (int)sizeof(path)) {
			snprintf(why, whylen, "a path below %s is too long",
				 dir);
			r = -ENAMETOOLONG;
			break;
		}
		r = procs_ok(path, depth + 1, ok, arg, why, whylen);
	}
	closedir(d);
	return r;
}

int region_cgroup_check(const char *dir, region_cgroup_ok_fn ok, void *arg,
			char *why, size_t whylen)
{
	char path[PATH_MAX + 32], v[16];
	int r;

	snprintf(path, sizeof(path), "%s/cgroup.freeze", dir);
	if (access(path, W_OK)) {
		snprintf(why, whylen, "%s is not writable: %s", path,
			 strerror(errno));
		return -errno;
	}
	r = read_small(dir, "cgroup.freeze", v, sizeof(v));
	if (r) {
		snprintf(why, whylen, "cannot read %s: %s", path, strerror(-r));
		return r;
	}
	if (v[0] != '0') {
		snprintf(why, whylen, "%s is frozen already", dir);
		return -EALREADY;
	}
	return procs_ok(dir, 0, ok, arg, why, whylen);
}

static int write_freeze(const char *dir, const char *v)
{
	char path[PATH_MAX + 32];
	int fd, r = 0;

	snprintf(path, sizeof(path), "%s/cgroup.freeze", dir);
	fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -errno;
	if (write(fd, v, strlen(v)) != (ssize_t)strlen(v))
		r = errno ? -errno : -EIO;
	if (close(fd) && !r)
		r = -errno;
	return r;
}

static bool events_frozen(const char *dir)
{
	char buf[512];

	if (read_small(dir, "cgroup.events", buf, sizeof(buf)))
		return false;
	return strncmp(buf, "frozen 1", 8) == 0 || strstr(buf, "\nfrozen 1");
}

int region_cgroup_freeze(const char *dir, unsigned int wait_ms)
{
	struct timespec ts = { 0, CG_POLL_US * 1000L };
	uint64_t until = server_now_us() + (uint64_t)wait_ms * 1000;
	int r = write_freeze(dir, "1");

	if (r)
		return r;
	/* The kernel freezes each task on its way back to user space: one
	 * inside a driver call takes that call's time.  Bounded, since the
	 * daemon waits here with its loop. */
	while (!events_frozen(dir)) {
		if (server_now_us() >= until)
			return -ETIMEDOUT;
		nanosleep(&ts, NULL);
	}
	return 0;
}

int region_cgroup_thaw(const char *dir)
{
	int r = write_freeze(dir, "0");

	/* A cgroup removed meanwhile has nothing left to thaw. */
	return r == -ENOENT ? 0 : r;
}
