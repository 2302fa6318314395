# tests/unit/daemon-pure.mk - cmocka tests of kmuxd's pure helpers: the
# socket and state paths (src/common/paths.c) and the KMUX_FAKE_GPUS knob
# of the GPU module (src/daemon/nvml.c), and --mps's binary lookup and
# directories (src/daemon/mps.c).
#
# Compiled as the kmux binary compiles them, into objects of their own.

UNIT_TESTS += test-daemon-pure

TEST_DAEMON_PURE_SRCS = tests/unit/test-daemon-pure.c src/common/paths.c \
	src/daemon/nvml.c src/common/size.c src/daemon/mps.c src/cli/spawn.c \
	src/common/log.c
TEST_DAEMON_PURE_OBJS = $(TEST_DAEMON_PURE_SRCS:%.c=$(BUILD)/obj/unit/test-daemon-pure/%.o)

$(TEST_DAEMON_PURE_OBJS): $(BUILD)/obj/unit/test-daemon-pure/%.o: %.c
	@mkdir -p $(dir $@)
	$(COMPILE) -iquote src/daemon -c $< -o $@

$(BUILD)/tests/unit/test-daemon-pure: $(TEST_DAEMON_PURE_OBJS)
	@mkdir -p $(dir $@)
	$(CC) -o $@ $(TEST_DAEMON_PURE_OBJS) $(KMUX_LDFLAGS) -lcmocka -ldl
