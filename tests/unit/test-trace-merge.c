/*
 * test-trace-merge.c - tests of `kmux trace`'s two halves.
 *
 * 1. The CLI side (src/cli/trace-merge.c) from fixture files written below:
 *    several processes, per-thread streams, alloc/free giving peak and
 *    current memory, kernels sorted by time then count, timing on and off,
 *    overlapping launches split into lanes, a truncated last line from a
 *    killed process, garbage lines, the written JSON's layout.
 * 2. The preload's recorder (src/preload/trace.c) in child processes that
 *    record through the real API against a fake driver table, exit (or are
 *    killed), and leave files that the merge reads back: threads, names that
 *    need escaping, launches with many allocations, full buffers, the
 *    periodic flush, fork, launch timing with CUDA events.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "real.h"
#include "trace.h"
#include "cli/trace-merge.h"

/* --- helpers --------------------------------------------------------------- */

static char *tmpdir_new(void)
{
	char tmpl[] = "/tmp/kmux-test-trace.XXXXXX";
	char *d = mkdtemp(tmpl);

	assert_non_null(d);
	return strdup(d);
}

static void tmpdir_remove(char *dir)
{
	char path[512];
	struct dirent *de;
	DIR *d = opendir(dir);

	assert_non_null(d);
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		unlink(path);
	}
	closedir(d);
	rmdir(dir);
	free(dir);
}

static void write_file(const char *dir, const char *name, const char *text)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	assert_int_equal(fclose(f), 0);
}

static struct trace_merge *merge_dir(const char *dir, double wall_s)
{
	struct trace_merge *m = trace_merge_new();

	assert_non_null(m);
	assert_int_equal(trace_merge_add_dir(m, dir), 0);
	assert_int_equal(trace_merge_finish(m, wall_s), 0);
	return m;
}

static struct trace_merge *merge_text(const char *text)
{
	struct trace_merge *m = trace_merge_new();

	assert_non_null(m);
	assert_int_equal(trace_merge_add_buffer(m, "fixture", text,
						strlen(text)), 0);
	assert_int_equal(trace_merge_finish(m, 0), 0);
	return m;
}

/* The merged trace as written, parsed back. */
static cJSON *written(const struct trace_merge *m)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	cJSON *j;

	assert_non_null(f);
	assert_int_equal(trace_merge_write(m, f), 0);
	assert_int_equal(fclose(f), 0);
	j = cJSON_ParseWithLength(buf, len);
	if (!j)
		fprintf(stderr, "not JSON:\n%s\n", buf);
	assert_non_null(j);
	free(buf);
	return j;
}

static const struct trace_kernel_stat *kstat(const struct trace_summary *s,
					     const char *name)
{
	for (size_t i = 0; i < s->nkernels; i++)
		if (strcmp(s->kernels[i].name, name) == 0)
			return &s->kernels[i];
	return NULL;
}

static int warned(const struct trace_merge *m, const char *needle)
{
	for (size_t i = 0; i < trace_merge_nkept_warnings(m); i++)
		if (strstr(trace_merge_warning(m, i), needle))
			return 1;
	return 0;
}

static double num(const cJSON *o, const char *key)
{
	const cJSON *it = cJSON_GetObjectItemCaseSensitive(o, key);

	assert_true(cJSON_IsNumber(it));
	return it->valuedouble;
}

static const char *str(const cJSON *o, const char *key)
{
	const cJSON *it = cJSON_GetObjectItemCaseSensitive(o, key);

	assert_true(cJSON_IsString(it));
	return it->valuestring;
}

/* Complete events ("ph":"X") named name, in trace order. */
static int find_x(const cJSON *trace, const char *name, const cJSON **out,
		  int max)
{
	const cJSON *ev = cJSON_GetObjectItemCaseSensitive(trace, "traceEvents");
	const cJSON *e;
	int n = 0;

	cJSON_ArrayForEach(e, ev) {
		if (strcmp(str(e, "ph"), "X") || strcmp(str(e, "name"), name))
			continue;
		if (n < max)
			out[n] = e;
		n++;
	}
	return n;
}

/* thread_name metadata of (pid, tid). */
static const char *track_name(const cJSON *trace, int pid, int tid)
{
	const cJSON *ev = cJSON_GetObjectItemCaseSensitive(trace, "traceEvents");
	const cJSON *e;

	cJSON_ArrayForEach(e, ev) {
		if (strcmp(str(e, "ph"), "M") ||
		    strcmp(str(e, "name"), "thread_name"))
			continue;
		if ((int)num(e, "pid") == pid && (int)num(e, "tid") == tid)
			return str(cJSON_GetObjectItem(e, "args"), "name");
	}
	return NULL;
}

/* --- fixtures -------------------------------------------------------------- */

/*
 * Two processes.  100 allocates 1 + 2 MiB, launches on the legacy stream
 * and on two threads' per-thread default streams, frees 1 MiB, exits.  200
 * starts 10 us later, allocates 4 MiB and is killed (no exit line): the
 * peak is 7 MiB and 2 + 4 MiB were never freed.
 */
static const char fixture_p100[] =
	"{\"type\":\"process\",\"version\":1,\"pid\":100,\"ppid\":1,"
	"\"cmdline\":\"app one\",\"t0\":1000000000,\"wall0\":5,\"timing\":0}\n"
	"{\"type\":\"alloc\",\"tid\":100,\"t\":100,\"id\":1,\"base\":\"0x7f0000000000\","
	"\"size\":1048576,\"kind\":\"device\",\"dev\":0}\n"
	"{\"type\":\"alloc\",\"tid\":100,\"t\":200,\"id\":2,\"base\":\"0x7f0000100000\","
	"\"size\":2097152,\"kind\":\"device\",\"dev\":0}\n"
	"{\"type\":\"alloc\",\"tid\":100,\"t\":250,\"id\":3,\"base\":\"0x5500\","
	"\"size\":999999999,\"kind\":\"host\",\"dev\":-1}\n"
	"{\"type\":\"copy\",\"tid\":100,\"t\":500,\"d\":300,\"kind\":\"HtoD\","
	"\"bytes\":4194304,\"dst\":\"0x7f0000000000\",\"src\":\"0x5500\","
	"\"s\":\"0x1\",\"async\":0,\"r\":0}\n"
	"{\"type\":\"copy\",\"tid\":100,\"t\":600,\"d\":10,\"kind\":\"memset\","
	"\"bytes\":1024,\"dst\":\"0x7f0000000000\",\"src\":\"0x0\",\"s\":\"0x1\","
	"\"async\":1,\"r\":0}\n"
	"{\"type\":\"launch\",\"tid\":100,\"t\":1000,\"d\":2000,\"api\":\"cuLaunchKernel\","
	"\"name\":\"vec_add\",\"s\":\"0x1\",\"grid\":[16,1,1],\"block\":[256,1,1],"
	"\"shmem\":0,\"allocs\":[1,2],\"r\":0}\n"
	"{\"type\":\"launch\",\"tid\":100,\"t\":4000,\"d\":2000,\"api\":\"cuLaunchKernel\","
	"\"name\":\"vec_add\",\"s\":\"0x1\",\"grid\":[16,1,1],\"block\":[256,1,1],"
	"\"shmem\":0,\"allocs\":[1,2],\"r\":0}\n"
	"{\"type\":\"launch\",\"tid\":101,\"t\":5000,\"d\":10000,\"api\":\"cuLaunchKernelEx\","
	"\"name\":\"scale\",\"s\":\"0x2\",\"grid\":[1,1,1],\"block\":[32,1,1],"
	"\"shmem\":128,\"allocs\":[],\"r\":0}\n"
	"{\"type\":\"launch\",\"tid\":102,\"t\":5000,\"d\":1000,\"api\":\"cuLaunchKernel\","
	"\"name\":\"scale\",\"s\":\"0x2\",\"grid\":[1,1,1],\"block\":[32,1,1],"
	"\"shmem\":0,\"allocs\":[2],\"r\":0}\n"
	"{\"type\":\"launch\",\"tid\":100,\"t\":16000,\"d\":100,\"api\":\"cuGraphLaunch\","
	"\"s\":\"0x1\",\"r\":0}\n"
	"{\"type\":\"sync\",\"tid\":100,\"t\":20000,\"d\":5000,\"kind\":\"ctx\","
	"\"obj\":\"0x0\",\"r\":0}\n"
	"{\"type\":\"sync\",\"tid\":100,\"t\":25000,\"d\":10,\"kind\":\"stream_wait_event\","
	"\"obj\":\"0x1\",\"r\":0}\n"
	"{\"type\":\"free\",\"tid\":100,\"t\":30000,\"id\":1,\"base\":\"0x7f0000000000\","
	"\"size\":1048576,\"kind\":\"device\",\"dev\":0}\n"
	"{\"type\":\"exit\",\"t\":40000,\"timing_dropped\":0}\n";

