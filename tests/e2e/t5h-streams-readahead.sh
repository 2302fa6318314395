#!/usr/bin/env bash
# Reading ahead (docs/design-streams.md, "Reading ahead"): once the host
# has read a small buffer back after a write, kmux copies it out right
# behind the next write and serves the next synchronous read from that
# copy.  streams-cases readback: every read sees the round's value, reads
# are served, and no read-ahead copy overlaps a write of the buffer in
# simcuda's records; also when a second write is a barrier.  Nothing is
# served with KMUX_READAHEAD=0 or once the program has a non-blocking
# stream of its own.  The control: copies queued with no dependency
# (KMUX_DEBUG_READAHEAD=unordered) must be caught.  Random programs
# (t50) run with it on by default.
. "$(dirname "$0")/lib.sh"

served() { sed -n 's/.*reads served \([0-9]*\),.*/\1/p' "$1"; }
run_case() { # MODE OUT [env...]
	local mode=$1 out=$2
	shift 2
	rm -f "$TMP"/sim.*
	env SIMCUDA_LOG="$TMP/sim.%p" KMUX_STREAMS=4 KMUX_LOG=info "$@" \
		LD_PRELOAD="$PRELOAD" "$PROGS/streams-cases" "$mode" >"$out" 2>&1
}

"$PROGS/streams-cases" readback >"$TMP/plain" 2>&1
check "unscheduled: every read sees its round's value" grep -qx 'readback ok' "$TMP/plain"

run_case readback "$TMP/on"
check "KMUX_STREAMS=4: every read sees its round's value" grep -qx 'readback ok' "$TMP/on"
check "  ... and reads were served from read-aheads ($(served "$TMP/on") of 48)" \
	[ "$(served "$TMP/on")" -ge 16 ]
check "  ... with no read-ahead overlapping a write of its buffer" \
	"$SIMDIR/simcuda-check" -q "$TMP"/sim.*

run_case readback "$TMP/barrier" KMUX_BARRIER_KERNELS='^inc_u32$'
check "with a barrier writing the buffer every sixth round: every value right" \
	grep -qx 'readback ok' "$TMP/barrier"
check "  ... reads still served ($(served "$TMP/barrier"))" [ "$(served "$TMP/barrier")" -ge 16 ]
check "  ... no overlap" "$SIMDIR/simcuda-check" -q "$TMP"/sim.*

run_case readback "$TMP/off" KMUX_READAHEAD=0
check "KMUX_READAHEAD=0: every value right, nothing served" \
	bash -c "grep -qx 'readback ok' '$TMP/off' && [ \"\$(sed -n 's/.*reads served \([0-9]*\),.*/\1/p' '$TMP/off')\" = 0 ]"

run_case readback "$TMP/bad" KMUX_READAHEAD=yes
check "KMUX_READAHEAD=yes: warned about, reading ahead stays on" \
	bash -c "grep -q 'KMUX_READAHEAD=yes: not 0 or 1' '$TMP/bad' && grep -qx 'readback ok' '$TMP/bad'"

run_case readback-own "$TMP/own"
check "a non-blocking stream of the program's own: every value right, nothing served" \
	bash -c "grep -qx 'readback ok' '$TMP/own' && [ \"\$(sed -n 's/.*reads served \([0-9]*\),.*/\1/p' '$TMP/own')\" = 0 ]"

# The control: the same checks must fail when the copies are misordered.
run_case readback "$TMP/bug" KMUX_DEBUG_READAHEAD=unordered
check "control: unordered read-aheads are caught (a wrong value or an overlap)" \
	bash -c "! grep -qx 'readback ok' '$TMP/bug' || ! '$SIMDIR/simcuda-check' -q '$TMP'/sim.* >/dev/null 2>&1"

"$KMUX" verify --streams 4 -- "$PROGS/streams-cases" readback >"$TMP/verify" 2>&1
check "kmux verify: identical" grep -q 'identical' "$TMP/verify"
finish
