#!/usr/bin/env bash
# Every internal failure of the scheduler's driver side falls back to a
# host synchronization, a barrier or pass-through, never to a wrong order:
# with KMUX_DEBUG_STREAMS_FAIL=N every Nth event creation, record or wait
# fails (N=1: the pool cannot be set up at all) and the scheduler keeps only
# 4 allocation states (operations degrade to barriers, renames of
# stream-ordered allocations fail).  Outputs stay those of the unscheduled
# run, simcuda sees no conflicting overlap, barriers and bridges still hold.
. "$(dirname "$0")/lib.sh"

bad=""
for f in 1 2 3 5; do
	for seed in 1 2 3; do
		"$PROGS/rand-dag" "$seed" 300 >"$TMP/plain" 2>&1
		rm -f "$TMP"/sim.*
		KMUX_LOG=info KMUX_DEBUG_STREAMS_FAIL=$f SIMCUDA_LOG=$TMP/sim.%p \
			KMUX_STREAMS=4 LD_PRELOAD=$PRELOAD "$PROGS/rand-dag" "$seed" 300 \
			>"$TMP/sched" 2>"$TMP/log.$f"
		cmp -s "$TMP/plain" "$TMP/sched" || bad="$bad out:$f/$seed"
		"$SIMDIR/simcuda-check" -q "$TMP"/sim.* >/dev/null 2>&1 || bad="$bad check:$f/$seed"
	done
done
check "injected failures: same output, no conflicting overlap${bad:+ ($bad)}" [ -z "$bad" ]
check "N=1: the pool could not be set up, the program ran unscheduled" \
	grep -q 'in 0 context(s), 1 off' "$TMP/log.1"
check "N=2: failures were replaced by host waits" \
	grep -Eq 'failures [1-9]' "$TMP/log.2"
check "operations were degraded to barriers" \
	grep -Eq '\([1-9][0-9]* degraded\)' "$TMP/log.3"
for m in capture graph hostfunc; do
	KMUX_DEBUG_STREAMS_FAIL=2 KMUX_STREAMS=4 LD_PRELOAD=$PRELOAD \
		"$PROGS/streams-cases" $m >"$TMP/$m" 2>&1
	rc=$?
	check "$m under injected failures: $(head -c 50 "$TMP/$m")" [ $rc -eq 0 ]
done
finish
