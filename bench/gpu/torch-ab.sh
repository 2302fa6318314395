#!/usr/bin/env bash
# torch-ab.sh - the PyTorch overhead of the bare preload, measured against
# its own noise floor (issue 2, item 8).
#
# overhead.sh's PyTorch rows swing by 10-20% between processes of the SAME
# mode, more than the interposer can cost (a few ns per call, call_cost.c).
# So: every rep runs each mode once, in a shuffled order, pinned to the same
# cores, and includes a second plain run ("plain2"): the plain2/plain ratio is
# the A/A noise floor the bare/plain ratio must be read against.  Per run the
# value is the median step time; the table gives medians over reps and the
# median of per-rep ratios (paired, so slow drift of the machine cancels).
#
# Usage (repo root, GPU machine): bash bench/gpu/torch-ab.sh [REPS=8]
# Output: $OUT/torch-ab.csv (raw), $OUT/torch-ab.md (table, date, GPU, commands).
set -u
cd "$(dirname "$0")/../.."
REPS=${1:-8}
OUT=${OUT:-./out}
mkdir -p "$OUT"
PY=${PYTHON:-python3}
CPUS=${KMUX_AB_CPUS:-0-7}
CONFIGS=${KMUX_AB_CONFIGS:-32x224,32x64}
STEPS=${KMUX_AB_STEPS:-40}
WARM=${KMUX_AB_WARMUP:-15}
LIB=$PWD/build/libkmux.so
KMUX=$PWD/build/kmux
export LD_LIBRARY_PATH_KMUX=$PWD/build/devlibs
CSV=$OUT/torch-ab.csv
echo "rep,mode,config,step_ms" >"$CSV"
PROG=(taskset -c "$CPUS" "$PY" bench/gpu/progs/torch_resnet.py --bench
      --configs "$CONFIGS" --steps "$STEPS" --warmup "$WARM")

run_mode() {
	local mode=$1 tr=/tmp/torch-ab.trace.json
	case $mode in
	plain | plain2) "${PROG[@]}" ;;
	bare) LD_PRELOAD=$LIB "${PROG[@]}" ;;
	trace) LD_LIBRARY_PATH=$LD_LIBRARY_PATH_KMUX "$KMUX" trace -q -o "$tr" -- "${PROG[@]}" ;;
	esac
	rm -f "$tr"
}

echo "torch-ab: $(date -u '+%F %T UTC'), $REPS reps, cpus $CPUS, configs $CONFIGS, $WARM warm-up + $STEPS steps"
for rep in $(seq 1 "$REPS"); do
	order=$(printf '%s\n' plain plain2 bare trace | shuf --random-source=<(yes "$rep"))
	for mode in $order; do
		t0=$SECONDS
		out=$(run_mode "$mode" 2>/tmp/torch-ab.err) || {
			echo "  rep $rep $mode: FAILED: $(tail -n 2 /tmp/torch-ab.err)"
			continue
		}
		printf '%s\n' "$out" | grep '^RESULT ' | while read -r line; do
			cfg=$(printf '%s\n' "$line" | tr ' ' '\n' | sed -n 's/^config=//p')
			ms=$(printf '%s\n' "$line" | tr ' ' '\n' | sed -n 's/^median_ms=//p')
			echo "$rep,$mode,$cfg,$ms" >>"$CSV"
		done
		echo "  rep $rep $mode: $((SECONDS - t0))s: $(printf '%s\n' "$out" | grep '^RESULT ' | sed 's/.*config=\([^ ]*\).*median_ms=\([^ ]*\).*/\1 \2 ms/' | tr '\n' ' ')"
	done
done

"$PY" - "$CSV" "$OUT/torch-ab.md" "$REPS" "$CPUS" "$CONFIGS" "$STEPS" "$WARM" <<'PY'
import csv, statistics as st, sys, subprocess, datetime
raw, md, reps, cpus, configs, steps, warm = sys.argv[1:8]
rows = list(csv.DictReader(open(raw)))
data = {}
for r in rows:
    data.setdefault(r["config"], {}).setdefault(r["mode"], {})[int(r["rep"])] = float(r["step_ms"])
try:
    gpu = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                         capture_output=True, text=True).stdout.strip()
except OSError:
    gpu = "?"
lines = ["# PyTorch overhead, A/A-controlled (bench/gpu/torch-ab.sh)", "",
         f"- date: {datetime.datetime.utcnow():%Y-%m-%d %H:%M UTC}; GPU, driver: {gpu}",
         f"- {reps} reps; each rep runs plain, plain2, bare, trace once in a shuffled order,",
         f"  pinned to CPUs {cpus}; resnet18 training, configs {configs} (batch x image size),",
         f"  {warm} warm-up + {steps} timed steps, synchronized each step; value = median step",
         "- paired ratio = median over reps of (mode / plain of the same rep);",
         "  plain2 is a second plain run: its ratio is the noise floor", "",
         "| config | mode | reps | median ms/step | min..max | paired ratio vs plain |",
         "|---|---|---|---|---|---|"]
for cfg in sorted(data):
    base = data[cfg].get("plain", {})
    for mode in ["plain", "plain2", "bare", "trace"]:
        v = data[cfg].get(mode, {})
        if not v:
            continue
        vals = list(v.values())
        ratios = [v[k] / base[k] for k in v if k in base]
        pr = f"{st.median(ratios):.4f}" if ratios and mode != "plain" else "-"
        lines.append(f"| {cfg} | {mode} | {len(vals)} | {st.median(vals):.3f} | "
                     f"{min(vals):.3f}..{max(vals):.3f} | {pr} |")
lines += ["", "Command: `bash bench/gpu/torch-ab.sh " + reps + "`; raw rows: torch-ab.csv"]
open(md, "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
PY
