"""report.py - bench/jobmix.sh's parsing and report (standard library only;
matplotlib for the plot when it imports).

    report.py collect --mode M --rep N --dir D --t0 EPOCH --jobs JOBS.tsv --csv CSV --log LOG
            [--submits FILE]
        one CSV row per job of the mode's N-th run, from D/NAME.{rec,out,err} (written
        by timed.sh) and, for the kmux modes, D/ps.json, D/kmux-ids and
        D/kmuxd.log (kmux_profile: "yes" when kmuxd predicted the job from
        its command's learned profile at admission, "no" when from the
        defaults);
        appends each job's stdout and stderr tails to LOG.  With --submits
        (JOBMIX_ARRIVALS=1; FILE: "NAME EPOCH" lines, absent for a run that
        started everything at once) the rows have one more column,
        submit_s, the job's submit time since t0.
    report.py report --csv CSV --meta META --cmds CMDS --jobs JOBS.tsv \
        --md MD --png PNG --root ROOT --work WORK
        the table, the ratios, issue 4's targets, the timeline.

Definitions.  Every job of a mode is submitted at the mode's t0, so a job's
completion time is its end - t0, and the makespan is the last end - t0.
Under arrivals (the CSV's submit_s column, the meta's "arrivals"), t0 is
the first submission and a job's completion time is its end - its own
submission; placement is judged per pair (kmux.i, kmux-rr.i): the median
over the pairs of the makespan ratio round-robin / busyness.
A job failed when it exited non-zero, was killed at the deadline (timeout)
or never ran.  Throughput ratios compare makespans of the same work:
baseline makespan / kmux makespan; only a baseline that completed every job
counts as "complete".

Repeats.  A mode may run several times (jobmix.sh's MODE.N, the CSV's rep
column): each run is summarized alone, and a mode's figures are the
medians over its runs (makespan, mean completion time), so one slow or
fast run does not decide a ratio; every run's makespan is listed beside.
"""
import argparse
import csv
import json
import os
import re
import statistics
import sys

FIELDS = ["mode", "rep", "job", "class", "mem_declared", "gpu", "start_s", "end_s",
          "rc", "status", "wall_s", "init_s", "work_s", "peak_bytes",
          "kmux_id", "kmux_gpus", "kmux_peak", "kmux_wait_s", "kmux_profile"]
BASELINES = ("exclusive", "together", "mps")
TARGET_BEST, TARGET_EXCL, TARGET_RR = 1.33, 2.0, 1.15
GiB = float(1 << 30)


def read_jobs(path):
    jobs = []
    with open(path) as f:
        for line in f:
            line = line.rstrip("\n")
            if not line:
                continue
            name, cls, mem, gpu, cmd = line.split("\t", 4)
            jobs.append({"name": name, "class": cls, "mem": mem,
                         "gpu": gpu, "cmd": cmd})
    return jobs


def tail(path, n):
    try:
        with open(path, errors="replace") as f:
            lines = f.readlines()
    except OSError:
        return []
    return lines[-n:]


def parse_line(lines, tag):
    """key=value pairs of the last line starting with tag."""
    for line in reversed(lines):
        if line.startswith(tag + " "):
            return dict(kv.split("=", 1) for kv in line.split()[1:]
                        if "=" in kv)
    return None


OOM_RE = re.compile(r"out of memory|OutOfMemoryError|cudaErrorMemoryAllocation"
                    r"|CUDA_ERROR_OUT_OF_MEMORY", re.I)


PROFILE_RE = re.compile(r"daemon: job (\d+): (predicted from its profile|no profile)")