static const char fixture_p200[] =
	"{\"type\":\"process\",\"version\":1,\"pid\":200,\"ppid\":100,"
	"\"cmdline\":\"app two --flag\",\"t0\":1000010000,\"wall0\":6,\"timing\":0}\n"
	"{\"type\":\"alloc\",\"tid\":200,\"t\":0,\"id\":1,\"base\":\"0x7e0000000000\","
	"\"size\":4194304,\"kind\":\"device\",\"dev\":0}\n"
	"{\"type\":\"launch\",\"tid\":200,\"t\":100,\"d\":50000,\"api\":\"cuLaunchKernel\","
	"\"name\":\"reduce\",\"s\":\"0x7f00aa\",\"grid\":[1,1,1],\"block\":[1,1,1],"
	"\"shmem\":0,\"allocs\":[1],\"r\":0}\n"
	"{\"type\":\"launch\",\"tid\":200,\"t\":60000,\"d\":1,\"api\":\"cuLaunchKernel\","
	"\"name\":\"reduce\",\"s\":\"0x7f00aa\",\"grid\":[1,1,1],\"block\":[1,1,1],"
	"\"shmem\":0,\"allocs\":[1],\"r\":700}\n"
	"{\"type\":\"launch\",\"tid\":200,\"t\":70000,";	/* killed mid-line */

static void test_two_processes(void **state)
{
	char *dir = tmpdir_new();
	struct trace_merge *m;
	const struct trace_summary *s;
	const struct trace_kernel_stat *k;

	(void)state;
	write_file(dir, "kmux-trace.100.jsonl", fixture_p100);
	write_file(dir, "kmux-trace.200.jsonl", fixture_p200);
	write_file(dir, "unrelated.txt", "not a trace\n");
	m = merge_dir(dir, 0.5);
	s = trace_merge_summary(m);

	assert_int_equal(s->processes, 2);
	assert_int_equal(s->launches, 7);
	assert_int_equal(s->kernel_launches, 6);
	assert_int_equal(s->graph_launches, 1);
	assert_int_equal(s->failed_launches, 1);
	assert_int_equal(s->syncs, 1);		/* stream_wait_event is not one */
	assert_int_equal(s->memcpys, 1);
	assert_int_equal(s->memsets, 1);
	/* Host allocations are not device memory. */
	assert_int_equal(s->peak_device_bytes, 7 << 20);
	assert_int_equal(s->current_device_bytes, 6 << 20);
	assert_false(s->timing);
	assert_true(s->wall_s == 0.5);
	assert_true(fabs(s->launches_per_s - 14.0) < 1e-9);

	/* By total host time: reduce 50.001 us, scale 11 us, vec_add 4 us. */
	assert_int_equal(s->nkernels, 3);
	assert_string_equal(s->kernels[0].name, "reduce");
	assert_string_equal(s->kernels[1].name, "scale");
	assert_string_equal(s->kernels[2].name, "vec_add");
	k = kstat(s, "vec_add");
	assert_int_equal(k->count, 2);
	assert_int_equal(k->total_ns, 4000);

	/* The killed process's half line is skipped, loudly. */
	assert_int_equal(s->lines_skipped, 1);
	assert_true(warned(m, "kmux-trace.200.jsonl:5: incomplete last line"));
	trace_merge_free(m);
	tmpdir_remove(dir);
}

static void test_written_layout(void **state)
{
	char *dir = tmpdir_new();
	struct trace_merge *m;
	const cJSON *x[8], *ev, *e, *kmux, *args, *procs;
	cJSON *t;
	int tids[3], ncounters = 0, nmeta = 0;

	(void)state;
	write_file(dir, "kmux-trace.100.jsonl", fixture_p100);
	write_file(dir, "kmux-trace.200.jsonl", fixture_p200);
	m = merge_dir(dir, 0);
	t = written(m);

	assert_string_equal(str(t, "displayTimeUnit"), "ns");
	kmux = cJSON_GetObjectItemCaseSensitive(t, "kmux");
	assert_int_equal((int)num(kmux, "version"), 1);
	procs = cJSON_GetObjectItemCaseSensitive(kmux, "processes");
	assert_int_equal(cJSON_GetArraySize(procs), 2);
	assert_int_equal((int)num(cJSON_GetArrayItem(procs, 0), "pid"), 100);
	assert_string_equal(str(cJSON_GetArrayItem(procs, 1), "cmdline"),
			    "app two --flag");
	assert_int_equal((int)num(cJSON_GetObjectItem(kmux, "summary"),
				  "launches"), 7);

	/* Every event is well formed; categories are the documented ones. */
	ev = cJSON_GetObjectItemCaseSensitive(t, "traceEvents");
	cJSON_ArrayForEach(e, ev) {
		const char *ph = str(e, "ph");

		num(e, "pid");
		if (!strcmp(ph, "M")) {
			nmeta++;
			continue;
		}
		if (!strcmp(ph, "C")) {
			assert_string_equal(str(e, "name"), "device memory");
			num(cJSON_GetObjectItem(e, "args"), "bytes");
			ncounters++;
			continue;
		}
		assert_string_equal(ph, "X");
		num(e, "ts");
		num(e, "dur");
		num(e, "tid");
		assert_non_null(strstr(" kernel memcpy memset sync alloc graph "
					"hostfunc ", str(e, "cat")));
	}
	/* 4 device allocs/frees + each process's release at its end. */
	assert_int_equal(ncounters, 6);
	/* 2 process names; name + sort index of 4 + 2 tracks. */
	assert_int_equal(nmeta, 2 + 2 * 6);

	/* Kernel launch: times in us from the earliest t0, args. */
	assert_int_equal(find_x(t, "vec_add", x, 8), 2);
	assert_true(fabs(num(x[0], "ts") - 1.0) < 1e-9);
	assert_true(fabs(num(x[0], "dur") - 2.0) < 1e-9);
	assert_string_equal(str(x[0], "cat"), "kernel");
	args = cJSON_GetObjectItem(x[0], "args");
	assert_string_equal(str(args, "stream"), "0x1");
	assert_string_equal(str(args, "api"), "cuLaunchKernel");
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(args, "allocs")), 2);
	assert_int_equal((int)cJSON_GetArrayItem(cJSON_GetObjectItem(args,
					"grid"), 0)->valuedouble, 16);
	assert_string_equal(track_name(t, 100, (int)num(x[0], "tid")),
			    "default stream (legacy)");

	/* One track per per-thread default stream. */
	assert_int_equal(find_x(t, "scale", x, 8), 2);
	tids[0] = (int)num(x[0], "tid");
	tids[1] = (int)num(x[1], "tid");
	assert_int_not_equal(tids[0], tids[1]);
	assert_non_null(strstr(track_name(t, 100, tids[0]),
			       "default stream (per-thread, thread 10"));

	/* Process 200 is shifted by its t0: 10 us + 0.1 us. */
	assert_int_equal(find_x(t, "reduce", x, 8), 2);
	assert_true(fabs(num(x[0], "ts") - 10.1) < 1e-9);
	assert_int_equal((int)num(x[0], "pid"), 200);
	tids[2] = (int)num(x[0], "tid");
	assert_string_equal(track_name(t, 200, tids[2]), "stream 0x7f00aa");

	/* Copies are named by direction and size; syncs by their API. */
	assert_int_equal(find_x(t, "HtoD 4.0 MiB", x, 8), 1);
	assert_string_equal(str(x[0], "cat"), "memcpy");
	assert_int_equal(find_x(t, "memset 1.0 KiB", x, 8), 1);
	assert_string_equal(str(x[0], "cat"), "memset");
	assert_int_equal(find_x(t, "cuCtxSynchronize", x, 8), 1);
	assert_string_equal(str(x[0], "cat"), "sync");
	assert_string_equal(track_name(t, 100, (int)num(x[0], "tid")),
			    "host thread 100");
	assert_int_equal(find_x(t, "graph launch", x, 8), 1);
	assert_string_equal(str(x[0], "cat"), "graph");
	assert_int_equal(find_x(t, "alloc 2.0 MiB (device)", x, 8), 1);
	assert_string_equal(str(x[0], "cat"), "alloc");

	cJSON_Delete(t);
	trace_merge_free(m);
	tmpdir_remove(dir);
}

