#!/usr/bin/env bash
# Stream-ordered allocation under the scheduler (KMUX_STREAM_ALLOC, kmux run
# --stream-alloc; src/preload/stream-alloc.h).  Phase-local buffers
# (progs/phase-alloc.c) print what they print unscheduled, no conflicting
# pair overlaps and nothing is used after its free in simcuda's records,
# and no free synchronized the device (every one is a cuMemFreeAsync on a
# pool stream, none a cuMemFree); with pools unsupported every allocation
# falls back; with a stream of the program's that kmux cannot see, frees
# stay synchronous; the quota counts what the pool keeps, and trimming lets
# an allocation past the quota or past the device's memory succeed.
# Random programs (progs/rand-dag.c) as in t50.  RAND_SEEDS=N for more.
. "$(dirname "$0")/lib.sh"

SA="KMUX_STREAM_ALLOC=1 KMUX_LOG=info LD_PRELOAD=$PRELOAD"
sync_frees() { cat "$TMP"/sim.* | grep -c 'kind=free name=cuMemFree '; }
async_frees() { cat "$TMP"/sim.* | grep 'kind=free name=cuMemFreeAsync' | grep -vc ' stream=0 '; }

"$PROGS/phase-alloc" phases 4 3 >"$TMP/plain" 2>&1
check "phase-alloc runs unscheduled" grep -q '^done' "$TMP/plain"
rm -f "$TMP"/sim.*
SIMCUDA_LOG=$TMP/sim.%p KMUX_STREAMS=4 LD_PRELOAD=$PRELOAD \
	"$PROGS/phase-alloc" phases 4 3 >/dev/null 2>&1
check "scheduled alone: the 16 frees are synchronous" [ "$(sync_frees)" = 16 ]

rm -f "$TMP"/sim.*
env SIMCUDA_LOG="$TMP/sim.%p" KMUX_STREAMS=4 $SA "$PROGS/phase-alloc" phases 4 3 \
	>"$TMP/sa" 2>"$TMP/sa.log"
check "--stream-alloc: the same output" cmp -s "$TMP/plain" "$TMP/sa"
check "  ... no conflicting overlap, no use after free" "$SIMDIR/simcuda-check" -q "$TMP"/sim.*
check "  ... no free synchronized the device ($(sync_frees) cuMemFree)" [ "$(sync_frees)" = 0 ]
check "  ... 16 frees on pool streams ($(async_frees))" [ "$(async_frees)" = 16 ]
check "  ... counted at exit" \
	grep -q 'stream-alloc: pid [0-9]*: 16 pool allocations, 16 frees stream-ordered, 0 synchronous, 0 fallbacks' "$TMP/sa.log"
sed 's/^/    /' "$TMP/sa.log"

for n in 2 8; do
	rm -f "$TMP"/sim.*
	env SIMCUDA_LOG="$TMP/sim.%p" SIMCUDA_KERNEL_US=300 KMUX_STREAMS=$n $SA \
		"$PROGS/phase-alloc" phases 8 6 >"$TMP/sa$n" 2>/dev/null
	"$PROGS/phase-alloc" phases 8 6 >"$TMP/plain86" 2>&1
	check "8 tasks, 6 phases on $n streams: same output, no conflict" \
		bash -c "cmp -s '$TMP/plain86' '$TMP/sa$n' && '$SIMDIR/simcuda-check' -q '$TMP'/sim.*"
done

# kmux run: the flag sets it, and needs --streams.
rm -f "$TMP"/sim.*
SIMCUDA_LOG=$TMP/sim.%p KMUX_LOG=info "$KMUX" run --streams 4 --stream-alloc -- \
	"$PROGS/phase-alloc" phases 4 3 >"$TMP/run" 2>"$TMP/run.log"
check "kmux run --streams 4 --stream-alloc: same output, frees on pool streams" \
	bash -c "cmp -s '$TMP/plain' '$TMP/run' && [ \$(cat '$TMP'/sim.* | grep -c 'name=cuMemFreeAsync') = 16 ]"
"$KMUX" run --stream-alloc -- true >/dev/null 2>"$TMP/usage"
check "--stream-alloc without --streams: usage error (exit 2)" [ $? -eq 2 ]
check "  ... saying why" grep -q 'needs --streams' "$TMP/usage"
"$KMUX" run --streams 2 --stream-alloc --memory lazy -- true >/dev/null 2>&1
check "--stream-alloc with --memory lazy: usage error (exit 2)" [ $? -eq 2 ]
KMUX_STREAM_ALLOC=1 KMUX_LOG=warn LD_PRELOAD=$PRELOAD "$PROGS/phase-alloc" phases 1 1 \
	>/dev/null 2>"$TMP/nostreams"
check "KMUX_STREAM_ALLOC without KMUX_STREAMS: warned, off" \
	grep -q 'KMUX_STREAM_ALLOC needs KMUX_STREAMS' "$TMP/nostreams"

