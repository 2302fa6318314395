#!/usr/bin/env bash
# memory.sh - issue 5's measurement: the memory manager (kmux run
# --memory=lazy|evict) against no kmux, on the bench/apps suite and a small
# PyTorch training run.  ONE device call on an H200, from the repo root,
# after `make` and `bash bench/gpu/prepare.sh` here (build/ carried):
#
#     bash bench/memory.sh
#
# (a) Peak device memory: every app (its `plain` version) runs once per
#     mode with a sidecar polling the GPU's memory.used through
#     `nvidia-smi -lms 20`, the same for every mode; the figure is the peak
#     minus the reading just before the run (so the CUDA context counts,
#     equally in every mode).  Modes: none (no kmux), lazy, evict with a
#     budget of half the peak resident bytes the lazy run reported (at least
#     the largest object it managed, and at least
#     64 MiB; a fixed rule, not tuned).  KMUX_LOG=info runs also log kmux's
#     own count of the managed objects' peak.
#     The context's own footprint is measured in the same run, first:
#     bench/memory/ctxonly.cu (built with the apps' flags: context, module,
#     nothing allocated) KMUX_MEMBENCH_CTX_REPS (3) times under none and
#     under `kmux run --memory=lazy` (the preload's own share, if any),
#     same sampler; the report adds, beside the whole-process peak, the
#     memory objects' peak = whole-process peak - the median context of
#     the matching mode (none's for none, kmux's for lazy and evict).
# (c) Cost when memory is ample: every app REPS times in each of none,
#     quota (kmux run with nothing managed), lazy and evict with an ample
#     budget (1 TiB), modes rotated per round; the app's own ROI time
#     (RESULT ms=) and the process wall time; medians.
# PyTorch: bench/gpu/progs/torch_resnet.py --bench (resnet18 training):
#     peak and median step time, none / lazy / evict (half of lazy's peak);
#     then it joins the (c) rounds like an app (its median step time as the
#     ROI), unless KMUX_MEMBENCH_TORCH_COST=0.  KMUX_MEMBENCH_TORCH_EVICT=0
#     skips its evict-at-half peak run (it thrashes: about a minute).
# (a) sweep: phase_buffers also under evict budgets of 1/4, 1/3 and 1/2 of
#     lazy's managed peak (KMUX_MEMBENCH_SWEEP names the apps).
# (b) the memory-constrained job mix is bench/memory-mix.sh (its own call).
#
# Output under $OUT: memory.log (every command, run output tails),
# memory.csv (app,mode,rep,key,value), memory.md (tables, GPU, commands).
# Budget: KMUX_MEMBENCH_BUDGET_S (default 380 s); rounds stop early when
# the budget runs out, and the tables say how many repeats each app got.
# Knobs: KMUX_MEMBENCH_REPS (3), KMUX_MEMBENCH_APPS (all of bench/apps),
# KMUX_MEMBENCH_STAGED (1: also bench/memory/staged.cu, with
# KMUX_MEMBENCH_STAGED_REPS requests per stage, 4096),
# KMUX_MEMBENCH_APP_ARGS ("--reps 5 --warmup 2"), KMUX_MEMBENCH_TORCH (1),
# KMUX_MEMBENCH_COST_MODES (the (c) modes, default "none quota lazy
# evict-ample"; a subset gives one A/B more repeats in the same time;
# lazy-b and evict-ample-b run the same under the library named by
# KMUX_MEMBENCH_LIB_B (kmux run's KMUX_LIBRARY), e.g. an older build copied
# aside, so that two builds are compared in the same rounds),
# KMUX_MEMBENCH_PIN (a CPU list for taskset -c, e.g. "2-5"): every run of
# every mode pinned to those CPUs, the same for all (PyTorch's step time
# was bimodal per process in runs 7 and 8; pinning takes the scheduler's
# CPU placement out of it); checked before anything runs.
# KMUX_MEMBENCH_DRY=1: no GPU; runs tests/e2e's `memory` program on
# tests/simcuda as the only app (`memory context` as ctxonly), a fake
# sampler (checks this script's logic) whose peak for a run is taken from
# KMUX_MEMBENCH_DRY_MIB ("APP:MODE:REP=MiB" or "APP:MODE=MiB" words, else 0).
# (KMUX_MEMBENCH_DRY_CTX_CMD replaces the context program, for the test.)
# Never changes GPU settings.  Exit 0 when no run failed.
set -u
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1
export OUT=${OUT:-./out}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
START=$(date +%s)
BUDGET=${KMUX_MEMBENCH_BUDGET_S:-380}
export KMUX_BENCH_DEADLINE=$((START + BUDGET))
# shellcheck source=bench/gpu/lib.sh
. bench/gpu/lib.sh

