#!/usr/bin/env bash
# The host-cost benchmark's program (bench/launch-cost.sh) keeps working:
# SIMCUDA_DISCARD=1 drops launches without running them, every launch is
# scheduled under KMUX_STREAMS, and a bad pattern is a usage error.
. "$(dirname "$0")/lib.sh"

export SIMCUDA_DISCARD=1
"$PROGS/launch-cost" fork 2000 1 >"$TMP/plain" 2>&1
check "plain: ns per launch reported" grep -q '^fork ns/launch [0-9]' "$TMP/plain"
KMUX_LOG=info KMUX_STREAMS=4 KMUX_PASS_THROUGH=0 LD_PRELOAD=$PRELOAD "$PROGS/launch-cost" torch 2000 2 \
	>"$TMP/s4" 2>&1
check "KMUX_STREAMS=4: runs" grep -q '^torch ns/launch [0-9]' "$TMP/s4"
check "  ... and, with KMUX_PASS_THROUGH=0, schedules all 4000 launches" grep -q 'context(s), 0 off; 4000 ops' "$TMP/s4"
# Discarded launches leave the "GPU" idle: as shipped, kmux soon passes
# them through as submitted (docs/design-streams.md, "Passing through"),
# and schedules again whenever simcuda's worker falls 16 operations behind
# a host that launches every 70 ns.
KMUX_LOG=info KMUX_STREAMS=4 LD_PRELOAD=$PRELOAD "$PROGS/launch-cost" torch 2000 2 \
	>"$TMP/pt" 2>&1
ops=$(sed -n 's/.* 0 off; \([0-9]*\) ops.*/\1/p' "$TMP/pt")
pt=$(sed -n 's/.* \([0-9]*\) passed through in [1-9][0-9]* stretches.*/\1/p' "$TMP/pt")
# (each return to scheduling adds one decision of kmux's own: the barrier)
check "  ... as shipped: scheduled ($ops) and passed through ($pt) cover the 4000" \
	bash -c "[ \$(( ${ops:-0} + ${pt:-0} )) -ge 4000 ] && [ ${pt:-0} -gt 0 ]"
# cudart's way: the launch fetched through cuGetProcAddress is still kmux's
# (every launch scheduled), cuCtxGetDevice_v2 is the driver's own.
KMUX_LOG=info KMUX_STREAMS=4 KMUX_PASS_THROUGH=0 LD_PRELOAD=$PRELOAD "$PROGS/launch-cost" cudart 2000 1 \
	>"$TMP/cudart" 2>&1
check "cudart pattern: runs, its 2000 launches all scheduled" \
	eval 'grep -q "^cudart ns/launch [0-9]" "$TMP/cudart" && grep -q "context(s), 0 off; 2000 ops" "$TMP/cudart"'
"$PROGS/launch-cost" nosuch >/dev/null 2>&1
check "an unknown pattern is a usage error (exit 2)" [ $? -eq 2 ]
# The memory manager's setting (bench/launch-cost.sh's "lazy"): every one
# of the 321 small allocations managed, the 320 touched ones backed.
KMUX_LOG=info KMUX_MEMORY=lazy KMUX_LAZY_MIN=1 LD_PRELOAD=$PRELOAD \
	"$PROGS/launch-cost" torch 2000 1 >"$TMP/lazy" 2>&1
check "KMUX_MEMORY=lazy: runs" grep -q '^torch ns/launch [0-9]' "$TMP/lazy"
check "  ... with all 321 objects managed, 320 backed" \
	grep -q 'lazy; 321 objects now, .* 320 backed' "$TMP/lazy"
KMUX_LAUNCH_COST_SETTINGS="8 lazzy" bash "$ROOT/bench/launch-cost.sh" >"$TMP/bad" 2>&1
rc=$?
check "bench/launch-cost.sh: an unknown setting is exit 2 ($rc), named" \
	eval '[ "$rc" = 2 ] && grep -q "unknown setting .lazzy." "$TMP/bad"'
finish
