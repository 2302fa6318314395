# tests/unit/proto.mk - cmocka tests of the wire protocol codec.
#
# src/common/proto.c is compiled as the CLI compiles it, into objects of its
# own so that no other fragment's pattern rules or flags apply to them.
# The libFuzzer harness is built by tests/fuzz/build-proto.sh (clang).

UNIT_TESTS += test-proto

TEST_PROTO_SRCS = tests/unit/test-proto.c src/common/proto.c
TEST_PROTO_OBJS = $(TEST_PROTO_SRCS:%.c=$(BUILD)/obj/unit/test-proto/%.o)

$(TEST_PROTO_OBJS): $(BUILD)/obj/unit/test-proto/%.o: %.c
	@mkdir -p $(dir $@)
	$(COMPILE) -c $< -o $@

$(BUILD)/tests/unit/test-proto: $(TEST_PROTO_OBJS)
	@mkdir -p $(dir $@)
	$(CC) -o $@ $(TEST_PROTO_OBJS) $(KMUX_LDFLAGS) -lcmocka
