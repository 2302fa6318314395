#!/usr/bin/env python3
"""placement.py - issue 7's second measure: with one node made busy, where
do new Slurm jobs go, and how long does the node's weight take to follow?

Each round (the busy node alternates n1, n2, n1, ...):
  1. both nodes idle (every kmux job cancelled), both weights back to 1,
     then a quiet spell of 1.0-2.0 s (random: it samples the phase of
     kmuxd's 500 ms tick and its rate limit of one update per interval);
  2. t0, then the busy node gets busy the way tests/slurm/t40-weight.sh
     makes it: `kmux submit --mem 768M sleep 60` on its kmuxd (768 MiB of
     one of its two 1 GiB simulated GPUs);
  3. right away, JOBS Slurm jobs one after the other, the k-th started at
     t0 + k * SPACING ms (or as soon as the one before ends, if later), so
     that they span the time before and after the weight moves:
     `srun -N1 -n1 sh -c 'echo $SLURMD_NODENAME'` (no kmux option);
  4. the busy node idle again (t_idle), and the weights back to 1.
A thread reads both weights (`scontrol -o show node`) every POLL ms the
whole time.  The update happened between the start of the last reading
that did not show the busy node's weight above the idle node's
(update_lo_ms, after t0) and the end of the first that did (update_ms, the
figure held against the 2 s target); fall_ms is the same bound for both
weights back at 1 after t_idle.  A job counts as "after the update" when
its srun started after update_ms (jobs in between count as before).

Writes placement.csv (one row per job), rounds.csv (one row per round)
and weights.csv (every reading).
"""
import argparse
import csv
import json
import os
import random
import subprocess
import sys
import threading
import time

NODES = ("n1", "n2")


def weights():
    p = subprocess.run(["timeout", "10", "scontrol", "-o", "show", "node"],
                       capture_output=True, text=True)
    w = {}
    for line in p.stdout.splitlines():
        f = dict(t.split("=", 1) for t in line.split() if "=" in t)
        if f.get("NodeName") in NODES and f.get("Weight", "").isdigit():
            w[f["NodeName"]] = int(f["Weight"])
    return w


class Poller(threading.Thread):
    def __init__(self, period):
        super().__init__(daemon=True)
        self.period = period
        self.samples = []	# (t_read_start, t_read_end, {node: weight})
        self.stop = threading.Event()
        self.lock = threading.Lock()

    def run(self):
        while not self.stop.is_set():
            a = time.time()
            w = weights()
            b = time.time()
            with self.lock:
                self.samples.append((a, b, w))
            self.stop.wait(max(0.0, self.period - (b - a)))

    def first(self, after, pred):
        """The first reading started at or after `after` for which
        pred(weights) holds: (start of the reading before it, its own end,
        its weights).  The change happened between the two times."""
        prev = after
        with self.lock:
            for a, b, w in self.samples:
                if a < after:
                    continue
                if len(w) == len(NODES) and pred(w):
                    return max(prev, after), b, w
                prev = a
        return None


def jobs_on(node):
    """Slurm jobs on node, in any state (a completing one still holds its
    CPU: with both CPUs held, Slurm skips the node whatever its weight)."""
    p = subprocess.run(["timeout", "10", "squeue", "-h", "-o", "%N"],
                       capture_output=True, text=True)
    return sum(1 for l in p.stdout.split() if l == node)


def kmux(args, node, *argv):
    env = dict(os.environ, KMUX_SOCKET=os.path.join(args.sockdir, node, "sock"))
    return subprocess.run(["timeout", "30", args.kmux] + list(argv), env=env,
                          capture_output=True, text=True)


def busy(args, node):
    p = kmux(args, node, "submit", "--mem", "768M", "sleep", "120")
    if p.returncode != 0:
        raise RuntimeError("kmux submit on %s: %s" % (node, p.stderr.strip()))


def idle(args, node):
    p = kmux(args, node, "ps", "--json")
    for j in json.loads(p.stdout or "[]"):
        kmux(args, node, "cancel", "-s", "KILL", str(j["id"]))


