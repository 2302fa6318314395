# tests/unit/num.mk - cmocka tests of the command lines' integer and
# seconds grammar (src/common/num.c), compiled as the CLI compiles it.

UNIT_TESTS += test-num
test-num_SRCS = tests/unit/test-num.c src/common/num.c
test-num_LIBS = -lcmocka
