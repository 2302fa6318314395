#!/usr/bin/env bash
# pace-check.sh - checking that spreading pays (src/preload/pace.h,
# KMUX_PACE=1), on the H200: does it take back what spreading costs
# googlenet at batch 256, and does it keep the suite's CUDA apps spread at
# their speed?  Run on the GPU machine from the repo root, with build/
# carried:  OUT=$OUT bash bench/gpu/pace-check.sh
#
#   $OUT/g/      torch-alloc.sh: googlenet batch 256, fresh processes of
#                30 ROIs: plain, kmux run --streams 16 with KMUX_PACE=0
#                and with KMUX_PACE=1 (the default since run 17)
#   $OUT/s.tgz   bench/streams.sh over the 9 CUDA apps, PACE_REPS (3)
#                rounds: plain, kmux16 (KMUX_PACE=0), ext16 (KMUX_PACE=1,
#                exported for the script and overridden for kmux16),
#                expert, verify; streams.md has the A/B table
#   $OUT/pace-suite.txt  what the check decided in each suite run
set -u
cd "$(dirname "${BASH_SOURCE[0]}")/../.." || exit 1
OUT=${OUT:-./out}
mkdir -p "$OUT/g" "$OUT/s"
OUT=$OUT/g TA_BATCHES=256 TA_ALLOCS=native TA_MODES="plain run,nopace run,pace" TA_RUN_REPS=30 \
	TA_VERIFY=0 bash bench/gpu/torch-alloc.sh
KMUX_PACE=1 OUT=$OUT/s KMUX_STREAMS_REPS=${PACE_REPS:-3} KMUX_STREAMS_NS=16 KMUX_STREAMS_EXT_NS=16 \
	KMUX_STREAMS_AB_OFF="KMUX_PACE=0" KMUX_STREAMS_SA_NS='' KMUX_STREAMS_PY_APPS='' \
	KMUX_STREAMS_BUDGET_S=${PACE_SUITE_BUDGET_S:-330} bash bench/streams.sh >"$OUT/s/console.txt" 2>&1
echo "suite: exit $?"
grep -o 'spreading checked[^;]*;[^;]*' "$OUT/s/streams.log" | sort | uniq -c >"$OUT/pace-suite.txt"
cat "$OUT/pace-suite.txt"
tar -czf "$OUT/s.tgz" -C "$OUT" s && rm -rf "$OUT/s"
