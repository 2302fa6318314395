#!/usr/bin/env bash
# Programs on their own streams are left as they are: a program using only
# non-blocking streams of its own sees no other stream used; a blocking
# stream is bridged to the pool (its work follows earlier default-stream
# work and later default-stream work follows it) while the pool keeps
# scheduling; more than 16 blocking streams in one context switch that
# context off (its default-stream work then runs on the legacy stream), and
# the exit line counts it; the existing driver programs, which mix their
# own streams with the default stream, behave exactly as without kmux.
. "$(dirname "$0")/lib.sh"

for m in own blocking; do
	rm -f "$TMP"/sim.*
	SIMCUDA_LOG=$TMP/sim.%p KMUX_STREAMS=4 LD_PRELOAD=$PRELOAD \
		"$PROGS/streams-cases" $m >"$TMP/$m" 2>&1
	rc=$?
	check "$m: $(head -c 70 "$TMP/$m")" [ $rc -eq 0 ]
	check "$m: no conflicting overlap" "$SIMDIR/simcuda-check" -q "$TMP"/sim.*
done

# 16 blocking streams are bridged; the 17th (and the 40th) switch the
# context off, after what was scheduled completed.  The order holds either
# way (the program checks the value its steps leave), nothing conflicting
# overlaps, and the exit line says how many contexts went off, though the
# context is destroyed before exit.
for n in 16 17 40; do
	rm -f "$TMP"/sim.*
	SIMCUDA_LOG=$TMP/sim.%p KMUX_LOG=info KMUX_STREAMS=4 LD_PRELOAD=$PRELOAD \
		"$PROGS/streams-cases" blocking$n >"$TMP/b$n" 2>&1
	rc=$?
	check "blocking$n: $(grep -m1 '^blocking' "$TMP/b$n")" \
		bash -c "[ $rc -eq 0 ] && grep -q '^blocking $n: acc [0-9]* as expected' '$TMP/b$n'"
	check "blocking$n: no conflicting overlap" "$SIMDIR/simcuda-check" -q "$TMP"/sim.*
	off=$([ "$n" -gt 16 ] && echo 1 || echo 0)
	check "blocking$n: the exit line counts $off context(s) off" \
		grep -q "in 1 context(s), $off off;" "$TMP/b$n"
done

for p in drv-basic drv-dlopen drv-threads; do
	"$PROGS/$p" >"$TMP/$p.plain" 2>&1
	for n in 1 4; do
		rm -f "$TMP"/sim.*
		SIMCUDA_LOG=$TMP/sim.%p KMUX_STREAMS=$n LD_PRELOAD=$PRELOAD \
			"$PROGS/$p" >"$TMP/$p.$n" 2>&1
		check "$p, KMUX_STREAMS=$n: same output and status" cmp -s "$TMP/$p.plain" "$TMP/$p.$n"
		check "$p, KMUX_STREAMS=$n: no conflicting overlap" "$SIMDIR/simcuda-check" -q "$TMP"/sim.*
	done
done
finish
