#!/usr/bin/env bash
# valgrind (memcheck) finds no error in the preload while it schedules
# (one thread with `kmux verify`'s recorder on, four threads on their own
# per-thread default streams, a bridged capture) and while it is made to
# fail, with stream-ordered allocation, pausing and passing through.  Skipped under the sanitizer build and where valgrind is missing.
. "$(dirname "$0")/lib.sh"

if [ -n "${ASAN_LIB:-}" ] || ! command -v valgrind >/dev/null 2>&1; then
	echo "  skip $T_NAME: sanitizer build or no valgrind"
	finish
fi
# --fair-sched: the programs spin on cuStreamQuery, and valgrind's default
# lock hand-off can let a spinning thread starve the simulated GPU's workers.
VG=(valgrind -q --fair-sched=yes --error-exitcode=99 --leak-check=no
    --track-origins=no)

KMUX_STREAMS=4 KMUX_VERIFY_LOG=$TMP/v.log LD_PRELOAD=$PRELOAD "${VG[@]}" \
	"$PROGS/rand-dag" 3 200 >"$TMP/vg1" 2>&1
check "memcheck: scheduling and recording a random program" [ $? -eq 0 ]
KMUX_STREAMS=4 LD_PRELOAD=$PRELOAD "${VG[@]}" "$PROGS/rand-dag-pt" 4 60 4 >"$TMP/vg2" 2>&1
check "memcheck: four threads on per-thread default streams" [ $? -eq 0 ]
KMUX_STREAMS=4 LD_PRELOAD=$PRELOAD "${VG[@]}" "$PROGS/streams-cases" capture >"$TMP/vg3" 2>&1
check "memcheck: a bridged capture" [ $? -eq 0 ]
KMUX_DEBUG_STREAMS_FAIL=2 KMUX_STREAMS=4 LD_PRELOAD=$PRELOAD "${VG[@]}" \
	"$PROGS/rand-dag" 5 200 >"$TMP/vg4" 2>&1
check "memcheck: injected failures" [ $? -eq 0 ]
KMUX_STREAM_ALLOC=1 KMUX_STREAMS=4 LD_PRELOAD=$PRELOAD "${VG[@]}" \
	"$PROGS/phase-alloc" phases 4 3 >"$TMP/vg5" 2>&1
check "memcheck: stream-ordered allocation (KMUX_STREAM_ALLOC)" [ $? -eq 0 ]
KMUX_STREAMS=4 RAND_DAG_PAUSE=7 LD_PRELOAD=$PRELOAD "${VG[@]}" \
	"$PROGS/rand-dag" 6 120 2 >"$TMP/vg6" 2>&1
check "memcheck: kmux_streams_pause() switching from two threads" [ $? -eq 0 ]
KMUX_STREAMS=4 KMUX_DEBUG_KEEP_UP_US=50000 RAND_DAG_PHASES=60 LD_PRELOAD=$PRELOAD "${VG[@]}" \
	"$PROGS/rand-dag" 2 240 >"$TMP/vg7" 2>&1
check "memcheck: passing through launch-bound stretches" [ $? -eq 0 ]
grep -h '^==' "$TMP"/vg? | head -20 | sed 's/^/    /'
finish
