/*
 * sim-device.c - the simulator's global state, cuInit and its environment
 * knobs, and the device queries (count, name, memory, attributes, UUID).
 *
 * Environment, read once by the first successful cuInit:
 *   SIMCUDA_DEVICES    number of devices, 0..16 (default 1)
 *   SIMCUDA_MEM_BYTES  capacity per device, bytes, K/M/G/T suffix allowed
 *                      (default 16 GiB)
 *   SIMCUDA_KERNEL_US  simulated duration of kernels whose table says 0
 *   SIMCUDA_LOG        where records are appended (%p: the pid)
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "sim.h"

struct sim_global sim = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.cond = PTHREAD_COND_INITIALIZER,
	.ctxs = { &sim.ctxs, &sim.ctxs },
	.libraries = { &sim.libraries, &sim.libraries },
};

void sim_lock(void)
{
	pthread_mutex_lock(&sim.lock);
}

void sim_unlock(void)
{
	pthread_mutex_unlock(&sim.lock);
}

void sim_wait(void)
{
	pthread_cond_wait(&sim.cond, &sim.lock);
}

void sim_wake(void)
{
	pthread_cond_broadcast(&sim.cond);
}

uint64_t sim_new_id(void)
{
	return ++sim.next_id;
}

uint64_t sim_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

void sim_warn(const char *fmt, ...)
{
	char buf[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	fprintf(stderr, "simcuda: %s\n", buf);
}

uint64_t sim_thread_serial(void)
{
	static uint64_t next;
	static __thread uint64_t serial;

	if (serial == 0)
		serial = __atomic_add_fetch(&next, 1, __ATOMIC_RELAXED);
	return serial;
}

/* An unsigned number with an optional binary K/M/G/T suffix. */
static int parse_size(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;
	unsigned shift = 0;

	if (s == NULL || *s == '\0' || *s == '-')
		return -1;
	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno != 0 || end == s)
		return -1;
	switch (*end) {
	case '\0':
		break;
	case 'k': case 'K':
		shift = 10;
		break;
	case 'm': case 'M':
		shift = 20;
		break;
	case 'g': case 'G':
		shift = 30;
		break;
	case 't': case 'T':
		shift = 40;
		break;
	default:
		return -1;
	}
	if (shift != 0 && strcmp(end + 1, "") != 0 &&
	    strcmp(end + 1, "B") != 0 && strcmp(end + 1, "iB") != 0)
		return -1;
	if (shift != 0 && v > (~0ULL >> shift))
		return -1;
	*out = v << shift;
	return 0;
}

static void read_env(void)
{
	const char *s;
	uint64_t v;

	sim.ndev = 1;
	s = getenv("SIMCUDA_DEVICES");
	if (s != NULL) {
		if (parse_size(s, &v) < 0 || v > SIM_MAX_DEVICES)
			sim_warn("SIMCUDA_DEVICES=%s is not 0..%d; using 1", s,
				 SIM_MAX_DEVICES);
		else
			sim.ndev = (int)v;
	}
	sim.mem_bytes = SIM_DEFAULT_MEM;
	s = getenv("SIMCUDA_MEM_BYTES");
	if (s != NULL) {
		if (parse_size(s, &v) < 0 || v == 0)
			sim_warn("SIMCUDA_MEM_BYTES=%s is not a size; using "
				 "16 GiB", s);
		else
			sim.mem_bytes = v;
	}
	sim.kernel_us = 0;
	s = getenv("SIMCUDA_KERNEL_US");
	if (s != NULL) {
		if (parse_size(s, &v) < 0 || v > 3600ULL * 1000000)
			sim_warn("SIMCUDA_KERNEL_US=%s is not a duration; "
				 "using 0", s);
		else
			sim.kernel_us = v;
	}
	s = getenv("SIMCUDA_DISCARD");
	sim.discard = s != NULL && strcmp(s, "1") == 0;
	s = getenv("SIMCUDA_NO_POOLS");
	sim.no_pools = s != NULL && strcmp(s, "1") == 0;
	s = getenv("SIMCUDA_NO_PARAM_INFO");
	snprintf(sim.no_param_info, sizeof(sim.no_param_info), "%s",
		 s != NULL ? s : "");
	sim.stack_threads = 0;
	s = getenv("SIMCUDA_STACK_THREADS");
	if (s != NULL && (parse_size(s, &v) < 0 || v > (1u << 24)))
		sim_warn("SIMCUDA_STACK_THREADS=%s is not 0..%u; using 0", s,
			 1u << 24);
	else if (s != NULL)
		sim.stack_threads = v;
	sim.log_path[0] = '\0';
	s = getenv("SIMCUDA_LOG");
	if (s != NULL && *s != '\0') {
		size_t o = 0;

		for (; *s != '\0' && o + 24 < sizeof(sim.log_path); s++) {
			if (s[0] == '%' && s[1] == 'p') {
				o += (size_t)snprintf(sim.log_path + o,
						      sizeof(sim.log_path) - o,
						      "%ld", (long)sim.pid);
				s++;
			} else {
				sim.log_path[o++] = *s;
			}
		}
		sim.log_path[o] = '\0';
		if (*s != '\0')
			sim_warn("SIMCUDA_LOG path too long; records go to %s",
				 sim.log_path);
	}
}

