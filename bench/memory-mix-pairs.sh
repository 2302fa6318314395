#!/usr/bin/env bash
# memory-mix-pairs.sh - issue 5 (b), repeated: K runs of bench/memory-mix.sh
# on one mix with two modes A and B, their order alternating (A B, then
# B A, ...) so that neither always runs first.  Each run is a whole
# memory-mix.sh (its own calibration, fresh daemons).  The judging rule,
# fixed before any run: the median over runs of makespan(B) / makespan(A),
# i.e. A's throughput relative to B's; every run's ratio and the most
# tasks running at once are shown beside it.  ONE device call, from the
# repo root, after `make` and `bash bench/gpu/prepare.sh` here (build/
# carried):
#
#     OUT=$OUT/pairs KMUX_PAIRS=4 KMUX_PAIRS_SET=staged \
#         KMUX_PAIRS_MODES="evict-mps quota-mps" KMUX_PAIRS_BUDGET_S=420 \
#         bash bench/memory-mix-pairs.sh
#
# Every other KMUX_MIX_* setting passes through (KMUX_MIX_DRY=1: simcuda
# stand-ins, no GPU).  Each run gets KMUX_PAIRS_RUN_S (100) of budget:
# memory-mix.sh starts a mode only with 60 s left, so a run of two modes
# needs its calibration, the first mode and 60 s (the first GPU call, which
# split the budget evenly, gave its first runs 62 and 81 s and they skipped
# modes); no run starts with less than that left.
# Output under $OUT: pairs.md (the table), pairs.log, run-I.tgz (run I's
# whole memory-mix.sh output: mix.md, mix.csv, mix.log, daemons' logs;
# packed, since a device call returns few files).  Exit 0 when every run
# exited 0 and at least one measured both modes.
set -u
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1
OUT=${OUT:-./out}
mkdir -p "$OUT" && OUT=$(cd "$OUT" && pwd) || exit 1
K=${KMUX_PAIRS:-4}
SET=${KMUX_PAIRS_SET:-staged}
read -r A B EXTRA <<<"${KMUX_PAIRS_MODES:-evict-mps quota-mps}"
BUDGET=${KMUX_PAIRS_BUDGET_S:-420}
RUN_S=${KMUX_PAIRS_RUN_S:-100}
case $K in '' | *[!0-9]* | 0) echo "memory-mix-pairs: KMUX_PAIRS='$K' is not a positive count" >&2; exit 2 ;; esac
case $BUDGET in '' | *[!0-9]* | 0) echo "memory-mix-pairs: KMUX_PAIRS_BUDGET_S='$BUDGET' is not a positive number of seconds" >&2; exit 2 ;; esac
case $RUN_S in '' | *[!0-9]* | 0) echo "memory-mix-pairs: KMUX_PAIRS_RUN_S='$RUN_S' is not a positive number of seconds" >&2; exit 2 ;; esac
if [ -z "${B:-}" ] || [ -n "${EXTRA:-}" ] || [ "$A" = "$B" ]; then
	echo "memory-mix-pairs: KMUX_PAIRS_MODES needs two different modes, e.g. \"evict-mps quota-mps\"" >&2
	exit 2
fi
for m in "$A" "$B"; do
	case $m in
	quota | evict | evict-mps | quota-mps) ;;
	*) echo "memory-mix-pairs: unknown mode '$m' (quota evict evict-mps quota-mps)" >&2; exit 2 ;;
	esac
done
case $SET in
apps | staged | torch) ;;
*) echo "memory-mix-pairs: unknown mix '$SET' (apps, staged, torch)" >&2; exit 2 ;;
esac

LOG=$OUT/pairs.log
: >"$LOG"
START=$(date +%s)
FAILS=0
log() { echo "[$(date +%T)] $*" | tee -a "$LOG"; }
log "pairs: $K runs of $SET, modes $A and $B alternating, budget ${BUDGET}s"
for ((i = 1; i <= K; i++)); do
	left=$((BUDGET - ($(date +%s) - START)))
	per=$RUN_S
	if [ "$left" -lt "$per" ]; then
		log "run $i: out of time (${left}s left, a run needs ${per}s)"
		break
	fi
	if ((i % 2)); then modes="$A $B"; else modes="$B $A"; fi
	d=$OUT/run-$i
	log "run $i: modes $modes, budget ${per}s"
	OUT=$d KMUX_MIX_SETS=$SET KMUX_MIX_MODES="$modes" KMUX_MIX_BUDGET_S=$per \
		bash bench/memory-mix.sh >"$OUT/run-$i.console" 2>&1
	rc=$?
	[ "$rc" = 0 ] || { FAILS=$((FAILS + 1)); log "run $i: memory-mix.sh exited $rc"; }
	mkdir -p "$d" && mv "$OUT/run-$i.console" "$d/console.log"
done

python3 - "$OUT" "$SET" "$A" "$B" >"$OUT/pairs.md" 2>>"$LOG" <<'EOF'
import csv, glob, os, re, statistics, sys
out, s, a, b = sys.argv[1:5]
print("# bench/memory-mix-pairs.sh: %s mix, %s against %s\n" % (s, a, b))
print("Each run: bench/memory-mix.sh with both modes, order alternating; the rule fixed")
print("before the runs: the median over runs of makespan(%s) / makespan(%s).\n" % (b, a))
print("| run | order | %s makespan (s) | %s makespan (s) | most at once %s / %s | failed tasks | ratio |" % (a, b, a, b))
print("|---|---|---|---|---|---|---|")
ratios = []
for p in sorted(glob.glob(os.path.join(out, "run-*", "mix.csv")), key=lambda x: int(re.findall(r"run-(\d+)", x)[-1])):
    i = re.findall(r"run-(\d+)", p)[-1]
    span, fail, order = {}, 0, []
    for r in csv.DictReader(open(p)):
        if r["set"] != s:
            continue
        if r["task"] == "all" and r["key"] == "makespan_ms":
            span[r["mode"]] = float(r["value"]) / 1000.0
            order.append(r["mode"])
        if r["key"] == "failed" and r["mode"] in (a, b):
            fail += 1
    most = {}
    md = os.path.join(os.path.dirname(p), "mix.md")
    if os.path.exists(md):
        for line in open(md):
            c = [x.strip() for x in line.split("|")]
            if len(c) > 5 and c[1] in (a, b):
                most[c[1]] = c[4]
    ra = span.get(a)
    rb = span.get(b)
    ratio = "-"
    if ra and rb:
        ratios.append(rb / ra)
        ratio = "%.2f" % (rb / ra)
    f = lambda v: "%.1f" % v if v else "not run"
    print("| %s | %s | %s | %s | %s / %s | %d | %s |" % (i, " ".join(order), f(ra), f(rb),
          most.get(a, "?"), most.get(b, "?"), fail, ratio))
if ratios:
    print("\n**Median over %d runs: %s has %.2fx the throughput of %s** (runs: %s)." % (
          len(ratios), a, statistics.median(ratios), b, ", ".join("%.2f" % r for r in ratios)))
else:
    print("\nNo run measured both modes.")
EOF
# Packed: a device call returns few files.
for d in "$OUT"/run-*/; do
	[ -d "$d" ] || continue
	d=${d%/}
	(cd "$OUT" && tar czf "${d##*/}.tgz" "${d##*/}" && rm -rf "${d##*/}")
done
log "pairs: done in $(($(date +%s) - START))s, $FAILS runs failed; $OUT/pairs.md"
grep -q "^\*\*Median over" "$OUT/pairs.md" || { log "pairs: no run measured both modes"; exit 1; }
[ "$FAILS" = 0 ]
