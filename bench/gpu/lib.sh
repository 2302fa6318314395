# shellcheck shell=bash disable=SC2034  # variables are for the scripts that source this
# lib.sh - shared by compat.sh, overhead.sh and run-all.sh (sourced, not run).
#
# Sets ROOT (repo root), OUT (results; $OUT from the runner, else ./out),
# WORK (scratch under /tmp), NVCC, PY, KMUX_BIN, KMUX_LIB, and provides
# logging with timestamps, the four run modes and a time budget.
# Never touches GPU settings.

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BENCH="$ROOT/bench/gpu"
PROGS="$BENCH/progs"
OUT=${OUT:-./out}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
if [ -z "${KMUX_BENCH_WORK:-}" ]; then
	# ours: removed when the script that made it exits; scripts it starts
	# share it through the environment
	KMUX_BENCH_WORK=$(mktemp -d /tmp/kmux-gpu-bench.XXXXXX)
	export KMUX_BENCH_WORK
	# shellcheck disable=SC2064  # expand now
	trap "rm -rf '$KMUX_BENCH_WORK'" EXIT
fi
WORK=$KMUX_BENCH_WORK
mkdir -p "$WORK/bin" "$WORK/run" "$WORK/traces"

PY=${PYTHON:-python3}
KMUX_BIN=${KMUX_BIN:-$ROOT/build/kmux}
KMUX_LIB=${KMUX_LIB:-$ROOT/build/libkmux.so}
KMUX_DEVLIBS=${KMUX_DEVLIBS:-$ROOT/build/devlibs}
if [ -z "${NVCC:-}" ]; then
	NVCC=$(command -v nvcc 2>/dev/null || true)
	[ -n "$NVCC" ] || { [ -x /usr/local/cuda/bin/nvcc ] && NVCC=/usr/local/cuda/bin/nvcc; }
fi
NVCCFLAGS=${NVCCFLAGS:--arch=sm_90 -O2}
# the machine's variables that keep NVLink multicast off stay as they are
export CUBLAS_WORKSPACE_CONFIG=${CUBLAS_WORKSPACE_CONFIG:-:4096:8}
export PYTHONUNBUFFERED=1
# Triton and CuPy compile caches in the scratch dir (first run fills them)
export TRITON_CACHE_DIR=${TRITON_CACHE_DIR:-$WORK/triton-cache}
export CUPY_CACHE_DIR=${CUPY_CACHE_DIR:-$WORK/cupy-cache}

# A budget shared by the scripts: absolute epoch seconds.
KMUX_BENCH_DEADLINE=${KMUX_BENCH_DEADLINE:-$(( $(date +%s) + 540 ))}
export KMUX_BENCH_DEADLINE

ts() { date +%H:%M:%S; }
# log MSG... : to the terminal and to $LOG (set by each script)
log() {
	local line
	line="[$(ts)] $*"
	printf '%s\n' "$line"
	[ -n "${LOG:-}" ] && printf '%s\n' "$line" >>"$LOG"
	return 0
}
# logq MSG... : to $LOG only
logq() { [ -n "${LOG:-}" ] && printf '%s\n' "$*" >>"$LOG"; return 0; }

time_left() { echo $(( KMUX_BENCH_DEADLINE - $(date +%s) )); }
# have_time SECONDS: is there at least that much of the budget left?
have_time() { [ "$(time_left)" -ge "${1:-0}" ]; }

gpu_line() {
	local l
	l=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null |
		head -n 1)
	echo "${l:-nvidia-smi unavailable}"
}

# shorten_cmds: scratch dir -> $W, repo root -> . (for the commands in *.md)
shorten_cmds() {
	sed -e "s|$WORK|\$W|g" -e "s|$ROOT/||g"
}

# torch_mode_cmd MODE PREFIX PROG...: CMD becomes PROG's command line in
# one of the modes of the PyTorch diagnostics (torch-modes.sh,
# torch-lockstep.sh): plain and plain2 (no kmux), bare (the preload alone),
# st8 (KMUX_STREAMS=8), st8-noptx (KMUX_PTX_READONLY=0), st8-nopass
# (KMUX_PASS_THROUGH=0), run8 (kmux run --streams 8), st8-NAME (st8 with the
# library that the variable PREFIXNAME names).  Returns 2 for another MODE
# or an st8-NAME whose variable names no readable file.
torch_mode_cmd() {
	local m=$1 lib
	lib=$(torch_mode_lib "$m" "$2")
	[ $? = 2 ] && return 2
	shift 2
	case $m in
	plain | plain2) CMD=("$@") ;;
	bare) CMD=(env LD_PRELOAD="$KMUX_LIB" "$@") ;;
	st8) CMD=(env KMUX_LOG=info KMUX_STREAMS=8 LD_PRELOAD="$KMUX_LIB" "$@") ;;
	st8-noptx) CMD=(env KMUX_LOG=info KMUX_PTX_READONLY=0 KMUX_STREAMS=8
			LD_PRELOAD="$KMUX_LIB" "$@") ;;
	st8-nopass) CMD=(env KMUX_LOG=info KMUX_PASS_THROUGH=0 KMUX_STREAMS=8
			 LD_PRELOAD="$KMUX_LIB" "$@") ;;
	run8) CMD=(env KMUX_LOG=info
		   LD_LIBRARY_PATH="$KMUX_DEVLIBS${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
		   "$KMUX_BIN" run --streams 8 -- "$@") ;;
	st8-?*) CMD=(env KMUX_LOG=info KMUX_STREAMS=8 LD_PRELOAD="$lib" "$@") ;;
	*) return 2 ;;
	esac
}

