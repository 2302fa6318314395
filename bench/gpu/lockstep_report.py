#!/usr/bin/env python3
"""lockstep_report.py - the table of torch-lockstep.sh, from its log.

Each pair of the log is two sections, "----- pair R mode M side S first F
exit RC" followed by that process's output, whose "ROIS app=A variant=V
ms=T1,T2,..." lines list its timed ROIs in order.  ROI i of the MODE side
and ROI i of the plain side ran next to each other (they took turns), so
their ratio is one paired sample.  Per app and mode this prints:

  pairs      pairs whose two sides exited 0 with as many ROIs each
  ratio      the median over all ROI pairs of MODE/plain (above 1: slower)
  Q1..Q3     the quartiles of those ratios
  pair medians   the median of each pair's own ratios: their median and range
  corr       the median over pairs of the correlation between the two sides'
             ROI times: near 1 when lockstep cancels the machine's wandering
             (the noise is common to both sides), near 0 when each side's
             noise is its own (then only more pairs, or TL_CPUS, help)
  ms         the median ROI of each side

A failed or unmatched pair is listed below the table and makes the exit
status 1.  Usage: lockstep_report.py LOG
"""

import collections
import re
import statistics
import sys

HEAD = re.compile(r"^----- pair (\d+) mode (\S+) side (\S+) first (\S+) exit (-?\d+)$")
ROIS = re.compile(r"^ROIS app=(\S+) variant=\S+ ms=([0-9.,]+)$")


def parse(path):
    """{(pair, mode): {"plain" | "mode": (exit, {app: [ms...]})}}"""
    runs = collections.defaultdict(dict)
    cur = None
    with open(path, errors="replace") as f:
        for line in f:
            line = line.rstrip("\n")
            h = HEAD.match(line)
            if h:
                r, m, side, _, rc = h.groups()
                cur = {}
                runs[(int(r), m)]["plain" if side == "plain" else "mode"] = (int(rc), cur)
                continue
            x = ROIS.match(line)
            if x and cur is not None:
                try:
                    cur[x.group(1)] = [float(v) for v in x.group(2).split(",")]
                except ValueError:
                    pass            # a mangled line: the pair is unmatched below
    return runs


def quartiles(v):
    if len(v) < 2:
        return v[0], v[0]
    q = statistics.quantiles(v, n=4)
    return q[0], q[2]


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: lockstep_report.py LOG")
    try:
        runs = parse(sys.argv[1])
    except OSError as e:
        sys.exit(f"lockstep_report.py: cannot read {sys.argv[1]}: {e.strerror}")
    ratios = collections.defaultdict(list)      # (app, mode) -> every ROI ratio
    per_pair = collections.defaultdict(list)    # (app, mode) -> each pair's median
    corr = collections.defaultdict(list)        # (app, mode) -> each pair's correlation
    ms = collections.defaultdict(lambda: ([], []))
    bad = []
    modes = []
    for (r, m), sides in sorted(runs.items()):
        if m not in modes:
            modes.append(m)
        p, q = sides.get("plain"), sides.get("mode")
        if not p or not q or p[0] != 0 or q[0] != 0:
            side = [("missing" if v is None else f"exit {v[0]}") for v in (p, q)]
            bad.append(f"pair {r} {m}: plain {side[0]}, {m} {side[1]}")
            continue
        for app in sorted(set(p[1]) | set(q[1])):
            a, b = p[1].get(app, []), q[1].get(app, [])
            if not a or len(a) != len(b):
                bad.append(f"pair {r} {m} {app}: {len(a)} plain ROIs, {len(b)} {m} ROIs")
                continue
            rs = [y / x for x, y in zip(a, b) if x > 0]
            ratios[(app, m)] += rs
            per_pair[(app, m)].append(statistics.median(rs))
            try:
                corr[(app, m)].append(statistics.correlation(a, b))
            except statistics.StatisticsError:
                pass            # fewer than 2 ROIs, or one side constant
            ms[(app, m)][0].extend(a)
            ms[(app, m)][1].extend(b)
    print("| app | mode | pairs | ROI pairs | ratio mode/plain (median) | Q1..Q3 "
          "| pair medians: median (min..max) | corr | plain ms | mode ms |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for app in sorted({a for a, _ in ratios}):
        for m in modes:
            rs = ratios.get((app, m))
            if not rs:
                continue
            lo, hi = quartiles(rs)
            pm = per_pair[(app, m)]
            c = corr.get((app, m))
            print(f"| {app} | {m} | {len(pm)} | {len(rs)} | {statistics.median(rs):.4f} "
                  f"| {lo:.4f}..{hi:.4f} | {statistics.median(pm):.4f} "
                  f"({min(pm):.4f}..{max(pm):.4f}) "
                  f"| {'%.2f' % statistics.median(c) if c else '-'} "
                  f"| {statistics.median(ms[(app, m)][0]):.3f} "
                  f"| {statistics.median(ms[(app, m)][1]):.3f} |")
    if not ratios:
        print("\nno pair produced ROIs")
    for b in bad:
        print(f"\nFAILED: {b}")
    sys.exit(1 if bad or not ratios else 0)


if __name__ == "__main__":
    main()
