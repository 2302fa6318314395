/*
 * sim-copy.c - memory copies and sets, synchronous and asynchronous, in
 * their legacy and per-thread (_ptds / _ptsz) forms.
 *
 * Every copy or set is a stream operation that goes through the same access
 * checking and recording as a kernel.  Host-side behaviour follows the
 * driver's rules for pageable memory:
 *   - synchronous forms run on the default stream (legacy, or the calling
 *     thread's for _ptds) and return when the operation is done (the real
 *     driver may return earlier for device-to-device copies and device
 *     memsets; waiting is the stricter choice);
 *   - an asynchronous copy from pageable host memory takes a private copy of
 *     the source at the call, so the caller may reuse its buffer at once;
 *   - an asynchronous copy into pageable host memory returns only when done.
 * Pinned or registered host memory is used in place, asynchronously.
 * Arguments are validated at the call (unknown device ranges give
 * CUDA_ERROR_INVALID_VALUE); what changes before the operation runs (a free,
 * an unmap) is a fault recorded when it runs.
 */
#include <stdlib.h>
#include <string.h>

#include "sim.h"

/* Lock held.  Is [p, p+n) inside one simulated allocation? */
static int device_range_ok(uint64_t p, size_t n)
{
	struct sim_alloc *a = sim_alloc_find(p);

	return a != NULL && n <= a->size && p - a->base <= a->size - n;
}

/* Lock held.  Host memory the driver would not know (pageable)? */
static int pageable(uint64_t p)
{
	return sim_alloc_find(p) == NULL && !sim_addr_is_simulated(p);
}

static int side_ok(uint64_t p, size_t n, unsigned side)
{
	if (side & SIM_SIDE_DEVICE)
		return device_range_ok(p, n);
	/* Host or any: a simulated address must be a live allocation. */
	if (sim_addr_is_simulated(p))
		return device_range_ok(p, n);
	return p != 0;
}

static CUresult copy(CUstream h, int pt, int sync, uint64_t dst,
		     unsigned dside, uint64_t src, unsigned sside, size_t n)
{
	struct sim_stream *s;
	struct sim_op *op;
	CUresult err;

	sim_lock();
	err = sim_stream_resolve(h, pt, &s);
	if (err == CUDA_SUCCESS)
		err = s->ctx->sticky;
	if (err != CUDA_SUCCESS || n == 0)
		goto out;
	if (!side_ok(dst, n, dside) || !side_ok(src, n, sside)) {
		err = CUDA_ERROR_INVALID_VALUE;
		goto out;
	}
	op = sim_op_new(SIM_OP_MEMCPY);
	if (op == NULL) {
		err = CUDA_ERROR_OUT_OF_MEMORY;
		goto out;
	}
	op->u.copy.dst = dst;
	op->u.copy.src = src;
	op->u.copy.dst_side = dside;
	op->u.copy.src_side = sside;
	op->u.copy.bytes = n;
	if (!sync && s->cap == NULL) {
		if (pageable(src)) {
			op->u.copy.staged = malloc(n);
			if (op->u.copy.staged == NULL) {
				sim_op_free(op);
				err = CUDA_ERROR_OUT_OF_MEMORY;
				goto out;
			}
			memcpy(op->u.copy.staged, (void *)(uintptr_t)src, n);
		}
		if (pageable(dst))
			sync = 1;
	}
	if (sync)
		err = sim_stream_submit_sync(s, op);
	else
		err = sim_stream_submit(s, op);
out:
	sim_unlock();
	return err;
}

void sim_copy_run(struct sim_exec *x)
{
	struct sim_op *op = x->op;
	size_t n = op->u.copy.bytes;
	void *d;
	const void *s;

	sim_lock();
	d = sim_exec_access(x, op->u.copy.dst, n, SIM_WRITE,
			    op->u.copy.dst_side);
	if (op->u.copy.staged != NULL)
		s = op->u.copy.staged;
	else
		s = sim_exec_access(x, op->u.copy.src, n, SIM_READ,
				    op->u.copy.src_side);
	sim_unlock();
	if (d != NULL && s != NULL)
		memmove(d, s, n);
}

