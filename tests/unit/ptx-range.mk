# tests/unit/ptx-range.mk - cmocka tests of the ranges of pointer parameters
# by launch geometry (src/preload/ptx-range.c), on hand-written PTX and on
# nvcc output committed under tests/unit/ptx/.

UNIT_TESTS += test-ptx-range

TEST_PTXRANGE_SRCS = tests/unit/test-ptx-range.c src/preload/ptx-readonly.c \
	src/preload/ptx-range.c src/preload/codec-dl.c
TEST_PTXRANGE_OBJS = $(TEST_PTXRANGE_SRCS:%.c=$(BUILD)/obj/unit/test-ptx-range/%.o)

$(TEST_PTXRANGE_OBJS): $(BUILD)/obj/unit/test-ptx-range/%.o: %.c
	@mkdir -p $(dir $@)
	$(COMPILE) -fvisibility=hidden -DKMUX_PRELOAD -c $< -o $@

$(BUILD)/tests/unit/test-ptx-range: $(TEST_PTXRANGE_OBJS)
	@mkdir -p $(dir $@)
	$(CC) -o $@ $(TEST_PTXRANGE_OBJS) $(KMUX_LDFLAGS) -lcmocka
