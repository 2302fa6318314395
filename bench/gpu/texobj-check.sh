#!/usr/bin/env bash
# texobj-check.sh - texture and surface objects and CUDA arrays under kmux,
# on a real GPU (src/preload/texobj.h, wrap-texobj.c, wrap-mem.c).  Run on the GPU
# machine from the repo root, with build/ carried:
#   OUT=$OUT bash bench/gpu/texobj-check.sh
#
# Builds progs/texobj.cu, then:
#   order, plain                 the reference output
#   order, kmux run --streams N  TEXOBJ_REPS times (default 5): the same
#                                output, and kmux's barrier count (each
#                                reader of a texture or surface object is
#                                one)
#   order, kmux verify           identical
#   order, the control           with TEXOBJ_CONTROL_LIB (a libkmux.so
#                                without the rule, e.g. built from 5e7bffe):
#                                how many of REPS runs still give the plain
#                                output (a race may not show every time)
#   quota, plain and under KMUX_MEM_QUOTA=128M with the bare preload: the
#                                96 MiB array fails (2) while the 64 MiB one
#                                lives, and succeeds once it is freed
# A check, not a benchmark.  Output: $OUT/texobj-check.md and .log.
set -u
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
LOG=$OUT/texobj-check.log
: >"$LOG"
REPS=${TEXOBJ_REPS:-5}
N=${TEXOBJ_STREAMS:-8}
B=$WORK/bin
fails=0
log "texobj-check: GPU $(gpu_line); $(kmux_ident)"
nv "$B/texobj" $NVCCFLAGS "$PROGS/texobj.cu" ||
	{ log "build failed"; cat "${BUILD_LOG:-$WORK/build.log}"; exit 1; }
P=$B/texobj
say() { echo "$*" >>"$WORK/report"; log "$*"; }
check() {
	local what=$1
	shift
	if "$@"; then say "ok   $what"; else say "FAIL $what"; fails=$((fails + 1)); fi
}
: >"$WORK/report"

"$P" order >"$WORK/ref" 2>&1
check "plain: order runs and checks itself (exit 0)" [ $? -eq 0 ]
{ echo "----- plain order"; cat "$WORK/ref"; } >>"$LOG"
same=0
for ((i = 1; i <= REPS; i++)); do
	KMUX_LOG=info kmux_cli run --streams "$N" -- "$P" order >"$WORK/run.$i" 2>"$WORK/run.$i.err"
	rc=$?
	[ "$rc" = 0 ] && cmp -s "$WORK/run.$i" "$WORK/ref" && same=$((same + 1))
	{ echo "----- kmux run --streams $N, run $i: exit $rc"; cat "$WORK/run.$i"
	  grep -E 'streams: pid|texobj|kmux:' "$WORK/run.$i.err" | cut -c1-600; } >>"$LOG"
done
check "kmux run --streams $N: $same of $REPS runs as plain" [ "$same" = "$REPS" ]
barriers=$(grep -ohE '[0-9]+ barriers' "$WORK/run.1.err" | head -n 1)
say "     kmux's report, run 1: ${barriers:-no streams line} ($(grep -oE '[0-9]+ ops' "$WORK/run.1.err" | head -n 1))"
KMUX_LOG=info kmux_cli verify --stdout --streams "$N" -- "$P" order >"$WORK/verify" 2>"$WORK/verify.err"
rc=$?
{ echo "----- kmux verify: exit $rc"; cat "$WORK/verify"; grep -E 'kmux verify' "$WORK/verify.err"; } >>"$LOG"
check "kmux verify --streams $N: identical" bash -c "[ $rc = 0 ] && grep -q 'kmux verify: identical' '$WORK/verify' '$WORK/verify.err'"

CTL=${TEXOBJ_CONTROL_LIB:-}
if [ -n "$CTL" ]; then
	same=0
	for ((i = 1; i <= REPS; i++)); do
		KMUX_LIBRARY=$CTL KMUX_LOG=info kmux_cli run --streams "$N" -- "$P" order \
			>"$WORK/ctl.$i" 2>"$WORK/ctl.$i.err"
		rc=$?
		[ "$rc" = 0 ] && cmp -s "$WORK/ctl.$i" "$WORK/ref" && same=$((same + 1))
		{ echo "----- control ($CTL), run $i: exit $rc"; cat "$WORK/ctl.$i"
		  grep -E 'streams: pid|texobj:|kmux:' "$WORK/ctl.$i.err" | cut -c1-600; } >>"$LOG"
	done
	say "     control, $(sha256sum "$CTL" | cut -c1-12) (no texture rule): $same of $REPS runs as plain"
fi

"$P" quota >"$WORK/q-plain" 2>&1
{ echo "----- plain quota"; cat "$WORK/q-plain"; } >>"$LOG"
check "plain: both arrays fit" bash -c "grep -qx 'array64 err=0' '$WORK/q-plain' && grep -qx 'array96 err=0' '$WORK/q-plain'"
KMUX_MEM_QUOTA=128M LD_PRELOAD=$KMUX_LIB "$P" quota >"$WORK/q-kmux" 2>&1
{ echo "----- KMUX_MEM_QUOTA=128M quota"; cat "$WORK/q-kmux"; } >>"$LOG"
check "quota 128M: the 64 MiB array fits" grep -qx 'array64 err=0' "$WORK/q-kmux"
check "quota 128M: cudaMemGetInfo says 64 MiB free with it" grep -q '^after64 free 64 MiB of 128$' "$WORK/q-kmux"
check "quota 128M: the 96 MiB array beside it fails (2)" grep -qx 'array96 err=2' "$WORK/q-kmux"
check "quota 128M: after cudaFreeArray it fits" grep -qx 'array96-again err=0' "$WORK/q-kmux"
check "quota 128M: everything back at the end" grep -q '^end free 128 MiB of 128$' "$WORK/q-kmux"

MD=$OUT/texobj-check.md
{
	echo "# Texture and surface objects, CUDA arrays"
	echo
	echo "- date: $(date -u '+%Y-%m-%d %H:%M:%S UTC'); GPU, driver: $(gpu_line)"
	echo "- kmux: $(kmux_ident); --streams $N; $REPS kmux runs"
	echo
	cat "$WORK/report"
	echo
	echo "# $fails check(s) failed"
	echo
	echo "Commands (\$W: scratch dir):"
	echo
	echo '    $W/bin/texobj order'
	echo "    KMUX_LOG=info build/kmux run --streams $N -- \$W/bin/texobj order"
	echo "    KMUX_LOG=info build/kmux verify --stdout --streams $N -- \$W/bin/texobj order"
	[ -n "$CTL" ] && echo "    KMUX_LIBRARY=$CTL KMUX_LOG=info build/kmux run --streams $N -- \$W/bin/texobj order"
	echo '    $W/bin/texobj quota'
	echo '    KMUX_MEM_QUOTA=128M LD_PRELOAD=build/libkmux.so $W/bin/texobj quota'
} >"$MD"
cat "$MD"
[ "$fails" = 0 ]
