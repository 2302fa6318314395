/*
 * trace-merge.h - reading the preload's per-process trace files
 * (kmux-trace.<pid>.jsonl, format in src/preload/trace.c) and merging them
 * into one Chrome/Perfetto trace with a summary.
 *
 * Library-style: nothing here prints on its own.  Problems with the input
 * (a truncated last line from a killed process, a garbage line) become
 * warnings the caller can list; only I/O and memory failures are errors.
 */
#ifndef KMUX_TRACE_MERGE_H
#define KMUX_TRACE_MERGE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cjson/cJSON.h>

#define TRACE_MERGE_VERSION	1	/* of the "kmux" object we write */
#define TRACE_LINE_VERSION	1	/* of the per-process lines we read */

enum trace_line_type {
	TL_PROCESS,
	TL_LAUNCH,
	TL_GPU,
	TL_COPY,
	TL_SYNC,
	TL_ALLOC,
	TL_FREE,
	TL_EXIT,
	TL_MM,		/* the memory manager's totals after a change */
};

/* enum trace_api of the preload, by name. */
enum tl_api {
	TL_API_LAUNCH, TL_API_LAUNCH_EX, TL_API_LAUNCH_COOP, TL_API_GRAPH,
	TL_API_HOST_FUNC,
};

enum tl_copy {
	TL_COPY_HTOD, TL_COPY_DTOH, TL_COPY_DTOD, TL_COPY_ANY, TL_COPY_PEER,
	TL_COPY_2D, TL_COPY_3D, TL_COPY_ARRAY, TL_MEMSET,
};

enum tl_sync {
	TL_SYNC_CTX, TL_SYNC_STREAM, TL_SYNC_EVENT, TL_SYNC_STREAM_WAIT_EVENT,
	TL_SYNC_EVENT_RECORD, TL_SYNC_STREAM_QUERY, TL_SYNC_EVENT_QUERY,
};

enum tl_alloc { TL_ALLOC_DEVICE, TL_ALLOC_MANAGED, TL_ALLOC_HOST, TL_ALLOC_VMM };

/* One line of a per-process file, validated.  Strings are owned. */
struct trace_line {
	enum trace_line_type type;
	int64_t t, d;		/* ns; t relative to the header's t0 */
	int tid;

	/* TL_PROCESS */
	int pid, ppid, timing;
	int64_t t0, wall0;
	char *cmdline;

	/* TL_LAUNCH (api, name, stream, ...), TL_GPU (seq) */
	int api;
	char *name;		/* NULL for graphs and host functions */
	uint64_t stream;
	unsigned grid[3], block[3];
	uint64_t shmem;
	uint64_t *allocs;
	size_t nallocs;
	int result;
	unsigned kflags;
	uint64_t seq;
	int captured;		/* went into a CUDA graph capture (--timing) */

	/* TL_COPY (kind, bytes, dst, src, stream, async), TL_SYNC (kind, obj) */
	int kind;
	uint64_t bytes, dst, src, obj;
	int async;

	/* TL_ALLOC, TL_FREE (kind too) */
	uint64_t id, base, size;
	int dev;

	/* TL_EXIT */
	uint64_t timing_dropped;

	/* TL_MM */
	uint64_t resident, evicted, reserved;
};

/*
 * Parse one line (without its newline).  0 and *out filled (release it with
 * trace_line_release), or -EINVAL with a reason in err.
 */
int trace_line_parse(const char *s, size_t len, struct trace_line *out,
		     char *err, size_t errlen);
void trace_line_release(struct trace_line *l);

struct trace_kernel_stat {
	const char *name;
	uint64_t count;		/* launches */
	uint64_t timed;		/* of which with a GPU time (--timing) */
	int64_t total_ns;	/* GPU time with --timing, else host call time */
};

struct trace_summary {
	unsigned processes;
	uint64_t launches;		/* every launch record */
	uint64_t kernel_launches, graph_launches, host_funcs;
	uint64_t failed_launches;	/* result != CUDA_SUCCESS */
	uint64_t syncs;			/* host-blocking: ctx, stream, event */
	uint64_t memcpys, memsets;
	uint64_t peak_device_bytes;	/* all processes together */
	uint64_t current_device_bytes;	/* not freed when processes ended */
	double wall_s, launches_per_s;
	int timing;
	uint64_t timing_unresolved;	/* timed launches without GPU time */
	uint64_t captured_launches;	/* into a graph capture (--timing) */
	uint64_t lines_skipped;
	struct trace_kernel_stat *kernels;	/* by total time, then count */
	size_t nkernels;
};

struct trace_merge;

struct trace_merge *trace_merge_new(void);
void trace_merge_free(struct trace_merge *m);

/*
 * Read one per-process file, or every kmux-trace.<pid>.jsonl in dir.  Bad
 * lines are skipped with a warning.  0, or -errno when the file or directory
 * cannot be read (also a warning for a single file of a directory).
 */
int trace_merge_add_file(struct trace_merge *m, const char *path);
int trace_merge_add_dir(struct trace_merge *m, const char *dir);
/* The same from memory; name is used in warnings. */
int trace_merge_add_buffer(struct trace_merge *m, const char *name,
			   const char *buf, size_t len);

/*
 * Join, place and summarize.  wall_s: how long the command ran (the CLI
 * measures it); 0 to use the span of the trace.  0 or -ENOMEM.
 */
int trace_merge_finish(struct trace_merge *m, double wall_s);

/* After finish. */
const struct trace_summary *trace_merge_summary(const struct trace_merge *m);
/* The summary as a new JSON object (NULL on out of memory). */
cJSON *trace_merge_summary_json(const struct trace_merge *m);
/* The whole merged trace.  0 or -errno. */
int trace_merge_write(const struct trace_merge *m, FILE *f);
/* People's summary; outname is the trace file written (NULL: none). */
void trace_merge_print_summary(const struct trace_merge *m, FILE *f,
			       const char *outname);

size_t trace_merge_nwarnings(const struct trace_merge *m);
/* The first warnings, kept verbatim; the count goes on beyond them. */
size_t trace_merge_nkept_warnings(const struct trace_merge *m);
const char *trace_merge_warning(const struct trace_merge *m, size_t i);

/* Human formats: "4.0 MiB", "12.3 ms", "56.7k". */
void trace_fmt_bytes(char *buf, size_t len, uint64_t bytes);
void trace_fmt_ns(char *buf, size_t len, double ns);
void trace_fmt_count(char *buf, size_t len, double n);

#endif
