#!/usr/bin/env bash
# torch-lockstep.sh - plain against kmux on the suite's PyTorch programs
# (issue 3: "no app slower than plain by more than 2%"), in lockstep pairs.
#
# Each pair is two fresh processes of bench/apps/py/torch_suite.py started
# side by side, one plain (no preload at all) and one in MODE, that take
# strict turns on the GPU, one timed ROI each (bench/apps/py/turns.py): ROI
# i of each sees the same moment of this machine, so what the machine does
# to both at that moment cancels in their ratio.  Which side goes first
# alternates.  What each process meets alone (run 25: the VM CPU it runs
# on) does not cancel; TL_CPUS is for that.
#   plain2   another plain process (A/A: the method's own bias and spread)
#   bare     LD_PRELOAD=build/libkmux.so (interposition only)
#   st8      the same with KMUX_STREAMS=8 (the scheduler)
#   run8     kmux run --streams 8 (as the suite runs it)
#   st8-NAME st8 with the library TL_LIB_NAME names (another build, A/B)
# and st8-noptx, st8-nopass (lib.sh's torch_mode_cmd has them all).
# Per app and mode: the median over all ROI pairs of MODE/plain, its
# quartiles, the spread of the per-pair medians and how well the two sides'
# times move together (lockstep_report.py).
#
# Usage (GPU machine, repo root, build/ carried):
#   OUT=$OUT [TL_PAIRS=6] [TL_ROIS=20] [TL_MODES="plain2 bare st8 run8"] \
#       bash bench/gpu/torch-lockstep.sh
# TL_CPUS (a taskset list, e.g. 4-5): both sides of every pair run on these
# CPUs.  They never run at the same time, so sharing costs nothing, and
# the VM's CPUs differ in speed from moment to moment: two sides on two
# different CPUs see different machines even in lockstep (run 25).
# TL_PROG (a command line, words split on blanks) replaces the program: the
# test without a GPU (tests/e2e/t5n-bench-lockstep.sh) runs a stand-in.
# Output: $OUT/torch-lockstep.{md,log}; exit 1 when a pair failed.
set -u
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
PAIRS=${TL_PAIRS:-6}
ROIS=${TL_ROIS:-20}
read -r -a MODES <<<"${TL_MODES:-plain2 bare st8 run8}"
LOG=$OUT/torch-lockstep.log
: >"$LOG"
if [ -n "${TL_PROG:-}" ]; then
	read -r -a PROG <<<"$TL_PROG"
else
	# shellcheck disable=SC2054  # the comma is torch_suite.py's list
	PROG=("$PY" "$ROOT/bench/apps/py/torch_suite.py" plain --apps googlenet,ensemble
	      --reps "$ROIS" --warmup 3)
fi
PIN=()
if [ -n "${TL_CPUS:-}" ]; then
	PIN=(taskset -c "$TL_CPUS")
	"${PIN[@]}" true || { echo "torch-lockstep: TL_CPUS=$TL_CPUS: taskset cannot run on those CPUs" >&2; exit 2; }
fi
for m in "${MODES[@]}"; do
	if ! torch_mode_cmd "$m" TL_LIB_ true; then
		case $m in
		st8-?*) echo "torch-lockstep: $m: TL_LIB_${m#st8-} names no readable library" >&2 ;;
		*) echo "torch-lockstep: unknown mode '$m' (have plain2 bare st8 st8-noptx st8-nopass run8 st8-NAME)" >&2 ;;
		esac
		exit 2
	fi
	if lib=$(torch_mode_lib "$m" TL_LIB_); then
		log "torch-lockstep: $m: $(sha256sum "$lib" | cut -c1-12) $lib"
	fi
done
log "torch-lockstep: GPU $(gpu_line); $(kmux_ident); $PAIRS pairs x ${MODES[*]}; command: ${PIN[*]}${PIN:+ }${PROG[*]}"

failed=0
n=${#MODES[@]}
for ((r = 0; r < PAIRS; r++)); do
	for ((k = 0; k < n; k++)); do
		m=${MODES[$(((k + r) % n))]}
		have_time 40 || break 2
		first=plain
		(((r + k) % 2)) && first=$m
		fp=$WORK/turn.plain fm=$WORK/turn.mode
		rm -f "$fp" "$fm"
		mkfifo "$fp" "$fm"
		# The shell holds both FIFOs open for the pair's life: the first
		# byte stays in its FIFO until that side opens it.
		exec 7<>"$fp" 8<>"$fm"
		if [ "$first" = plain ]; then printf t >&7; else printf t >&8; fi
		torch_mode_cmd plain TL_LIB_ "${PROG[@]}"
		KMUX_BENCH_TURN=$fp:$fm timeout 300 "${PIN[@]}" "${CMD[@]}" \
			>"$WORK/p.out" 2>"$WORK/p.err" 7>&- 8>&- &
		pp=$!
		torch_mode_cmd "$m" TL_LIB_ "${PROG[@]}"
		KMUX_BENCH_TURN=$fm:$fp timeout 300 "${PIN[@]}" "${CMD[@]}" \
			>"$WORK/m.out" 2>"$WORK/m.err" 7>&- 8>&- &
		pm=$!
		wait "$pp"; rc_plain=$?
		wait "$pm"; rc_mode=$?
		exec 7>&- 8>&-
		rm -f "$fp" "$fm"
		for s in plain:p:$rc_plain "$m:m:$rc_mode"; do
			IFS=: read -r name f rc <<<"$s"
			{ echo "----- pair $r mode $m side $name first $first exit $rc"
			  cat "$WORK/$f.out"
			  grep -E '^(kmux|turns):' "$WORK/$f.err" | cut -c1-700
			  [ "$rc" = 0 ] || tail -n 20 "$WORK/$f.err"; } >>"$LOG"
		done
		if [ "$rc_plain" != 0 ] || [ "$rc_mode" != 0 ]; then
			failed=$((failed + 1))
			log "torch-lockstep: pair $r $m: exit $rc_plain (plain) $rc_mode ($m)"
		fi
	done
	log "torch-lockstep: pair round $r done"
done

"$PY" "$BENCH/lockstep_report.py" "$LOG" >"$OUT/torch-lockstep.md" || failed=$((failed + 1))
cat "$OUT/torch-lockstep.md" >>"$LOG"
cat "$OUT/torch-lockstep.md"
[ "$failed" = 0 ]
