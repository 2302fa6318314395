# tests/unit/ptrtab.mk - cmocka tests of the pointer-table bookkeeping
# (src/preload/ptrtab.c, pure), compiled as in libkmux.so.

UNIT_TESTS += test-ptrtab

TEST_PTRTAB_SRCS = tests/unit/test-ptrtab.c src/preload/ptrtab.c
TEST_PTRTAB_OBJS = $(TEST_PTRTAB_SRCS:%.c=$(BUILD)/obj/unit/test-ptrtab/%.o)

$(TEST_PTRTAB_OBJS): $(BUILD)/obj/unit/test-ptrtab/%.o: %.c
	@mkdir -p $(dir $@)
	$(COMPILE) -fvisibility=hidden -DKMUX_PRELOAD -c $< -o $@

$(BUILD)/tests/unit/test-ptrtab: $(TEST_PTRTAB_OBJS)
	@mkdir -p $(dir $@)
	$(CC) -o $@ $(TEST_PTRTAB_OBJS) $(KMUX_LDFLAGS) -lcmocka -lpthread
