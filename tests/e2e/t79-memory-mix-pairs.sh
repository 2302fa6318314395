#!/usr/bin/env bash
# bench/memory-mix-pairs.sh (issue 5 (b), repeated like for like): on the
# dry mix (simcuda stand-ins) it runs memory-mix.sh K times with the two
# modes in alternating order, packs each run, and reports every run's
# ratio and the median; bad settings are usage errors before any run.
. "$(dirname "$0")/lib.sh"
# It drives build/'s binaries (as memory-mix.sh does): the plain pass only.
if [ "$BUILD" != "$ROOT/build" ]; then
	finish
	exit 0
fi
P=$ROOT/bench/memory-mix-pairs.sh
OUT=$TMP/p KMUX_MIX_DRY=1 KMUX_PAIRS=2 KMUX_PAIRS_RUN_S=90 KMUX_PAIRS_BUDGET_S=200 bash "$P" >"$TMP/out" 2>&1
rc=$?
check "two dry runs: exit 0 ($rc)" eval '[ "$rc" = 0 ] || { tail -n 20 "$TMP/out"; false; }'
check "  ... run 1 ran evict-mps first, run 2 quota-mps first" \
	eval 'grep -q "^| 1 | evict-mps quota-mps | [0-9.]* | [0-9.]* | 2 / 1 | 0 | [0-9.]* |$" "$TMP/p/pairs.md" &&
		grep -q "^| 2 | quota-mps evict-mps | [0-9.]* | [0-9.]* | 2 / 1 | 0 | [0-9.]* |$" "$TMP/p/pairs.md"'
r1=$(awk -F'|' '$2 ~ /^ 1 / {gsub(/ /, "", $8); print $8}' "$TMP/p/pairs.md")
r2=$(awk -F'|' '$2 ~ /^ 2 / {gsub(/ /, "", $8); print $8}' "$TMP/p/pairs.md")
med=$(sed -n 's/^\*\*Median over 2 runs: evict-mps has \([0-9.]*\)x the throughput of quota-mps\*\*.*/\1/p' "$TMP/p/pairs.md")
# The runs' ratios are printed rounded: their mean agrees to 0.01.
check "  ... the median is the two runs' mean ($r1, $r2: $med)" \
	awk -v a="$r1" -v b="$r2" -v m="$med" 'BEGIN {d = (a + b) / 2 - m; exit !(m != "" && d < 0.011 && d > -0.011)}'
check "  ... each run packed with its report, rows and daemon logs, nothing else left" \
	eval 'tar tzf "$TMP/p/run-1.tgz" | grep -q "run-1/mix.md" &&
		tar tzf "$TMP/p/run-2.tgz" | grep -q "run-2/kmuxd-staged-evict-mps.log" &&
		[ "$(ls "$TMP/p" | tr "\n" " ")" = "pairs.log pairs.md run-1.tgz run-2.tgz " ]'
# Less budget than one run needs: nothing starts, and that is a failure.
# The seconds left are the budget less the script's own start-up (a loaded
# machine crosses a second boundary), so they are matched as a number <= 50.
OUT=$TMP/t KMUX_MIX_DRY=1 KMUX_PAIRS=2 KMUX_PAIRS_RUN_S=90 KMUX_PAIRS_BUDGET_S=50 bash "$P" >"$TMP/tout" 2>&1
rc=$?
check "a 50 s budget for 90 s runs: exit 1 ($rc), saying why, no run" \
	eval '[ "$rc" = 1 ] && grep -Eq "run 1: out of time \\((50|[1-4]?[0-9])s left, a run needs 90s\\)" "$TMP/t/pairs.log" &&
		grep -q "^No run measured both modes" "$TMP/t/pairs.md" && ! ls "$TMP/t"/run-* >/dev/null 2>&1'
for bad in "KMUX_PAIRS_MODES=evict-mps" "KMUX_PAIRS_MODES=evict-mps evict-mps" \
	"KMUX_PAIRS_MODES=evict-mps fast" "KMUX_PAIRS=0" "KMUX_PAIRS=2x" "KMUX_PAIRS_SET=nosuch" \
	"KMUX_PAIRS_RUN_S=0"; do
	rm -rf "$TMP/b"
	env OUT="$TMP/b" KMUX_MIX_DRY=1 "$bad" bash "$P" >"$TMP/bad" 2>&1
	rc=$?
	check "$bad: exit 2 ($rc), said, nothing run" \
		eval '[ "$rc" = 2 ] && grep -q "^memory-mix-pairs: " "$TMP/bad" && ! ls "$TMP/b"/run-* >/dev/null 2>&1'
done
finish
