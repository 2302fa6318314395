#!/usr/bin/env bash
# Learned kernel durations (src/preload/kdur.h, KMUX_DURATIONS=1, off by
# default) and levelling at full synchronizations (KMUX_LEVEL=1, sched.h
# SCHED_LEVEL, off by default).  streams-cases weights runs, per epoch, a
# 20 ms kernel of its own kind and six 2 ms ones on two streams.  Weighed
# by waves (the default), the long kernel counts as a short one and some
# of the short kernels queue behind it (every other one, fewer when a
# probe of the GPU saw short ones finish first); with KMUX_DURATIONS=1,
# once both kinds are timed (their second to fourth launches), all six
# run beside it.
# A value other than 0 or 1 warns and leaves each off.  Random programs
# with both on print what they print unscheduled, with no conflicting
# overlap.  The placement check is off (KMUX_PACE=0): its in-line trial
# would put an epoch on one stream.
. "$(dirname "$0")/lib.sh"

weights_run() {
	local out=$1
	shift
	env "$@" KMUX_PACE=0 KMUX_LOG=info KMUX_STREAMS=2 LD_PRELOAD="$PRELOAD" \
		"$PROGS/streams-cases" weights >"$out" 2>&1
}
beside() { sed -n 's/^weights last epoch short kernels beside the long one \([0-9]*\)$/\1/p' "$1"; }

weights_run "$TMP/off" KMUX_X=1
check "weights, by default: nothing timed" \
	grep -q 'durations learned for 0 kernel kinds (0 launches timed)' "$TMP/off"
check "  ... weighed by waves, short kernels queued behind the long one (only $(beside "$TMP/off") of 6 beside it)" \
	[ "$(beside "$TMP/off")" -lt 6 ]

# Simulated kernels run in real time: on a loaded host (CI runs tests two
# at a time) a timing can come late.  Up to three tries; with learning
# broken every one fails.
for try in 1 2 3; do
	weights_run "$TMP/on" KMUX_DURATIONS=1
	grep -q 'durations learned for 2 kernel kinds (6 launches timed)' "$TMP/on" &&
		[ "$(beside "$TMP/on")" = 6 ] && break
done
check "KMUX_DURATIONS=1: both kinds timed three times (try $try)" \
	grep -q 'durations learned for 2 kernel kinds (6 launches timed)' "$TMP/on"
check "  ... all six short kernels ran beside the long one ($(beside "$TMP/on"))" \
	[ "$(beside "$TMP/on")" = 6 ]

warned_and_off() {
	grep -q "$2" "$1" && [ "$(beside "$1")" -lt 6 ] &&
		grep -q 'durations learned for 0 kernel kinds' "$1"
}
weights_run "$TMP/bad" KMUX_DURATIONS=yes
check "KMUX_DURATIONS=yes: warned, and learning stays off" warned_and_off "$TMP/bad" \
	'KMUX_DURATIONS=yes: only 1 turns learning kernel durations on; it stays off'
weights_run "$TMP/badl" KMUX_LEVEL=on
check "KMUX_LEVEL=on: warned, and it stays off" warned_and_off "$TMP/badl" \
	'KMUX_LEVEL=on: only 1 turns levelling the streams at full synchronizations on; it stays off'

# Timing pairs whose records fail are dropped, never waited for: under
# the failure knob the program still runs to the end.
weights_run "$TMP/fail" KMUX_DURATIONS=1 KMUX_DEBUG_STREAMS_FAIL=3
check "KMUX_DURATIONS=1 under failing driver calls (every third): the program ran to its end" \
	[ -n "$(beside "$TMP/fail")" ]

# Weights and levelling move work between streams, never an order.
# shellcheck source=tests/e2e/rand-lib.sh
. "$(dirname "$0")/rand-lib.sh"
export RAND_ENV="KMUX_DURATIONS=1 KMUX_LEVEL=1"
rand_set "${RAND_SEEDS:-4}"
unset RAND_ENV
rand_report "with KMUX_DURATIONS=1 KMUX_LEVEL=1"
finish