/* Host call times of two threads on one stream that overlap: two lanes. */
static void test_overlap_lanes(void **state)
{
	static const char text[] =
		"{\"type\":\"process\",\"pid\":300,\"t0\":0}\n"
		"{\"type\":\"launch\",\"tid\":1,\"t\":0,\"d\":100,\"api\":\"cuLaunchKernel\","
		"\"name\":\"a\",\"s\":\"0x55\"}\n"
		"{\"type\":\"launch\",\"tid\":2,\"t\":50,\"d\":100,\"api\":\"cuLaunchKernel\","
		"\"name\":\"b\",\"s\":\"0x55\"}\n"
		"{\"type\":\"launch\",\"tid\":1,\"t\":10,\"d\":20,\"api\":\"cuLaunchKernel\","
		"\"name\":\"nested\",\"s\":\"0x55\"}\n"
		"{\"type\":\"launch\",\"tid\":1,\"t\":200,\"d\":10,\"api\":\"cuLaunchKernel\","
		"\"name\":\"c\",\"s\":\"0x55\"}\n";
	struct trace_merge *m = merge_text(text);
	const cJSON *a, *b, *c, *n;
	cJSON *t = written(m);

	(void)state;
	assert_int_equal(find_x(t, "a", &a, 1), 1);
	assert_int_equal(find_x(t, "b", &b, 1), 1);
	assert_int_equal(find_x(t, "c", &c, 1), 1);
	assert_int_equal(find_x(t, "nested", &n, 1), 1);
	assert_int_equal((int)num(a, "tid"), (int)num(n, "tid"));
	assert_int_equal((int)num(a, "tid"), (int)num(c, "tid"));
	assert_int_not_equal((int)num(a, "tid"), (int)num(b, "tid"));
	assert_string_equal(track_name(t, 300, (int)num(a, "tid")),
			    "stream 0x55");
	assert_string_equal(track_name(t, 300, (int)num(b, "tid")),
			    "stream 0x55 #2");
	cJSON_Delete(t);
	trace_merge_free(m);
}

/* --timing: ts/dur are the GPU times, joined from "gpu" lines by seq. */
static void test_timing(void **state)
{
	static const char text[] =
		"{\"type\":\"process\",\"pid\":400,\"t0\":1000,\"timing\":1}\n"
		"{\"type\":\"gpu\",\"seq\":1,\"t\":5000,\"d\":3000}\n"
		"{\"type\":\"launch\",\"tid\":4,\"t\":100,\"d\":7,\"api\":\"cuLaunchKernel\","
		"\"name\":\"k1\",\"s\":\"0x1\",\"seq\":1}\n"
		"{\"type\":\"launch\",\"tid\":4,\"t\":200,\"d\":7,\"api\":\"cuLaunchKernel\","
		"\"name\":\"k1\",\"s\":\"0x1\",\"seq\":2}\n"
		"{\"type\":\"launch\",\"tid\":4,\"t\":300,\"d\":7,\"api\":\"cuLaunchKernel\","
		"\"name\":\"k2\",\"s\":\"0x1\",\"seq\":3}\n"
		"{\"type\":\"gpu\",\"seq\":3,\"t\":9000,\"d\":1000}\n"
		"{\"type\":\"gpu\",\"seq\":99,\"t\":9000,\"d\":1000}\n"
		"{\"type\":\"exit\",\"t\":20000,\"timing_dropped\":1}\n";
	struct trace_merge *m = merge_text(text);
	const struct trace_summary *s = trace_merge_summary(m);
	const struct trace_kernel_stat *k;
	const cJSON *x[4], *args;
	cJSON *t = written(m);

	(void)state;
	assert_true(s->timing);
	assert_int_equal(s->timing_unresolved, 1);
	k = kstat(s, "k1");
	assert_int_equal(k->count, 2);
	assert_int_equal(k->timed, 1);
	assert_int_equal(k->total_ns, 3000);
	assert_string_equal(s->kernels[0].name, "k1");

	assert_int_equal(find_x(t, "k1", x, 4), 2);
	/* In time order: the unresolved one at its host time comes first. */
	args = cJSON_GetObjectItem(x[0], "args");
	assert_string_equal(str(args, "gpu"), "unresolved");
	assert_true(fabs(num(x[0], "ts") - 0.2) < 1e-9);
	x[0] = x[1];
	/* GPU start 5 us after t0 (t0 is time zero), 3 us long. */
	assert_true(fabs(num(x[0], "ts") - 5.0) < 1e-9);
	assert_true(fabs(num(x[0], "dur") - 3.0) < 1e-9);
	args = cJSON_GetObjectItem(x[0], "args");
	assert_true(fabs(num(args, "gpu_dur") - 3.0) < 1e-9);
	assert_true(fabs(num(args, "launch_us") - 0.007) < 1e-9);
	cJSON_Delete(t);
	trace_merge_free(m);
}

