/*
 * sim.h - simcuda's internal state: devices, contexts, streams, operations,
 * allocations, events, modules, graphs, and the functions the sim-*.c files
 * share.  Test programs never include this; they include simcuda.h.
 *
 * Concurrency model: one process-wide mutex (sim.lock) guards all of this
 * state, and one condition variable (sim.cond) is broadcast on every change a
 * thread may wait for (work queued, operation completed, pin dropped).  The
 * simulator is a test double, so simplicity beats scalability here.  No user
 * code (kernels, host functions, callbacks) ever runs under the lock.
 */
#ifndef SIMCUDA_SIM_H
#define SIMCUDA_SIM_H

/*
 * Internal mode: versioned names (cuMemAlloc_v2, cuLaunchKernel_ptsz, ...)
 * are declared as themselves instead of being macros, and every declaration
 * gets default visibility (the library is built with -fvisibility=hidden).
 */
#define __CUDA_API_VERSION_INTERNAL 1
#define __CUDA_API_PUSH_VISIBILITY_DEFAULT 1
#include <cuda.h>

#include <limits.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "sim-log.h"
#include "simcuda.h"

#define SIM_API __attribute__((visibility("default")))
#define SIM_PRINTF(a, b) __attribute__((format(printf, a, b)))

#define SIM_MAX_DEVICES 16
#define SIM_DEFAULT_MEM (16ULL << 30)
#define SIM_DRIVER_VERSION 13000
#define SIM_ALLOC_ALIGN 256ULL
#define SIM_GRANULARITY (2ULL << 20)	/* VMM granularity */

/*
 * The simulated device address space.  Device d allocates (cuMemAlloc and
 * friends) from its own 1 TiB window, bottom-up, never reusing an address;
 * VMM reservations come from one window shared by all devices.  Nothing here
 * is a host address: the windows lie below the kernel's mmap area, so a
 * device pointer dereferenced on the host faults instead of aliasing.
 */
#define SIM_VA_DEV_TOP 0x7e0000000000ULL	/* device 0 is just below */
#define SIM_VA_DEV_SIZE (1ULL << 40)
#define SIM_VA_VMM_BASE 0x7e0000000000ULL
#define SIM_VA_VMM_SIZE (1ULL << 39)
#define SIM_VA_LOW (SIM_VA_DEV_TOP - SIM_MAX_DEVICES * SIM_VA_DEV_SIZE)
#define SIM_VA_HIGH (SIM_VA_VMM_BASE + SIM_VA_VMM_SIZE)

#define SIM_MAGIC_CTX 0x73637478u	/* "sctx" */
#define SIM_MAGIC_FUNC 0x7366756eu	/* "sfun": a CUfunction */
#define SIM_MAGIC_KERNEL 0x736b726eu	/* "skrn": a CUkernel */

#define sim_container_of(ptr, type, member) \
	((type *)(void *)((char *)(ptr) - offsetof(type, member)))

/* ---- intrusive doubly linked lists -------------------------------------- */

struct sim_list {
	struct sim_list *prev, *next;
};

static inline void sim_list_init(struct sim_list *l)
{
	l->prev = l->next = l;
}

static inline int sim_list_empty(const struct sim_list *l)
{
	return l->next == l;
}

static inline void sim_list_add_tail(struct sim_list *l, struct sim_list *n)
{
	n->prev = l->prev;
	n->next = l;
	l->prev->next = n;
	l->prev = n;
}

static inline void sim_list_del(struct sim_list *n)
{
	n->prev->next = n->next;
	n->next->prev = n->prev;
	n->prev = n->next = n;
}

/* ---- handles ------------------------------------------------------------ */

/*
 * Every handle given to the program is registered with its type, so a stale
 * or foreign handle is answered with an error instead of being dereferenced.
 */
enum sim_htype {
	SIM_H_CTX = 1,
	SIM_H_STREAM,
	SIM_H_EVENT,
	SIM_H_MODULE,
	SIM_H_FUNC,
	SIM_H_LIBRARY,
	SIM_H_KERNEL,
	SIM_H_GRAPH,
	SIM_H_GEXEC,
	SIM_H_POOL,
	SIM_H_ARRAY,
	SIM_H_MIPMAP,
};

int sim_handle_add(const void *p, enum sim_htype type);
void sim_handle_del(const void *p);
int sim_handle_ok(const void *p, enum sim_htype type);
void sim_handle_fini(void);