# torch_mode_lib MODE PREFIX: prints the library of an st8-NAME mode (the
# file the variable PREFIXNAME names); returns 1 for a mode that has none
# of its own (plain, st8, st8-noptx, ...), 2 when the variable names no
# readable file.
torch_mode_lib() {
	local v
	case $1 in
	st8-noptx | st8-nopass) return 1 ;;
	st8-?*) v=$2${1#st8-}
		[ -r "${!v:-}" ] || return 2
		echo "${!v}" ;;
	*) return 1 ;;
	esac
}

# kmux_cli ARGS...: the CLI with its carried non-system libraries
# (build/devlibs, e.g. libcjson.so.1) on LD_LIBRARY_PATH for this call only.
# CMD inherits that path from kmux; it holds only what prepare.sh copied.
kmux_cli() {
	LD_LIBRARY_PATH="$KMUX_DEVLIBS${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
		"$KMUX_BIN" "$@"
}

# Which kmux modes can run at all: sets HAVE_PRELOAD, HAVE_CLI (0/1) and
# explains in the log.
check_kmux() {
	HAVE_PRELOAD=0
	HAVE_CLI=0
	if [ ! -f "$KMUX_LIB" ]; then
		log "kmux: $KMUX_LIB missing (carry build/): bare/trace modes SKIP"
		return 0
	fi
	# ld.so only warns (and runs the program anyway) when a preload fails
	# to load, so look for its message.
	local msg
	msg=$(LD_PRELOAD="$KMUX_LIB" /bin/true 2>&1)
	if printf '%s' "$msg" | grep -q 'cannot be preloaded'; then
		log "kmux: $KMUX_LIB cannot be preloaded: $msg"
		return 0
	fi
	HAVE_PRELOAD=1
	if [ ! -x "$KMUX_BIN" ]; then
		log "kmux: $KMUX_BIN missing: trace modes SKIP"
		return 0
	fi
	kmux_cli --help >/dev/null 2>"$WORK/kmux-help.err" </dev/null
	if grep -q 'error while loading shared libraries' "$WORK/kmux-help.err"; then
		log "kmux: $KMUX_BIN does not start: $(head -c 300 "$WORK/kmux-help.err") (run bench/gpu/prepare.sh before the device call): trace modes SKIP"
		return 0
	fi
	HAVE_CLI=1
}

# The pool size of the streams and verify modes.
KMUX_COMPAT_STREAMS=${KMUX_COMPAT_STREAMS:-16}

# run_mode MODE TRACEFILE TIMEOUT STDOUT STDERR CMD...
#   MODE: plain | bare | trace | timing   (timing = kmux trace --timing)
#         | streams (kmux run --streams N) | verify (kmux verify --stdout
#         --streams N: its stdout is verify's verdict, not the program's);
#         both with KMUX_LOG=info, for the scheduler's report at exit
# Returns the command's exit status (124/137 on timeout).
run_mode() {
	local mode=$1 trace=$2 tmo=$3 so=$4 se=$5
	shift 5
	# never run past the budget (a run cut short reads as a timeout)
	local left
	left=$(time_left)
	[ "$left" -lt "$tmo" ] && tmo=$((left > 10 ? left : 10))
	case $mode in
	plain | plain2)
		timeout -k 10 "$tmo" "$@" >"$so" 2>"$se" ;;
	bare)
		timeout -k 10 "$tmo" env \
			LD_PRELOAD="$KMUX_LIB${LD_PRELOAD:+:$LD_PRELOAD}" \
			"$@" >"$so" 2>"$se" ;;
	trace)
		timeout -k 10 "$tmo" env \
			LD_LIBRARY_PATH="$KMUX_DEVLIBS${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
			"$KMUX_BIN" trace -o "$trace" -- "$@" >"$so" 2>"$se" ;;
	timing)
		timeout -k 10 "$tmo" env \
			LD_LIBRARY_PATH="$KMUX_DEVLIBS${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
			"$KMUX_BIN" trace --timing -o "$trace" -- "$@" >"$so" 2>"$se" ;;
	streams)
		timeout -k 10 "$tmo" env \
			LD_LIBRARY_PATH="$KMUX_DEVLIBS${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
			KMUX_LOG=info "$KMUX_BIN" run --streams "$KMUX_COMPAT_STREAMS" -- "$@" >"$so" 2>"$se" ;;
	verify)
		# twice the program's time: the unscheduled run, then the other
		timeout -k 10 $((2 * tmo)) env \
			LD_LIBRARY_PATH="$KMUX_DEVLIBS${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
			KMUX_LOG=info "$KMUX_BIN" verify --stdout --streams "$KMUX_COMPAT_STREAMS" -- "$@" \
			>"$so" 2>"$se" ;;
	*)
		echo "run_mode: bad mode $mode" >&2
		return 2 ;;
	esac
}

