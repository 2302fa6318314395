"""arrivals.py - bench/jobmix.sh's arrival schedule (JOBMIX_ARRIVALS=1;
standard library only).

    arrivals.py SEED WINDOW_S NAME...
        one line per job, in the order of arrival: OFFSET_S NAME

The schedule depends on SEED, WINDOW_S and the names given, nothing else,
so every kmux-family run of one call (busyness, round-robin, their
repeats) submits the same jobs in the same order at the same offsets.  The
order is a seeded shuffle of the mix; the first job arrives at 0 and the
other N-1 at sorted uniform times over [0, WINDOW_S] (a Poisson process
conditioned on its arrivals in the window: bursts and gaps as Poisson
arrivals have them, but a span fixed in advance, so the budget holds).
"""
import random
import sys


def schedule(seed, window, names):
    """[(offset_s, name)] in arrival order."""
    rng = random.Random(seed)
    order = list(names)
    rng.shuffle(order)
    offs = [0.0] + sorted(rng.uniform(0.0, window) for _ in order[1:])
    return list(zip(offs, order))


def main():
    if len(sys.argv) < 4:
        print("usage: arrivals.py SEED WINDOW_S NAME...", file=sys.stderr)
        return 2
    try:
        seed = int(sys.argv[1])
        window = float(sys.argv[2])
    except ValueError:
        print(f"arrivals.py: bad seed '{sys.argv[1]}' or window '{sys.argv[2]}'",
              file=sys.stderr)
        return 2
    if seed < 0 or not window >= 0:
        print(f"arrivals.py: seed {seed} and window {window} must not be negative",
              file=sys.stderr)
        return 2
    for off, name in schedule(seed, window, sys.argv[3:]):
        print(f"{off:.3f} {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