/*
 * An explicit memory pool (cuMemPoolCreate).  Freed blocks stay the pool's
 * (counted in the device's `used`) up to the release threshold, until
 * cuMemPoolTrimTo; a new allocation from the pool takes kept bytes first.
 * Addresses are never reused all the same, so a use after free still
 * faults.  Destroyed with live allocations: freed at the last one's drop.
 */
struct sim_pool {
	int dev;
	uint64_t threshold;	/* CU_MEMPOOL_ATTR_RELEASE_THRESHOLD */
	uint64_t kept;		/* freed bytes the pool still holds */
	uint64_t live;		/* bytes of live allocations */
	uint64_t nlive;
	int destroyed;
};
/* Lock held.  A block of size bytes from pool p goes back to it. */
void sim_pool_put(struct sim_pool *p, uint64_t size);

/* ---- devices and contexts ----------------------------------------------- */

struct sim_ctx;

struct sim_device {
	int ordinal;
	uint64_t total;			/* capacity, bytes */
	uint64_t used;			/* bytes allocated */
	uint64_t va_next, va_end;	/* bump allocator of addresses */
	struct sim_ctx *primary;	/* created on first retain, kept */
	unsigned primary_flags;
};

struct sim_ctx {
	uint32_t magic;
	uint64_t id;
	struct sim_device *dev;
	unsigned flags;
	int is_primary;
	int refs;			/* primary: retain count */
	int active;			/* resources live (explicit: always) */
	int dying;			/* being torn down */
	CUresult sticky;		/* first asynchronous error */
	struct sim_list link;		/* sim.ctxs */
	struct sim_list streams;	/* every stream, destroyed ones too */
	struct sim_stream *legacy;
	struct sim_list events;
	struct sim_list modules;
	struct sim_list graphs;
	struct sim_list gexecs;
	size_t limits[16];
	/* The stack reservation counted in dev->used (SIMCUDA_STACK_THREADS). */
	uint64_t stack_reserved;
};

struct sim_global {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int initialized;
	int ndev;
	struct sim_device dev[SIM_MAX_DEVICES];
	uint64_t mem_bytes;
	unsigned long long kernel_us;
	int discard;	/* SIMCUDA_DISCARD: kernels checked, never run */
	int no_pools;	/* SIMCUDA_NO_POOLS: no memory pool support */
	/*
	 * SIMCUDA_NO_PARAM_INFO: the kernel of this name has no parameter
	 * layout to report, as on a driver without cuFuncGetParamInfo
	 * ("": every kernel has one).
	 */
	char no_param_info[128];
	/*
	 * SIMCUDA_STACK_THREADS: threads the device holds at once; a context
	 * then counts its stack limit times that many bytes as used, as a
	 * GPU reserves local memory (0: not modelled).
	 */
	uint64_t stack_threads;
	char log_path[PATH_MAX];
	pid_t pid;
	uint64_t next_id;		/* contexts, streams, allocations */
	uint64_t next_seq;		/* operations */
	struct sim_list ctxs;
	struct sim_list libraries;
};

extern struct sim_global sim;

void sim_lock(void);
void sim_unlock(void);
void sim_wait(void);			/* on sim.cond, lock held */
void sim_wake(void);			/* broadcast sim.cond */
uint64_t sim_new_id(void);		/* lock held */
uint64_t sim_now(void);			/* CLOCK_MONOTONIC ns */
void sim_warn(const char *fmt, ...) SIM_PRINTF(1, 2);

/* CUDA_ERROR_NOT_INITIALIZED until cuInit succeeded. */
CUresult sim_check_init(void);

/* Lock held.  The calling thread's current context, or NULL. */
struct sim_ctx *sim_ctx_current(void);
/* Lock held.  Current context, active, else INVALID_CONTEXT (or sticky). */
CUresult sim_ctx_get(struct sim_ctx **out);
/* Lock held.  h valid and active. */
int sim_ctx_usable(struct sim_ctx *c);
/* Lock held: wait until every stream of c has drained. */
void sim_ctx_drain(struct sim_ctx *c);
void sim_ctx_set_sticky(struct sim_ctx *c, CUresult err);
CUresult sim_device_check(CUdevice dev);

/* A thread-unique serial, for per-thread default streams. */
uint64_t sim_thread_serial(void);

/* ---- allocations -------------------------------------------------------- */

enum sim_alloc_kind {
	SIM_ALLOC_DEVICE,	/* cuMemAlloc, pitch, async */
	SIM_ALLOC_MANAGED,	/* cuMemAllocManaged: address == host backing */
	SIM_ALLOC_HOST,		/* cuMemAllocHost / cuMemHostAlloc */
	SIM_ALLOC_REGISTERED,	/* cuMemHostRegister */
	SIM_ALLOC_VMM,		/* a cuMemAddressReserve range */
};

