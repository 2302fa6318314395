/*
 * sim-launch.c - kernel launches: cuLaunchKernel, cuLaunchKernelEx and
 * cuLaunchCooperativeKernel with their per-thread forms.
 *
 * The parameters are copied at the call into one buffer laid out as
 * cuFuncGetParamInfo reports (from kernelParams, one pointer per parameter,
 * or from the `extra` CU_LAUNCH_PARAM_BUFFER_POINTER / _SIZE buffer, which
 * must already follow that layout), so the caller may reuse its storage at
 * once.  The launch then is an ordinary stream operation; when the stream
 * reaches it, the worker calls the module's function (sim-exec.c).
 */
#include <stdlib.h>
#include <string.h>

#include "sim.h"

/*
 * The driver reads `extra` up to CU_LAUNCH_PARAM_END; this bound only stops
 * a list without one.  It is above the 64 pairs kmux reads (kparams.c), so
 * that a launch whose list kmux gives up on still runs here
 * (streams-cases opaque-params).
 */
#define EXTRA_MAX_PAIRS 256

static int dims_ok(const unsigned g[3], const unsigned b[3])
{
	unsigned long long threads;

	if (!g[0] || !g[1] || !g[2] || !b[0] || !b[1] || !b[2])
		return 0;
	if (g[1] > 65535 || g[2] > 65535 || g[0] > 2147483647u)
		return 0;
	if (b[0] > 1024 || b[1] > 1024 || b[2] > 64)
		return 0;
	threads = (unsigned long long)b[0] * b[1] * b[2];
	return threads <= 1024;
}

/* The packed buffer named by an `extra` array, or NULL. */
static const void *extra_buffer(void **extra, size_t *size)
{
	const void *buf = NULL;
	int i;

	*size = 0;
	for (i = 0; i < 2 * EXTRA_MAX_PAIRS; i += 2) {
		if (extra[i] == CU_LAUNCH_PARAM_END)
			return buf;
		if (extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER)
			buf = extra[i + 1];
		else if (extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE &&
			 extra[i + 1] != NULL)
			*size = *(size_t *)extra[i + 1];
		else
			return NULL;
	}
	return NULL;
}

/* Lock held.  Fill op's argument buffer for f. */
static CUresult pack_args(struct sim_op *op, struct sim_func *f,
			  void **params, void **extra)
{
	const struct sim_kernel *k = f->k;
	unsigned i;

	if (params != NULL && extra != NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if (k->nparams == 0)
		return CUDA_SUCCESS;
	op->u.kernel.args = malloc(f->args_len);
	if (op->u.kernel.args == NULL)
		return CUDA_ERROR_OUT_OF_MEMORY;
	op->u.kernel.args_len = f->args_len;
	if (params != NULL) {
		for (i = 0; i < k->nparams; i++) {
			if (params[i] == NULL)
				return CUDA_ERROR_INVALID_VALUE;
			memcpy(op->u.kernel.args + f->offset[i], params[i],
			       k->param_size[i]);
		}
		return CUDA_SUCCESS;
	}
	if (extra != NULL) {
		size_t size;
		const void *buf = extra_buffer(extra, &size);

		if (buf == NULL || size < f->args_len)
			return CUDA_ERROR_INVALID_VALUE;
		memcpy(op->u.kernel.args, buf, f->args_len);
		return CUDA_SUCCESS;
	}
	return CUDA_ERROR_INVALID_VALUE;
}

static CUresult launch(CUfunction hf, const unsigned grid[3],
		       const unsigned block[3], unsigned shmem, CUstream h,
		       void **params, void **extra, int pt)
{
	struct sim_stream *s;
	struct sim_func *f;
	struct sim_op *op;
	CUresult err;

	if (!dims_ok(grid, block))
		return CUDA_ERROR_INVALID_VALUE;
	sim_lock();
	err = sim_stream_resolve(h, pt, &s);
	if (err == CUDA_SUCCESS)
		err = s->ctx->sticky;
	if (err != CUDA_SUCCESS)
		goto out;
	f = sim_func_resolve(hf);
	if (f == NULL) {
		err = CUDA_ERROR_INVALID_HANDLE;
		goto out;
	}
	if ((int)shmem > f->max_dyn_shmem && shmem > (48u << 10)) {
		err = CUDA_ERROR_INVALID_VALUE;
		goto out;
	}
	op = sim_op_new(SIM_OP_KERNEL);
	if (op == NULL) {
		err = CUDA_ERROR_OUT_OF_MEMORY;
		goto out;
	}
	op->u.kernel.f = f;
	memcpy(op->u.kernel.grid, grid, sizeof(op->u.kernel.grid));
	memcpy(op->u.kernel.block, block, sizeof(op->u.kernel.block));
	op->u.kernel.shmem = shmem;
	err = pack_args(op, f, params, extra);
	/* Host-cost benchmarks: no worker thread competes with the caller. */
	if (err != CUDA_SUCCESS || (sim.discard && s->cap == NULL)) {
		sim_op_free(op);
		goto out;
	}
	err = sim_stream_submit(s, op);
out:
	sim_unlock();
	return err;
}

SIM_API CUresult cuLaunchKernel(CUfunction f, unsigned int gridDimX,
				unsigned int gridDimY, unsigned int gridDimZ,
				unsigned int blockDimX, unsigned int blockDimY,
				unsigned int blockDimZ,
				unsigned int sharedMemBytes, CUstream hStream,
				void **kernelParams, void **extra)
{
	const unsigned g[3] = { gridDimX, gridDimY, gridDimZ };
	const unsigned b[3] = { blockDimX, blockDimY, blockDimZ };

	return launch(f, g, b, sharedMemBytes, hStream, kernelParams, extra,
		      0);
}

SIM_API CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned int gridDimX,
				     unsigned int gridDimY,
				     unsigned int gridDimZ,
				     unsigned int blockDimX,
				     unsigned int blockDimY,
				     unsigned int blockDimZ,
				     unsigned int sharedMemBytes,
				     CUstream hStream, void **kernelParams,
				     void **extra)
{
	const unsigned g[3] = { gridDimX, gridDimY, gridDimZ };
	const unsigned b[3] = { blockDimX, blockDimY, blockDimZ };

	return launch(f, g, b, sharedMemBytes, hStream, kernelParams, extra,
		      1);
}