/* Without --timing, kernel time is the host launch call. */
static void test_sort_ties(void **state)
{
	static const char text[] =
		"{\"type\":\"process\",\"pid\":5,\"t0\":0}\n"
		"{\"type\":\"launch\",\"tid\":5,\"t\":0,\"d\":10,\"api\":\"cuLaunchKernel\","
		"\"name\":\"once\",\"s\":\"0x1\"}\n"
		"{\"type\":\"launch\",\"tid\":5,\"t\":20,\"d\":5,\"api\":\"cuLaunchKernel\","
		"\"name\":\"twice\",\"s\":\"0x1\"}\n"
		"{\"type\":\"launch\",\"tid\":5,\"t\":30,\"d\":5,\"api\":\"cuLaunchKernel\","
		"\"name\":\"twice\",\"s\":\"0x1\"}\n"
		"{\"type\":\"launch\",\"tid\":5,\"t\":40,\"d\":1,\"api\":\"cuLaunchHostFunc\","
		"\"s\":\"0x1\"}\n";
	struct trace_merge *m = merge_text(text);
	const struct trace_summary *s = trace_merge_summary(m);

	(void)state;
	assert_false(s->timing);
	assert_int_equal(s->nkernels, 2);
	/* Equal totals: more launches first. */
	assert_string_equal(s->kernels[0].name, "twice");
	assert_string_equal(s->kernels[1].name, "once");
	assert_int_equal(s->host_funcs, 1);
	assert_int_equal(s->launches, 4);
	trace_merge_free(m);
}

/* Garbage never crashes and never gets in: each bad line is one warning. */
static void test_garbage(void **state)
{
	static const char text[] =
		"{\"type\":\"launch\",\"tid\":1,\"t\":0,\"d\":1,\"api\":\"cuLaunchKernel\","
		"\"s\":\"0x1\"}\n"				/* before header */
		"{\"type\":\"process\",\"pid\":7,\"t0\":0,\"version\":1}\n"
		"not json at all\n"
		"{}\n"
		"[1,2,3]\n"
		"{\"type\":\"launch\"}\n"
		"{\"type\":\"nonsense\",\"t\":0}\n"
		"{\"type\":\"launch\",\"tid\":1,\"t\":0,\"d\":1,\"api\":\"cuLaunchKernel\","
		"\"s\":\"zz\"}\n"
		"{\"type\":\"launch\",\"tid\":1,\"t\":1e400,\"d\":1,\"api\":\"cuLaunchKernel\","
		"\"s\":\"0x1\"}\n"
		"{\"type\":\"launch\",\"tid\":1,\"t\":0,\"d\":-5,\"api\":\"cuLaunchKernel\","
		"\"s\":\"0x1\"}\n"
		"{\"type\":\"launch\",\"tid\":1,\"t\":0,\"d\":1,\"api\":\"cuLaunchKernel\","
		"\"s\":\"0x1\",\"grid\":[1,2]}\n"
		"{\"type\":\"launch\",\"tid\":1,\"t\":0,\"d\":1,\"api\":\"cuLaunchKernel\","
		"\"s\":\"0x11112222333344445\"}\n"
		"{\"type\":\"alloc\",\"tid\":1,\"t\":0,\"id\":-1,\"size\":1,\"kind\":\"device\"}\n"
		"{\"type\":\"alloc\",\"tid\":1,\"t\":0,\"id\":1.5,\"size\":1,\"kind\":\"device\"}\n"
		"{\"type\":\"gpu\",\"seq\":0,\"t\":0,\"d\":0}\n"
		"{\"type\":\"process\",\"pid\":7,\"t0\":0,\"version\":2}\n"
		"{\"type\":\"sync\",\"tid\":1,\"t\":0,\"d\":1,\"kind\":\"ctx\"} trailing\n"
		"\n"
		"{\"type\":\"sync\",\"tid\":1,\"t\":0,\"d\":1,\"kind\":\"ctx\"}\n";
	struct trace_merge *m = merge_text(text);
	const struct trace_summary *s = trace_merge_summary(m);
	cJSON *t;

	(void)state;
	assert_int_equal(s->processes, 1);
	assert_int_equal(s->launches, 0);
	assert_int_equal(s->syncs, 1);
	assert_int_equal(s->lines_skipped, 16);
	assert_int_equal(trace_merge_nwarnings(m), 16);
	assert_true(warned(m, "fixture:1: record before the process header"));
	assert_true(warned(m, "fixture:3: bad line skipped: not JSON"));
	assert_true(warned(m, "unsupported format version 2"));
	assert_true(warned(m, "\"s\" is not a hex string"));
	t = written(m);
	cJSON_Delete(t);
	trace_merge_free(m);
}

/* exec'd image of the same pid: a second header, one process. */
static void test_exec_segments(void **state)
{
	static const char text[] =
		"{\"type\":\"process\",\"pid\":9,\"t0\":1000,\"cmdline\":\"sh -c x\"}\n"
		"{\"type\":\"launch\",\"tid\":9,\"t\":0,\"d\":1,\"api\":\"cuLaunchKernel\","
		"\"name\":\"first\",\"s\":\"0x1\"}\n"
		"{\"type\":\"process\",\"pid\":9,\"t0\":5000,\"cmdline\":\"x\"}\n"
		"{\"type\":\"launch\",\"tid\":9,\"t\":0,\"d\":1,\"api\":\"cuLaunchKernel\","
		"\"name\":\"second\",\"s\":\"0x1\"}\n";
	struct trace_merge *m = merge_text(text);
	const cJSON *x;
	cJSON *t = written(m);

	(void)state;
	assert_int_equal(trace_merge_summary(m)->processes, 1);
	assert_int_equal(find_x(t, "second", &x, 1), 1);
	/* Each segment's times are relative to its own t0. */
	assert_true(fabs(num(x, "ts") - 4.0) < 1e-9);
	assert_string_equal(str(cJSON_GetArrayItem(cJSON_GetObjectItem(
		cJSON_GetObjectItem(t, "kmux"), "processes"), 0), "cmdline"),
		"x");
	cJSON_Delete(t);
	trace_merge_free(m);
}

static void test_empty(void **state)
{
	char *dir = tmpdir_new();
	struct trace_merge *m = merge_dir(dir, 1.0);
	const struct trace_summary *s = trace_merge_summary(m);
	cJSON *t = written(m);
	char *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);

	(void)state;
	assert_int_equal(s->processes, 0);
	assert_int_equal(s->launches, 0);
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(t,
						"traceEvents")), 0);
	trace_merge_print_summary(m, f, "out.json");
	fclose(f);
	assert_non_null(strstr(out, "kmux trace: wrote out.json (0 processes, "
			       "0 launches, 0 launches/s, 0 syncs, 0 copies)"));
	free(out);
	cJSON_Delete(t);
	trace_merge_free(m);
	tmpdir_remove(dir);
}

static void test_human_summary(void **state)
{
	char *dir = tmpdir_new();
	struct trace_merge *m;
	char *out = NULL;
	size_t len = 0;
	FILE *f;

	(void)state;
	write_file(dir, "kmux-trace.100.jsonl", fixture_p100);
	write_file(dir, "kmux-trace.200.jsonl", fixture_p200);
	m = merge_dir(dir, 2.0);
	f = open_memstream(&out, &len);
	trace_merge_print_summary(m, f, "kmux-trace.json");
	fclose(f);
	assert_non_null(strstr(out, "kmux trace: wrote kmux-trace.json "
			       "(2 processes, 7 launches, 3.5 launches/s, "
			       "1 syncs, 1 copies)\n"));
	assert_non_null(strstr(out, "device memory: peak 7.0 MiB, at exit "
			       "6.0 MiB\n"));
	assert_non_null(strstr(out, "top kernels (host launch time)"));
	assert_non_null(strstr(out, "  reduce "));
	assert_true(strstr(out, "reduce") < strstr(out, "vec_add"));
	free(out);
	trace_merge_free(m);
	tmpdir_remove(dir);
}

