# tests/unit/daemon-pure.mk - cmocka tests of kmuxd's pure helpers: the
# socket and state paths (src/common/paths.c) and the KMUX_FAKE_GPUS knob
# of the GPU module (src/daemon/nvml.c), and --mps's binary lookup and
# directories (src/daemon/mps.c).
#
# Compiled as the kmux binary compiles them, into objects of their own.

UNIT_TESTS += test-daemon-pure
test-daemon-pure_SRCS = tests/unit/test-daemon-pure.c src/common/paths.c \
	src/daemon/nvml.c src/common/size.c src/daemon/mps.c src/cli/spawn.c \
	src/common/log.c
test-daemon-pure_CFLAGS = -iquote src/daemon
test-daemon-pure_LIBS = -lcmocka -ldl
