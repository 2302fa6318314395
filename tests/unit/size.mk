# tests/unit/size.mk - cmocka tests of size parsing and printing.
#
# src/common/size.c is compiled as the CLI compiles it, into objects of its
# own so that no other fragment's pattern rules or flags apply to them.

UNIT_TESTS += test-size

TEST_SIZE_SRCS = tests/unit/test-size.c src/common/size.c
TEST_SIZE_OBJS = $(TEST_SIZE_SRCS:%.c=$(BUILD)/obj/unit/test-size/%.o)

$(TEST_SIZE_OBJS): $(BUILD)/obj/unit/test-size/%.o: %.c
	@mkdir -p $(dir $@)
	$(COMPILE) -c $< -o $@

$(BUILD)/tests/unit/test-size: $(TEST_SIZE_OBJS)
	@mkdir -p $(dir $@)
	$(CC) -o $@ $(TEST_SIZE_OBJS) $(KMUX_LDFLAGS) -lcmocka
