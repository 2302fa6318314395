# tests/unit/cpulist.mk - cmocka tests of the CPU list parser
# (src/common/cpulist.c, `kmux daemon --region-cpus`).

UNIT_TESTS += test-cpulist

TEST_CPULIST_SRCS = tests/unit/test-cpulist.c src/common/cpulist.c
TEST_CPULIST_OBJS = $(TEST_CPULIST_SRCS:%.c=$(BUILD)/obj/unit/test-cpulist/%.o)

$(TEST_CPULIST_OBJS): $(BUILD)/obj/unit/test-cpulist/%.o: %.c
	@mkdir -p $(dir $@)
	$(COMPILE) -c $< -o $@

$(BUILD)/tests/unit/test-cpulist: $(TEST_CPULIST_OBJS)
	@mkdir -p $(dir $@)
	$(CC) -o $@ $(TEST_CPULIST_OBJS) $(KMUX_LDFLAGS) -lcmocka