LOG=$OUT/memory.log
CSV=$OUT/memory.csv
MD=$OUT/memory.md
: >"$LOG"
echo "app,mode,rep,key,value" >"$CSV"
REPS=${KMUX_MEMBENCH_REPS:-3}
APP_ARGS=${KMUX_MEMBENCH_APP_ARGS:---reps 5 --warmup 2}
DRY=${KMUX_MEMBENCH_DRY:-0}
# KMUX_MEMBENCH_COST_MODES: a subset of these, e.g. "none lazy" for a
# longer A/B of one mode in the same device time (checked names).
MODES=(none quota lazy evict-ample)
if [ -n "${KMUX_MEMBENCH_COST_MODES:-}" ]; then
	MODES=()
	for m in $KMUX_MEMBENCH_COST_MODES; do
		case $m in
		none | quota | lazy | evict-ample) MODES+=("$m") ;;
		lazy-b | evict-ample-b)
			if [ ! -r "${KMUX_MEMBENCH_LIB_B:-}" ]; then
				echo "memory: KMUX_MEMBENCH_COST_MODES: $m needs KMUX_MEMBENCH_LIB_B, a readable libkmux.so (is '${KMUX_MEMBENCH_LIB_B:-}')" >&2
				exit 2
			fi
			MODES+=("$m") ;;
		*) echo "memory: KMUX_MEMBENCH_COST_MODES: unknown mode '$m' (none quota lazy evict-ample lazy-b evict-ample-b)" >&2; exit 2 ;;
		esac
	done
fi
export KMUX_MEMBENCH_MODES_LIST="${MODES[*]}"
PIN=${KMUX_MEMBENCH_PIN:-}
if [ -n "$PIN" ] && ! taskset -c "$PIN" true 2>/dev/null; then
	echo "memory: KMUX_MEMBENCH_PIN='$PIN': taskset -c cannot pin to that (a CPU list like 2-5; is taskset installed?)" >&2
	exit 2
fi
FAILS=0
B=$WORK/bin

csv() { echo "$1,$2,$3,$4,$5" >>"$CSV"; }

# The GPU's used memory in MiB, now (dry: 0).
mem_now() {
	if [ "$DRY" = 1 ]; then echo 0; return; fi
	nvidia-smi -i 0 --query-gpu=memory.used --format=csv,noheader,nounits 2>/dev/null |
		head -n 1 | tr -dc 0-9
}

# dry_mib APP MODE REP: the fake sampler's reading for this run.
dry_mib() {
	local w v=0
	for w in ${KMUX_MEMBENCH_DRY_MIB:-}; do
		case $w in
		"$1:$2:$3="*) v=${w#*=}; break ;;
		"$1:$2="*) v=${w#*=} ;;
		esac
	done
	echo "$v"
}

# sampler_start FILE / sampler_stop: nvidia-smi polling every 20 ms.
# (dry: DRY_APP/DRY_MODE/DRY_REP, set by one(), pick the fake reading)
SAMPLER=""
sampler_start() {
	if [ "$DRY" = 1 ]; then
		local v
		v=$(dry_mib "$DRY_APP" "$DRY_MODE" "$DRY_REP")
		(echo 0; while :; do echo "$v"; sleep 0.05; done) >"$1" 2>/dev/null &
	else
		nvidia-smi -i 0 --query-gpu=memory.used --format=csv,noheader,nounits \
			-lms 20 >"$1" 2>/dev/null &
	fi
	SAMPLER=$!
	sleep 0.3	# the first sample before the app starts
}
sampler_stop() {
	sleep 0.2
	[ -n "$SAMPLER" ] && kill "$SAMPLER" 2>/dev/null
	wait "$SAMPLER" 2>/dev/null
	SAMPLER=""
}
peak_of() { tr -dc '0-9\n' <"$1" | sort -n | tail -n 1; }

