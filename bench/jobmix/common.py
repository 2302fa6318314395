"""common.py - what every PyTorch job of bench/jobmix.sh shares.

A job builds its model from a config (random weights, nothing downloaded),
runs a fixed number of iterations, and prints one line the benchmark parses:

    JOBMIX name=N ok=1 wall_s=W init_s=I work_s=K iters=T peak_reserved=B peak_alloc=A

wall_s counts from this module's import (the interpreter is up), init_s is
the part before the first timed iteration (imports, CUDA context, model,
data), work_s the iterations.  peak_* are torch.cuda.max_memory_reserved()
and max_memory_allocated() in bytes.  On an out-of-memory error it prints
"JOBMIX_FAIL name=N reason=oom" and exits 3; on any other error it prints
the traceback, "JOBMIX_FAIL name=N reason=error" and exits 1.

JOBMIX_SCALE (default 1) multiplies every job's iteration count, to fit the
whole benchmark to a time budget.
"""
import argparse
import os
import sys
import time
import traceback

T_PROC = time.time()
# Nothing is ever downloaded: models come from configs.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
GiB = 1 << 30


def parser(desc):
    p = argparse.ArgumentParser(description=desc)
    p.add_argument("--name", required=True, help="job name for the report")
    p.add_argument("--iters", type=int, required=True)
    return p


def scaled(iters):
    s = float(os.environ.get("JOBMIX_SCALE", "1") or 1)
    return max(1, int(round(iters * s)))


def is_oom(e):
    import torch
    if isinstance(e, torch.cuda.OutOfMemoryError):
        return True
    msg = str(e)
    return "out of memory" in msg or "CUDA_ERROR_OUT_OF_MEMORY" in msg


def run(name, iters, build, step):
    """build() -> state (on the GPU); step(state, i) one iteration."""
    import torch
    iters = scaled(iters)
    try:
        torch.backends.cudnn.benchmark = True
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
        state = build()
        torch.cuda.synchronize()
        t_init = time.time()
        for i in range(iters):
            step(state, i)
        torch.cuda.synchronize()
        t_end = time.time()
    except Exception as e:  # noqa: BLE001 - every failure is reported
        if is_oom(e):
            print(f"JOBMIX_FAIL name={name} reason=oom "
                  f"peak_reserved={torch.cuda.max_memory_reserved()}",
                  flush=True)
            print(f"{name}: out of memory: {str(e)[:400]}", file=sys.stderr)
            sys.exit(3)
        traceback.print_exc()
        print(f"JOBMIX_FAIL name={name} reason=error", flush=True)
        sys.exit(1)
    print(f"JOBMIX name={name} ok=1 wall_s={t_end - T_PROC:.3f} "
          f"init_s={t_init - T_PROC:.3f} work_s={t_end - t_init:.3f} "
          f"iters={iters} peak_reserved={torch.cuda.max_memory_reserved()} "
          f"peak_alloc={torch.cuda.max_memory_allocated()}", flush=True)
