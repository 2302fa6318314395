"""torch_suite.py - run several of the PyTorch programs in ONE process.

bench/streams.sh uses this to pay PyTorch's start-up (import, CUDA context,
cuDNN) once per run instead of once per program: each program still times
its own region of interest and prints its own RESULT / CHECK / CHECKSUM
lines (see torchbench.py).  A failing program makes the exit status 1 but
the others still run.  Under KMUX_BENCH_TURN (turns.py) it takes turns on
the GPU with another process, from before CUDA starts to its exit.

Usage: python3 torch_suite.py [--apps googlenet,ensemble] [plain|expert]
                              [--reps N] [--warmup N] [per-app options]
"""

import argparse
import sys
import traceback

import torch

import ensemble_app
import googlenet_app
import torchbench
import turns

APPS = {
    "googlenet": lambda a, v: googlenet_app.run(v, a.reps, a.googlenet_iters, a.warmup,
                                                a.googlenet_batch),
    "ensemble": lambda a, v: ensemble_app.run(v, a.reps, a.ensemble_iters, a.warmup,
                                              a.ensemble_batch),
}


def main():
    p = argparse.ArgumentParser(description="PyTorch programs of bench/apps in one process")
    p.add_argument("variant", nargs="?", default="plain", choices=["plain", "expert"])
    p.add_argument("--apps", default="googlenet,ensemble")
    p.add_argument("--reps", type=int, default=7)
    p.add_argument("--warmup", type=int, default=3)
    googlenet_app.add_args(p)
    ensemble_app.add_args(p)
    a = p.parse_args()
    turns.start()                     # before CUDA starts
    torchbench.setup_determinism()
    print(f"torch {torch.__version__}, cuda {torch.version.cuda}, "
          f"{torch.cuda.get_device_name(0)}", flush=True)
    status = 0
    for name in [n for n in a.apps.split(",") if n]:
        if name not in APPS:
            print(f"unknown app {name} (have: {', '.join(APPS)})", file=sys.stderr)
            status = 2
            continue
        try:
            APPS[name](a, a.variant)
        except SystemExit as e:       # CHECK FAIL
            status = status or (e.code if isinstance(e.code, int) else 1)
        except Exception:             # noqa: BLE001 - report, go on with the next app
            traceback.print_exc()
            print(f"CHECK FAIL app={name} variant={a.variant}: exception", flush=True)
            status = status or 1
    sys.exit(status)


if __name__ == "__main__":
    main()
