#!/usr/bin/env python3
"""benchtool.py - helpers for compat.sh and overhead.sh (standard library only).

  trace TRACE.json --label L [--expect REGEX ...] [--json-out F]
      Check a `kmux trace` file: kernel events ("cat" holds "kernel") whose
      "name" matches each REGEX, with count > 0.  Prints one line; writes a
      small summary (no events) to F.  Exit 0 ok, 1 an expectation failed or
      no kernel events, 2 the file is missing or not JSON.
  compare PLAIN OTHER [--tol RTOL]
      Compare two stdout captures.  Exit 0 identical (bytes), 3 equal within
      RTOL number by number (only with --tol), 1 different.  Prints a reason.
  table ROWS.tsv [--md-append F]
      Render compat rows (program, mode, rc, output, trace, verdict, note) as
      a console table and, with --md-append, as a markdown table.
  overhead RAW.csv [--md-append F]
      Medians, ratios vs plain and added cost per launch from overhead.sh's
      raw rows (bench,mode,rep,metric,value).
  merge OUT.json SUMMARY.json ...
      Merge trace summaries into one file keyed by label.
  get SUMMARY.json KEY
      Print one top-level value of a summary written by `trace`.
"""
import argparse
import csv
import json
import os
import re
import statistics
import sys

MODES = ["plain", "bare", "trace", "timing"]
MODE_NAMES = {"plain": "plain", "bare": "bare preload", "trace": "kmux trace",
              "timing": "kmux trace --timing", "plain2": "plain (2nd run)"}


# ---------------------------------------------------------------- trace
def _is_kernel(ev):
    cat = ev.get("cat")
    if not isinstance(cat, str):
        return False
    return "kernel" in [c.strip() for c in cat.split(",")] and ev.get("ph") != "E"


def cmd_trace(a):
    res = {"label": a.label, "file": a.trace}
    try:
        res["bytes"] = os.path.getsize(a.trace)
        with open(a.trace, "rb") as f:
            doc = json.load(f)
    except (OSError, ValueError) as e:
        res["error"] = f"unreadable trace: {e}"
        print("no readable trace")
        print(f"trace {a.label}: ERROR {res['error']}")
        _dump(a.json_out, res)
        return 2
    events = doc.get("traceEvents", []) if isinstance(doc, dict) else doc
    if not isinstance(events, list):
        events = []
    kmux = doc.get("kmux", {}) if isinstance(doc, dict) else {}
    summary = kmux.get("summary", {}) if isinstance(kmux, dict) else {}

    counts, cats, streams = {}, {}, set()
    graphish = 0
    for ev in events:
        if not isinstance(ev, dict):
            continue
        cat = ev.get("cat")
        if isinstance(cat, str):
            cats[cat] = cats.get(cat, 0) + 1
        name = ev.get("name")
        if "graph" in f"{cat} {name}".lower() and ev.get("ph") != "E":
            graphish += 1
        if _is_kernel(ev):
            n = name if isinstance(name, str) else repr(name)
            counts[n] = counts.get(n, 0) + 1
            args = ev.get("args") if isinstance(ev.get("args"), dict) else {}
            streams.add(str(args.get("stream", ev.get("tid"))))
    nkern = sum(counts.values())

    expects, ok = [], nkern > 0
    for rx in a.expect or []:
        r = re.compile(rx)
        hit = {n: c for n, c in counts.items() if r.search(n)}
        sm = 0
        for k in summary.get("kernels", []) if isinstance(summary, dict) else []:
            if isinstance(k, dict) and r.search(str(k.get("name", ""))):
                sm += int(k.get("count", 0) or 0)
        expects.append({"regex": rx, "events": sum(hit.values()),
                        "names": sorted(hit)[:5], "summary_count": sm})
        ok = ok and sum(hit.values()) > 0

    top = sorted(counts.items(), key=lambda kv: -kv[1])[:15]
    small_summary = {}
    if isinstance(summary, dict):
        for k, v in summary.items():
            if k == "kernels" and isinstance(v, list):
                small_summary[k] = v[:10]
                small_summary["kernels_total_names"] = len(v)
            elif not isinstance(v, (list, dict)) or len(json.dumps(v)) < 400:
                small_summary[k] = v
    launches = small_summary.get("launches")
    res.update({
        "events": len(events), "kernel_events": nkern,
        "kernel_names": len(counts), "graph_like_events": graphish,
        "kernel_streams": sorted(streams)[:20], "categories": cats,
        "expect": expects, "top_kernels": [{"name": n, "count": c} for n, c in top],
        "kmux_summary": small_summary,
        "launches": launches if isinstance(launches, int) else nkern,
        "ok": ok,
    })
    _dump(a.json_out, res)
    exp = " ".join(f"/{e['regex']}/={e['events']}" for e in expects)
    hit = sum(1 for e in expects if e["events"] > 0)
    missing = [e["regex"] for e in expects if e["events"] == 0]
    print(f"{nkern} ev, {hit}/{len(expects)} expected"
          + (f"; missing {' '.join(missing)}" if missing else ""))
    print(f"trace {a.label}: {'ok' if ok else 'FAIL'} kernel_events={nkern}"
          f" names={len(counts)} streams={len(streams)} graph_like={graphish}"
          f" summary.launches={launches} {exp}")
    return 0 if ok else 1


