#!/usr/bin/env bash
# probe-share.sh - what sharing one GPU between processes costs a
# latency-bound program, with and without kmux, with and without MPS
# (bench/results/memory.md: 4 copies of bench/memory/staged.cu admitted at
# once under --memory=evict without MPS ran 15x slower per request than one
# alone; is that time slicing or kmux?).
#
# Run on the GPU machine from the repo root, build/ carried (make and
# bench/gpu/prepare.sh here first):
#
#     OUT=$OUT/share bash bench/gpu/probe-share.sh
#
# Each case starts K copies of `staged plain --reps R` at once (R =
# PROBE_SHARE_REPS, default 8192) and records every copy's RESULT ms and its
# per-request time; a case is repeated PROBE_SHARE_REPEATS times (default 2).
# Cases (PROBE_SHARE_CASES, default all, in this order):
#   alone      1 copy, no kmux
#   plain4     4 copies, no kmux (the driver's time slicing)
#   plain2     2 copies, no kmux
#   bare4      4 copies under the bare preload (LD_PRELOAD, no mode)
#   evict4     4 copies under KMUX_MEMORY=evict, ample budget (no eviction)
#   mps4       4 copies, no kmux, under a private MPS control daemon
#   beside     1 copy beside `share_load heavy` (bench/gpu/progs/
#              share_load.cu: 132-block kernels always queued), no kmux
#   torch      1 copy beside a PyTorch resnet18 training loop
#              (progs/torch_resnet.py --bench, a synchronize per step), no
#              kmux
#   sweep      `share_load sync 2 W` (a 1-block kernel of W us, then a
#              synchronize, in a loop) for W in PROBE_SHARE_WORK_US (default
#              "0 20 100 500"): alone, two copies at once, and beside
#              `share_load heavy`; then `share_load heavy` alone and beside
#              `share_load sync 2 0`: the cost of time slicing as a
#              function of how often a program waits for the GPU
#   pipe1      1 copy of bench/memory/pipeline.py (PyTorch, several models
#              run one after another, a host read per batch;
#              PROBE_SHARE_PIPE_ARGS), no kmux
#   pipe4      4 copies of it at once, no kmux: whether such a program
#              gains from sharing a GPU by time slicing (the memory-mix
#              torch set's premise)
#   pipe4p     the same with --sync-every 0 (one host read per model)
# Output: $OUT/probe-share.log (commands, every RESULT/STAGE line) and
# $OUT/probe-share.csv (case,repeat,copy,ms,us_per_request: per request of
# staged, per batch of pipeline; the sweep's SHARE lines are in the log).
set -u
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
LOG=$OUT/probe-share.log
CSV=$OUT/probe-share.csv
: >"$LOG"
echo "case,repeat,copy,ms,us_per_request" >"$CSV"
REPS=${PROBE_SHARE_REPS:-8192}
REPEATS=${PROBE_SHARE_REPEATS:-2}
CASES=${PROBE_SHARE_CASES:-alone plain4 plain2 bare4 evict4 mps4 beside torch sweep}
log "probe-share: $(gpu_line)"
log "probe-share: reps $REPS, repeats $REPEATS, cases: $CASES"
case " $CASES " in *" pipe"*) check_stacks ;; esac
for p in "bench/memory/staged.cu staged" "bench/gpu/progs/share_load.cu share_load"; do
	set -- $p
	"$NVCC" $NVCCFLAGS -o "$WORK/bin/$2" "$ROOT/$1" >>"$LOG" 2>&1 ||
		{ log "probe-share: build of $1 failed"; exit 1; }
done
STAGED="$WORK/bin/staged plain --reps $REPS"
PIPE="$PY $ROOT/bench/memory/pipeline.py ${PROBE_SHARE_PIPE_ARGS:-}"
# what run_copies starts
RUNCMD=$STAGED

MPSDIR=$WORK/mps
mps_up() {
	mkdir -p "$MPSDIR/pipe" "$MPSDIR/log"
	CUDA_MPS_PIPE_DIRECTORY=$MPSDIR/pipe CUDA_MPS_LOG_DIRECTORY=$MPSDIR/log \
		nvidia-cuda-mps-control -d >>"$LOG" 2>&1
}
mps_down() {
	echo quit | CUDA_MPS_PIPE_DIRECTORY=$MPSDIR/pipe \
		nvidia-cuda-mps-control >>"$LOG" 2>&1
	sleep 1
}

