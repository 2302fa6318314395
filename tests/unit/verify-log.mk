# tests/unit/verify-log.mk - cmocka tests of `kmux verify`'s log reader and
# comparison (src/cli/verify-log.c) and of `kmux run`'s --streams parsing
# and environment (src/cli/run-env.c).

UNIT_TESTS += test-verify-log
test-verify-log_SRCS = tests/unit/test-verify-log.c src/cli/verify-log.c \
	src/cli/run-env.c src/common/num.c
test-verify-log_LIBS = -lcmocka