struct sim_vmm_va;

struct sim_alloc {
	uint64_t id;
	enum sim_alloc_kind kind;
	uint64_t base, size;
	void *host;		/* backing (VMM: the reservation's shadow) */
	size_t map_len;		/* nonzero: host was mmap'ed with this length */
	struct sim_ctx *ctx;	/* owner; NULL for VMM */
	int dev;
	unsigned flags;		/* host alloc / register flags */
	int pins;		/* running operations using it */
	int dead;		/* out of the table; freed at the last unpin */
	struct sim_vmm_va *va;	/* SIM_ALLOC_VMM */
	struct sim_pool *pool;	/* from cuMemAllocFromPoolAsync, or NULL */
	/*
	 * A graph allocation: its address is its node's for the context's
	 * life; live from a launch that reaches the node to its free.
	 */
	int graph, live;
};

/* Lock held for all of these. */
struct sim_alloc *sim_alloc_find(uint64_t addr);
int sim_alloc_insert(struct sim_alloc *a);
void sim_alloc_remove(struct sim_alloc *a);
/* Drop a removed allocation: now, or at its last unpin. */
void sim_alloc_release(struct sim_alloc *a);
void sim_alloc_unpin(struct sim_alloc *a);
/* Free every allocation owned by c (context teardown). */
void sim_alloc_free_ctx(struct sim_ctx *c);
/* Reserve device addresses: 0 and *va, or OUT_OF_MEMORY. */
CUresult sim_va_alloc(struct sim_device *d, uint64_t size, uint64_t *va);
/* Free a device allocation (cuMemFree, cuMemFreeAsync at run time). */
CUresult sim_mem_free_locked(uint64_t p, int async_op);
/* Lock held.  A graph allocation of size bytes in c, not live yet. */
CUresult sim_graph_alloc_new(struct sim_ctx *c, uint64_t size,
			     CUdeviceptr *out);
/* Lock held.  A zeroed device allocation in c (a module's variable). */
CUresult sim_mem_alloc_locked(struct sim_ctx *c, uint64_t size,
			      CUdeviceptr *out);
struct sim_module;
/* Lock held.  The address of module-scope variable name of m, or 0. */
CUdeviceptr sim_module_var(const struct sim_module *m, const char *name,
			      size_t *bytes);
int sim_addr_is_simulated(uint64_t addr);
/*
 * Lock held.  The device range a live texture or surface object id names
 * (its base, and its length in *bytes), or 0 (sim-array.c).
 */
CUdeviceptr sim_texobj_range(uint64_t id, size_t *bytes);
void sim_array_fini(void);

/* ---- VMM ----------------------------------------------------------------- */

/* Lock held.  Check [p, p+bytes) of VMM range a for rw and record it. */
struct sim_exec;
int sim_vmm_access(struct sim_exec *x, struct sim_alloc *a, uint64_t p,
		   uint64_t bytes, unsigned rw, const char **why);
/* Lock held.  The cuMemMap range holding p in VMM range a: 0, or -1. */
int sim_vmm_range(struct sim_alloc *a, uint64_t p, uint64_t *base,
		  uint64_t *size);
void sim_vmm_fini(void);

/* ---- operations and streams --------------------------------------------- */

enum sim_op_kind {
	SIM_OP_KERNEL,
	SIM_OP_MEMCPY,
	SIM_OP_MEMSET,
	SIM_OP_HOST,		/* cuLaunchHostFunc */
	SIM_OP_CALLBACK,	/* cuStreamAddCallback */
	SIM_OP_GRAPH,
	SIM_OP_FREE,		/* cuMemFreeAsync */
	SIM_OP_MARK,		/* event record: completes a mark */
	SIM_OP_WAIT,		/* cuStreamWaitEvent: waits for a mark */
	SIM_OP_NOP,		/* synchronization point */
	SIM_OP_GALLOC,		/* a graph's allocation node */
};

/* A recorded event position: done when the stream got there. */
struct sim_mark {
	int refs;
	int done;
	uint64_t t_ns;
};

struct sim_mark *sim_mark_new(void);
void sim_mark_put(struct sim_mark *m);

struct sim_stream;

/* "Wait until stream s completed its first pos operations." */
struct sim_dep {
	struct sim_stream *s;
	uint64_t pos;
};

struct sim_func;
struct sim_gexec;

