# tests/e2e/e2e.mk - driver-API programs the end-to-end tests run on
# tests/simcuda, with and without libkmux.so preloaded.
E2E_PROGS = drv-basic drv-dlopen drv-threads quota memory reg region ctx-stack \
	phase-alloc
E2E_BINS = $(E2E_PROGS:%=$(BUILD)/tests/e2e/%)
TEST_TARGETS += $(E2E_BINS)
# The profiling build (t5m-selfprof.sh); not under the sanitizers, whose
# runtime calls kmux's dlsym before a probe could run.
ifeq ($(SANFLAGS),)
TEST_TARGETS += $(BUILD)/prof/libkmux.so
endif

E2E_SIMDIR = $(BUILD)/simcuda
# The programs link with -lcuda, so each waits for the libcuda.so link, not
# only libcuda.so.1: under make -j one could be linked before the link exists.
E2E_CFLAGS = -std=gnu11 -Wall -Wextra $(WERROR) -g $(SANFLAGS) \
	     -I$(CUDA_HOME)/include -Itests/e2e/progs

$(BUILD)/tests/e2e/drv-basic: tests/e2e/progs/drv-basic.c tests/e2e/progs/e2e-common.h $(E2E_SIMDIR)/libcuda.so
	@mkdir -p $(dir $@)
	$(CC) $(E2E_CFLAGS) -o $@ $< -L$(E2E_SIMDIR) -lcuda

# The memory quota's program (issue 4, t70-quota.sh).
$(BUILD)/tests/e2e/quota: tests/e2e/progs/quota.c tests/e2e/progs/e2e-common.h $(E2E_SIMDIR)/libcuda.so
	@mkdir -p $(dir $@)
	$(CC) $(E2E_CFLAGS) -o $@ $< -L$(E2E_SIMDIR) -lcuda

# Phase-local buffers, for stream-ordered allocation (t59-stream-alloc.sh).
$(BUILD)/tests/e2e/phase-alloc: tests/e2e/progs/phase-alloc.c tests/e2e/progs/e2e-common.h $(E2E_SIMDIR)/libcuda.so
	@mkdir -p $(dir $@)
	$(CC) $(E2E_CFLAGS) -o $@ $< -L$(E2E_SIMDIR) -lcuda

# The context's stack reservation under a memory mode (t7b-memory-ctx-stack.sh).
$(BUILD)/tests/e2e/ctx-stack: tests/e2e/progs/ctx-stack.c tests/e2e/progs/e2e-common.h $(E2E_SIMDIR)/libcuda.so
	@mkdir -p $(dir $@)
	$(CC) $(E2E_CFLAGS) -o $@ $< -L$(E2E_SIMDIR) -lcuda

# The memory manager's program (issue 5, t71-memory.sh).
$(BUILD)/tests/e2e/memory: tests/e2e/progs/memory.c tests/e2e/progs/e2e-common.h $(E2E_SIMDIR)/libcuda.so
	@mkdir -p $(dir $@)
	$(CC) $(E2E_CFLAGS) -o $@ $< -L$(E2E_SIMDIR) -lcuda

# An uncooperative program for kmuxd's registration tests (t6b-t6f).
$(BUILD)/tests/e2e/reg: tests/e2e/progs/reg.c tests/e2e/progs/e2e-common.h $(E2E_SIMDIR)/libcuda.so
	@mkdir -p $(dir $@)
	$(CC) $(E2E_CFLAGS) -o $@ $< -L$(E2E_SIMDIR) -lcuda

# Exclusive regions (issue 6, t6x-region.sh): kmux.h through dlsym.
$(BUILD)/tests/e2e/region: tests/e2e/progs/region.c tests/e2e/progs/e2e-common.h include/kmux.h $(E2E_SIMDIR)/libcuda.so
	@mkdir -p $(dir $@)
	$(CC) $(E2E_CFLAGS) -Iinclude -o $@ $< -L$(E2E_SIMDIR) -lcuda -ldl

# Loads the driver itself: not linked with -lcuda.
$(BUILD)/tests/e2e/drv-dlopen: tests/e2e/progs/drv-dlopen.c tests/e2e/progs/e2e-common.h
	@mkdir -p $(dir $@)
	$(CC) $(E2E_CFLAGS) -o $@ $< -ldl

