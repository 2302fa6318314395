"""turns.py - two benchmark processes take strict turns on the GPU.

Why: the launch-bound PyTorch programs move by 5-40% on the GPU machine (a
VM whose CPUs other work shares), inside one process as much as between
processes.  Fresh processes run one after the other therefore cannot show
a 2% difference between plain and kmux.  A pair of processes started side
by side (say plain and kmux) that hand the GPU to each other after every
timed region of interest meet the same moments of the machine: ROI i of one
and ROI i of the other are neighbours in time, and their ratio cancels what
the machine did to both meanwhile (not what each met alone, such as a
slower CPU: run 25 in bench/results/streams.md).  Only one of the two ever
has GPU work or a timed region in flight; the other is blocked in read(2)
and costs neither CPU nor GPU, so both may share the same CPUs.

Protocol (bench/gpu/torch-lockstep.sh is the runner):
    KMUX_BENCH_TURN=MINE:THEIRS    two FIFOs, crossed between the two processes
A process takes its first turn (start()) before it touches CUDA, and hands
over (hand_over(): one byte into THEIRS, then it waits for one on MINE) after
each warm-up and after each timed ROI, so every untimed piece of GPU work
(context creation, building a model, checking a result) happens inside its
own turn too.  At exit it hands over for good.  Both processes must run the
same program with the same arguments: they hand over the same number of
times, which is what makes the pairing ROI by ROI and the ending free of
deadlock.  The runner puts the first byte into one FIFO.

A turn that does not come within KMUX_BENCH_TURN_TIMEOUT seconds (default
120: the other process died or was never started) ends the process with
exit status 3 and a message, so that a broken pair never hangs a device call.

No torch here: tests/e2e/t5n-bench-lockstep.sh runs it without a GPU.
"""

import atexit
import os
import select
import sys

TOKEN = b"t"
_fds = None       # (mine, theirs), both opened O_RDWR


def _timeout_s():
    try:
        return float(os.environ.get("KMUX_BENCH_TURN_TIMEOUT", "120"))
    except ValueError:
        sys.exit("turns: KMUX_BENCH_TURN_TIMEOUT must be a number of seconds")


def _wait():
    ready, _, _ = select.select([_fds[0]], [], [], _timeout_s())
    if not ready:
        print(f"turns: no turn within {_timeout_s():g} s: did the other process die?",
              file=sys.stderr, flush=True)
        # os._exit: a SystemExit would be caught as one app's failure and the
        # next app would wait again
        os._exit(3)
    if os.read(_fds[0], 1) != TOKEN:
        print("turns: unexpected byte on the turn FIFO", file=sys.stderr, flush=True)
        os._exit(3)


def _finish():
    if _fds:
        os.write(_fds[1], TOKEN)


def active():
    return _fds is not None


def start():
    """Wait for this process's first turn, if KMUX_BENCH_TURN is set; returns whether it is."""
    global _fds
    spec = os.environ.get("KMUX_BENCH_TURN")
    if not spec or _fds:
        return _fds is not None
    parts = spec.split(":")
    if len(parts) != 2 or not all(parts):
        sys.exit(f"turns: KMUX_BENCH_TURN={spec!r}: want MINE:THEIRS (two FIFOs)")
    try:
        # O_RDWR: the open never blocks, and a write never meets a FIFO
        # without readers (the other process may have exited already)
        _fds = tuple(os.open(p, os.O_RDWR) for p in parts)
    except OSError as e:
        sys.exit(f"turns: cannot open {e.filename}: {e.strerror}")
    atexit.register(_finish)
    _wait()
    return True


def hand_over():
    """Give the GPU to the other process and wait until it gives it back."""
    if _fds:
        os.write(_fds[1], TOKEN)
        _wait()
