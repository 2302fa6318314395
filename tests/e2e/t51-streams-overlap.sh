#!/usr/bin/env bash
# Stream scheduling does something: independent default-stream kernels run
# at the same time (two kernels that can only finish together meet, and
# eight 20 ms kernels overlap in simcuda's records), where without kmux
# they run one after another.  Traces show launches on the pool streams.
. "$(dirname "$0")/lib.sh"

pairs() { sed -n 's/^overlapping pairs //p' "$1"; }

"$PROGS/streams-cases" independent >"$TMP/plain" 2>&1
check "unscheduled: independent kernels never overlap" [ "$(pairs "$TMP/plain")" = 0 ]
KMUX_STREAMS=8 LD_PRELOAD=$PRELOAD "$PROGS/streams-cases" independent >"$TMP/s8" 2>&1
check "KMUX_STREAMS=8: they overlap ($(pairs "$TMP/s8") of 28 pairs)" [ "$(pairs "$TMP/s8")" -ge 1 ]

KMUX_STREAMS=2 LD_PRELOAD=$PRELOAD "$PROGS/streams-cases" rendezvous >"$TMP/rv" 2>&1
check "KMUX_STREAMS=2: two kernels that must run at once meet" grep -q '^met' "$TMP/rv"
"$KMUX" run --streams 2 -- "$PROGS/streams-cases" rendezvous >"$TMP/rv2" 2>&1
check "kmux run --streams 2: the same" grep -q '^met' "$TMP/rv2"
KMUX_STREAMS=1 LD_PRELOAD=$PRELOAD "$PROGS/streams-cases" independent >"$TMP/s1" 2>&1
check "one stream: no overlap" [ "$(pairs "$TMP/s1")" = 0 ]

# Tracing and scheduling together: launches on the pool streams, counts of
# issued and pruned waits on the process's exit line, no merge warnings.
KMUX_STREAMS=4 "$KMUX" trace -o "$TMP/t.json" --keep -- "$PROGS/rand-dag" 3 \
	>/dev/null 2>"$TMP/trace.err"
check "kmux trace with KMUX_STREAMS=4 exits 0" [ $? -eq 0 ]
check "no merge warnings" bash -c "! grep -q warning '$TMP/trace.err'"
check "launches spread over 4 stream tracks" json_check "$TMP/t.json" \
	"len({k['tid'] for k in kernels}) == 4"
dir=$(sed -n 's/.*per-process files kept in //p' "$TMP/trace.err")
check "the exit line counts issued and pruned waits" \
	grep -q '"type":"exit".*"streams":4.*"waits_issued":[0-9]*,"waits_pruned":' "$dir"/*.jsonl
rm -rf "$dir"
KMUX_STREAMS=4 "$KMUX" trace --timing -o "$TMP/tt.json" -- "$PROGS/rand-dag" 4 \
	>/dev/null 2>&1
check "--timing with scheduling: every launch timed" json_check "$TMP/tt.json" \
	"len(kernels) > 0 and summary.get('timing_dropped', 0) == 0"
finish
