/*
 * wrap-launch.c - kernel launches, graph launches and host functions.
 *
 * With nothing switched on, each wrapper is one predictable branch and a
 * call through the real table: no lock, no syscall, no getenv.  When tracking,
 * the tracker decodes the parameters into the allocations they point into and
 * the launch is recorded.
 */
#include "kparams.h"
#include "preload.h"

#define LAUNCH_MAX_ACCESS 64

struct launch_op {
	struct trace_launch tl;
	struct access acc[LAUNCH_MAX_ACCESS];
	void *token;
	CUstream stream;	/* normalized handle, safe to pass to the driver */
};

static void launch_op_begin(struct launch_op *op, enum trace_api api,
			    const void *f, const unsigned grid[3],
			    const unsigned block[3], unsigned shmem, CUstream s,
			    int per_thread, void **params, void **extra)
{
	struct trace_launch *tl = &op->tl;

	*tl = (struct trace_launch){ .api = api, .shmem = shmem };
	for (int i = 0; i < 3; i++) {
		tl->grid[i] = grid ? grid[i] : 0;
		tl->block[i] = block ? block[i] : 0;
	}
	tl->stream = stream_norm(s, per_thread);
	op->stream = (CUstream)(uintptr_t)tl->stream;
	if (f) {
		tl->ki = kparams_info(f);
		if (tl->ki)
			tl->nacc = kparams_collect(alloc_table_global(), tl->ki,
						   params, extra, op->acc,
						   LAUNCH_MAX_ACCESS,
						   &tl->kflags);
	}
	tl->acc = op->acc;
	tl->t_begin = trace_now();
	op->token = trace_launch_begin(op->stream);
}

static CUresult launch_op_end(struct launch_op *op, CUresult r)
{
	op->tl.t_end = trace_now();
	op->tl.result = r;
	trace_launch_end(op->token, op->stream, &op->tl);
	return r;
}

static CUresult launch_kernel(int per_thread, CUfunction f, unsigned gx,
			      unsigned gy, unsigned gz, unsigned bx,
			      unsigned by, unsigned bz, unsigned shmem,
			      CUstream s, void **params, void **extra)
{
	const unsigned grid[3] = { gx, gy, gz }, block[3] = { bx, by, bz };
	struct launch_op op;
	CUresult r;

	launch_op_begin(&op, TRACE_API_LAUNCH, f, grid, block, shmem, s,
			per_thread, params, extra);
	if (per_thread)
		r = REAL(cuLaunchKernel_ptsz)(f, gx, gy, gz, bx, by, bz, shmem,
					      s, params, extra);
	else
		r = REAL(cuLaunchKernel)(f, gx, gy, gz, bx, by, bz, shmem, s,
					 params, extra);
	return launch_op_end(&op, r);
}

KMUX_EXPORT CUresult CUDAAPI cuLaunchKernel(CUfunction f, unsigned gx,
		unsigned gy, unsigned gz, unsigned bx, unsigned by,
		unsigned bz, unsigned shmem, CUstream s, void **params,
		void **extra)
{
	if (NO_DRIVER(cuLaunchKernel))
		return CUDA_ERROR_NOT_INITIALIZED;
	if (likely(!kmux_tracking))
		return REAL(cuLaunchKernel)(f, gx, gy, gz, bx, by, bz, shmem,
					    s, params, extra);
	return launch_kernel(0, f, gx, gy, gz, bx, by, bz, shmem, s, params,
			     extra);
}

KMUX_EXPORT CUresult CUDAAPI cuLaunchKernel_ptsz(CUfunction f, unsigned gx,
		unsigned gy, unsigned gz, unsigned bx, unsigned by,
		unsigned bz, unsigned shmem, CUstream s, void **params,
		void **extra)
{
	if (NO_DRIVER(cuLaunchKernel_ptsz))
		return CUDA_ERROR_NOT_INITIALIZED;
	if (likely(!kmux_tracking))
		return REAL(cuLaunchKernel_ptsz)(f, gx, gy, gz, bx, by, bz,
						 shmem, s, params, extra);
	return launch_kernel(1, f, gx, gy, gz, bx, by, bz, shmem, s, params,
			     extra);
}

static CUresult launch_kernel_ex(int per_thread, const CUlaunchConfig *c,
				 CUfunction f, void **params, void **extra)
{
	struct launch_op op;
	CUresult r;
	unsigned grid[3], block[3];

	if (!c) {
		/* Let the driver report the bad argument. */
		return per_thread ? REAL(cuLaunchKernelEx_ptsz)(c, f, params, extra)
				  : REAL(cuLaunchKernelEx)(c, f, params, extra);
	}
	grid[0] = c->gridDimX, grid[1] = c->gridDimY, grid[2] = c->gridDimZ;
	block[0] = c->blockDimX, block[1] = c->blockDimY, block[2] = c->blockDimZ;
	launch_op_begin(&op, TRACE_API_LAUNCH_EX, f, grid, block,
			c->sharedMemBytes, c->hStream, per_thread, params,
			extra);
	if (per_thread)
		r = REAL(cuLaunchKernelEx_ptsz)(c, f, params, extra);
	else
		r = REAL(cuLaunchKernelEx)(c, f, params, extra);
	return launch_op_end(&op, r);
}

KMUX_EXPORT CUresult CUDAAPI cuLaunchKernelEx(const CUlaunchConfig *c,
		CUfunction f, void **params, void **extra)
{
	if (NO_DRIVER(cuLaunchKernelEx))
		return CUDA_ERROR_NOT_INITIALIZED;
	if (likely(!kmux_tracking))
		return REAL(cuLaunchKernelEx)(c, f, params, extra);
	return launch_kernel_ex(0, c, f, params, extra);
}

