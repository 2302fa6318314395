/*
 * simcuda.h - the ABI of simcuda, the CPU-simulated libcuda.so.1 that kmux's
 * tests run against (a test double: the product never depends on it).
 *
 * The only header that test programs and simulated kernel modules include.
 * It owns two things:
 *
 *   1. The kernel-module ABI.  A "module" given to cuModuleLoad or
 *      cuLibraryLoadFromFile is a CPU shared object that exports
 *
 *          const struct sim_kernel simcuda_kernels[] = {
 *                  { "vec_add", vec_add, 4, { 8, 8, 8, 4 }, 0 },
 *                  ...,
 *                  { 0 }
 *          };
 *
 *      Each kernel is called once per launch, on the stream's worker thread,
 *      with the launch's grid/block dimensions in struct sim_kctx and params[i]
 *      pointing at a private copy of parameter i.  A kernel reaches device
 *      memory only through sim_mem(), which checks the access (allocation,
 *      bounds, VMM mapping and access rights) and records it for the overlap
 *      checker.  sim_mem is reached through a function pointer inside the
 *      sim_kctx, never by symbol lookup, so modules work when the program
 *      loaded libcuda.so.1 with dlopen(RTLD_LOCAL).
 *
 *      A module may also export module-scope variables (a `__device__`
 *      variable of CUDA C), each a zeroed device allocation of its own made
 *      when cuModuleLoad* loads it into a context (cuModuleGetGlobal finds
 *      it; libraries have none):
 *
 *          const struct sim_var simcuda_vars[] = {
 *                  { "counter", 4 }, { 0 }
 *          };
 *
 *      A kernel finds one with sim_var() and reaches it with sim_mem()
 *      like any other memory; it is in no allocation the program made.
 *
 *   2. The test hooks libcuda.so.1 exports besides the driver API:
 *      simcuda_check(), simcuda_op_count(), simcuda_op_get(),
 *      simcuda_records_clear().
 *
 * Parameter layout (what cuFuncGetParamInfo reports and what the `extra`
 * launch buffer must follow): parameters in order, each at the next offset
 * aligned to min(size, 8) rounded down to a power of two.
 */
#ifndef SIMCUDA_H
#define SIMCUDA_H

#include <stddef.h>
#include <stdint.h>

#include <cuda.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SIMCUDA_ABI_VERSION 3

/* The symbol a kernel module exports. */
#define SIMCUDA_KERNELS_SYMBOL "simcuda_kernels"
/* The symbol of its module-scope variables, if it has any. */
#define SIMCUDA_VARS_SYMBOL "simcuda_vars"

#define SIM_MAX_PARAMS 32

/* Access modes for sim_mem(). */
#define SIM_READ 0x1
#define SIM_WRITE 0x2
#define SIM_RW (SIM_READ | SIM_WRITE)

/*
 * One per launch.  Fields before sim_private are the ABI.  A kernel may set
 * duration_us (to model data-dependent run time) and must not write the
 * others.
 */
struct sim_kctx {
	unsigned abi;		/* SIMCUDA_ABI_VERSION */
	unsigned grid[3];	/* gridDim x, y, z */
	unsigned block[3];	/* blockDim x, y, z */
	unsigned shared_bytes;	/* dynamic shared memory requested */
	int device;		/* ordinal of the device it runs on */
	unsigned long long duration_us;	/* simulated time after fn returns */
	void *(*mem)(struct sim_kctx *k, CUdeviceptr p, size_t bytes, int rw);
	/* The address of the launching module's variable name, or 0. */
	CUdeviceptr (*var)(struct sim_kctx *k, const char *name);
	/*
	 * The device range a texture or surface object names: its base, its
	 * length in *bytes; 0 for a handle that is not live.
	 */
	CUdeviceptr (*res)(struct sim_kctx *k, unsigned long long obj,
			   size_t *bytes);
	void *sim_private;	/* the simulator's, opaque */
};

typedef void (*sim_kernel_fn)(struct sim_kctx *k, void **params);

struct sim_kernel {
	const char *name;	/* NULL ends the table */
	sim_kernel_fn fn;
	unsigned nparams;	/* at most SIM_MAX_PARAMS */
	unsigned param_size[SIM_MAX_PARAMS];
	/*
	 * Simulated run time: the launch stays "running" this long after fn
	 * returns.  0: the SIMCUDA_KERNEL_US environment value (default 0).
	 */
	unsigned duration_us;
};

