# tests/unit/kdur.mk - cmocka tests of the learned kernel durations
# (src/preload/kdur.c, pure bookkeeping), compiled as in libkmux.so.

UNIT_TESTS += test-kdur

TEST_KDUR_SRCS = tests/unit/test-kdur.c src/preload/kdur.c
TEST_KDUR_OBJS = $(TEST_KDUR_SRCS:%.c=$(BUILD)/obj/unit/test-kdur/%.o)

$(TEST_KDUR_OBJS): $(BUILD)/obj/unit/test-kdur/%.o: %.c
	@mkdir -p $(dir $@)
	$(COMPILE) -fvisibility=hidden -DKMUX_PRELOAD -c $< -o $@

$(BUILD)/tests/unit/test-kdur: $(TEST_KDUR_OBJS)
	@mkdir -p $(dir $@)
	$(CC) -o $@ $(TEST_KDUR_OBJS) $(KMUX_LDFLAGS) -lcmocka
