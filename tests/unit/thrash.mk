# tests/unit/thrash.mk - cmocka tests of the evict mode's thrash detector
# (src/preload/thrash.c, a pure function), compiled as in libkmux.so.

UNIT_TESTS += test-thrash

TEST_THRASH_SRCS = tests/unit/test-thrash.c src/preload/thrash.c
TEST_THRASH_OBJS = $(TEST_THRASH_SRCS:%.c=$(BUILD)/obj/unit/test-thrash/%.o)

$(TEST_THRASH_OBJS): $(BUILD)/obj/unit/test-thrash/%.o: %.c
	@mkdir -p $(dir $@)
	$(COMPILE) -fvisibility=hidden -DKMUX_PRELOAD -c $< -o $@

$(BUILD)/tests/unit/test-thrash: $(TEST_THRASH_OBJS)
	@mkdir -p $(dir $@)
	$(CC) -o $@ $(TEST_THRASH_OBJS) $(KMUX_LDFLAGS) -lcmocka