#define DEV SIM_SIDE_DEVICE
#define HOST SIM_SIDE_HOST
#define ANY SIM_SIDE_ANY
#define P(x) ((uint64_t)(uintptr_t)(x))

SIM_API CUresult cuMemcpyHtoD_v2(CUdeviceptr dstDevice, const void *srcHost,
				 size_t ByteCount)
{
	return copy(NULL, 0, 1, dstDevice, DEV, P(srcHost), HOST, ByteCount);
}

SIM_API CUresult cuMemcpyHtoD_v2_ptds(CUdeviceptr dstDevice,
				      const void *srcHost, size_t ByteCount)
{
	return copy(NULL, 1, 1, dstDevice, DEV, P(srcHost), HOST, ByteCount);
}

SIM_API CUresult cuMemcpyDtoH_v2(void *dstHost, CUdeviceptr srcDevice,
				 size_t ByteCount)
{
	return copy(NULL, 0, 1, P(dstHost), HOST, srcDevice, DEV, ByteCount);
}

SIM_API CUresult cuMemcpyDtoH_v2_ptds(void *dstHost, CUdeviceptr srcDevice,
				      size_t ByteCount)
{
	return copy(NULL, 1, 1, P(dstHost), HOST, srcDevice, DEV, ByteCount);
}

SIM_API CUresult cuMemcpyDtoD_v2(CUdeviceptr dstDevice, CUdeviceptr srcDevice,
				 size_t ByteCount)
{
	return copy(NULL, 0, 1, dstDevice, DEV, srcDevice, DEV, ByteCount);
}

SIM_API CUresult cuMemcpyDtoD_v2_ptds(CUdeviceptr dstDevice,
				      CUdeviceptr srcDevice, size_t ByteCount)
{
	return copy(NULL, 1, 1, dstDevice, DEV, srcDevice, DEV, ByteCount);
}

SIM_API CUresult cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount)
{
	return copy(NULL, 0, 1, dst, ANY, src, ANY, ByteCount);
}

SIM_API CUresult cuMemcpy_ptds(CUdeviceptr dst, CUdeviceptr src,
			       size_t ByteCount)
{
	return copy(NULL, 1, 1, dst, ANY, src, ANY, ByteCount);
}

SIM_API CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dstDevice,
				      const void *srcHost, size_t ByteCount,
				      CUstream hStream)
{
	return copy(hStream, 0, 0, dstDevice, DEV, P(srcHost), HOST,
		    ByteCount);
}

SIM_API CUresult cuMemcpyHtoDAsync_v2_ptsz(CUdeviceptr dstDevice,
					   const void *srcHost,
					   size_t ByteCount, CUstream hStream)
{
	return copy(hStream, 1, 0, dstDevice, DEV, P(srcHost), HOST,
		    ByteCount);
}

SIM_API CUresult cuMemcpyDtoHAsync_v2(void *dstHost, CUdeviceptr srcDevice,
				      size_t ByteCount, CUstream hStream)
{
	return copy(hStream, 0, 0, P(dstHost), HOST, srcDevice, DEV,
		    ByteCount);
}

SIM_API CUresult cuMemcpyDtoHAsync_v2_ptsz(void *dstHost,
					   CUdeviceptr srcDevice,
					   size_t ByteCount, CUstream hStream)
{
	return copy(hStream, 1, 0, P(dstHost), HOST, srcDevice, DEV,
		    ByteCount);
}

SIM_API CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr dstDevice,
				      CUdeviceptr srcDevice, size_t ByteCount,
				      CUstream hStream)
{
	return copy(hStream, 0, 0, dstDevice, DEV, srcDevice, DEV, ByteCount);
}

SIM_API CUresult cuMemcpyDtoDAsync_v2_ptsz(CUdeviceptr dstDevice,
					   CUdeviceptr srcDevice,
					   size_t ByteCount, CUstream hStream)
{
	return copy(hStream, 1, 0, dstDevice, DEV, srcDevice, DEV, ByteCount);
}

SIM_API CUresult cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src,
			       size_t ByteCount, CUstream hStream)
{
	return copy(hStream, 0, 0, dst, ANY, src, ANY, ByteCount);
}