static void test_line_parse(void **state)
{
	static const char line[] =
		"{\"type\":\"launch\",\"tid\":-3,\"t\":-10,\"d\":4,\"api\":\"cuLaunchCooperativeKernel\","
		"\"name\":\"q\\\"\\\\\\n\\u0001\",\"s\":\"0xFFFFFFFFFFFFFFFF\",\"grid\":[4294967295,1,2],"
		"\"block\":[1,2,3],\"shmem\":49152,\"allocs\":[18446744073709549568,1],"
		"\"r\":-1,\"kflags\":6,\"seq\":12}";
	struct trace_line l;
	char err[128];

	(void)state;
	assert_int_equal(trace_line_parse(line, strlen(line), &l, err,
					  sizeof(err)), 0);
	assert_int_equal(l.type, TL_LAUNCH);
	assert_int_equal(l.tid, -3);
	assert_int_equal(l.t, -10);
	assert_int_equal(l.api, TL_API_LAUNCH_COOP);
	assert_string_equal(l.name, "q\"\\\n\x01");
	assert_true(l.stream == UINT64_MAX);
	assert_int_equal(l.grid[0], 4294967295u);
	assert_int_equal(l.block[2], 3);
	assert_int_equal(l.shmem, 49152);
	assert_int_equal(l.nallocs, 2);
	assert_true(l.allocs[0] == 18446744073709549568ull);
	assert_int_equal(l.result, -1);
	assert_int_equal(l.kflags, 6);
	assert_int_equal(l.seq, 12);
	trace_line_release(&l);

	/* Only the given length counts, and it must be one object. */
	assert_int_equal(trace_line_parse("{\"type\":\"exit\",\"t\":1}xyz", 21,
					  &l, err, sizeof(err)), 0);
	trace_line_release(&l);
	assert_int_equal(trace_line_parse("{\"type\":\"exit\",\"t\":1}{}", 23,
					  &l, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "trailing characters after JSON");
	assert_int_equal(trace_line_parse("", 0, &l, err, sizeof(err)),
			 -EINVAL);
}

/* The memory manager's lines become a counter track of their own. */
static void test_mm_counter(void **state)
{
	static const char fix[] =
		"{\"type\":\"process\",\"version\":1,\"pid\":300,\"ppid\":1,"
		"\"cmdline\":\"mm\",\"t0\":1000000000,\"wall0\":5,\"timing\":0}\n"
		"{\"type\":\"mm\",\"t\":1000,\"resident\":0,\"evicted\":0,"
		"\"reserved\":4194304}\n"
		"{\"type\":\"mm\",\"t\":2000,\"resident\":4194304,"
		"\"evicted\":0,\"reserved\":4194304}\n"
		"{\"type\":\"mm\",\"t\":3000,\"resident\":0,"
		"\"evicted\":4194304,\"reserved\":4194304}\n"
		"{\"type\":\"exit\",\"t\":4000,\"timing_dropped\":0}\n";
	char *dir = tmpdir_new(), err[128];
	const cJSON *ev, *e, *args;
	struct trace_merge *m;
	struct trace_line l;
	double last_evicted = -1;
	int n = 0;
	cJSON *t;

	(void)state;
	/* Every field is required. */
	assert_int_equal(trace_line_parse("{\"type\":\"mm\",\"t\":1,"
					  "\"resident\":1,\"reserved\":1}",
					  49, &l, err, sizeof(err)), -EINVAL);
	write_file(dir, "kmux-trace.300.jsonl", fix);
	m = merge_dir(dir, 0);
	t = written(m);
	assert_int_equal(trace_merge_summary(m)->lines_skipped, 0);
	ev = cJSON_GetObjectItemCaseSensitive(t, "traceEvents");
	cJSON_ArrayForEach(e, ev) {
		if (strcmp(str(e, "ph"), "C") ||
		    strcmp(str(e, "name"), "kmux memory manager"))
			continue;
		args = cJSON_GetObjectItem(e, "args");
		assert_int_equal((int)num(e, "pid"), 300);
		if (n == 1)
			assert_true(num(args, "resident") == 4194304);
		/* Never backed: the whole range first, then nothing. */
		assert_true(num(args, "reserved") == (n == 0 ? 4194304 : 0));
		last_evicted = num(args, "evicted");
		n++;
	}
	assert_int_equal(n, 3);
	assert_true(last_evicted == 4194304);
	cJSON_Delete(t);
	trace_merge_free(m);
	tmpdir_remove(dir);
}

static void test_formats(void **state)
{
	char b[32];

	(void)state;
	trace_fmt_bytes(b, sizeof(b), 0);
	assert_string_equal(b, "0 B");
	trace_fmt_bytes(b, sizeof(b), 1023);
	assert_string_equal(b, "1023 B");
	trace_fmt_bytes(b, sizeof(b), 4 << 20);
	assert_string_equal(b, "4.0 MiB");
	trace_fmt_bytes(b, sizeof(b), 1610612736);
	assert_string_equal(b, "1.5 GiB");
	trace_fmt_bytes(b, sizeof(b), UINT64_MAX);
	assert_string_equal(b, "16.0 EiB");
	trace_fmt_ns(b, sizeof(b), 12300);
	assert_string_equal(b, "12.3 us");
	trace_fmt_ns(b, sizeof(b), 12.3e6);
	assert_string_equal(b, "12.3 ms");
	trace_fmt_ns(b, sizeof(b), 999);
	assert_string_equal(b, "999 ns");
	trace_fmt_ns(b, sizeof(b), 2.5e9);
	assert_string_equal(b, "2.50 s");
	trace_fmt_count(b, sizeof(b), 56700);
	assert_string_equal(b, "56.7k");
	trace_fmt_count(b, sizeof(b), 12);
	assert_string_equal(b, "12");
	trace_fmt_count(b, sizeof(b), 0.5);
	assert_string_equal(b, "0.5");
	trace_fmt_count(b, sizeof(b), 3.2e6);
	assert_string_equal(b, "3.2M");
}

/* --- the recorder, in child processes, with a fake driver --------------- */

struct kmux_real_table kmux_real;
atomic_int kmux_real_state;

/* A failed check in a child: say where, and exit non-zero. */
#define CHILD_CHECK(cond) do {						\
	if (!(cond)) {							\
		fprintf(stderr, "child check failed at line %d: %s\n",	\
			__LINE__, #cond);				\
		_exit(3);						\
	}								\
} while (0)

struct CUevent_st {
	int64_t gpu;		/* fake GPU clock when recorded */
	int recorded, not_ready;
};

struct CUctx_st {
	int unused;
};

static struct CUctx_st fake_ctx;
static int64_t fake_gpu_clock = 1000000000;
static int fake_not_ready;
static int fake_events_live;
static int fake_capturing;

static CUresult fake_event_create(CUevent *ev, unsigned int flags)
{
	(void)flags;
	*ev = calloc(1, sizeof(**ev));
	if (!*ev)
		return CUDA_ERROR_OUT_OF_MEMORY;
	fake_events_live++;
	return CUDA_SUCCESS;
}

static CUresult fake_event_record(CUevent ev, CUstream s)
{
	(void)s;
	/* Never while capturing: that would put it in the graph. */
	CHILD_CHECK(!fake_capturing);
	ev->gpu = fake_gpu_clock;
	ev->recorded = 1;
	ev->not_ready = fake_not_ready;
	return CUDA_SUCCESS;
}

static CUresult fake_event_query(CUevent ev)
{
	return ev->not_ready ? CUDA_ERROR_NOT_READY : CUDA_SUCCESS;
}

static CUresult fake_event_sync(CUevent ev)
{
	ev->not_ready = 0;
	return CUDA_SUCCESS;
}

static CUresult fake_elapsed(float *ms, CUevent a, CUevent b)
{
	if (!a->recorded || !b->recorded)
		return CUDA_ERROR_INVALID_HANDLE;
	if (a->not_ready || b->not_ready)
		return CUDA_ERROR_NOT_READY;
	*ms = (float)((double)(b->gpu - a->gpu) / 1e6);
	return CUDA_SUCCESS;
}

static CUresult fake_event_destroy(CUevent ev)
{
	free(ev);
	fake_events_live--;
	return CUDA_SUCCESS;
}

static CUresult fake_ctx_current(CUcontext *c)
{
	*c = &fake_ctx;
	return CUDA_SUCCESS;
}

/* Graph capture: cuStreamIsCapturing and the thread's capture mode. */
static CUstreamCaptureMode fake_mode = CU_STREAM_CAPTURE_MODE_GLOBAL;
static int fake_handle;

static CUresult fake_is_capturing(CUstream s, CUstreamCaptureStatus *st)
{
	(void)s;
	*st = fake_capturing ? CU_STREAM_CAPTURE_STATUS_ACTIVE
			     : CU_STREAM_CAPTURE_STATUS_NONE;
	return CUDA_SUCCESS;
}

static CUresult fake_exchange_mode(CUstreamCaptureMode *m)
{
	CUstreamCaptureMode old = fake_mode;

	fake_mode = *m;
	*m = old;
	return CUDA_SUCCESS;
}

/* real.c is not linked: its two lookups, over the fake driver. */
void *real_libcuda(void)
{
	return &fake_handle;
}

void *real_dlsym(void *handle, const char *name)
{
	if (handle != &fake_handle)
		return NULL;
	if (!strcmp(name, "cuStreamIsCapturing"))
		return (void *)fake_is_capturing;
	if (!strcmp(name, "cuThreadExchangeStreamCaptureMode"))
		return (void *)fake_exchange_mode;
	return NULL;
}

static void fake_driver(void)
{
	kmux_real.cuEventCreate = fake_event_create;
	kmux_real.cuEventRecord = fake_event_record;
	kmux_real.cuEventQuery = fake_event_query;
	kmux_real.cuEventSynchronize = fake_event_sync;
	kmux_real.cuEventElapsedTime_v2 = fake_elapsed;
	kmux_real.cuEventDestroy_v2 = fake_event_destroy;
	kmux_real.cuCtxGetCurrent = fake_ctx_current;
	atomic_store(&kmux_real_state, 1);
}


/* Run fn in a child process; returns its wait status. */
static int in_child(void (*fn)(const char *dir, int fd), const char *dir,
		    int *fd_out, pid_t *pid_out)
{
	int fds[2], st;
	pid_t pid;

	assert_int_equal(pipe(fds), 0);
	fflush(NULL);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(fds[0]);
		fake_driver();
		fn(dir, fds[1]);
		exit(0);
	}
	close(fds[1]);
	if (fd_out) {
		/* The caller talks to the child and reaps it. */
		*fd_out = fds[0];
		*pid_out = pid;
		return 0;
	}
	close(fds[0]);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	return st;
}

