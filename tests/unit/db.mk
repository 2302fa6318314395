# tests/unit/db.mk - cmocka tests of kmuxd's SQLite state (src/daemon/db.c)
# on temporary databases: schema and migration, jobs and their states,
# profiles, frozen processes, recovery after kill -9, full disk, read-only.
#
# Compiled as kmuxd will compile it, into objects of its own; db.c uses the
# protocol's job states, so src/common/proto.c is linked too.

UNIT_TESTS += test-db
test-db_SRCS = tests/unit/test-db.c src/daemon/db.c src/daemon/db-full.c \
	src/common/proto.c
test-db_CFLAGS = -iquote src/daemon
test-db_LIBS = -lcmocka -lsqlite3
