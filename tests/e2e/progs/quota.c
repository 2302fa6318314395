/*
 * quota.c - allocates device memory in steps and says what it got, for the
 * memory quota test (t70-quota.sh).
 *
 *   quota [STEP_MIB [MAX_STEPS]]   (default 8 MiB, 32 steps)
 *
 * Prints, one fact a line (sizes in MiB):
 *   info0 total=T free=F        cuMemGetInfo before anything
 *   got N                       what the steps got before the first failure
 *   stop err=E                  the error of that failure (absent: none)
 *   info1 total=T free=F        at the peak
 *   info2 total=T free=F        after freeing everything
 *   realloc err=E               one step again after the frees
 *   kinds ...                   pitch, managed, async, VMM (see below)
 *   arrays ...                  CUDA arrays (QUOTA_ARRAYS=1, see below)
 *   deferred array err=E        an array after a deferred free (QUOTA_DEFER=1)
 *   graphs ...                  graph memory nodes (QUOTA_GRAPHS=1, see below)
 * QUOTA_HOLD_MS=n sleeps n ms at the peak (two processes at once).
 */
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "e2e-common.h"

#define MIB (1024u * 1024u)
#define MAX_STEPS 1024

static void info(const char *tag)
{
	size_t f = 0, t = 0;

	CHECK(cuMemGetInfo(&f, &t));
	printf("%s total=%zu free=%zu\n", tag, t / MIB, f / MIB);
}

/* Every other allocation kind, one after the other, 16 MiB each. */
static void kinds(void)
{
	CUmemAllocationProp prop = {
		.type = CU_MEM_ALLOCATION_TYPE_PINNED,
		.location = { .type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0 },
	};
	CUmemGenericAllocationHandle h;
	CUdeviceptr p = 0, m = 0, a = 0, x = 0;
	size_t pitch = 0;
	void *host = NULL;

	printf("kinds pitch err=%d\n",
	       (int)cuMemAllocPitch(&p, &pitch, 4 * MIB, 4, 4));
	printf("kinds managed err=%d\n",
	       (int)cuMemAllocManaged(&m, 16 * MIB, CU_MEM_ATTACH_GLOBAL));
	printf("kinds async err=%d\n", (int)cuMemAllocAsync(&a, 16 * MIB, 0));
	CHECK(cuStreamSynchronize(0));
	printf("kinds vmm err=%d\n", (int)cuMemCreate(&h, 16 * MIB, &prop, 0));
	/* Host memory is not counted. */
	printf("kinds host err=%d\n", (int)cuMemAllocHost(&host, 32 * MIB));
	printf("kinds over err=%d\n", (int)cuMemAlloc(&x, 2 * MIB));
	info("kinds-full");
	CHECK(cuMemRelease(h));
	printf("kinds after-release err=%d\n", (int)cuMemAlloc(&x, 2 * MIB));
	CHECK(cuMemFree(x));
	CHECK(cuMemFreeAsync(a, 0));
	CHECK(cuStreamSynchronize(0));
	printf("kinds after-free-async err=%d\n",
	       (int)cuMemAlloc(&x, 16 * MIB));
	CHECK(cuMemFree(x));
	CHECK(cuMemFree(m));
	CHECK(cuMemFree(p));
	CHECK(cuMemFreeHost(host));
	info("kinds-end");
}

/*
 * CUDA arrays, counted by their texels: a 16 MiB 2D array, a 64 MiB 3D
 * one, a 16 MiB 3D one, a 2048x2048 RGBA8 mipmapped array of 12 levels
 * (16 MiB + 1/3: 22369620 bytes); then a 16 MiB allocation; then the
 * first array destroyed and the allocation again.
 */
