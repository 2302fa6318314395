# tests/unit/ptx-table.mk - cmocka tests of the per-image read-only verdicts
# (src/preload/ptx-table.c) against a fake driver.

UNIT_TESTS += test-ptx-table

TEST_PTXTAB_SRCS = tests/unit/test-ptx-table.c src/preload/ptx-table.c \
	src/preload/ptx-readonly.c src/preload/ptx-range.c src/preload/codec-dl.c src/common/log.c
TEST_PTXTAB_OBJS = $(TEST_PTXTAB_SRCS:%.c=$(BUILD)/obj/unit/test-ptx-table/%.o)

$(TEST_PTXTAB_OBJS): $(BUILD)/obj/unit/test-ptx-table/%.o: %.c
	@mkdir -p $(dir $@)
	$(COMPILE) -fvisibility=hidden -DKMUX_PRELOAD -c $< -o $@

$(BUILD)/tests/unit/test-ptx-table: $(TEST_PTXTAB_OBJS)
	@mkdir -p $(dir $@)
	$(CC) -o $@ $(TEST_PTXTAB_OBJS) $(KMUX_LDFLAGS) -lcmocka -lpthread -ldl
