# tests/unit/streams.mk - cmocka tests of the stream scheduler's driver-side
# helpers that need no driver: KMUX_STREAMS parsing against
# CUDA_DEVICE_MAX_CONNECTIONS (streams-env.c) and the placeholder rename of
# stream-ordered allocations (sched_rename, sched-map.c).  Compiled exactly
# as in libkmux.so, into objects of their own.

UNIT_TESTS += test-streams

TEST_STREAMS_SRCS = tests/unit/test-streams.c src/preload/streams-env.c \
	src/preload/sched.c src/preload/sched-map.c src/preload/sched-sync.c
TEST_STREAMS_OBJS = $(TEST_STREAMS_SRCS:%.c=$(BUILD)/obj/unit/test-streams/%.o)

$(TEST_STREAMS_OBJS): $(BUILD)/obj/unit/test-streams/%.o: %.c
	@mkdir -p $(dir $@)
	$(COMPILE) -fvisibility=hidden -DKMUX_PRELOAD -c $< -o $@

$(BUILD)/tests/unit/test-streams: $(TEST_STREAMS_OBJS)
	@mkdir -p $(dir $@)
	$(CC) -o $@ $(TEST_STREAMS_OBJS) $(KMUX_LDFLAGS) -lcmocka
