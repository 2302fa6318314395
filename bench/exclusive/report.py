#!/usr/bin/env python3
"""Report of bench/exclusive.sh: report.py RAWDIR OUTDIR.

Reads RAWDIR/MODE/{wall,records.jsonl,out/I.out} for every mode, writes
OUTDIR/exclusive.{md,csv,png}.  Definitions (also written in the .md),
the rule fixed before run 6 (the first with the alone passes):

* throughput: commands that finished OK per minute of the mode's wall
  time; a mode cut by its time limit (exit 124) counts up to the end of
  the last command it finished, and the command the limit killed is
  "cut", not failed;
* a kernel's time in a mode: the median of its samples (throttled samples
  left out), and its p95 sample;
* a kernel's alone time: the mean of its times in `alone` and `alone2`
  (every command alone in one persistent worker, before and after the
  shared modes); the one there is when only one pass reached it.  Its A/A
  spread: alone2 / alone - 1 (when both passes timed it);
* inflation of a kernel in a mode: its time / its alone time - 1, for the
  median and for the p95 sample;
* per class (by the alone time: < 0.5 ms "0.1 ms", < 5 ms "1 ms", else
  "10 ms"): p50 and p95 over the kernels of the class, once over every
  kernel with an alone time ("met": p95 <= the class target), once over
  the reproducible kernels only ("met (reproducible kernels)"): those
  timed in both alone passes with |A/A spread| <= the class target.  A
  kernel the idle GPU cannot reproduce to the target cannot show an
  inflation below it; the kernels left out are listed with their spread.
  Without alone passes (runs 1-5) `seq` is the baseline and there is no
  A/A filter;
* what persistent workers save per command: workersN against regionN (the
  same commands, N at a time, as plain processes), and alone against seq
  (one at a time): the median over the commands of wall_s (kmux bench
  run's record), of the start-up (kbench's t_startup_s: process start, or
  the worker taking the job, to the script's first line) and of the setup
  (t_setup_s: imports, CUDA init, inputs, compilation, check).
"""
import json
import os
import statistics
import sys

raw, outdir = sys.argv[1], sys.argv[2]
TARGET = {"0.1 ms": 3.9, "1 ms": 1.5, "10 ms": 0.30}


def pct(xs, q):
    xs = sorted(xs)
    if not xs:
        return float("nan")
    k = (len(xs) - 1) * q / 100.0
    lo = int(k)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


def last_err(d, i, r, k):
    """Why command I failed: its last stderr line, else its exit."""
    try:
        lines = [x.strip() for x in open(os.path.join(d, "out", "%d.err" % i))
                 if x.strip()]
    except OSError:
        lines = []
    if lines:
        return lines[-1][:200]
    if k and not k.get("ok"):
        return "wrong result (reference check failed)"
    return "exit %s, signal %s" % (r.get("exit"), r.get("signal"))


