/*
 * sim-log.h - simcuda's operation records: their in-memory form, the text
 * line they are logged as, and the overlap check over a set of them.
 *
 * Shared by libcuda.so.1 (which records, logs and checks in-process) and
 * simcuda-check (which parses logs and checks them); neither part depends on
 * CUDA here.  The line format is described in README.md and sim-log.c.
 */
#ifndef SIMCUDA_SIM_LOG_H
#define SIMCUDA_SIM_LOG_H

#include <stddef.h>
#include <stdint.h>

#define SIM_LOG_VERSION 1
#define SIM_NAME_MAX 64		/* record names, truncated, NUL included */
#define SIM_WHY_MAX 24		/* fault reasons */
#define SIM_LINE_MAX 65536	/* longest log line the checker accepts */
#define SIM_REC_MAX_ACC 1024	/* accesses per record in a log line */
#define SIM_REC_MAX_FAULT 64	/* faults per record in a log line */

/* Record kinds, as logged (kind=...) and as enum simcuda_op_kind. */
enum sim_rec_kind {
	SIM_REC_KERNEL = 0,
	SIM_REC_MEMCPY = 1,
	SIM_REC_MEMSET = 2,
	SIM_REC_HOST = 3,
	SIM_REC_GRAPH = 4,
	SIM_REC_FREE = 5,
	SIM_REC_NKINDS
};

struct sim_acc {
	uint64_t alloc;		/* allocation id: process-unique, not reused */
	uint64_t base;		/* its base address */
	unsigned rw;		/* SIM_READ | SIM_WRITE */
	/*
	 * The bytes touched, from the base: the hull of every access merged
	 * in ([0, SIM_ACC_WHOLE): all of it, as for a free).  Two records
	 * conflict only where their ranges share a byte.
	 */
	uint64_t lo, hi;
};

#define SIM_ACC_WHOLE UINT64_MAX

struct sim_fault {
	uint64_t addr;
	uint64_t size;
	unsigned rw;
	char why[SIM_WHY_MAX];	/* one word: unmapped, bounds, noaccess, ... */
};

struct sim_rec {
	uint64_t seq;
	long pid;
	uint64_t ctx;
	int dev;
	uint64_t stream;	/* 0: the host (synchronous cuMemFree) */
	uint64_t graph;		/* graph exec id, 0 when not from a graph */
	int kind;		/* enum sim_rec_kind */
	char name[SIM_NAME_MAX];
	uint64_t start, end;	/* CLOCK_MONOTONIC ns */
	struct sim_acc *acc;
	unsigned nacc, acc_cap;
	struct sim_fault *fault;
	unsigned nfault, fault_cap;
	int logged;		/* written to SIMCUDA_LOG already */
};

const char *sim_rec_kind_name(int kind);

/*
 * Add (alloc, base, rw) to r, the whole allocation, merging with an
 * existing entry.  -1: ENOMEM.
 */
int sim_rec_add_acc(struct sim_rec *r, uint64_t alloc, uint64_t base,
		    unsigned rw);
/* The same for the bytes [lo, hi) from base (their hull when merged). */
int sim_rec_add_range(struct sim_rec *r, uint64_t alloc, uint64_t base,
		      uint64_t lo, uint64_t hi, unsigned rw);
int sim_rec_add_fault(struct sim_rec *r, uint64_t addr, uint64_t size,
		      unsigned rw, const char *why);
void sim_rec_free(struct sim_rec *r);

/*
 * Format r as one log line (with the trailing newline) into buf.  Returns the
 * length, or the length it would need (>= len) when buf is too small, as
 * snprintf does.
 */
size_t sim_rec_format(const struct sim_rec *r, char *buf, size_t len);

/*
 * Parse one log line (without or with its newline) into r, which the caller
 * releases with sim_rec_free().  0 on success, 1 for a line to skip (blank,
 * comment), -1 when malformed (err filled).
 */
int sim_rec_parse(const char *line, struct sim_rec *r, char *err,
		  size_t errlen);

/*
 * The overlap check.  recs[0..n) are reordered (sorted by start).  Returns 0
 * when clean; 1 when a fault or a conflicting pair was found, with *a (and
 * *b for a pair; NULL for a fault) pointing at the records; -1 on ENOMEM.
 */
int sim_check_run(struct sim_rec **recs, size_t n, struct sim_rec **a,
		  struct sim_rec **b);

/*
 * Describe the outcome of sim_check_run() in msg: both records of a pair or
 * the faulting record, as log lines with a one-line explanation.
 */
void sim_check_describe(const struct sim_rec *a, const struct sim_rec *b,
			char *msg, size_t len);

#endif
