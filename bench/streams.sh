#!/usr/bin/env bash
# streams.sh - issue 3's measurement: kmux's stream scheduler against the
# default stream and against hand-written streams, on the bench/apps suite.
#
# Run on the GPU machine from the repo root (build/ from `make` and
# `bash bench/gpu/prepare.sh` carried, as for bench/gpu/run-all.sh):
#
#     bash bench/streams.sh
#
# 1. Builds bench/apps/*.cu with the machine's nvcc (-arch=sm_90 -O2) into a
#    scratch folder under /tmp (removed at exit).
# 2. kmux verify --streams 8 on every app and on each PyTorch program (the
#    plain version; exit 0 = identical device-to-host results).
# 3. Rounds: each round runs every app once in every mode, the modes in a
#    rotated order (round r starts at mode r), each run a fresh process:
#      plain        APP plain            (default stream, program order)
#      kmuxN        kmux run --streams N -- APP plain, N in 2 4 8 16
#                   (or KMUX_STREAMS=N LD_PRELOAD=build/libkmux.so APP plain
#                   when `kmux run` is not available; KMUX_STREAMS_LAUNCH)
#      saN          kmux run --streams N --stream-alloc -- APP plain
#                   (cuMemAlloc/cuMemFree stream-ordered on a kmux pool;
#                   KMUX_STREAM_ALLOC=1 with the preload), N in
#                   KMUX_STREAMS_SA_NS, only for the apps in
#                   KMUX_STREAMS_SA_APPS (default phase_buffers)
#      roN          KMUX_PTX_READONLY=1 kmux run --streams N -- APP plain
#                   (kernel parameters proven read-only from the PTX: kmux's
#                   default, made explicit), N in KMUX_STREAMS_RO_NS (default
#                   empty: no roN modes).  Without roN modes kmuxN and saN
#                   run as shipped (the proof on, unless the caller set
#                   KMUX_PTX_READONLY=0); with them, kmuxN and saN run with
#                   KMUX_PTX_READONLY=0, so roN vs kmuxN is a side-by-side
#                   A/B of the proof (and roN, not kmuxN, is kmux as shipped)
#      extN         KMUX_PTX_READONLY=1 KMUX_PTX_EXTENTS=1 kmux run --streams N
#                   -- APP plain (the proof with exact extents of
#                   constant-offset pointers: kmux's default, made
#                   explicit), N in KMUX_STREAMS_EXT_NS (default empty).
#                   With extN modes, kmuxN and saN run with
#                   KMUX_PTX_EXTENTS=0 (and roN too, when both are asked
#                   for: kmuxN, roN, extN then add one thing each), so extN
#                   vs kmuxN is a side-by-side A/B of the extents
#      expert       APP expert           (hand-written streams and events)
#    The two PyTorch programs run in one process per mode
#    (bench/apps/py/torch_suite.py) to pay PyTorch's start-up once.
#    KMUX_LOG=info is set for the kmux runs so the preload can report
#    "kmux: streams: issued W waits, pruned P" (n/a when it does not).
# 4. Report: per app the median time of each mode, best N, speedup over
#    plain, kmux/expert, verify, flags (slower than plain > 2%, or "not
#    judged" when by less than plain's own run-to-run spread; behind expert
#    > 5%, wrong results), the geometric means, issue 3's targets, issued vs
#    pruned waits, a plot; with roN modes, a table kmuxN vs roN per N;
#    with extN modes, a table kmuxN vs extN per N.
#
# Time budget: KMUX_STREAMS_BUDGET_S (default 530 s, under the device's 600 s
# command limit).  Verify may use up to a quarter of it; rounds continue up
# to KMUX_STREAMS_REPS (5) while the next round fits, the CUDA apps first:
# the PyTorch round is skipped when it would leave too little time for the
# remaining CUDA rounds.  The table says how many repeats each app got.
#
# Output under $OUT (default ./out; 4 files, no subfolders):
#   streams.log  everything: the commands, every run's stdout and stderr tail
#   streams.csv  raw rows app,mode,rep,key,value
#   streams.md   the table, date, GPU/driver, versions, exact commands
#   streams.png  the plot (when matplotlib imports on the machine)
#
# Knobs (environment): KMUX_STREAMS_REPS (5), KMUX_STREAMS_NS ("2 4 8 16"),
# KMUX_STREAMS_VERIFY_N (8), KMUX_STREAMS_APPS (the CUDA apps; empty:
# none), KMUX_STREAMS_PY_APPS (googlenet,ensemble; empty: none),
# KMUX_STREAMS_APP_ARGS ("--reps 7 --warmup 3"), KMUX_STREAMS_PY_ARGS
# ("--reps 5 --warmup 3"), KMUX_STREAMS_LAUNCH (auto|run|preload),
# KMUX_STREAMS_LOG (info), KMUX_STREAMS_BUDGET_S (530),
# KMUX_STREAMS_SA_NS ("4 8"; empty: no saN modes), KMUX_STREAMS_SA_APPS
# ("phase_buffers"; "all": every CUDA app), KMUX_STREAMS_RO_NS ("";
# e.g. "8 16": roN modes, and a second verify per app with the option),
# KMUX_STREAMS_EXT_NS (""; e.g. "8 16": extN modes, and a verify per app
# with the extents, verify-ext), KMUX_STREAMS_AB_OFF (""; with extN modes,
# the variables kmuxN, saN and roN run with instead of KMUX_PTX_EXTENTS=0,
# e.g. "KMUX_KEEP_UP=0": extN, kmux as shipped, against kmux without that
# one part, side by side; the report's text says which),
# and lib.sh's OUT,
# NVCC, NVCCFLAGS, PYTHON, KMUX_BIN, KMUX_LIB, KMUX_DEVLIBS.
# Never changes GPU settings.  Exit status 0 when no run failed.
set -u
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1
export OUT=${OUT:-./out}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
START=$(date +%s)
BUDGET=${KMUX_STREAMS_BUDGET_S:-530}
export KMUX_BENCH_DEADLINE=$((START + BUDGET))
# shellcheck source=bench/gpu/lib.sh
. bench/gpu/lib.sh	# ROOT, WORK (scratch, removed at exit), NVCC, PY, kmux helpers