/* Address sides of a copy. */
#define SIM_SIDE_DEVICE 0x1	/* must be a simulated allocation */
#define SIM_SIDE_ANY 0x2	/* allocation if known, else host memory */
#define SIM_SIDE_HOST 0x4	/* host memory (pinned is still recorded) */

struct sim_op {
	struct sim_op *next;
	enum sim_op_kind kind;
	uint64_t seq;
	uint64_t pos;			/* 1-based position in its stream */
	struct sim_dep *deps;
	int ndeps;
	struct sim_mark *mark;		/* MARK: set; WAIT: wait for */
	union {
		struct {
			struct sim_func *f;
			unsigned grid[3], block[3], shmem;
			unsigned char *args;	/* packed, f's layout */
			size_t args_len;
		} kernel;
		struct {
			uint64_t dst, src;
			unsigned dst_side, src_side;
			size_t bytes;
			void *staged;	/* private copy of a pageable source */
		} copy;
		struct {
			uint64_t dst;
			uint32_t value;
			unsigned elsize;	/* 1, 2 or 4 */
			size_t width;		/* elements per row */
			size_t height;
			size_t pitch;		/* bytes between rows */
		} set;
		struct {
			CUhostFn fn;
			CUstreamCallback cb;
			CUstream handle;	/* as the program named it */
			void *data;
		} host;
		struct {
			struct sim_gexec *g;
		} graph;
		struct {
			uint64_t ptr;
		} free;
		struct {
			uint64_t ptr;	/* the node's allocation */
		} galloc;
	} u;
};

enum sim_stream_kind {
	SIM_STREAM_USER,
	SIM_STREAM_LEGACY,
	SIM_STREAM_PTDS,
};

struct sim_graph;

struct sim_stream {
	uint64_t id;
	struct sim_ctx *ctx;
	enum sim_stream_kind kind;
	unsigned flags;			/* CU_STREAM_NON_BLOCKING */
	int prio;
	uint64_t owner;			/* PTDS: thread serial */
	struct sim_op *head, *tail;	/* queued, not started */
	uint64_t submitted, completed;
	int running;
	pthread_t thread;
	int has_thread;
	int stop;			/* worker exits once drained */
	int destroyed;			/* cuStreamDestroy called */
	/* Stream capture. */
	struct sim_graph *cap;
	int cap_origin;
	uint64_t cap_id;
	CUstreamCaptureMode cap_mode;
	struct sim_list link;		/* ctx->streams */
};

/* Lock held.  Resolve a handle; pt: NULL means the per-thread stream. */
CUresult sim_stream_resolve(CUstream h, int pt, struct sim_stream **out);
struct sim_stream *sim_stream_new(struct sim_ctx *c, enum sim_stream_kind k,
				  unsigned flags, int prio);
/* Lock held.  Queue op on s (or capture it); takes ownership of op. */
CUresult sim_stream_submit(struct sim_stream *s, struct sim_op *op);
/* Lock held.  Wait until s completed pos ops. */
void sim_stream_wait_pos(struct sim_stream *s, uint64_t pos);
/*
 * Lock held.  Submit op and wait for it (synchronous API calls).  Returns
 * the sticky error, or STREAM_CAPTURE_UNSUPPORTED on a capturing stream.
 */
CUresult sim_stream_submit_sync(struct sim_stream *s, struct sim_op *op);
/* Lock held.  Sync s as cuStreamSynchronize does. */
CUresult sim_stream_sync(struct sim_stream *s);
/* Lock held (dropped while joining).  Stop, join and free every stream. */
void sim_stream_free_all(struct sim_ctx *c);
uint64_t sim_stream_handle_id(struct sim_stream *s);

struct sim_op *sim_op_new(enum sim_op_kind kind);
void sim_op_free(struct sim_op *op);
struct sim_op *sim_op_clone(const struct sim_op *op);

/* ---- running operations (sim-exec.c) ------------------------------------ */

struct sim_pin {
	struct sim_alloc *a;
	uint64_t lo, hi;		/* address range used */
};

struct sim_exec {
	struct sim_kctx k;		/* kernels see this part */
	struct sim_op *op;
	struct sim_stream *s;
	struct sim_rec *rec;		/* NULL: not recorded */
	struct sim_pin *pins;
	unsigned npins, pins_cap;
	void **scratch;
	unsigned nscratch;
	int faulted;
	struct sim_list link;		/* running list */
};

/* Worker side: run op on s (lock not held). */
void sim_exec_op(struct sim_stream *s, struct sim_op *op, uint64_t graph);
/*
 * Lock held.  Translate [p, p+bytes) for x, record and pin it.  side is a
 * SIM_SIDE_*; for host memory p is returned as is.  NULL on a fault
 * (recorded).
 */