def wait_for(poller, after, pred, limit):
    end = time.time() + limit
    while time.time() < end:
        r = poller.first(after, pred)
        if r:
            return r
        time.sleep(0.02)
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kmux", required=True)
    ap.add_argument("--sockdir", required=True, help="SC/kmux: NODE/sock below")
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--jobs", type=int, default=12)
    ap.add_argument("--spacing-ms", type=int, default=200)
    ap.add_argument("--poll-ms", type=int, default=50)
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument("--out", required=True)
    ap.add_argument("--log", required=True)
    args = ap.parse_args()
    rng = random.Random(args.seed)

    poller = Poller(args.poll_ms / 1000.0)
    poller.start()
    ok = True
    all_one = lambda w: all(v == 1 for v in w.values())
    with open(args.log, "a") as log, \
            open(os.path.join(args.out, "placement.csv"), "w", newline="") as pf, \
            open(os.path.join(args.out, "rounds.csv"), "w", newline="") as rf:
        pw = csv.writer(pf)
        pw.writerow(["round", "busy", "job", "t_submit_ms", "t_end_ms",
                     "after_update", "node", "to_idle", "rc",
                     "jobs_on_idle_before"])
        rw = csv.writer(rf)
        rw.writerow(["round", "t0", "busy", "quiet_s", "update_lo_ms", "update_ms",
                     "w_busy", "w_idle", "fall_ms", "jobs", "before_update",
                     "before_to_idle", "after_update", "after_to_idle"])
        for r in range(args.rounds):
            b = NODES[r % 2]
            i = NODES[1 - r % 2]
            for n in NODES:
                idle(args, n)
            t = time.time()
            if not wait_for(poller, t, all_one, 15):
                log.write("round %d: weights did not go back to 1\n" % r)
                ok = False
            quiet = rng.uniform(1.0, 2.0)
            time.sleep(quiet)

            t0 = time.time()
            busy(args, b)
            jobs = []
            for k in range(args.jobs):
                time.sleep(max(0.0, t0 + k * args.spacing_ms / 1000.0 - time.time()))
                held = jobs_on(i)
                a = time.time()
                p = subprocess.run(["timeout", "60", "srun", "-N1", "-n1", "sh",
                                    "-c", "echo $SLURMD_NODENAME"],
                                   capture_output=True, text=True)
                e = time.time()
                jobs.append((k, a, e, p.stdout.strip(), p.returncode, held))
                if p.returncode:
                    log.write("round %d job %d: rc=%d %s\n" %
                              (r, k, p.returncode, p.stderr.strip()))
            # The update, if it came later than the jobs: wait for it.
            up = wait_for(poller, t0, lambda w: w[b] > w[i], 10)
            # Conservative: a job is "after" only when it started once a
            # reading had ended that showed the new weight.
            t_upd = up[1] if up else None
            wb = wi = ""
            if up:
                wb, wi = up[2][b], up[2][i]
            t_idle = time.time()
            idle(args, b)
            fall = wait_for(poller, t_idle, all_one, 15)

            nb = nbi = na = nai = 0
            for k, a, e, node, rc, held in jobs:
                after = t_upd is not None and a >= t_upd
                to_idle = node == i
                if after:
                    na += 1
                    nai += to_idle
                else:
                    nb += 1
                    nbi += to_idle
                pw.writerow([r, b, k, "%.1f" % ((a - t0) * 1e3),
                             "%.1f" % ((e - t0) * 1e3), int(after), node,
                             int(to_idle), rc, held])
            rw.writerow([r, "%.6f" % t0, b, "%.2f" % quiet,
                         "" if up is None else "%.1f" % ((up[0] - t0) * 1e3),
                         "" if up is None else "%.1f" % ((up[1] - t0) * 1e3),
                         wb, wi,
                         "" if fall is None else "%.1f" % ((fall[1] - t_idle) * 1e3),
                         len(jobs), nb, nbi, na, nai])
            pf.flush()
            rf.flush()
            log.write("round %d: busy %s, update %s ms, %d/%d after it to %s\n" %
                      (r, b, "none" if up is None else "%.0f" % ((up[1] - t0) * 1e3),
                       nai, na, i))
        poller.stop.set()
        poller.join()
        with open(os.path.join(args.out, "weights.csv"), "w", newline="") as wf:
            ww = csv.writer(wf)
            ww.writerow(["t_read_start", "t_read_end"] + list(NODES))
            for a, b_, w in poller.samples:
                ww.writerow(["%.6f" % a, "%.6f" % b_] + [w.get(n, "") for n in NODES])
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
