"""torchbench.py - shared by the PyTorch programs of bench/apps (issue 3, item 6).

Determinism, timing and result lines, in the same format as the CUDA apps
(bench/apps/common.h):

    RESULT app=NAME variant=plain|expert ms=MEDIAN wall_ms=MEDIAN min_ms=MIN reps=N ...
    CHECK ok                    (or CHECK FAIL ..., exit status 1)
    CHECKSUM app=NAME value=<first 16 hex digits of sha256 of the output bytes>

The region of interest is timed with CUDA events recorded on the current
stream (PyTorch's default: the legacy default stream, which is what kmux
reschedules), after warm-up, with a synchronize before each rep; ms is the
median over reps.

In-process A/B (KMUX_BENCH_AB=1, under `kmux run --streams N`): these
programs are bound by the host's launch rate, and the same program's time
moves by 25-40% from one process to the next on the GPU machine, so fresh
processes cannot resolve a 2% difference.  Instead one process alternates
blocks of ROIs with kmux's scheduler paused (kmux_streams_pause(1): work runs
as submitted, the unscheduled baseline with the preload loaded) and running,
the order swapped every block pair, one untimed ROI after each switch.  It
prints, besides the RESULT line (the scheduled ROIs),

    AB app=NAME variant=V paused_ms=MEDIAN sched_ms=MEDIAN ratio=MEDIAN
       ratio_lo=Q1 ratio_hi=Q3 pairs=P per_block=K

where ratio is the median over block pairs of sched/paused (above 1: kmux
slower).  KMUX_BENCH_AB=aa is the method's control (A/A): both arms run
paused, so its ratio shows the bias and spread of the method itself.

Lockstep pairs (KMUX_BENCH_TURN, turns.py): two processes, say plain and
kmux, take strict turns, one ROI each, so that ROI i of each sees the same
moment of the machine; this is how plain (no preload at all) is compared
with kmux.  Every run also prints each timed ROI, in order:

    ROIS app=NAME variant=V ms=T1,T2,...
"""

import hashlib
import os
import statistics
import sys
import time

import torch

import turns


def setup_determinism():
    """Same results run after run, scheduled or not: what kmux verify needs."""
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    torch.backends.cudnn.benchmark = False
    torch.backends.cudnn.deterministic = True
    torch.use_deterministic_algorithms(True, warn_only=True)
    torch.manual_seed(0)


_ab_last = None
_rois = None      # the last time_roi's ROIs (GPU ms, in order)


