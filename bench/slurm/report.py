#!/usr/bin/env python3
"""report.py - the tables of bench/slurm.sh: reads OUT/latency.csv,
OUT/rounds.csv, OUT/placement.csv and OUT/meta.txt, writes OUT/slurm.md
(the measured numbers against issue 7's targets; prose about what they
mean belongs in bench/results/slurm.md, written by a person)."""
import csv
import os
import random
import statistics
import sys


def pct(xs, q):
    """Nearest-rank percentile."""
    xs = sorted(xs)
    if not xs:
        return float("nan")
    k = max(0, min(len(xs) - 1, int(-(-q * len(xs) // 100)) - 1))
    return xs[k]


def boot_ci(xs, reps=4000, seed=3):
    """95% bootstrap interval of the median of xs."""
    rng = random.Random(seed)
    if len(xs) < 2:
        return float("nan"), float("nan")
    m = sorted(statistics.median(rng.choices(xs, k=len(xs))) for _ in range(reps))
    return m[int(0.025 * reps)], m[int(0.975 * reps) - 1]


def read(path):
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return list(csv.DictReader(f))


def latency(out, lines):
    rows = [r for r in read(os.path.join(out, "latency.csv")) if r["warmup"] == "0"]
    if not rows:
        lines.append("No latency data (latency.csv missing or empty).\n")
        return
    good = [r for r in rows if r["rc"] == "0" and r["start_ms"]]
    bad = len(rows) - len(good)
    by = {}
    for r in good:
        by.setdefault(r["variant"], []).append(r)
    lines.append("| variant | runs | start median | start p95 | wall median | wall p95 |")
    lines.append("|---|---|---|---|---|---|")
    for v in ("off", "loaded", "on"):
        rs = by.get(v, [])
        s = [float(r["start_ms"]) for r in rs]
        w = [float(r["wall_ms"]) for r in rs]
        if not rs:
            continue
        lines.append("| %s | %d | %.1f ms | %.1f ms | %.1f ms | %.1f ms |" %
                     (v, len(rs), statistics.median(s), pct(s, 95),
                      statistics.median(w), pct(w, 95)))
    lines.append("")
    if bad:
        lines.append("%d timed run(s) failed or printed no timestamp (see slurm.log); "
                     "left out above.\n" % bad)
    # Paired by round: the variants of a round ran back to back.
    rounds = {}
    for r in good:
        rounds.setdefault(r["round"], {})[r["variant"]] = r
    lines.append("Added by the plugin, paired within each round (median of the "
                 "per-round differences, 95% bootstrap interval of that median; "
                 "p95 of the differences):\n")
    lines.append("| comparison | rounds | start: added | start: 95% CI | start: p95 | "
                 "wall: added | wall: 95% CI | target (start < 50 ms added) |")
    lines.append("|---|---|---|---|---|---|---|---|")
    for a, b in (("loaded", "off"), ("on", "off")):
        ds = [float(x[a]["start_ms"]) - float(x[b]["start_ms"])
              for x in rounds.values() if a in x and b in x]
        dw = [float(x[a]["wall_ms"]) - float(x[b]["wall_ms"])
              for x in rounds.values() if a in x and b in x]
        if not ds:
            continue
        md = statistics.median(ds)
        lo, hi = boot_ci(ds)
        wlo, whi = boot_ci(dw)
        lines.append("| %s - %s | %d | %+.1f ms | %+.1f .. %+.1f | %+.1f ms | %+.1f ms | "
                     "%+.1f .. %+.1f | %s |" %
                     (a, b, len(ds), md, lo, hi, pct(ds, 95), statistics.median(dw),
                      wlo, whi, "met" if md < 50 else "MISSED"))
    lines.append("")


def placement(out, lines):
    rounds = read(os.path.join(out, "rounds.csv"))
    jobs = read(os.path.join(out, "placement.csv"))
    if not rounds:
        lines.append("No placement data (rounds.csv missing or empty).\n")
        return
    lines.append("| round | busy | quiet before | weight update (bounds) | weights busy/idle "
                 "| jobs before update: to idle | jobs after update: to idle | weights back to 1 |")
    lines.append("|---|---|---|---|---|---|---|---|")
    upd = []
    tot_a = tot_ai = tot_b = tot_bi = 0
    for r in rounds:
        if r["update_ms"]:
            upd.append(float(r["update_ms"]))
        tot_a += int(r["after_update"])
        tot_ai += int(r["after_to_idle"])
        tot_b += int(r["before_update"])
        tot_bi += int(r["before_to_idle"])
        lines.append("| %s | %s | %s s | %s | %s/%s | %s/%s | %s/%s | %s |" %
                     (r["round"], r["busy"], r["quiet_s"],
                      "none in 10 s" if not r["update_ms"] else
                      "%.0f..%.0f ms" % (float(r["update_lo_ms"]), float(r["update_ms"])),
                      r["w_busy"], r["w_idle"], r["before_to_idle"], r["before_update"],
                      r["after_to_idle"], r["after_update"],
                      "%s ms" % r["fall_ms"] if r["fall_ms"] else "not in 15 s"))
    lines.append("")
    n = len(rounds)
    lines.append("* weight update after the busyness change (upper bound: end of the "
                 "first reading that showed it): %d of %d rounds updated; median %.0f ms, "
                 "max %.0f ms; target within 2 s: %s" %
                 (len(upd), n, statistics.median(upd) if upd else float("nan"),
                  max(upd) if upd else float("nan"),
                  "met" if len(upd) == n and max(upd) <= 2000 else "MISSED"))
    lines.append("* jobs started after the update that went to the idle node: %d of %d "
                 "(%.0f%%); target all: %s" %
                 (tot_ai, tot_a, 100.0 * tot_ai / tot_a if tot_a else float("nan"),
                  "not measured (no job after an update)" if not tot_a else
                  "met" if tot_ai == tot_a else "MISSED"))
    lines.append("* jobs started before the update (or while it was being read) that "
                 "went to the idle node: %d of %d" % (tot_bi, tot_b))
    miss = [j for j in jobs if j["after_update"] == "1" and j["to_idle"] == "0"]
    if miss:
        lines.append("* of the %d after the update that went to the busy node, %d "
                     "started with Slurm jobs (running or completing) listed on the "
                     "idle node just before (jobs_on_idle_before in placement.csv; "
                     "two fill a node of 2 CPUs)" %
                     (len(miss), sum(1 for j in miss
                                     if int(j.get("jobs_on_idle_before") or 0) > 0)))
    fails = [j for j in jobs if j["rc"] != "0"]
    if fails:
        lines.append("* %d placement job(s) failed (see slurm.log)" % len(fails))
    lines.append("")


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "out"
    lines = ["# bench/slurm.sh: kmux under Slurm (issue 7's Measure)", ""]
    meta = os.path.join(out, "meta.txt")
    if os.path.exists(meta):
        lines.append("```")
        lines.extend(open(meta).read().rstrip().splitlines())
        lines.append("```")
        lines.append("")
    lines.append("## Time from srun to task start\n")
    latency(out, lines)
    lines.append("## Placement with one node busy\n")
    placement(out, lines)
    with open(os.path.join(out, "slurm.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    sys.stdout.write("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
