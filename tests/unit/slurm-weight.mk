# tests/unit/slurm-weight.mk - cmocka tests of the Slurm integration's pure
# parts: kmuxd's busyness-to-weight mapping (src/daemon/slurm-weight.c) and
# the SPANK plugin's environment helpers (contrib/slurm/ks-env.c).  Needs no
# Slurm: the plugin's Slurm-facing file is not part of it.

UNIT_TESTS += test-slurm-weight
test-slurm-weight_SRCS = tests/unit/test-slurm-weight.c \
	src/daemon/slurm-weight.c src/daemon/admit.c src/common/log.c \
	contrib/slurm/ks-env.c
test-slurm-weight_CFLAGS = -iquote src/daemon -iquote contrib/slurm
test-slurm-weight_LIBS = -lcmocka -lm