void *sim_exec_access(struct sim_exec *x, uint64_t p, size_t bytes,
		      unsigned rw, unsigned side);
void sim_exec_fault(struct sim_exec *x, uint64_t p, uint64_t bytes,
		    unsigned rw, const char *why);
/* Lock held.  Record a fault on running ops using [lo, hi) of a. */
int sim_exec_fault_users(struct sim_alloc *a, uint64_t lo, uint64_t hi,
			 const char *why);
/* Lock held.  Wait until no running op pins a. */
void sim_exec_wait_unpinned(struct sim_alloc *a);

/* Run helpers per kind (lock not held). */
void sim_kernel_run(struct sim_exec *x);
void sim_copy_run(struct sim_exec *x);
void sim_set_run(struct sim_exec *x);
void sim_graph_run(struct sim_exec *x);

/* ---- records (sim-record.c) --------------------------------------------- */

/* A record of ctx c (may be NULL) on stream s (NULL: the host). */
struct sim_rec *sim_rec_new(struct sim_ctx *c, struct sim_stream *s, int kind,
			    const char *name, uint64_t seq);
/* Lock held.  Keep r (completed). */
void sim_rec_commit(struct sim_rec *r);
/* Lock held.  Append unlogged records of ctx id (0: all) to SIMCUDA_LOG. */
void sim_rec_flush(uint64_t ctx_id);
void sim_rec_fini(void);

/* ---- events, modules, graphs -------------------------------------------- */

struct sim_event {
	struct sim_ctx *ctx;
	unsigned flags;
	struct sim_mark *mark;		/* last record, NULL if never */
	struct sim_graph *captured;	/* recorded into this capture */
	struct sim_list link;		/* ctx->events */
};

void sim_event_free_all(struct sim_ctx *c);

struct sim_module {
	struct sim_ctx *ctx;		/* NULL when owned by a library */
	void *dl;
	char *path;
	const struct sim_kernel *table;
	struct sim_func *funcs;
	unsigned nfuncs;
	/* Its module-scope variables, allocated in ctx (modules only). */
	const struct sim_var *globals;
	unsigned nglobals;
	CUdeviceptr *gaddr;
	struct sim_list link;		/* ctx->modules */
};

struct sim_func {
	uint32_t magic;			/* SIM_MAGIC_FUNC / SIM_MAGIC_KERNEL */
	const struct sim_kernel *k;
	struct sim_module *mod;
	struct sim_func *func;		/* KERNEL: its CUfunction */
	size_t offset[SIM_MAX_PARAMS];
	size_t args_len;		/* end of the last parameter */
	int max_dyn_shmem;
};

struct sim_library {
	struct sim_module *mod;
	struct sim_func *kernels;	/* magic SIM_MAGIC_KERNEL */
	struct sim_list link;		/* sim.libraries */
};

void sim_module_free_all(struct sim_ctx *c);
void sim_library_fini(void);
/* Lock held.  CUfunction or CUkernel to the function, or NULL. */
struct sim_func *sim_func_resolve(CUfunction f);

struct sim_graph {
	uint64_t id;
	struct sim_ctx *ctx;
	struct sim_op *head, *tail;	/* captured operations, in order */
	unsigned nops;
	int invalid;
	int registered;			/* handed out by cuStreamEndCapture */
	struct sim_list link;		/* ctx->graphs */
};

struct sim_gexec {
	uint64_t id;
	struct sim_ctx *ctx;
	struct sim_op **ops;
	unsigned nops;
	int refs;			/* handle + queued launches */
	int destroyed;
	int auto_free;			/* ..._AUTO_FREE_ON_LAUNCH */
	struct sim_list link;		/* ctx->gexecs */
};

void sim_graph_free_all(struct sim_ctx *c);
void sim_gexec_put(struct sim_gexec *g);
/* Lock held.  Captured op handling from sim_stream_submit. */
CUresult sim_graph_capture_op(struct sim_stream *s, struct sim_op *op);
/* Lock held.  A synchronization of a capturing stream: invalidate. */
void sim_graph_capture_invalidate(struct sim_stream *s);

/* ---- process exit: free what is idle, for leak checkers ---------------- */

void sim_ctx_fini(void);
void sim_mem_fini(void);

/* ---- cuGetProcAddress ---------------------------------------------------- */

CUresult sim_procaddr(const char *symbol, void **pfn, int version,
		      cuuint64_t flags, CUdriverProcAddressQueryResult *status);

#endif
