#!/usr/bin/env bash
# Lockstep pairs (bench/gpu/torch-lockstep.sh, bench/apps/py/turns.py,
# bench/gpu/lockstep_report.py), without a GPU: a stand-in program takes
# turns like torch_suite.py does.  Two sides of a pair never run an ROI at
# the same time, every mode pairs with plain ROI by ROI and the report's
# ratios are the known ones; a side that dies ends its pair (the other side
# gives up after its turn timeout), which the runner reports and exits 1
# for; bad modes, a bad KMUX_BENCH_TURN and a broken log are errors.
. "$(dirname "$0")/lib.sh"

cond() { eval "$1"; }
export KMUX_SOCKET=$TMP/sock         # run8's kmux run: no daemon of the machine's

STANDIN=("${PYTHON:-python3}" "$ROOT/tests/e2e/progs/lockstep-stand-in.py")
export STANDIN_TRACE=$TMP/trace
export KMUX_BENCH_WORK=$TMP/work KMUX_BENCH_DEADLINE=$(( $(date +%s) + 600 ))
export KMUX_LIB=$PRELOAD KMUX_BIN=$KMUX KMUX_DEVLIBS=$TMP/none
export TL_PROG="${STANDIN[*]} 6"
LOCKSTEP=(bash "$ROOT/bench/gpu/torch-lockstep.sh")

OUT=$TMP/o1 TL_PAIRS=2 TL_MODES="plain2 bare st8 run8" "${LOCKSTEP[@]}" >"$TMP/o1.console" 2>&1
rc=$?
check "four modes, two pairs each: exit 0 ($rc)" [ "$rc" = 0 ]
md=$TMP/o1/torch-lockstep.md
row() { grep -E "^\| $1 \| $2 \|" "$md"; }
check "  ... the A/A pair's ratio is 1" cond 'row alpha plain2 | grep -q "| 2 | 12 | 1.0000 |"'
check "  ... bare: 1.05 on every ROI pair" cond 'row beta bare | grep -q "| 2 | 12 | 1.0500 | 1.0500..1.0500 |"'
check "  ... st8 and run8 (kmux run --streams 8): 1.155" \
	cond 'row alpha st8 | grep -q "| 1.1550 |" && row beta run8 | grep -q "| 1.1550 |"'
check "  ... the sides' ROI times move together (corr 1.00: the stand-in's ROI i is 10+i ms on both)" \
	cond 'row alpha bare | grep -q "| 1.00 | "'
check "  ... the sides alternated who went first" \
	cond '[ "$(grep -c "first plain exit" "$TMP/o1/torch-lockstep.log")" -gt 0 ] &&
	      grep -Eq "mode bare side bare first bare exit 0" "$TMP/o1/torch-lockstep.log"'
python3 - "$STANDIN_TRACE" >"$TMP/overlap" <<'PY'
import sys
lines = [l.split() for l in open(sys.argv[1])]
ok = len(lines) > 0 and all(
    a[1] == "begin" and b[1] == "end" and a[0] == b[0] for a, b in zip(lines[::2], lines[1::2]))
