#!/usr/bin/env bash
# The host-cost benchmark's program (bench/launch-cost.sh) keeps working:
# SIMCUDA_DISCARD=1 drops launches without running them, every launch is
# scheduled under KMUX_STREAMS, and a bad pattern is a usage error.
. "$(dirname "$0")/lib.sh"

export SIMCUDA_DISCARD=1
"$PROGS/launch-cost" fork 2000 1 >"$TMP/plain" 2>&1
check "plain: ns per launch reported" grep -q '^fork ns/launch [0-9]' "$TMP/plain"
KMUX_LOG=info KMUX_STREAMS=4 LD_PRELOAD=$PRELOAD "$PROGS/launch-cost" torch 2000 2 \
	>"$TMP/s4" 2>&1
check "KMUX_STREAMS=4: runs" grep -q '^torch ns/launch [0-9]' "$TMP/s4"
check "  ... and schedules all 4000 launches" grep -q 'context(s), 0 off; 4000 ops' "$TMP/s4"
"$PROGS/launch-cost" nosuch >/dev/null 2>&1
check "an unknown pattern is a usage error (exit 2)" [ $? -eq 2 ]
finish