static void arrays(void)
{
	CUDA_ARRAY_DESCRIPTOR d2 = { .Width = 2048, .Height = 2048,
				     .Format = CU_AD_FORMAT_FLOAT,
				     .NumChannels = 1 };
	CUDA_ARRAY3D_DESCRIPTOR big = { .Width = 512, .Height = 512,
					.Depth = 16,
					.Format = CU_AD_FORMAT_FLOAT,
					.NumChannels = 4 };
	CUDA_ARRAY3D_DESCRIPTOR d3 = big, mip = {
		.Width = 2048, .Height = 2048,
		.Format = CU_AD_FORMAT_UNSIGNED_INT8, .NumChannels = 4 };
	CUarray a1 = NULL, a2 = NULL, a3 = NULL;
	CUmipmappedArray m = NULL;
	CUdeviceptr x = 0;
	CUresult r;

	d3.Width = d3.Height = 256;
	printf("arrays 2d err=%d\n", (int)cuArrayCreate(&a1, &d2));
	r = cuArray3DCreate(&a2, &big);
	printf("arrays 3d-big err=%d\n", (int)r);
	if (r == CUDA_SUCCESS)
		CHECK(cuArrayDestroy(a2));
	printf("arrays 3d err=%d\n", (int)cuArray3DCreate(&a3, &d3));
	printf("arrays mipmap err=%d\n",
	       (int)cuMipmappedArrayCreate(&m, &mip, 12));
	info("arrays-full");
	r = cuMemAlloc(&x, 16 * MIB);
	printf("arrays over err=%d\n", (int)r);
	if (r == CUDA_SUCCESS)
		CHECK(cuMemFree(x));
	CHECK(cuArrayDestroy(a1));
	r = cuMemAlloc(&x, 16 * MIB);
	printf("arrays after-destroy err=%d\n", (int)r);
	if (r == CUDA_SUCCESS)
		CHECK(cuMemFree(x));
	CHECK(cuArrayDestroy(a3));
	CHECK(cuMipmappedArrayDestroy(m));
	info("arrays-end");
}

/*
 * QUOTA_DEFER=1: the whole quota allocated, written, freed; then a 16 MiB
 * array.  Under KMUX_STREAMS kmux may defer that free (its charge held
 * until the streams are idle): the array's reservation must give such
 * charges back first, as cuMemAlloc's does.
 */
static void deferred(unsigned mib)
{
	CUDA_ARRAY_DESCRIPTOR d = { .Width = 2048, .Height = 2048,
				    .Format = CU_AD_FORMAT_FLOAT,
				    .NumChannels = 1 };
	CUdeviceptr p;
	CUarray a;
	CUresult r;

	CHECK(cuMemAlloc(&p, (size_t)mib * MIB));
	CHECK(cuMemsetD8(p, 1, (size_t)mib * MIB));
	CHECK(cuMemFree(p));
	r = cuArrayCreate(&a, &d);
	printf("deferred array err=%d\n", (int)r);
	if (r == CUDA_SUCCESS)
		CHECK(cuArrayDestroy(a));
}

static CUgraph graph_alloc_nodes(const unsigned *mib, int n, int free_them,
				 CUdeviceptr *va)
{
	CUgraphNode alloc[4], fr;
	CUgraph g;

	CHECK(cuGraphCreate(&g, 0));
	for (int i = 0; i < n; i++) {
		CUDA_MEM_ALLOC_NODE_PARAMS p = { 0 };

		p.poolProps.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
		p.poolProps.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
		p.poolProps.location.id = 0;
		p.bytesize = (size_t)mib[i] * MIB;
		CHECK(cuGraphAddMemAllocNode(&alloc[i], g, NULL, 0, &p));
		va[i] = p.dptr;
		if (free_them)
			CHECK(cuGraphAddMemFreeNode(&fr, g, &alloc[i], 1,
						    p.dptr));
	}
	return g;
}

static CUresult graph_launch_sync(CUgraphExec x, CUstream s)
{
	CUresult r = cuGraphLaunch(x, s);

	if (r == CUDA_SUCCESS)
		CHECK(cuStreamSynchronize(s));
	return r;
}

/*
 * QUOTA_GRAPHS=1 (with a 64 MiB quota): memory that graphs allocate
 * through their memory nodes.  A graph that frees its 32 MiB itself,
 * launched twice; one that leaves 48 MiB live (counted until its free,
 * cuMemFreeAsync then cuMemFree); one that allocates 2 x 40 MiB at once;
 * a stream capture that allocates and frees 48 MiB (charged by its
 * launches, not by the capture); an auto-free graph of 48 MiB launched
 * twice (the second launch frees the first's).
 */