def collect(a):
    jobs = read_jobs(a.jobs)
    t0 = float(a.t0)
    ids, ps = {}, {}
    idfile = os.path.join(a.dir, "kmux-ids")
    if os.path.exists(idfile):
        with open(idfile) as f:
            for line in f:
                name, jid = line.split()
                ids[name] = int(jid)
    psfile = os.path.join(a.dir, "ps.json")
    if os.path.exists(psfile):
        try:
            with open(psfile) as f:
                ps = {j["id"]: j for j in json.load(f)}
        except (OSError, ValueError) as e:
            print(f"report: {psfile}: {e}", file=sys.stderr)
    # kmuxd logs, for each job, what its prediction rests on (job.c)
    prof = {}
    try:
        with open(os.path.join(a.dir, "kmuxd.log"), errors="replace") as f:
            for line in f:
                m = PROFILE_RE.search(line)
                if m:
                    prof[int(m.group(1))] = "yes" if m.group(2).startswith("predicted") else "no"
    except OSError:
        pass
    subs = {}
    if a.submits:
        try:
            with open(a.submits) as f:
                for line in f:
                    name, at = line.split()
                    subs[name] = float(at)
        except FileNotFoundError:
            pass  # a run that started everything at once
    rows = []
    with open(a.log, "a") as log:
        for j in jobs:
            n = j["name"]
            base = os.path.join(a.dir, n)
            r = {k: "" for k in FIELDS}
            r.update(mode=a.mode, rep=a.rep, job=n, **{"class": j["class"]},
                     mem_declared=j["mem"])
            rec = None
            try:
                with open(base + ".rec") as f:
                    rec = f.read().split()
            except OSError:
                pass
            out = tail(base + ".out", 400)
            err = tail(base + ".err", 400)
            ran = os.path.exists(base + ".out")
            if rec and len(rec) >= 4:
                start, end, rc = float(rec[0]), float(rec[1]), int(rec[2])
                r.update(start_s=f"{start - t0:.3f}", end_s=f"{end - t0:.3f}",
                         rc=rc, gpu=rec[3])
                if rc == 0:
                    r["status"] = "ok"
                elif (parse_line(out, "JOBMIX_FAIL") or {}).get("reason") == "oom" \
                        or any(OOM_RE.search(x) for x in out + err):
                    r["status"] = "oom"
                else:
                    r["status"] = "error"
            else:
                r["status"] = "timeout" if ran else "not-run"
            ok = parse_line(out, "JOBMIX")
            if ok:
                for k in ("wall_s", "init_s", "work_s"):
                    r[k] = ok.get(k, "")
                r["peak_bytes"] = ok.get("peak_reserved", "")
            else:
                fail = parse_line(out, "JOBMIX_FAIL") or {}
                r["peak_bytes"] = fail.get("peak_reserved", "")
            if n in ids:
                r["kmux_id"] = ids[n]
                r["kmux_profile"] = prof.get(ids[n], "")
                pj = ps.get(ids[n])
                if pj:
                    r["kmux_gpus"] = " ".join(str(g) for g in pj.get("gpus") or [])
                    r["kmux_peak"] = pj.get("mem_peak") or ""
                    if pj.get("start_us") and pj.get("submit_us"):
                        r["kmux_wait_s"] = (
                            f"{(pj['start_us'] - pj['submit_us']) / 1e6:.3f}")
            if a.submits is not None:
                r["submit_s"] = (f"{subs[n] - t0:.3f}" if n in subs else "")
            rows.append(r)
            log.write(f"--- [{run_name(a.mode, a.rep)}] {n}: {r['status']} rc={r['rc']} "
                      f"start={r['start_s']} end={r['end_s']} gpu={r['gpu']}\n")
            for what, lines in (("stdout", out[-15:]), ("stderr", err[-15:])):
                if lines:
                    log.write(f"    {what} (tail):\n")
                    log.writelines("      " + x if x.endswith("\n")
                                   else "      " + x + "\n" for x in lines)
    with open(a.csv, "a", newline="") as f:
        w = csv.DictWriter(f, fieldnames=FIELDS + (["submit_s"] if a.submits is not None else []))
        for r in rows:
            w.writerow(r)


def fnum(x):
    try:
        return float(x)
    except (TypeError, ValueError):
        return None


def run_name(mode, rep):
    """a run's name as jobmix.sh gives it: MODE for run 1, else MODE.N."""
    rep = str(rep or "1")
    return mode if rep == "1" else f"{mode}.{rep}"


