/*
 * nvml.c - owns the daemon's GPU discovery and sampling: NVML through
 * dlopen (the few functions kmuxd needs, with the types declared here so
 * that no NVML header is needed to build), or simulated GPUs from
 * KMUX_FAKE_GPUS for tests.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nvml.h"
#include "size.h"

/* NVML's ABI, as documented in nvml.h (stable since NVML 5). */
typedef int nvml_ret_t;			/* nvmlReturn_t; 0 = NVML_SUCCESS */
typedef void *nvml_dev_t;		/* nvmlDevice_t */
struct nvml_util {			/* nvmlUtilization_t */
	unsigned int gpu;		/* percent */
	unsigned int memory;
};
struct nvml_mem {			/* nvmlMemory_t */
	unsigned long long total;
	unsigned long long free;
	unsigned long long used;
};

struct nvml_proc_sample {		/* nvmlProcessUtilizationSample_t */
	unsigned int pid;
	unsigned long long ts;		/* µs */
	unsigned int sm, mem, enc, dec;	/* percent */
};

#define NVML_ERROR_NOT_FOUND 6
#define NVML_ERROR_INSUFFICIENT_SIZE 7
#define NVML_PROC_SAMPLES 256

struct nvml {
	void *lib;			/* NULL: fake or none */
	uint32_t count;
	uint64_t fake_mem;		/* per GPU, fake only */
	char source[64];
	nvml_dev_t dev[NVML_MAX_GPUS];
	nvml_ret_t (*shutdown)(void);
	nvml_ret_t (*get_util)(nvml_dev_t, struct nvml_util *);
	nvml_ret_t (*get_mem)(nvml_dev_t, struct nvml_mem *);
	/* Optional (NVML 8+): per-process utilization, and where each GPU's
	 * samples were last read up to. */
	nvml_ret_t (*get_proc_util)(nvml_dev_t, struct nvml_proc_sample *,
				    unsigned int *, unsigned long long);
	unsigned long long proc_seen[NVML_MAX_GPUS];
};

int nvml_fake_parse(const char *spec, uint32_t *count, uint64_t *mem,
		    char *why, size_t whylen)
{
	const char *colon = spec ? strchr(spec, ':') : NULL;
	unsigned long n = 0;
	char *end;
	int r;

	/* "0": a node without GPUs, whatever this machine has. */
	if (spec && strcmp(spec, "0") == 0) {
		*count = 0;
		*mem = 0;
		return 0;
	}
	if (!colon || colon == spec) {
		snprintf(why, whylen, "KMUX_FAKE_GPUS='%s': want N:MEM, "
			 "e.g. 2:16G", spec ? spec : "");
		return -EINVAL;
	}
	for (const char *p = spec; p < colon; p++)
		if (*p < '0' || *p > '9')
			goto bad_count;
	errno = 0;
	n = strtoul(spec, &end, 10);
	if (errno || end != colon || n < 1 || n > NVML_MAX_GPUS)
		goto bad_count;
	r = size_parse(colon + 1, mem);
	if (r || *mem == 0) {
		snprintf(why, whylen, "KMUX_FAKE_GPUS='%s': bad memory size "
			 "'%s'", spec, colon + 1);
		return -EINVAL;
	}
	*count = (uint32_t)n;
	return 0;

bad_count:
	snprintf(why, whylen, "KMUX_FAKE_GPUS='%s': the GPU count must be "
		 "1..%d", spec, NVML_MAX_GPUS);
	return -EINVAL;
}

/* Resolve NVML's functions and its devices; 0 or -ENODEV with why. */
static int nvml_load(struct nvml *n, char *why, size_t whylen)
{
	nvml_ret_t (*init)(void);
	nvml_ret_t (*get_count)(unsigned int *);
	nvml_ret_t (*get_handle)(unsigned int, nvml_dev_t *);
	const char *(*errstr)(nvml_ret_t);
	unsigned int count = 0;
	nvml_ret_t rc;

	n->lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!n->lib) {
		snprintf(why, whylen, "NVML not available (%s)", dlerror());
		return -ENODEV;
	}
	*(void **)&init = dlsym(n->lib, "nvmlInit_v2");
	*(void **)&get_count = dlsym(n->lib, "nvmlDeviceGetCount_v2");
	*(void **)&get_handle = dlsym(n->lib, "nvmlDeviceGetHandleByIndex_v2");
	*(void **)&errstr = dlsym(n->lib, "nvmlErrorString");
	*(void **)&n->shutdown = dlsym(n->lib, "nvmlShutdown");
	*(void **)&n->get_util = dlsym(n->lib, "nvmlDeviceGetUtilizationRates");
	*(void **)&n->get_mem = dlsym(n->lib, "nvmlDeviceGetMemoryInfo");
	*(void **)&n->get_proc_util = dlsym(n->lib,
					    "nvmlDeviceGetProcessUtilization");
	if (!init || !get_count || !get_handle || !n->shutdown ||
	    !n->get_util || !n->get_mem) {
		snprintf(why, whylen, "libnvidia-ml.so.1 lacks the functions "
			 "kmux needs (too old?)");
		goto err_close;
	}
	rc = init();
	if (rc) {
		snprintf(why, whylen, "nvmlInit failed: %s",
			 errstr ? errstr(rc) : "error");
		goto err_close;
	}
	rc = get_count(&count);
	if (rc || count == 0) {
		snprintf(why, whylen, "NVML sees no GPU%s%s", rc ? ": " : "",
			 rc && errstr ? errstr(rc) : "");
		goto err_shutdown;
	}
	if (count > NVML_MAX_GPUS)
		count = NVML_MAX_GPUS;	/* the wire's GPU masks stop at 64 */
	for (unsigned int i = 0; i < count; i++) {
		rc = get_handle(i, &n->dev[i]);
		if (rc) {
			snprintf(why, whylen, "NVML: GPU %u: %s", i,
				 errstr ? errstr(rc) : "error");
			goto err_shutdown;
		}
	}
	n->count = count;
	snprintf(n->source, sizeof(n->source), "NVML");
	return 0;

