#!/usr/bin/env bash
# overhead.sh - what kmux costs (issue 2, item 8).  Run on the GPU machine
# from the repo root (run-all.sh calls it): `bash bench/gpu/overhead.sh`.
#
# Benchmarks, each timed in four modes, interleaved (rep 1: plain, bare,
# trace, timing; rep 2: ...), each run a fresh process:
#   launch_rt   progs/launch_loop.cu: a near-empty kernel launched
#               CHUNKS x CHUNK times (>= 200k) through cudart on one stream,
#               after WARMUP launches; host time per launch (median chunk)
#   launch_drv  progs/launch_loop_drv.c: the same through cuLaunchKernel
#               directly (-lcuda): the interposer alone, no cudart
#   call        progs/call_cost.c: host ns per cuLaunchKernel (direct and
#               through cuGetProcAddress) with the queue never full, and per
#               cuCtxGetDevice / cuStreamQuery: the interposer's own cost
#   torch_BxS   progs/torch_resnet.py --bench: resnet18 training step time
#               (median of steps after warm-up), batch B, SxS images
# Modes: plain; bare preload (LD_PRELOAD=build/libkmux.so); kmux trace;
# kmux trace --timing.  Reports the median over repeats, the ratio vs plain
# and the added cost per launch (for torch: the step-time difference divided
# by the launches per step counted in a trace).  Targets: bare preload
# <= 0.3 us/launch and <= 2% on the PyTorch loop.
#
# Output under $OUT (default ./out): overhead.log (every run's output),
# overhead.csv (raw rows: bench,mode,rep,metric,value), overhead.md (table,
# date, GPU, driver, parameters, commands).
#
# Knobs (environment): KMUX_OVH_REPS (5), KMUX_OVH_CHUNK (50000),
# KMUX_OVH_CHUNKS (5), KMUX_OVH_WARMUP (20000), KMUX_OVH_TORCH_REPS (3),
# KMUX_OVH_TORCH_STEPS (20), KMUX_OVH_TORCH_WARMUP (8),
# KMUX_OVH_TORCH_CONFIGS (32x224,32x64), KMUX_OVH_CALL_REPS (9).
set -u
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

LOG=$OUT/overhead.log
: >"$LOG"
RAW=$OUT/overhead.csv
echo "bench,mode,rep,metric,value" >"$RAW"
CMDS=$WORK/overhead.cmds
BUILD_LOG=$WORK/overhead.build.log
: >"$BUILD_LOG"
: >"$CMDS"
REPS=${KMUX_OVH_REPS:-5}
CHUNK=${KMUX_OVH_CHUNK:-50000}
CHUNKS=${KMUX_OVH_CHUNKS:-5}
WARM=${KMUX_OVH_WARMUP:-20000}
TREPS=${KMUX_OVH_TORCH_REPS:-3}
TSTEPS=${KMUX_OVH_TORCH_STEPS:-20}
TWARM=${KMUX_OVH_TORCH_WARMUP:-8}
TCONF=${KMUX_OVH_TORCH_CONFIGS:-32x224,32x64}
FAILS=0

log "overhead: start (OUT=$OUT, scratch $WORK, $(time_left)s of budget left)"
log "overhead: GPU $(gpu_line); $(kmux_ident)"
check_stacks
check_kmux
MODES=()
for m in plain bare trace timing; do
	if mode_ok "$m"; then MODES+=("$m"); else log "overhead: mode $m SKIP (kmux not available)"; fi
done

B=$WORK/bin
if [ "$HAVE_NVCC" = 1 ]; then
	log "build: $NVCC $NVCCFLAGS"
	# shellcheck disable=SC2086
	{
		nv "$B/launch_loop" $NVCCFLAGS "$PROGS/launch_loop.cu" &
		nv "$B/loop.cubin" $NVCCFLAGS -cubin "$PROGS/launch_loop.cu" &
		nv "$B/launch_loop_drv" $NVCCFLAGS -cudart none -x c "$PROGS/launch_loop_drv.c" -lcuda &
		nv "$B/call_cost" $NVCCFLAGS -cudart none -x c "$PROGS/call_cost.c" -lcuda &
		wait
	}
	[ -s "$BUILD_LOG" ] && cat "$BUILD_LOG" >>"$LOG"
else
	log "build: $WHY_NVCC: launch loops SKIP"
fi

