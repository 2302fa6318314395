#!/usr/bin/env bash
# symbols-check.sh - does kmux order a copy to a `__constant__`
# (cudaMemcpyToSymbol) by the kernels that read it, instead of making it a
# barrier (docs/design-streams.md, "Module-scope variables")?  Run on the
# GPU machine from the repo root, with build/ carried:
#   OUT=$OUT bash bench/gpu/symbols-check.sh
#
# Builds progs/const_symbol.cu and runs it SYMBOLS_REPS times (default 5)
# each way, the order rotated every round:
#   plain     the reference checksum
#   run       kmux run --streams 16
#   run-off   the same with KMUX_PTX_GLOBALS=0: the copy is a barrier, as
#             before the located variables (the baseline)
#   verify    kmux verify --streams 16: the device-to-host copies identical?
#             (not --stdout: the program prints its own timing)
# Reports each way's median roi_ms, the median over rounds of the per-round
# ratios, runs whose checksum equals plain's, and kmux's own counts
# (barriers, variables located).  One traced run shows which driver copy
# cudart makes.  Then progs/symbol_ptr.cu (a `__device__` variable named by
# one kernel and reached through a cudaGetSymbolAddress pointer by another,
# alternating) SYMBOLS_PTR_REPS times (default 5): plain, kmux run
# --streams 16, and, when SYMBOLS_OLD_LIB names a library, the same run
# with it (KMUX_LIBRARY: the control).  Output: $OUT/symbols-check.md,
# $OUT/symbols-check.log.
set -u
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
LOG=$OUT/symbols-check.log
: >"$LOG"
REPS=${SYMBOLS_REPS:-5}
N=${SYMBOLS_STREAMS:-16}
P=$WORK/bin/const_symbol
log "symbols-check: GPU $(gpu_line); $(kmux_ident)"
nv "$P" $NVCCFLAGS "$PROGS/const_symbol.cu" ||
	{ log "build failed"; cat "${BUILD_LOG:-$WORK/build.log}"; exit 1; }
"$P" >"$WORK/ref" 2>&1 || { log "plain run failed"; cat "$WORK/ref"; exit 1; }
REF=$(sed -n 's/^checksum //p' "$WORK/ref")
kmux_cli trace -o "$WORK/trace.json" --summary-json "$OUT/symbols-trace-summary.json" -q -- "$P" \
	>"$WORK/traced" 2>&1
log "traced: exit $?; $(cat "$WORK/traced" | tr '\n' ' ')"
ways=(plain run run-off verify)
declare -A good ms
for w in "${ways[@]}"; do good[$w]=0; ms[$w]=""; done
ratios_off=""
ratios_plain=""
for ((i = 1; i <= REPS; i++)); do
	n=${#ways[@]}
	declare -A t=()
	for ((j = 0; j < n; j++)); do
		w=${ways[$(((i - 1 + j) % n))]}
		out=$WORK/$w.$i
		case $w in
		plain) "$P" >"$out" 2>"$out.err" ;;
		run) KMUX_LOG=info kmux_cli run --streams "$N" -- "$P" >"$out" 2>"$out.err" ;;
		run-off) KMUX_PTX_GLOBALS=0 KMUX_LOG=info kmux_cli run --streams "$N" -- "$P" >"$out" 2>"$out.err" ;;
		verify) KMUX_LOG=info kmux_cli verify --streams "$N" -- "$P" >"$out" 2>"$out.err" ;;
		esac
		rc=$?
		case $w in
		verify) ok=$([ "$rc" = 0 ] && grep -q 'kmux verify: identical' "$out" "$out.err" && echo 1 || echo 0) ;;
		*) ok=$([ "$rc" = 0 ] && [ "$(sed -n 's/^checksum //p' "$out")" = "$REF" ] && echo 1 || echo 0)
		   t[$w]=$(sed -n 's/^roi_ms //p' "$out" | head -n 1)
		   ms[$w]="${ms[$w]} ${t[$w]}" ;;
		esac
		good[$w]=$((good[$w] + ok))
		{
			echo "----- $w, round $i: exit $rc, checksum as plain/identical: $ok"
			cat "$out"
			grep -E 'kmux verify|streams: pid|ptx-readonly: pid' "$out.err" | cut -c1-700
		} >>"$LOG"
	done
	ratios_off="$ratios_off $(awk -v a="${t[run-off]}" -v b="${t[run]}" 'BEGIN {printf "%.3f", a / b}')"
	ratios_plain="$ratios_plain $(awk -v a="${t[plain]}" -v b="${t[run]}" 'BEGIN {printf "%.3f", a / b}')"
	log "round $i/$REPS: plain ${t[plain]} ms, run ${t[run]} ms, run-off ${t[run-off]} ms"
done
median() { tr ' ' '\n' | grep . | sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }

