#!/usr/bin/env python3
"""holders.py - does memory that other, stopped processes hold on the GPU
slow a memory-bound kernel?  (issue 6: the one 10 ms kernel that came out
0.3-0.5% slower inside kmux regions than alone in every H200 run,
cupy_saxpy-10-1.20, streams three 2.4 GB tensors; inside a region the
siblings are frozen but keep their memory.)

    python3 holders.py [--holders K] [--gib G] [--elems N] [--cycles C]
                       [--samples S] [--dry]

One process (this one) times y + 2x into out, N float32 elements, ten
launches a sample (kmux.bench.time_cuda: L2 flush, spin, NVML clocks),
in phases, each printed as a JSON line:

  alone        its tensors allocated on an otherwise empty GPU
  held         K holder processes started, each allocates and touches G
               GiB, then is stopped with SIGSTOP as kmux freezes siblings;
               the same tensors timed again
  held-realloc its tensors freed and allocated again among the holders'
               memory (where a command's tensors land inside a region)
  after        the holders killed; the realloc'd tensors timed alone
  alone-again  freed and allocated again on the empty GPU

repeated C times.  The last line is a summary: each phase's median of its
medians and its ratio to the alone phases.  --dry: no GPU, no torch (the
holders only sleep, the timings are made up): to test the orchestration.
"""
import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))


def hold(gib, dry):
    """A holder: allocate and touch gib GiB, say ready, wait to be killed."""
    keep = None
    if not dry:
        import torch
        keep = torch.ones(int(gib * (1 << 30)) // 4, dtype=torch.float32,
                          device="cuda")
        torch.cuda.synchronize()
    sys.stdout.write("ready %d\n" % os.getpid())
    sys.stdout.flush()
    while True:
        time.sleep(3600)
    return keep


def start_holders(k, gib, dry):
    procs = []
    for _ in range(k):
        procs.append(subprocess.Popen(
            [sys.executable, os.path.abspath(__file__), "--hold", str(gib)]
            + (["--dry"] if dry else []),
            stdout=subprocess.PIPE, text=True))
    for p in procs:
        line = p.stdout.readline()
        if not line.startswith("ready"):
            stop_holders(procs)
            raise SystemExit("holders.py: a holder did not start (%r)" % line)
    for p in procs:
        os.kill(p.pid, signal.SIGSTOP)
    # kill() only sends it: a holder not yet scheduled still runs while the
    # "held" phase would be timed.  Our children: waitpid says when each
    # has stopped (and reaps nothing).
    for p in procs:
        os.waitpid(p.pid, os.WUNTRACED)
    return procs


def stop_holders(procs):
    for p in procs:
        try:
            os.kill(p.pid, signal.SIGCONT)
            p.kill()
        except ProcessLookupError:
            pass
    for p in procs:
        p.wait()


class Bench:
    def __init__(self, elems, samples, dry):
        self.elems, self.samples, self.dry = elems, samples, dry
        self.t = None

    def alloc(self):
        if self.dry:
            return
        import torch
        self.t = None
        torch.cuda.empty_cache()
        x = torch.randn(self.elems, device="cuda")
        y = torch.randn(self.elems, device="cuda")
        self.t = (x, y, torch.empty_like(x))

    def time(self):
        if self.dry:
            return {"median_ms": 13.66, "n_throttled": 0, "n_clean":
                    self.samples, "temp_c": [(40, 45)]}
        import torch
        from kmux.bench import time_cuda
        x, y, out = self.t

        def fn():
            for _ in range(10):
                torch.add(y, x, alpha=2.0, out=out)
        return time_cuda(fn, warmup=3, samples=self.samples, flush_l2=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--holders", type=int, default=7)
    ap.add_argument("--gib", type=float, default=12.0)
    ap.add_argument("--elems", type=int, default=600_000_000)
    ap.add_argument("--cycles", type=int, default=2)
    ap.add_argument("--samples", type=int, default=30)
    ap.add_argument("--hold", type=float, default=None)
    ap.add_argument("--dry", action="store_true")
    a = ap.parse_args()
    if a.hold is not None:
        return hold(a.hold, a.dry)
    if a.holders < 1 or a.gib <= 0 or a.elems < 1 or a.cycles < 1 \
            or a.samples < 1:
        ap.error("--holders, --gib, --elems, --cycles, --samples must be > 0")
    b = Bench(a.elems, a.samples, a.dry)
    res = {}
    procs = []

    def phase(cycle, name):
        r = b.time()
        temps = [t for t in r.get("temp_c", []) if t[0] is not None]
        line = {"cycle": cycle, "phase": name, "median_ms": r["median_ms"],
                "n_throttled": r["n_throttled"],
                "gpu_c": statistics.mean(t[0] for t in temps) if temps
                else None}
        print(json.dumps(line), flush=True)
        res.setdefault(name, []).append(r["median_ms"])

    try:
        for c in range(a.cycles):
            b.alloc()
            phase(c, "alone")
            procs = start_holders(a.holders, a.gib, a.dry)
            phase(c, "held")
            b.alloc()
            phase(c, "held-realloc")
            stop_holders(procs)
            procs = []
            phase(c, "after")
            b.alloc()
            phase(c, "alone-again")
    finally:
        stop_holders(procs)
    base = statistics.median(res["alone"] + res["alone-again"])
    print(json.dumps({"summary": {k: {"median_ms": statistics.median(v),
                                      "vs_alone_pct": (statistics.median(v)
                                                       / base - 1) * 100}
                                  for k, v in res.items()},
                      "holders": a.holders, "gib": a.gib, "elems": a.elems,
                      "cycles": a.cycles, "samples": a.samples}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