def load(mode):
    d = os.path.join(raw, mode)
    res = {"mode": mode, "ok": 0, "failed": 0, "kernels": {}, "wall": None,
           "waits": [], "regions": [], "setups": [], "cmd_walls": [],
           "startups": [], "in_worker": 0}
    try:
        t0, t1, rc, j = open(os.path.join(d, "wall")).read().split()
        res["wall"], res["rc"], res["j"] = float(t1) - float(t0), int(rc), int(j)
    except (OSError, ValueError):
        return None
    recs = {}
    try:
        for line in open(os.path.join(d, "records.jsonl")):
            r = json.loads(line)
            recs[r["i"]] = r
    except (OSError, ValueError):
        pass
    # A mode its time limit stopped (timeout's 124; 137 after its -k):
    # the last command started was killed, not failed, and the throughput
    # counts up to the end of the last command that finished.
    res["cut"], res["tp_wall"] = 0, res["wall"]
    cut_i = None
    if res["rc"] in (124, 137) and recs:
        last = max(recs.values(), key=lambda r: r.get("start_s", 0))
        if last.get("signal") == 9:
            cut_i = last["i"]
            res["cut"] = 1
        ends = [r["start_s"] + r["wall_s"] for r in recs.values()
                if r["i"] != cut_i and "start_s" in r and "wall_s" in r]
        if ends:
            res["tp_wall"] = max(ends)
    for i, r in sorted(recs.items()):
        if i == cut_i:
            continue
        k = None
        try:
            for line in open(os.path.join(d, "out", "%d.out" % i)):
                if line.startswith("{"):
                    k = json.loads(line)
        except (OSError, ValueError):
            k = None
        if r["exit"] != 0 or not k or not k.get("ok"):
            res["failed"] += 1
            res.setdefault("why", []).append((r.get("cmd", "?"),
                                               last_err(d, i, r, k)))
            continue
        res["ok"] += 1
        # The p95 sample among the unthrottled ones, as the median is.
        fl = k.get("throttled") or []
        s = [x for x, f in zip(k["samples_ms"], fl) if not f] \
            if len(fl) == len(k["samples_ms"]) else []
        s = sorted(s or k["samples_ms"])
        res["kernels"][k["name"]] = {"median": k["median_ms"],
                                     "p95": pct(s, 95), "exclusive":
                                     k.get("exclusive"), "throttled":
                                     k.get("n_throttled", 0),
                                     "samples": len(k["samples_ms"]),
                                     "temp": k.get("temp_c"),
                                     "power": k.get("power_w")}
        res["waits"].append(k.get("t_wait_s", 0))
        res["regions"].append(k.get("t_region_s", 0))
        res["setups"].append(k.get("t_setup_s", 0))
        res["cmd_walls"].append(r["wall_s"])
        if k.get("t_startup_s") is not None:
            res["startups"].append(k["t_startup_s"])
        res["in_worker"] += bool(k.get("worker"))
    res["missing"] = 0
    return res


def cls(ms):
    return "0.1 ms" if ms < 0.5 else ("1 ms" if ms < 5 else "10 ms")


modes = [m for m in sorted(os.listdir(raw))
         if os.path.isdir(os.path.join(raw, m)) and m != "warm"]
data = {m: load(m) for m in modes}
data = {m: v for m, v in data.items() if v}
BASE_MODES = [m for m in ("alone", "alone2") if m in data]
RANK = {"alone": 0, "seq": 1, "region": 2, "workers": 3, "none": 4,
        "alone2": 6}


def rank(m):
    for p, r in sorted(RANK.items(), key=lambda x: -len(x[0])):
        if m.startswith(p):
            return (r, m)
    return (5, m)


order = sorted(data, key=rank)


def tput(v):
    return v["ok"] * 60.0 / v["tp_wall"] if v["tp_wall"] else 0.0


def fmt_pct(x):
    return "n/a" if x != x else "%.2f" % x


# The baseline: each kernel's alone time, A/A spread and class.
base, base_label = {}, None
if BASE_MODES:
    base_label = " and ".join("`%s`" % m for m in BASE_MODES)
    names = set()
    for m in BASE_MODES:
        names |= set(data[m]["kernels"])
    for name in names:
        ks = [data[m]["kernels"][name] for m in BASE_MODES
              if name in data[m]["kernels"]]
        b = {"median": statistics.mean(k["median"] for k in ks),
             "p95": statistics.mean(k["p95"] for k in ks), "spread": None,
             "passes": len(ks)}
        if len(ks) == 2 and ks[0]["median"] > 0:
            b["alone"], b["alone2"] = ks[0]["median"], ks[1]["median"]
            b["spread"] = (ks[1]["median"] / ks[0]["median"] - 1) * 100
        base[name] = b
elif "seq" in data:
    base_label = "`seq`"
    for name, k in data["seq"]["kernels"].items():
        base[name] = {"median": k["median"], "p95": k["p95"],
                      "spread": None, "passes": 1}
base = {n: b for n, b in base.items() if b["median"] > 0}
for b in base.values():
    b["cls"] = cls(b["median"])
    b["repro"] = b["spread"] is not None and \
        abs(b["spread"]) <= TARGET[b["cls"]]
CLASSES = ("0.1 ms", "1 ms", "10 ms")

md, csv = [], ["mode,name,class,median_ms,p95_ms,infl_median_pct,"
               "infl_p95_pct,aa_spread_pct,reproducible"]
md.append("# Exclusive regions (issue 6): bench/exclusive.sh\n")
try:
    md.append("GPU: " + open(os.path.join(raw, "gpu.txt")).read().strip()
              .replace("\n", "; ") + "\n")
except OSError:
    pass
