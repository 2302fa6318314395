# tests/unit/busy-est.mk - cmocka tests of kmuxd's busyness estimator
# (src/daemon/busy-est.c) on synthetic NVML sample streams.

UNIT_TESTS += test-busy-est

TEST_BUSY_EST_SRCS = tests/unit/test-busy-est.c src/daemon/busy-est.c
TEST_BUSY_EST_OBJS = $(TEST_BUSY_EST_SRCS:%.c=$(BUILD)/obj/unit/test-busy-est/%.o)

$(TEST_BUSY_EST_OBJS): $(BUILD)/obj/unit/test-busy-est/%.o: %.c
	@mkdir -p $(dir $@)
	$(COMPILE) -iquote src/daemon -c $< -o $@

$(BUILD)/tests/unit/test-busy-est: $(TEST_BUSY_EST_OBJS)
	@mkdir -p $(dir $@)
	$(CC) -o $@ $(TEST_BUSY_EST_OBJS) $(KMUX_LDFLAGS) -lcmocka -lm