# strict turns: within a pair the two pids alternate ROI by ROI
alt = sum(1 for a, b in zip(lines[::2], lines[2::2]) if a[0] != b[0])
print(ok, len(lines) // 2, alt)
PY
read -r nooverlap nroi nalt <"$TMP/overlap"
check "no two ROIs overlapped ($nroi ROIs)" [ "$nooverlap" = True ]
check "  ... and the sides took turns ROI by ROI ($nalt switches)" [ "$nalt" -ge $((nroi * 3 / 4)) ]

rm -f "$STANDIN_TRACE"
start=$(date +%s)
OUT=$TMP/o2 TL_PAIRS=1 TL_MODES=bare STANDIN_DIE=3 KMUX_BENCH_TURN_TIMEOUT=2 \
	"${LOCKSTEP[@]}" >"$TMP/o2.console" 2>&1
rc=$?
check "a side dies mid-pair: exit 1 ($rc)" [ "$rc" = 1 ]
check "  ... the other side gave up after its turn timeout, not the runner's 300 s" \
	[ $(( $(date +%s) - start )) -lt 60 ]
check "  ... and said why (exit 3)" cond 'grep -q "turns: no turn within 2 s" "$TMP/o2/torch-lockstep.log" &&
	grep -q "side plain first plain exit 3" "$TMP/o2/torch-lockstep.log"'
check "  ... the report names the failed pair" grep -q "FAILED: pair 0 bare" "$TMP/o2/torch-lockstep.md"

OUT=$TMP/o5 TL_PAIRS=1 TL_MODES=plain2 TL_CPUS=0 "${LOCKSTEP[@]}" >"$TMP/o5.console" 2>&1
rc=$?
check "TL_CPUS=0: both sides on CPU 0 ($rc)" cond '[ "$rc" = 0 ] && grep -q "command: taskset -c 0 " "$TMP/o5/torch-lockstep.log"'
OUT=$TMP/o6 TL_CPUS=99999 "${LOCKSTEP[@]}" >"$TMP/o6.console" 2>&1
rc=$?
check "TL_CPUS of no such CPU: exit 2, said ($rc)" cond '[ "$rc" = 2 ] && grep -q "TL_CPUS=99999: taskset cannot run" "$TMP/o6.console"'
OUT=$TMP/o3 TL_MODES="bare fast" "${LOCKSTEP[@]}" >"$TMP/o3.console" 2>&1
rc=$?
check "an unknown mode: exit 2, named ($rc)" cond '[ "$rc" = 2 ] && grep -q "unknown mode .fast." "$TMP/o3.console"'
OUT=$TMP/o4 TL_MODES=st8-lean TL_LIB_lean=$TMP/nope.so "${LOCKSTEP[@]}" >"$TMP/o4.console" 2>&1
rc=$?
check "st8-NAME without a library: exit 2 ($rc)" cond '[ "$rc" = 2 ] && grep -q "TL_LIB_lean names no readable library" "$TMP/o4.console"'

KMUX_BENCH_TURN=onlyone "${STANDIN[@]}" 1 >"$TMP/b1" 2>&1
rc=$?
check "KMUX_BENCH_TURN without MINE:THEIRS: exit 1, said ($rc)" cond '[ "$rc" = 1 ] && grep -q "want MINE:THEIRS" "$TMP/b1"'
KMUX_BENCH_TURN=$TMP/nope1:$TMP/nope2 "${STANDIN[@]}" 1 >"$TMP/b2" 2>&1
rc=$?
check "KMUX_BENCH_TURN of missing FIFOs: exit 1, named ($rc)" cond '[ "$rc" = 1 ] && grep -q "cannot open $TMP/nope1" "$TMP/b2"'

REPORT=(python3 "$ROOT/bench/gpu/lockstep_report.py")
printf -- '----- pair 0 mode bare side plain first plain exit 0\nROIS app=a variant=plain ms=1,2\n----- pair 0 mode bare side bare first plain exit 0\nROIS app=a variant=plain ms=1,x\n' >"$TMP/mangled.log"
"${REPORT[@]}" "$TMP/mangled.log" >"$TMP/r1" 2>&1
rc=$?
check "report: a mangled ROIS line fails its pair, exit 1 ($rc)" cond '[ "$rc" = 1 ] && grep -q "FAILED: pair 0 bare a: 2 plain ROIs, 0 bare ROIs" "$TMP/r1"'
printf -- '----- pair 0 mode bare side plain first plain exit 0\nROIS app=a variant=plain ms=1,2\n' >"$TMP/half.log"
"${REPORT[@]}" "$TMP/half.log" >"$TMP/r4" 2>&1
rc=$?
check "report: a pair with one side missing fails, said ($rc)" cond '[ "$rc" = 1 ] && grep -q "FAILED: pair 0 bare: plain exit 0, bare missing" "$TMP/r4"'
"${REPORT[@]}" "$TMP/nope.log" >"$TMP/r2" 2>&1
rc=$?
check "report: a missing log, exit 1 and named ($rc)" cond '[ "$rc" = 1 ] && grep -q "cannot read $TMP/nope.log" "$TMP/r2"'
: >"$TMP/empty.log"
"${REPORT[@]}" "$TMP/empty.log" >"$TMP/r3" 2>&1
rc=$?
check "report: an empty log is a failure ($rc)" cond '[ "$rc" = 1 ] && grep -q "no pair produced ROIs" "$TMP/r3"'
finish