md.append("Definitions (fixed before run 6, the first with the alone "
          "passes): throughput = commands finished OK per minute of the "
          "mode's wall time (a mode cut by its time limit: up to the end of "
          "its last finished command; the command the limit killed is "
          "`cut`). `seq` (`kmux run --exclusive`, one command at a time, a "
          "fixed share of the budget) is the throughput baseline. A "
          "kernel's time = median of its samples (throttled samples out). "
          "Its alone time = the mean of its times in `alone` and `alone2` "
          "(every command alone in one persistent worker on the idle GPU, "
          "first and last); its A/A spread = alone2 / alone - 1. Inflation "
          "= time in the mode / alone time - 1, for the median and for the "
          "p95 sample; per class (by the alone time) p50 and p95 over the "
          "kernels. Targets (KREX): throughput >= 3.4x seq; p95 inflation "
          "<= 0.30% (10 ms), 1.5% (1 ms), 3.9% (0.1 ms). \"met\" judges "
          "every kernel with an alone time; \"met (reproducible kernels)\" "
          "judges only the kernels timed in both alone passes whose |A/A "
          "spread| is within their class's target (a kernel the idle GPU "
          "cannot reproduce to the target cannot show inflation below it); "
          "the kernels left out are listed with their spread.\n")
md.append("| mode | -j | OK | failed | cut | wall s | commands/min | x seq | "
          "mean wait s | mean region s |")
md.append("|---|---|---|---|---|---|---|---|---|---|")
seq_tp = tput(data["seq"]) if "seq" in data else None
for m in order:
    v = data[m]
    tp = tput(v)
    md.append("| %s | %d | %d | %d | %d | %.1f | %.1f | %s | %.2f | %.2f |" % (
        m, v["j"], v["ok"], v["failed"], v["cut"], v["tp_wall"], tp,
        "%.2f" % (tp / seq_tp) if seq_tp else "n/a",
        statistics.mean(v["waits"]) if v["waits"] else 0,
        statistics.mean(v["regions"]) if v["regions"] else 0))
md.append("")
for m in order:
    v = data[m]
    if v["cut"]:
        md.append("- %s: cut by its time limit after %d commands in %.1f s "
                  "(the mode ran %.1f s)" % (m, v["ok"] + v["failed"],
                                               v["tp_wall"], v["wall"]))
    for cmd, why in v.get("why", [])[:20]:
        md.append("- failed in %s: `%s`: %s" % (m, cmd.split(" python3 ")[-1]
                                               if " python3 " in cmd else cmd,
                                               why))