# mode_cmdline MODE TRACEFILE CMD...: the command as a person would type it
mode_cmdline() {
	local mode=$1 trace=$2
	shift 2
	case $mode in
	plain | plain2) echo "$*" ;;
	bare) echo "LD_PRELOAD=build/libkmux.so $*" ;;
	trace) echo "LD_LIBRARY_PATH=build/devlibs build/kmux trace -o $trace -- $*" ;;
	timing) echo "LD_LIBRARY_PATH=build/devlibs build/kmux trace --timing -o $trace -- $*" ;;
	streams) echo "KMUX_LOG=info LD_LIBRARY_PATH=build/devlibs build/kmux run --streams $KMUX_COMPAT_STREAMS -- $*" ;;
	verify) echo "KMUX_LOG=info LD_LIBRARY_PATH=build/devlibs build/kmux verify --stdout --streams $KMUX_COMPAT_STREAMS -- $*" ;;
	esac
}

# mode_ok MODE: can this mode run here?
mode_ok() {
	case $1 in
	plain | plain2) return 0 ;;
	bare) [ "${HAVE_PRELOAD:-0}" = 1 ] ;;
	trace | timing | streams | verify)
		[ "${HAVE_PRELOAD:-0}" = 1 ] && [ "${HAVE_CLI:-0}" = 1 ] ;;
	esac
}

# nv OUTPUT ARGS...: nvcc with logging (command to $LOG, compiler output to
# $BUILD_LOG); returns its status
nv() {
	local out=$1
	shift
	logq "\$ $NVCC $* -o $out"
	"$NVCC" "$@" -o "$out" >>"${BUILD_LOG:-$WORK/build.log}" 2>&1
}

# check_stacks: sets HAVE_NVCC HAVE_TORCH HAVE_CUPY HAVE_TRITON (0/1) and a
# reason for each missing one (WHY_*), once; run-all.sh exports them.
check_stacks() {
	[ "${KMUX_STACKS_CHECKED:-0}" = 1 ] && return 0
	HAVE_NVCC=0
	WHY_NVCC="nvcc not found"
	if [ -n "$NVCC" ] && [ -x "$NVCC" ]; then
		HAVE_NVCC=1
		WHY_NVCC=""
	fi
	local probe
	probe=$("$PY" - 2>&1 <<'PYEOF'
import importlib
for m in ("torch", "torchvision", "cupy", "triton", "jax"):
    try:
        mod = importlib.import_module(m)
        print(f"have {m} {getattr(mod, '__version__', '?')}")
    except Exception as e:  # noqa: BLE001 - any failure means "missing"
        print(f"miss {m} {type(e).__name__}: {str(e)[:120]}")
try:
    import torch
    print(f"cuda {int(torch.cuda.is_available())}")
except Exception:  # noqa: BLE001
    print("cuda 0")
PYEOF
	)
	logq "stack probe ($PY):"
	logq "$probe"
	STACK_VERSIONS=$(printf '%s\n' "$probe" | awk '$1=="have"{printf "%s %s; ", $2, $3}')
	_has() { printf '%s\n' "$probe" | grep -q "^have $1 "; }
	HAVE_TORCH=0 HAVE_CUPY=0 HAVE_TRITON=0 HAVE_JAX=0
	WHY_TORCH="python3 cannot import torch+torchvision or torch sees no GPU"
	WHY_CUPY="python3 cannot import cupy"
	WHY_TRITON="python3 cannot import triton+torch or torch sees no GPU"
	WHY_JAX="python3 cannot import jax"
	if _has torch && _has torchvision && printf '%s\n' "$probe" | grep -q '^cuda 1'; then
		HAVE_TORCH=1
	fi
	_has cupy && HAVE_CUPY=1
	_has jax && HAVE_JAX=1
	if _has triton && [ "$HAVE_TORCH" = 1 ]; then HAVE_TRITON=1; fi
	KMUX_STACKS_CHECKED=1
	export HAVE_NVCC HAVE_TORCH HAVE_CUPY HAVE_TRITON HAVE_JAX WHY_NVCC \
		WHY_TORCH WHY_CUPY WHY_TRITON WHY_JAX STACK_VERSIONS \
		KMUX_STACKS_CHECKED
	log "stacks: nvcc=$HAVE_NVCC torch=$HAVE_TORCH cupy=$HAVE_CUPY triton=$HAVE_TRITON jax=$HAVE_JAX ($STACK_VERSIONS)"
}

# kmux_ident: a line naming the kmux build that is being measured
kmux_ident() {
	local rev sum
	rev=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo "no commit")
	if git -C "$ROOT" status --porcelain 2>/dev/null | grep -q .; then
		rev="$rev (+uncommitted changes)"
	fi
	sum=$(sha256sum "$KMUX_LIB" 2>/dev/null | cut -c1-12)
	echo "repo $rev; libkmux.so sha256 ${sum:-missing}"
}