def row_run(r):
    return run_name(r["mode"], r.get("rep"))


def median(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def jct(r):
    """a job's completion time: its end - its submission (0 unless the run
    submitted over time)."""
    return fnum(r["end_s"]) - (fnum(r.get("submit_s")) or 0.0)


def summarize(rows):
    """per run (MODE or MODE.N): makespan, mean completion time, failures."""
    modes = {}
    for r in rows:
        modes.setdefault(row_run(r), []).append(r)
    out = {}
    for m, rs in modes.items():
        ends = [fnum(r["end_s"]) for r in rs if fnum(r["end_s"]) is not None]
        ok = [r for r in rs if r["status"] == "ok"]
        failed = [r for r in rs if r["status"] != "ok"]
        out[m] = {
            "n": len(rs),
            "ok": len(ok),
            "failed": failed,
            "makespan": max(ends) if ends else None,
            "mean_jct": (sum(jct(r) for r in ok) / len(ok)) if ok else None,
            "mean_jct_all": (sum(ends) / len(ends)) if ends else None,
            "complete": not failed and len(rs) > 0,
            "mode": rs[0]["mode"],
            "rep": int(rs[0].get("rep") or 1),
        }
    return out


def by_mode(s, order):
    """per mode, from its runs in the order they ran: the runs, the medians
    of makespan and mean completion time, the failures of all runs."""
    out = {}
    for name in order:
        out.setdefault(s[name]["mode"], []).append(name)
    res = {}
    for m, names in out.items():
        xs = [s[n] for n in names]
        res[m] = {
            "runs": names,
            "reps": len(xs),
            "makespans": [x["makespan"] for x in xs],
            "makespan": median([x["makespan"] for x in xs]),
            "mean_jct": median([x["mean_jct"] for x in xs]),
            "n": sum(x["n"] for x in xs),
            "ok": sum(x["ok"] for x in xs),
            "failed": [f for x in xs for f in x["failed"]],
            "complete": all(x["complete"] for x in xs),
        }
    return res


def over(b):
    """' over N runs' where a mode ran more than once."""
    return f" over {b['reps']} runs" if b["reps"] > 1 else ""


def fmt(x, p=1, unit=""):
    return "–" if x is None else f"{x:.{p}f}{unit}"


def ratio_line(what, num, den, target):
    if num is None or den is None or den <= 0:
        return f"| {what} | n/a | ≥ {target:.2f}× | not measured |"
    r = num / den
    return (f"| {what} | {r:.2f}× | ≥ {target:.2f}× | "
            f"{'met' if r >= target else 'MISSED'} |")


def ratio(num, den):
    if num is None or den is None or den <= 0:
        return "–"
    return f"{num / den:.2f}×"


def makespan_cell(b):
    """the median, and each run's makespan where there are several."""
    c = fmt(b["makespan"], 1, " s")
    if b["reps"] > 1:
        c += (f" (median of {b['reps']}: "
              + ", ".join(fmt(x, 1) for x in b["makespans"]) + ")")
    return c


def report(a):
    meta = {}
    with open(a.meta) as f:
        for line in f:
            if "=" in line:
                k, v = line.rstrip("\n").split("=", 1)
                meta[k] = v
    with open(a.csv) as f:
        rows = list(csv.DictReader(f))
    jobs = read_jobs(a.jobs)
    s = summarize(rows)
    order = [m for m in meta.get("modes", "").split() if m in s]
    order += [m for m in s if m not in order]  # rows the meta does not name
    b = by_mode(s, order)
    border = list(b)
    repeated = any(x["reps"] > 1 for x in b.values())
    nuse = int(meta.get("nuse", "1") or 1)
    gpu_gib = float(meta.get("gpu_mib", "0") or 0) / 1024.0
    L = []
    L.append("# Job mix: exclusive, all at once, MPS and kmux "
             f"({nuse} GPU{'s' if nuse > 1 else ''})")
    L.append("")
    if meta.get("sim") == "1":
        L.append("**SIMULATION (JOBMIX_SIM=1): stand-in jobs on tests/simcuda; "
                 "no number here is a GPU measurement.**")
        L.append("")
    L.append(f"- date: {meta.get('date', '?')}")
    L.append(f"- GPU: {meta.get('ngpu', '?')} × {meta.get('gpu', '?')} "
             f"({gpu_gib:.1f} GiB each), driver {meta.get('driver', '?')}; "
             f"{nuse} used")
    L.append(f"- software: {meta.get('stacks', '') or 'n/a'}")
    L.append(f"- kmux: {meta.get('kmux', '?')}")
    L.append(f"- mix: `{meta.get('mix', '?')}` ({len(jobs)} jobs), "
             f"JOBMIX_SCALE={meta.get('scale', '1')}")
    L.append(f"- command: `{meta.get('command', 'bash bench/jobmix.sh')}`")
    L.append(f"- runs, in the order they ran: {' '.join(meta.get('modes', '').split())}")
    if meta.get("learn"):
        L.append(f"- learning pass (JOBMIX_LEARN): {meta['learn']}"
                 + ("; each kmux run started from a copy of its profiles"
                    if meta["learn"][:1].isdigit() else ""))
    arr = meta.get("arrivals")
    if arr:
        L.append(f"- **arrivals (JOBMIX_ARRIVALS=1): {arr}**; every measured kmux "
                 "run submitted the same jobs in this order at these offsets (s): "
                 + ", ".join(x.replace("@", " @ ")
                             for x in meta.get("arrival_offsets", "").split())
                 + ".  The learning pass and the baselines (exclusive, together, "
                 "mps) started everything at once: arrivals apply to the "
                 "kmux-family runs only.")
    for m in meta.get("modes", "").split():
        why = meta.get(f"skipped_{m}")
        if why:
            L.append(f"- run {m}: **skipped** ({why})")
    L.append("")

    L.append("## Results")
    L.append("")
    complete = {m: b[m] for m in BASELINES if m in b and b[m]["complete"]}
    best = min(complete, key=lambda m: complete[m]["makespan"]) if complete else None
    ex = b.get("exclusive")
    L.append("| mode | makespan | mean completion time (ok jobs) | "
             "completed | out of memory | other failures | "
             f"throughput vs the best complete baseline ({best or 'none'}) | "
             "throughput vs exclusive |")
    L.append("|---|---|---|---|---|---|---|---|")
    for m in border:
        x = b[m]
        oom = [r["job"] + ("" if r.get("rep", "1") in ("", "1") else f" (run {r['rep']})")
               for r in x["failed"] if r["status"] == "oom"]
        other = [f"{r['job']} ({r['status']}"
                 + ("" if r.get("rep", "1") in ("", "1") else f", run {r['rep']}") + ")"
                 for r in x["failed"] if r["status"] != "oom"]
        L.append(f"| {m} | {makespan_cell(x)} | "
                 f"{fmt(x['mean_jct'], 1, ' s')} | {x['ok']}/{x['n']} | "
                 f"{len(oom)}{': ' + ', '.join(oom) if oom else ''} | "
                 f"{', '.join(other) or 'none'} | "
                 f"{ratio(complete[best]['makespan'] if best else None, x['makespan'])} | "
                 f"{ratio(ex['makespan'] if ex else None, x['makespan'])} |")
    L.append("")
    L.append("Makespan: last job's end minus the mode's start (every job is "
             "submitted at the start).  Completion time: a job's end minus "
             "the start.  Throughput vs X: X's makespan / this mode's (the "
             "same jobs; a mode that lost jobs did less work, so its ratio "
             "flatters it).  Out of memory: the job's own error (PyTorch's "
             "OutOfMemoryError, CUDA_ERROR_OUT_OF_MEMORY).")
    if arr:
        L.append("Under arrivals a kmux run's start is its first submission and "
                 "a job's completion time is its end minus its own submission; "
                 "the baselines' jobs all start at 0, so their figures do not "
                 "compare with the kmux runs'.")
    if repeated:
        L.append("A mode that ran more than once (MODE.N is its N-th run): "
                 "its makespan and mean completion time are the medians over "
                 "its runs, each run's makespan in brackets; the completed "
                 "and failed counts add up all its runs.")
        L.append("")
        L.append("| run | mode | repeat | position in the run order | makespan | "
                 "mean completion time (ok jobs) | completed |")
        L.append("|---|---|---|---|---|---|---|")
        for i, n in enumerate(order, 1):
            x = s[n]
            L.append(f"| {n} | {x['mode']} | {x['rep']} | {i} | "
                     f"{fmt(x['makespan'], 1, ' s')} | {fmt(x['mean_jct'], 1, ' s')} | "
                     f"{x['ok']}/{x['n']} |")
    L.append("")
    kml = [m for m in order if m.startswith("kmux")]
    if kml:
        L.append("| kmux run | daemon options | memory growth (kmuxd log) | "
                 "predicted from a learned profile | training jobs per GPU |")
        L.append("|---|---|---|---|---|")
        for m in kml:
            mr = [r for r in rows if row_run(r) == m]
            py = [r for r in mr if r.get("kmux_profile") == "yes"]
            known = [r for r in mr if r.get("kmux_profile") in ("yes", "no")]
            pcell = f"{len(py)}/{len(mr)}" if known else "? (no kmuxd log)"
            nop = [r["job"] for r in known if r["kmux_profile"] == "no"]
            if py and nop:
                pcell += " (not: " + ", ".join(nop) + ")"
            per = {}
            for r in mr:
                if r["class"] == "train" and r.get("kmux_gpus", "") != "":
                    per[r["kmux_gpus"]] = per.get(r["kmux_gpus"], 0) + 1
            tcell = ", ".join(f"GPU {g}: {c}" for g, c in sorted(per.items())) or "–"
            L.append(f"| {m} | `{meta.get('kmuxd_' + m, '?').strip()}` | "
                     f"{meta.get('kmux_grow_' + m, '?')} | {pcell} | {tcell} |")
        L.append("")

    # issue 4's targets
    k = b.get("kmux")
    L.append("## Issue 4's targets")
    L.append("")
    L.append("| target | measured | wanted | |")
    L.append("|---|---|---|---|")
    if k:
        L.append(f"| kmux completes every job | {k['ok']}/{k['n']}{over(k)} | all | "
                 f"{'met' if k['complete'] else 'MISSED'} |")
        med = " (medians)" if repeated else ""
        if arr:
            L.append(f"| throughput vs the best complete baseline, vs exclusive | "
                     f"not judged | ≥ {TARGET_BEST:.2f}×, ≥ {TARGET_EXCL:.0f}× | "
                     "judged on the all-at-once mix (JOBMIX_ARRIVALS=0): here the "
                     "kmux jobs arrive over time, the baselines' at once |")
        elif best:
            L.append(ratio_line(f"throughput vs the best complete baseline ({best}){med}",
                                complete[best]["makespan"], k["makespan"],
                                TARGET_BEST))
        else:
            L.append(f"| throughput vs the best complete baseline | n/a | "
                     f"≥ {TARGET_BEST:.2f}× | no baseline completed every job |")
        if not arr:
            L.append(ratio_line(f"throughput vs exclusive{med}",
                                ex["makespan"] if ex else None, k["makespan"],
                                TARGET_EXCL))
        if ex and not ex["complete"] and not arr:
            L.append("| (exclusive did not complete every job: the ratio above "
                     "compares unequal work) | | | |")
    else:
        L.append("| kmux | not run | | |")
    rr = b.get("kmux-rr")
    pairs = []
    if rr and k:
        if k["reps"] == rr["reps"]:
            how = (f"medians over {k['reps']} repeats each" if k["reps"] > 1
                   else "one run each")
        else:
            how = (f"medians over {rr['reps']} round-robin and {k['reps']} "
                   "busyness repeats")
        reps_k = {s[n]["rep"]: s[n]["makespan"] for n in k["runs"]}
        reps_r = {s[n]["rep"]: s[n]["makespan"] for n in rr["runs"]}
        pairs = [(i, reps_r[i], reps_k[i]) for i in sorted(reps_k)
                 if i in reps_r and reps_r[i] and reps_k[i]]
        if arr:
            # the rule the script's header fixed before any run
            pr = median([r / q for _, r, q in pairs])
            L.append(ratio_line("busyness vs round-robin placement, jobs arriving "
                                "over time (median over "
                                f"{len(pairs)} pair{'s' if len(pairs) != 1 else ''} "
                                "of makespan rr / busyness)",
                                pr, 1.0 if pr is not None else None, TARGET_RR))
        else:
            L.append(ratio_line("busyness vs round-robin placement (makespan rr / "
                                f"busyness; {how})",
                                rr["makespan"], k["makespan"], TARGET_RR))
        if not (rr["complete"] and k["complete"]):
            L.append("| (a placement run did not complete every job) | | | |")
    L.append("")
    if arr and rr and k:
        L.append("Placement pairs under arrivals (round-robin / busyness; the "
                 "pairs ran back to back, alternating which went first; "
                 "completion time: end - own submission, mean over the ok jobs):")
        L.append("")
        L.append("| pair | makespan rr | makespan busyness | ratio | "
                 "mean completion rr | mean completion busyness | ratio |")
        L.append("|---|---|---|---|---|---|---|")
        runs_k = {s[n]["rep"]: s[n] for n in k["runs"]}
        runs_r = {s[n]["rep"]: s[n] for n in rr["runs"]}
        mk_r, jc_r = [], []
        for i in sorted(set(runs_k) & set(runs_r)):
            xr, xk = runs_r[i], runs_k[i]
            mk_r.append(None if not (xr["makespan"] and xk["makespan"])
                        else xr["makespan"] / xk["makespan"])
            jc_r.append(None if not (xr["mean_jct"] and xk["mean_jct"])
                        else xr["mean_jct"] / xk["mean_jct"])
            L.append(f"| {i} | {fmt(xr['makespan'], 1, ' s')} | "
                     f"{fmt(xk['makespan'], 1, ' s')} | {fmt(mk_r[-1], 2, '×')} | "
                     f"{fmt(xr['mean_jct'], 1, ' s')} | {fmt(xk['mean_jct'], 1, ' s')} | "
                     f"{fmt(jc_r[-1], 2, '×')} |")
        L.append(f"| median | | | {fmt(median(mk_r), 2, '×')} | | | "
                 f"{fmt(median(jc_r), 2, '×')} |")
        L.append("")
        L.append("Judged (the rule in bench/jobmix.sh's header, fixed before any "
                 "run): issue 4's two-GPU target on the median over "
                 "JOBMIX_PLACEMENT_REPS pairs of the makespan ratio round-robin / "
                 "busyness under JOBMIX_ARRIVALS=1 with the default seed and "
                 "window; busyness faster in "
                 f"{sum(1 for x in mk_r if x is not None and x > 1)} of {len(mk_r)} pairs.")
        L.append("")
    elif len(pairs) > 1:
        L.append("Placement, repeat by repeat (round-robin / busyness makespan; "
                 "the pairs ran back to back, alternating which went first): "
                 + ", ".join(f"{i}: {r:.1f} / {q:.1f} s = {r / q:.2f}×"
                             for i, r, q in pairs)
                 + f"; busyness faster in {sum(1 for _, r, q in pairs if q < r)} "
                 f"of {len(pairs)}.")
        L.append("")
    L.append("Baselines that completed every job: "
             + (", ".join(complete) if complete else "none") + ".")
    L.append("")

    # memory: is the mix an overcommit?  (each mode's first run)
    first = {}
    for n in order:
        first.setdefault(s[n]["mode"], n)
    excl = {r["job"]: r for r in rows if row_run(r) == first.get("exclusive")}
    kmr = {r["job"]: r for r in rows if row_run(r) == first.get("kmux")}
    peaks, missing = {}, []
    for j in jobs:
        p = fnum(excl.get(j["name"], {}).get("peak_bytes"))
        src = "exclusive"
        if p is None:
            p = fnum(kmr.get(j["name"], {}).get("kmux_peak"))
            src = "kmux"
        if p is None:
            p = fnum(kmr.get(j["name"], {}).get("peak_bytes"))
            src = "kmux"
        if p is None:
            missing.append(j["name"])
        else:
            peaks[j["name"]] = (p, src)
    total = sum(p for p, _ in peaks.values()) / GiB
    cap = gpu_gib * nuse
    L.append("## Memory: does starting everything at once overcommit?")
    L.append("")
    L.append(f"Sum of the jobs' peaks (torch.cuda.max_memory_reserved, from the "
             f"exclusive run; else the peak kmux's preload reported): "
             f"**{total:.1f} GiB** against {cap:.1f} GiB of GPU memory "
             f"({nuse} × {gpu_gib:.1f}): "
             + (f"**{total / cap:.2f}×, an overcommit**." if cap and total > cap
                else "not an overcommit." if cap else "GPU memory unknown."))
    if nuse > 1 and cap:
        L.append(f"Per GPU (the mix is submitted once per GPU): "
                 f"{total / nuse:.1f} GiB against {gpu_gib:.1f} GiB.")
    L.append("CUDA contexts (about 0.5 GiB a process) come on top and are not counted.")
    if missing:
        L.append(f"No peak known for: {', '.join(missing)} (counted as 0).")
    L.append("")
    L.append("| job | class | --mem declared | peak (exclusive) | " +
             " | ".join(f"{m} end" for m in order) + " |")
    L.append("|---|---|---|---|" + "---|" * len(order))
    by = {(row_run(r), r["job"]): r for r in rows}
    over_peak = []
    for j in jobs:
        p = peaks.get(j["name"])
        pk = f"{p[0] / GiB:.1f} GiB" + ("" if p[1] == "exclusive" else " (kmux)") if p else "–"
        cells = []
        for m in order:
            r = by.get((m, j["name"]))
            if not r:
                cells.append("–")
            elif r["status"] == "ok":
                cells.append(f"{fnum(r['end_s']):.1f} s")
            else:
                cells.append(f"**{r['status']}**")
        L.append(f"| {j['name']} | {j['class']} | {j['mem']} | {pk} | "
                 + " | ".join(cells) + " |")
        if p and j["mem"] != "-":
            d = parse_size(j["mem"])
            if d is not None and p[0] > d:
                over_peak.append(f"{j['name']} (declared {j['mem']}, peak {p[0] / GiB:.1f} GiB)")
    L.append("")
    if over_peak:
        L.append("**Declared below the measured peak** (the kmux quota would "
                 "fail them): " + ", ".join(over_peak) + ".")
        L.append("")

    if k:
        waits = [fnum(r["kmux_wait_s"]) for r in rows
                 if r["mode"] == "kmux" and fnum(r["kmux_wait_s"]) is not None]
        if waits:
            L.append(f"kmux{over(k)}: jobs waited in the queue {min(waits):.1f}–"
                     f"{max(waits):.1f} s (mean {sum(waits) / len(waits):.1f} s) "
                     "before admission (the daemon's timestamps).")
            L.append("")

    try:
        png = plot(rows, order, a.png)
    except Exception as e:  # noqa: BLE001 - the table matters more than the plot
        PLOT_WHY[0] = f"plotting failed ({type(e).__name__}: {e})"
        png = False
    L.append("## Timeline")
    L.append("")
    L.append("`jobmix.png`: one panel per run (repeats included, in the order "
             "they ran), one bar per job from its start to its end "
             "(colour: GPU; red: failed)." if png else
             f"No plot: {PLOT_WHY[0]}")
    L.append("")
    L.append("## Exact commands")
    L.append("")
    L.append("Each job runs as `bash bench/jobmix/timed.sh DIR NAME CMD...` "
             "(records start, end, exit status, CUDA_VISIBLE_DEVICES); `$W` "
             "is the scratch directory."
             + ("  Listed for each mode's first run: its repeats run the same "
                "commands (in exclusive mode a job may get the other GPU)."
                if repeated else ""))
    L.append("")
    L.append("```")
    with open(a.cmds) as f:
        for line in f:
            L.append(line.rstrip("\n").replace(a.work, "$W").replace(a.root + "/", ""))
    L.append("```")
    L.append("")
    L.append("Raw rows: `jobmix.csv` (a run is its mode and rep); every job's "
             "output tail, the daemon's log and `kmux ps`: `jobmix.log`.")
    with open(a.md, "w") as f:
        f.write("\n".join(L) + "\n")
    print(f"report: wrote {a.md}" + (f" and {a.png}" if png else ""))


def parse_size(s):
    m = re.fullmatch(r"(\d+(?:\.\d+)?)\s*([KMGT]?)(?:i?B)?", s.strip(), re.I)
    if not m:
        return None
    mult = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30,
            "T": 1 << 40}[m.group(2).upper()]
    return float(m.group(1)) * mult