static void launch(const struct kernel_info *ki, uint64_t stream,
		   const struct access *acc, int nacc, void *token)
{
	static __thread uint64_t next;
	struct trace_launch l = {
		.ki = ki, .stream = stream, .grid = { 2, 1, 1 },
		.block = { 64, 1, 1 }, .api = TRACE_API_LAUNCH, .acc = acc,
		.nacc = nacc, .result = CUDA_SUCCESS,
	};

	/* 1 us calls that never overlap on a thread (they would get lanes). */
	l.t_begin = trace_now();
	if (l.t_begin < next)
		l.t_begin = next;
	l.t_end = l.t_begin + 1000;
	next = l.t_end;
	trace_launch_end(token, (CUstream)(uintptr_t)stream, &l);
}

static struct access many_acc[20];
static const struct kernel_info thr_kernel = { .name = "thr_kernel" };

static void *thread_body(void *arg)
{
	(void)arg;
	for (int i = 0; i < 4; i++)
		launch(&thr_kernel, TRACE_STREAM_PER_THREAD, many_acc, 20, NULL);
	return NULL;
}

static void child_threads(const char *dir, int fd)
{
	static const struct kernel_info weird = {
		.name = "we\"ird\\na\nme\x01\xff\xe2\x82\xac"
	};
	struct alloc a = { .base = 0x7000, .size = 1 << 20, .id = 1,
			   .kind = ALLOC_DEVICE, .device = 0 };
	pthread_t th[3];
	uint64_t t;

	(void)fd;
	for (int i = 0; i < 20; i++)
		many_acc[i].alloc_id = (uint64_t)i + 1;
	CHILD_CHECK(trace_init(dir, 0) == 0);
	trace_alloc(&a, 0, trace_now());
	for (int i = 0; i < 3; i++)
		CHILD_CHECK(pthread_create(&th[i], NULL, thread_body, NULL) == 0);
	for (int i = 0; i < 3; i++)
		pthread_join(th[i], NULL);
	launch(&weird, TRACE_STREAM_LEGACY, NULL, 0, NULL);
	t = trace_now();
	trace_sync(TRACE_SYNC_CTX, 0, t, t + 500, CUDA_SUCCESS);
	trace_alloc(&a, 1, trace_now());
}

static void test_recorder_threads(void **state)
{
	char *dir = tmpdir_new();
	struct trace_merge *m;
	const struct trace_summary *s;
	const cJSON *x[16], *ids;
	cJSON *t;
	int st, n;

	(void)state;
	st = in_child(child_threads, dir, NULL, NULL);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	m = merge_dir(dir, 0);
	s = trace_merge_summary(m);
	assert_int_equal(trace_merge_nwarnings(m), 0);
	assert_int_equal(s->processes, 1);
	assert_int_equal(s->launches, 13);
	assert_int_equal(kstat(s, "thr_kernel")->count, 12);
	assert_int_equal(s->syncs, 1);
	assert_int_equal(s->peak_device_bytes, 1 << 20);
	assert_int_equal(s->current_device_bytes, 0);

	t = written(m);
	n = find_x(t, "thr_kernel", x, 16);
	assert_int_equal(n, 12);
	/* 20 allocation ids survive the record's continuations, in order. */
	ids = cJSON_GetObjectItem(cJSON_GetObjectItem(x[0], "args"), "allocs");
	assert_int_equal(cJSON_GetArraySize(ids), 20);
	for (int i = 0; i < 20; i++)
		assert_int_equal((int)cJSON_GetArrayItem(ids, i)->valuedouble,
				 i + 1);
	/* Three threads, three per-thread default streams. */
	{
		int tids[3] = { -1, -1, -1 }, ntids = 0;

		for (int i = 0; i < n; i++) {
			int tid = (int)num(x[i], "tid"), j;

			for (j = 0; j < ntids && tids[j] != tid; j++)
				;
			if (j == ntids) {
				assert_true(ntids < 3);
				tids[ntids++] = tid;
			}
		}
		assert_int_equal(ntids, 3);
	}
	/* Escaped on the way out, decoded on the way in; bad UTF-8 -> U+FFFD. */
	assert_int_equal(find_x(t, "we\"ird\\na\nme\x01\xef\xbf\xbd\xe2\x82\xac",
				x, 1), 1);
	cJSON_Delete(t);
	trace_merge_free(m);
	tmpdir_remove(dir);
}

