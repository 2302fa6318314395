#!/usr/bin/env bash
# No libcuda on the machine: a program sees exactly what it would see
# without kmux (the preload never invents a driver, never aborts).
. "$(dirname "$0")/lib.sh"

unset LD_LIBRARY_PATH
mkdir -p "$TMP/empty"
export LD_LIBRARY_PATH=$TMP/empty
"$PROGS/drv-dlopen" >"$TMP/plain" 2>&1
rc_plain=$?
LD_PRELOAD=$PRELOAD "$PROGS/drv-dlopen" >"$TMP/kmux" 2>&1
rc_kmux=$?
check "dlopen of a missing driver fails the same way (exit $rc_plain vs $rc_kmux)" [ $rc_plain -eq 3 ] && [ $rc_kmux -eq 3 ]
check "same message with and without kmux" cmp -s "$TMP/plain" "$TMP/kmux"

# A program linked with -lcuda fails to start, as without kmux.
"$PROGS/drv-basic" >/dev/null 2>&1
rc_plain=$?
LD_PRELOAD=$PRELOAD "$PROGS/drv-basic" >/dev/null 2>&1
rc_kmux=$?
check "a -lcuda program fails to start the same way ($rc_plain vs $rc_kmux)" [ $rc_plain -ne 0 ] && [ $rc_plain -eq $rc_kmux ]

# kmux trace on a machine without a driver still runs the command.
"$KMUX" trace -o "$TMP/t.json" -- "$PROGS/drv-dlopen" >/dev/null 2>&1
check "kmux trace passes the command's exit status through (3)" [ $? -eq 3 ]
finish