static void graphs(void)
{
	static const unsigned own[] = { 32 }, live[] = { 48 },
			      big[] = { 40, 40 };
	CUdeviceptr va[2], p, e;
	CUgraphExec x;
	CUgraph g;
	CUstream s;
	CUresult r;

	CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));

	g = graph_alloc_nodes(own, 1, 1, va);
	CHECK(cuGraphInstantiate(&x, g, 0));
	printf("graphs own-free err=%d\n", (int)graph_launch_sync(x, s));
	printf("graphs own-free-again err=%d\n", (int)graph_launch_sync(x, s));
	info("graphs-after-own");
	CHECK(cuGraphExecDestroy(x));
	CHECK(cuGraphDestroy(g));

	g = graph_alloc_nodes(live, 1, 0, va);
	CHECK(cuGraphInstantiate(&x, g, 0));
	printf("graphs live err=%d\n", (int)graph_launch_sync(x, s));
	info("graphs-live");
	r = cuMemAlloc(&p, 32 * MIB);
	printf("graphs alloc-while-live err=%d\n", (int)r);
	if (r == CUDA_SUCCESS)
		CHECK(cuMemFree(p));
	CHECK(cuMemFreeAsync(va[0], s));
	CHECK(cuStreamSynchronize(s));
	info("graphs-freed-async");
	printf("graphs relaunch err=%d\n", (int)graph_launch_sync(x, s));
	CHECK(cuMemFree(va[0]));
	info("graphs-freed-sync");
	CHECK(cuGraphExecDestroy(x));
	CHECK(cuGraphDestroy(g));

	g = graph_alloc_nodes(big, 2, 1, va);
	CHECK(cuGraphInstantiate(&x, g, 0));
	printf("graphs too-big err=%d\n", (int)graph_launch_sync(x, s));
	info("graphs-after-big");
	CHECK(cuGraphExecDestroy(x));
	CHECK(cuGraphDestroy(g));

	CHECK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_RELAXED));
	CHECK(cuMemAllocAsync(&e, 48 * MIB, s));
	info("graphs-capturing");
	CHECK(cuMemsetD8Async(e, 7, 48 * MIB, s));
	CHECK(cuMemFreeAsync(e, s));
	CHECK(cuStreamEndCapture(s, &g));
	CHECK(cuGraphInstantiate(&x, g, 0));
	printf("graphs captured err=%d\n", (int)graph_launch_sync(x, s));
	printf("graphs captured-again err=%d\n", (int)graph_launch_sync(x, s));
	info("graphs-after-captured");
	CHECK(cuGraphExecDestroy(x));
	CHECK(cuGraphDestroy(g));

	g = graph_alloc_nodes(live, 1, 0, va);
	CHECK(cuGraphInstantiate(&x, g,
				 CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH));
	printf("graphs auto-free err=%d\n", (int)graph_launch_sync(x, s));
	printf("graphs auto-free-again err=%d\n", (int)graph_launch_sync(x, s));
	info("graphs-auto-live");
	CHECK(cuMemFree(va[0]));
	CHECK(cuGraphExecDestroy(x));
	CHECK(cuGraphDestroy(g));
	info("graphs-end");
	CHECK(cuStreamDestroy(s));
}

int main(int argc, char **argv)
{
	static CUdeviceptr ptr[MAX_STEPS];
	unsigned step = argc > 1 ? (unsigned)atoi(argv[1]) : 8;
	int max = argc > 2 ? atoi(argv[2]) : 32, n = 0, i;
	const char *hold = getenv("QUOTA_HOLD_MS");
	CUresult r = CUDA_SUCCESS;
	CUdevice dev;
	CUcontext ctx;

	if (!step || max < 1 || max > MAX_STEPS) {
		fprintf(stderr, "usage: quota [STEP_MIB [MAX_STEPS]]\n");
		return 2;
	}
	CHECK(cuInit(0));
	CHECK(cuDeviceGet(&dev, 0));
	CHECK(cuCtxCreate(&ctx, NULL, 0, dev));
	info("info0");
	for (n = 0; n < max; n++) {
		r = cuMemAlloc(&ptr[n], (size_t)step * MIB);
		if (r != CUDA_SUCCESS)
			break;
	}
	printf("got %u\n", n * step);
	if (r != CUDA_SUCCESS)
		printf("stop err=%d\n", (int)r);
	info("info1");
	if (hold) {
		long ms = atol(hold);
		struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

		nanosleep(&ts, NULL);
	}
	for (i = 0; i < n; i++)
		CHECK(cuMemFree(ptr[i]));
	info("info2");
	r = cuMemAlloc(&ptr[0], (size_t)step * MIB);
	printf("realloc err=%d\n", (int)r);
	if (r == CUDA_SUCCESS)
		CHECK(cuMemFree(ptr[0]));
	if (getenv("QUOTA_KINDS"))
		kinds();
	if (getenv("QUOTA_ARRAYS"))
		arrays();
	if (getenv("QUOTA_DEFER"))
		deferred(step);
	if (getenv("QUOTA_GRAPHS"))
		graphs();
	CHECK(cuCtxDestroy(ctx));
	return 0;
}