/* Launch attributes (clusters, priorities, ...) are accepted and ignored. */
static CUresult launch_ex(const CUlaunchConfig *config, CUfunction f,
			  void **kernelParams, void **extra, int pt)
{
	unsigned g[3], b[3];

	if (config == NULL || (config->numAttrs > 0 && config->attrs == NULL))
		return CUDA_ERROR_INVALID_VALUE;
	g[0] = config->gridDimX;
	g[1] = config->gridDimY;
	g[2] = config->gridDimZ;
	b[0] = config->blockDimX;
	b[1] = config->blockDimY;
	b[2] = config->blockDimZ;
	return launch(f, g, b, config->sharedMemBytes, config->hStream,
		      kernelParams, extra, pt);
}

SIM_API CUresult cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction f,
				  void **kernelParams, void **extra)
{
	return launch_ex(config, f, kernelParams, extra, 0);
}

SIM_API CUresult cuLaunchKernelEx_ptsz(const CUlaunchConfig *config,
				       CUfunction f, void **kernelParams,
				       void **extra)
{
	return launch_ex(config, f, kernelParams, extra, 1);
}

/* All blocks of a cooperative launch run at once here anyway. */
SIM_API CUresult cuLaunchCooperativeKernel(CUfunction f, unsigned int gridDimX,
					   unsigned int gridDimY,
					   unsigned int gridDimZ,
					   unsigned int blockDimX,
					   unsigned int blockDimY,
					   unsigned int blockDimZ,
					   unsigned int sharedMemBytes,
					   CUstream hStream,
					   void **kernelParams)
{
	const unsigned g[3] = { gridDimX, gridDimY, gridDimZ };
	const unsigned b[3] = { blockDimX, blockDimY, blockDimZ };

	return launch(f, g, b, sharedMemBytes, hStream, kernelParams, NULL, 0);
}

SIM_API CUresult cuLaunchCooperativeKernel_ptsz(CUfunction f,
						unsigned int gridDimX,
						unsigned int gridDimY,
						unsigned int gridDimZ,
						unsigned int blockDimX,
						unsigned int blockDimY,
						unsigned int blockDimZ,
						unsigned int sharedMemBytes,
						CUstream hStream,
						void **kernelParams)
{
	const unsigned g[3] = { gridDimX, gridDimY, gridDimZ };
	const unsigned b[3] = { blockDimX, blockDimY, blockDimZ };

	return launch(f, g, b, sharedMemBytes, hStream, kernelParams, NULL, 1);
}
