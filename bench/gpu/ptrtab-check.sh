#!/usr/bin/env bash
# ptrtab-check.sh - does kmux follow the pointer arrays of cuBLAS's batched
# GEMM (src/preload/ptrtab.h)?  Run on the GPU machine from the repo root,
# with build/ carried:  OUT=$OUT bash bench/gpu/ptrtab-check.sh
#
# Builds progs/cublas_batched.cu, then, for each way its arrays reach the
# device (PTRTAB_TABLES, default "upload staged large": its
# CUBLAS_BATCHED_TABLE), runs it REPS times (default 5) each way, in
# rotation:
#   plain                        the reference output
#   verify                       kmux verify --stdout --streams 16
#   verify-off                   the same with KMUX_PTRTAB=0: kmux orders the
#                                GEMM by its parameters alone (the control)
#   run                          kmux run --streams 16 (stdout compared)
#   run-off                      the same with KMUX_PTRTAB=0
# and tallies, per table and way, how many runs gave the plain output / were
# identical under verify.  A race may not show in every run, hence the
# repeats.  Output: $OUT/ptrtab-check.md (table, commands, kmux's reports)
# and $OUT/ptrtab-check.log (every run's output).
set -u
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
LOG=$OUT/ptrtab-check.log
: >"$LOG"
REPS=${PTRTAB_REPS:-5}
N=${PTRTAB_STREAMS:-16}
TABLES=${PTRTAB_TABLES:-upload staged large}
B=$WORK/bin
log "ptrtab-check: GPU $(gpu_line); $(kmux_ident)"
nv "$B/cublas_batched" $NVCCFLAGS "$PROGS/cublas_batched.cu" -lcublas ||
	{ log "build failed"; cat "${BUILD_LOG:-$WORK/build.log}"; exit 1; }
P=$B/cublas_batched
declare -A good total
ways=(plain verify verify-off run run-off)
for t in $TABLES; do
	export CUBLAS_BATCHED_TABLE=$t
	"$P" >"$WORK/ref.$t" 2>&1 || { log "plain run ($t) failed"; cat "$WORK/ref.$t"; exit 1; }
	echo "----- table $t, the reference" >>"$LOG"
	cat "$WORK/ref.$t" >>"$LOG"
	for w in "${ways[@]}"; do good[$t/$w]=0; total[$t/$w]=0; done
	for ((i = 1; i <= REPS; i++)); do
		for w in "${ways[@]}"; do
			out=$WORK/$t.$w.$i
			case $w in
			plain) "$P" >"$out" 2>"$out.err" ;;
			verify) KMUX_LOG=info kmux_cli verify --stdout --streams "$N" -- "$P" >"$out" 2>"$out.err" ;;
			verify-off) KMUX_PTRTAB=0 KMUX_LOG=info kmux_cli verify --stdout --streams "$N" -- "$P" >"$out" 2>"$out.err" ;;
			run) KMUX_LOG=info kmux_cli run --streams "$N" -- "$P" >"$out" 2>"$out.err" ;;
			run-off) KMUX_PTRTAB=0 KMUX_LOG=info kmux_cli run --streams "$N" -- "$P" >"$out" 2>"$out.err" ;;
			esac
			rc=$?
			case $w in
			verify*) ok=$([ "$rc" = 0 ] && grep -q 'kmux verify: identical' "$out" "$out.err" && echo 1 || echo 0) ;;
			*) ok=$([ "$rc" = 0 ] && cmp -s "$out" "$WORK/ref.$t" && echo 1 || echo 0) ;;
			esac
			good[$t/$w]=$((good[$t/$w] + ok))
			total[$t/$w]=$((total[$t/$w] + 1))
			{
				echo "----- table $t, $w, run $i: exit $rc, as plain/identical: $ok"
				cat "$out"
				grep -E 'kmux verify|streams: pid|MISMATCH' "$out.err" | cut -c1-400
			} >>"$LOG"
		done
		log "table $t: round $i/$REPS done"
	done
done
unset CUBLAS_BATCHED_TABLE

MD=$OUT/ptrtab-check.md
{
	echo "# Pointer tables on cuBLAS's batched GEMM"
	echo
	echo "- date: $(date -u '+%Y-%m-%d %H:%M:%S UTC'); GPU, driver: $(gpu_line)"
	echo "- kmux: $(kmux_ident); --streams $N; $REPS runs of each way, rotated"
	echo
	echo "| table | way | runs as plain (run) / identical (verify) |"
	echo "|---|---|---|"
	for t in $TABLES; do
		for w in "${ways[@]}"; do echo "| $t | $w | ${good[$t/$w]} of ${total[$t/$w]} |"; done
	done
	echo
	echo "Commands (\$W: scratch dir; CUBLAS_BATCHED_TABLE=TABLE in the environment):"
	echo
	echo '    $W/bin/cublas_batched'
	echo "    KMUX_LOG=info build/kmux verify --stdout --streams $N -- \$W/bin/cublas_batched"
	echo "    KMUX_PTRTAB=0 KMUX_LOG=info build/kmux verify --stdout --streams $N -- \$W/bin/cublas_batched"
	echo "    KMUX_LOG=info build/kmux run --streams $N -- \$W/bin/cublas_batched"
	echo "    KMUX_PTRTAB=0 KMUX_LOG=info build/kmux run --streams $N -- \$W/bin/cublas_batched"
	echo
	echo "kmux's reports, first run of each kmux way:"
	echo
	for t in $TABLES; do
		for w in verify verify-off run run-off; do
			echo "- $t, $w: $(grep -h -E 'pointer tables|kmux verify:' "$WORK/$t.$w.1" "$WORK/$t.$w.1.err" | tr '\n' ' ' | cut -c1-300)"
		done
	done
} >"$MD"
cat "$MD"
