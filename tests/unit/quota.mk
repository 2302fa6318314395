# tests/unit/quota.mk - cmocka tests of the memory quota's accounting
# (quota.c: parsing, reserve / give back, cuMemGetInfo clamping, the VMM
# handle map).  quota_charged reads the real allocation table, so that
# module is linked too, compiled exactly as in libkmux.so.

UNIT_TESTS += test-quota

TEST_QUOTA_SRCS = tests/unit/test-quota.c src/preload/quota.c \
	src/preload/alloc-table.c src/common/log.c
TEST_QUOTA_OBJS = $(TEST_QUOTA_SRCS:%.c=$(BUILD)/obj/unit/test-quota/%.o)

$(TEST_QUOTA_OBJS): $(BUILD)/obj/unit/test-quota/%.o: %.c
	@mkdir -p $(dir $@)
	$(COMPILE) -fvisibility=hidden -DKMUX_PRELOAD -c $< -o $@

$(BUILD)/tests/unit/test-quota: $(TEST_QUOTA_OBJS)
	@mkdir -p $(dir $@)
	$(CC) -o $@ $(TEST_QUOTA_OBJS) $(KMUX_LDFLAGS) -lcmocka -lpthread