KMUX_EXPORT CUresult CUDAAPI cuLaunchKernelEx_ptsz(const CUlaunchConfig *c,
		CUfunction f, void **params, void **extra)
{
	if (NO_DRIVER(cuLaunchKernelEx_ptsz))
		return CUDA_ERROR_NOT_INITIALIZED;
	if (likely(!kmux_tracking))
		return REAL(cuLaunchKernelEx_ptsz)(c, f, params, extra);
	return launch_kernel_ex(1, c, f, params, extra);
}

static CUresult launch_coop(int per_thread, CUfunction f, unsigned gx,
			    unsigned gy, unsigned gz, unsigned bx, unsigned by,
			    unsigned bz, unsigned shmem, CUstream s,
			    void **params)
{
	const unsigned grid[3] = { gx, gy, gz }, block[3] = { bx, by, bz };
	struct launch_op op;
	CUresult r;

	launch_op_begin(&op, TRACE_API_LAUNCH_COOP, f, grid, block, shmem, s,
			per_thread, params, NULL);
	if (per_thread)
		r = REAL(cuLaunchCooperativeKernel_ptsz)(f, gx, gy, gz, bx, by,
							 bz, shmem, s, params);
	else
		r = REAL(cuLaunchCooperativeKernel)(f, gx, gy, gz, bx, by, bz,
						    shmem, s, params);
	return launch_op_end(&op, r);
}

KMUX_EXPORT CUresult CUDAAPI cuLaunchCooperativeKernel(CUfunction f,
		unsigned gx, unsigned gy, unsigned gz, unsigned bx,
		unsigned by, unsigned bz, unsigned shmem, CUstream s,
		void **params)
{
	if (NO_DRIVER(cuLaunchCooperativeKernel))
		return CUDA_ERROR_NOT_INITIALIZED;
	if (likely(!kmux_tracking))
		return REAL(cuLaunchCooperativeKernel)(f, gx, gy, gz, bx, by,
						       bz, shmem, s, params);
	return launch_coop(0, f, gx, gy, gz, bx, by, bz, shmem, s, params);
}

KMUX_EXPORT CUresult CUDAAPI cuLaunchCooperativeKernel_ptsz(CUfunction f,
		unsigned gx, unsigned gy, unsigned gz, unsigned bx,
		unsigned by, unsigned bz, unsigned shmem, CUstream s,
		void **params)
{
	if (NO_DRIVER(cuLaunchCooperativeKernel_ptsz))
		return CUDA_ERROR_NOT_INITIALIZED;
	if (likely(!kmux_tracking))
		return REAL(cuLaunchCooperativeKernel_ptsz)(f, gx, gy, gz, bx,
							    by, bz, shmem, s,
							    params);
	return launch_coop(1, f, gx, gy, gz, bx, by, bz, shmem, s, params);
}

KMUX_EXPORT CUresult CUDAAPI cuGraphLaunch(CUgraphExec g, CUstream s)
{
	struct launch_op op;

	if (NO_DRIVER(cuGraphLaunch))
		return CUDA_ERROR_NOT_INITIALIZED;
	if (likely(!kmux_tracking))
		return REAL(cuGraphLaunch)(g, s);
	launch_op_begin(&op, TRACE_API_GRAPH, NULL, NULL, NULL, 0, s, 0, NULL,
			NULL);
	return launch_op_end(&op, REAL(cuGraphLaunch)(g, s));
}

KMUX_EXPORT CUresult CUDAAPI cuGraphLaunch_ptsz(CUgraphExec g, CUstream s)
{
	struct launch_op op;

	if (NO_DRIVER(cuGraphLaunch_ptsz))
		return CUDA_ERROR_NOT_INITIALIZED;
	if (likely(!kmux_tracking))
		return REAL(cuGraphLaunch_ptsz)(g, s);
	launch_op_begin(&op, TRACE_API_GRAPH, NULL, NULL, NULL, 0, s, 1, NULL,
			NULL);
	return launch_op_end(&op, REAL(cuGraphLaunch_ptsz)(g, s));
}

KMUX_EXPORT CUresult CUDAAPI cuLaunchHostFunc(CUstream s, CUhostFn fn,
					      void *data)
{
	struct launch_op op;

	if (NO_DRIVER(cuLaunchHostFunc))
		return CUDA_ERROR_NOT_INITIALIZED;
	if (likely(!kmux_tracking))
		return REAL(cuLaunchHostFunc)(s, fn, data);
	launch_op_begin(&op, TRACE_API_HOST_FUNC, NULL, NULL, NULL, 0, s, 0,
			NULL, NULL);
	return launch_op_end(&op, REAL(cuLaunchHostFunc)(s, fn, data));
}

KMUX_EXPORT CUresult CUDAAPI cuLaunchHostFunc_ptsz(CUstream s, CUhostFn fn,
						   void *data)
{
	struct launch_op op;

	if (NO_DRIVER(cuLaunchHostFunc_ptsz))
		return CUDA_ERROR_NOT_INITIALIZED;
	if (likely(!kmux_tracking))
		return REAL(cuLaunchHostFunc_ptsz)(s, fn, data);
	launch_op_begin(&op, TRACE_API_HOST_FUNC, NULL, NULL, NULL, 0, s, 1,
			NULL, NULL);
	return launch_op_end(&op, REAL(cuLaunchHostFunc_ptsz)(s, fn, data));
}
