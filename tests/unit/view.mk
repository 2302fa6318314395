# tests/unit/view.mk - cmocka tests of what `kmux ps` and `kmux top` print
# (src/cli/view.c), compiled as the CLI compiles it.

UNIT_TESTS += test-view
test-view_SRCS = tests/unit/test-view.c src/cli/view.c src/common/proto.c \
	src/common/size.c
test-view_CFLAGS = -iquote src/cli
test-view_LIBS = -lcmocka -lcjson
