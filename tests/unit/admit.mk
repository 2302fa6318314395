# tests/unit/admit.mk - cmocka tests of kmuxd's admission and placement
# policy (src/daemon/admit.c) on synthetic GPU states.
#
# Compiled as kmuxd will compile it, into objects of its own so that no
# other fragment's pattern rules or flags apply to them.

UNIT_TESTS += test-admit
test-admit_SRCS = tests/unit/test-admit.c src/daemon/admit.c
test-admit_CFLAGS = -iquote src/daemon
test-admit_LIBS = -lcmocka
