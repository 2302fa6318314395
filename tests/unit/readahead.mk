# tests/unit/readahead.mk - cmocka tests of the read-ahead table
# (src/preload/readahead.c, pure bookkeeping), compiled as in libkmux.so.

UNIT_TESTS += test-readahead

TEST_READAHEAD_SRCS = tests/unit/test-readahead.c src/preload/readahead.c
TEST_READAHEAD_OBJS = $(TEST_READAHEAD_SRCS:%.c=$(BUILD)/obj/unit/test-readahead/%.o)

$(TEST_READAHEAD_OBJS): $(BUILD)/obj/unit/test-readahead/%.o: %.c
	@mkdir -p $(dir $@)
	$(COMPILE) -fvisibility=hidden -DKMUX_PRELOAD -c $< -o $@

$(BUILD)/tests/unit/test-readahead: $(TEST_READAHEAD_OBJS)
	@mkdir -p $(dir $@)
	$(CC) -o $@ $(TEST_READAHEAD_OBJS) $(KMUX_LDFLAGS) -lcmocka
