"""lockstep-stand-in.py - stands in for torch_suite.py in t5n-bench-lockstep.sh.

Takes turns like the real programs (bench/apps/py/turns.py): its first turn
before anything else, a hand-over after each app's warm-up and after each
ROI.  Its ROI i "takes" (10 + i) ms times a factor that tells its mode
(1.05 under the preload, 1.10 more with KMUX_STREAMS), so every paired
ratio is known exactly.  Each ROI writes "PID begin" / "PID end" to
$STANDIN_TRACE (appended), which shows whether two ROIs ever overlapped.
STANDIN_DIE=N: the side under the preload dies at its ROI N.

Usage: python3 lockstep-stand-in.py ROIS
"""
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "..", "bench", "apps", "py"))
import turns  # noqa: E402

rois = int(sys.argv[1])
kmux = "libkmux" in os.environ.get("LD_PRELOAD", "")
factor = (1.05 if kmux else 1.0) * (1.10 if os.environ.get("KMUX_STREAMS") else 1.0)
die = int(os.environ.get("STANDIN_DIE", "-1"))
trace = os.environ["STANDIN_TRACE"]


def mark(what):
    with open(trace, "a") as f:
        f.write(f"{os.getpid()} {what}\n")


turns.start()
for app in ("alpha", "beta"):
    turns.hand_over()                   # after the warm-up
    ms = []
    for i in range(rois):
        if kmux and i == die:
            os._exit(9)
        mark("begin")
        time.sleep(0.002)
        mark("end")
        ms.append((10 + i) * factor)
        turns.hand_over()
    print(f"RESULT app={app} variant=plain ms={ms[len(ms) // 2]:.4f}", flush=True)
    print(f"ROIS app={app} variant=plain ms=" + ",".join(f"{t:.4f}" for t in ms), flush=True)