# run_copies CASE REPEAT K ENV...: K copies at once, each with ENV set
run_copies() {
	local c=$1 rep=$2 k=$3 i pids=() f ms us n
	shift 3
	logq "\$ $k x env $* $RUNCMD"
	for ((i = 0; i < k; i++)); do
		# shellcheck disable=SC2086  # words, as given
		env "$@" $RUNCMD >"$WORK/run/$c-$rep-$i.out" 2>&1 &
		pids+=($!)
	done
	wait "${pids[@]}"
	for ((i = 0; i < k; i++)); do
		f=$WORK/run/$c-$rep-$i.out
		sed "s/^/    [$c.$rep.$i] /" "$f" | grep -E 'RESULT|STAGE|CHECK|rror' >>"$LOG"
		ms=$(sed -n 's/^RESULT .* ms=\([0-9.]*\) .*/\1/p' "$f" | head -1)
		# requests (staged: 3 stages) or batches (pipeline: its stages=)
		n=$(sed -n 's/^RESULT .* reps=\([0-9]*\) stages=\([0-9]*\).*/\1 \2/p' "$f" | head -1)
		[ -n "$n" ] || n="$REPS 3"
		us=$(echo "$n" | awk -v ms="${ms:-0}" '{ if (ms > 0) printf "%.2f", ms * 1000 / ($1 * $2) }')
		echo "$c,$rep,$i,${ms:-},$us" >>"$CSV"
	done
}

# share LABEL CMD...: run CMD, log its SHARE line under LABEL
share() {
	local label=$1
	shift
	"$@" 2>&1 | sed -n "s/^SHARE /SHARE case=$label /p" | tee -a "$LOG"
}
sweep() {
	local rep=$1 w hp
	for w in ${PROBE_SHARE_WORK_US:-0 20 100 500}; do
		share "alone.$rep" "$WORK/bin/share_load" sync 2 "$w"
		share "pair.$rep" "$WORK/bin/share_load" sync 2 "$w" &
		share "pair.$rep" "$WORK/bin/share_load" sync 2 "$w"
		wait
		"$WORK/bin/share_load" heavy 4 >/dev/null 2>&1 &
		hp=$!
		sleep 1
		share "beside-heavy.$rep" "$WORK/bin/share_load" sync 2 "$w"
		wait "$hp"
	done
	share "heavy-alone.$rep" "$WORK/bin/share_load" heavy 2
	"$WORK/bin/share_load" sync 4 0 >/dev/null 2>&1 &
	hp=$!
	sleep 1
	share "heavy-beside-sync0.$rep" "$WORK/bin/share_load" heavy 2
	wait "$hp"
}

# beside CASE REPEAT SECONDS CMD...: one copy, SECONDS after CMD (a
# co-runner, killed after) started
beside() {
	local c=$1 rep=$2 warm=$3 hp
	shift 3
	"$@" >"$WORK/run/$c-corunner-$rep.out" 2>&1 &
	hp=$!
	sleep "$warm"
	run_copies "$c" "$rep" 1 KMUX_NONE=1
	kill "$hp" 2>/dev/null
	wait "$hp" 2>/dev/null
	logq "    $c co-runner: $(tail -3 "$WORK/run/$c-corunner-$rep.out")"
}

for ((rep = 1; rep <= REPEATS; rep++)); do
	for c in $CASES; do
		have_time 60 || { log "probe-share: out of budget before $c.$rep"; break 2; }
		log "== $c (repeat $rep)"
		case $c in
		alone) run_copies $c $rep 1 KMUX_NONE=1 ;;
		plain4) run_copies $c $rep 4 KMUX_NONE=1 ;;
		plain2) run_copies $c $rep 2 KMUX_NONE=1 ;;
		bare4) run_copies $c $rep 4 LD_PRELOAD="$KMUX_LIB" ;;
		evict4) run_copies $c $rep 4 LD_PRELOAD="$KMUX_LIB" KMUX_MEMORY=evict \
			KMUX_MEM_BUDGET=64G ;;
		mps4)
			if mps_up; then
				run_copies $c $rep 4 CUDA_MPS_PIPE_DIRECTORY="$MPSDIR/pipe"
				mps_down
			else
				log "probe-share: MPS control daemon did not start"
			fi ;;
		beside) beside $c $rep 1 "$WORK/bin/share_load" heavy 30 ;;
		torch) beside $c $rep 12 $PY "$PROGS/torch_resnet.py" --bench \
			--steps 3000 --warmup 5 --configs 32x224 ;;
		sweep) sweep $rep ;;
		pipe1 | pipe4 | pipe4p)
			if [ "$HAVE_TORCH" != 1 ]; then
				log "probe-share: $c skipped: $WHY_TORCH"
				continue
			fi
			RUNCMD=$PIPE
			[ $c = pipe4p ] && RUNCMD="$PIPE --sync-every 0"
			k=4
			[ $c = pipe1 ] && k=1
			run_copies $c $rep $k KMUX_NONE=1
			RUNCMD=$STAGED ;;
		*) log "probe-share: unknown case $c" ;;
		esac
		awk -F, -v c=$c -v r=$rep '$1 == c && $2 == r { printf "    %s.%s copy %s: %s ms, %s us/request\n", c, r, $3, $4, $5 }' "$CSV" | tee -a "$LOG"
	done
done
log "probe-share: done"