# one_run BENCH MODE REP TIMEOUT CMD...: run, log, parse RESULT lines into $RAW
one_run() {
	local bench=$1 mode=$2 rep=$3 tmo=$4
	shift 4
	local so=$WORK/run/ovh.$bench.$mode.$rep.stdout se=$WORK/run/ovh.$bench.$mode.$rep.stderr
	local tr=$WORK/traces/ovh.$bench.$mode.json rc dt line
	rm -f "$tr"
	[ "$rep" = 1 ] && mode_cmdline "$mode" "$tr" "$@" >>"$CMDS"
	dt=$SECONDS
	run_mode "$mode" "$tr" "$tmo" "$so" "$se" "$@"
	rc=$?
	dt=$((SECONDS - dt))
	{
		echo "----- $bench/$mode rep $rep: exit $rc, ${dt}s: $(mode_cmdline "$mode" "$tr" "$@")"
		cat "$so"
		echo "--- stderr (last 20 lines):"
		tail -n 20 "$se"
	} >>"$LOG"
	if [ "$rc" != 0 ] || ! grep -q '^RESULT ' "$so" || grep -q 'cannot be preloaded' "$se"; then
		log "  $bench/$mode rep $rep: FAILED (exit $rc, ${dt}s): $(tail -n 1 "$se" | cut -c1-160)"
		FAILS=$((FAILS + 1))
		rm -f "$tr"
		return 1
	fi
	# RESULT key=value ... -> rows
	while read -r line; do
		case $bench in
		launch_*)
			for k in submit_us total_us gpu_us; do
				echo "$bench,$mode,$rep,$k,$(printf '%s\n' "$line" | tr ' ' '\n' | sed -n "s/^$k=//p")" >>"$RAW"
			done ;;
		call)
			printf '%s\n' "$line" | tr ' ' '\n' | grep '_ns=' | while IFS== read -r k v; do
				echo "$bench,$mode,$rep,$k,$v" >>"$RAW"
			done ;;
		torch)
			local cfg ms
			cfg=$(printf '%s\n' "$line" | tr ' ' '\n' | sed -n 's/^config=//p')
			ms=$(printf '%s\n' "$line" | tr ' ' '\n' | sed -n 's/^median_ms=//p')
			echo "torch_$cfg,$mode,$rep,step_ms,$ms" >>"$RAW" ;;
		esac
	done < <(grep '^RESULT ' "$so")
	log "  $bench/$mode rep $rep: ${dt}s: $(grep '^RESULT ' "$so" | sed 's/^RESULT //' | tr '\n' ' ' | cut -c1-200)"
	# First trace of each benchmark: count what the trace saw (the torch one
	# also gives launches per step).  Then drop the (large) trace.
	if [ "$rep" = 1 ] && { [ "$mode" = trace ] || [ "$mode" = timing ]; }; then
		local sum=$WORK/traces/ovh.$bench.$mode.sum.json launches
		"$PY" "$BENCH/benchtool.py" trace "$tr" --label "ovh/$bench/$mode" \
			--json-out "$sum" >>"$LOG" 2>&1
		launches=$("$PY" "$BENCH/benchtool.py" get "$sum" launches 2>/dev/null || echo "")
		log "    trace saw ${launches:-?} launches"
		if [ -n "$launches" ]; then
			echo "$bench,$mode,$rep,trace_launches,$launches" >>"$RAW"
			if [ "$bench" = torch ] && [ "$mode" = trace ]; then
				local nconf steps
				nconf=$(printf '%s\n' "$TCONF" | tr ',' '\n' | grep -c .)
				steps=$((nconf * (TSTEPS + TWARM)))
				echo "torch,trace,$rep,launches_per_step,$(awk -v l="$launches" -v s="$steps" 'BEGIN{printf "%.1f", l/s}')" >>"$RAW"
			fi
		fi
	fi
	rm -f "$tr"
	return 0
}

# ------------------------------------------------------------------ launch loops
if [ -x "$B/launch_loop" ] && [ -x "$B/launch_loop_drv" ] && [ -f "$B/loop.cubin" ]; then
	log "launch loops: $REPS reps x ${#MODES[@]} modes x 2 variants, $((CHUNK * CHUNKS)) timed launches each"
	for rep in $(seq 1 "$REPS"); do
		for mode in "${MODES[@]}"; do
			# leave time for the PyTorch runs
			if ! have_time $((HAVE_TORCH == 1 ? 150 : 30)); then
				log "  time budget: launch loops stop at rep $rep"
				break 2
			fi
			one_run launch_rt "$mode" "$rep" 120 "$B/launch_loop" "$CHUNK" "$CHUNKS" "$WARM"
			one_run launch_drv "$mode" "$rep" 120 "$B/launch_loop_drv" "$B/loop.cubin" \
				"$CHUNK" "$CHUNKS" "$WARM"
		done
	done