md.append("")
plot = {}
if base:
    both = {n: b for n, b in base.items() if b["spread"] is not None}
    if BASE_MODES:
        md.append("A/A: each kernel's `alone2` time against its `alone` "
                  "time (the idle GPU's drift between the first and the "
                  "last pass), %: p50 / p95 over the kernels of |spread|.\n")
        md.append("| class | kernels (both passes) | p50 abs | p95 abs | max "
                  "abs | target | reproducible (within target) |")
        md.append("|---|---|---|---|---|---|---|")
        for c in CLASSES:
            xs = [abs(b["spread"]) for b in both.values() if b["cls"] == c]
            if not xs:
                continue
            md.append("| %s | %d | %.2f | %.2f | %.2f | %.2f | %d |" % (
                c, len(xs), pct(xs, 50), pct(xs, 95), max(xs), TARGET[c],
                sum(x <= TARGET[c] for x in xs)))
        out = sorted((n for n, b in base.items() if not b["repro"]),
                     key=lambda n: (CLASSES.index(base[n]["cls"]), n))
        md.append("\nKernels left out of the reproducible set (%d of %d):\n"
                  % (len(out), len(base)))
        for n in out:
            b = base[n]
            if b["spread"] is None:
                md.append("- excluded: %s (%s): timed in one alone pass "
                          "only (%.4f ms), A/A spread unknown" % (
                              n, b["cls"], b["median"]))
            else:
                md.append("- excluded: %s (%s): alone %.4f ms, alone2 %.4f "
                          "ms, A/A spread %+.2f%% (target %.2f%%)" % (
                              n, b["cls"], b["alone"], b["alone2"],
                              b["spread"], TARGET[b["cls"]]))
        if not out:
            md.append("- none")
        md.append("")
    else:
        md.append("No alone passes: the baseline is %s, without an A/A "
                  "filter.\n" % base_label)
    rows1, rows2 = [], []
    for m in order:
        if m in BASE_MODES or (m == "seq" and not BASE_MODES):
            continue
        label = m + (" (information)" if m == "seq" and BASE_MODES else "")
        per = {}
        for name, k in data[m]["kernels"].items():
            b = base.get(name)
            if not b:
                continue
            im = (k["median"] / b["median"] - 1) * 100
            ip = (k["p95"] / b["p95"] - 1) * 100 if b["p95"] > 0 \
                else float("nan")
            per.setdefault(b["cls"], []).append((im, ip, b["repro"]))
        for c in CLASSES:
            xs = per.get(c, [])
            if not xs:
                continue
            rs = [x for x in xs if x[2]]
            p95a = pct([x[0] for x in xs], 95)
            p95r = pct([x[0] for x in rs], 95)
            met_r = "n/a" if not rs else ("yes" if p95r <= TARGET[c]
                                          else "no")
            rows1.append("| %s | %s | %d | %.2f | %.2f | %.2f | %.2f | %s | "
                         "%s |" % (label, c, len(xs),
                                   pct([x[0] for x in xs], 50), p95a,
                                   pct([x[1] for x in xs], 95), TARGET[c],
                                   "yes" if p95a <= TARGET[c] else "no",
                                   met_r))
            rows2.append("| %s | %s | %d of %d | %s | %s | %s | %.2f | %s |"
                         % (label, c, len(rs), len(xs),
                            fmt_pct(pct([x[0] for x in rs], 50)),
                            fmt_pct(p95r),
                            fmt_pct(pct([x[1] for x in rs], 95)), TARGET[c],
                            met_r))
            plot.setdefault(m, {})[c] = (p95a, p95r)
    note = (" \"met (reproducible kernels)\": the same p95 over the "
            "reproducible kernels only (the next table)."
            if BASE_MODES else "")
    md.append("Inflation against the baseline (%s), per class, every "
              "kernel the baseline timed (%%): p50 / p95 over the kernels of "
              "the median inflation; p95 over the kernels of the p95-sample "
              "inflation.%s\n" % (base_label, note))
    md.append("| mode | class | kernels | p50 (median) | p95 (median) | "
              "p95 (p95 sample) | target p95 | met | met (reproducible "
              "kernels) |")
    md.append("|---|---|---|---|---|---|---|---|---|")
    md += rows1
    if BASE_MODES:
        md.append("\nThe same over the reproducible kernels only (timed in "
                  "both alone passes, |A/A spread| within the class target; "
                  "%):\n")
        md.append("| mode | class | kernels | p50 (median) | p95 (median) | "
                  "p95 (p95 sample) | target p95 | met (reproducible "
                  "kernels) |")
        md.append("|---|---|---|---|---|---|---|---|")
        md += rows2
    for m in order:
        for name, k in sorted(data[m]["kernels"].items()):
            b = base.get(name)
            if not b:
                continue
            csv.append("%s,%s,%s,%.6f,%.6f,%.3f,%.3f,%s,%d" % (
                m, name, b["cls"], k["median"], k["p95"],
                (k["median"] / b["median"] - 1) * 100,
                (k["p95"] / b["p95"] - 1) * 100 if b["p95"] > 0
                else float("nan"),
                "%.3f" % b["spread"] if b["spread"] is not None else "",
                b["repro"]))
    # The GPU's own state while each class was timed: a throttled sample is
    # left out and taken again, but heat is not a throttle reason, and a
    # memory-bound kernel slows a little on hot HBM.
    md.append("\nThe GPU while the kernels were timed, per class (means "
              "over the kernels of the per-sample means; throttled = "
              "samples flagged and taken again):\n")
    md.append("| mode | class | kernels | samples | throttled | GPU C | "
              "HBM C | power W |")
    md.append("|---|---|---|---|---|---|---|---|")

    def tmean(ks, i):
        xs = [k["temp"][i] for k in ks
              if k.get("temp") and k["temp"][i] is not None]
        return "%.1f" % statistics.mean(xs) if xs else "n/a"

    def pmean(ks):
        xs = [k["power"][0] for k in ks
              if k.get("power") and k["power"][0] is not None]
        return "%.0f" % statistics.mean(xs) if xs else "n/a"
    for m in order:
        bycls = {}
        for name, k in data[m]["kernels"].items():
            b = base.get(name)
            if b:
                bycls.setdefault(b["cls"], []).append(k)
        for c in CLASSES:
            ks = bycls.get(c, [])
            if ks:
                md.append("| %s | %s | %d | %d | %d | %s | %s | %s |" % (
                    m, c, len(ks), sum(k["samples"] for k in ks),
                    sum(k["throttled"] for k in ks), tmean(ks, 0),
                    tmean(ks, 2), pmean(ks)))
