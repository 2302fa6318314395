# tests/unit/suspend.mk - cmocka tests of the evict mode's load control
# rule (src/preload/suspend.c, a pure function), compiled as in libkmux.so.

UNIT_TESTS += test-suspend

TEST_SUSPEND_SRCS = tests/unit/test-suspend.c src/preload/suspend.c
TEST_SUSPEND_OBJS = $(TEST_SUSPEND_SRCS:%.c=$(BUILD)/obj/unit/test-suspend/%.o)

$(TEST_SUSPEND_OBJS): $(BUILD)/obj/unit/test-suspend/%.o: %.c
	@mkdir -p $(dir $@)
	$(COMPILE) -fvisibility=hidden -DKMUX_PRELOAD -c $< -o $@

$(BUILD)/tests/unit/test-suspend: $(TEST_SUSPEND_OBJS)
	@mkdir -p $(dir $@)
	$(CC) -o $@ $(TEST_SUSPEND_OBJS) $(KMUX_LDFLAGS) -lcmocka
