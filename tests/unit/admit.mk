# tests/unit/admit.mk - cmocka tests of kmuxd's admission and placement
# policy (src/daemon/admit.c) on synthetic GPU states.
#
# Compiled as kmuxd will compile it, into objects of its own so that no
# other fragment's pattern rules or flags apply to them.

UNIT_TESTS += test-admit

TEST_ADMIT_SRCS = tests/unit/test-admit.c src/daemon/admit.c
TEST_ADMIT_OBJS = $(TEST_ADMIT_SRCS:%.c=$(BUILD)/obj/unit/test-admit/%.o)

$(TEST_ADMIT_OBJS): $(BUILD)/obj/unit/test-admit/%.o: %.c
	@mkdir -p $(dir $@)
	$(COMPILE) -iquote src/daemon -c $< -o $@

$(BUILD)/tests/unit/test-admit: $(TEST_ADMIT_OBJS)
	@mkdir -p $(dir $@)
	$(CC) -o $@ $(TEST_ADMIT_OBJS) $(KMUX_LDFLAGS) -lcmocka
