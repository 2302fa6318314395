# tests/unit/ptx-readonly.mk - cmocka tests of the PTX read-only analysis
# and the fatbin walk (src/preload/ptx-readonly.c), on hand-written PTX and
# on nvcc output committed under tests/unit/ptx/.

UNIT_TESTS += test-ptx-readonly

TEST_PTXRO_SRCS = tests/unit/test-ptx-readonly.c src/preload/ptx-readonly.c src/preload/ptx-range.c \
	src/preload/codec-dl.c
TEST_PTXRO_OBJS = $(TEST_PTXRO_SRCS:%.c=$(BUILD)/obj/unit/test-ptx-readonly/%.o)

$(TEST_PTXRO_OBJS): $(BUILD)/obj/unit/test-ptx-readonly/%.o: %.c
	@mkdir -p $(dir $@)
	$(COMPILE) -fvisibility=hidden -DKMUX_PRELOAD -c $< -o $@

$(BUILD)/tests/unit/test-ptx-readonly: $(TEST_PTXRO_OBJS)
	@mkdir -p $(dir $@)
	$(CC) -o $@ $(TEST_PTXRO_OBJS) $(KMUX_LDFLAGS) -lcmocka