SIM_API CUresult cuInit(unsigned int Flags)
{
	int i;

	if (Flags != 0)
		return CUDA_ERROR_INVALID_VALUE;
	sim_lock();
	if (!sim.initialized) {
		sim.pid = getpid();
		read_env();
		for (i = 0; i < sim.ndev; i++) {
			struct sim_device *d = &sim.dev[i];

			d->ordinal = i;
			d->total = sim.mem_bytes;
			d->used = 0;
			d->va_next = SIM_VA_DEV_TOP - (uint64_t)(i + 1) *
				     SIM_VA_DEV_SIZE;
			d->va_end = d->va_next + SIM_VA_DEV_SIZE;
		}
		__atomic_store_n(&sim.initialized, 1, __ATOMIC_RELEASE);
	}
	sim_unlock();
	return sim.ndev == 0 ? CUDA_ERROR_NO_DEVICE : CUDA_SUCCESS;
}

CUresult sim_check_init(void)
{
	int ok;

	/* Set once under the lock and never cleared: a relaxed read is fine. */
	ok = __atomic_load_n(&sim.initialized, __ATOMIC_ACQUIRE);
	if (!ok)
		return CUDA_ERROR_NOT_INITIALIZED;
	if (sim.ndev == 0)
		return CUDA_ERROR_NO_DEVICE;
	return CUDA_SUCCESS;
}

CUresult sim_device_check(CUdevice dev)
{
	CUresult err = sim_check_init();

	if (err != CUDA_SUCCESS)
		return err;
	if (dev < 0 || dev >= sim.ndev)
		return CUDA_ERROR_INVALID_DEVICE;
	return CUDA_SUCCESS;
}

