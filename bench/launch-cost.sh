#!/usr/bin/env bash
# bench/launch-cost.sh - what kmux's stream scheduler adds to the host time
# of one default-stream kernel launch (issue 3: PyTorch is bound by its
# launch rate).  CPU only: runs tests/e2e/progs/launch-cost.c on simcuda with
# SIMCUDA_DISCARD=1 (launches checked, never run, so no simulated worker
# thread competes with the caller), plain and under the preload.
#
#   bash bench/launch-cost.sh [LIB...]      (default: build/libkmux.so)
#
# For each pattern and N: "ns" is the added host time per launch (kmux run
# minus a plain run just before it, each the best of 7 trials of 20000
# launches; the median of 3 such pairs), "Ir" the added instructions per
# launch counted by valgrind's callgrind (the difference between 4000 and
# 2000 launches, so set-up cancels): exact and immune to a shared machine's
# noise.  Needs `make` (build/) first; Ir needs valgrind (else "-").
# Several LIBs (e.g. an older build copied aside) are measured side by side.
# KMUX_LAUNCH_COST_PATTERNS picks patterns (default all six; "cudart" is
# torch called through cuGetProcAddress pointers with cudart's ten
# cuCtxGetDevice_v2 calls per launch; "staged" is
# bench/memory/staged.cu's request: two synchronous 1 KiB copies around 4
# launches, every operation counted, the copies too).
# N is a setting (KMUX_LAUNCH_COST_SETTINGS, default "1 8 16 pass lazy"): a
# number is KMUX_STREAMS=N with every launch scheduled (KMUX_PASS_THROUGH=0:
# discarded launches leave the "GPU" always idle, so kmux would pass them
# through); "pass" is KMUX_STREAMS=16 as shipped, i.e. what a launch costs
# once kmux passes a launch-bound program's work through; "lazy" and "evict" are the memory manager alone
# (KMUX_MEMORY=lazy|evict, KMUX_LAZY_MIN=1 so that launch-cost's 256-byte
# allocations are all managed, evict with an ample 1 TiB budget; for the
# staged pattern the default minimum, so that its 4 MiB weights are
# managed and its activations are not, as in staged.cu): what issue 5's
# (c) costs a launch on the host, exactly (bench/memory.sh's PyTorch
# rounds cannot resolve a few % through per-process noise); "quota" is
# the preload with nothing switched on, for comparison.
set -u
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
LIBS=("$@")
[ ${#LIBS[@]} -eq 0 ] && LIBS=("$BUILD/libkmux.so")
PROG=$BUILD/tests/e2e/launch-cost
export LD_LIBRARY_PATH=$BUILD/simcuda E2E_MODULE=$BUILD/simcuda/kernels/basic.so
export SIMCUDA_DISCARD=1 CUDA_DEVICE_MAX_CONNECTIONS=32
for f in "$PROG" "${LIBS[@]}"; do
	[ -e "$f" ] || { echo "launch-cost: $f missing (make first)" >&2; exit 1; }
done
have_vg=0
command -v valgrind >/dev/null && have_vg=1
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

ns_of() { awk '/ns\/launch/{print $3}'; }

# setting_env N [PATTERN]: the environment of a setting (see above), or
# exit 2.
setting_env() {
	local min=KMUX_LAZY_MIN=1
	[ "${2:-}" = staged ] && min=
	case $1 in
	pass) echo "KMUX_STREAMS=16" ;;
	quota) echo "KMUX_MEMORY=quota" ;;
	lazy) echo "KMUX_MEMORY=lazy $min" ;;
	evict) echo "KMUX_MEMORY=evict $min KMUX_MEM_BUDGET=1T" ;;
	*[!0-9]* | "") echo "launch-cost: unknown setting '$1' (a stream count, pass, quota, lazy or evict)" >&2; exit 2 ;;
	*) echo "KMUX_STREAMS=$1 KMUX_PASS_THROUGH=0" ;;
	esac
}
SETTINGS=${KMUX_LAUNCH_COST_SETTINGS:-1 8 16 pass lazy}
for n in $SETTINGS; do setting_env "$n" >/dev/null || exit 2; done

# ir PRELOAD N PATTERN OPS: instructions of the whole run (PRELOAD may be "").
ir() {
	local out=$TMP/cg
	rm -f "$out"
	if [ -n "$1" ]; then
		# shellcheck disable=SC2046
		env $(setting_env "$2" "$3") LD_PRELOAD=$1 valgrind --tool=callgrind \
			--callgrind-out-file="$out" "$PROG" "$3" "$4" 1 \
			>/dev/null 2>&1
	else
		valgrind --tool=callgrind --callgrind-out-file="$out" \
			"$PROG" "$3" "$4" 1 >/dev/null 2>&1
	fi
	sed -n 's/^summary: //p' "$out" 2>/dev/null | awk '{print $1}'
}

ir_per_launch() { # PRELOAD N PATTERN
	local a b
	a=$(ir "$1" "$2" "$3" 2000)
	b=$(ir "$1" "$2" "$3" 4000)
	[ -n "$a" ] && [ -n "$b" ] && echo $(((b - a) / 2000))
}

echo "| pattern | N | lib | plain ns | added ns | plain Ir | added Ir | waits issued | events after+lazy |"
echo "|---|---|---|---|---|---|---|---|---|"
for p in ${KMUX_LAUNCH_COST_PATTERNS:-indep chain torch cudart fork staged}; do
	pir=-
	[ $have_vg = 1 ] && pir=$(ir_per_launch "" 0 "$p")
	for n in $SETTINGS; do
		for lib in "${LIBS[@]}"; do
			adds=() plain=()
			for r in 1 2 3; do
				a=$("$PROG" "$p" 20000 7 | ns_of)
				# shellcheck disable=SC2046
				b=$(env $(setting_env "$n" "$p") KMUX_LOG=info LD_PRELOAD=$lib \
					"$PROG" "$p" 20000 7 2>"$TMP/log" | ns_of)
				plain+=("$a")
				adds+=("$(awk -v a="$a" -v b="$b" 'BEGIN{printf "%.0f", b - a}')")
			done
			add=$(printf '%s\n' "${adds[@]}" | sort -n | sed -n 2p)
			pl=$(printf '%s\n' "${plain[@]}" | sort -n | sed -n 2p)
			w=$(sed -n 's/.*waits issued \([0-9]*\),.*/\1/p' "$TMP/log")
			ev=$(sed -n 's/.*events after \([0-9]*\), lazy \([0-9]*\).*/\1+\2/p' "$TMP/log")
			kir=-
			if [ $have_vg = 1 ]; then
				k=$(ir_per_launch "$lib" "$n" "$p")
				[ -n "$k" ] && [ -n "$pir" ] && kir=$((k - pir))
			fi
			echo "| $p | $n | $(basename "$lib") | $pl | $add | $pir | $kir | ${w:--} | ${ev:--} |"
		done
	done
done
