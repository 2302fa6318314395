/*
 * test-slurm-weight.c - unit tests of the pure half of slurm-weight.c: the
 * node score, buckets with hysteresis, the weight of a bucket, reading the
 * weight out of `scontrol -o show node`, and node-name checks.  Also the
 * SPANK plugin's pure helpers (contrib/slurm/ks-env.c): a task's
 * LD_PRELOAD, the socket path with %n, the task's name.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "ks-env.h"
#include "slurm-weight.h"

#define GiB (UINT64_C(1) << 30)

/* slurm-weight.c's daemon half wants the daemon's clock. */
uint64_t server_now_us(void);
uint64_t server_now_us(void)
{
	return 0;
}

static struct slurm_weight_params P;

static void test_bucket_plain(void **state)
{
	(void)state;
	/* No previous bucket: floor(score / 0.25), clamped to 0..15. */
	assert_int_equal(slurm_weight_bucket(0.0, -1, &P), 0);
	assert_int_equal(slurm_weight_bucket(0.24, -1, &P), 0);
	assert_int_equal(slurm_weight_bucket(0.25, -1, &P), 1);
	assert_int_equal(slurm_weight_bucket(1.0, -1, &P), 4);
	assert_int_equal(slurm_weight_bucket(3.99, -1, &P), 15);
	assert_int_equal(slurm_weight_bucket(100.0, -1, &P), 15);
	assert_int_equal(slurm_weight_bucket(-1.0, -1, &P), 0);
	assert_int_equal(slurm_weight_bucket(NAN, -1, &P), 0);
	assert_int_equal(slurm_weight_bucket(INFINITY, -1, &P), 15);
	assert_int_equal(slurm_weight_bucket(NAN, 3, &P), 0);
}

static void test_bucket_hysteresis(void **state)
{
	(void)state;
	/* Bucket 2 is [0.50, 0.75): it holds from 0.45 to just under 0.80. */
	assert_int_equal(slurm_weight_bucket(0.76, 2, &P), 2);
	assert_int_equal(slurm_weight_bucket(0.79, 2, &P), 2);
	assert_int_equal(slurm_weight_bucket(0.80, 2, &P), 3);
	assert_int_equal(slurm_weight_bucket(0.46, 2, &P), 2);
	assert_int_equal(slurm_weight_bucket(0.44, 2, &P), 1);
	/* Noise around an edge does not flap: 0.74 <-> 0.76 from either side. */
	int b = slurm_weight_bucket(0.74, -1, &P);
	for (int i = 0; i < 100; i++)
		b = slurm_weight_bucket(i % 2 ? 0.76 : 0.74, b, &P);
	assert_int_equal(b, 2);
	b = slurm_weight_bucket(0.76, -1, &P);
	for (int i = 0; i < 100; i++)
		b = slurm_weight_bucket(i % 2 ? 0.74 : 0.76, b, &P);
	assert_int_equal(b, 3);
	/* A big jump leaves at once, either way. */
	assert_int_equal(slurm_weight_bucket(2.0, 2, &P), 8);
	assert_int_equal(slurm_weight_bucket(0.0, 8, &P), 0);
	/* The top bucket has no upper edge; the lowest none below. */
	assert_int_equal(slurm_weight_bucket(50.0, 15, &P), 15);
	assert_int_equal(slurm_weight_bucket(0.0, 0, &P), 0);
	/* A previous bucket out of range is ignored. */
	assert_int_equal(slurm_weight_bucket(0.3, 99, &P), 1);
}

static void test_weight_of_bucket(void **state)
{
	(void)state;
	assert_int_equal(slurm_weight_of_bucket(0, &P), 1);
	assert_int_equal(slurm_weight_of_bucket(15, &P), 16);
	assert_int_equal(slurm_weight_of_bucket(-3, &P), 1);
	assert_int_equal(slurm_weight_of_bucket(40, &P), 16);
}