/* More than a buffer, then _exit: only what was flushed, no exit line. */
static void child_full_buffer(const char *dir, int fd)
{
	(void)fd;
	CHILD_CHECK(trace_init(dir, 0) == 0);
	for (int i = 0; i < 5000; i++) {
		uint64_t t = trace_now();

		trace_sync(TRACE_SYNC_STREAM, 0x1, t, t, CUDA_SUCCESS);
	}
	_exit(0);
}

static void test_recorder_full_buffer(void **state)
{
	char *dir = tmpdir_new();
	struct trace_merge *m;
	cJSON *t;
	int st;

	(void)state;
	st = in_child(child_full_buffer, dir, NULL, NULL);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	m = merge_dir(dir, 0);
	/* Buffers hold 2048 records; the rest died with the process. */
	assert_int_equal(trace_merge_summary(m)->syncs, 4096);
	t = written(m);
	assert_false(cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetArrayItem(
		cJSON_GetObjectItem(cJSON_GetObjectItem(t, "kmux"),
				    "processes"), 0), "exited")));
	cJSON_Delete(t);
	trace_merge_free(m);
	tmpdir_remove(dir);
}

static void *idle_thread(void *arg)
{
	uint64_t t = trace_now();

	(void)arg;
	trace_sync(TRACE_SYNC_EVENT, 0xe, t, t, CUDA_SUCCESS);
	pause();
	return NULL;
}

/*
 * Events ~100 ms apart are on disk while the process still runs, its idle
 * threads' too, so a process killed later loses only its last moments.
 */
static void child_periodic(const char *dir, int fd)
{
	pthread_t th;
	uint64_t t;

	CHILD_CHECK(trace_init(dir, 0) == 0);
	CHILD_CHECK(pthread_create(&th, NULL, idle_thread, NULL) == 0);
	usleep(150000);
	t = trace_now();
	trace_sync(TRACE_SYNC_CTX, 0, t, t, CUDA_SUCCESS);
	usleep(120000);
	t = trace_now();
	trace_sync(TRACE_SYNC_CTX, 0, t, t, CUDA_SUCCESS);
	CHILD_CHECK(write(fd, "x", 1) == 1);
	for (;;)
		pause();
}

static void test_recorder_periodic_and_kill(void **state)
{
	char *dir = tmpdir_new();
	struct trace_merge *m;
	const struct trace_summary *s;
	char c;
	int fd, st;
	pid_t pid;

	(void)state;
	in_child(child_periodic, dir, &fd, &pid);
	assert_int_equal(read(fd, &c, 1), 1);
	kill(pid, SIGKILL);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	close(fd);
	m = merge_dir(dir, 0);
	s = trace_merge_summary(m);
	assert_int_equal(s->syncs, 3);
	assert_int_equal(s->processes, 1);
	trace_merge_free(m);
	tmpdir_remove(dir);
}

/* fork: the child writes its own file and not what the parent buffered. */
static void child_fork(const char *dir, int fd)
{
	static const struct kernel_info pk = { .name = "parent_k" };
	static const struct kernel_info ck = { .name = "child_k" };
	pid_t pid;
	int st;

	(void)fd;
	CHILD_CHECK(trace_init(dir, 0) == 0);
	CHILD_CHECK(pthread_atfork(NULL, NULL, trace_atfork_child) == 0);
	launch(&pk, TRACE_STREAM_LEGACY, NULL, 0, NULL);
	fflush(NULL);
	pid = fork();
	CHILD_CHECK(pid >= 0);
	if (pid == 0) {
		launch(&ck, TRACE_STREAM_LEGACY, NULL, 0, NULL);
		exit(0);
	}
	CHILD_CHECK(waitpid(pid, &st, 0) == pid && st == 0);
}

static void test_recorder_fork(void **state)
{
	char *dir = tmpdir_new();
	struct trace_merge *m;
	const cJSON *p, *c;
	cJSON *t;
	int st;

	(void)state;
	st = in_child(child_fork, dir, NULL, NULL);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	m = merge_dir(dir, 0);
	assert_int_equal(trace_merge_summary(m)->processes, 2);
	assert_int_equal(trace_merge_summary(m)->launches, 2);
	t = written(m);
	assert_int_equal(find_x(t, "parent_k", &p, 1), 1);
	assert_int_equal(find_x(t, "child_k", &c, 1), 1);
	assert_int_not_equal((int)num(p, "pid"), (int)num(c, "pid"));
	cJSON_Delete(t);
	trace_merge_free(m);
	tmpdir_remove(dir);
}

/*
 * --timing against the fake clock: durations exact, placements consistent
 * across a rebase 11 s later, contexts torn down and set up again, and an
 * unfinished launch at exit counted, not invented.
 */
static const struct kernel_info timed_k = { .name = "timed_k" };

static void timed_launch(int64_t gpu_dur)
{
	void *tok = trace_launch_begin((CUstream)(uintptr_t)TRACE_STREAM_LEGACY);

	CHILD_CHECK(tok != NULL);
	fake_gpu_clock += gpu_dur;
	launch(&timed_k, TRACE_STREAM_LEGACY, NULL, 0, tok);
}

static void child_timing(const char *dir, int fd)
{
	(void)fd;
	CHILD_CHECK(trace_init(dir, 1) == 0);
	for (int i = 1; i <= 3; i++) {
		timed_launch(5000 * i);
		fake_gpu_clock += 1000000;
	}
	trace_resolve_timing(0);
	/* Far from the reference: the next resolved start becomes one. */
	fake_gpu_clock += 11000000000ll;
	timed_launch(2000);
	trace_resolve_timing(0);
	fake_gpu_clock += 1000000;
	timed_launch(3000);
	trace_resolve_timing(0);
	/* A context goes away: every event we made is destroyed. */
	trace_resolve_timing(1);
	CHILD_CHECK(fake_events_live == 0);
	fake_gpu_clock += 1000000;
	timed_launch(4000);
	trace_resolve_timing(0);
	/* Into a graph capture: not timed, not lost, no event recorded. */
	fake_capturing = 1;
	{
		void *tok = trace_launch_begin(
			(CUstream)(uintptr_t)TRACE_STREAM_LEGACY);

		CHILD_CHECK(tok != NULL);
		launch(&timed_k, TRACE_STREAM_LEGACY, NULL, 0, tok);
	}
	trace_resolve_timing(0);
	fake_capturing = 0;
	/* Our queries ran in relaxed mode, and the mode was put back. */
	CHILD_CHECK(fake_mode == CU_STREAM_CAPTURE_MODE_GLOBAL);
	/* Never finishes. */
	fake_not_ready = 1;
	timed_launch(1000);
}