# The pointer case: right or wrong, each way.
PP=$WORK/bin/symbol_ptr
PREPS=${SYMBOLS_PTR_REPS:-5}
OLD=${SYMBOLS_OLD_LIB:-}
pways=(plain run)
[ -n "$OLD" ] && pways+=(run-old)
declare -A pgood
for w in "${pways[@]}"; do pgood[$w]=0; done
if nv "$PP" $NVCCFLAGS "$PROGS/symbol_ptr.cu"; then
	for ((i = 1; i <= PREPS; i++)); do
		for w in "${pways[@]}"; do
			out=$WORK/p-$w.$i
			case $w in
			plain) "$PP" >"$out" 2>&1 ;;
			run) KMUX_LOG=info kmux_cli run --streams "$N" -- "$PP" >"$out" 2>&1 ;;
			run-old) KMUX_LIBRARY=$OLD KMUX_LOG=info kmux_cli run --streams "$N" -- "$PP" >"$out" 2>&1 ;;
			esac
			rc=$?
			ok=$([ "$rc" = 0 ] && grep -q '^order ok' "$out" && echo 1 || echo 0)
			pgood[$w]=$((pgood[$w] + ok))
			{ echo "----- symbol_ptr $w, run $i: exit $rc, right: $ok"; grep -E '^state|^order|streams: pid|ptx-readonly: pid' "$out" | cut -c1-600; } >>"$LOG"
		done
	done
	log "symbol_ptr: $(for w in "${pways[@]}"; do printf '%s %s/%s; ' "$w" "${pgood[$w]}" "$PREPS"; done)"
else
	log "symbol_ptr: build failed"
fi

MD=$OUT/symbols-check.md
{
	echo "# A \`__constant__\` set before each step (cudaMemcpyToSymbol)"
	echo
	echo "- date: $(date -u '+%Y-%m-%d %H:%M:%S UTC'); GPU, driver: $(gpu_line)"
	echo "- kmux: $(kmux_ident); --streams $N; $REPS rounds, the order rotated"
	echo
	echo "| way | median roi_ms | roi_ms per round | checksum as plain (run) / identical (verify) |"
	echo "|---|---|---|---|"
	for w in plain run run-off; do
		echo "| $w | $(echo "${ms[$w]}" | median) | ${ms[$w]# } | ${good[$w]} of $REPS |"
	done
	echo "| verify | | | ${good[verify]} of $REPS |"
	echo
	echo "- run-off / run, median of per-round ratios: **$(echo "$ratios_off" | median)** (${ratios_off# })"
	echo "- plain / run, median of per-round ratios: **$(echo "$ratios_plain" | median)** (${ratios_plain# })"
	echo
	echo "kmux's reports, first round:"
	echo
	for w in run run-off verify; do
		echo "- $w: $(grep -h -E "streams: pid|ordered by their module|kmux verify:" "$WORK/$w.1.err" "$WORK/$w.1" |
			sed -e 's/.*streams: pid [0-9]*: //' -e 's/.*errors; //' -e 's/; events after.*//' | tr '\n' ' ' | cut -c1-600)"
	done
	echo
	echo "symbol_ptr (a pointer to a \`__device__\` variable as a parameter), runs whose state is program order's:"
	echo
	echo "| way | right |"
	echo "|---|---|"
	for w in "${pways[@]}"; do echo "| $w | ${pgood[$w]:-0} of $PREPS |"; done
	[ -n "$OLD" ] && echo && echo "run-old: KMUX_LIBRARY=$OLD (sha256 $(sha256sum "$OLD" | cut -c1-12))"
	echo
	echo "The traced run's copies and syncs by kind (kmux trace):"
	echo
	echo '```'
	"$PY" -c 'import json, sys, collections
d = json.load(open(sys.argv[1]))
ev = d["traceEvents"] if isinstance(d, dict) else d
c = collections.Counter((e.get("cat"), e.get("name")) for e in ev
                        if e.get("cat") in ("memcpy", "memset", "sync"))
for (cat, name), k in sorted(c.items(), key=str):
    print(cat, name, k)' "$WORK/trace.json" 2>&1
	echo '```'
	echo
	echo "Commands (\$W: scratch dir):"
	echo
	echo "    $NVCC $NVCCFLAGS bench/gpu/progs/const_symbol.cu -o \$W/bin/const_symbol"
	echo '    $W/bin/const_symbol'
	echo "    KMUX_LOG=info build/kmux run --streams $N -- \$W/bin/const_symbol"
	echo "    KMUX_PTX_GLOBALS=0 KMUX_LOG=info build/kmux run --streams $N -- \$W/bin/const_symbol"
	echo "    KMUX_LOG=info build/kmux verify --streams $N -- \$W/bin/const_symbol"
	echo "    build/kmux trace -o \$W/trace.json --summary-json symbols-trace-summary.json -q -- \$W/bin/const_symbol"
	echo "    $NVCC $NVCCFLAGS bench/gpu/progs/symbol_ptr.cu -o \$W/bin/symbol_ptr"
	echo "    \$W/bin/symbol_ptr; KMUX_LOG=info build/kmux run --streams $N -- \$W/bin/symbol_ptr"
	[ -n "$OLD" ] && echo "    KMUX_LIBRARY=$OLD KMUX_LOG=info build/kmux run --streams $N -- \$W/bin/symbol_ptr"
} >"$MD"
cat "$MD"
