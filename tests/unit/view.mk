# tests/unit/view.mk - cmocka tests of what `kmux ps` and `kmux top` print
# (src/cli/view.c), compiled as the CLI compiles it.

UNIT_TESTS += test-view

TEST_VIEW_SRCS = tests/unit/test-view.c src/cli/view.c src/common/proto.c \
	src/common/size.c
TEST_VIEW_OBJS = $(TEST_VIEW_SRCS:%.c=$(BUILD)/obj/unit/test-view/%.o)

$(TEST_VIEW_OBJS): $(BUILD)/obj/unit/test-view/%.o: %.c
	@mkdir -p $(dir $@)
	$(COMPILE) -iquote src/cli -c $< -o $@

$(BUILD)/tests/unit/test-view: $(TEST_VIEW_OBJS)
	@mkdir -p $(dir $@)
	$(CC) -o $@ $(TEST_VIEW_OBJS) $(KMUX_LDFLAGS) -lcmocka -lcjson
