/*
 * preload.c - libkmux.so's start-up: read the environment once, switch on
 * what was asked for, and keep the process fork-safe.
 *
 * Runs as a constructor in every process that carries the preload, CUDA or
 * not, so it does as little as possible: no libcuda, no files unless tracing
 * or verification was asked for.  The environment is read here and nowhere
 * else (the launch path must never call getenv):
 *
 *   KMUX_LOG                    error | warn | info | debug (default: errors)
 *   KMUX_TRACE_DIR, KMUX_TRACE_TIMING     trace.h
 *   KMUX_STREAMS, CUDA_DEVICE_MAX_CONNECTIONS, KMUX_BARRIER_KERNELS
 *                               streams.h (a bad value: one line on stderr
 *                               even without KMUX_LOG, and the program
 *                               runs unscheduled)
 *   KMUX_DEBUG_STREAMS_FAIL     streams.h (test knob: injected failures)
 *   KMUX_PTX_READONLY           ptx-table.h (kernel parameters proven
 *                               read-only from PTX: scheduled as reads;
 *                               on under the scheduler unless "0")
 *   KMUX_VERIFY_LOG             verify.h
 *   KMUX_MEM_QUOTA              quota.h (a bad value: a warning, no quota)
 *   KMUX_MEMORY, KMUX_LAZY_MIN, KMUX_MEM_BUDGET, KMUX_DEBUG_MM_HOST_FAIL
 *                               mm.h (a bad value: a warning, unmanaged)
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "alloc-table.h"
#include "copy.h"
#include "ctx-stack.h"
#include "graph-mem.h"
#include "log.h"
#include "mm.h"
#include "preload.h"
#include "ptrtab.h"
#include "ptx-table.h"
#include "quota.h"
#include "stream-alloc.h"
#include "streams.h"
#include "texobj.h"
#include "verify.h"

int kmux_tracking;
int kmux_tracking_mm_only;
struct kmux_config kmux_config;

static int env_flag(const char *name)
{
	const char *v = getenv(name);

	return v && *v && strcmp(v, "0") != 0;
}

/*
 * fork: the allocation map's writer lock is held across fork() so the child
 * inherits a consistent map; the child drops the parent's trace buffers and
 * opens its own trace file.
 */
static void preload_atfork_prepare(void)
{
	gmem_atfork_prepare();
	alloc_table_atfork_prepare();
	quota_atfork_prepare();
	mm_atfork_prepare();
	ptrtab_atfork_prepare();
	texobj_atfork_prepare();
}

static void preload_atfork_parent(void)
{
	texobj_atfork_parent();
	ptrtab_atfork_parent();
	mm_atfork_parent();
	quota_atfork_parent();
	alloc_table_atfork_parent();
	gmem_atfork_parent();
}

static void preload_atfork_child(void)
{
	texobj_atfork_child();
	ptrtab_atfork_child();
	mm_atfork_child();
	quota_atfork_child();
	alloc_table_atfork_child();
	gmem_atfork_child();
	trace_atfork_child();
	streams_atfork_child();
	salloc_atfork_child();
	verify_atfork_child();
}

__attribute__((constructor)) static void preload_init(void)
{
	const char *v = getenv("KMUX_LOG");
	int level;

	if (v && *v) {
		level = kmux_log_parse_level(v);
		kmux_log_level = level >= 0 ? level : KMUX_LOG_INFO;
	}
	quota_init(getenv("KMUX_MEM_QUOTA"),
		   getenv("KMUX_JOB") && *getenv("KMUX_JOB"));
	kmux_config.trace_dir = getenv("KMUX_TRACE_DIR");
	kmux_config.trace_timing = env_flag("KMUX_TRACE_TIMING");
	if (kmux_config.trace_dir && *kmux_config.trace_dir) {
		if (trace_init(kmux_config.trace_dir,
			       kmux_config.trace_timing) == 0)
			kmux_tracking = 1;
	}
	kmux_config.streams = getenv("KMUX_STREAMS");
	streams_debug_fail(getenv("KMUX_DEBUG_STREAMS_FAIL"));
	copy_debug_sync_wait(getenv("KMUX_DEBUG_SYNC_WAIT"));
	copy_tables_init(getenv("KMUX_PTRTAB"));
	streams_keep_up_init(getenv("KMUX_KEEP_UP"),
			     getenv("KMUX_DEBUG_KEEP_UP_US"));
	streams_defer_init(getenv("KMUX_DEFER_FREE"));
	streams_readahead_init(getenv("KMUX_READAHEAD"),
			       getenv("KMUX_DEBUG_READAHEAD"));
	streams_passthru_init(getenv("KMUX_PASS_THROUGH"));
	streams_pace_init(getenv("KMUX_PACE"), getenv("KMUX_DEBUG_PACE"));
	streams_durations_init(getenv("KMUX_DURATIONS"),
			       getenv("KMUX_DEBUG_DURATION_UNIT_US"));
	streams_level_init(getenv("KMUX_LEVEL"));
	if (streams_init(kmux_config.streams,
			 getenv("CUDA_DEVICE_MAX_CONNECTIONS"),
			 getenv("KMUX_BARRIER_KERNELS")) == 0 && kmux_streams)
		kmux_tracking = 1;
	/* After the scheduler: without it no image is scanned. */
	ptxtab_init(getenv("KMUX_PTX_READONLY"), kmux_streams > 0);
	ptxtab_extents_init(getenv("KMUX_PTX_EXTENTS"));
	ptxtab_ranges_init(getenv("KMUX_PTX_RANGES"));
	ptxtab_globals_init(getenv("KMUX_PTX_GLOBALS"));
	kmux_config.verify_log = getenv("KMUX_VERIFY_LOG");
	if (kmux_config.verify_log && *kmux_config.verify_log &&
	    verify_init(kmux_config.verify_log) == 0)
		kmux_tracking = 1;
	/* After the scheduler: both add fields to the trace's exit line. */
	if (mm_init(getenv("KMUX_MEMORY"), getenv("KMUX_LAZY_MIN"),
		    getenv("KMUX_MEM_BUDGET")) == 0 && mm_on) {
		/* The memory manager alone: only its objects matter. */
		if (!kmux_tracking)
			kparams_set_span_filter(mm_span);
		kmux_tracking_mm_only = !kmux_tracking;
		kmux_tracking = 1;
	}
	ctxstack_init(getenv("KMUX_CTX_STACK"), mm_on);
	/* After both: it needs the scheduler and no memory manager. */
	salloc_init(getenv("KMUX_STREAM_ALLOC"),
		    getenv("KMUX_STREAM_ALLOC_KEEP"));
	pthread_atfork(preload_atfork_prepare, preload_atfork_parent,
		       preload_atfork_child);
}
