# tests/unit/trace-merge.mk - cmocka tests of `kmux trace`'s two halves:
# the CLI's line parser / merge / summary (src/cli/trace-merge.c) from
# fixture files, and the preload's recorder (src/preload/trace.c, built
# exactly as in libkmux.so) writing real per-process files in child
# processes, against a fake driver table, which the merge then reads back.

UNIT_TESTS += test-trace-merge

TEST_TRACE_MERGE_CLI_SRCS = tests/unit/test-trace-merge.c src/cli/trace-merge.c \
	src/cli/demangle.c
TEST_TRACE_MERGE_PRELOAD_SRCS = src/preload/trace.c src/common/log.c
TEST_TRACE_MERGE_CLI_OBJS = $(TEST_TRACE_MERGE_CLI_SRCS:%.c=$(BUILD)/obj/unit/test-trace-merge/cli/%.o)
TEST_TRACE_MERGE_PRELOAD_OBJS = $(TEST_TRACE_MERGE_PRELOAD_SRCS:%.c=$(BUILD)/obj/unit/test-trace-merge/preload/%.o)

$(TEST_TRACE_MERGE_CLI_OBJS): $(BUILD)/obj/unit/test-trace-merge/cli/%.o: %.c
	@mkdir -p $(dir $@)
	$(COMPILE) -c $< -o $@

$(TEST_TRACE_MERGE_PRELOAD_OBJS): $(BUILD)/obj/unit/test-trace-merge/preload/%.o: %.c
	@mkdir -p $(dir $@)
	$(COMPILE) -fvisibility=hidden -DKMUX_PRELOAD -c $< -o $@

$(BUILD)/tests/unit/test-trace-merge: $(TEST_TRACE_MERGE_CLI_OBJS) $(TEST_TRACE_MERGE_PRELOAD_OBJS)
	@mkdir -p $(dir $@)
	$(CC) -o $@ $^ $(KMUX_LDFLAGS) -lcmocka -lcjson -lpthread
