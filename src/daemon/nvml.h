/*
 * nvml.h - kmuxd's view of the node's GPUs: how many, how much memory, how
 * busy.
 *
 * Owns GPU discovery and sampling.  NVML is loaded with
 * dlopen("libnvidia-ml.so.1") at daemon start, so kmux neither links nor
 * needs it: without it (CI, a machine without a driver) the daemon still
 * runs, with no GPUs unless KMUX_FAKE_GPUS says otherwise.
 *
 * KMUX_FAKE_GPUS="N:MEM" (e.g. "2:16G") is a test knob: N simulated GPUs of
 * MEM bytes each (MEM in size_parse()'s grammar), never busy, nothing used;
 * "0" simulates a node without GPUs.  It wins over NVML, so tests can
 * simulate any number of GPUs on any machine.  With it,
 * KMUX_FAKE_PROC_UTIL=FILE simulates per-process utilization: lines
 * "GPU PID PERCENT", read at every sample.
 */
#ifndef KMUX_NVML_H
#define KMUX_NVML_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define NVML_MAX_GPUS 64

struct nvml;

/* One reading of one GPU. */
struct nvml_sample {
	uint64_t mem_total;
	uint64_t mem_used;	/* all processes */
	double util;		/* 0..1: share of the last period a kernel ran */
	bool util_valid;	/* false for fake GPUs or when NVML failed */
};

/*
 * Find the GPUs: KMUX_FAKE_GPUS, else NVML, else none.  0 and *out, which
 * may hold no GPU (why then says why: for the daemon's log and the error
 * a submission gets); -EINVAL for a bad KMUX_FAKE_GPUS (why says what is
 * wrong); -ENOMEM.
 */
int nvml_open(struct nvml **out, char *why, size_t whylen);
void nvml_close(struct nvml *n);

uint32_t nvml_count(const struct nvml *n);
/* "NVML 12.550.54" / "KMUX_FAKE_GPUS=2:16G" / "none". */
const char *nvml_source(const struct nvml *n);
bool nvml_is_fake(const struct nvml *n);

/* Read GPU i (0 .. count-1) now: 0 or -EIO (NVML refused; *s unchanged). */
int nvml_sample(struct nvml *n, uint32_t i, struct nvml_sample *s);

/* Processes nvml_process_util() reports per GPU, at most. */
#define NVML_MAX_PROCS 256

/* One process's share of GPU i's SMs over the last sampling period. */
struct nvml_proc_util {
	uint32_t pid;
	double sm;		/* 0..1 */
};

/*
 * The processes that used GPU i since the previous call for i (NVML's
 * nvmlDeviceGetProcessUtilization: its samples averaged per process), at
 * most max of them.  The number found (0: none ran, or NVML cannot say),
 * or -EIO.
 */
int nvml_process_util(struct nvml *n, uint32_t i, struct nvml_proc_util *out,
		      size_t max);
/* Whether nvml_process_util() can tell at all (else 0 means "unknown"). */
bool nvml_has_process_util(const struct nvml *n);

/*
 * Parse a KMUX_FAKE_GPUS value: "N:MEM", 1 <= N <= 64, MEM > 0, or "0".
 * 0, or -EINVAL with the reason in why.
 */
int nvml_fake_parse(const char *spec, uint32_t *count, uint64_t *mem,
		    char *why, size_t whylen);

#endif
