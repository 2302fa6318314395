#!/usr/bin/env bash
# Learned kernel durations (src/preload/kdur.h, on by default): streams-cases
# weights runs, per epoch, a 20 ms kernel of its own kind and six 2 ms ones
# on two streams.  Weighed by waves, the long kernel counts as a short one
# and every other short kernel queues behind it; once both kinds are timed
# (their second to fourth launches), all six run beside it.
# KMUX_DURATIONS=0 weighs by waves again; another value warns and stays on.
# The placement check is off (KMUX_PACE=0): its in-line trial would put
# an epoch on one stream.
. "$(dirname "$0")/lib.sh"

weights_run() {
	local out=$1
	shift
	env "$@" KMUX_PACE=0 KMUX_LOG=info KMUX_STREAMS=2 LD_PRELOAD="$PRELOAD" \
		"$PROGS/streams-cases" weights >"$out" 2>&1
}
beside() { sed -n 's/^weights last epoch short kernels beside the long one \([0-9]*\)$/\1/p' "$1"; }

weights_run "$TMP/on" KMUX_X=1
check "weights, by default: exit 0, both kinds timed three times" \
	grep -q 'durations learned for 2 kernel kinds (6 launches timed)' "$TMP/on"
check "  ... all six short kernels ran beside the long one ($(beside "$TMP/on"))" \
	[ "$(beside "$TMP/on")" = 6 ]

weights_run "$TMP/off" KMUX_DURATIONS=0
check "KMUX_DURATIONS=0: nothing timed" \
	grep -q 'durations learned for 0 kernel kinds (0 launches timed)' "$TMP/off"
check "  ... weighed by waves, half the short kernels queued behind the long one ($(beside "$TMP/off") beside it)" \
	[ "$(beside "$TMP/off")" = 3 ]

warned_and_on() {
	grep -q 'KMUX_DURATIONS=maybe: only 0 turns learning kernel durations off; it stays on' "$1" &&
		[ "$(beside "$1")" = 6 ]
}
weights_run "$TMP/bad" KMUX_DURATIONS=maybe
check "KMUX_DURATIONS=maybe: warned, and learning stays on" warned_and_on "$TMP/bad"

# Timing pairs whose records fail are dropped, never waited for: under
# the failure knob the program still runs to the end with the same output.
weights_run "$TMP/fail" KMUX_DEBUG_STREAMS_FAIL=3
check "under failing driver calls (every third): the program ran to its end" \
	[ -n "$(beside "$TMP/fail")" ]
finish
