#!/usr/bin/env bash
# bench/exclusive/report.py (issue 6) on a synthetic raw directory whose
# answers are known: the alone time is the mean of alone and alone2, a
# kernel whose two alone passes differ by 5% (or that one pass missed) is
# left out of the reproducible set and listed, the all-kernels "met" stays
# "no" while the reproducible one says "yes", and seq, cut by its time
# limit, counts its throughput up to its last finished command.
. "$(dirname "$0")/lib.sh"

RAW=$TMP/raw
python3 - "$RAW" <<'PY'
import json, os, sys
raw = sys.argv[1]
# name -> median ms per mode (None: the mode did not time it).
K = {
    "k10a-10-1.00": {"alone": 10.0, "alone2": 10.5, "region8": 10.30, "seq": 10.0},
    "k10b-10-1.00": {"alone": 10.0, "alone2": 10.01, "region8": 10.02, "seq": 10.0},
    "k10c-10-1.00": {"alone": 10.0, "alone2": 10.0, "region8": 10.0},
    "k10d-10-1.00": {"alone": 10.0, "alone2": None, "region8": 10.0},
    "k1-1-1.00": {"alone": 1.0, "alone2": 1.0, "region8": 1.01},
    "k01-0.1-1.00": {"alone": 0.1, "alone2": 0.1, "region8": 0.1},
}
# mode -> (rc, j, wall s)
M = {"alone": (0, 1, 8.0), "alone2": (0, 1, 7.0), "region8": (0, 8, 6.0),
     "seq": (124, 1, 12.0)}
for m, (rc, j, wall) in M.items():
    d = os.path.join(raw, m)
    os.makedirs(os.path.join(d, "out"))
    open(os.path.join(d, "wall"), "w").write("1000.0 %.1f %d %d\n" % (1000 + wall, rc, j))
    recs = []
    t = 0.0
    for name, v in K.items():
        ms = v.get(m)
        if ms is None:
            continue
        i = len(recs)
        recs.append({"i": i, "cmd": "python3 kbench.py " + name, "exit": 0,
                     "signal": 0, "start_s": t, "wall_s": 5.0})
        t += 5.0
        k = {"ok": True, "name": name, "median_ms": ms,
             "samples_ms": [ms] * 5, "throttled": [False] * 5,
             "n_throttled": 0, "t_wait_s": 0, "t_region_s": 0.1,
             "t_setup_s": 0.5, "t_startup_s": 0.1, "worker": m != "seq",
             "temp_c": [40, 41, 40, 41]}
        open(os.path.join(d, "out", "%d.out" % i), "w").write(json.dumps(k) + "\n")
    if m == "seq":
        # The command the time limit killed: started at 10 s, no output.
        recs.append({"i": len(recs), "cmd": "python3 kbench.py k1-1-1.00",
                     "exit": -1, "signal": 9, "start_s": t, "wall_s": 2.0})
    with open(os.path.join(d, "records.jsonl"), "w") as f:
        for r in recs:
            f.write(json.dumps(r) + "\n")
PY
mkdir -p "$TMP/o"
python3 "$ROOT/bench/exclusive/report.py" "$RAW" "$TMP/o" >"$TMP/log" 2>&1
check "report.py exits 0" [ $? -eq 0 ]
md=$TMP/o/exclusive.md
check "seq cut by its limit: 2 OK, 0 failed, 1 cut, 12 commands/min over its 10 s" \
	grep -Eq '^\| seq \| 1 \| 2 \| 0 \| 1 \| 10\.0 \| 12\.0 \| 1\.00 \|' "$md"
check "region8 against seq: 6 commands in 6 s, 5.00x" \
	grep -Eq '^\| region8 \| 8 \| 6 \| 0 \| 0 \| 6\.0 \| 60\.0 \| 5\.00 \|' "$md"
check "the kernel whose alone passes differ by 5% is excluded, with its spread" \
	grep -Fq -- '- excluded: k10a-10-1.00 (10 ms): alone 10.0000 ms, alone2 10.5000 ms, A/A spread +5.00% (target 0.30%)' "$md"
check "the kernel only one alone pass timed is excluded too" \
	grep -Fq -- '- excluded: k10d-10-1.00 (10 ms): timed in one alone pass only' "$md"
check "  ... and no other kernel" grep -Fq 'Kernels left out of the reproducible set (2 of 6)' "$md"
check "the A/A table: 3 kernels in both passes at 10 ms, 2 within 0.30%" \
	grep -Eq '^\| 10 ms \| 3 \| [0-9.]+ \| [0-9.]+ \| 5\.00 \| 0\.30 \| 2 \|' "$md"
# region8 at 10 ms against the mean of the alone passes: k10a 10.30/10.25
# = +0.488%, k10b 10.02/10.005 = +0.150%, k10c and k10d 0: p95 over the
# four 0.437% (no); over the reproducible k10b and k10c 0.142% (yes).
check "all kernels: region8 10 ms p95 0.44 > 0.30, met no; reproducible: yes" \
	grep -Eq '^\| region8 \| 10 ms \| 4 \| [0-9.-]+ \| 0\.44 \| [0-9.-]+ \| 0\.30 \| no \| yes \|' "$md"
check "the reproducible table: region8 10 ms over 2 of 4 kernels, p95 0.14, met" \
	grep -Eq '^\| region8 \| 10 ms \| 2 of 4 \| [0-9.-]+ \| 0\.14 \| [0-9.-]+ \| 0\.30 \| yes \|' "$md"
check "seq's timing is information, against the alone time" \
	grep -Eq '^\| seq \(information\) \| 10 ms \| 2 \| ' "$md"
check "the alone passes are the baseline, not rows of the inflation table" \
	[ "$(sed -n '/^Inflation against/,/^The GPU/p' "$md" | grep -c '^| alone')" = 0 ]
check "csv: k10a's row for region8 with its spread, not reproducible" \
	grep -Eq '^region8,k10a-10-1\.00,10 ms,10\.300000,[0-9.]+,0\.488,[0-9.-]+,5\.000,0$' "$TMP/o/exclusive.csv"
check "csv: k10b reproducible" \
	grep -Eq '^region8,k10b-10-1\.00,10 ms,.*,0\.100,1$' "$TMP/o/exclusive.csv"
check "alone against seq: what a worker saves one command at a time" \
	grep -q '^alone against seq: ' "$md"

# Without alone passes (runs 1-5), seq is the baseline and nothing is
# filtered.
rm -rf "$RAW/alone" "$RAW/alone2"
python3 "$ROOT/bench/exclusive/report.py" "$RAW" "$TMP/o" >"$TMP/log2" 2>&1
check "without alone passes: seq is the baseline, no A/A filter" \
	grep -q '^No alone passes: the baseline is `seq`' "$md"
check "  ... region8 against seq (k10a +3.00%, k10b +0.20%)" \
	grep -Eq '^\| region8 \| 10 ms \| 2 \| [0-9.]+ \| 2\.86 \| [0-9.-]+ \| 0\.30 \| no \| n/a \|' "$md"
finish
