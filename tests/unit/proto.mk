# tests/unit/proto.mk - cmocka tests of the wire protocol codec.
#
# src/common/proto.c is compiled as the CLI compiles it, into objects of its
# own so that no other fragment's pattern rules or flags apply to them.
# The libFuzzer harness is built by tests/fuzz/build-proto.sh (clang).

UNIT_TESTS += test-proto
test-proto_SRCS = tests/unit/test-proto.c src/common/proto.c
test-proto_LIBS = -lcmocka
