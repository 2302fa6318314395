# tests/simcuda/simcuda.mk - the CPU-simulated driver, included by the
# top-level Makefile.  A test double: nothing in the product links it.
#
#   $(BUILD)/simcuda/libcuda.so.1    the simulated driver (+ libcuda.so link)
#   $(BUILD)/simcuda/kernels/*.so    kernel modules from tests/simcuda/kernels
#   $(BUILD)/simcuda/simcuda-check   overlap checker for SIMCUDA_LOG files
#   $(BUILD)/simcuda/selftest        self-test (make simcuda-selftest)

SIMCUDA_SRC := tests/simcuda
SIMCUDA_OUT = $(BUILD)/simcuda

SIMCUDA_LIB_SRCS := $(sort $(wildcard $(SIMCUDA_SRC)/sim-*.c))
SIMCUDA_LIB_OBJS = $(SIMCUDA_LIB_SRCS:$(SIMCUDA_SRC)/%.c=$(SIMCUDA_OUT)/obj/%.o)
SIMCUDA_CHECK_OBJS = $(SIMCUDA_OUT)/obj/simcuda-check.o \
	$(SIMCUDA_OUT)/obj/sim-log.o $(SIMCUDA_OUT)/obj/sim-check.o
SIMCUDA_KERNEL_SRCS := $(sort $(wildcard $(SIMCUDA_SRC)/kernels/*.c))
SIMCUDA_KERNELS = $(SIMCUDA_KERNEL_SRCS:$(SIMCUDA_SRC)/kernels/%.c=$(SIMCUDA_OUT)/kernels/%.so)

SIMCUDA_TARGETS = $(SIMCUDA_OUT)/libcuda.so.1 $(SIMCUDA_OUT)/libcuda.so \
	$(SIMCUDA_KERNELS) $(SIMCUDA_OUT)/simcuda-check $(SIMCUDA_OUT)/selftest

TEST_TARGETS += $(SIMCUDA_TARGETS)

# Everything the library exports must be reachable through cuGetProcAddress:
# each exported cu* symbol has to appear in the table in sim-procaddr.c.
define simcuda_check_exports
	@nm -D --defined-only $(1) | awk '$$2 == "T" && $$3 ~ /^cu[A-Z]/ { print $$3 }' | \
	while read -r sym; do \
		grep -q "[(, ]$$sym)" $(SIMCUDA_SRC)/sim-procaddr.c || \
		{ echo "simcuda: $$sym is exported but not in sim-procaddr.c" >&2; exit 1; }; \
	done
endef

$(SIMCUDA_OUT)/obj/%.o: $(SIMCUDA_SRC)/%.c
	@mkdir -p $(dir $@)
	$(COMPILE) -I$(SIMCUDA_SRC) -fvisibility=hidden -c $< -o $@

# -Bsymbolic: calls and function pointers inside the library bind to its own
# definitions even when an LD_PRELOAD interposer (libkmux.so) exports the
# same cu* names.  -z nodelete: worker threads run library code, so a
# dlclose must never unmap it (real libcuda behaves the same).
$(SIMCUDA_OUT)/libcuda.so.1: $(SIMCUDA_LIB_OBJS)
	$(CC) -shared -o $@ $(SIMCUDA_LIB_OBJS) $(KMUX_LDFLAGS) \
		-Wl,-soname,libcuda.so.1 -Wl,-Bsymbolic -Wl,-z,nodelete \
		$(if $(SANFLAGS),,-Wl,-z,defs) -ldl -lpthread
	$(call simcuda_check_exports,$@)

$(SIMCUDA_OUT)/libcuda.so: $(SIMCUDA_OUT)/libcuda.so.1
	ln -sf libcuda.so.1 $@

$(SIMCUDA_OUT)/kernels/%.so: $(SIMCUDA_SRC)/kernels/%.c $(SIMCUDA_SRC)/simcuda.h
	@mkdir -p $(dir $@)
	$(COMPILE) -I$(SIMCUDA_SRC) -shared -o $@ $< $(KMUX_LDFLAGS)

$(SIMCUDA_OUT)/simcuda-check: $(SIMCUDA_CHECK_OBJS)
	$(CC) -o $@ $(SIMCUDA_CHECK_OBJS) $(KMUX_LDFLAGS)

# The self-test finds libcuda.so.1, kernels/ and simcuda-check next to
# itself ($ORIGIN); an RPATH (not RUNPATH) so LD_LIBRARY_PATH cannot swap in
# another libcuda.so.1.
$(SIMCUDA_OUT)/selftest: $(SIMCUDA_OUT)/obj/selftest.o $(SIMCUDA_OUT)/libcuda.so
	$(CC) -o $@ $(SIMCUDA_OUT)/obj/selftest.o $(KMUX_LDFLAGS) \
		-L$(SIMCUDA_OUT) -Wl,--disable-new-dtags -Wl,-rpath,'$$ORIGIN' \
		-lcuda -ldl -lpthread

simcuda: $(SIMCUDA_TARGETS)

simcuda-selftest: $(SIMCUDA_TARGETS)
	$(SIMCUDA_OUT)/selftest

.PHONY: simcuda simcuda-selftest