# Pools unsupported: every allocation falls back, frees are cuMemFree.
rm -f "$TMP"/sim.*
env SIMCUDA_NO_POOLS=1 SIMCUDA_LOG="$TMP/sim.%p" KMUX_STREAMS=4 $SA \
	"$PROGS/phase-alloc" phases 4 3 >"$TMP/np" 2>"$TMP/np.log"
check "pools unsupported: same output, no conflict" \
	bash -c "cmp -s '$TMP/plain' '$TMP/np' && '$SIMDIR/simcuda-check' -q '$TMP'/sim.*"
check "  ... 16 fallbacks, 16 synchronous cuMemFree" \
	bash -c "grep -q '0 pool allocations, 0 frees stream-ordered, 0 synchronous, 16 fallbacks' '$TMP/np.log' && [ $(sync_frees) = 16 ]"

# A non-blocking stream of the program's writes memory it then frees with
# cuMemFree: kmux cannot order a pool free after it, so frees stay
# synchronous (the overlap check fails if they are not).
rm -f "$TMP"/sim.*
env SIMCUDA_LOG="$TMP/sim.%p" KMUX_STREAMS=4 $SA "$PROGS/phase-alloc" own-stream \
	>"$TMP/own" 2>"$TMP/own.log"
"$PROGS/phase-alloc" own-stream >"$TMP/own-plain" 2>&1
check "own non-blocking stream: same output, no conflict" \
	bash -c "cmp -s '$TMP/own-plain' '$TMP/own' && '$SIMDIR/simcuda-check' -q '$TMP'/sim.*"
check "  ... its frees synchronous" grep -q '0 frees stream-ordered, 12 synchronous' "$TMP/own.log"

# Quota: 60 MiB freed stays charged (cuMemGetInfo: 40 MiB free of 100), and
# a 70 MiB managed allocation succeeds after a trim.
env KMUX_MEM_QUOTA=100M KMUX_STREAMS=4 $SA "$PROGS/phase-alloc" quota \
	>"$TMP/q" 2>"$TMP/q.log"
check "quota: kept memory is counted (free 40 of 100 MiB)" grep -qx 'free 40' "$TMP/q"
check "  ... a trim lets 70 MiB more through" grep -qx 'managed err=0' "$TMP/q"
check "  ... one trim counted" grep -q '1 trims' "$TMP/q.log"
# Device memory: 600 MiB kept of 1 GiB, then 700 MiB (more than is kept).
env SIMCUDA_MEM_BYTES=1G KMUX_STREAMS=4 $SA "$PROGS/phase-alloc" oom \
	>"$TMP/o" 2>"$TMP/o.log"
check "out of device memory: a trim and the retry succeed" \
	bash -c "grep -qx 'big err=0' '$TMP/o' && grep -q '2 pool allocations.*1 trims' '$TMP/o.log'"

# Random programs: frees, re-allocations, every kind of copy and sync.
seeds=${RAND_SEEDS:-8}
# shellcheck source=tests/e2e/rand-lib.sh
. "$(dirname "$0")/rand-lib.sh"
RAND_ENV="KMUX_STREAM_ALLOC=1"
for seed in $(seq 1 "$seeds"); do
	rand_run rand-dag "$seed" 1 2 4 8
done
for seed in $(seq 1 $((seeds / 2))); do
	rand_run rand-dag-pt "$seed" 1 4
	rand_run rand-dag "$seed" 4 4
done
export RAND_DAG_BLOCKING=1
for seed in $(seq 1 $((seeds / 2))); do
	rand_run rand-dag "$seed" 1 4
done
unset RAND_DAG_BLOCKING
# The scheduler's records and waits fail now and then (KMUX_DEBUG_STREAMS_FAIL).
for seed in 3 5; do
	"$PROGS/rand-dag" "$seed" 200 >"$TMP/plain" 2>&1
	rm -f "$TMP"/sim.*
	SIMCUDA_LOG=$TMP/sim.%p KMUX_DEBUG_STREAMS_FAIL=3 KMUX_STREAMS=4 KMUX_STREAM_ALLOC=1 \
		LD_PRELOAD=$PRELOAD "$PROGS/rand-dag" "$seed" 200 >"$TMP/sched" 2>&1
	runs=$((runs + 1))
	cmp -s "$TMP/plain" "$TMP/sched" || bad_out="$bad_out fail:$seed"
	"$SIMDIR/simcuda-check" -q "$TMP"/sim.* >/dev/null 2>&1 || bad_check="$bad_check fail:$seed"
done
check "$runs random programs with --stream-alloc print what they print unscheduled${bad_out:+ (differ:$bad_out)}" [ -z "$bad_out" ]
check "no conflicting pair overlapped in any run${bad_check:+ (conflicts:$bad_check)}" [ -z "$bad_check" ]
KMUX_LOG=info KMUX_STREAMS=4 KMUX_STREAM_ALLOC=1 LD_PRELOAD=$PRELOAD \
	"$PROGS/rand-dag" 7 600 >/dev/null 2>"$TMP/log"
check "a random program's frees were stream-ordered" \
	grep -Eq 'stream-alloc: .* [1-9][0-9]* frees stream-ordered' "$TMP/log"
finish
