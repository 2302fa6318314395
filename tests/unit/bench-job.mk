# tests/unit/bench-job.mk - cmocka tests of `kmux bench`'s job parsing
# (src/cli/bench-job.c: the command line splitter, the request decoder, the
# record), compiled as the CLI compiles it.

UNIT_TESTS += test-bench-job

TEST_BENCH_JOB_SRCS = tests/unit/test-bench-job.c src/cli/bench-job.c
TEST_BENCH_JOB_OBJS = $(TEST_BENCH_JOB_SRCS:%.c=$(BUILD)/obj/unit/test-bench-job/%.o)

$(TEST_BENCH_JOB_OBJS): $(BUILD)/obj/unit/test-bench-job/%.o: %.c
	@mkdir -p $(dir $@)
	$(COMPILE) -iquote src/cli -c $< -o $@

$(BUILD)/tests/unit/test-bench-job: $(TEST_BENCH_JOB_OBJS)
	@mkdir -p $(dir $@)
	$(CC) -o $@ $(TEST_BENCH_JOB_OBJS) $(KMUX_LDFLAGS) -lcmocka -lcjson