else:
    md.append("No `alone`, `alone2` or `seq` run: no inflation can be "
              "computed.\n")


def med(xs):
    return statistics.median(xs) if xs else float("nan")


md.append("\nPersistent context workers: what they save per command "
          "(medians over the commands that ran OK; start-up = process "
          "start, or the worker taking the job, to the script's first "
          "line; setup = imports, CUDA init, inputs, compilation, check).\n")
md.append("| mode | commands | in a worker | wall s / command | start-up s | "
          "setup s | commands/min |")
md.append("|---|---|---|---|---|---|---|")
pairs = []
for m in order:
    if not m.startswith(("region", "workers", "seq", "alone")):
        continue
    v = data[m]
    md.append("| %s | %d | %d | %.3f | %.3f | %.3f | %.1f |" % (
        m, v["ok"], v["in_worker"], med(v["cmd_walls"]), med(v["startups"]),
        med(v["setups"]), tput(v)))
    if m.startswith("workers") and "region" + m[7:] in data:
        pairs.append(("region" + m[7:], m))
# One at a time: a persistent worker against a process per command (seq
# also holds the GPU for the whole command; alone only for its region).
if "seq" in data and "alone" in data:
    pairs.append(("seq", "alone"))
for a, b in pairs:
    wa, wb = med(data[a]["cmd_walls"]), med(data[b]["cmd_walls"])
    sa = med(data[a]["startups"]) + med(data[a]["setups"])
    sb = med(data[b]["startups"]) + med(data[b]["setups"])
    md.append("\n%s against %s: %.3f s less wall per command (%.1f%%); "
              "start-up + setup %.3f s -> %.3f s." % (
                  b, a, wa - wb, (wa - wb) / wa * 100 if wa else 0, sa, sb))
if not pairs:
    md.append("\nNo workersN run with its regionN: the saving is not "
              "measured.")
if "seqagain" in data:
    md.append("\n`seqagain`: seq's first commands run alone again after the "
              "other modes. Its inflation is the drift of an idle GPU "
              "between the two passes (an A/A comparison): read every "
              "mode's inflation against it.")
md.append("\nRaw output: exclusive/MODE/records.jsonl, exclusive/MODE/out/.")
open(os.path.join(outdir, "exclusive.md"), "w").write("\n".join(md) + "\n")
open(os.path.join(outdir, "exclusive.csv"), "w").write("\n".join(csv) + "\n")
try:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axs = plt.subplots(1, 2, figsize=(11, 4), sharey=True)
    cl = ["0.1 ms", "1 ms", "10 ms"]
    w = 0.8 / max(1, len(plot))
    for j, (ax, title) in enumerate(zip(axs, ("every kernel",
                                              "reproducible kernels"))):
        for i, (m, v) in enumerate(sorted(plot.items())):
            ys = [v.get(c, (0, 0))[j] for c in cl]
            ax.bar([x + i * w for x in range(3)],
                   [0 if y != y else y for y in ys], w, label=m)
        ax.plot([x + 0.4 - w / 2 for x in range(3)],
                [TARGET[c] for c in cl], "k_", markersize=30,
                label="target")
        ax.set_xticks([x + 0.4 - w / 2 for x in range(3)], cl)
        ax.set_title("p95 inflation against alone: " + title)
        ax.set_yscale("symlog", linthresh=1)
    axs[0].set_ylabel("p95 inflation of kernel medians (%)")
    axs[0].legend()
    fig.tight_layout()
    fig.savefig(os.path.join(outdir, "exclusive.png"), dpi=120)
except Exception as e:  # noqa: BLE001 - the plot is optional
    print("no plot:", e)
print(open(os.path.join(outdir, "exclusive.md")).read())
