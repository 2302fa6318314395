#!/usr/bin/env bash
# memory-mix.sh - issue 5 (b): memory-constrained job mixes through kmuxd,
# with and without the memory manager.  ONE device call on an H200, from the
# repo root, after `make` and `bash bench/gpu/prepare.sh` here (build/
# carried):
#
#     OUT=$OUT/mix KMUX_MIX_BUDGET_S=280 bash bench/memory-mix.sh
#
# Three mixes (KMUX_MIX_SETS, default "staged apps", run in the order given;
# each its own calibration, daemons and table, one exit status for all):
#   staged  KMUX_MIX_STAGED_COPIES (4) copies of bench/memory/staged.cu
#           (`staged plain KMUX_MIX_STAGED_ARGS`, default: its own defaults,
#           3 stages of 512 MiB weights, 32768 batch-1 requests each): a
#           pipeline that keeps every stage's weights resident but uses
#           them one stage after another, so all but one stage's weights
#           are idle at any time (what eviction is for).
#   apps    KMUX_MIX_COPIES (2) copies each of KMUX_MIX_APPS (phase_buffers
#           mixed_pairs reductions image_pipeline), `APP plain --reps R
#           --warmup 2`: programs that touch every buffer in every
#           repetition (bench/results/memory.md run 2: 0.12x).
#   torch   KMUX_MIX_TORCH_COPIES (4) copies of bench/memory/pipeline.py
#           (`$PY pipeline.py KMUX_MIX_TORCH_ARGS`, default: its own
#           defaults, three torchvision models in bfloat16 run one after
#           another over 500 batches of 8): staged's idle weights in a
#           program that waits for the GPU tens of times a second, not
#           tens of thousands, so copies sharing a GPU by time slicing
#           lose little to context switches (bench/results/share.md).
#           Needs torch and torchvision in $PY (else the mix is skipped).
# staged comes first so that the new mix gets its time even when the apps'
# evict mode runs long.
#
# The same fixed rule for both mixes, never tuned per program:
# calibration: each app once under `kmux run --memory=lazy` (KMUX_LOG=info)
# gives its managed peak P and largest object L (what it needs, not a
# result of the mix).  The GPU is made small for admission with
# `kmux daemon --gpu-mem G`, G = KMUX_MIX_GPU_FRAC (0.5) of the sum of the
# tasks' needs under quota (so their sum exceeds the GPU by construction).
# kmuxd admits up to 95% of G (its default headroom), so with 4 staged
# copies the quota mode runs one at a time (1.9 quota needs fit) and the
# evict mode three (3.8 evict needs fit): the cap binds both, differently.
# Two runs per mix, each with a fresh daemon (--busy-max 1000: memory alone
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
#          Its exit line also says what share of the bytes it touched was
#          restored over the run and whether that thrashed (>= 1/64):
#          mix.csv's restore_div (N of 1/N) and run_thrashed (0/1); kmuxd
#          learns a thrashed run's working set for KMUX_MIX_LEARN=1.
# Reported: makespan (first submit to last exit), the most tasks running at
# once (from the jobs' start/end times in `kmux ps --all --json`), failed
# tasks, each task's run time.  Throughput ratio = quota makespan / evict
# makespan (issue 5's target: >= 1.3).
#
# KMUX_MIX_MPS=1 adds two modes per mix, run after those two: evict-mps and
# quota-mps, the same with `kmux daemon --mps` (kmuxd's private MPS control
# daemon; every task an MPS client, so co-located tasks share each GPU
# instead of time-slicing between their contexts).  KMUX_MIX_MPS_CONTROL:
# its nvidia-cuda-mps-control (default: kmuxd's lookup, PATH then
# /usr/local/nvidia/bin; under KMUX_MIX_DRY a stand-in script).
#
# Output under $OUT: mix.log (every command, output tails), mix.csv
# (set,mode,task,key,value), mix.md (one table per mix), ps-SET-MODE.json,
# kmuxd-SET-MODE.log.  Budget: KMUX_MIX_BUDGET_S (default 280 s; expected
# use about 150 s: staged about 50, apps about 100); a mode that would not
# fit is skipped and said so.  KMUX_MIX_DRY=1: no GPU; tests/e2e's `memory`
# program on tests/simcuda (KMUX_FAKE_GPUS) stands in (`memory objects`,
# `memory keep` for apps; `memory staged 3 200` for staged), to check this
# script's logic (tests/e2e/t74-memory-staged.sh runs it).  Exit 0 when no
# task failed in any mix.
#
# KMUX_MIX_KMUXD_ARGS: more options for every kmux daemon of the run (an
# A/B of a daemon setting, e.g. "--slice-waits 0": wait-bound tasks and
# their turns off).
#
# KMUX_MIX_LEARN=1: before each evict mode's measured run, a learning pass:
# the same mode once, on the daemon state (database) the measured run then
# uses, so kmuxd has learned each app's profile, including the working set
# of a task that thrashed (docs/design-daemon.md, "Evict mode: learned
# working sets"); the measured run admits such tasks at it.  Quota modes
# run with declared sizes and have nothing to learn: no pass.  Its rows
# are mode MODE-learn in mix.csv, its logs kmuxd-SET-MODE-learn.log; the
# report says whether a pass ran.  Under KMUX_MIX_DRY, KMUX_MIX_DRY_APPS
# picks the apps mix's `memory` commands (objects, keep, cycle: four
# 4 MiB objects all touched every round, which thrashes under evict) and
# KMUX_MIX_MARGIN_MIB (default 8) the margin added to each need: at the
# dry scale 8 MiB would hold every working set.
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
echo "set,mode,task,key,value" >"$CSV"
DRY=${KMUX_MIX_DRY:-0}
SETS=${KMUX_MIX_SETS:-staged apps}
REPS=${KMUX_MIX_REPS:-60}
FRAC=${KMUX_MIX_GPU_FRAC:-0.5}
MODES="quota evict"
LEARN=${KMUX_MIX_LEARN:-0}
MARGIN=${KMUX_MIX_MARGIN_MIB:-8}
MPS=${KMUX_MIX_MPS:-0}
MPS_CONTROL=${KMUX_MIX_MPS_CONTROL:-}
[ "$MPS" = 1 ] && MODES="$MODES evict-mps quota-mps"
# KMUX_MIX_MODES: run only these modes, in this order (e.g. "quota-mps
# evict-mps": the like-for-like pair, without the 50 s evict-without-MPS).
if [ -n "${KMUX_MIX_MODES:-}" ]; then
    for m in $KMUX_MIX_MODES; do
        case " quota evict evict-mps quota-mps " in
        *" $m "*) ;;
        *) echo "memory-mix: unknown mode '$m' in KMUX_MIX_MODES" >&2; exit 2 ;;
        esac
        case "$m" in *-mps) MPS=1 ;; esac
    done
    MODES=$KMUX_MIX_MODES