def _pause_fn():
    """kmux.streams_pause (the repository's python/kmux), or exit 1 when not scheduled."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                    "..", "..", "..", "python"))
    import kmux  # noqa: E402 - found through the path above

    if kmux.streams_pause(False) < 0:
        sys.exit("KMUX_BENCH_AB needs the kmux preload (kmux run --streams N)")
    return kmux.streams_pause


def _time_one(fn, start, stop):
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    start.record()
    fn()
    stop.record()
    stop.synchronize()
    return start.elapsed_time(stop), (time.perf_counter() - t0) * 1e3


def time_roi_ab(fn, pairs, warmup, per_block=3, control=False):
    """The A/B of the module docstring; returns the scheduled (median, wall, min).

    control: the "scheduled" arm runs paused too (the A/A control).
    """
    global _ab_last
    if turns.active():
        sys.exit("KMUX_BENCH_AB and KMUX_BENCH_TURN do not go together")
    pause = _pause_fn()
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    start = torch.cuda.Event(enable_timing=True)
    stop = torch.cuda.Event(enable_timing=True)
    times = {0: [], 1: []}      # 1: paused
    wall = []
    ratios = []
    for i in range(pairs):
        block = {}
        for paused in ((1, 0) if i % 2 == 0 else (0, 1)):
            r = pause(1 if control else paused)
            if r < 0:
                sys.exit(f"kmux_streams_pause({paused}) returned {r}")
            fn()                # untimed: the first ROI after a switch
            block[paused] = []
            for _ in range(per_block):
                g, w = _time_one(fn, start, stop)
                block[paused].append(g)
                if not paused:
                    wall.append(w)
            times[paused] += block[paused]
        ratios.append(statistics.median(block[0]) / statistics.median(block[1]))
    pause(0)
    torch.cuda.synchronize()
    q = statistics.quantiles(ratios, n=4) if len(ratios) > 1 else ratios * 3
    _ab_last = (statistics.median(times[1]), statistics.median(times[0]),
                statistics.median(ratios), q[0], q[2], pairs, per_block)
    return statistics.median(times[0]), statistics.median(wall), min(times[0])


def time_roi(fn, reps, warmup):
    """Run fn() warmup times, then time reps runs; returns (median, wall, min) ms.

    Under KMUX_BENCH_TURN the GPU goes to the other process after the
    warm-up and after each timed ROI.
    """
    global _rois
    ab = os.environ.get("KMUX_BENCH_AB")
    if ab in ("1", "aa"):
        return time_roi_ab(fn, reps, warmup, control=ab == "aa")
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    gpu, wall = [], []
    start = torch.cuda.Event(enable_timing=True)
    stop = torch.cuda.Event(enable_timing=True)
    turns.hand_over()
    for _ in range(reps):
        g, w = _time_one(fn, start, stop)
        gpu.append(g)
        wall.append(w)
        turns.hand_over()
    torch.cuda.synchronize()
    _rois = gpu
    return statistics.median(gpu), statistics.median(wall), min(gpu)


def tensor_bytes(t):
    """The bytes of a tensor, copied to the host (a device-to-host copy)."""
    t = t.detach().contiguous().cpu()
    try:
        return t.numpy().tobytes()
    except Exception:  # noqa: BLE001 - numpy missing or too old
        return bytes(t.view(torch.uint8).flatten().tolist())


def report(app, variant, timing, reps, extra=""):
    global _ab_last, _rois
    ms, wall, mn = timing
    print(f"RESULT app={app} variant={variant} ms={ms:.4f} wall_ms={wall:.4f} "
          f"min_ms={mn:.4f} reps={reps}{(' ' + extra) if extra else ''}", flush=True)
    if _rois:
        print(f"ROIS app={app} variant={variant} ms=" + ",".join(f"{t:.4f}" for t in _rois),
              flush=True)
        _rois = None
    if _ab_last:
        p, s, r, lo, hi, n, k = _ab_last
        print(f"AB app={app} variant={variant} paused_ms={p:.4f} sched_ms={s:.4f} "
              f"ratio={r:.4f} ratio_lo={lo:.4f} ratio_hi={hi:.4f} pairs={n} per_block={k}",
              flush=True)
        _ab_last = None


def check(app, variant, out, ref):
    """out (this variant) against ref (the plain forward, same process).

    Bit-identical is expected: both run the same kernels on the same data.
    A difference within 1e-4 (relative) is reported but passes, since
    libraries may pick different algorithms per stream; anything larger
    fails.  Prints CHECK and CHECKSUM; exits 1 on a failure.
    """
    same = torch.equal(out, ref)
    if not same:
        close = torch.allclose(out.float(), ref.float(), rtol=1e-4, atol=1e-5)
        diff = (out.float() - ref.float()).abs().max().item()
        if not close:
            print(f"CHECK FAIL app={app} variant={variant}: max |diff| {diff:.3e} "
                  "vs the plain forward", flush=True)
            sys.exit(1)
        print(f"CHECK ok (within 1e-4, not bit-identical: max |diff| {diff:.3e})", flush=True)
    else:
        print(f"CHECK ok ({out.numel()} values, bit-identical to the plain forward)", flush=True)
    digest = hashlib.sha256(tensor_bytes(out)).hexdigest()[:16]
    print(f"CHECKSUM app={app} value={digest} sum={out.double().sum().item():.9e}", flush=True)
