#!/usr/bin/env python3
"""selfprof-report.py - name and rank what build/prof/libkmux.so measured.

The profiling build (src/preload/selfprof.c, `make prof`) writes, with
KMUX_SELFPROF=FILE, FILE.<pid>: per probed function its offset in the
library, its calls, its inclusive TSC cycles and the probes that ran beneath
it.  This names the offsets with nm, takes the probes' own cost out
(the probe pair cost the file measured, times the probes beneath) and ranks.

Usage:
  selfprof-report.py [--top N] [--match REGEX] LIB FILE [FILE...]
      one table per FILE (several files of one run: pass each)
  selfprof-report.py --diff [--top N] LIB BASE_FILE FILE
      side by side: per function, ns per call in each and the difference
      in ms over the run (FILE's calls times the per-call difference)

Exit status: 0, 1 when a file cannot be read or is not a selfprof file, 2
on a usage error.
"""
import argparse
import re
import subprocess
import sys


def names(lib):
    """offset -> function name, from nm (static functions included)."""
    try:
        out = subprocess.run(["nm", "--defined-only", lib], check=True,
                             capture_output=True, text=True).stdout
    except (OSError, subprocess.CalledProcessError) as e:
        sys.exit(f"selfprof-report: cannot read symbols of {lib}: {e}")
    m = {}
    for line in out.splitlines():
        f = line.split()
        if len(f) == 3 and f[1] in "tTwW":
            m.setdefault(int(f[0], 16), f[2])
    return m


def load(path, syms):
    """{name: (calls, self-corrected ns)} and the header's numbers."""
    try:
        lines = open(path).read().splitlines()
    except OSError as e:
        print(f"selfprof-report: cannot read {path}: {e.strerror}", file=sys.stderr)
        sys.exit(1)
    if not lines or not lines[0].startswith("# kmux selfprof"):
        print(f"selfprof-report: {path}: not a kmux selfprof file", file=sys.stderr)
        sys.exit(1)
    hdr = dict(re.findall(r"(\w+) ([0-9.]+)", lines[0]))
    cpn = float(hdr.get("cycles_per_ns", 0)) or 1.0
    pair = float(hdr.get("probe_pair_cycles", 0))
    rows = {}
    for ln in lines[1:]:
        if ln.startswith("#") or not ln.strip():
            continue
        try:
            off, calls, cyc, inner = ln.split()
            off, calls, cyc, inner = int(off, 16), int(calls), int(cyc), int(inner)
        except ValueError:
            print(f"selfprof-report: {path}: bad line: {ln!r}", file=sys.stderr)
            sys.exit(1)
        name = syms.get(off, hex(off))
        ns = max(cyc - inner * pair, 0) / cpn
        c0, n0 = rows.get(name, (0, 0.0))
        rows[name] = (c0 + calls, n0 + ns)
    return rows, hdr


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--top", type=int, default=30)
    p.add_argument("--match", help="only functions whose name matches")
    p.add_argument("--diff", action="store_true")
    p.add_argument("lib")
    p.add_argument("files", nargs="+")
    a = p.parse_args()
    if a.diff and len(a.files) != 2:
        p.error("--diff takes a base file and one other")
    if a.top <= 0:
        p.error("--top must be positive")
    syms = names(a.lib)
    rx = re.compile(a.match) if a.match else None
    if a.diff:
        (b, hb), (t, ht) = load(a.files[0], syms), load(a.files[1], syms)
        print(f"base {a.files[0]} (probe pair {hb.get('probe_pair_cycles')} cycles), "
              f"other {a.files[1]} (probe pair {ht.get('probe_pair_cycles')} cycles)")
        print(f"{'function':40} {'calls':>9} {'ns/call':>9} {'calls':>9} {'ns/call':>9} "
              f"{'+ms':>8}")
        out = []
        for name in set(b) | set(t):
            if rx and not rx.search(name):
                continue
            bc, bn = b.get(name, (0, 0.0))
            tc, tn = t.get(name, (0, 0.0))
            bpc = bn / bc if bc else 0.0
            tpc = tn / tc if tc else 0.0
            out.append(((tpc - bpc) * tc / 1e6, name, bc, bpc, tc, tpc))
        for d, name, bc, bpc, tc, tpc in sorted(out, reverse=True)[:a.top]:
            print(f"{name[:40]:40} {bc:9d} {bpc:9.1f} {tc:9d} {tpc:9.1f} {d:8.3f}")
        return 0
    for path in a.files:
        rows, hdr = load(path, syms)
        print(f"{path}: cycles/ns {hdr.get('cycles_per_ns')}, probe pair "
              f"{hdr.get('probe_pair_cycles')} cycles, lost {hdr.get('lost')}")
        print(f"{'function':40} {'calls':>9} {'ns/call':>9} {'total ms':>9}")
        rs = sorted(((n, name, c) for name, (c, n) in rows.items()
                     if not rx or rx.search(name)), reverse=True)
        for n, name, c in rs[:a.top]:
            print(f"{name[:40]:40} {c:9d} {n / c:9.1f} {n / 1e6:9.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
