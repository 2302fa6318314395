#!/usr/bin/env bash
# Checking that spreading pays (src/preload/pace.h, on by default): a
# program that gains from spreading (streams-cases pace: 12 epochs of 16
# independent 2 ms kernels, each closed by a synchronization) runs one
# epoch in line to measure it, then spread to the end; so does one shaped
# like bench/apps/host_sync (reads that wait for one writer in the middle
# of each step: they do not end an epoch; a reset begins each round, so
# its first step is a kind of its own, known at its first operation); forced in line
# (KMUX_DEBUG_PACE) nothing overlaps any more; with KMUX_PACE=0 nothing is
# measured or placed in line.  Placement in line and
# switching at every host wait keep every order: random programs print
# what they print unscheduled, with no conflicting overlap in simcuda's
# records.
. "$(dirname "$0")/lib.sh"

pace_run() {
	local out=$1
	shift
	env "$@" KMUX_LOG=info KMUX_STREAMS=8 LD_PRELOAD="$PRELOAD" \
		"$PROGS/streams-cases" pace >"$out" 2>&1
}
pairs() { sed -n 's/^pace last epoch overlapping pairs \([0-9]*\)$/\1/p' "$1"; }

pace_run "$TMP/on" KMUX_X=1
check "pace, by default: exit 0" [ $? -eq 0 ]
check "  ... 12 epochs measured, one of them in line (the trial)" \
	grep -q 'spreading checked over 12 epochs (1 in line): 1 kinds kept spread, 0 in line, 0 varied, 16 ops placed in line' "$TMP/on"
check "  ... spread again after it: the last epoch's kernels overlap ($(pairs "$TMP/on") pairs)" \
	[ "$(pairs "$TMP/on")" -ge 8 ]

pace_run "$TMP/inline" KMUX_PACE=1 KMUX_DEBUG_PACE=inline
check "KMUX_DEBUG_PACE=inline: exit 0" [ $? -eq 0 ]
check "  ... the last epoch ran on one stream: no two of its kernels overlapped" \
	[ "$(pairs "$TMP/inline")" = 0 ]
check "  ... every epoch in line, and every kernel but the very first placed so" \
	grep -q 'epochs (12 in line): .*, 191 ops placed in line' "$TMP/inline"

pace_run "$TMP/sham" KMUX_DEBUG_PACE=spread
check "KMUX_DEBUG_PACE=spread: measured, never in line, the last epoch spread ($(pairs "$TMP/sham") pairs)" \
	grep -q 'spreading checked over 12 epochs (0 in line): 0 kinds kept spread, 0 in line, 0 varied, 0 ops placed in line' "$TMP/sham"
check "  ... and its kernels overlap" [ "$(pairs "$TMP/sham")" -ge 8 ]

pace_run "$TMP/off" KMUX_PACE=0
check "KMUX_PACE=0: exit 0, nothing measured, nothing in line" \
	grep -q 'spreading checked over 0 epochs (0 in line): 0 kinds kept spread, 0 in line, 0 varied, 0 ops placed in line' "$TMP/off"
check "  ... the last epoch spread ($(pairs "$TMP/off") pairs)" [ "$(pairs "$TMP/off")" -ge 8 ]

warned_and_on() {
	grep -q 'KMUX_PACE=perhaps: only 0 turns checking that spreading pays off; it stays on' "$1" &&
		grep -q 'spreading checked over 12 epochs (1 in line)' "$1"
}
pace_run "$TMP/bad" KMUX_PACE=perhaps
check "KMUX_PACE=perhaps: warned, and the check stays on" warned_and_on "$TMP/bad"

env KMUX_LOG=info KMUX_STREAMS=8 LD_PRELOAD="$PRELOAD" \
	"$PROGS/streams-cases" pace-phases >"$TMP/phases" 2>&1
check "pace-phases (host_sync's shape): exit 0" grep -q '^pace-phases done$' "$TMP/phases"
check "  ... 40 epochs, one per synchronization: the reads in between end none" \
	grep -q 'spreading checked over 40 epochs' "$TMP/phases"
check "  ... three kinds (the round's first step after the last, the second
	after the first, the rest), each tried in line once, then spread" \
	grep -q 'epochs (3 in line): 3 kinds kept spread, 0 in line, 0 varied' "$TMP/phases"

# Orders kept whatever the placement: in line throughout, and switching at
# every host wait (the random programs synchronize and read back often).
# shellcheck source=tests/e2e/rand-lib.sh
. "$(dirname "$0")/rand-lib.sh"
for how in inline alternate; do
	export RAND_ENV="KMUX_DEBUG_PACE=$how"
	rand_set "${RAND_SEEDS:-6}"
done
unset RAND_ENV
rand_report "in line or switching"
finish