/*
 * Host view of device range [p, p+bytes) for a kernel, rw = SIM_READ and/or
 * SIM_WRITE.  On an invalid access (no allocation, out of bounds, freed,
 * unmapped VMM page, missing access rights) the fault is recorded (the
 * context then reports CUDA_ERROR_ILLEGAL_ADDRESS at its next
 * synchronization) and a zero-filled scratch buffer of `bytes` is returned
 * so the kernel cannot corrupt the simulator; NULL only when even that
 * cannot be allocated.  bytes == 0 returns NULL and records nothing.
 * The pointer is valid until the kernel returns.
 */
static inline void *sim_mem(struct sim_kctx *k, CUdeviceptr p, size_t bytes,
			    int rw)
{
	return k->mem(k, p, bytes, rw);
}

/* A module-scope variable of a module (SIMCUDA_VARS_SYMBOL). */
struct sim_var {
	const char *name;	/* NULL ends the table */
	size_t bytes;
};

static inline CUdeviceptr sim_var(struct sim_kctx *k, const char *name)
{
	return k->var(k, name);
}

/*
 * A texture or surface object's memory for a kernel: sim_mem() over the
 * range it names (the whole range; rw as for sim_mem).  An object that is
 * not live is a fault (through sim_mem of address 0), as on a GPU.
 */
static inline void *sim_res(struct sim_kctx *k, unsigned long long obj,
			    size_t *bytes, int rw)
{
	size_t n = 1;
	CUdeviceptr p = k->res(k, obj, &n);

	if (bytes)
		*bytes = p ? n : 0;
	return sim_mem(k, p, p ? n : 1, rw);
}

/* Parameter i of a launch, as a value of type T. */
#define SIM_ARG(params, i, T) (*(T *)(params)[i])

/* Total threads of the launch (grid times block). */
static inline unsigned long long sim_nthreads(const struct sim_kctx *k)
{
	return (unsigned long long)k->grid[0] * k->grid[1] * k->grid[2] *
	       k->block[0] * k->block[1] * k->block[2];
}

/* ---- test hooks exported by libcuda.so.1 ------------------------------ */

/*
 * Overlap check over every operation recorded so far in this process
 * (records are kept in memory until simcuda_records_clear()).  Returns 0
 * when no two operations that touched the same allocation, at least one of
 * them writing, overlapped in time and no operation faulted; 1 otherwise,
 * with the first conflict or fault described in msg (always NUL-terminated
 * when len > 0).
 */
int simcuda_check(char *msg, size_t len);

/* Number of operations recorded so far (kernels, copies, sets, ...). */
size_t simcuda_op_count(void);

enum simcuda_op_kind {
	SIMCUDA_OP_KERNEL = 0,
	SIMCUDA_OP_MEMCPY = 1,
	SIMCUDA_OP_MEMSET = 2,
	SIMCUDA_OP_HOST = 3,	/* cuLaunchHostFunc / cuStreamAddCallback */
	SIMCUDA_OP_GRAPH = 4,	/* a cuGraphLaunch; its nodes are own records */
	SIMCUDA_OP_FREE = 5,	/* cuMemFree / cuMemFreeAsync */
};

struct simcuda_op_info {
	uint64_t seq;		/* process-unique, in submission order */
	uint64_t stream;	/* simcuda stream id (cuStreamGetId); 0: host */
	uint64_t ctx;		/* context id (cuCtxGetId) */
	uint64_t graph;		/* graph exec id when replayed from a graph */
	int kind;		/* enum simcuda_op_kind */
	char name[64];		/* kernel name, or the operation's */
	uint64_t start_ns;	/* CLOCK_MONOTONIC */
	uint64_t end_ns;	/* includes the simulated duration */
	unsigned nacc;		/* allocations touched */
	unsigned nfault;
};

/*
 * The i-th record in completion order (0-based).  0 on success, -1 when i is
 * out of range.
 */
int simcuda_op_get(size_t i, struct simcuda_op_info *out);

/*
 * Forget the records kept in memory (after writing any not yet written to
 * SIMCUDA_LOG), so a test can check one phase at a time.
 */
void simcuda_records_clear(void);

#ifdef __cplusplus
}
#endif

#endif
