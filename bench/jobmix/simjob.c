/*
 * simjob.c - a stand-in job for `JOBMIX_SIM=1 bash bench/jobmix.sh`: lets
 * the benchmark's orchestration, its kmux part, the parsing and the report
 * run on a machine without a GPU, over tests/simcuda.
 *
 *   simjob NAME MEM_MIB WORK_MS UTIL
 *
 * simcuda simulates one device per process, so the memory and the compute
 * that jobs share on a real GPU are simulated here, in a ledger file per
 * GPU ($JOBMIX_SIM_DIR/gpuK, K = the first of CUDA_VISIBLE_DEVICES, under
 * flock): a line "pid mem util" per running job.
 *
 *  - Memory: cuMemAlloc(MEM) through the driver, so kmux's preload applies
 *    its quota (an allocation past it fails); then MEM is added to the
 *    ledger, and when the live entries already hold more than
 *    JOBMIX_SIM_GPU_MIB minus MEM, the job fails as a real one would
 *    (out of memory).
 *  - Compute: WORK_MS is the time the job takes alone.  It advances in
 *    steps of 2 ms at rate min(1, 1 / sum of the running jobs' UTIL): jobs
 *    that each use part of the GPU overlap for free, beyond that they
 *    share it.  JOBMIX_SCALE (default 1) multiplies WORK_MS, as it
 *    multiplies the real jobs' iterations.
 *
 * Prints "JOBMIX name=... ok=1 wall_s=... peak_reserved=..." as the real
 * jobs do, or "JOBMIX_FAIL name=... reason=oom" and exits 3.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

#include <cuda.h>

#define MIB (1024.0 * 1024.0)

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/*
 * Under the ledger's lock: drop dead jobs' lines, then add (+1) or remove
 * (-1) ours, or just read (0).  Sets *mem and *util to the live totals,
 * ours excluded.  0, or -errno.
 */
static int ledger(const char *path, int op, double mymem, double myutil,
		  double *mem, double *util)
{
	char line[128], buf[16384];
	size_t len = 0;
	FILE *f;
	int fd, pid;
	double m, u;

	*mem = *util = 0;
	fd = open(path, O_RDWR | O_CREAT, 0600);
	if (fd < 0)
		return -errno;
	if (flock(fd, LOCK_EX) < 0) {
		close(fd);
		return -errno;
	}
	f = fdopen(fd, "r+");
	if (f == NULL) {
		close(fd);
		return -ENOMEM;
	}
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%d %lf %lf", &pid, &m, &u) != 3)
			continue;
		if (pid == getpid() || (kill(pid, 0) < 0 && errno == ESRCH))
			continue;
		*mem += m;
		*util += u;
		len += (size_t)snprintf(buf + len, sizeof(buf) - len,
					"%d %.0f %.3f\n", pid, m, u);
		if (len >= sizeof(buf) - 64)
			break;
	}
	if (op > 0)
		len += (size_t)snprintf(buf + len, sizeof(buf) - len,
					"%d %.0f %.3f\n", (int)getpid(), mymem,
					myutil);
	/* A read leaves the file alone: our own line must stay. */
	if (op != 0) {
		rewind(f);
		if (ftruncate(fd, 0) < 0 || fwrite(buf, 1, len, f) != len) {
			fclose(f);
			return -EIO;
		}
	}
	fclose(f);		/* unlocks */
	return 0;
}

static int fail(const char *name, const char *why)
{
	printf("JOBMIX_FAIL name=%s reason=%s\n", name, why);
	fprintf(stderr, "simjob %s: %s\n", name, why);
	return 3;
}

int main(int argc, char **argv)
{
	const char *name, *dir = getenv("JOBMIX_SIM_DIR");
	const char *gpu_mib = getenv("JOBMIX_SIM_GPU_MIB");
	const char *cvd = getenv("CUDA_VISIBLE_DEVICES");
	const char *scale = getenv("JOBMIX_SCALE");
	double t0 = now_s(), mem_mib, work_ms, util, cap, mem, load, done = 0;
	double t_init, t_end;
	char path[4096];
	CUdeviceptr p = 0;
	CUcontext ctx;
	CUresult r;
	int gpu = cvd && *cvd ? atoi(cvd) : 0;

	if (argc != 5 || !dir || !gpu_mib) {
		fprintf(stderr, "usage: JOBMIX_SIM_DIR=D JOBMIX_SIM_GPU_MIB=N "
			"simjob NAME MEM_MIB WORK_MS UTIL\n");
		return 2;
	}
	name = argv[1];
	mem_mib = atof(argv[2]);
	work_ms = atof(argv[3]);
	util = atof(argv[4]);
	cap = atof(gpu_mib);
	if (scale && *scale)
		work_ms *= atof(scale);
	if (!(mem_mib > 0) || !(work_ms > 0) || !(util > 0) || !(cap > 0)) {
		fprintf(stderr, "simjob: bad arguments\n");
		return 2;
	}
	snprintf(path, sizeof(path), "%s/gpu%d", dir, gpu);

	if (cuInit(0) != CUDA_SUCCESS ||
	    cuDevicePrimaryCtxRetain(&ctx, 0) != CUDA_SUCCESS ||
	    cuCtxSetCurrent(ctx) != CUDA_SUCCESS)
		return fail(name, "no-device");
	r = cuMemAlloc(&p, (size_t)(mem_mib * MIB));
	if (r == CUDA_ERROR_OUT_OF_MEMORY)
		return fail(name, "oom");	/* the quota, under kmux */
	if (r != CUDA_SUCCESS)
		return fail(name, "alloc-error");
	if (ledger(path, 0, 0, 0, &mem, &load) < 0)
		return fail(name, "ledger");
	if (mem + mem_mib > cap)
		return fail(name, "oom");	/* the shared GPU is full */
	if (ledger(path, +1, mem_mib, util, &mem, &load) < 0)
		return fail(name, "ledger");
	t_init = now_s();
	while (done < work_ms) {
		double rate;

		if (ledger(path, 0, 0, 0, &mem, &load) < 0)
			return fail(name, "ledger");
		load += util;
		rate = load > 1.0 ? 1.0 / load : 1.0;
		usleep(2000);
		done += 2.0 * rate;
	}
	ledger(path, -1, 0, 0, &mem, &load);
	cuMemFree(p);
	t_end = now_s();
	printf("JOBMIX name=%s ok=1 wall_s=%.3f init_s=%.3f work_s=%.3f "
	       "iters=1 peak_reserved=%.0f\n", name, t_end - t0, t_init - t0,
	       t_end - t_init, mem_mib * MIB);
	return 0;
}
