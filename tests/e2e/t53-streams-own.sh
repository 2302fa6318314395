#!/usr/bin/env bash
# Programs on their own streams are left as they are: a program using only
# non-blocking streams of its own sees no other stream used; a blocking
# stream ends scheduling in its context (default-stream work then runs on
# the legacy stream); the existing driver programs, which mix their own
# streams with the default stream, behave exactly as without kmux.
. "$(dirname "$0")/lib.sh"

for m in own blocking; do
	rm -f "$TMP"/sim.*
	SIMCUDA_LOG=$TMP/sim.%p KMUX_STREAMS=4 LD_PRELOAD=$PRELOAD \
		"$PROGS/streams-cases" $m >"$TMP/$m" 2>&1
	rc=$?
	check "$m: $(head -c 70 "$TMP/$m")" [ $rc -eq 0 ]
	check "$m: no conflicting overlap" "$SIMDIR/simcuda-check" -q "$TMP"/sim.*
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
