# tests/unit/alloc-table.mk - cmocka tests of the tracker's allocation table.
#
# The module is compiled exactly as in libkmux.so (-fvisibility=hidden,
# -DKMUX_PRELOAD), into objects of its own so that no other fragment's
# pattern rules or flags apply to them.

UNIT_TESTS += test-alloc-table

TEST_ALLOC_TABLE_SRCS = tests/unit/test-alloc-table.c src/preload/alloc-table.c
TEST_ALLOC_TABLE_OBJS = \
	$(TEST_ALLOC_TABLE_SRCS:%.c=$(BUILD)/obj/unit/test-alloc-table/%.o)

$(TEST_ALLOC_TABLE_OBJS): $(BUILD)/obj/unit/test-alloc-table/%.o: %.c
	@mkdir -p $(dir $@)
	$(COMPILE) -fvisibility=hidden -DKMUX_PRELOAD -c $< -o $@

$(BUILD)/tests/unit/test-alloc-table: $(TEST_ALLOC_TABLE_OBJS)
	@mkdir -p $(dir $@)
	$(CC) -o $@ $(TEST_ALLOC_TABLE_OBJS) $(KMUX_LDFLAGS) -lcmocka -lpthread