def _dump(path, obj):
    if path:
        with open(path, "w") as f:
            json.dump(obj, f, indent=1, sort_keys=True)


# ---------------------------------------------------------------- compare
NUM = re.compile(rb"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")


def cmd_compare(a):
    pa, pb = open(a.plain, "rb").read(), open(a.other, "rb").read()
    if pa == pb:
        print("identical")
        return 0
    la, lb = pa.splitlines(), pb.splitlines()
    if a.tol is not None and len(la) == len(lb):
        worst = 0.0
        for x, y in zip(la, lb):
            if NUM.sub(b"#", x) != NUM.sub(b"#", y):
                break
            for u, v in zip(NUM.findall(x), NUM.findall(y)):
                fu, fv = float(u), float(v)
                d = abs(fu - fv) / max(abs(fu), abs(fv), 1e-12)
                worst = max(worst, d if fu != fv else 0.0)
        else:
            if worst <= a.tol:
                print(f"within-tol (max rel diff {worst:.2e} <= {a.tol:g})")
                return 3
            print(f"DIFF (max rel diff {worst:.2e} > {a.tol:g})")
            return 1
    if pa and pa in pb:
        print(f"DIFF: same output plus {len(lb) - len(la)} extra line(s)"
              " (does kmux print to the program's stdout?)")
        return 1
    for i, (x, y) in enumerate(zip(la, lb)):
        if x != y:
            print(f"DIFF at line {i + 1}: {x[:80]!r} vs {y[:80]!r}")
            return 1
    print(f"DIFF: {len(la)} vs {len(lb)} lines")
    return 1


# ---------------------------------------------------------------- tables
def _fmt_table(header, rows):
    w = [max(len(str(r[i])) for r in [header] + rows) for i in range(len(header))]
    line = lambda r: "  ".join(str(c).ljust(w[i]) for i, c in enumerate(r)).rstrip()
    out = [line(header), line(["-" * x for x in w])] + [line(r) for r in rows]
    return "\n".join(out)


def _md_table(header, rows):
    esc = lambda s: str(s).replace("|", "\\|")
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(esc(c) for c in r) + " |" for r in rows]
    return "\n".join(out)


def cmd_table(a):
    header = ["program", "mode", "rc", "outputs vs plain", "kernels in trace",
              "result", "note"]
    rows = []
    with open(a.rows) as f:
        for r in csv.reader(f, delimiter="\t"):
            if r:
                r = (r + [""] * 7)[:7]
                r[1] = MODE_NAMES.get(r[1], r[1])
                rows.append(r)
    print(_fmt_table(header, rows))
    n = {k: sum(1 for r in rows if r[5].startswith(k)) for k in ("PASS", "FAIL", "SKIP")}
    tally = f"{n['PASS']} PASS, {n['FAIL']} FAIL, {n['SKIP']} SKIP"
    print(tally)
    if a.md_append:
        with open(a.md_append, "a") as f:
            f.write(_md_table(header, rows) + "\n\n" + f"**Tally:** {tally}\n")
    return 1 if n["FAIL"] else 0