static void test_node_score(void **state)
{
	struct admit_policy ap;
	struct admit_gpu g[2];

	(void)state;
	admit_policy_default(&ap);
	memset(g, 0, sizeof(g));
	g[0].mem_total = g[1].mem_total = 16 * GiB;
	assert_true(slurm_weight_node_score(g, 2, &ap) == 0.0);
	assert_true(slurm_weight_node_score(g, 0, &ap) == 0.0);
	/* One GPU half full with one task of busyness 0.5: 0.5 + 0.25 + 0.1;
	 * the node's score is the mean over both GPUs. */
	g[0].mem_committed = 8 * GiB;
	g[0].busy_committed = 0.5;
	g[0].ntasks = 1;
	assert_true(fabs(admit_busyness(&g[0], &ap) - 0.85) < 1e-9);
	assert_true(fabs(slurm_weight_node_score(g, 2, &ap) - 0.425) < 1e-9);
	assert_int_equal(slurm_weight_bucket(slurm_weight_node_score(g, 2, &ap),
					     -1, &P), 1);
	/* Busier node, higher weight. */
	g[1] = g[0];
	assert_true(slurm_weight_of_bucket(slurm_weight_bucket(
		slurm_weight_node_score(g, 2, &ap), -1, &P), &P) == 4);
}

static void test_parse_show(void **state)
{
	uint32_t w = 7;

	(void)state;
	assert_int_equal(slurm_weight_parse_show("NodeName=n1 Arch=x86_64 "
		"CoresPerSocket=2 Weight=12 Owner=N/A\n", &w), 0);
	assert_int_equal(w, 12);
	assert_int_equal(slurm_weight_parse_show("Weight=1", &w), 0);
	assert_int_equal(w, 1);
	assert_int_equal(slurm_weight_parse_show("NodeName=n1\n   Weight=4294967295\n", &w), 0);
	assert_int_equal(w, UINT32_MAX);
	/* Not a token of its own, or not a count. */
	w = 7;
	assert_int_equal(slurm_weight_parse_show("NodeName=n1 XWeight=3", &w), -ENOENT);
	assert_int_equal(slurm_weight_parse_show("", &w), -ENOENT);
	assert_int_equal(slurm_weight_parse_show("Node n1 not found", &w), -ENOENT);
	assert_int_equal(slurm_weight_parse_show("Weight=", &w), -ERANGE);
	assert_int_equal(slurm_weight_parse_show("Weight=x", &w), -ERANGE);
	assert_int_equal(slurm_weight_parse_show("Weight=12x", &w), -ERANGE);
	assert_int_equal(slurm_weight_parse_show("Weight=4294967296", &w), -ERANGE);
	assert_int_equal(slurm_weight_parse_show("Weight=99999999999999999999999", &w), -ERANGE);
	assert_int_equal(w, 7);
}

static void test_node_ok(void **state)
{
	char long_name[80];

	(void)state;
	assert_true(slurm_weight_node_ok("n1"));
	assert_true(slurm_weight_node_ok("gpu-node_07.cluster"));
	assert_false(slurm_weight_node_ok(""));
	assert_false(slurm_weight_node_ok("-n1"));
	assert_false(slurm_weight_node_ok("n1 State=DOWN"));
	assert_false(slurm_weight_node_ok("n1,n2"));
	assert_false(slurm_weight_node_ok("n[1-2]"));
	assert_false(slurm_weight_node_ok("n=1"));
	memset(long_name, 'a', 65);
	long_name[65] = '\0';
	assert_false(slurm_weight_node_ok(long_name));
	long_name[64] = '\0';
	assert_true(slurm_weight_node_ok(long_name));
}

/* --- the SPANK plugin's helpers ------------------------------------------ */

static void preload(const char *old, int want_r, const char *want)
{
	char out[256];
	int r = ks_preload_value(old, "/opt/kmux/libkmux.so", out, sizeof(out));

	assert_int_equal(r, want_r);
	if (r == 0)
		assert_string_equal(out, want);
}

