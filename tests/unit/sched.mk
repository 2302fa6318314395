# tests/unit/sched.mk - cmocka tests of the stream scheduler's decisions.
#
# The scheduler is pure logic (no driver, no allocation table): its own
# sources are compiled exactly as in libkmux.so (-fvisibility=hidden,
# -DKMUX_PRELOAD) into objects of their own, so no other fragment's pattern
# rules or flags apply to them.

UNIT_TESTS += test-sched

TEST_SCHED_SRCS = tests/unit/test-sched.c src/preload/sched.c \
	src/preload/sched-map.c src/preload/sched-sync.c
TEST_SCHED_OBJS = $(TEST_SCHED_SRCS:%.c=$(BUILD)/obj/unit/test-sched/%.o)

$(TEST_SCHED_OBJS): $(BUILD)/obj/unit/test-sched/%.o: %.c
	@mkdir -p $(dir $@)
	$(COMPILE) -fvisibility=hidden -DKMUX_PRELOAD -c $< -o $@

$(BUILD)/tests/unit/test-sched: $(TEST_SCHED_OBJS)
	@mkdir -p $(dir $@)
	$(CC) -o $@ $(TEST_SCHED_OBJS) $(KMUX_LDFLAGS) -lcmocka
