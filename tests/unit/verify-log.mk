# tests/unit/verify-log.mk - cmocka tests of `kmux verify`'s log reader and
# comparison (src/cli/verify-log.c) and of `kmux run`'s --streams parsing
# and environment (src/cli/run-env.c).

UNIT_TESTS += test-verify-log

TEST_VERIFY_LOG_SRCS = tests/unit/test-verify-log.c src/cli/verify-log.c \
	src/cli/run-env.c
TEST_VERIFY_LOG_OBJS = $(TEST_VERIFY_LOG_SRCS:%.c=$(BUILD)/obj/unit/test-verify-log/%.o)

$(TEST_VERIFY_LOG_OBJS): $(BUILD)/obj/unit/test-verify-log/%.o: %.c
	@mkdir -p $(dir $@)
	$(COMPILE) -c $< -o $@

$(BUILD)/tests/unit/test-verify-log: $(TEST_VERIFY_LOG_OBJS)
	@mkdir -p $(dir $@)
	$(CC) -o $@ $(TEST_VERIFY_LOG_OBJS) $(KMUX_LDFLAGS) -lcmocka