# run_mode MODE BUDGET CMD...: CMD under MODE; stdout+stderr to $WORK/run/out.
run_mode() {
	local mode=$1 budget=$2
	shift 2
	local -a pre=(env "LD_LIBRARY_PATH=$KMUX_DEVLIBS${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" KMUX_LOG=info)
	case $mode in
	none) pre=() ;;
	quota) pre+=("$KMUX_BIN" run --) ;;
	lazy | kmux) pre+=("$KMUX_BIN" run --memory=lazy --) ;;
	lazy-b) pre+=("KMUX_LIBRARY=$KMUX_MEMBENCH_LIB_B" "$KMUX_BIN" run --memory=lazy --) ;;
	evict-ample-b) pre+=("KMUX_LIBRARY=$KMUX_MEMBENCH_LIB_B" "KMUX_MEM_BUDGET=$budget" "$KMUX_BIN" run --memory=evict --) ;;
	evict*) pre+=("KMUX_MEM_BUDGET=$budget" "$KMUX_BIN" run --memory=evict --) ;;
	esac
	[ -n "$PIN" ] && pre=(taskset -c "$PIN" "${pre[@]}")
	timeout 120 "${pre[@]}" "$@" >"$WORK/run/out" 2>&1
}

# one APP MODE REP BUDGET SAMPLE CMD...: run, record time/peak/kmux counts.
one() {
	local app=$1 mode=$2 rep=$3 budget=$4 sample=$5 rc t0 t1 base peak v
	shift 5
	logq "\$ [$app $mode $rep${budget:+ budget=$budget}] $*"
	base=$(mem_now)
	DRY_APP=$app DRY_MODE=$mode DRY_REP=$rep
	[ "$sample" = 1 ] && sampler_start "$WORK/run/samples"
	t0=$(date +%s%N)
	run_mode "$mode" "$budget" "$@"
	rc=$?
	t1=$(date +%s%N)
	[ "$sample" = 1 ] && sampler_stop
	tail -n 6 "$WORK/run/out" | sed 's/^/    /' >>"$LOG"
	csv "$app" "$mode" "$rep" rc "$rc"
	csv "$app" "$mode" "$rep" wall_ms $(((t1 - t0) / 1000000))
	if [ "$rc" != 0 ] || grep -q "CHECK FAIL" "$WORK/run/out"; then
		log "  $app $mode rep $rep: FAILED (rc $rc)"
		FAILS=$((FAILS + 1))
		csv "$app" "$mode" "$rep" failed 1
	fi
	v=$(sed -n 's/.*RESULT .* ms=\([0-9.]*\) .*/\1/p; s/.*median_ms=\([0-9.]*\).*/\1/p' \
		"$WORK/run/out" | head -n 1)
	[ -n "$v" ] && csv "$app" "$mode" "$rep" roi_ms "$v"
	v=$(sed -n 's/.*resident (peak \([0-9]*\)).*/\1/p' "$WORK/run/out" | tail -n 1)
	[ -n "$v" ] && csv "$app" "$mode" "$rep" kmux_peak_bytes "$v"
	v=$(sed -n 's/.*largest object \([0-9]*\) bytes.*/\1/p' "$WORK/run/out" | tail -n 1)
	[ -n "$v" ] && csv "$app" "$mode" "$rep" kmux_largest_bytes "$v"
	v=$(sed -n 's/.* \([0-9]*\) evictions (.*/\1/p' "$WORK/run/out" | tail -n 1)
	[ -n "$v" ] && csv "$app" "$mode" "$rep" evictions "$v"
	if [ "$sample" = 1 ]; then
		peak=$(peak_of "$WORK/run/samples")
		if [ -n "$peak" ] && [ -n "$base" ]; then
			csv "$app" "$mode" "$rep" peak_mib $((peak > base ? peak - base : 0))
		fi
	fi
	return 0
}

