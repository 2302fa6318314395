#!/usr/bin/env python3
"""latency.py - issue 7's first measure: what the SPANK plugin adds to the
time from `srun` to task start, and to srun's wall time.

Three variants, interleaved round by round in a shuffled order (so load
from elsewhere on the machine hits all of them alike):

  off      plugstack.conf empty: Slurm without kmux
  loaded   the plugin's line, and no kmux option on srun
  on       the plugin's line, srun --kmux-mem=1G (the controller's
           job_submit.lua adds kmuxmem, the task gets the preload)

Each run is `srun -N1 -n1 -w NODE [--kmux-mem=1G] /usr/bin/date +%s.%N`:
the task is `date` itself, so it prints CLOCK_REALTIME as soon as it is
running (for "on", after the preload has loaded into it).  t0 is taken in
this process just before srun is started, so both figures include the
fork and exec of srun.  plugstack.conf is rewritten before each run; srun
and slurmstepd read it at their start, so nothing is restarted.

Before and after the timed rounds each variant runs once with
`sh -c 'echo "[$LD_PRELOAD]"'` to show that it is what it claims.

Writes CSV rows: variant,round,warmup,order,t0,task,t_end,start_ms,wall_ms,rc
"""
import argparse
import csv
import os
import random
import subprocess
import sys
import time

VARIANTS = ("off", "loaded", "on")


def write_plugstack(path, line):
    with open(path + ".tmp", "w") as f:
        f.write(line + "\n" if line else "")
    os.replace(path + ".tmp", path)


def srun_argv(variant, node, cmd):
    argv = ["timeout", "60", "srun", "-N1", "-n1", "-w", node]
    if variant == "on":
        argv.append("--kmux-mem=1G")
    return argv + cmd


def set_variant(args, variant):
    write_plugstack(args.plugstack, "" if variant == "off" else args.line)


def check(args, log, when):
    for v in VARIANTS:
        set_variant(args, v)
        p = subprocess.run(srun_argv(v, args.node,
                                     ["sh", "-c", 'echo "[${LD_PRELOAD:-}]"']),
                           capture_output=True, text=True)
        log.write("check %s %s: rc=%d stdout=%s stderr=%s\n" %
                  (when, v, p.returncode, p.stdout.strip(), p.stderr.strip()))
        want_preload = v == "on"
        has = "libkmux" in p.stdout
        if p.returncode != 0 or has != want_preload:
            log.write("check %s %s: FAILED (want preload: %s)\n" %
                      (when, v, want_preload))
            return False
    return True


def one(args, variant):
    set_variant(args, variant)
    argv = srun_argv(variant, args.node, ["/usr/bin/date", "+%s.%N"])
    t0 = time.time()
    p = subprocess.run(argv, capture_output=True, text=True)
    t_end = time.time()
    task = None
    for tok in p.stdout.split():
        try:
            task = float(tok)
            break
        except ValueError:
            pass
    return t0, task, t_end, p.returncode, p.stderr.strip()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--plugstack", required=True)
    ap.add_argument("--line", required=True, help="the plugin's plugstack line")
    ap.add_argument("--node", default="n1")
    ap.add_argument("--n", type=int, default=60)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--csv", required=True)
    ap.add_argument("--log", required=True)
    args = ap.parse_args()

    rng = random.Random(args.seed)
    ok = True
    with open(args.log, "a") as log, open(args.csv, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["variant", "round", "warmup", "order", "t0", "task",
                    "t_end", "start_ms", "wall_ms", "rc"])
        ok = check(args, log, "before")
        for r in range(args.warmup + args.n):
            order = list(VARIANTS)
            rng.shuffle(order)
            for pos, v in enumerate(order):
                t0, task, t_end, rc, err = one(args, v)
                start_ms = "" if task is None else "%.3f" % ((task - t0) * 1e3)
                w.writerow([v, r, int(r < args.warmup), pos, "%.6f" % t0,
                            "" if task is None else "%.6f" % task,
                            "%.6f" % t_end, start_ms,
                            "%.3f" % ((t_end - t0) * 1e3), rc])
                if rc != 0 or task is None:
                    log.write("round %d %s: rc=%d stderr=%s\n" % (r, v, rc, err))
            f.flush()
        ok = check(args, log, "after") and ok
    # The plugin's line back, for what follows.
    write_plugstack(args.plugstack, args.line)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