def cmd_overhead(a):
    data = {}   # (bench, metric) -> mode -> [values]
    with open(a.raw) as f:
        for r in csv.DictReader(f):
            try:
                v = float(r["value"])
            except (KeyError, ValueError):
                continue
            data.setdefault((r["bench"], r["metric"]), {}).setdefault(
                r["mode"], []).append(v)
    lps = data.get(("torch", "launches_per_step"), {})
    lps_v = statistics.median(lps["trace"]) if lps.get("trace") else None

    header = ["benchmark", "mode", "reps", "median", "min..max", "ratio vs plain",
              "added us/launch", "target"]
    rows = []
    primary = [("call", "launch_ns", "ns/launch, -lcuda"),
               ("call", "launch_gpa_ns", "ns/launch, cuGetProcAddress"),
               ("call", "ctxgetdevice_ns", "ns/cuCtxGetDevice"),
               ("call", "streamquery_ns", "ns/cuStreamQuery"),
               ("launch_rt", "submit_us", "us/launch"),
               ("launch_drv", "submit_us", "us/launch"),
               ("launch_rt", "total_us", "us/launch incl. sync"),
               ("launch_drv", "total_us", "us/launch incl. sync"),
               ("launch_rt", "gpu_us", "GPU us/launch"),
               ("launch_drv", "gpu_us", "GPU us/launch")]
    torch_keys = sorted(k for k in data if k[0].startswith("torch_") and k[1] == "step_ms")
    primary += [(b, m, "ms/step") for b, m in torch_keys]
    for bench, metric, unit in primary:
        per = data.get((bench, metric))
        if not per:
            continue
        base = statistics.median(per["plain"]) if per.get("plain") else None
        for mode in MODES:
            vals = per.get(mode)
            if not vals:
                continue
            med = statistics.median(vals)
            ratio = f"{med / base:.4f}" if base else "-"
            added, target = "-", ""
            if base is not None and mode != "plain":
                if bench == "call":
                    add = med - base
                    added = f"{add / 1000.0:+.3f}"
                    if mode == "bare" and metric.startswith("launch"):
                        target = "<=0.3us: " + ("met" if add <= 300 else "MISSED")
                elif bench.startswith("launch_"):
                    add = med - base
                    added = f"{add:+.3f}"
                    if mode == "bare" and metric == "submit_us":
                        target = "<=0.3us: " + ("met" if add <= 0.3 else "MISSED")
                elif lps_v:
                    add = (med - base) * 1000.0 / lps_v
                    added = f"{add:+.3f} (~{lps_v:.0f} launches/step)"
                if bench.startswith("torch_") and mode == "bare":
                    target = "<=2%: " + ("met" if med / base <= 1.02 else "MISSED")
            rows.append([f"{bench} ({unit})", MODE_NAMES[mode], len(vals),
                         f"{med:.4f}", f"{min(vals):.4f}..{max(vals):.4f}", ratio,
                         added, target])
    print(_fmt_table(header, rows))
    if a.md_append:
        with open(a.md_append, "a") as f:
            f.write(_md_table(header, rows) + "\n")
    return 0


# ---------------------------------------------------------------- misc
def cmd_merge(a):
    out = {}
    for p in a.files:
        if not os.path.exists(p):      # an unmatched shell glob
            continue
        try:
            with open(p) as f:
                d = json.load(f)
            out[d.get("label", os.path.basename(p))] = d
        except (OSError, ValueError) as e:
            out[os.path.basename(p)] = {"error": str(e)}
    with open(a.out, "w") as f:
        json.dump(out, f, indent=1, sort_keys=True)
    return 0


def cmd_get(a):
    try:
        with open(a.summary) as f:
            v = json.load(f).get(a.key)
    except (OSError, ValueError):
        return 1
    if v is None:
        return 1
    print(v)
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("trace")
    p.add_argument("trace")
    p.add_argument("--label", default="")
    p.add_argument("--expect", action="append")
    p.add_argument("--json-out")
    p.set_defaults(fn=cmd_trace)
    p = sub.add_parser("compare")
    p.add_argument("plain")
    p.add_argument("other")
    p.add_argument("--tol", type=float)
    p.set_defaults(fn=cmd_compare)
    p = sub.add_parser("table")
    p.add_argument("rows")
    p.add_argument("--md-append")
    p.set_defaults(fn=cmd_table)
    p = sub.add_parser("overhead")
    p.add_argument("raw")
    p.add_argument("--md-append")
    p.set_defaults(fn=cmd_overhead)
    p = sub.add_parser("merge")
    p.add_argument("out")
    p.add_argument("files", nargs="*")
    p.set_defaults(fn=cmd_merge)
    p = sub.add_parser("get")
    p.add_argument("summary")
    p.add_argument("key")
    p.set_defaults(fn=cmd_get)
    a = ap.parse_args()
    return a.fn(a)


if __name__ == "__main__":
    sys.exit(main())