fi
FAILS=0
B=$WORK/bin
MiB=1048576
mkdir -p "$B" "$WORK/mix"

csv() { echo "$1,$2,$3,$4,$5" >>"$CSV"; }
kmuxp() { env "LD_LIBRARY_PATH=$KMUX_DEVLIBS${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$KMUX_BIN" "$@"; }

for set in $SETS; do
	case $set in
	apps | staged | torch) ;;
	*) log "KMUX_MIX_SETS: unknown mix '$set' (apps, staged, torch)"; exit 2 ;;
	esac
done

# ------------------------------------------------------------- the apps
# Per mix: its apps and how many copies of each; per app its command.
declare -A SET_APPS SET_COPIES APP_CMD
if [ "$DRY" = 1 ]; then
	export LD_LIBRARY_PATH=$ROOT/build/simcuda${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
	export E2E_MODULE=$ROOT/build/simcuda/kernels/basic.so
	export KMUX_FAKE_GPUS=1:4G
	SET_APPS[apps]=${KMUX_MIX_DRY_APPS:-objects keep}
	APP_CMD[objects]="$ROOT/build/tests/e2e/memory objects"
	APP_CMD[keep]="$ROOT/build/tests/e2e/memory keep"
	APP_CMD[cycle]="$ROOT/build/tests/e2e/memory cycle 40"
	SET_APPS[staged]="staged"
	APP_CMD[staged]="$ROOT/build/tests/e2e/memory staged 3 200"
	# the torch mix's stand-in: the same phase-major shape
	SET_APPS[torch]="pipeline"
	APP_CMD[pipeline]="$ROOT/build/tests/e2e/memory staged 3 200"
	if [ "$MPS" = 1 ] && [ -z "$MPS_CONTROL" ]; then
		MPS_CONTROL=$ROOT/bench/gpu/mps-control-stub.sh
	fi
else
	log "mix: $(uname -srm), $(nproc) CPUs; GPU: $(gpu_line); budget ${BUDGET}s; mixes: $SETS"
	SET_APPS[apps]=${KMUX_MIX_APPS:-phase_buffers mixed_pairs reductions image_pipeline}
	for app in ${SET_APPS[apps]}; do
		APP_CMD[$app]="$B/$app plain --reps $REPS --warmup 2"
	done
	SET_APPS[staged]="staged"
	APP_CMD[staged]="$B/staged plain ${KMUX_MIX_STAGED_ARGS:-}"
	SET_APPS[torch]="pipeline"
	APP_CMD[pipeline]="$PY $ROOT/bench/memory/pipeline.py ${KMUX_MIX_TORCH_ARGS:-}"
	case " $SETS " in
	*" torch "*)
		check_stacks
		[ "$HAVE_TORCH" = 1 ] || log "torch: $WHY_TORCH; that mix is skipped" ;;
	esac
	# Build what the chosen mixes run, in parallel.
	pids=()
	for set in $SETS; do
		[ "$set" = torch ] && continue
		for app in ${SET_APPS[$set]}; do
			src=bench/apps/$app.cu
			[ "$app" = staged ] && src=bench/memory/staged.cu
			logq "\$ $NVCC $NVCCFLAGS -o $B/$app $src"
			# shellcheck disable=SC2086
			"$NVCC" $NVCCFLAGS -o "$B/$app" "$src" >"$WORK/mix/build-$app.log" 2>&1 &
			pids+=($!)
		done
	done
	wait "${pids[@]}"
	cat "$WORK"/mix/build-*.log >>"$LOG" 2>/dev/null