PLOT_WHY = ["matplotlib did not import"]


def plot(rows, order, path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except Exception as e:  # noqa: BLE001 - no plot, said in the report
        PLOT_WHY[0] = f"matplotlib did not import ({type(e).__name__}: {e})"
        return False
    if not order:
        PLOT_WHY[0] = "no mode ran"
        return False
    arrivals = any(fnum(r.get("submit_s")) is not None for r in rows)
    names = []
    for r in rows:
        if r["job"] not in names:
            names.append(r["job"])
    span = max([fnum(r["end_s"]) or 0 for r in rows] + [1])
    # a bar row 0.19 in high, thinner when many runs would make the figure
    # taller than about 40 in (4,400 pixels)
    row_in = min(0.19, 38.0 / max(1, len(names) * len(order)))
    fig, axes = plt.subplots(len(order), 1, sharex=True,
                             figsize=(11, 1.2 + row_in * len(names) * len(order)))
    if len(order) == 1:
        axes = [axes]
    colours = ["tab:blue", "tab:green", "tab:purple", "tab:orange"]
    for ax, m in zip(axes, order):
        rs = {r["job"]: r for r in rows if row_run(r) == m}
        for y, n in enumerate(names):
            r = rs.get(n)
            if not r or fnum(r["start_s"]) is None:
                continue
            s0, e0 = fnum(r["start_s"]), fnum(r["end_s"])
            g = (r["gpu"] or "0").split(",")[0]
            c = colours[int(g) % 4] if g.isdigit() else "tab:gray"
            if r["status"] != "ok":
                c = "tab:red"
            ax.barh(y, e0 - s0, left=s0, color=c, height=0.8)
            sub = fnum(r.get("submit_s"))
            if sub is not None and sub < s0:
                ax.plot([sub, s0], [y, y], color="tab:gray", linewidth=0.8)
        ax.set_yticks(range(len(names)))
        ax.set_yticklabels(names, fontsize=min(6, 32 * row_in))
        ax.invert_yaxis()
        mk = max([fnum(r["end_s"]) or 0 for r in rs.values()] + [0])
        ax.set_title(f"{m}: makespan {mk:.1f} s", fontsize=9, loc="left")
        ax.set_xlim(0, span * 1.02)
        ax.grid(axis="x", alpha=0.3)
    axes[-1].set_xlabel("seconds since the mode started (all jobs submitted at 0"
                        + ("; a kmux run's jobs at their arrival, the thin line "
                           "from it: the queue)" if arrivals else ")"))
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("collect")
    for k in ("--mode", "--rep", "--dir", "--t0", "--jobs", "--csv", "--log"):
        c.add_argument(k, required=True)
    c.add_argument("--submits")
    r = sub.add_parser("report")
    for k in ("--csv", "--meta", "--cmds", "--jobs", "--md", "--png",
              "--root", "--work"):
        r.add_argument(k, required=True)
    a = p.parse_args()
    collect(a) if a.cmd == "collect" else report(a)


if __name__ == "__main__":
    main()