SIM_API CUresult cuMemcpyAsync_ptsz(CUdeviceptr dst, CUdeviceptr src,
				    size_t ByteCount, CUstream hStream)
{
	return copy(hStream, 1, 0, dst, ANY, src, ANY, ByteCount);
}

/* Peer copies: one address space here, so the contexts only get checked. */
static CUresult peer_ctx_ok(CUcontext a, CUcontext b)
{
	CUresult err = CUDA_SUCCESS;

	sim_lock();
	if (!sim_ctx_usable((struct sim_ctx *)a) ||
	    !sim_ctx_usable((struct sim_ctx *)b))
		err = CUDA_ERROR_INVALID_CONTEXT;
	sim_unlock();
	return err;
}

SIM_API CUresult cuMemcpyPeer(CUdeviceptr dstDevice, CUcontext dstContext,
			      CUdeviceptr srcDevice, CUcontext srcContext,
			      size_t ByteCount)
{
	CUresult err = peer_ctx_ok(dstContext, srcContext);

	if (err != CUDA_SUCCESS)
		return err;
	return copy(NULL, 0, 1, dstDevice, DEV, srcDevice, DEV, ByteCount);
}

SIM_API CUresult cuMemcpyPeer_ptds(CUdeviceptr dstDevice, CUcontext dstContext,
				   CUdeviceptr srcDevice, CUcontext srcContext,
				   size_t ByteCount)
{
	CUresult err = peer_ctx_ok(dstContext, srcContext);

	if (err != CUDA_SUCCESS)
		return err;
	return copy(NULL, 1, 1, dstDevice, DEV, srcDevice, DEV, ByteCount);
}

SIM_API CUresult cuMemcpyPeerAsync(CUdeviceptr dstDevice, CUcontext dstContext,
				   CUdeviceptr srcDevice, CUcontext srcContext,
				   size_t ByteCount, CUstream hStream)
{
	CUresult err = peer_ctx_ok(dstContext, srcContext);

	if (err != CUDA_SUCCESS)
		return err;
	return copy(hStream, 0, 0, dstDevice, DEV, srcDevice, DEV, ByteCount);
}

SIM_API CUresult cuMemcpyPeerAsync_ptsz(CUdeviceptr dstDevice,
					CUcontext dstContext,
					CUdeviceptr srcDevice,
					CUcontext srcContext,
					size_t ByteCount, CUstream hStream)
{
	CUresult err = peer_ctx_ok(dstContext, srcContext);

	if (err != CUDA_SUCCESS)
		return err;
	return copy(hStream, 1, 0, dstDevice, DEV, srcDevice, DEV, ByteCount);
}

/* ---- memset ------------------------------------------------------------- */

static CUresult set(CUstream h, int pt, int sync, uint64_t dst,
		    size_t pitch, uint32_t value, unsigned elsize,
		    size_t width, size_t height)
{
	struct sim_stream *s;
	struct sim_op *op;
	uint64_t row, span;
	CUresult err;

	if (width == 0 || height == 0)
		return CUDA_SUCCESS;
	row = (uint64_t)width * elsize;
	if (row / elsize != width || (dst % elsize) != 0 ||
	    (height > 1 && pitch < row))
		return CUDA_ERROR_INVALID_VALUE;
	if (height > 1 && (pitch > UINT64_MAX / (height - 1) ||
			   pitch * (height - 1) > UINT64_MAX - row))
		return CUDA_ERROR_INVALID_VALUE;
	span = pitch * (height - 1) + row;
	sim_lock();
	err = sim_stream_resolve(h, pt, &s);
	if (err == CUDA_SUCCESS)
		err = s->ctx->sticky;
	if (err != CUDA_SUCCESS)
		goto out;
	if (!side_ok(dst, (size_t)span, SIM_SIDE_ANY) || pageable(dst)) {
		err = CUDA_ERROR_INVALID_VALUE;
		goto out;
	}
	op = sim_op_new(SIM_OP_MEMSET);
	if (op == NULL) {
		err = CUDA_ERROR_OUT_OF_MEMORY;
		goto out;
	}
	op->u.set.dst = dst;
	op->u.set.value = value;
	op->u.set.elsize = elsize;
	op->u.set.width = width;
	op->u.set.height = height;
	op->u.set.pitch = height > 1 ? pitch : (size_t)row;
	if (sync)
		err = sim_stream_submit_sync(s, op);
	else
		err = sim_stream_submit(s, op);
out:
	sim_unlock();
	return err;
}

