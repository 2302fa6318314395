/*
 * device_globals.cu - independent reductions that share a `__device__`
 * counter, under the stream scheduler.
 *
 * What it is for: a one-pass reduction often finds its last block with a
 * counter in a `__device__` variable (each block adds its partial sum,
 * takes a ticket with atomicInc, and the block that draws the last ticket
 * sums the partials and resets the counter).  Two such reductions over
 * different arrays have disjoint parameters, so a scheduler that orders
 * kernels by their parameters alone runs them side by side, and then they
 * draw tickets from one counter: a block of one kernel is taken for the
 * last of the other, sums are missing parts or never written.  kmux reads
 * the variable in the kernel's PTX and orders such kernels with each other
 * (KMUX_PTX_GLOBALS; docs/design-streams.md, "Module-scope variables");
 * `KMUX_PTX_GLOBALS=0 kmux run --streams 16` is the control.
 *
 * Work: R arrays of N floats holding small integers (every sum is exact in
 * float, whatever the order), each its own cudaMalloc.  Each round: a
 * parameterless kernel resets the counter, one reduction per array (64
 * blocks; each block spins SPIN_CYCLES, about 0.2 ms, before taking its
 * ticket, so that unordered reductions overlap), the host reads every sum
 * back, and a kernel per array adds round + 1 to its elements (the next
 * reduction must wait for it).  Checked against the CPU; prints each
 * round's sums.  Exits 1 on a wrong sum, 2 on a CUDA error.
 */
#include <cstdio>
#include <cstdlib>
#include <vector>

#include <cuda_runtime.h>

#define R 8
#define N (1 << 20)
#define BLOCKS 64
#define THREADS 256
#define ROUNDS 4
#define SPIN_CYCLES 350000LL	/* ~0.2 ms at the H200's 1.76 GHz */

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
	fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(e_)); \
	exit(2); } } while (0)

/* The tickets of the reduction running now: one counter for all. */
__device__ unsigned int tickets;

__global__ void k_reset_tickets()
{
	tickets = 0;
}

/*
 * *out = sum of in[0..n): block partials into part[], the block that
 * draws the last ticket sums them and resets the counter.
 */
__global__ void k_reduce(const float *in, int n, float *part, float *out)
{
	__shared__ float sh[THREADS];
	__shared__ bool last;
	float v = 0.f;
	long long t0;

	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n;
	     i += gridDim.x * blockDim.x)
		v += in[i];
	sh[threadIdx.x] = v;
	__syncthreads();
	for (int s = blockDim.x / 2; s > 0; s >>= 1) {
		if (threadIdx.x < s)
			sh[threadIdx.x] += sh[threadIdx.x + s];
		__syncthreads();
	}
	if (threadIdx.x == 0) {
		part[blockIdx.x] = sh[0];
		t0 = clock64();
		while (clock64() - t0 < SPIN_CYCLES)
			;
		__threadfence();
		last = atomicInc(&tickets, gridDim.x) == gridDim.x - 1;
	}
	__syncthreads();
	if (last && threadIdx.x == 0) {
		float t = 0.f;

		for (int b = 0; b < (int)gridDim.x; b++)
			t += ((volatile float *)part)[b];
		*out = t;
		tickets = 0;
	}
}

__global__ void k_add(float *a, int n, float d)
{
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n;
	     i += gridDim.x * blockDim.x)
		a[i] += d;
}

int main()
{
	std::vector<float> h(N);
	float *in[R], *part[R], *out[R];
	double want[R];
	float got[R];
	int bad = 0;

	for (int r = 0; r < R; r++) {
		double s = 0;

		for (int i = 0; i < N; i++) {
			h[i] = (float)((i * 7 + r * 3) % 4);
			s += h[i];
		}
		want[r] = s;
		CK(cudaMalloc(&in[r], N * sizeof(float)));
		CK(cudaMalloc(&part[r], BLOCKS * sizeof(float)));
		CK(cudaMalloc(&out[r], sizeof(float)));
		CK(cudaMemcpy(in[r], h.data(), N * sizeof(float),
			      cudaMemcpyHostToDevice));
		CK(cudaMemset(out[r], 0, sizeof(float)));
	}
	for (int round = 0; round < ROUNDS; round++) {
		k_reset_tickets<<<1, 1>>>();
		CK(cudaGetLastError());
		for (int r = 0; r < R; r++) {
			k_reduce<<<BLOCKS, THREADS>>>(in[r], N, part[r], out[r]);
			CK(cudaGetLastError());
		}
		printf("round %d:", round);
		for (int r = 0; r < R; r++) {
			CK(cudaMemcpy(&got[r], out[r], sizeof(float),
				      cudaMemcpyDeviceToHost));
			printf(" %.0f", got[r]);
			if ((double)got[r] != want[r]) {
				if (!bad)
					fprintf(stderr, "round %d, array %d: sum %.0f, "
						"wanted %.0f\n", round, r, got[r],
						want[r]);
				bad++;
			}
		}
		printf("\n");
		for (int r = 0; r < R; r++) {
			k_add<<<BLOCKS, THREADS>>>(in[r], N, (float)(round + 1));
			CK(cudaGetLastError());
			want[r] += (double)N * (round + 1);
		}
	}
	CK(cudaDeviceSynchronize());
	printf("%s (%d wrong sums of %d)\n", bad ? "WRONG" : "ok", bad,
	       R * ROUNDS);
	return bad ? 1 : 0;
}
