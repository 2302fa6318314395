# tests/unit/db.mk - cmocka tests of kmuxd's SQLite state (src/daemon/db.c)
# on temporary databases: schema and migration, jobs and their states,
# profiles, frozen processes, recovery after kill -9, full disk, read-only.
#
# Compiled as kmuxd will compile it, into objects of its own; db.c uses the
# protocol's job states, so src/common/proto.c is linked too.

UNIT_TESTS += test-db

TEST_DB_SRCS = tests/unit/test-db.c src/daemon/db.c src/common/proto.c
TEST_DB_OBJS = $(TEST_DB_SRCS:%.c=$(BUILD)/obj/unit/test-db/%.o)

$(TEST_DB_OBJS): $(BUILD)/obj/unit/test-db/%.o: %.c
	@mkdir -p $(dir $@)
	$(COMPILE) -iquote src/daemon -c $< -o $@

$(BUILD)/tests/unit/test-db: $(TEST_DB_OBJS)
	@mkdir -p $(dir $@)
	$(CC) -o $@ $(TEST_DB_OBJS) $(KMUX_LDFLAGS) -lcmocka -lsqlite3
