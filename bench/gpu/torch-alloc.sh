#!/usr/bin/env bash
# torch-alloc.sh - does kmux's stream scheduler gain on a PyTorch model
# with parallel branches once every tensor is an allocation of its own?
# Run on the GPU machine from the repo root, with build/ carried:
#   OUT=$OUT bash bench/gpu/torch-alloc.sh
#
# Why: PyTorch's caching allocator puts many tensors into one cuMemAlloc
# segment, so kmux (which tracks dependencies per allocation) sees every
# tensor of a segment as one and serializes unrelated branches
# (docs/design-streams.md, "Limits and future work").  PyTorch's other
# allocator, PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync, asks the
# driver for every tensor (cuMemAllocAsync / cuMemFreeAsync on the current
# stream), which kmux already schedules as operations of their own.
#
# For each batch in TA_BATCHES (default "4 32") and each allocator (native,
# async) it runs bench/apps/py/googlenet_app.py:
#   ab      kmux run --streams TA_STREAMS (16) with KMUX_BENCH_AB=1: one
#           process alternates blocks with the scheduler paused and running
#           (bench/apps/py/torchbench.py); the AB line's ratio is
#           scheduled / paused, the median over block pairs
#   plain   a fresh process, no kmux      } what hand-written streams gain
#   expert  a fresh process, no kmux      } at that batch: the ceiling
# and, with the async allocator at the largest batch, kmux verify.
# TA_MODES (default "ab plain expert") picks the modes; others are
#   ab:S    as ab on S streams
#   aa      the A/B's control: both arms paused (its bias and spread)
#   trace   kmux trace --summary-json of 2 forwards (which operations)
#   run     a fresh process under kmux run --streams N, TA_RUN_REPS (30)
#           ROIs, the median (the check of pace.h needs 8 to decide)
#   MODE,pace    a kmux mode with KMUX_PACE=1 (kmux checks that spreading
#           pays; on by default since run 17, off before)
#   MODE,nopace  a kmux mode with KMUX_PACE=0 (the check off)
# TA_ALLOCS (default "native async") the allocators.  kmux's
# own exit lines (KMUX_LOG=info: waits issued and pruned, operations passed
# through) are kept.  Output: $OUT/torch-alloc.log, $OUT/torch-alloc.md.
set -u
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
LOG=$OUT/torch-alloc.log
MD=$OUT/torch-alloc.md
: >"$LOG"
BATCHES=${TA_BATCHES:-4 32}
N=${TA_STREAMS:-16}
PAIRS=${TA_PAIRS:-10}
APP=$ROOT/bench/apps/py/googlenet_app.py
ASYNC=backend:cudaMallocAsync

log "torch-alloc: GPU $(gpu_line); $(kmux_ident)"
{
	echo "# PyTorch allocators under the stream scheduler (bench/gpu/torch-alloc.sh)"
	echo
	echo "- $(date -u '+%F %T UTC'); GPU $(gpu_line); $(kmux_ident)"
	echo "- torch $("$PY" -c 'import torch; print(torch.__version__)' 2>/dev/null)"
	echo "- batches: $BATCHES; streams $N; A/B pairs $PAIRS (3 ROIs a block)"
	echo
	echo "| batch | allocator | mode | ms (median) | A/B sched/paused (q1-q3) | check | kmux exit line |"
	echo "|---|---|---|---|---|---|---|"
} >"$MD"

