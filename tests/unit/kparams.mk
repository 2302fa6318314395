# tests/unit/kparams.mk - cmocka tests of kernel parameter decoding.
#
# kparams looks pointers up in the real allocation table, so both modules
# are linked, compiled exactly as in libkmux.so into objects of their own.

UNIT_TESTS += test-kparams

TEST_KPARAMS_SRCS = tests/unit/test-kparams.c src/preload/kparams.c \
	src/preload/alloc-table.c src/preload/ptx-range.c src/preload/ptrtab.c
TEST_KPARAMS_OBJS = $(TEST_KPARAMS_SRCS:%.c=$(BUILD)/obj/unit/test-kparams/%.o)

$(TEST_KPARAMS_OBJS): $(BUILD)/obj/unit/test-kparams/%.o: %.c
	@mkdir -p $(dir $@)
	$(COMPILE) -fvisibility=hidden -DKMUX_PRELOAD -c $< -o $@

$(BUILD)/tests/unit/test-kparams: $(TEST_KPARAMS_OBJS)
	@mkdir -p $(dir $@)
	$(CC) -o $@ $(TEST_KPARAMS_OBJS) $(KMUX_LDFLAGS) -lcmocka -lpthread
