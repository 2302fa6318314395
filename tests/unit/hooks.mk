# tests/unit/hooks.mk - the hook table and its resolution paths, linked
# statically with every preload object, against the simulated driver.

UNIT_TESTS += test-hooks
test-hooks_SRCS = tests/unit/test-hooks.c
test-hooks_CFLAGS = -DKMUX_PRELOAD
test-hooks_EXTRA_OBJS = $(PRELOAD_OBJS)
test-hooks_LIBS = -lcmocka -ldl -lpthread
# The test finds the simulated driver through TEST_SIMCUDA (set by `make unit`).
test-hooks_DEPS = $(BUILD)/simcuda/libcuda.so.1
