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
"""

import hashlib
import os
import statistics
import sys
import time

import torch


def setup_determinism():
    """Same results run after run, scheduled or not: what kmux verify needs."""
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    torch.backends.cudnn.benchmark = False
    torch.backends.cudnn.deterministic = True
    torch.use_deterministic_algorithms(True, warn_only=True)
    torch.manual_seed(0)


def time_roi(fn, reps, warmup):
    """Run fn() warmup times, then time reps runs; returns (median, wall, min) ms."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    gpu, wall = [], []
    start = torch.cuda.Event(enable_timing=True)
    stop = torch.cuda.Event(enable_timing=True)
    for _ in range(reps):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        wall.append((time.perf_counter() - t0) * 1e3)
        gpu.append(start.elapsed_time(stop))
    torch.cuda.synchronize()
    return statistics.median(gpu), statistics.median(wall), min(gpu)


def tensor_bytes(t):
    """The bytes of a tensor, copied to the host (a device-to-host copy)."""
    t = t.detach().contiguous().cpu()
    try:
        return t.numpy().tobytes()
    except Exception:  # noqa: BLE001 - numpy missing or too old
        return bytes(t.view(torch.uint8).flatten().tolist())


def report(app, variant, timing, reps, extra=""):
    ms, wall, mn = timing
    print(f"RESULT app={app} variant={variant} ms={ms:.4f} wall_ms={wall:.4f} "
          f"min_ms={mn:.4f} reps={reps}{(' ' + extra) if extra else ''}", flush=True)


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