static void test_preload_value(void **state)
{
	char small[16];

	(void)state;
	preload("", 0, "/opt/kmux/libkmux.so");
	preload("/lib/libfoo.so", 0, "/opt/kmux/libkmux.so:/lib/libfoo.so");
	preload("/a.so /b.so", 0, "/opt/kmux/libkmux.so:/a.so:/b.so");
	preload("::/a.so:: ", 0, "/opt/kmux/libkmux.so:/a.so");
	/* Sanitizer runtimes stay first. */
	preload("/lib/libfoo.so:/usr/lib/libasan.so.8", 0,
		"/usr/lib/libasan.so.8:/opt/kmux/libkmux.so:/lib/libfoo.so");
	preload("libclang_rt.asan-x86_64.so", 0,
		"libclang_rt.asan-x86_64.so:/opt/kmux/libkmux.so");
	/* Already there (srun inside sbatch): unchanged, by path or name. */
	preload("/opt/kmux/libkmux.so", 1, NULL);
	preload("/x.so:/opt/kmux/libkmux.so", 1, NULL);
	preload("/elsewhere/libkmux.so", 1, NULL);
	/* Not the same library. */
	preload("/x/libkmux.so.old", 0, "/opt/kmux/libkmux.so:/x/libkmux.so.old");
	preload("/x/notlibkmux.so", 0, "/opt/kmux/libkmux.so:/x/notlibkmux.so");
	/* Too long for the buffer. */
	assert_int_equal(ks_preload_value("/a.so", "/opt/kmux/libkmux.so",
					  small, sizeof(small)), -ENAMETOOLONG);
	assert_int_equal(ks_preload_value("/aaaaaaaa.so", "/k.so", small,
					  sizeof(small)), -ENAMETOOLONG);
	/* Exactly fits: 15 bytes and the NUL; one more does not. */
	assert_int_equal(ks_preload_value("/aaaaa.so", "/k.so", small,
					  sizeof(small)), 0);
	assert_string_equal(small, "/k.so:/aaaaa.so");
	assert_int_equal(ks_preload_value("/aaaaaa.so", "/k.so", small,
					  sizeof(small)), -ENAMETOOLONG);
}

static void test_expand_path(void **state)
{
	char out[32];

	(void)state;
	assert_int_equal(ks_expand_path("/run/kmux/sock", "n1", out, sizeof(out)), 0);
	assert_string_equal(out, "/run/kmux/sock");
	assert_int_equal(ks_expand_path("/run/kmux/%n/sock", "gpu07", out, sizeof(out)), 0);
	assert_string_equal(out, "/run/kmux/gpu07/sock");
	assert_int_equal(ks_expand_path("/a/%%n/%n%n", "x", out, sizeof(out)), 0);
	assert_string_equal(out, "/a/%n/xx");
	assert_int_equal(ks_expand_path("/a/%s%", "x", out, sizeof(out)), 0);
	assert_string_equal(out, "/a/%s%");
	assert_int_equal(ks_expand_path("/run/kmux/%n/sock", "a-very-long-node-name",
					out, sizeof(out)), -ENAMETOOLONG);
	assert_int_equal(ks_expand_path("0123456789012345678901234567890", "", out,
					sizeof(out)), 0);
	assert_int_equal(ks_expand_path("01234567890123456789012345678901", "", out,
					sizeof(out)), -ENAMETOOLONG);
}

static void test_task_name(void **state)
{
	char buf[64];

	(void)state;
	ks_task_name(42, 0, 3, buf, sizeof(buf));
	assert_string_equal(buf, "slurm-42.0.3");
	ks_task_name(42, KS_STEP_BATCH, 0, buf, sizeof(buf));
	assert_string_equal(buf, "slurm-42.batch.0");
	ks_task_name(7, KS_STEP_INTERACTIVE, 1, buf, sizeof(buf));
	assert_string_equal(buf, "slurm-7.interactive.1");
	ks_task_name(UINT32_MAX - 10, 12, UINT32_MAX, buf, sizeof(buf));
	assert_string_equal(buf, "slurm-4294967285.12.4294967295");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bucket_plain),
		cmocka_unit_test(test_bucket_hysteresis),
		cmocka_unit_test(test_weight_of_bucket),
		cmocka_unit_test(test_node_score),
		cmocka_unit_test(test_parse_show),
		cmocka_unit_test(test_node_ok),
		cmocka_unit_test(test_preload_value),
		cmocka_unit_test(test_expand_path),
		cmocka_unit_test(test_task_name),
	};

	slurm_weight_params_default(&P);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
