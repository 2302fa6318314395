# tests/unit/hooks.mk - the hook table and its resolution paths, linked
# statically with every preload object, against the simulated driver.

UNIT_TESTS += test-hooks

TEST_HOOKS_OBJS = $(BUILD)/obj/unit/test-hooks/tests/unit/test-hooks.o \
	$(PRELOAD_OBJS)

$(BUILD)/obj/unit/test-hooks/tests/unit/test-hooks.o: tests/unit/test-hooks.c
	@mkdir -p $(dir $@)
	$(COMPILE) -DKMUX_PRELOAD -c $< -o $@

# The test finds the simulated driver through TEST_SIMCUDA (set by `make unit`).
$(BUILD)/tests/unit/test-hooks: $(TEST_HOOKS_OBJS) $(BUILD)/simcuda/libcuda.so.1
	@mkdir -p $(dir $@)
	$(CC) -o $@ $(TEST_HOOKS_OBJS) $(KMUX_LDFLAGS) -lcmocka -ldl -lpthread
