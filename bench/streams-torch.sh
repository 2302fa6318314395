#!/usr/bin/env bash
# streams-torch.sh - a follow-up to bench/streams.sh for the PyTorch programs
# alone (googlenet, ensemble in one process): kmux verify once, then ROUNDS
# rounds of plain, `kmux run --streams N` and, when AB_ENV is set, the same
# with AB_ENV's variables (e.g. AB_ENV=KMUX_KEEP_UP=0: kmux without one
# part), the order rotated each round, each run a fresh process.  These
# programs are bound by the host's launch rate, so their times move with
# the CPU a process lands on: PIN (e.g. "taskset -c 4-7") runs every mode
# on the same cores.  Every run's RESULT lines and kmux's exit statistics go
# to $OUT/streams-torch.log; $OUT/streams-torch.md has, per app and mode,
# the median over processes of each process's median time and of each
# process's best repetition.  INPROC=1 adds the mode inprocN: `kmux run
# --streams N` with KMUX_BENCH_AB=1, where each process alternates blocks of
# its ROIs with the scheduler paused and running (bench/apps/py/torchbench.py)
# and reports the ratio inside the process, free of the noise between
# processes; $MD then has a table of those ratios too.  INPROC=only runs
# that mode alone and skips the verify; INPROC_ENV (VAR=value words) is
# set for it (e.g. KMUX_KEEP_UP=0: what one part of kmux costs;
# KMUX_BENCH_AB=aa: the method's A/A control, both arms paused).  Run on the GPU
# machine with build/ carried:
#
#     ROUNDS=8 N=16 AB_ENV=KMUX_KEEP_UP=0 PIN="taskset -c 4-7" bash bench/streams-torch.sh
#     ROUNDS=4 N=16 INPROC=1 REPS=15 bash bench/streams-torch.sh
set -u
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1
OUT=${OUT:-./out}
mkdir -p "$OUT"
LOG=$OUT/streams-torch.log
MD=$OUT/streams-torch.md
ROUNDS=${ROUNDS:-3}
N=${N:-8}
AB_ENV=${AB_ENV:-}
read -r -a PIN <<<"${PIN:-}"
PY=${PYTHON:-python3}
KMUX=(env LD_LIBRARY_PATH=build/devlibs KMUX_LOG=info build/kmux)
SUITE=(bench/apps/py/torch_suite.py plain --apps googlenet,ensemble --reps "${REPS:-5}" --warmup 3)
MODES=(plain "kmux$N")
[ -n "$AB_ENV" ] && MODES+=("ab$N")
[ "${INPROC:-0}" = 1 ] && MODES+=("inproc$N")
[ "${INPROC:-0}" = only ] && MODES=("inproc$N")

# mode_cmd MODE: the words that run the suite in MODE
mode_cmd() {
	case $1 in
	plain) printf '%s\n' "${PIN[@]}" "$PY" "${SUITE[@]}" ;;
	kmux*) printf '%s\n' "${PIN[@]}" "${KMUX[@]}" run --streams "$N" -- "$PY" "${SUITE[@]}" ;;
	# shellcheck disable=SC2086  # AB_ENV is a list of VAR=value words
	ab*) printf '%s\n' "${PIN[@]}" env $AB_ENV "${KMUX[@]}" run --streams "$N" -- "$PY" "${SUITE[@]}" ;;
	# shellcheck disable=SC2086  # INPROC_ENV is a list of VAR=value words
	inproc*) printf '%s\n' "${PIN[@]}" env KMUX_BENCH_AB=1 ${INPROC_ENV:-} "${KMUX[@]}" run --streams "$N" -- "$PY" "${SUITE[@]}" ;;
	esac
}

{
	echo "# $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1)"
	echo "# git: $(git rev-parse --short HEAD 2>/dev/null); libkmux.so sha256 $(sha256sum build/libkmux.so | cut -c1-12)"
	if [ "${INPROC:-0}" != only ]; then
		echo "## verify: ${KMUX[*]} verify --streams $N -- $PY bench/apps/py/torch_suite.py plain --apps googlenet,ensemble --reps 1 --warmup 1"
		timeout 120 "${KMUX[@]}" verify --streams "$N" -- "$PY" bench/apps/py/torch_suite.py plain \
			--apps googlenet,ensemble --reps 1 --warmup 1 2>&1 | tail -15
		echo "verify rc=${PIPESTATUS[0]}"
	fi
	echo "## inproc env: ${INPROC_ENV:-none}"
	for r in $(seq 1 "$ROUNDS"); do
		for k in $(seq 0 $((${#MODES[@]} - 1))); do
			m=${MODES[$(((k + r) % ${#MODES[@]}))]}
			mapfile -t cmd < <(mode_cmd "$m")
			echo "## round $r $m: ${cmd[*]}"
			timeout 150 "${cmd[@]}" 2>&1 | grep -E '^RESULT|^AB |^CHECK|kmux:.*(streams|idle)|Error' |
				sed -E "s/^(RESULT|AB) /\1 mode=$m round=$r /"
		done
	done
} >"$LOG" 2>&1

# The summary: medians over processes of ms= and min_ms=.
python3 - "$LOG" "$MD" "$AB_ENV" <<'EOF'
import re, statistics, sys
log, md, ab = sys.argv[1:4]
rows = {}
for line in open(log):
    m = re.match(r"RESULT mode=(\S+) round=\d+ app=(\S+) variant=\S+ ms=([\d.]+) \S+ min_ms=([\d.]+)", line)
    if m:
        rows.setdefault((m[2], m[1]), []).append((float(m[3]), float(m[4])))
out = ["| app | mode | runs | median ms | min..max ms | median of best rep ms |", "|---|---|---|---|---|---|"]
for (app, mode), v in sorted(rows.items()):
    ms = [a for a, _ in v]
    out.append(f"| {app} | {mode} | {len(v)} | {statistics.median(ms):.2f} | {min(ms):.1f}..{max(ms):.1f} | "
               f"{statistics.median(b for _, b in v):.2f} |")
if ab:
    out.append(f"\nab modes: kmux run --streams N with {ab}; kmux modes: as shipped.")
abr = {}
for line in open(log):
    m = re.match(r"AB mode=\S+ round=\d+ app=(\S+) variant=\S+ paused_ms=([\d.]+) sched_ms=([\d.]+) "
                 r"ratio=([\d.]+) ratio_lo=([\d.]+) ratio_hi=([\d.]+) pairs=(\d+)", line)
    if m:
        abr.setdefault(m[1], []).append([float(x) for x in m.groups()[1:6]] + [int(m[7])])
if abr:
    out += ["", "In-process A/B (inproc mode): per process, the median over block pairs of "
            "scheduled / paused ROI time (above 1: kmux slower).", "",
            "| app | processes | pairs each | paused ms (median) | scheduled ms (median) | "
            "ratio, median over processes | per-process ratios | widest per-process IQR |",
            "|---|---|---|---|---|---|---|---|"]
    for app, v in sorted(abr.items()):
        rs = [x[2] for x in v]
        out.append(f"| {app} | {len(v)} | {v[0][5]} | {statistics.median(x[0] for x in v):.2f} | "
                   f"{statistics.median(x[1] for x in v):.2f} | {statistics.median(rs):.4f} | "
                   f"{', '.join(f'{r:.3f}' for r in rs)} | "
                   f"{max(x[4] - x[3] for x in v):.3f} |")
open(md, "w").write("\n".join(out) + "\n")
print("\n".join(out))
EOF
grep -E "verify rc|identical|differ" "$LOG" | head -5
