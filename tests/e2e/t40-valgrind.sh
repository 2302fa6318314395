#!/usr/bin/env bash
# valgrind (memcheck) finds no error in a driver-API program running under
# the preload, bare and while tracing: kmux inside someone else's process
# must not corrupt or leak what it touches.  Skipped under the sanitizer
# build (the two do not mix) and where valgrind is missing.
. "$(dirname "$0")/lib.sh"

if [ -n "${ASAN_LIB:-}" ] || ! command -v valgrind >/dev/null 2>&1; then
	echo "  skip $T_NAME: sanitizer build or no valgrind"
	finish
fi
VG=(valgrind -q --error-exitcode=99 --leak-check=no --track-origins=no
)
LD_PRELOAD=$PRELOAD "${VG[@]}" "$PROGS/drv-basic" 1 >"$TMP/vg1" 2>&1
check "memcheck: no errors under the bare preload" [ $? -eq 0 ]
mkdir -p "$TMP/tr"
KMUX_TRACE_DIR=$TMP/tr LD_PRELOAD=$PRELOAD "${VG[@]}" "$PROGS/drv-threads" >"$TMP/vg2" 2>&1
check "memcheck: no errors while tracing a multi-threaded program" [ $? -eq 0 ]
check "  ... and the trace file was written" ls "$TMP"/tr/kmux-trace.*.jsonl
grep -v '^drv-' "$TMP/vg1" "$TMP/vg2" | head -20 | sed 's/^/    /'
finish