fi
SET_COPIES[apps]=${KMUX_MIX_COPIES:-2}
SET_COPIES[staged]=${KMUX_MIX_STAGED_COPIES:-4}
SET_COPIES[torch]=${KMUX_MIX_TORCH_COPIES:-4}

# --------------------------------------------------------- calibration
# calibrate SET APP: NEED_Q[APP] and NEED_E[APP] from one lazy run;
# status 1 when it cannot be calibrated (left out of the mix).
declare -A NEED_Q NEED_E
calibrate() {
	local set=$1 app=$2 rc p l pm lm half
	if [ "$DRY" != 1 ] && [ "$set" = torch ] && [ "$HAVE_TORCH" != 1 ]; then
		log "$set: $app needs torch; left out of the mix"
		return 1
	fi
	if [ "$DRY" != 1 ] && [ "$set" != torch ] && [ ! -x "$B/$app" ]; then
		log "build: $app FAILED; left out of the $set mix"
		FAILS=$((FAILS + 1))
		return 1
	fi
	logq "\$ [$set: calibrate $app] KMUX_LOG=info kmux run --memory=lazy -- ${APP_CMD[$app]}"
	# shellcheck disable=SC2086
	KMUX_LOG=info KMUX_REGISTER=0 timeout 120 env \
		"LD_LIBRARY_PATH=$KMUX_DEVLIBS${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
		"$KMUX_BIN" run --memory=lazy -- ${APP_CMD[$app]} >"$WORK/mix/cal" 2>&1
	rc=$?
	tail -n 8 "$WORK/mix/cal" | sed 's/^/    /' >>"$LOG"
	p=$(sed -n 's/.*resident (peak \([0-9]*\)).*/\1/p' "$WORK/mix/cal" | tail -n 1)
	l=$(sed -n 's/.*largest object \([0-9]*\) bytes.*/\1/p' "$WORK/mix/cal" | tail -n 1)
	if [ "$rc" != 0 ] || [ -z "$p" ] || grep -q "CHECK FAIL" "$WORK/mix/cal"; then
		log "$set: calibrate $app: FAILED (rc $rc); left out of the mix"
		FAILS=$((FAILS + 1))
		return 1
	fi
	pm=$(((p + MiB - 1) / MiB))
	lm=$(((${l:-0} + MiB - 1) / MiB))
	half=$((pm / 2))
	[ "$half" -lt "$lm" ] && half=$lm
	NEED_Q[$app]=$((pm + MARGIN))
	NEED_E[$app]=$((half + MARGIN))
	csv "$set" calibrate "$app" managed_peak_mib "$pm"
	csv "$set" calibrate "$app" largest_mib "$lm"
	log "$set: calibrate $app: managed peak ${pm} MiB, largest ${lm} MiB -> quota ${NEED_Q[$app]}M, evict ${NEED_E[$app]}M"
}