void sim_set_run(struct sim_exec *x)
{
	struct sim_op *op = x->op;
	size_t w = op->u.set.width, h = op->u.set.height;
	size_t span = op->u.set.pitch * (h - 1) + w * op->u.set.elsize;
	unsigned char *base;
	size_t r, i;

	sim_lock();
	base = sim_exec_access(x, op->u.set.dst, span, SIM_WRITE,
			       SIM_SIDE_DEVICE);
	sim_unlock();
	if (base == NULL)
		return;
	for (r = 0; r < h; r++) {
		unsigned char *row = base + r * op->u.set.pitch;

		switch (op->u.set.elsize) {
		case 1:
			memset(row, (int)(op->u.set.value & 0xff), w);
			break;
		case 2:
			for (i = 0; i < w; i++) {
				uint16_t v = (uint16_t)op->u.set.value;

				memcpy(row + 2 * i, &v, 2);
			}
			break;
		default:
			for (i = 0; i < w; i++)
				memcpy(row + 4 * i, &op->u.set.value, 4);
			break;
		}
	}
}

/*
 * The twelve plain and twelve per-thread memsets differ only in element
 * size, shape and stream; each is one line over set().
 */
SIM_API CUresult cuMemsetD8_v2(CUdeviceptr d, unsigned char uc, size_t N)
{
	return set(NULL, 0, 1, d, 0, uc, 1, N, 1);
}

SIM_API CUresult cuMemsetD8_v2_ptds(CUdeviceptr d, unsigned char uc, size_t N)
{
	return set(NULL, 1, 1, d, 0, uc, 1, N, 1);
}

SIM_API CUresult cuMemsetD16_v2(CUdeviceptr d, unsigned short us, size_t N)
{
	return set(NULL, 0, 1, d, 0, us, 2, N, 1);
}

SIM_API CUresult cuMemsetD16_v2_ptds(CUdeviceptr d, unsigned short us,
				     size_t N)
{
	return set(NULL, 1, 1, d, 0, us, 2, N, 1);
}

SIM_API CUresult cuMemsetD32_v2(CUdeviceptr d, unsigned int ui, size_t N)
{
	return set(NULL, 0, 1, d, 0, ui, 4, N, 1);
}

SIM_API CUresult cuMemsetD32_v2_ptds(CUdeviceptr d, unsigned int ui, size_t N)
{
	return set(NULL, 1, 1, d, 0, ui, 4, N, 1);
}

SIM_API CUresult cuMemsetD8Async(CUdeviceptr d, unsigned char uc, size_t N,
				 CUstream hStream)
{
	return set(hStream, 0, 0, d, 0, uc, 1, N, 1);
}

SIM_API CUresult cuMemsetD8Async_ptsz(CUdeviceptr d, unsigned char uc,
				      size_t N, CUstream hStream)
{
	return set(hStream, 1, 0, d, 0, uc, 1, N, 1);
}

SIM_API CUresult cuMemsetD16Async(CUdeviceptr d, unsigned short us, size_t N,
				  CUstream hStream)
{
	return set(hStream, 0, 0, d, 0, us, 2, N, 1);
}

SIM_API CUresult cuMemsetD16Async_ptsz(CUdeviceptr d, unsigned short us,
				       size_t N, CUstream hStream)
{
	return set(hStream, 1, 0, d, 0, us, 2, N, 1);
}

SIM_API CUresult cuMemsetD32Async(CUdeviceptr d, unsigned int ui, size_t N,
				  CUstream hStream)
{
	return set(hStream, 0, 0, d, 0, ui, 4, N, 1);
}

SIM_API CUresult cuMemsetD32Async_ptsz(CUdeviceptr d, unsigned int ui,
				       size_t N, CUstream hStream)
{
	return set(hStream, 1, 0, d, 0, ui, 4, N, 1);
}