# run_one BATCH ALLOC MODE: one process, its line in the table
run_one() {
	local b=$1 alloc=$2 mode=$3 f ms ab chk kl conf=() cmd
	f=$WORK/run-$b-$alloc-${mode//,/-}
	[ "$alloc" = async ] && conf=(env "PYTORCH_CUDA_ALLOC_CONF=$ASYNC")
	local kenv=(KMUX_LOG=info) label=$mode
	[[ $mode == *,pace ]] && kenv+=(KMUX_PACE=1)
	[[ $mode == *,nopace ]] && kenv+=(KMUX_PACE=0)
	mode=${mode%,pace}
	mode=${mode%,nopace}
	case $mode in
	ab | ab:* | aa)
		local sn=$N abv=1
		[[ $mode == ab:* ]] && sn=${mode#ab:}
		[ "$mode" = aa ] && abv=aa
		cmd=(env "LD_LIBRARY_PATH=$KMUX_DEVLIBS" "${kenv[@]}" "$KMUX_BIN" run --streams "$sn" --
		     "${conf[@]}" env "KMUX_BENCH_AB=$abv" "$PY" "$APP" plain --reps "$PAIRS"
		     --googlenet-batch "$b") ;;
	run)
		cmd=(env "LD_LIBRARY_PATH=$KMUX_DEVLIBS" "${kenv[@]}" "$KMUX_BIN" run --streams "$N" --
		     "${conf[@]}" "$PY" "$APP" plain --reps "${TA_RUN_REPS:-30}" --googlenet-batch "$b") ;;
	trace)
		cmd=(env "LD_LIBRARY_PATH=$KMUX_DEVLIBS" "$KMUX_BIN" trace -q -o "$f.trace.json"
		     --summary-json "$OUT/trace-$b-$alloc.json" -- "${conf[@]}" "$PY" "$APP" plain
		     --reps 1 --warmup 0 --googlenet-iters 1 --googlenet-batch "$b") ;;
	plain | expert)
		cmd=("${conf[@]}" "$PY" "$APP" "$mode" --reps "${TA_RUN_REPS:-9}" --googlenet-batch "$b") ;;
	verify)
		cmd=(env "LD_LIBRARY_PATH=$KMUX_DEVLIBS" "${kenv[@]}" "$KMUX_BIN" verify --streams "$N" --
		     "${conf[@]}" "$PY" "$APP" plain --reps 1 --warmup 1 --googlenet-iters 2
		     --googlenet-batch "$b") ;;
	esac
	if ! have_time 45; then
		log "  $b $alloc $mode: skipped (budget)"
		return 0
	fi
	logq "\$ ${cmd[*]}"
	timeout 200 "${cmd[@]}" >"$f.out" 2>"$f.err"
	log "  batch $b $alloc $mode: exit $?"
	cat "$f.out" >>"$LOG"
	grep -h 'kmux' "$f.err" | tail -n 8 >>"$LOG"
	ms=$(sed -n 's/^RESULT .* ms=\([0-9.]*\) .*/\1/p' "$f.out" | head -n 1)
	ab=$(sed -n 's/^AB .* ratio=\([0-9.]*\) ratio_lo=\([0-9.]*\) ratio_hi=\([0-9.]*\).*/\1 (\2-\3)/p' "$f.out")
	chk=$(grep -m1 -o '^CHECK [a-zA-Z]*' "$f.out")
	[ "$mode" = verify ] && chk=$(grep -h -m1 -o 'kmux verify: [a-z]*' "$f.out" "$f.err")
	kl=$(grep -h -m1 'streams: pid [0-9]*:' "$f.err" | sed 's/.*streams: pid [0-9]*: //' | cut -c1-220)
	echo "| $b | $alloc | $label | ${ms:--} | ${ab:--} | ${chk:--} | ${kl//|//} |" >>"$MD"
}

for b in $BATCHES; do
	for alloc in ${TA_ALLOCS:-native async}; do
		for mode in ${TA_MODES:-ab plain expert}; do
			run_one "$b" "$alloc" "$mode"
		done
	done
done
last=${BATCHES##* }
if [ "${TA_VERIFY:-1}" = 1 ]; then
	run_one "$last" async verify
	run_one "$last" native verify
fi
{
	echo
	echo "Commands: see torch-alloc.log (each prefixed with \$)."
} >>"$MD"
cat "$MD"