# ------------------------------------------------------------ one mode
# mix SET MODE [learn]: a daemon capped at GPU_MIB, every task of TASK_APP
# submitted at once, wait for all.  The daemon's state (its database) is
# fresh unless a learning pass (third argument "learn") ran before: the
# measured run then starts on what that pass learned.
mix() {
	local set=$1 mode=$2 d=$WORK/mix/$1-$2 t0 t1 i need pids=() rc v tag
	local base=${2%-mps} dargs=() p pass=${3:-} cm o
	cm=$mode${pass:+-$pass}
	o=$d/${pass:-measured}
	mkdir -p "$d/run" "$d/state" "$o"
	chmod 700 "$d/run" "$d/state"
	export KMUX_SOCKET=$d/run/sock KMUX_STATE_DIR=$d/state
	if [ "$base" != "$mode" ]; then
		dargs=(--mps)
		[ -n "$MPS_CONTROL" ] && dargs+=(--mps-control "$MPS_CONTROL")
	fi
	# shellcheck disable=SC2206  # words, as given
	dargs+=(${KMUX_MIX_KMUXD_ARGS:-})
	logq "\$ [$set $cm] kmux daemon --gpu-mem ${GPU_MIB}M --busy-max 1000${dargs[*]:+ ${dargs[*]}}"
	# Busyness never holds a task back here: memory alone decides.
	if ! kmuxp daemon --gpu-mem "${GPU_MIB}M" --busy-max 1000 "${dargs[@]}" >>"$LOG" 2>&1; then
		log "$set $cm: the daemon did not start"
		FAILS=$((FAILS + 1))
		return
	fi
	t0=$(date +%s%N)
	for i in "${!TASK_APP[@]}"; do
		if [ "$base" = quota ]; then
			need=${NEED_Q[${TASK_APP[$i]}]}
			set -- run --mem "${need}M" -n "t$i-${TASK_APP[$i]}" --
		else
			need=${NEED_E[${TASK_APP[$i]}]}
			set -- run --memory=evict --mem "${need}M" -n "t$i-${TASK_APP[$i]}" --
		fi
		logq "\$ [$set $cm t$i] kmux $* ${APP_CMD[${TASK_APP[$i]}]}"
		# shellcheck disable=SC2086
		(KMUX_LOG=info timeout 200 env \
			"LD_LIBRARY_PATH=$KMUX_DEVLIBS${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
			"$KMUX_BIN" "$@" ${APP_CMD[${TASK_APP[$i]}]} >"$o/t$i.out" 2>&1
		 echo $? >"$o/t$i.rc"; date +%s%N >"$o/t$i.end") &
		pids+=($!)
	done
	wait "${pids[@]}"
	t1=$(date +%s%N)
	csv "$set" "$cm" all makespan_ms $(((t1 - t0) / 1000000))
	csv "$set" "$cm" all gpu_mem_mib "$GPU_MIB"
	[ "$pass" != learn ] && [ -d "$d/learn" ] && csv "$set" "$cm" all learned 1
	for i in "${!TASK_APP[@]}"; do
		tag=t$i-${TASK_APP[$i]}
		rc=$(cat "$o/t$i.rc" 2>/dev/null || echo 255)
		grep -v '^STAGE ' "$o/t$i.out" | tail -n 5 | sed "s/^/    [$set $cm t$i] /" >>"$LOG"
		csv "$set" "$cm" "$tag" rc "$rc"
		if [ "$rc" != 0 ] || grep -q "CHECK FAIL" "$o/t$i.out"; then
			log "$set $cm: task t$i (${TASK_APP[$i]}) FAILED (rc $rc)"
			FAILS=$((FAILS + 1))
			csv "$set" "$cm" "$tag" failed 1
		fi
		v=$(sed -n 's/.* \([0-9]*\) evictions (.*/\1/p' "$o/t$i.out" | tail -n 1)
		[ -n "$v" ] && csv "$set" "$cm" "$tag" evictions "$v"
		v=$(sed -n 's/.* \([0-9]*\) restores (.*/\1/p' "$o/t$i.out" | tail -n 1)
		[ -n "$v" ] && csv "$set" "$cm" "$tag" restores "$v"
		v=$(sed -n 's/.* budget grew \([0-9]*\) times .*/\1/p' "$o/t$i.out" | tail -n 1)
		[ -n "$v" ] && csv "$set" "$cm" "$tag" budget_grows "$v"
		# evict: the whole run's restored share of touched bytes (1/N) and
		# the preload's verdict (thrash.h, THRASH_RUN_DIV)
		v=$(sed -n 's/.* touched bytes (1\/\([0-9]*\)): .*/\1/p' "$o/t$i.out" | tail -n 1)
		[ -n "$v" ] && csv "$set" "$cm" "$tag" restore_div "$v"
		v=$(sed -n 's/.* touched bytes ([^)]*): thrashed$/1/p; s/.* touched bytes ([^)]*): did not thrash$/0/p' \
			"$o/t$i.out" | tail -n 1)
		[ -n "$v" ] && csv "$set" "$cm" "$tag" run_thrashed "$v"
		# the app's own ROI (bench/apps RESULT line), and its result
		v=$(sed -n 's/^RESULT .* ms=\([0-9.]*\) wall_ms.*/\1/p' "$o/t$i.out" | tail -n 1)
		[ -n "$v" ] && csv "$set" "$cm" "$tag" roi_ms "$v"
		v=$(sed -n 's/^CHECKSUM .* value=\(0x[0-9a-f]*\).*/\1/p; s/^staged check=\(0x[0-9a-f]*\).*/\1/p' \
			"$o/t$i.out" | tail -n 1)
		[ -n "$v" ] && csv "$set" "$cm" "$tag" checksum "$v"
	done
	kmuxp ps --all --json >"$OUT/ps-$set-$cm.json" 2>>"$LOG"
	# kmuxd --mps quits its MPS daemon on the way out: wait for that, so
	# the next mode starts on a GPU with no MPS server left.
	p=$(cat "$KMUX_SOCKET.lock" 2>/dev/null)
	if [ -n "$p" ] && kill "$p" 2>/dev/null; then
		for i in $(seq 150); do
			kill -0 "$p" 2>/dev/null || break
			sleep 0.1
		done
	fi
	sleep 0.5
	# After a learning pass the log holds both passes (one state dir).
	cp "$d/state/kmuxd.log" "$OUT/kmuxd-$set-$cm.log" 2>/dev/null
	if [ -d "$KMUX_SOCKET.mps/log" ]; then
		tail -n 20 "$KMUX_SOCKET.mps/log"/*.log 2>/dev/null |
			sed "s/^/    [$set $cm mps] /" >>"$LOG"
	fi
	log "$set $cm: makespan $(((t1 - t0) / 1000000)) ms ($(time_left)s left)"
}

# ------------------------------------------------------------ the mixes
declare -a TASK_APP=()
GPU_MIB=0
for set in $SETS; do
	have_time 60 || { log "$set: SKIP (out of time before calibration)"; continue; }
	cal=()
	for app in ${SET_APPS[$set]}; do
		calibrate "$set" "$app" && cal+=("$app")
	done
	# The mix: COPIES of each calibrated app.
	TASK_APP=()
	if [ "${#cal[@]}" -gt 0 ]; then
		for ((c = 0; c < SET_COPIES[$set]; c++)); do TASK_APP+=("${cal[@]}"); done
	fi
	if [ "${#TASK_APP[@]}" -eq 0 ]; then
		log "$set: no task calibrated; nothing to run"
		continue
	fi
	sumq=0
	for a in "${TASK_APP[@]}"; do sumq=$((sumq + NEED_Q[$a])); done
	GPU_MIB=$(awk -v s="$sumq" -v f="$FRAC" 'BEGIN { printf "%d", s * f }')
	log "$set: ${#TASK_APP[@]} tasks, sum of quota needs ${sumq} MiB; kmux daemon --gpu-mem ${GPU_MIB}M"
	for mode in $MODES; do
		# A mode takes at most the tasks' time in sequence; stop rather
		# than be killed half way.
		have_time 60 || { log "$set $mode: SKIP (out of time)"; continue; }
		if [ "$LEARN" = 1 ] && [ "${mode%-mps}" = evict ]; then
			mix "$set" "$mode" learn
			have_time 60 || { log "$set $mode: SKIP after its learning pass (out of time)"; continue; }
		fi
		mix "$set" "$mode"
	done
done

# ------------------------------------------------------------ report
"$PY" - "$CSV" "$OUT" "$SETS" "$MODES" "$MARGIN" >"$MD" 2>>"$LOG" <<'EOF'
import csv, json, os, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
out = sys.argv[2]
sets = sys.argv[3].split()
modes = sys.argv[4].split()
margin = sys.argv[5]
about = {
    "staged": "copies of bench/memory/staged.cu: every stage's weights resident, "
              "used one stage after another, so most objects sit idle",
    "apps": "copies of bench/apps programs that touch every buffer in every repetition",
    "torch": "copies of bench/memory/pipeline.py: several PyTorch models resident, "
             "run one after another, a host read per batch",
}
def get(s, mode, task, key):
    return [r["value"] for r in rows
            if r["set"] == s and r["mode"] == mode and r["task"] == task and r["key"] == key]
print("# kmux memory manager (issue 5 (b)): bench/memory-mix.sh\n")
print("Every task submitted at once to a fresh kmuxd whose GPU is capped with --gpu-mem")
print("(a fraction of the sum of the tasks' quota needs; kmuxd admits up to 95% of it);")
print("quota: `kmux run --mem P+%sM` (P: managed peak from a lazy calibration run);" % margin)
print("evict: `kmux run --memory=evict --mem max(P/2, largest object)+%sM`." % margin)
print("The same rule for every mix.")
learned = sorted({(r["set"], r["mode"]) for r in rows if r["key"] == "learned"})
if learned:
    print("\nLearning pass (KMUX_MIX_LEARN=1): before each evict mode's measured run, the same")
    print("mode ran once on the kmuxd database the measured run then used (its rows: MODE-learn),")
    print("so tasks that thrashed there were admitted at their learned working set: " +
          ", ".join("%s %s" % sm for sm in learned) + ".")
else:
    print("\nNo learning pass: every run started on a fresh kmuxd database (KMUX_MIX_LEARN unset).")
if any(m.endswith("-mps") for m in modes):
    print("quota-mps, evict-mps: the same under `kmux daemon --mps` (every task a client of")
    print("kmuxd's private MPS control daemon; memory limits still the preload's).")
for s in sets:
    print("\n## mix: %s (%s)\n" % (s, about.get(s, "")))
    apps = sorted({r["task"] for r in rows if r["set"] == s and r["mode"] == "calibrate"})
    if not apps:
        print("Not run (no app calibrated, or out of time): see mix.log.")
        continue
    print("| app | managed peak (MiB) | largest object (MiB) |")
    print("|---|---|---|")
    for a in apps:
        print("| %s | %s | %s |" % (a, (get(s, "calibrate", a, "managed_peak_mib") or ["?"])[0],
                                   (get(s, "calibrate", a, "largest_mib") or ["?"])[0]))
    print("\n| mode | GPU cap (MiB) | tasks | most running at once | makespan (s) | failed "
          "| evictions | restores | budget growths | median RESULT ms |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    span, sums = {}, {}
    for mode in [x for m in modes for x in ([m + "-learn"] if get(s, m + "-learn", "all", "makespan_ms") else []) + [m]]:
        ms = get(s, mode, "all", "makespan_ms")
        if not ms:
            print("| %s | - | - | - | not run | - | - | - | - | - |" % mode)
            continue
        span[mode] = float(ms[0]) / 1000.0
        tasks = sorted({r["task"] for r in rows if r["set"] == s and r["mode"] == mode
                        and r["task"] != "all" and r["key"] == "rc"})
        failed = sum(1 for t in tasks if get(s, mode, t, "failed"))
        tot = lambda k: sum(int(v) for t in tasks for v in get(s, mode, t, k))
        rois = [float(v) for t in tasks for v in get(s, mode, t, "roi_ms")]
        for t in tasks:
            for v in get(s, mode, t, "checksum"):
                sums.setdefault(t.split("-", 1)[1], set()).add(v)
        most = "?"
        try:
            jobs = json.load(open(os.path.join(out, "ps-%s-%s.json" % (s, mode))))
            # After a learning pass the database also holds that pass's jobs.
            lp = os.path.join(out, "ps-%s-%s-learn.json" % (s, mode))
            if os.path.exists(lp):
                seen = {j["id"] for j in json.load(open(lp))}
                jobs = [j for j in jobs if j["id"] not in seen]
            iv = [(j["start_us"], j["end_us"]) for j in jobs if j.get("start_us") and j.get("end_us")]
            pts = sorted([(a, 1) for a, e in iv] + [(e, -1) for a, e in iv], key=lambda p: (p[0], p[1]))
            cur = best = 0
            for _, d in pts:
                cur += d
                best = max(best, cur)
            most = str(best)
        except Exception as e:
            most = "? (%s)" % e
        print("| %s | %s | %d | %s | %.1f | %d | %d | %d | %d | %s |" % (
              mode, get(s, mode, "all", "gpu_mem_mib")[0], len(tasks), most, span[mode],
              failed, tot("evictions"), tot("restores"), tot("budget_grows"),
              "%.1f" % statistics.median(rois) if rois else "-"))
    if sums:
        diff = sorted(a for a, v in sums.items() if len(v) > 1)
        print("\nChecksums: " + ("every run of each app gave the same one." if not diff else
              "DIFFER between runs of " + ", ".join(diff) + "."))
    if "quota" in span and "evict" in span and span["evict"] > 0:
        print("\nThroughput evict vs quota (quota makespan / evict makespan): %.2fx "
              "(issue 5 target: >= 1.3x)" % (span["quota"] / span["evict"]))
    for m in modes:
        if m.endswith("-mps") and "quota" in span and span.get(m, 0) > 0:
            print("\nThroughput %s vs quota (quota makespan / %s makespan): %.2fx"
                  % (m, m, span["quota"] / span[m]))
    if span.get("quota-mps", 0) > 0 and span.get("evict-mps", 0) > 0:
        print("\nThroughput evict-mps vs quota-mps, like for like (quota-mps makespan / "
              "evict-mps makespan): %.2fx" % (span["quota-mps"] / span["evict-mps"]))
print("\nRESULT ms is each task's own ROI as it prints it: staged and pipeline, its")
print("whole run (all stages or models); a bench/apps program, the median of its repetitions.")
print("\nRaw rows: mix.csv; commands and output tails: mix.log; job records: ps-SET-MODE.json.")
EOF
log "mix: done in $(($(date +%s) - START))s, $FAILS failures; $MD"
[ "$FAILS" = 0 ]