$(BUILD)/tests/e2e/drv-threads: tests/e2e/progs/drv-threads.c tests/e2e/progs/e2e-common.h $(E2E_SIMDIR)/libcuda.so
	@mkdir -p $(dir $@)
	$(CC) $(E2E_CFLAGS) -DCUDA_API_PER_THREAD_DEFAULT_STREAM -o $@ $< -L$(E2E_SIMDIR) -lcuda -lpthread

# The stream scheduler's programs (issue 3): a random DAG on the default
# stream, and one program per case that must keep its order.  Linked with
# the simulated driver: streams-cases reads simcuda's records in-process.
E2E_STREAMS_PROGS = rand-dag rand-dag-pt streams-cases launch-cost ptx-readonly \
	ptx-extents globals
TEST_TARGETS += $(E2E_STREAMS_PROGS:%=$(BUILD)/tests/e2e/%)

$(BUILD)/tests/e2e/rand-dag: tests/e2e/progs/rand-dag.c tests/e2e/progs/e2e-common.h $(E2E_SIMDIR)/libcuda.so
	@mkdir -p $(dir $@)
	$(CC) $(E2E_CFLAGS) -o $@ $< -L$(E2E_SIMDIR) -lcuda -lpthread

$(BUILD)/tests/e2e/rand-dag-pt: tests/e2e/progs/rand-dag.c tests/e2e/progs/e2e-common.h $(E2E_SIMDIR)/libcuda.so
	@mkdir -p $(dir $@)
	$(CC) $(E2E_CFLAGS) -DCUDA_API_PER_THREAD_DEFAULT_STREAM -o $@ $< -L$(E2E_SIMDIR) -lcuda -lpthread

$(BUILD)/tests/e2e/streams-cases: tests/e2e/progs/streams-cases.c tests/e2e/progs/e2e-common.h tests/e2e/progs/sim-overlap.h tests/simcuda/simcuda.h $(E2E_SIMDIR)/libcuda.so
	@mkdir -p $(dir $@)
	$(CC) $(E2E_CFLAGS) -Itests/simcuda -o $@ $< -L$(E2E_SIMDIR) -lcuda

# Read-only parameters proven from PTX (KMUX_PTX_READONLY, t5a).
$(BUILD)/tests/e2e/ptx-readonly: tests/e2e/progs/ptx-readonly.c tests/e2e/progs/e2e-common.h tests/e2e/progs/sim-overlap.h tests/simcuda/simcuda.h $(E2E_SIMDIR)/libcuda.so
	@mkdir -p $(dir $@)
	$(CC) $(E2E_CFLAGS) -Itests/simcuda -o $@ $< -L$(E2E_SIMDIR) -lcuda

# Exact extents of constant-offset pointers (KMUX_PTX_EXTENTS, t5b).
$(BUILD)/tests/e2e/ptx-extents: tests/e2e/progs/ptx-extents.c tests/e2e/progs/e2e-common.h tests/e2e/progs/sim-overlap.h tests/simcuda/simcuda.h $(E2E_SIMDIR)/libcuda.so
	@mkdir -p $(dir $@)
	$(CC) $(E2E_CFLAGS) -Itests/simcuda -o $@ $< -L$(E2E_SIMDIR) -lcuda

# Kernels that share a module-scope variable (KMUX_PTX_GLOBALS, t5j).
$(BUILD)/tests/e2e/globals: tests/e2e/progs/globals.c tests/e2e/progs/e2e-common.h tests/simcuda/simcuda.h $(E2E_SIMDIR)/libcuda.so
	@mkdir -p $(dir $@)
	$(CC) $(E2E_CFLAGS) -Itests/simcuda -o $@ $< -L$(E2E_SIMDIR) -lcuda

# Host time per scheduled launch (bench/launch-cost.sh; t58 runs it).
$(BUILD)/tests/e2e/launch-cost: tests/e2e/progs/launch-cost.c tests/e2e/progs/e2e-common.h $(E2E_SIMDIR)/libcuda.so
	@mkdir -p $(dir $@)
	$(CC) $(E2E_CFLAGS) -O2 -o $@ $< -L$(E2E_SIMDIR) -lcuda
