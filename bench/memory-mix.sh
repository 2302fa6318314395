#!/usr/bin/env bash
# memory-mix.sh - issue 5 (b): a memory-constrained job mix through kmuxd,
# with and without the memory manager.  ONE device call on an H200, from the
# repo root, after `make` and `bash bench/gpu/prepare.sh` here (build/
# carried):
#
#     bash bench/memory-mix.sh
#
# The mix: KMUX_MIX_COPIES (2) copies each of KMUX_MIX_APPS (phase_buffers
# mixed_pairs reductions image_pipeline), `APP plain --reps R --warmup 2`.
# Calibration: each app once under `kmux run --memory=lazy` (KMUX_LOG=info)
# gives its managed peak P and largest object L (what it needs, not a
# result of the mix).  The GPU is made small for admission with
# `kmux daemon --gpu-mem G`, G = KMUX_MIX_GPU_FRAC (0.5) of the sum of the
# tasks' needs under quota (so their sum exceeds the GPU by construction).
# Two runs, each with a fresh daemon (--busy-max 1000: memory alone
# decides admission), every task submitted at once
# (`kmux run`, all in the background):
#   quota: kmux run --mem Q -- APP, Q = P + 8 MiB (the quota it needs);
#   evict: kmux run --memory=evict --mem B -- APP, B = max(P/2, L) + 8 MiB
#          (a fixed rule: half the managed peak, at least the largest
#          object): the daemon admits it at B and B is its starting
#          budget.  A task that thrashes (restores most of what it
#          touches, src/preload/thrash.c) asks kmuxd to grow its budget to
#          what it has backed, granted at once where the GPU has room or
#          refused: each task's "budget grew N times to X" is in mix.log.
# Reported: makespan (first submit to last exit), the most tasks running at
# once (from the jobs' start/end times in `kmux ps --all --json`), failed
# tasks, each task's run time.  Throughput ratio = quota makespan / evict
# makespan (issue 5's target: >= 1.3).
#
# Output under $OUT: mix.log (every command, output tails), mix.csv
# (mode,task,key,value), mix.md (the table), ps-MODE.json, kmuxd-MODE.log.
# Budget: KMUX_MIX_BUDGET_S (default 280 s); a mode that would not fit is
# skipped and said so.  KMUX_MIX_DRY=1: no GPU; tests/e2e's `memory`
# program on tests/simcuda (KMUX_FAKE_GPUS) stands in for the apps, to
# check this script's logic.  Exit 0 when no task failed.
set -u
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1
export OUT=${OUT:-./out}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
START=$(date +%s)
BUDGET=${KMUX_MIX_BUDGET_S:-280}
export KMUX_BENCH_DEADLINE=$((START + BUDGET))
# shellcheck source=bench/gpu/lib.sh
. bench/gpu/lib.sh

LOG=$OUT/mix.log
CSV=$OUT/mix.csv
MD=$OUT/mix.md
: >"$LOG"
echo "mode,task,key,value" >"$CSV"
DRY=${KMUX_MIX_DRY:-0}
COPIES=${KMUX_MIX_COPIES:-2}
REPS=${KMUX_MIX_REPS:-60}
FRAC=${KMUX_MIX_GPU_FRAC:-0.5}
FAILS=0
B=$WORK/bin
MiB=1048576
mkdir -p "$B" "$WORK/mix"

csv() { echo "$1,$2,$3,$4" >>"$CSV"; }
kmuxp() { env "LD_LIBRARY_PATH=$KMUX_DEVLIBS${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$KMUX_BIN" "$@"; }

