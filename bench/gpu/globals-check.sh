#!/usr/bin/env bash
# globals-check.sh - does kmux order kernels that share a `__device__`
# variable (KMUX_PTX_GLOBALS; docs/design-streams.md, "Module-scope
# variables")?  Run on the GPU machine from the repo root, with build/
# carried:  OUT=$OUT bash bench/gpu/globals-check.sh
#
# Builds progs/device_globals.cu (reductions that find their last block
# with one `__device__` counter) and runs it REPS times (default 5) each
# way, in rotation:
#   plain        the reference output
#   run          kmux run --streams 16 (stdout compared with plain's)
#   run-off      the same with KMUX_PTX_GLOBALS=0 (the control: kmux orders
#                the reductions by their parameters alone)
#   verify       kmux verify --stdout --streams 16
#   verify-off   the same with KMUX_PTX_GLOBALS=0
# and tallies how many runs gave the plain output / were identical.  A race
# may not show in every run, hence the repeats.  Output:
# $OUT/globals-check.md (table, commands, kmux's reports) and
# $OUT/globals-check.log (every run's output).
set -u
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
LOG=$OUT/globals-check.log
: >"$LOG"
REPS=${GLOBALS_REPS:-5}
N=${GLOBALS_STREAMS:-16}
B=$WORK/bin
P=$B/device_globals
log "globals-check: GPU $(gpu_line); $(kmux_ident)"
nv "$P" $NVCCFLAGS "$PROGS/device_globals.cu" ||
	{ log "build failed"; cat "${BUILD_LOG:-$WORK/build.log}"; exit 1; }
"$P" >"$WORK/ref" 2>&1 || { log "plain run failed"; cat "$WORK/ref"; exit 1; }
{ echo "----- the reference"; cat "$WORK/ref"; } >>"$LOG"
ways=(plain run run-off verify verify-off)
declare -A good
for w in "${ways[@]}"; do good[$w]=0; done
for ((i = 1; i <= REPS; i++)); do
	for w in "${ways[@]}"; do
		out=$WORK/$w.$i
		case $w in
		plain) "$P" >"$out" 2>"$out.err" ;;
		run) KMUX_LOG=info kmux_cli run --streams "$N" -- "$P" >"$out" 2>"$out.err" ;;
		run-off) KMUX_PTX_GLOBALS=0 KMUX_LOG=info kmux_cli run --streams "$N" -- "$P" >"$out" 2>"$out.err" ;;
		verify) KMUX_LOG=info kmux_cli verify --stdout --streams "$N" -- "$P" >"$out" 2>"$out.err" ;;
		verify-off) KMUX_PTX_GLOBALS=0 KMUX_LOG=info kmux_cli verify --stdout --streams "$N" -- "$P" >"$out" 2>"$out.err" ;;
		esac
		rc=$?
		case $w in
		verify*) ok=$([ "$rc" = 0 ] && grep -q 'kmux verify: identical' "$out" "$out.err" && echo 1 || echo 0) ;;
		*) ok=$([ "$rc" = 0 ] && cmp -s "$out" "$WORK/ref" && echo 1 || echo 0) ;;
		esac
		good[$w]=$((good[$w] + ok))
		{
			echo "----- $w, run $i: exit $rc, as plain/identical: $ok"
			cat "$out"
			grep -E 'kmux verify|streams: pid|ptx-readonly: pid|round .*wanted' "$out.err" | cut -c1-600
		} >>"$LOG"
	done
	log "round $i/$REPS done"
done

MD=$OUT/globals-check.md
{
	echo "# Kernels sharing a \`__device__\` counter"
	echo
	echo "- date: $(date -u '+%Y-%m-%d %H:%M:%S UTC'); GPU, driver: $(gpu_line)"
	echo "- kmux: $(kmux_ident); --streams $N; $REPS runs of each way, rotated"
	echo
	echo "| way | runs as plain (run) / identical (verify) |"
	echo "|---|---|"
	for w in "${ways[@]}"; do echo "| $w | ${good[$w]} of $REPS |"; done
	echo
	echo "Commands (\$W: scratch dir):"
	echo
	echo "    $NVCC $NVCCFLAGS bench/gpu/progs/device_globals.cu -o \$W/bin/device_globals"
	echo '    $W/bin/device_globals'
	echo "    KMUX_LOG=info build/kmux run --streams $N -- \$W/bin/device_globals"
	echo "    KMUX_PTX_GLOBALS=0 KMUX_LOG=info build/kmux run --streams $N -- \$W/bin/device_globals"
	echo "    KMUX_LOG=info build/kmux verify --stdout --streams $N -- \$W/bin/device_globals"
	echo "    KMUX_PTX_GLOBALS=0 KMUX_LOG=info build/kmux verify --stdout --streams $N -- \$W/bin/device_globals"
	echo
	echo "kmux's reports, first run of each kmux way:"
	echo
	for w in run run-off verify verify-off; do
		echo "- $w: $(grep -h -E "ordered by their module|kmux verify:|wanted" "$WORK/$w.1" "$WORK/$w.1.err" | sed 's/.*errors; //' | tr '\n' ' ' | cut -c1-400)"
	done
} >"$MD"
cat "$MD"
