# tests/unit/pace.mk - cmocka tests of the spread-or-in-line measurement
# (src/preload/pace.c, pure bookkeeping), compiled as in libkmux.so.

UNIT_TESTS += test-pace

TEST_PACE_SRCS = tests/unit/test-pace.c src/preload/pace.c
TEST_PACE_OBJS = $(TEST_PACE_SRCS:%.c=$(BUILD)/obj/unit/test-pace/%.o)

$(TEST_PACE_OBJS): $(BUILD)/obj/unit/test-pace/%.o: %.c
	@mkdir -p $(dir $@)
	$(COMPILE) -fvisibility=hidden -DKMUX_PRELOAD -c $< -o $@

$(BUILD)/tests/unit/test-pace: $(TEST_PACE_OBJS)
	@mkdir -p $(dir $@)
	$(CC) -o $@ $(TEST_PACE_OBJS) $(KMUX_LDFLAGS) -lcmocka