/*
 * Stream memory operations: a 32-bit write in stream order is a one-word
 * memset as far as ordering and the overlap check go (no flags modelled).
 * kmux cannot see what it touches, which is what its tests need.
 */
SIM_API CUresult cuStreamWriteValue32_v2(CUstream hStream, CUdeviceptr addr,
					 cuuint32_t value, unsigned int flags)
{
	if (flags & ~(unsigned)CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER)
		return CUDA_ERROR_INVALID_VALUE;
	return set(hStream, 0, 0, addr, 0, value, 4, 1, 1);
}

SIM_API CUresult cuStreamWriteValue32_v2_ptsz(CUstream hStream,
					      CUdeviceptr addr,
					      cuuint32_t value,
					      unsigned int flags)
{
	if (flags & ~(unsigned)CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER)
		return CUDA_ERROR_INVALID_VALUE;
	return set(hStream, 1, 0, addr, 0, value, 4, 1, 1);
}

SIM_API CUresult cuMemsetD2D8_v2(CUdeviceptr d, size_t pitch, unsigned char uc,
				 size_t w, size_t h)
{
	return set(NULL, 0, 1, d, pitch, uc, 1, w, h);
}

SIM_API CUresult cuMemsetD2D8_v2_ptds(CUdeviceptr d, size_t pitch,
				      unsigned char uc, size_t w, size_t h)
{
	return set(NULL, 1, 1, d, pitch, uc, 1, w, h);
}

SIM_API CUresult cuMemsetD2D16_v2(CUdeviceptr d, size_t pitch,
				  unsigned short us, size_t w, size_t h)
{
	return set(NULL, 0, 1, d, pitch, us, 2, w, h);
}

SIM_API CUresult cuMemsetD2D16_v2_ptds(CUdeviceptr d, size_t pitch,
				       unsigned short us, size_t w, size_t h)
{
	return set(NULL, 1, 1, d, pitch, us, 2, w, h);
}

SIM_API CUresult cuMemsetD2D32_v2(CUdeviceptr d, size_t pitch, unsigned int ui,
				  size_t w, size_t h)
{
	return set(NULL, 0, 1, d, pitch, ui, 4, w, h);
}

SIM_API CUresult cuMemsetD2D32_v2_ptds(CUdeviceptr d, size_t pitch,
				       unsigned int ui, size_t w, size_t h)
{
	return set(NULL, 1, 1, d, pitch, ui, 4, w, h);
}

SIM_API CUresult cuMemsetD2D8Async(CUdeviceptr d, size_t pitch,
				   unsigned char uc, size_t w, size_t h,
				   CUstream hStream)
{
	return set(hStream, 0, 0, d, pitch, uc, 1, w, h);
}

SIM_API CUresult cuMemsetD2D8Async_ptsz(CUdeviceptr d, size_t pitch,
					unsigned char uc, size_t w, size_t h,
					CUstream hStream)
{
	return set(hStream, 1, 0, d, pitch, uc, 1, w, h);
}

SIM_API CUresult cuMemsetD2D16Async(CUdeviceptr d, size_t pitch,
				    unsigned short us, size_t w, size_t h,
				    CUstream hStream)
{
	return set(hStream, 0, 0, d, pitch, us, 2, w, h);
}

SIM_API CUresult cuMemsetD2D16Async_ptsz(CUdeviceptr d, size_t pitch,
					 unsigned short us, size_t w, size_t h,
					 CUstream hStream)
{
	return set(hStream, 1, 0, d, pitch, us, 2, w, h);
}

SIM_API CUresult cuMemsetD2D32Async(CUdeviceptr d, size_t pitch,
				    unsigned int ui, size_t w, size_t h,
				    CUstream hStream)
{
	return set(hStream, 0, 0, d, pitch, ui, 4, w, h);
}

SIM_API CUresult cuMemsetD2D32Async_ptsz(CUdeviceptr d, size_t pitch,
					 unsigned int ui, size_t w, size_t h,
					 CUstream hStream)
{
	return set(hStream, 1, 0, d, pitch, ui, 4, w, h);
}
