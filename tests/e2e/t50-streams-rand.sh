#!/usr/bin/env bash
# Stream scheduling keeps every dependency: random programs (tests/e2e/
# progs/rand-dag.c: kernels, copies, memsets, frees, host functions and
# synchronizations on the default stream) print exactly what they print
# unscheduled, with KMUX_STREAMS=2, 4 and 8, and simcuda's records show no
# two conflicting operations overlapping in time; also when a quarter of
# the work goes to a blocking stream of the program's.  RAND_SEEDS=N for more.
. "$(dirname "$0")/lib.sh"

seeds=${RAND_SEEDS:-16}
# shellcheck source=tests/e2e/rand-lib.sh
. "$(dirname "$0")/rand-lib.sh"

for seed in $(seq 1 "$seeds"); do
	rand_run rand-dag "$seed" 1 2 4 8
done
# The _ptsz/_ptds entry points, the legacy stream by its handle.
for seed in $(seq 1 $((seeds / 2))); do
	rand_run rand-dag-pt "$seed" 1 2 8
done
# Four threads, each its own program: on the shared legacy stream, and on
# their own per-thread default streams.
for seed in $(seq 1 $((seeds / 4))); do
	rand_run rand-dag "$seed" 4 4
	rand_run rand-dag-pt "$seed" 4 4
done
# A blocking stream of the program's own takes a quarter of the work: CUDA
# orders it with the legacy stream implicitly, kmux must do the same with
# its pool.
export RAND_DAG_BLOCKING=1
for seed in $(seq 1 $((seeds / 2))); do
	rand_run rand-dag "$seed" 1 2 4 8
done
unset RAND_DAG_BLOCKING
check "$runs scheduled runs print what the unscheduled ones print${bad_out:+ (differ:$bad_out)}" [ -z "$bad_out" ]
check "no conflicting pair overlapped in any run${bad_check:+ (conflicts:$bad_check)}" [ -z "$bad_check" ]

# A longer program, where the scheduler's event rings wrap many times.
"$PROGS/rand-dag" 1001 2000 >"$TMP/plain" 2>&1
rm -f "$TMP"/sim.*
SIMCUDA_LOG=$TMP/sim.%p KMUX_STREAMS=8 LD_PRELOAD=$PRELOAD \
	"$PROGS/rand-dag" 1001 2000 >"$TMP/sched" 2>&1
check "a 2000-operation program: same output on 8 streams" cmp -s "$TMP/plain" "$TMP/sched"
check "a 2000-operation program: no conflicting overlap" "$SIMDIR/simcuda-check" -q "$TMP"/sim.*

# The scheduler really used its streams and dropped waits it did not need.
KMUX_LOG=info KMUX_STREAMS=4 LD_PRELOAD=$PRELOAD "$PROGS/rand-dag" 7 600 \
	>/dev/null 2>"$TMP/log"
check "statistics at exit with KMUX_LOG=info" grep -q 'streams: pid' "$TMP/log"
check "waits were issued and some pruned" \
	grep -Eq 'waits issued [1-9][0-9]*, pruned [1-9]' "$TMP/log"
sed 's/^/    /' "$TMP/log"

RAND_DAG_BLOCKING=1 KMUX_LOG=info KMUX_STREAMS=4 LD_PRELOAD=$PRELOAD \
	"$PROGS/rand-dag" 7 600 >/dev/null 2>"$TMP/log"
check "with a blocking stream: still scheduled (no context off)" \
	grep -q 'in 1 context(s), 0 off' "$TMP/log"
check "  ... its operations joined the pool and the pool waited for them" \
	grep -Eq 'blocking streams: [1-9][0-9]* joins, [1-9][0-9]* barriers' "$TMP/log"
sed 's/^/    /' "$TMP/log"
finish
