#!/usr/bin/env bash
# torch-modes.sh - where kmux's cost on launch-bound PyTorch goes (issue 3:
# "no app slower than plain by more than 2%").  The suite's PyTorch
# programs (googlenet at batch 4 and an ensemble of small models, one
# process: bench/apps/py/torch_suite.py) in fresh processes, each rep
# running every mode once in a rotated order:
#   plain, plain2       no kmux (plain2/plain: the A/A noise floor)
#   bare                LD_PRELOAD=build/libkmux.so (interposition only)
#   st8                 the same with KMUX_STREAMS=8 (the scheduler)
#   st8-noptx           st8 with KMUX_PTX_READONLY=0 (no PTX analysis)
#   st8-nopass          st8 with KMUX_PASS_THROUGH=0 (scheduled, never
#                       passed through)
#   st8-ctl             st8 with TM_CONTROL_LIB (another libkmux.so: an A/B
#                       of a change, side by side)
#   st8-NAME            st8 with the library TM_LIB_NAME names (any number:
#                       TM_LIB_lean=build/lean/libkmux.so gives st8-lean)
#   run8                kmux run --streams 8 (as the suite runs it)
# Per mode: the median over reps of each process's ROI median, and the
# median of per-rep ratios to plain (paired).  A diagnostic, not a claim.
#
# Usage (GPU machine, repo root, build/ carried):
#   OUT=$OUT TM_REPS=5 bash bench/gpu/torch-modes.sh
# Output: $OUT/torch-modes.{csv,md,log}.
set -u
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
REPS=${TM_REPS:-5}
MODES=(${TM_MODES:-plain plain2 bare st8 st8-noptx st8-nopass run8})
CTL=${TM_CONTROL_LIB:-}
CSV=$OUT/torch-modes.csv
LOG=$OUT/torch-modes.log
: >"$LOG"
echo "rep,mode,app,ms" >"$CSV"
PROG=("$PY" "$ROOT/bench/apps/py/torch_suite.py" plain --apps googlenet,ensemble
      --reps 5 --warmup 3)
log "torch-modes: GPU $(gpu_line); $(kmux_ident); $REPS reps; modes ${MODES[*]}${CTL:+; control $(sha256sum "$CTL" | cut -c1-12)}"
for m in "${MODES[@]}"; do
	if lib=$(torch_mode_lib "$m" TM_LIB_); then
		log "torch-modes: $m: $(sha256sum "$lib" | cut -c1-12) $lib"
	fi
done

# run_one MODE: one fresh process; st8-ctl is st8-NAME with TM_CONTROL_LIB
run_one() {
	TM_LIB_ctl=$CTL torch_mode_cmd "$1" TM_LIB_ "${PROG[@]}" || {
		echo "torch-modes: $1: unknown mode, or its library is not set" >&2
		return 2
	}
	"${CMD[@]}"
}

n=${#MODES[@]}
for ((r = 0; r < REPS; r++)); do
	for ((k = 0; k < n; k++)); do
		m=${MODES[$(((k + r) % n))]}
		have_time 30 || break 2
		run_one "$m" >"$WORK/out" 2>"$WORK/err"
		rc=$?
		{ echo "----- rep $r $m: exit $rc"; cat "$WORK/out"
		  grep -E '^kmux:' "$WORK/err" | cut -c1-700; } >>"$LOG"
		awk -v r="$r" -v m="$m" '/^RESULT/ { split($2, a, "="); split($4, b, "=");
			print r "," m "," a[2] "," b[2] }' "$WORK/out" >>"$CSV"
	done
	log "torch-modes: rep $r done"
done

"$PY" - "$CSV" >"$OUT/torch-modes.md" <<'PY'
import csv, statistics, sys, collections
rows = list(csv.DictReader(open(sys.argv[1])))
t = collections.defaultdict(dict)
for x in rows:
    t[(x["app"], x["mode"])][int(x["rep"])] = float(x["ms"])
apps = sorted({x["app"] for x in rows})
modes = []
for x in rows:
    if x["mode"] not in modes:
        modes.append(x["mode"])
print("| app | mode | reps | median ms | median of per-rep ratio to plain | min..max ratio |")
print("|---|---|---|---|---|---|")
for a in apps:
    base = t.get((a, "plain"), {})
    for m in modes:
        v = t.get((a, m), {})
        if not v:
            continue
        rs = [v[r] / base[r] for r in v if r in base]
        print("| %s | %s | %d | %.3f | %s | %s |" % (
            a, m, len(v), statistics.median(v.values()),
            "%.3f" % statistics.median(rs) if rs else "-",
            "%.3f..%.3f" % (min(rs), max(rs)) if rs else "-"))
PY
cat "$OUT/torch-modes.md" >>"$LOG"
