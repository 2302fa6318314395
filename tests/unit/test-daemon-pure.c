/*
 * test-daemon-pure.c - unit tests of the pure parts around kmuxd: where the
 * socket and state go (paths.c, from the environment), the checks on their
 * directories, the KMUX_FAKE_GPUS test knob (nvml.c, no NVML needed), and
 * how --mps finds nvidia-cuda-mps-control and names its directories.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "mps.h"
#include "nvml.h"
#include "paths.h"

#define GiB (UINT64_C(1) << 30)

static void clear_env(void)
{
	unsetenv("KMUX_SOCKET");
	unsetenv("KMUX_STATE_DIR");
	unsetenv("XDG_RUNTIME_DIR");
	unsetenv("XDG_STATE_HOME");
	unsetenv("KMUX_FAKE_GPUS");
}

static void test_paths_defaults(void **state)
{
	struct kmux_paths p;
	char err[256], want[64];

	(void)state;
	clear_env();
	setenv("HOME", "/home/u", 1);
	assert_int_equal(paths_resolve(&p, false, NULL, NULL, err, sizeof(err)), 0);
	snprintf(want, sizeof(want), "/tmp/kmux-%u/sock", (unsigned)getuid());
	assert_string_equal(p.socket, want);
	snprintf(want, sizeof(want), "/tmp/kmux-%u", (unsigned)getuid());
	assert_string_equal(p.run_dir, want);
	assert_string_equal(p.state_dir, "/home/u/.local/state/kmux");

	setenv("XDG_RUNTIME_DIR", "/run/user/7", 1);
	setenv("XDG_STATE_HOME", "/st", 1);
	assert_int_equal(paths_resolve(&p, false, NULL, NULL, err, sizeof(err)), 0);
	assert_string_equal(p.socket, "/run/user/7/kmux/sock");
	assert_string_equal(p.run_dir, "/run/user/7/kmux");
	assert_string_equal(p.state_dir, "/st/kmux");

	/* System mode ignores the per-user variables... */
	assert_int_equal(paths_resolve(&p, true, NULL, NULL, err, sizeof(err)), 0);
	assert_string_equal(p.socket, "/run/kmux/sock");
	assert_string_equal(p.state_dir, "/var/lib/kmux");
	assert_true(p.system);

	/* ... but not the explicit ones, and options win over them. */
	setenv("KMUX_SOCKET", "/a/b.sock", 1);
	setenv("KMUX_STATE_DIR", "/s", 1);
	assert_int_equal(paths_resolve(&p, true, NULL, NULL, err, sizeof(err)), 0);
	assert_string_equal(p.socket, "/a/b.sock");
	assert_string_equal(p.run_dir, "/a");
	assert_string_equal(p.state_dir, "/s");
	assert_int_equal(paths_resolve(&p, false, "rel.sock", "/o", err,
				       sizeof(err)), 0);
	assert_string_equal(p.run_dir, ".");
	assert_string_equal(p.state_dir, "/o");
	assert_int_equal(paths_resolve(&p, false, "/top.sock", NULL, err,
				       sizeof(err)), 0);
	assert_string_equal(p.run_dir, "/");
	clear_env();
}

static void test_paths_errors(void **state)
{
	struct kmux_paths p;
	char err[256], longp[200];

	(void)state;
	clear_env();
	memset(longp, 'x', sizeof(longp) - 1);
	longp[0] = '/';
	longp[sizeof(longp) - 1] = '\0';
	assert_int_equal(paths_resolve(&p, false, longp, "/s", err, sizeof(err)),
			 -ENAMETOOLONG);
	assert_non_null(strstr(err, "longer than 107 bytes"));
	unsetenv("HOME");
	assert_int_equal(paths_resolve(&p, false, "/x", NULL, err, sizeof(err)),
			 -ENOENT);
	assert_non_null(strstr(err, "KMUX_STATE_DIR"));
}