err_shutdown:
	n->shutdown();
err_close:
	dlclose(n->lib);
	n->lib = NULL;
	return -ENODEV;
}

int nvml_open(struct nvml **out, char *why, size_t whylen)
{
	const char *fake = getenv("KMUX_FAKE_GPUS");
	struct nvml *n = calloc(1, sizeof(*n));

	*out = NULL;
	if (!n)
		return -ENOMEM;
	if (why && whylen)
		why[0] = '\0';
	snprintf(n->source, sizeof(n->source), "none");
	if (fake && *fake) {
		/* A typo in a test knob must not pass for "no GPUs". */
		if (nvml_fake_parse(fake, &n->count, &n->fake_mem, why,
				    whylen)) {
			free(n);
			return -EINVAL;
		}
		snprintf(n->source, sizeof(n->source), "KMUX_FAKE_GPUS=%.40s",
			 fake);
		if (!n->count)
			snprintf(why, whylen, "KMUX_FAKE_GPUS=0 simulates a "
				 "node without GPUs");
	} else {
		nvml_load(n, why, whylen);
	}
	*out = n;
	return 0;
}

void nvml_close(struct nvml *n)
{
	if (!n)
		return;
	if (n->lib) {
		n->shutdown();
		dlclose(n->lib);
	}
	free(n);
}

uint32_t nvml_count(const struct nvml *n)
{
	return n->count;
}

const char *nvml_source(const struct nvml *n)
{
	return n->source;
}

bool nvml_is_fake(const struct nvml *n)
{
	return n->count && !n->lib;
}

int nvml_sample(struct nvml *n, uint32_t i, struct nvml_sample *s)
{
	struct nvml_util u;
	struct nvml_mem m;

	if (i >= n->count)
		return -EINVAL;
	if (!n->lib) {
		s->mem_total = n->fake_mem;
		s->mem_used = 0;
		s->util = 0;
		s->util_valid = false;
		return 0;
	}
	if (n->get_mem(n->dev[i], &m))
		return -EIO;
	s->mem_total = m.total;
	s->mem_used = m.used;
	s->util_valid = n->get_util(n->dev[i], &u) == 0;
	s->util = s->util_valid ? (u.gpu > 100 ? 1.0 : u.gpu / 100.0) : 0;
	return 0;
}

/* KMUX_FAKE_PROC_UTIL: "GPU PID PERCENT" lines for GPU i. */
static int fake_process_util(uint32_t i, struct nvml_proc_util *out,
			     size_t max)
{
	const char *path = getenv("KMUX_FAKE_PROC_UTIL");
	unsigned int gpu, pid, pct;
	size_t n = 0;
	char line[128];
	FILE *f;

	if (!path || !*path || !(f = fopen(path, "re")))
		return 0;
	while (n < max && fgets(line, sizeof(line), f))
		if (sscanf(line, "%u %u %u", &gpu, &pid, &pct) == 3 &&
		    gpu == i && pid > 0)
			out[n++] = (struct nvml_proc_util){
				pid, pct > 100 ? 1.0 : pct / 100.0 };
	fclose(f);
	return (int)n;
}

int nvml_process_util(struct nvml *n, uint32_t i, struct nvml_proc_util *out,
		      size_t max)
{
	struct nvml_proc_sample s[NVML_PROC_SAMPLES];
	unsigned int count = NVML_PROC_SAMPLES, nsum[NVML_PROC_SAMPLES];
	double sum[NVML_PROC_SAMPLES];
	unsigned long long last = 0;
	size_t found = 0;
	nvml_ret_t rc;

	if (i >= n->count)
		return -EINVAL;
	if (!n->lib)
		return fake_process_util(i, out, max);
	if (!n->get_proc_util)
		return 0;
	rc = n->get_proc_util(n->dev[i], s, &count, n->proc_seen[i]);
	if (rc == NVML_ERROR_NOT_FOUND)
		return 0;
	if (rc && rc != NVML_ERROR_INSUFFICIENT_SIZE)
		return -EIO;
	if (count > NVML_PROC_SAMPLES)
		count = NVML_PROC_SAMPLES;
	/* Several samples per process: average them. */
	for (unsigned int k = 0; k < count; k++) {
		size_t j;

		if (s[k].ts > last)
			last = s[k].ts;
		for (j = 0; j < found && out[j].pid != s[k].pid; j++)
			;
		if (j == found) {
			if (found == max)
				continue;
			out[found++] = (struct nvml_proc_util){ s[k].pid, 0 };
			sum[j] = 0;
			nsum[j] = 0;
		}
		sum[j] += s[k].sm > 100 ? 1.0 : s[k].sm / 100.0;
		nsum[j]++;
	}
	for (size_t j = 0; j < found; j++)
		out[j].sm = sum[j] / nsum[j];
	if (last)
		n->proc_seen[i] = last;
	return (int)found;
}

bool nvml_has_process_util(const struct nvml *n)
{
	const char *fake = getenv("KMUX_FAKE_PROC_UTIL");

	if (!n->lib)
		return n->count && fake && *fake;
	return n->get_proc_util != NULL;
}