static void test_recorder_timing(void **state)
{
	char *dir = tmpdir_new();
	struct trace_merge *m;
	const struct trace_summary *s;
	const cJSON *x[8], *by_dur[6] = { NULL };
	double dur[] = { 5, 10, 15, 2, 3, 4 };
	cJSON *t;
	int st, unresolved = 0, captured = 0;

	(void)state;
	st = in_child(child_timing, dir, NULL, NULL);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	m = merge_dir(dir, 0);
	s = trace_merge_summary(m);
	assert_true(s->timing);
	assert_int_equal(s->launches, 8);
	assert_int_equal(s->timing_unresolved, 1);
	assert_int_equal(s->captured_launches, 1);
	assert_int_equal(kstat(s, "timed_k")->timed, 6);
	assert_int_equal(kstat(s, "timed_k")->total_ns, 39000);
	t = written(m);
	assert_int_equal(find_x(t, "timed_k", x, 8), 8);
	/* Each resolved launch is known by its (unique) GPU duration. */
	for (int i = 0; i < 8; i++) {
		const cJSON *args = cJSON_GetObjectItem(x[i], "args");
		int j;

		if (cJSON_IsTrue(cJSON_GetObjectItem(args, "captured"))) {
			captured++;
			continue;
		}
		if (!cJSON_GetObjectItem(args, "gpu_dur")) {
			assert_string_equal(str(args, "gpu"), "unresolved");
			unresolved++;
			continue;
		}
		for (j = 0; j < 6 && fabs(num(x[i], "dur") - dur[j]) > 0.01; j++)
			;
		assert_true(j < 6);
		assert_null(by_dur[j]);
		by_dur[j] = x[i];
		assert_true(fabs(num(args, "gpu_dur") - dur[j]) < 0.01);
		assert_true(fabs(num(args, "launch_us") - 1.0) < 1e-9);
	}
	assert_int_equal(unresolved, 1);
	assert_int_equal(captured, 1);
	/* GPU starts are as far apart as the fake GPU clock says. */
	assert_true(fabs(num(by_dur[1], "ts") - num(by_dur[0], "ts") - 1005)
		    < 0.01);
	assert_true(fabs(num(by_dur[2], "ts") - num(by_dur[1], "ts") - 1010)
		    < 0.01);
	/* float ms 11 s from the reference: about 1 us of resolution. */
	assert_true(fabs(num(by_dur[3], "ts") - num(by_dur[2], "ts") -
			 (1015 + 11e6)) < 2.0);
	/* ... which is why the next one is measured from a new reference. */
	assert_true(fabs(num(by_dur[4], "ts") - num(by_dur[3], "ts") - 1002)
		    < 0.01);
	cJSON_Delete(t);
	trace_merge_free(m);
	tmpdir_remove(dir);
}

/*
 * Threads record while another flushes their buffers under them, over and
 * over: every event lands exactly once.
 */
#define RACE_THREADS 4
#define RACE_EVENTS 20000

static atomic_int race_done;

static void *race_thread(void *arg)
{
	uint64_t id = (uint64_t)(uintptr_t)arg << 32;

	for (uint64_t i = 0; i < RACE_EVENTS; i++) {
		uint64_t t = trace_now();

		trace_sync(TRACE_SYNC_STREAM, id | i, t, t, CUDA_SUCCESS);
		if (i % 4096 == 0)
			usleep(1000);
	}
	atomic_fetch_add(&race_done, 1);
	return NULL;
}

static void child_race(const char *dir, int fd)
{
	pthread_t th[RACE_THREADS];

	(void)fd;
	CHILD_CHECK(trace_init(dir, 0) == 0);
	for (uintptr_t i = 0; i < RACE_THREADS; i++)
		CHILD_CHECK(pthread_create(&th[i], NULL, race_thread,
					   (void *)i) == 0);
	while (atomic_load(&race_done) < RACE_THREADS)
		trace_flush_all();
	for (int i = 0; i < RACE_THREADS; i++)
		pthread_join(th[i], NULL);
}

static void test_recorder_concurrent_flush(void **state)
{
	char *dir = tmpdir_new();
	static unsigned char seen[RACE_THREADS][RACE_EVENTS];
	const cJSON *e;
	struct trace_merge *m;
	cJSON *t;
	int st, n = 0;

	(void)state;
	st = in_child(child_race, dir, NULL, NULL);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	m = merge_dir(dir, 0);
	assert_int_equal(trace_merge_nwarnings(m), 0);
	assert_int_equal(trace_merge_summary(m)->syncs,
			 RACE_THREADS * RACE_EVENTS);
	t = written(m);
	cJSON_ArrayForEach(e, cJSON_GetObjectItem(t, "traceEvents")) {
		unsigned long long obj;

		if (strcmp(str(e, "ph"), "X"))
			continue;
		obj = strtoull(str(cJSON_GetObjectItem(e, "args"), "obj"),
			       NULL, 16);
		assert_true((obj >> 32) < RACE_THREADS);
		assert_true((obj & 0xffffffff) < RACE_EVENTS);
		assert_false(seen[obj >> 32][obj & 0xffffffff]++);
		n++;
	}
	assert_int_equal(n, RACE_THREADS * RACE_EVENTS);
	cJSON_Delete(t);
	trace_merge_free(m);
	tmpdir_remove(dir);
}

/*
 * A program that closes every descriptor and opens its own file, which gets
 * the number of ours: our lines must not land in its file.
 */
static void child_stolen_fd(const char *dir, int fd)
{
	char victim[512];
	uint64_t t = trace_now();
	int vfd;

	(void)fd;
	CHILD_CHECK(trace_init(dir, 0) == 0);
	trace_sync(TRACE_SYNC_CTX, 0, t, t, CUDA_SUCCESS);
	trace_flush_all();
	for (int i = 3; i < 64; i++)
		close(i);
	snprintf(victim, sizeof(victim), "%s/victim", dir);
	vfd = open(victim, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	CHILD_CHECK(vfd >= 0);
	t = trace_now();
	trace_sync(TRACE_SYNC_CTX, 0, t, t, CUDA_SUCCESS);
	trace_flush_all();
	CHILD_CHECK(lseek(vfd, 0, SEEK_END) == 0);
}

static void test_recorder_stolen_fd(void **state)
{
	char *dir = tmpdir_new();
	struct trace_merge *m;
	int st;

	(void)state;
	st = in_child(child_stolen_fd, dir, NULL, NULL);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	m = merge_dir(dir, 0);
	assert_int_equal(trace_merge_nwarnings(m), 0);
	assert_int_equal(trace_merge_summary(m)->syncs, 2);
	assert_int_equal(trace_merge_summary(m)->processes, 1);
	trace_merge_free(m);
	tmpdir_remove(dir);
}

/* A directory we cannot write: tracing stays off, nothing breaks. */
static void child_unwritable(const char *dir, int fd)
{
	uint64_t t = trace_now();

	(void)dir;
	(void)fd;
	CHILD_CHECK(trace_init("/nonexistent/dir", 0) == -ENOENT);
	trace_sync(TRACE_SYNC_CTX, 0, t, t, CUDA_SUCCESS);
	CHILD_CHECK(trace_launch_begin(NULL) == NULL);
	trace_flush_all();
}

static void test_recorder_unwritable(void **state)
{
	char *dir = tmpdir_new();
	int st;

	(void)state;
	st = in_child(child_unwritable, dir, NULL, NULL);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	tmpdir_remove(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_two_processes),
		cmocka_unit_test(test_written_layout),
		cmocka_unit_test(test_overlap_lanes),
		cmocka_unit_test(test_timing),
		cmocka_unit_test(test_sort_ties),
		cmocka_unit_test(test_garbage),
		cmocka_unit_test(test_exec_segments),
		cmocka_unit_test(test_empty),
		cmocka_unit_test(test_human_summary),
		cmocka_unit_test(test_line_parse),
		cmocka_unit_test(test_formats),
		cmocka_unit_test(test_mm_counter),
		cmocka_unit_test(test_recorder_threads),
		cmocka_unit_test(test_recorder_full_buffer),
		cmocka_unit_test(test_recorder_periodic_and_kill),
		cmocka_unit_test(test_recorder_fork),
		cmocka_unit_test(test_recorder_timing),
		cmocka_unit_test(test_recorder_concurrent_flush),
		cmocka_unit_test(test_recorder_stolen_fd),
		cmocka_unit_test(test_recorder_unwritable),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
