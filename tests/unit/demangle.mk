# tests/unit/demangle.mk - display names of C++ kernels.
UNIT_TESTS += test-demangle

TEST_DEMANGLE_SRCS = tests/unit/test-demangle.c src/cli/demangle.c
TEST_DEMANGLE_OBJS = $(TEST_DEMANGLE_SRCS:%.c=$(BUILD)/obj/unit/test-demangle/%.o)

$(TEST_DEMANGLE_OBJS): $(BUILD)/obj/unit/test-demangle/%.o: %.c
	@mkdir -p $(dir $@)
	$(COMPILE) -c $< -o $@

$(BUILD)/tests/unit/test-demangle: $(TEST_DEMANGLE_OBJS)
	@mkdir -p $(dir $@)
	$(CC) -o $@ $(TEST_DEMANGLE_OBJS) $(KMUX_LDFLAGS) -lcmocka -ldl -lpthread