APPS_DIR=$ROOT/bench/apps
LOG=$OUT/streams.log
CSV=$OUT/streams.csv
MD=$OUT/streams.md
PNG=$OUT/streams.png
: >"$LOG"
echo "app,mode,rep,key,value" >"$CSV"
rm -f "$MD" "$PNG"
CMDS=$WORK/streams.cmds
BUILD_LOG=$WORK/streams.build.log
: >"$CMDS"
: >"$BUILD_LOG"

REPS=${KMUX_STREAMS_REPS:-5}
read -r -a NS <<<"${KMUX_STREAMS_NS:-2 4 8 16}"
VERIFY_N=${KMUX_STREAMS_VERIFY_N:-8}
read -r -a CUDA_APPS <<<"${KMUX_STREAMS_APPS-gemm_batch image_pipeline reductions stencil_dag mha mixed_pairs chain host_sync phase_buffers}"
PY_APPS=${KMUX_STREAMS_PY_APPS-googlenet,ensemble}
read -r -a APP_ARGS <<<"${KMUX_STREAMS_APP_ARGS:---reps 7 --warmup 3}"
read -r -a PY_ARGS <<<"${KMUX_STREAMS_PY_ARGS:---reps 5 --warmup 3}"
read -r -a SA_NS <<<"${KMUX_STREAMS_SA_NS-4 8}"
SA_APPS=${KMUX_STREAMS_SA_APPS-phase_buffers}
read -r -a RO_NS <<<"${KMUX_STREAMS_RO_NS-}"
# The A/B needs kmuxN without the proof whatever the caller's environment;
# without roN modes kmuxN measures kmux as shipped (the caller's setting).
RO_OFF=()
[ ${#RO_NS[@]} -gt 0 ] && RO_OFF=(KMUX_PTX_READONLY=0)
read -r -a EXT_NS <<<"${KMUX_STREAMS_EXT_NS-}"
# The same for the extents: KMUX_PTX_EXTENTS=0 in every mode but extN.
EXT_OFF=()
[ ${#EXT_NS[@]} -gt 0 ] && EXT_OFF=(KMUX_PTX_EXTENTS=0)
read -r -a AB_OFF <<<"${KMUX_STREAMS_AB_OFF-}"
if [ ${#EXT_NS[@]} -gt 0 ] && [ ${#AB_OFF[@]} -gt 0 ]; then
	EXT_OFF=("${AB_OFF[@]}")
	EXT_STATE="on in every mode (kmux's default); kmuxN, saN and roN run with ${AB_OFF[*]} (the A/B's baseline), extN without it: extN is kmux as shipped"
elif [ ${#EXT_NS[@]} -gt 0 ]; then
	EXT_STATE="off in kmuxN, saN and roN (KMUX_PTX_EXTENTS=0, the A/B's baseline); on in extN (KMUX_PTX_READONLY=1 KMUX_PTX_EXTENTS=1, kmux's default: extN is kmux as shipped)"
elif [ "${KMUX_PTX_EXTENTS-}" = 0 ]; then
	EXT_STATE="off (KMUX_PTX_EXTENTS=0 from the environment)"
else
	EXT_STATE="as the PTX read-only proof (kmux's default; KMUX_PTX_EXTENTS=${KMUX_PTX_EXTENTS-unset}); KMUX_PTX_READONLY=0 turns them off too"
fi
if [ ${#RO_NS[@]} -gt 0 ]; then
	PTX_STATE="off in kmuxN and saN (KMUX_PTX_READONLY=0, the A/B's baseline); on in roN (KMUX_PTX_READONLY=1, kmux's default: roN is kmux as shipped)"
elif [ "${KMUX_PTX_READONLY-}" = 0 ]; then
	PTX_STATE="off (KMUX_PTX_READONLY=0 from the environment): kmuxN is NOT kmux as shipped"
else
	PTX_STATE="on in kmuxN and saN (kmux's default; KMUX_PTX_READONLY=${KMUX_PTX_READONLY-unset})"
fi
LAUNCH=${KMUX_STREAMS_LAUNCH:-auto}
KLOG=${KMUX_STREAMS_LOG:-info}
RESERVE=20	# seconds kept for the report
FAILS=0
B=$WORK/bin
SUITE=$APPS_DIR/py/torch_suite.py

# ------------------------------------------------------------------ helpers

# csv APP MODE REP KEY VALUE (commas and quotes in VALUE would break the CSV)
csv() { printf '%s,%s,%s,%s,%s\n' "$1" "$2" "$3" "$4" "${5//[,\"]/;}" >>"$CSV"; }

# kmux_mode MODE: true for the modes that run under kmux
kmux_mode() { [[ $1 == kmux* || $1 == sa* || $1 == ro* || $1 == ext* ]]; }

# mode_n MODE: N of kmuxN / saN / roN / extN
mode_n() { local n=${1#kmux}; n=${n#sa}; n=${n#ext}; echo "${n#ro}"; }

# mode_env MODE: the option variables of MODE, one per line
mode_env() {
	case $1 in
	ext*) printf '%s\n' KMUX_PTX_READONLY=1 KMUX_PTX_EXTENTS=1 ;;
	ro*)
		echo KMUX_PTX_READONLY=1
		[ ${#EXT_OFF[@]} -gt 0 ] && printf '%s\n' "${EXT_OFF[@]}" ;;
	*)
		[ ${#RO_OFF[@]} -gt 0 ] && printf '%s\n' "${RO_OFF[@]}"
		[ ${#EXT_OFF[@]} -gt 0 ] && printf '%s\n' "${EXT_OFF[@]}" ;;
	esac
	return 0
}

# kmux_prefix MODE: prints the words that run a command under kmux in MODE
# (kmuxN: N streams; saN: N streams and --stream-alloc; roN: N streams and
# KMUX_PTX_READONLY=1), one per line (empty when kmux cannot run here)
kmux_prefix() {
	local n sa=() ev=()
	n=$(mode_n "$1")
	mapfile -t ev < <(mode_env "$1")
	case $KMODE in
	run)
		[[ $1 == sa* ]] && sa=(--stream-alloc)
		printf '%s\n' env "LD_LIBRARY_PATH=$KMUX_DEVLIBS${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
			"KMUX_LOG=$KLOG" "${ev[@]}" "$KMUX_BIN" run --streams "$n" "${sa[@]}" -- ;;
	preload)
		[[ $1 == sa* ]] && sa=(KMUX_STREAM_ALLOC=1)
		printf '%s\n' env "KMUX_LOG=$KLOG" "${ev[@]}" "KMUX_STREAMS=$n" "${sa[@]}" \
			"LD_PRELOAD=$KMUX_LIB${LD_PRELOAD:+:$LD_PRELOAD}" ;;
	esac
}

# sa_app APP: the saN modes run for APP
sa_app() {
	[ "$SA_APPS" = all ] && return 0
	[[ ",${SA_APPS// /,}," == *",$1,"* ]]
}

# human MODE CMD...: the command as a person would type it (for streams.md)
human() {
	local mode=$1
	shift
	case $mode in
	kmux* | sa* | ro* | ext*)
		# saN: kmuxN with stream-ordered allocation; roN: with PTX
		# read-only; extN: with it and exact extents
		local n opt="" var="" ev
		n=$(mode_n "$mode")
		ev=$(mode_env "$mode" | tr '\n' ' ')
		if [[ $mode == sa* ]]; then
			opt=" --stream-alloc" var=" KMUX_STREAM_ALLOC=1"
		fi
		if [ "$KMODE" = run ]; then
			echo "KMUX_LOG=$KLOG ${ev}LD_LIBRARY_PATH=build/devlibs build/kmux run --streams $n$opt -- $*"
		else
			echo "KMUX_LOG=$KLOG ${ev}KMUX_STREAMS=$n$var LD_PRELOAD=build/libkmux.so $*"
		fi ;;
	*) echo "$*" ;;
	esac
}

# parse_run GROUP MODE REP STDOUT STDERR RC SECS: RESULT/CHECK/CHECKSUM and
# the preload's wait counts -> $CSV; echoes a one-line summary
parse_run() {
	local group=$1 mode=$2 rep=$3 so=$4 se=$5 rc=$6 secs=$7
	local line app="" k v issued pruned apps=() summary="" rc_app
	local -A checked=()
	while IFS= read -r line; do
		case $line in
		"RESULT "*)
			app=$(printf '%s\n' "$line" | tr ' ' '\n' | sed -n 's/^app=//p')
			[ -n "$app" ] || continue
			apps+=("$app")
			for k in ms wall_ms; do
				v=$(printf '%s\n' "$line" | tr ' ' '\n' | sed -n "s/^$k=//p")
				[ -n "$v" ] && csv "$app" "$mode" "$rep" "$k" "$v"
			done
			csv "$app" "$mode" "$rep" secs "$secs"
			summary+="$app $(printf '%s\n' "$line" | tr ' ' '\n' | grep '^ms=') " ;;
		"CHECK ok"*)
			[ -n "$app" ] && { csv "$app" "$mode" "$rep" check ok; checked[$app]=ok; } ;;
		"CHECK FAIL"*)
			v=$(printf '%s\n' "$line" | tr ' ' '\n' | sed -n 's/^app=//p')
			v=${v:-$app}
			[ -n "$v" ] && { csv "$v" "$mode" "$rep" check FAIL; checked[$v]=FAIL; }
			summary+="CHECK FAIL($v) " ;;
		"CHECKSUM "*)
			v=$(printf '%s\n' "$line" | tr ' ' '\n' | sed -n 's/^app=//p')
			k=$(printf '%s\n' "$line" | tr ' ' '\n' | sed -n 's/^value=//p')
			[ -n "$v" ] && [ -n "$k" ] && csv "$v" "$mode" "$rep" checksum "$k" ;;
		esac
	done <"$so"
	# exit status per program: in the one PyTorch process, exit 1 means that
	# some program's CHECK failed, not necessarily this one's
	for app in "${apps[@]}"; do
		rc_app=$rc
		[ "$group" = torch ] && [ "$rc" = 1 ] && [ "${checked[$app]:-}" = ok ] && rc_app=0
		csv "$app" "$mode" "$rep" rc "$rc_app"
		[ -n "${checked[$app]:-}" ] || csv "$app" "$mode" "$rep" check none
	done
	# a run that printed no RESULT still counts (as a failure) for its group
	if [ ${#apps[@]} = 0 ]; then
		if [ "$group" = torch ]; then
			IFS=, read -r -a apps <<<"$PY_APPS"
		else
			apps=("$group")
		fi
		for app in "${apps[@]}"; do
			csv "$app" "$mode" "$rep" rc "${rc/#0/noresult}"
			csv "$app" "$mode" "$rep" check none
		done
	fi
	# "kmux: streams: issued W waits, pruned P" (summed over the processes
	# and contexts that printed one); tolerant of small format changes
	read -r issued pruned < <(cat "$so" "$se" | grep -iE 'issued[^0-9]*[0-9]+[^0-9]+pruned[^0-9]*[0-9]+' |
		sed -E 's/.*issued[^0-9]*([0-9]+)[^0-9]+pruned[^0-9]*([0-9]+).*/\1 \2/I' |
		awk '{i += $1; p += $2; n++} END {if (n) print i, p; else print "", ""}')
	if [ -n "${issued:-}" ]; then
		for app in "${apps[@]}"; do
			csv "$app" "$mode" "$rep" issued "$issued"
			csv "$app" "$mode" "$rep" pruned "$pruned"
		done
		summary+="waits $issued/$pruned "
	fi
	# "GPU idle at D of C checks, K ops placed as keeping up"
	local kept
	kept=$(cat "$so" "$se" | sed -nE 's/.*GPU idle at ([0-9]+) of ([0-9]+) checks, ([0-9]+) ops placed as keeping up.*/\1 \2 \3/p' |
		awk '{d += $1; c += $2; k += $3; n++} END {if (n) print d "/" c "/" k}')
	if [ -n "$kept" ]; then
		for app in "${apps[@]}"; do
			csv "$app" "$mode" "$rep" keptup "$kept"
		done
		summary+="idle/checks/kept $kept "
	fi
	echo "$summary"
}

# one_run GROUP MODE REP TIMEOUT CMD... (CMD: the plain command for kmuxN)
one_run() {
	local group=$1 mode=$2 rep=$3 tmo=$4
	shift 4
	local so=$WORK/run/$group.$mode.$rep.out se=$WORK/run/$group.$mode.$rep.err
	local rc t0 secs left summary pre=()
	if kmux_mode "$mode"; then
		mapfile -t pre < <(kmux_prefix "$mode")
	fi
	left=$(time_left)
	[ "$left" -lt "$tmo" ] && tmo=$((left > 10 ? left : 10))
	[ "$rep" = 1 ] && human "$mode" "$@" | shorten_cmds >>"$CMDS"
	t0=$(date +%s.%N)
	timeout -k 10 "$tmo" "${pre[@]}" "$@" >"$so" 2>"$se" </dev/null
	rc=$?
	secs=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b - a}')
	grep -q 'cannot be preloaded' "$se" && rc=${rc/#0/preload-failed}
	summary=$(parse_run "$group" "$mode" "$rep" "$so" "$se" "$rc" "$secs")
	{
		echo "----- $group/$mode rep $rep: exit $rc, ${secs}s: $(human "$mode" "$@" | shorten_cmds)"
		cat "$so"
		echo "--- stderr (last 30 lines):"
		tail -n 30 "$se"
	} >>"$LOG"
	if [ "$rc" != 0 ] || ! grep -q '^CHECK ok' "$so" || grep -q '^CHECK FAIL' "$so"; then
		FAILS=$((FAILS + 1))
		log "  $group/$mode rep $rep: FAILED (exit $rc, ${secs}s): $summary$(grep -v '^ *$' "$se" | tail -n 1 | cut -c1-150)"
		return 1
	fi
	log "  $group/$mode rep $rep: ${secs}s: $summary"
	return 0
}

# verify_one NAME APPS TIMEOUT CMD...: kmux verify --streams VERIFY_N -- CMD;
# the result is recorded for each app in the comma-separated APPS
verify_one() {
	local name=$1 vapps=$2 tmo=$3 app
	shift 3
	local so=$WORK/run/verify.$name.out rc res t0 secs ev=()
	# VERIFY_MODE=roN (the caller's): verify with the option on
	mapfile -t ev < <(mode_env "${VERIFY_MODE:-kmux}")
	echo "KMUX_LOG=$KLOG ${ev[*]}${ev[*]:+ }LD_LIBRARY_PATH=build/devlibs build/kmux verify --streams $VERIFY_N -- $*" |
		shorten_cmds >>"$CMDS"
	t0=$SECONDS
	timeout -k 10 "$tmo" env "LD_LIBRARY_PATH=$KMUX_DEVLIBS${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
		"KMUX_LOG=$KLOG" "${ev[@]}" "$KMUX_BIN" verify --streams "$VERIFY_N" -- "$@" >"$so" 2>&1 </dev/null
	rc=$?
	secs=$((SECONDS - t0))
	case $rc in
	0) res=identical ;;
	124 | 137) res=timeout ;;
	*)
		if grep -qiE 'diverg|differ|mismatch|not identical' "$so"; then
			res=DIFFERS
		else
			res="failed(exit $rc)"
		fi ;;
	esac
	{
		echo "----- verify $name: exit $rc, ${secs}s: kmux verify --streams $VERIFY_N -- $*"
		tail -n 60 "$so"
	} >>"$LOG"
	for app in ${vapps//,/ }; do csv "$app" "${VERIFY_KEY:-verify}" 1 result "$res"; done
	log "  verify $name: $res (${secs}s)$([ "$res" = identical ] || echo ": $(grep -v '^ *$' "$so" | tail -n 1 | cut -c1-150)")"
	[ "$res" = identical ] || FAILS=$((FAILS + 1))
}

# ------------------------------------------------------------------ set-up

main() {
	local app mode rep i
	log "streams: start in $ROOT; budget ${BUDGET}s; OUT=$OUT; scratch $WORK"
	log "streams: GPU $(gpu_line)"
	log "streams: $(uname -srm), $(nproc) CPUs; nvcc: ${NVCC:-none}; python: $(command -v "$PY")"
	log "streams: $(kmux_ident)"
	log "streams: CUDA_DEVICE_MAX_CONNECTIONS=${CUDA_DEVICE_MAX_CONNECTIONS:-unset (8)}"
	check_stacks
	check_kmux

	# How kmux runs a program: `kmux run --streams N` if it works, else the
	# bare preload with KMUX_STREAMS=N.
	KMODE=none
	if [ "$LAUNCH" != preload ] && [ "$HAVE_CLI" = 1 ]; then
		if kmux_cli run --streams 2 -- /bin/true >"$WORK/probe-run.out" 2>&1 </dev/null; then
			KMODE=run
		else
			log "streams: 'kmux run --streams 2 -- /bin/true' failed: $(head -c 300 "$WORK/probe-run.out")"
		fi
	fi
	if [ "$KMODE" = none ] && [ "$LAUNCH" != run ] && [ "$HAVE_PRELOAD" = 1 ]; then
		KMODE=preload
	fi
	HAVE_VERIFY=0
	if [ "$HAVE_CLI" = 1 ] &&
		kmux_cli verify --help >"$WORK/probe-verify.out" 2>&1 </dev/null &&
		! grep -qi 'unknown' "$WORK/probe-verify.out"; then
		HAVE_VERIFY=1
	else
		log "streams: no 'kmux verify' here: verify n/a ($(head -c 200 "$WORK/probe-verify.out" 2>/dev/null))"
	fi
	log "streams: kmux runs through: $KMODE; verify: $([ $HAVE_VERIFY = 1 ] && echo yes || echo n/a)"
	MODES=(plain)
	if [ "$KMODE" != none ]; then
		for n in "${NS[@]}"; do MODES+=("kmux$n"); done
		for n in "${SA_NS[@]}"; do MODES+=("sa$n"); done
		for n in "${RO_NS[@]}"; do MODES+=("ro$n"); done
		for n in "${EXT_NS[@]}"; do MODES+=("ext$n"); done
	else
		log "streams: kmux modes SKIP (neither 'kmux run' nor the preload can run here)"
	fi
	MODES+=(expert)

	# ---------------------------------------------------------- build
	local built=()
	if [ "$HAVE_NVCC" = 1 ]; then
		log "build: $NVCC $NVCCFLAGS (${#CUDA_APPS[@]} apps, in parallel)"
		local pids=()
		for app in "${CUDA_APPS[@]}"; do
			# shellcheck disable=SC2086  # NVCCFLAGS is a word list
			nv "$B/$app" $NVCCFLAGS "$APPS_DIR/$app.cu" &
			pids+=($!)
		done
		# by pid: a bare `wait` would also wait for the log's tee (and
		# `wait` with no apps is a bare one)
		[ "${#pids[@]}" -gt 0 ] && wait "${pids[@]}"
		[ -s "$BUILD_LOG" ] && cat "$BUILD_LOG" >>"$LOG"
		for app in "${CUDA_APPS[@]}"; do
			if [ -x "$B/$app" ]; then
				built+=("$app")
			else
				log "build: $app FAILED (see streams.log)"
				FAILS=$((FAILS + 1))
			fi
		done
		log "build: ${#built[@]} of ${#CUDA_APPS[@]} apps built ($(time_left)s left)"
	else
		log "build: $WHY_NVCC: CUDA apps SKIP"
	fi
	local torch_on=0
	if [ -n "$PY_APPS" ]; then
		if [ "$HAVE_TORCH" = 1 ]; then torch_on=1; else log "torch programs: SKIP ($WHY_TORCH)"; fi
	fi

	# ---------------------------------------------------------- verify
	if [ "$HAVE_VERIFY" = 1 ]; then
		local vend=$(($(date +%s) + BUDGET / 4))
		log "verify: kmux verify --streams $VERIFY_N on every app (until $((vend - $(date +%s)))s from now)"
		for app in "${built[@]}"; do
			if [ "$(date +%s)" -ge "$vend" ]; then
				csv "$app" verify 1 result "skipped(time)"
				log "  verify $app: skipped (time budget)"
				continue
			fi
			verify_one "$app" "$app" 90 "$B/$app" plain --reps 2 --warmup 1
			# the same with stream-ordered allocation (the log only)
			if [ ${#SA_NS[@]} -gt 0 ] && sa_app "$app" && [ "$(date +%s)" -lt "$vend" ]; then
				KMUX_STREAM_ALLOC=1 verify_one "$app-stream-alloc" "" 90 "$B/$app" plain --reps 2 --warmup 1
			fi
			# the same with PTX read-only (recorded as verify-ro)
			if [ ${#RO_NS[@]} -gt 0 ] && [ "$(date +%s)" -lt "$vend" ]; then
				VERIFY_MODE=ro VERIFY_KEY=verify-ro verify_one "$app-ptx-readonly" "$app" 90 \
					"$B/$app" plain --reps 2 --warmup 1
			fi
			# the same with exact extents (recorded as verify-ext)
			if [ ${#EXT_NS[@]} -gt 0 ] && [ "$(date +%s)" -lt "$vend" ]; then
				VERIFY_MODE=ext VERIFY_KEY=verify-ext verify_one "$app-ptx-extents" "$app" 90 \
					"$B/$app" plain --reps 2 --warmup 1
			fi
		done
		if [ "$torch_on" = 1 ]; then
			IFS=, read -r -a vapps <<<"$PY_APPS"
			for app in "${vapps[@]}"; do
				if [ "$(date +%s)" -ge "$((vend + 30))" ]; then
					csv "$app" verify 1 result "skipped(time)"
					log "  verify $app: skipped (time budget)"
					continue
				fi
				# one program per verify, few iterations: verify compares copies, not time
				verify_one "$app" "$app" 180 "$PY" "$SUITE" plain --apps "$app" \
					--reps 1 --warmup 1 --googlenet-iters 2 --ensemble-iters 2
			done
		fi
	else
		for app in "${built[@]}"; do csv "$app" verify 1 result n/a; done
		if [ "$torch_on" = 1 ]; then
			IFS=, read -r -a vapps <<<"$PY_APPS"
			for app in "${vapps[@]}"; do csv "$app" verify 1 result n/a; done
		fi
	fi

	# ---------------------------------------------------------- rounds
	local nm=${#MODES[@]}
	local t0 est_cuda=0 est_torch=$((nm * 15)) cuda_done=0 torch_done=0
	local -A broken=()
	log "rounds: up to $REPS; modes: ${MODES[*]}; apps: ${built[*]} $([ $torch_on = 1 ] && echo "+ torch ($PY_APPS)"); $(time_left)s left"
	for rep in $(seq 1 "$REPS"); do
		# this round's mode order: rotated by the round number
		local order=()
		for i in $(seq 0 $((nm - 1))); do order+=("${MODES[$(((i + rep - 1) % nm))]}"); done
		# CUDA apps: run the round if it fits
		if [ ${#built[@]} -gt 0 ]; then
			if [ "$rep" -gt 1 ] && ! have_time $((est_cuda + RESERVE)); then
				log "rounds: time budget: CUDA apps stop after $cuda_done rounds"
			else
				log "round $rep: CUDA apps ($(time_left)s left)"
				t0=$(date +%s)
				for app in "${built[@]}"; do
					[ -n "${broken[$app]:-}" ] && continue
					for mode in "${order[@]}"; do
						have_time "$RESERVE" || break 3
						[[ $mode == sa* ]] && ! sa_app "$app" && continue
						local variant=plain
						[ "$mode" = expert ] && variant=expert
						if ! one_run "$app" "$mode" "$rep" 60 "$B/$app" "$variant" "${APP_ARGS[@]}" &&
							[ "$mode" = plain ] && [ "$rep" = 1 ]; then
							broken[$app]=1
							log "  $app: the plain program fails; no more runs of it"
							break
						fi
					done
				done
				est_cuda=$(($(date +%s) - t0))
				cuda_done=$rep
			fi
		fi
		# PyTorch: only if the remaining CUDA rounds still fit afterwards
		if [ "$torch_on" = 1 ]; then
			local need=$((est_torch + RESERVE))
			[ ${#built[@]} -gt 0 ] && [ "$cuda_done" = "$rep" ] && need=$((need + (REPS - rep) * est_cuda))
			if ! have_time "$need"; then
				log "rounds: time budget: PyTorch round $rep skipped (needs ~${need}s, $(time_left)s left)"
			else
				log "round $rep: PyTorch programs ($(time_left)s left)"
				t0=$(date +%s)
				for mode in "${order[@]}"; do
					have_time "$RESERVE" || break 2
					# PyTorch has its own caching allocator
					[[ $mode == sa* ]] && continue
					local variant=plain
					[ "$mode" = expert ] && variant=expert
					one_run torch "$mode" "$rep" 240 "$PY" "$SUITE" "$variant" --apps "$PY_APPS" \
						"${PY_ARGS[@]}"
				done
				est_torch=$(($(date +%s) - t0))
				torch_done=$rep
			fi
		fi
		have_time "$RESERVE" || { log "rounds: time budget: stop after round $rep"; break; }
	done
	log "rounds: CUDA apps $cuda_done rounds, PyTorch $torch_done rounds; $(time_left)s left"

	# ---------------------------------------------------------- report
	report
	log "streams: done ($(time_left)s of budget left); $FAILS failed runs; files:"
	# shellcheck disable=SC2012  # a listing for people
	ls -la "$OUT" | sed 's/^/    /'
	[ "$FAILS" = 0 ]
}

report() {
	local nvv how
	nvv=$([ "$HAVE_NVCC" = 1 ] && "$NVCC" --version | tail -n 1)
	case $KMODE in
	run) how="kmux run --streams N -- APP plain" ;;
	preload) how="KMUX_STREAMS=N LD_PRELOAD=build/libkmux.so APP plain" ;;
	*) how="kmux could not run here: kmux columns n/a" ;;
	esac
	{
		echo "# kmux stream scheduling: bench/apps suite (issue 3)"
		echo
		echo "- date: $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
		echo "- GPU, driver: $(gpu_line)"
		echo "- host: $(uname -srm), $(nproc) CPUs; nvcc: ${nvv:-none}; NVCCFLAGS: $NVCCFLAGS"
		echo "- python stack: ${STACK_VERSIONS:-?}"
		echo "- kmux: $(kmux_ident)"
		echo "- kmux runs through: $KMODE ($how); KMUX_LOG=$KLOG on kmux runs"
		echo "- CUDA_DEVICE_MAX_CONNECTIONS: ${CUDA_DEVICE_MAX_CONNECTIONS:-unset (driver default 8; kmux bounds its pool by it, so N=16 may act as 8)}"
		echo "- repeats: up to $REPS rounds, modes interleaved and rotated per round, each run a fresh process;"
		echo "  CUDA app arguments: ${APP_ARGS[*]}; PyTorch: ${PY_ARGS[*]} (one process for $PY_APPS)"
		echo "- verify: kmux verify --streams $VERIFY_N on the plain version$([ ${#RO_NS[@]} -gt 0 ] && echo " with KMUX_PTX_READONLY=0; again with KMUX_PTX_READONLY=1 (verify-ro)")"
		echo "- PTX read-only proof: $PTX_STATE"
		echo "- exact extents (KMUX_PTX_EXTENTS): $EXT_STATE"
		[ ${#EXT_NS[@]} -gt 0 ] && echo "- extN: KMUX_PTX_READONLY=1 KMUX_PTX_EXTENTS=1, N in ${EXT_NS[*]}; the other kmux modes ran with KMUX_PTX_EXTENTS=0 (side-by-side A/B of the extents); verify-ext: kmux verify with both on"
		[ ${#RO_NS[@]} -gt 0 ] && echo "- roN: KMUX_PTX_READONLY=1, N in ${RO_NS[*]}; kmuxN and saN ran with KMUX_PTX_READONLY=0 (side-by-side A/B of the proof)"
		echo "- failed runs: $FAILS (see streams.log)"
		echo
	} >"$MD"
	log "report:"
	"$PY" "$APPS_DIR/streams_report.py" "$CSV" --md "$MD" --png "$PNG" \
		--ns "${NS[*]}" --sa-ns "${SA_NS[*]}" --ro-ns "${RO_NS[*]}" --ext-ns "${EXT_NS[*]}" --py-apps "$PY_APPS" | tee -a "$LOG"
	{
		echo "Raw rows: streams.csv; every run's output: streams.log."
		echo
		echo "## Commands"
		echo
		echo '```'
		echo "bash bench/streams.sh"
		echo "# scratch dir: W=$WORK (removed at exit)"
		echo "# build:"
		grep -h '^\$ ' "$LOG" | sed 's/^\$ //' | shorten_cmds
		echo "# verify and runs (each run repeated per round, modes interleaved):"
		shorten_cmds <"$CMDS"
		echo '```'
	} >>"$MD"
}

main 2> >(tee -a "$LOG" >&2)