# ---------------------------------------------------------------- setup
log "memory: $(uname -srm), $(nproc) CPUs; GPU: $(gpu_line); budget ${BUDGET}s${PIN:+; pinned to CPUs $PIN}"
declare -a APPS=() CMDS=()
if [ "$DRY" = 1 ]; then
	export LD_LIBRARY_PATH=$ROOT/build/simcuda${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
	export E2E_MODULE=$ROOT/build/simcuda/kernels/basic.so
	APPS=(memory-objects)
	CMDS=("$ROOT/build/tests/e2e/memory objects")
	CTX_CMD=${KMUX_MEMBENCH_DRY_CTX_CMD:-$ROOT/build/tests/e2e/memory context}
	KMUX_MEMBENCH_TORCH=0
else
	names=${KMUX_MEMBENCH_APPS:-$(cd bench/apps && ls ./*.cu | sed 's|^\./||; s|\.cu$||' | tr '\n' ' ')}
	log "build: $NVCC $NVCCFLAGS: $names"
	pids=()
	for app in $names; do
		# shellcheck disable=SC2086
		"$NVCC" $NVCCFLAGS -o "$B/$app" "bench/apps/$app.cu" >>"$LOG" 2>&1 &
		pids+=($!)
	done
	# staged (bench/memory/): a pipeline whose stages keep their weights
	# resident but use them one after another, the phase-local pattern
	# the memory manager is for; its own arguments (no --warmup).
	if [ "${KMUX_MEMBENCH_STAGED:-1}" = 1 ]; then
		# shellcheck disable=SC2086
		"$NVCC" $NVCCFLAGS -o "$B/staged" bench/memory/staged.cu >>"$LOG" 2>&1 &
		pids+=($!)
	fi
	# the context-only program (the memory objects' figure), same flags
	# shellcheck disable=SC2086
	"$NVCC" $NVCCFLAGS -o "$B/ctxonly" bench/memory/ctxonly.cu >>"$LOG" 2>&1 &
	pids+=($!)
	wait "${pids[@]}"
	CTX_CMD=""
	if [ -x "$B/ctxonly" ]; then
		CTX_CMD="$B/ctxonly --hold-ms 500"
	else
		log "build: ctxonly FAILED (no memory objects figure)"
		FAILS=$((FAILS + 1))
	fi
	for app in $names; do
		if [ -x "$B/$app" ]; then
			APPS+=("$app")
			CMDS+=("$B/$app plain $APP_ARGS")
		else
			log "build: $app FAILED"
			FAILS=$((FAILS + 1))
		fi
	done
	if [ "${KMUX_MEMBENCH_STAGED:-1}" = 1 ]; then
		if [ -x "$B/staged" ]; then
			APPS+=(staged)
			CMDS+=("$B/staged plain --reps ${KMUX_MEMBENCH_STAGED_REPS:-4096}")
		else
			log "build: staged FAILED"
			FAILS=$((FAILS + 1))
		fi
	fi
	log "build: ${#APPS[@]} apps ($(time_left)s left)"
fi

# ------------------------------------- (a) the context's own footprint
# Measured, not assumed, whenever (a) runs: ctxonly under none and under
# kmux alternately, the same sampler as every app run; medians in the report.
CTX_REPS=${KMUX_MEMBENCH_CTX_REPS:-3}
if [ "${#APPS[@]}" -gt 0 ] && [ -n "$CTX_CMD" ]; then
	for ((r = 1; r <= CTX_REPS; r++)); do
		# shellcheck disable=SC2086
		one context none "$r" "" 1 $CTX_CMD
		# shellcheck disable=SC2086
		one context kmux "$r" "" 1 $CTX_CMD
	done
	log "(a) context MiB, none: $(awk -F, '$1=="context" && $2=="none" && $4=="peak_mib" {printf "%s ", $5}' "$CSV")kmux: $(awk -F, '$1=="context" && $2=="kmux" && $4=="peak_mib" {printf "%s ", $5}' "$CSV")"
fi

# ------------------------------------------------------------ (a) peaks
for i in "${!APPS[@]}"; do
	app=${APPS[$i]}
	have_time 60 || { log "(a): out of time before $app"; break; }
	# shellcheck disable=SC2086
	one "$app" none 0 "" 1 ${CMDS[$i]}
	# shellcheck disable=SC2086
	one "$app" lazy 0 "" 1 ${CMDS[$i]}
	kp=$(awk -F, -v a="$app" '$1==a && $2=="lazy" && $4=="kmux_peak_bytes" {v=$5} END {print v+0}' "$CSV")
	half=$((kp / 2 / 1048576))
	[ "$half" -lt 64 ] && half=64
	# A budget below the largest object fails that allocation by design
	# (the first H200 run: mha's 256 MiB scores under a 144 MiB budget).
	big=$(awk -F, -v a="$app" '$1==a && $2=="lazy" && $4=="kmux_largest_bytes" {v=$5} END {print v+0}' "$CSV")
	big=$(((big + 1048575) / 1048576))
	[ "$half" -lt "$big" ] && half=$big
	# shellcheck disable=SC2086
	one "$app" evict-half 0 "${half}M" 1 ${CMDS[$i]}
	log "(a) $app: peak MiB none/lazy/evict-half: $(awk -F, -v a="$app" '$1==a && $4=="peak_mib" {printf "%s ", $5}' "$CSV")(budget ${half}M)"
done

# ------------------------------- (a) budget sweep (the 30% question as a curve)
# Evict budgets of 1/4, 1/3 and 1/2 of lazy's managed peak (at least the
# largest object: below it that allocation fails by design), fixed
# fractions, never chosen from the outcome; peak and ROI time each.
# KMUX_MEMBENCH_SWEEP set and empty: no sweep.
for app in ${KMUX_MEMBENCH_SWEEP-phase_buffers memory-objects}; do
	i=-1
	for k in "${!APPS[@]}"; do [ "${APPS[$k]}" = "$app" ] && i=$k; done
	[ "$i" -ge 0 ] || continue
	kp=$(awk -F, -v a="$app" '$1==a && $2=="lazy" && $4=="kmux_peak_bytes" {v=$5} END {print v+0}' "$CSV")
	big=$(awk -F, -v a="$app" '$1==a && $2=="lazy" && $4=="kmux_largest_bytes" {v=$5} END {print v+0}' "$CSV")
	big=$(((big + 1048575) / 1048576))
	# Without lazy's peak (its (a) run skipped or failed) a fraction of it
	# is no budget at all: the runs would fail for that, not for kmux.
	if [ "$kp" -le 0 ]; then
		log "(a) sweep $app: SKIP (no managed peak from a lazy run)"
		continue
	fi
	for q in 4 3 2; do
		have_time 40 || { log "(a) sweep: out of time at $app 1/$q"; break; }
		bud=$((kp / q / 1048576))
		[ "$bud" -lt "$big" ] && bud=$big
		[ "$bud" -lt 1 ] && bud=1
		csv "$app" "sweep-q$q" 0 budget_mib "$bud"
		# shellcheck disable=SC2086
		one "$app" "evict-sweep-q$q" 0 "${bud}M" 1 ${CMDS[$i]}
	done
	log "(a) sweep $app: peak MiB at 1/4, 1/3, 1/2: $(awk -F, -v a="$app" '$1==a && $2 ~ /^evict-sweep/ && $4=="peak_mib" {printf "%s ", $5}' "$CSV")"
done

# --------------------------------------------------- PyTorch (peak, time)
TORCH=(python3 bench/gpu/progs/torch_resnet.py --bench --configs 64x224 --steps 20 --warmup 5)
if [ "${KMUX_MEMBENCH_TORCH:-1}" = 1 ] && have_time 150 &&
	"$PY" -c "import torch, torchvision; assert torch.cuda.is_available()" >>"$LOG" 2>&1; then
	TORCH[0]=$PY
	one torch_resnet18 none 0 "" 1 "${TORCH[@]}"
	one torch_resnet18 lazy 0 "" 1 "${TORCH[@]}"
	kp=$(awk -F, '$1=="torch_resnet18" && $2=="lazy" && $4=="kmux_peak_bytes" {v=$5} END {print v+0}' "$CSV")
	half=$((kp / 2 / 1048576)); [ "$half" -lt 64 ] && half=64
	# evict at half thrashes on a training step (run 1: 165x slower, a
	# minute of device time); KMUX_MEMBENCH_TORCH_EVICT=0 skips it.
	if [ "${KMUX_MEMBENCH_TORCH_EVICT:-1}" = 1 ]; then
		one torch_resnet18 evict-half 0 "${half}M" 1 "${TORCH[@]}"
	fi
	log "torch: peak MiB none/lazy/evict-half: $(awk -F, '$1=="torch_resnet18" && $4=="peak_mib" {printf "%s ", $5}' "$CSV")(budget ${half}M)"
	# (c) for PyTorch too: its step time in the same rotated rounds as
	# the apps (one run is no measurement: run 1's 9.6% was a single one).
	if [ "${KMUX_MEMBENCH_TORCH_COST:-1}" = 1 ]; then
		APPS+=(torch_resnet18)
		CMDS+=("${TORCH[*]}")
	fi
else
	log "torch: SKIP (off, no time, or torch/torchvision/CUDA not importable)"
fi

# --------------------------------------------------- (c) cost, ample memory
for ((r = 1; r <= REPS; r++)); do
	have_time 40 || { log "(c): out of time before round $r"; break; }
	for i in "${!APPS[@]}"; do
		app=${APPS[$i]}
		have_time 15 || break
		for ((k = 0; k < ${#MODES[@]}; k++)); do
			m=${MODES[$(((k + r) % ${#MODES[@]}))]}
			# shellcheck disable=SC2086
			one "$app" "$m" "$r" 1T 0 ${CMDS[$i]}
		done
	done
	log "(c) round $r done ($(time_left)s left)"
done

# ---------------------------------------------------------------- report
{
	echo "# kmux memory manager (issue 5): bench/memory.sh"
	echo
	echo "- date: $(date -u +%Y-%m-%dT%H:%MZ); GPU/driver: $(gpu_line); host: $(uname -srm), $(nproc) CPUs"
	echo "- apps: \`APP plain $APP_ARGS\` (nvcc $NVCCFLAGS); kmux: \`kmux run [--memory=MODE] -- APP\`, evict: \`KMUX_MEM_BUDGET=B kmux run --memory=evict\`"
	echo "- peak: max of nvidia-smi memory.used (-lms 20) during the run minus the value before it (MiB, CUDA context included, same for every mode)"
	echo "- context: \`ctxonly --hold-ms 500\` (bench/memory/ctxonly.cu, nvcc $NVCCFLAGS: context + module, nothing allocated), measured the same way in this run, ${CTX_REPS} times under none and under \`kmux run --memory=lazy\`"
	echo "- (b) job mix under the daemon: bench/memory-mix.sh"
	if [ -n "$PIN" ]; then
		echo "- CPU pinning: every run under \`taskset -c $PIN\`"
	else
		echo "- CPU pinning: none"
	fi
	echo
} >"$MD"
"$PY" - "$CSV" >>"$MD" 2>>"$LOG" <<'EOF'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
apps = []
for r in rows:
    if r["app"] not in apps and r["app"] != "context":
        apps.append(r["app"])
def pct(new, old):
    if new is None or old is None or old <= 0:
        return None
    return 100.0 * (new - old) / old
def fmt_pct(v):
    return "n/a" if v is None else "%+.1f%%" % v
def vals(app, mode, key, rep=None):
    return [float(r["value"]) for r in rows if r["app"] == app and r["mode"] == mode
            and r["key"] == key and (rep is None or (r["rep"] == "0") == (rep == 0))]
def failed(app, mode, rep):
    return any(r for r in rows if r["app"] == app and r["mode"] == mode and r["key"] == "failed"
               and (r["rep"] == "0") == (rep == 0))
print("## (a) peak device memory (MiB)\n")
print("| app | none | lazy | evict (budget: half of lazy's managed peak, at least the largest object) | lazy vs none | evict vs none | evictions | kmux managed peak lazy (MiB) |")
print("|---|---|---|---|---|---|---|---|")
for a in apps:
    p = {m: vals(a, m, "peak_mib", 0) for m in ("none", "lazy", "evict-half")}
    if not p["none"]:
        continue
    base = p["none"][0]
    def cell(m):
        if failed(a, m, 0):
            return "FAILED"
        return "%.0f" % p[m][0] if p[m] else "n/a"
    def rel(m):
        if not p[m] or failed(a, m, 0):
            return "n/a"
        return fmt_pct(pct(p[m][0], base))
    ev = vals(a, "evict-half", "evictions", 0)
    kp = vals(a, "lazy", "kmux_peak_bytes", 0)
    print("| %s | %s | %s | %s | %s | %s | %s | %s |" % (a, cell("none"), cell("lazy"), cell("evict-half"),
          rel("lazy"), rel("evict-half"), "%.0f" % ev[0] if ev else "n/a",
          "%.0f" % (kp[0] / 1048576) if kp else "n/a"))

# The memory objects' figure: the whole-process peak less the context's
# own footprint, measured by ctxonly in this run (median per mode).
ctx = {}
for m in ("none", "kmux"):
    v = [float(r["value"]) for r in rows if r["app"] == "context" and r["mode"] == m
         and r["key"] == "peak_mib"]
    nf = sum(1 for r in rows if r["app"] == "context" and r["mode"] == m and r["key"] == "failed")
    ctx[m] = (statistics.median(v) if v and not nf else None, v, nf)
CTX_OF = {"none": "none", "lazy": "kmux", "evict-half": "kmux"}
def ctx_of(m):
    return ctx[CTX_OF.get(m, "kmux")][0]
def objects(a, m):
    # None where it cannot be told: the run failed, no peak, no context,
    # or a process whose context is not ctxonly's (PyTorch's libraries).
    pk = vals(a, m, "peak_mib", 0)
    c = ctx_of(m)
    if not pk or c is None or failed(a, m, 0) or a.startswith("torch"):
        return None
    return pk[0] - c
print("\n### Context footprint (measured in this run) and the memory objects' peak\n")
print("Rule: memory objects peak = whole-process peak - median context footprint of the matching mode "
      "(none's for none, kmux's for lazy and evict); the whole-process figure above is unchanged.\n")
print("| context under | median (MiB) | runs (MiB) | failed |")
print("|---|---|---|---|")
for m, name in (("none", "none (no kmux)"), ("kmux", "`kmux run --memory=lazy`")):
    med, v, nf = ctx[m]
    print("| %s | %s | %s | %d |" % (name, "n/a" if med is None else "%.0f" % med,
          " ".join("%.0f" % x for x in v) or "none", nf))
print("\n| app | objects none (MiB) | objects lazy (MiB) | objects evict (MiB) | objects lazy vs none | objects evict vs none |")
print("|---|---|---|---|---|---|")
for a in apps:
    if not vals(a, "none", "peak_mib", 0):
        continue
    o = {m: objects(a, m) for m in ("none", "lazy", "evict-half")}
    why = "n/a (context not ctxonly's)" if a.startswith("torch") else "n/a"
    print("| %s | %s | %s | %s | %s | %s |" % (a, *[why if o[m] is None else "%.0f" % o[m]
          for m in ("none", "lazy", "evict-half")], fmt_pct(pct(o["lazy"], o["none"])),
          fmt_pct(pct(o["evict-half"], o["none"]))))
print("\n### Issue 5's (a) target on both figures: at least 30% lower peak on programs with "
      "phase-local buffers, never higher (evict: the half-of-lazy budget)\n")
print("| app | whole process: lazy / evict vs none | whole process: evict >= 30% lower | whole process: never higher "
      "| memory objects: lazy / evict vs none | memory objects: evict >= 30% lower | memory objects: never higher |")
print("|---|---|---|---|---|---|---|")
def judge(r):
    lz, ev = r
    low = "n/a" if ev is None else ("yes" if ev <= -30.0 else "no")
    nh = "n/a" if lz is None or ev is None else ("yes" if lz <= 0.0 and ev <= 0.0 else "no")
    return "%s / %s" % (fmt_pct(lz), fmt_pct(ev)), low, nh
for a in apps:
    p = {m: vals(a, m, "peak_mib", 0) for m in ("none", "lazy", "evict-half")}
    if not p["none"]:
        continue
    whole = tuple(None if not p[m] or failed(a, m, 0) else pct(p[m][0], p["none"][0])
                  for m in ("lazy", "evict-half"))
    o = {m: objects(a, m) for m in ("none", "lazy", "evict-half")}
    obj = (pct(o["lazy"], o["none"]), pct(o["evict-half"], o["none"]))
    print("| %s | %s | %s | %s | %s | %s | %s |" % ((a,) + judge(whole) + judge(obj)))
sweep = [a for a in apps if any(r for r in rows if r["app"] == a and r["mode"].startswith("evict-sweep"))]
if sweep:
    print("\n## (a) budget sweep: evict at fixed fractions of lazy's managed peak (at least the largest object)\n")
    print("| app | budget | budget (MiB) | peak (MiB) | vs none | memory objects (MiB) | objects vs none | ROI ms | process wall ms | evictions |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for a in sweep:
        base = vals(a, "none", "peak_mib", 0)
        for q, name in ((4, "1/4"), (3, "1/3"), (2, "1/2")):
            m = "evict-sweep-q%d" % q
            bud = vals(a, "sweep-q%d" % q, "budget_mib", 0)
            if not bud:
                continue
            pk = vals(a, m, "peak_mib", 0)
            roi = vals(a, m, "roi_ms", 0)
            wall = vals(a, m, "wall_ms", 0)
            ev = vals(a, m, "evictions", 0)
            f = failed(a, m, 0)
            ob = objects(a, m)
            print("| %s | %s | %.0f | %s | %s | %s | %s | %s | %s | %s |" % (a, name, bud[0],
                  "FAILED" if f else ("%.0f" % pk[0] if pk else "n/a"),
                  fmt_pct(pct(pk[0] if pk and not f else None, base[0] if base else None)),
                  "n/a" if ob is None else "%.0f" % ob, fmt_pct(pct(ob, objects(a, "none"))),
                  "%.3f" % roi[0] if roi else "n/a", "%.0f" % wall[0] if wall else "n/a",
                  "%.0f" % ev[0] if ev else "n/a"))
print("\n## (c) cost with ample memory: median ROI ms (process wall ms), repeats\n")
import os
cmodes = os.environ.get("KMUX_MEMBENCH_MODES_LIST", "none quota lazy evict-ample").split()
label = {"evict-ample": "evict (1 TiB budget)", "lazy-b": "lazy, library B", "evict-ample-b": "evict, library B"}
others = [m for m in cmodes if m != "none"]
print("| app | reps | " + " | ".join(label.get(m, m) for m in cmodes) + " | " +
      " | ".join("%s vs none" % m for m in others) + " | failures |")
print("|---|---|" + "---|" * len(cmodes) + "---|" * len(others) + "---|")
# Per round: the ratio of a mode's ROI to none's in the same round (the
# process wall time for a program that reports no ROI), as (none, mode).
def round_pairs(a, m):
    out = []
    for r in sorted({x["rep"] for x in rows if x["app"] == a and x["rep"] != "0"}, key=int):
        for key in ("roi_ms", "wall_ms"):
            n = [float(x["value"]) for x in rows if x["app"] == a and x["mode"] == "none" and x["rep"] == r and x["key"] == key]
            v = [float(x["value"]) for x in rows if x["app"] == a and x["mode"] == m and x["rep"] == r and x["key"] == key]
            if n and v:
                break
        if n and v and n[0] > 0:
            out.append((n[0], v[0]))
    return out
# 95% interval of the ratio of medians, resampling rounds (fixed seed, so
# the report is reproducible from the csv).
import random
def boot_ci(pairs, reps=4000):
    rng = random.Random(1)
    k = len(pairs)
    est = []
    for _ in range(reps):
        s = [pairs[rng.randrange(k)] for _ in range(k)]
        est.append(statistics.median(v for _, v in s) / statistics.median(n for n, _ in s))
    est.sort()
    return est[int(0.025 * reps)], est[int(0.975 * reps) - 1]
ratio_lines = []
for a in apps:
    med, wall, nrep, nf = {}, {}, 0, 0
    for m in cmodes:
        v = vals(a, m, "roi_ms", 1)
        w = vals(a, m, "wall_ms", 1)
        med[m] = statistics.median(v) if v else None
        wall[m] = statistics.median(w) if w else None
        nrep = max(nrep, len(w))
        nf += sum(1 for r in rows if r["app"] == a and r["mode"] == m and r["key"] == "failed" and r["rep"] != "0")
    if not nrep:
        continue
    def c(m):
        return "%.3f (%.0f)" % (med[m], wall[m]) if med[m] is not None else ("n/a (%.0f)" % wall[m] if wall[m] else "n/a")
    def rel(m):
        return fmt_pct(pct(med[m], med.get("none")))
    print("| %s | %d | %s | %s | %d |" % (a, nrep, " | ".join(c(m) for m in cmodes),
          " | ".join(rel(m) for m in others), nf))
    for m in others:
        pp = round_pairs(a, m)
        rr = [v / n for n, v in pp]
        if len(rr) >= 2:
            lo, hi = boot_ci(pp)
            rom = statistics.median(v for _, v in pp) / statistics.median(n for n, _ in pp)
            ratio_lines.append("| %s | %s | %d | %s | %s .. %s | %s [%s, %s] |" % (a, m, len(rr),
                fmt_pct(100.0 * (statistics.median(rr) - 1)), fmt_pct(100.0 * (min(rr) - 1)),
                fmt_pct(100.0 * (max(rr) - 1)), fmt_pct(100.0 * (rom - 1)),
                fmt_pct(100.0 * (lo - 1)), fmt_pct(100.0 * (hi - 1))))
if ratio_lines:
    print("\nPer round (each mode against none in the same round): median and range of the ratios;")
    print("ratio of the medians with its 95% bootstrap interval over rounds\n")
    print("| app | mode | rounds | median | range | ratio of medians [95%] |")
    print("|---|---|---|---|---|---|")
    print("\n".join(ratio_lines))
print("\nTargets (issue 5): >= 30% lower peak on phase-local apps and never higher (both figures above); <= 3% slower with ample memory.")
print("Raw rows: memory.csv; every command and output tail: memory.log.")
EOF
log "memory: done in $(($(date +%s) - START))s, $FAILS failed runs; $MD"
[ "$FAILS" = 0 ]
