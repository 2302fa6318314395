# tests/unit/shrink.mk - cmocka tests of the evict mode's budget-shrinking
# rule (src/preload/shrink.c, a pure function), compiled as in libkmux.so.

UNIT_TESTS += test-shrink

TEST_SHRINK_SRCS = tests/unit/test-shrink.c src/preload/shrink.c
TEST_SHRINK_OBJS = $(TEST_SHRINK_SRCS:%.c=$(BUILD)/obj/unit/test-shrink/%.o)

$(TEST_SHRINK_OBJS): $(BUILD)/obj/unit/test-shrink/%.o: %.c
	@mkdir -p $(dir $@)
	$(COMPILE) -fvisibility=hidden -DKMUX_PRELOAD -c $< -o $@

$(BUILD)/tests/unit/test-shrink: $(TEST_SHRINK_OBJS)
	@mkdir -p $(dir $@)
	$(CC) -o $@ $(TEST_SHRINK_OBJS) $(KMUX_LDFLAGS) -lcmocka
