# tests/unit/size.mk - cmocka tests of size parsing and printing.
#
# src/common/size.c is compiled as the CLI compiles it, into objects of its
# own so that no other fragment's pattern rules or flags apply to them.

UNIT_TESTS += test-size
test-size_SRCS = tests/unit/test-size.c src/common/size.c
test-size_LIBS = -lcmocka