elif [ "$HAVE_NVCC" = 1 ]; then
	log "launch loops: build failed (see overhead.log)"
	FAILS=$((FAILS + 1))
fi

# ------------------------------------------------------------------ call cost
# The host cost of one call when the GPU's queue is not full (call_cost.c):
# the direct measurement of what the interposer adds.
CREPS=${KMUX_OVH_CALL_REPS:-9}
if [ -x "$B/call_cost" ] && [ -f "$B/loop.cubin" ]; then
	log "call cost: $CREPS reps x ${#MODES[@]} modes"
	for rep in $(seq 1 "$CREPS"); do
		for mode in "${MODES[@]}"; do
			if ! have_time $((HAVE_TORCH == 1 ? 150 : 30)); then
				log "  time budget: call cost stops at rep $rep"
				break 2
			fi
			one_run call "$mode" "$rep" 120 "$B/call_cost" "$B/loop.cubin" 4000
		done
	done
fi

# ------------------------------------------------------------------ PyTorch
if [ "$HAVE_TORCH" = 1 ]; then
	log "torch: $TREPS reps x ${#MODES[@]} modes, configs $TCONF, $TWARM warm-up + $TSTEPS timed steps"
	for rep in $(seq 1 "$TREPS"); do
		for mode in "${MODES[@]}"; do
			if ! have_time 45; then log "  time budget: torch stops at rep $rep"; break 2; fi
			one_run torch "$mode" "$rep" 240 "$PY" "$PROGS/torch_resnet.py" --bench \
				--configs "$TCONF" --steps "$TSTEPS" --warmup "$TWARM"
		done
	done
else
	log "torch: SKIP ($WHY_TORCH)"
fi

# ------------------------------------------------------------------ report
MD=$OUT/overhead.md
{
	echo "# kmux overhead (issue 2, item 8)"
	echo
	echo "- date: $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
	echo "- GPU, driver: $(gpu_line)"
	echo "- host: $(uname -srm), $(nproc) CPUs; nvcc: $([ "$HAVE_NVCC" = 1 ] && "$NVCC" --version | tail -n 1)"
	echo "- python stack: ${STACK_VERSIONS:-?}"
	echo "- kmux: $(kmux_ident)"
	echo "- launch loops: $REPS reps/mode, each $CHUNKS chunks x $CHUNK launches after $WARM warm-up;"
	echo "  value per run = median chunk; table = median over runs"
	echo "- torch: $TREPS reps/mode; configs $TCONF (batch x image size); $TWARM warm-up + $TSTEPS"
	echo "  timed steps, synchronized each step; value per run = median step"
	echo "- torch: $([ "$HAVE_TORCH" = 1 ] && echo "run" || echo "SKIP: $WHY_TORCH")"
	echo "- failed runs: $FAILS"
	echo
	echo "\`submit\` = host time to issue the launches; \`incl. sync\` adds the final"
	echo "stream synchronize; \`GPU\` = event-timed time on the stream (when GPU ~ submit the"
	echo "loop was GPU-bound and host overhead can hide behind it)."
	echo "Added us/launch = mode median - plain median (launch loops); for torch, the"
	echo "step-time difference over the launches per step seen by \`kmux trace\` (approximate:"
	echo "the count includes set-up launches)."
	echo "Targets: bare preload <= 0.3 us/launch, <= 2% on the PyTorch loop."
	echo
} >"$MD"
log "overhead: results"
"$PY" "$BENCH/benchtool.py" overhead "$RAW" --md-append "$MD" | tee -a "$LOG"
{
	echo
	echo "Raw rows: overhead.csv; every run's output: overhead.log."
	echo
	echo "## Commands"
	echo
	echo '```'
	echo "bash bench/gpu/overhead.sh      # or bash bench/gpu/run-all.sh"
	echo "# scratch dir: W=$WORK (removed afterwards by run-all.sh)"
	echo "# build:"
	grep -h '^\$ ' "$LOG" | sed 's/^\$ //' | shorten_cmds
	echo "# runs (each repeated, modes interleaved):"
	shorten_cmds <"$CMDS"
	echo '```'
} >>"$MD"
log "overhead: done ($(time_left)s of budget left); $MD"
[ "$FAILS" = 0 ]
