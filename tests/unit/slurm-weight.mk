# tests/unit/slurm-weight.mk - cmocka tests of the Slurm integration's pure
# parts: kmuxd's busyness-to-weight mapping (src/daemon/slurm-weight.c) and
# the SPANK plugin's environment helpers (contrib/slurm/ks-env.c).  Needs no
# Slurm: the plugin's Slurm-facing file is not part of it.

UNIT_TESTS += test-slurm-weight

TEST_SLURM_WEIGHT_SRCS = tests/unit/test-slurm-weight.c \
	src/daemon/slurm-weight.c src/daemon/admit.c src/common/log.c \
	contrib/slurm/ks-env.c
TEST_SLURM_WEIGHT_OBJS = $(TEST_SLURM_WEIGHT_SRCS:%.c=$(BUILD)/obj/unit/test-slurm-weight/%.o)

$(TEST_SLURM_WEIGHT_OBJS): $(BUILD)/obj/unit/test-slurm-weight/%.o: %.c
	@mkdir -p $(dir $@)
	$(COMPILE) -iquote src/daemon -iquote contrib/slurm -c $< -o $@

$(BUILD)/tests/unit/test-slurm-weight: $(TEST_SLURM_WEIGHT_OBJS)
	@mkdir -p $(dir $@)
	$(CC) -o $@ $(TEST_SLURM_WEIGHT_OBJS) $(KMUX_LDFLAGS) -lcmocka -lm