SIM_API CUresult cuDriverGetVersion(int *driverVersion)
{
	if (driverVersion == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	*driverVersion = SIM_DRIVER_VERSION;
	return CUDA_SUCCESS;
}

SIM_API CUresult cuDeviceGetCount(int *count)
{
	CUresult err;

	if (count == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	err = sim_check_init();
	if (err == CUDA_ERROR_NO_DEVICE) {
		*count = 0;
		return CUDA_SUCCESS;
	}
	if (err != CUDA_SUCCESS)
		return err;
	*count = sim.ndev;
	return CUDA_SUCCESS;
}

SIM_API CUresult cuDeviceGet(CUdevice *device, int ordinal)
{
	CUresult err;

	if (device == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	err = sim_device_check(ordinal);
	if (err != CUDA_SUCCESS)
		return err;
	*device = ordinal;
	return CUDA_SUCCESS;
}

SIM_API CUresult cuDeviceGetName(char *name, int len, CUdevice dev)
{
	CUresult err = sim_device_check(dev);

	if (err != CUDA_SUCCESS)
		return err;
	if (name == NULL || len <= 0)
		return CUDA_ERROR_INVALID_VALUE;
	snprintf(name, (size_t)len, "simcuda device %d", dev);
	return CUDA_SUCCESS;
}

SIM_API CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev)
{
	CUresult err = sim_device_check(dev);

	if (err != CUDA_SUCCESS)
		return err;
	if (bytes == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	*bytes = sim.dev[dev].total;
	return CUDA_SUCCESS;
}

SIM_API CUresult cuDeviceComputeCapability(int *major, int *minor,
					   CUdevice dev)
{
	CUresult err = sim_device_check(dev);

	if (err != CUDA_SUCCESS)
		return err;
	if (major == NULL || minor == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	*major = 9;
	*minor = 0;
	return CUDA_SUCCESS;
}

/* Values of a compute capability 9.0 part; 0 for the rest. */
static int attribute_value(CUdevice_attribute a, int dev)
{
	switch (a) {
	case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK:
	case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X:
	case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y:
		return 1024;
	case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z:
		return 64;
	case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X:
		return 2147483647;
	case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y:
	case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z:
		return 65535;
	case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK:
		return 49152;
	case CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY:
		return 65536;
	case CU_DEVICE_ATTRIBUTE_WARP_SIZE:
		return 32;
	case CU_DEVICE_ATTRIBUTE_MAX_PITCH:
		return 2147483647;
	case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK:
	case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR:
		return 65536;
	case CU_DEVICE_ATTRIBUTE_CLOCK_RATE:
		return 1755000;
	case CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT:
	case CU_DEVICE_ATTRIBUTE_SURFACE_ALIGNMENT:
		return 512;
	case CU_DEVICE_ATTRIBUTE_TEXTURE_PITCH_ALIGNMENT:
		return 32;
	case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT:
		return 132;
	case CU_DEVICE_ATTRIBUTE_PCI_BUS_ID:
		return dev + 1;
	case CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE:
		return 2619000;
	case CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH:
		return 5120;
	case CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE:
		return 50 << 20;
	case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR:
		return 2048;
	case CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT:
		return 2;
	case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR:
		return 9;
	case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR:
		return 0;
	case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR:
		return 233472;
	case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN:
		return 232448;
	case CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR:
		return 32;
	case CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK:
		return 1024;
	case CU_DEVICE_ATTRIBUTE_MAX_PERSISTING_L2_CACHE_SIZE:
		return 30 << 20;
	case CU_DEVICE_ATTRIBUTE_MAX_ACCESS_POLICY_WINDOW_SIZE:
		return 134213632;
	case CU_DEVICE_ATTRIBUTE_SINGLE_TO_DOUBLE_PRECISION_PERF_RATIO:
		return 2;
	case CU_DEVICE_ATTRIBUTE_MEM_SYNC_DOMAIN_COUNT:
		return 4;
	case CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED:
		return !sim.no_pools;
	case CU_DEVICE_ATTRIBUTE_NUMA_ID:
	case CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID:
		return -1;
	case CU_DEVICE_ATTRIBUTE_GPU_OVERLAP:
	case CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY:
	case CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS:
	case CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING:
	case CU_DEVICE_ATTRIBUTE_STREAM_PRIORITIES_SUPPORTED:
	case CU_DEVICE_ATTRIBUTE_GLOBAL_L1_CACHE_SUPPORTED:
	case CU_DEVICE_ATTRIBUTE_LOCAL_L1_CACHE_SUPPORTED:
	case CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY:
	case CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS:
	case CU_DEVICE_ATTRIBUTE_COMPUTE_PREEMPTION_SUPPORTED:
	case CU_DEVICE_ATTRIBUTE_CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM:
	case CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH:
	case CU_DEVICE_ATTRIBUTE_HOST_REGISTER_SUPPORTED:
	case CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED:
	case CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH:
		return 1;
	default:
		return 0;
	}
}

SIM_API CUresult cuDeviceGetAttribute(int *pi, CUdevice_attribute attrib,
				      CUdevice dev)
{
	CUresult err = sim_device_check(dev);

	if (err != CUDA_SUCCESS)
		return err;
	if (pi == NULL || (int)attrib <= 0 ||
	    attrib >= CU_DEVICE_ATTRIBUTE_MAX)
		return CUDA_ERROR_INVALID_VALUE;
	*pi = attribute_value(attrib, dev);
	return CUDA_SUCCESS;
}

SIM_API CUresult cuDeviceGetUuid_v2(CUuuid *uuid, CUdevice dev)
{
	CUresult err = sim_device_check(dev);

	if (err != CUDA_SUCCESS)
		return err;
	if (uuid == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	/* "simcuda-device", then the ordinal: stable across runs. */
	memcpy(uuid->bytes, "simcuda-device", 14);
	uuid->bytes[14] = 0;
	uuid->bytes[15] = (char)dev;
	return CUDA_SUCCESS;
}

SIM_API CUresult cuDeviceGetUuid(CUuuid *uuid, CUdevice dev)
{
	return cuDeviceGetUuid_v2(uuid, dev);
}

SIM_API CUresult cuDeviceGetPCIBusId(char *pciBusId, int len, CUdevice dev)
{
	CUresult err = sim_device_check(dev);

	if (err != CUDA_SUCCESS)
		return err;
	if (pciBusId == NULL || len <= 0)
		return CUDA_ERROR_INVALID_VALUE;
	snprintf(pciBusId, (size_t)len, "0000:%02x:00.0", dev + 1);
	return CUDA_SUCCESS;
}

SIM_API CUresult cuDeviceCanAccessPeer(int *canAccessPeer, CUdevice dev,
				       CUdevice peerDev)
{
	CUresult err = sim_device_check(dev);

	if (err == CUDA_SUCCESS)
		err = sim_device_check(peerDev);
	if (err != CUDA_SUCCESS)
		return err;
	if (canAccessPeer == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	*canAccessPeer = dev != peerDev;
	return CUDA_SUCCESS;
}

int sim_addr_is_simulated(uint64_t addr)
{
	return addr >= SIM_VA_LOW && addr < SIM_VA_HIGH;
}

/*
 * Process exit: write what is left to SIMCUDA_LOG.  A forked child that
 * never called into the driver again must not repeat its parent's records.
 */
__attribute__((destructor)) static void sim_fini(void)
{
	struct sim_list *l;
	int busy = 0;

	sim_lock();
	if (!sim.initialized || sim.pid != getpid()) {
		sim_unlock();
		return;
	}
	sim_rec_flush(0);
	/*
	 * With every context torn down no worker thread is left, and the
	 * rest is plain memory: free it, so leak checkers see a clean exit.
	 * A program that exits with live contexts keeps them (their workers
	 * may still be running), as the real driver does.
	 */
	for (l = sim.ctxs.next; l != &sim.ctxs; l = l->next)
		if (sim_container_of(l, struct sim_ctx, link)->active)
			busy = 1;
	if (!busy) {
		sim_library_fini();
		sim_vmm_fini();
		sim_ctx_fini();
		sim_rec_fini();
		sim_array_fini();
		sim_mem_fini();
		if (sim_list_empty(&sim.ctxs))
			sim_handle_fini();
	}
	sim_unlock();
}