static void test_paths_make_dir(void **state)
{
	char base[] = "/tmp/kmux-test-paths.XXXXXX", dir[128], err[512];
	struct stat st;

	(void)state;
	assert_non_null(mkdtemp(base));
	snprintf(dir, sizeof(dir), "%s/a/b/c", base);
	assert_int_equal(paths_make_dir(dir, 0700, getuid(), true, err,
					sizeof(err)), 0);
	assert_int_equal(stat(dir, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0700);
	/* Again: already there, fine. */
	assert_int_equal(paths_make_dir(dir, 0700, getuid(), true, err,
					sizeof(err)), 0);
	/* Others may look in a private directory: refused, with the fix. */
	chmod(dir, 0755);
	assert_int_equal(paths_make_dir(dir, 0700, getuid(), true, err,
					sizeof(err)), -EACCES);
	assert_non_null(strstr(err, "chmod 0700"));
	/* A public one (system socket) may be read, not written. */
	assert_int_equal(paths_make_dir(dir, 0755, getuid(), false, err,
					sizeof(err)), 0);
	chmod(dir, 0777);
	assert_int_equal(paths_make_dir(dir, 0755, getuid(), false, err,
					sizeof(err)), -EACCES);
	/* Someone else's directory. */
	chmod(dir, 0700);
	assert_int_equal(paths_make_dir(dir, 0700, getuid() + 1, true, err,
					sizeof(err)), -EACCES);
	assert_non_null(strstr(err, "belongs to uid"));
	/* A file, a symlink. */
	snprintf(dir, sizeof(dir), "%s/file", base);
	fclose(fopen(dir, "w"));
	assert_int_equal(paths_make_dir(dir, 0700, getuid(), true, err,
					sizeof(err)), -ENOTDIR);
	snprintf(dir, sizeof(dir), "%s/link", base);
	snprintf(err, sizeof(err), "%s/a", base);
	assert_int_equal(symlink(err, dir), 0);
	assert_int_equal(paths_make_dir(dir, 0700, getuid(), true, err,
					sizeof(err)), -ENOTDIR);
	snprintf(err, sizeof(err), "rm -rf '%s'", base);
	assert_int_equal(system(err), 0);
}

static void test_fake_parse(void **state)
{
	static const char *const bad[] = {
		"", "2", ":16G", "2:", "2:0", "2:12Q", "0:16G", "65:16G",
		"-1:16G", "x:16G", "2x16G", "1 :16G", NULL,
	};
	uint32_t n;
	uint64_t mem;
	char why[256];

	(void)state;
	assert_int_equal(nvml_fake_parse("2:16G", &n, &mem, why, sizeof(why)), 0);
	assert_int_equal(n, 2);
	assert_int_equal(mem, 16 * GiB);
	assert_int_equal(nvml_fake_parse("64:80GiB", &n, &mem, why, sizeof(why)), 0);
	assert_int_equal(n, 64);
	assert_int_equal(mem, 80 * GiB);
	assert_int_equal(nvml_fake_parse("1:1.5G", &n, &mem, why, sizeof(why)), 0);
	assert_int_equal(mem, GiB + GiB / 2);
	assert_int_equal(nvml_fake_parse("0", &n, &mem, why, sizeof(why)), 0);
	assert_int_equal(n, 0);
	for (int i = 0; bad[i]; i++) {
		why[0] = '\0';
		assert_int_equal(nvml_fake_parse(bad[i], &n, &mem, why,
						 sizeof(why)), -EINVAL);
		assert_non_null(strstr(why, "KMUX_FAKE_GPUS"));
	}
}

static void test_fake_open(void **state)
{
	struct nvml_sample s;
	struct nvml *n;
	char why[256];

	(void)state;
	setenv("KMUX_FAKE_GPUS", "3:8G", 1);
	assert_int_equal(nvml_open(&n, why, sizeof(why)), 0);
	assert_int_equal(nvml_count(n), 3);
	assert_true(nvml_is_fake(n));
	assert_string_equal(nvml_source(n), "KMUX_FAKE_GPUS=3:8G");
	assert_int_equal(nvml_sample(n, 2, &s), 0);
	assert_int_equal(s.mem_total, 8 * GiB);
	assert_int_equal(s.mem_used, 0);
	assert_false(s.util_valid);
	assert_int_equal(nvml_sample(n, 3, &s), -EINVAL);
	nvml_close(n);

	setenv("KMUX_FAKE_GPUS", "0", 1);
	assert_int_equal(nvml_open(&n, why, sizeof(why)), 0);
	assert_int_equal(nvml_count(n), 0);
	assert_non_null(strstr(why, "without GPUs"));
	nvml_close(n);

	setenv("KMUX_FAKE_GPUS", "three", 1);
	assert_int_equal(nvml_open(&n, why, sizeof(why)), -EINVAL);
	assert_null(n);
	unsetenv("KMUX_FAKE_GPUS");
}

static void write_exe(const char *path, mode_t mode)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	fputs("#!/bin/sh\n", f);
	fclose(f);
	assert_int_equal(chmod(path, mode), 0);
}