declare -a APPS=() CMDS=()
if [ "$DRY" = 1 ]; then
	export LD_LIBRARY_PATH=$ROOT/build/simcuda${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
	export E2E_MODULE=$ROOT/build/simcuda/kernels/basic.so
	export KMUX_FAKE_GPUS=1:4G
	APPS=(objects keep)
	CMDS=("$ROOT/build/tests/e2e/memory objects" "$ROOT/build/tests/e2e/memory keep")
else
	log "mix: $(uname -srm), $(nproc) CPUs; GPU: $(gpu_line); budget ${BUDGET}s"
	for app in ${KMUX_MIX_APPS:-phase_buffers mixed_pairs reductions image_pipeline}; do
		# shellcheck disable=SC2086
		if "$NVCC" $NVCCFLAGS -o "$B/$app" "bench/apps/$app.cu" >>"$LOG" 2>&1; then
			APPS+=("$app")
			CMDS+=("$B/$app plain --reps $REPS --warmup 2")
		else
			log "build: $app FAILED"
			FAILS=$((FAILS + 1))
		fi
	done
fi

# --------------------------------------------------------- calibration
declare -A NEED_Q NEED_E
for i in "${!APPS[@]}"; do
	app=${APPS[$i]}
	logq "\$ [calibrate $app] KMUX_LOG=info kmux run --memory=lazy -- ${CMDS[$i]}"
	# shellcheck disable=SC2086
	KMUX_LOG=info KMUX_REGISTER=0 timeout 120 env \
		"LD_LIBRARY_PATH=$KMUX_DEVLIBS${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
		"$KMUX_BIN" run --memory=lazy -- ${CMDS[$i]} >"$WORK/mix/cal" 2>&1
	rc=$?
	tail -n 3 "$WORK/mix/cal" | sed 's/^/    /' >>"$LOG"
	p=$(sed -n 's/.*resident (peak \([0-9]*\)).*/\1/p' "$WORK/mix/cal" | tail -n 1)
	l=$(sed -n 's/.*largest object \([0-9]*\) bytes.*/\1/p' "$WORK/mix/cal" | tail -n 1)
	if [ "$rc" != 0 ] || [ -z "$p" ]; then
		log "calibrate $app: FAILED (rc $rc); left out of the mix"
		FAILS=$((FAILS + 1))
		continue
	fi
	pm=$(((p + MiB - 1) / MiB))
	lm=$(((${l:-0} + MiB - 1) / MiB))
	half=$((pm / 2))
	[ "$half" -lt "$lm" ] && half=$lm
	NEED_Q[$app]=$((pm + 8))
	NEED_E[$app]=$((half + 8))
	csv calibrate "$app" managed_peak_mib "$pm"
	csv calibrate "$app" largest_mib "$lm"
	log "calibrate $app: managed peak ${pm} MiB, largest ${lm} MiB -> quota ${NEED_Q[$app]}M, evict ${NEED_E[$app]}M"
done

# The mix: COPIES of each calibrated app.
declare -a TASK_APP=() TASK_CMD=()
for ((c = 0; c < COPIES; c++)); do
	for i in "${!APPS[@]}"; do
		[ -n "${NEED_Q[${APPS[$i]}]:-}" ] || continue
		TASK_APP+=("${APPS[$i]}")
		TASK_CMD+=("${CMDS[$i]}")
	done
done
sumq=0
for a in "${TASK_APP[@]}"; do sumq=$((sumq + NEED_Q[$a])); done
GPU_MIB=$(awk -v s="$sumq" -v f="$FRAC" 'BEGIN { printf "%d", s * f }')
log "mix: ${#TASK_APP[@]} tasks, sum of quota needs ${sumq} MiB; kmux daemon --gpu-mem ${GPU_MIB}M"

# ------------------------------------------------------------ one mode
# mix MODE: a fresh daemon, every task at once, wait for all.
mix() {
	local mode=$1 d=$WORK/mix/$mode t0 t1 i need pids=() rc
	mkdir -p "$d/run" "$d/state"
	chmod 700 "$d/run" "$d/state"
	export KMUX_SOCKET=$d/run/sock KMUX_STATE_DIR=$d/state
	logq "\$ [$mode] kmux daemon --gpu-mem ${GPU_MIB}M --busy-max 1000"
	# Busyness never holds a task back here: memory alone decides.
	if ! kmuxp daemon --gpu-mem "${GPU_MIB}M" --busy-max 1000 >>"$LOG" 2>&1; then
		log "$mode: the daemon did not start"
		FAILS=$((FAILS + 1))
		return
	fi
	t0=$(date +%s%N)
	for i in "${!TASK_APP[@]}"; do
		if [ "$mode" = quota ]; then
			need=${NEED_Q[${TASK_APP[$i]}]}
			set -- run --mem "${need}M" -n "t$i-${TASK_APP[$i]}" --
		else
			need=${NEED_E[${TASK_APP[$i]}]}
			set -- run --memory=evict --mem "${need}M" -n "t$i-${TASK_APP[$i]}" --
		fi
		logq "\$ [$mode t$i] kmux $* ${TASK_CMD[$i]}"
		# shellcheck disable=SC2086
		(KMUX_LOG=info timeout 200 env \
			"LD_LIBRARY_PATH=$KMUX_DEVLIBS${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
			"$KMUX_BIN" "$@" ${TASK_CMD[$i]} >"$d/t$i.out" 2>&1
		 echo $? >"$d/t$i.rc"; date +%s%N >"$d/t$i.end") &
		pids+=($!)
	done
	wait "${pids[@]}"
	t1=$(date +%s%N)
	csv "$mode" all makespan_ms $(((t1 - t0) / 1000000))
	csv "$mode" all gpu_mem_mib "$GPU_MIB"
	for i in "${!TASK_APP[@]}"; do
		rc=$(cat "$d/t$i.rc" 2>/dev/null || echo 255)
		tail -n 4 "$d/t$i.out" | sed "s/^/    [$mode t$i] /" >>"$LOG"
		csv "$mode" "t$i-${TASK_APP[$i]}" rc "$rc"
		if [ "$rc" != 0 ] || grep -q "CHECK FAIL" "$d/t$i.out"; then
			log "$mode: task t$i (${TASK_APP[$i]}) FAILED (rc $rc)"
			FAILS=$((FAILS + 1))
			csv "$mode" "t$i-${TASK_APP[$i]}" failed 1
		fi
		v=$(sed -n 's/.* \([0-9]*\) evictions (.*/\1/p' "$d/t$i.out" | tail -n 1)
		[ -n "$v" ] && csv "$mode" "t$i-${TASK_APP[$i]}" evictions "$v"
		v=$(sed -n 's/.* budget grew \([0-9]*\) times .*/\1/p' "$d/t$i.out" | tail -n 1)
		[ -n "$v" ] && csv "$mode" "t$i-${TASK_APP[$i]}" budget_grows "$v"
	done
	kmuxp ps --all --json >"$OUT/ps-$mode.json" 2>>"$LOG"
	cp "$d/state/kmuxd.log" "$OUT/kmuxd-$mode.log" 2>/dev/null
	kill "$(cat "$KMUX_SOCKET.lock" 2>/dev/null)" 2>/dev/null
	sleep 0.5
	log "$mode: makespan $(((t1 - t0) / 1000000)) ms ($(time_left)s left)"
}

if [ "${#TASK_APP[@]}" -eq 0 ]; then
	log "mix: no task calibrated; nothing to run"
else
	for mode in quota evict; do
		# A mode takes at most the tasks' time in sequence; stop rather
		# than be killed half way.
		have_time 60 || { log "$mode: SKIP (out of time)"; continue; }
		mix "$mode"
	done
fi

# ------------------------------------------------------------ report
"$PY" - "$CSV" "$OUT" >"$MD" 2>>"$LOG" <<'EOF'
import csv, json, os, sys
rows = list(csv.DictReader(open(sys.argv[1])))
out = sys.argv[2]
def get(mode, task, key):
    return [r["value"] for r in rows if r["mode"] == mode and r["task"] == task and r["key"] == key]
print("# kmux memory manager (issue 5 (b)): bench/memory-mix.sh\n")
print("Every task submitted at once to a fresh kmuxd whose GPU is capped with --gpu-mem;")
print("quota: `kmux run --mem P+8M` (P: managed peak from a lazy calibration run);")
print("evict: `kmux run --memory=evict --mem max(P/2, largest object)+8M`.\n")
cal = [r for r in rows if r["mode"] == "calibrate"]
apps = sorted({r["task"] for r in cal})
print("| app | managed peak (MiB) | largest object (MiB) |")
print("|---|---|---|")
for a in apps:
    print("| %s | %s | %s |" % (a, (get("calibrate", a, "managed_peak_mib") or ["?"])[0],
                               (get("calibrate", a, "largest_mib") or ["?"])[0]))
print("\n| mode | GPU cap (MiB) | tasks | most running at once | makespan (s) | failed | evictions | budget growths |")
print("|---|---|---|---|---|---|---|---|")
span = {}
for mode in ("quota", "evict"):
    ms = get(mode, "all", "makespan_ms")
    if not ms:
        print("| %s | - | - | - | not run | - | - | - |" % mode)
        continue
    span[mode] = float(ms[0]) / 1000.0
    tasks = sorted({r["task"] for r in rows if r["mode"] == mode and r["task"] != "all" and r["key"] == "rc"})
    failed = sum(1 for t in tasks if get(mode, t, "failed"))
    ev = sum(int(v) for t in tasks for v in get(mode, t, "evictions"))
    gr = sum(int(v) for t in tasks for v in get(mode, t, "budget_grows"))
    most = "?"
    try:
        jobs = json.load(open(os.path.join(out, "ps-%s.json" % mode)))
        iv = [(j["start_us"], j["end_us"]) for j in jobs if j.get("start_us") and j.get("end_us")]
        pts = sorted([(s, 1) for s, e in iv] + [(e, -1) for s, e in iv], key=lambda p: (p[0], p[1]))
        cur = best = 0
        for _, d in pts:
            cur += d
            best = max(best, cur)
        most = str(best)
    except Exception as e:
        most = "? (%s)" % e
    print("| %s | %s | %d | %s | %.1f | %d | %d | %d |" % (mode, get(mode, "all", "gpu_mem_mib")[0], len(tasks),
          most, span[mode], failed, ev, gr))
if "quota" in span and "evict" in span and span["evict"] > 0:
    print("\nThroughput evict vs quota (quota makespan / evict makespan): %.2fx (issue 5 target: >= 1.3x)"
          % (span["quota"] / span["evict"]))
print("\nRaw rows: mix.csv; commands and output tails: mix.log; job records: ps-MODE.json.")
EOF
log "mix: done in $(($(date +%s) - START))s, $FAILS failures; $MD"
[ "$FAILS" = 0 ]