static void test_mps_find_control(void **state)
{
	char dir[] = "/tmp/kmux-mps-unit.XXXXXX", a[128], b[128], c[128];
	char path[512], buf[PATH_MAX], err[512];
	bool have_fallback = access(MPS_CONTROL_FALLBACK_DIR "/"
				    MPS_CONTROL_NAME, X_OK) == 0;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(a, sizeof(a), "%s/a", dir);
	snprintf(b, sizeof(b), "%s/b", dir);
	snprintf(c, sizeof(c), "%s/c", dir);
	assert_int_equal(mkdir(a, 0700), 0);
	assert_int_equal(mkdir(b, 0700), 0);
	assert_int_equal(mkdir(c, 0700), 0);
	/* b has it, but not executable; c has it: c wins, b is skipped. */
	snprintf(path, sizeof(path), "%s/" MPS_CONTROL_NAME, b);
	write_exe(path, 0600);
	snprintf(path, sizeof(path), "%s/" MPS_CONTROL_NAME, c);
	write_exe(path, 0700);
	snprintf(path, sizeof(path), "%s:%s:%s", a, b, c);
	assert_int_equal(mps_find_control(NULL, path, buf, sizeof(buf), err,
					  sizeof(err)), 0);
	snprintf(path, sizeof(path), "%s/" MPS_CONTROL_NAME, c);
	assert_string_equal(buf, path);

	/* A relative or empty PATH entry is never searched. */
	assert_int_equal(chdir(c), 0);
	if (!have_fallback) {
		assert_int_equal(mps_find_control(NULL, ":.:c", buf,
						  sizeof(buf), err,
						  sizeof(err)), -ENOENT);
		assert_non_null(strstr(err, "not found in PATH or "
				       MPS_CONTROL_FALLBACK_DIR));
		assert_int_equal(mps_find_control(NULL, NULL, buf,
						  sizeof(buf), err,
						  sizeof(err)), -ENOENT);
	}

	/* --mps-control: taken as given, when it is an executable file. */
	assert_int_equal(mps_find_control(path, "", buf, sizeof(buf), err,
					  sizeof(err)), 0);
	assert_string_equal(buf, path);
	snprintf(path, sizeof(path), "%s/" MPS_CONTROL_NAME, b);
	assert_int_equal(mps_find_control(path, NULL, buf, sizeof(buf), err,
					  sizeof(err)), -ENOENT);
	assert_non_null(strstr(err, "not an executable file"));
	assert_int_equal(mps_find_control(a, NULL, buf, sizeof(buf), err,
					  sizeof(err)), -ENOENT);
	snprintf(path, sizeof(path), "%s/missing", a);
	assert_int_equal(mps_find_control(path, NULL, buf, sizeof(buf), err,
					  sizeof(err)), -ENOENT);
	assert_non_null(strstr(err, "No such file"));

	assert_int_equal(chdir("/"), 0);
	snprintf(path, sizeof(path), "rm -rf '%s'", dir);
	assert_int_equal(system(path), 0);
}

static void test_mps_dirs(void **state)
{
	static struct mps m;
	char longsock[PATH_MAX];

	(void)state;
	assert_int_equal(mps_set_dirs(&m, "/run/user/7/kmux/sock"), 0);
	assert_string_equal(m.dir, "/run/user/7/kmux/sock.mps");
	assert_string_equal(m.pipe, "/run/user/7/kmux/sock.mps/pipe");
	assert_string_equal(m.log, "/run/user/7/kmux/sock.mps/log");
	memset(longsock, 'x', sizeof(longsock) - 8);
	longsock[0] = '/';
	longsock[sizeof(longsock) - 8] = '\0';
	assert_int_equal(mps_set_dirs(&m, longsock), -ENAMETOOLONG);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_paths_defaults),
		cmocka_unit_test(test_paths_errors),
		cmocka_unit_test(test_paths_make_dir),
		cmocka_unit_test(test_fake_parse),
		cmocka_unit_test(test_fake_open),
		cmocka_unit_test(test_mps_find_control),
		cmocka_unit_test(test_mps_dirs),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
