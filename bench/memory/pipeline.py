"""pipeline.py - batch inference with several PyTorch models held resident
and run one after another: the memory manager's workload for GPUs shared by
time slicing (issue 5 (b); bench/memory-mix.sh's "torch" mix).

What it models: an offline job that scores a data set with several models
(an ensemble, or the stages of a pipeline) and keeps every model on the GPU
for its whole life, but runs them phase-major: model 0 over every batch,
then model 1, ...  Like bench/memory/staged.cu, all but one model's weights
sit idle at any time, which `kmux run --memory=evict` can take away at one
eviction and one restore per model boundary.  Unlike staged.cu, a batch is
a whole forward pass (hundreds of kernels) before the host reads anything
back, so the program waits for the GPU tens of times a second (29-72 on
an H200, kmuxd's count; a batch takes 16 ms of host time), not tens of
thousands: processes that share a GPU by time slicing lose little to
context switches (bench/results/share.md), and since a small batch leaves
the GPU mostly idle while the host launches (0.21-0.24 busy alone), such
processes gain from sharing one (bench/results/memory.md run 17).

    python3 pipeline.py [--models vit_l_16,convnext_large,regnet_y_16gf]
        [--batch 8] [--batches 500] [--images 256] [--res 224]
        [--sync-every 1]

Models come from torchvision configs with weights=None (random weights,
torch.manual_seed(0), built on the CPU, then moved to the GPU in bfloat16;
nothing is downloaded).  The data set is --images synthetic uint8 images
kept on the GPU; batch i takes images i*batch.. (mod --images), normalises
them and runs the model under inference_mode.  The host reads each batch's
top-1 predictions back (`.cpu()`, as such loops are written) every
--sync-every batches (0: once per model, at its end).  One batch per model
runs before the ROI (cuDNN and cuBLAS set-up).  cudnn.benchmark stays off,
so no algorithm search allocates memory the job would not otherwise use.

Output (bench/apps conventions, common.h):
    STAGE s model=M ms=T ms_per_batch=U
    RESULT app=pipeline variant=plain ms=ROI wall_ms=WALL min_ms=ROI reps=B stages=S
    CHECKSUM app=pipeline value=0x...  (CRC-32 of every prediction, in order)
Deterministic for one GPU and software stack: the same seed, the same
kernels, so a run with or without kmux gives the same checksum.  Exit 2 on
bad arguments, 3 on out of memory, 1 on any other error.
"""
import argparse
import sys
import time
import zlib

T_PROC = time.time()


def parse():
    p = argparse.ArgumentParser(description="phase-major multi-model inference")
    p.add_argument("variant", nargs="?", default="plain", choices=("plain",))
    p.add_argument("--models", default="vit_l_16,convnext_large,regnet_y_16gf")
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--batches", type=int, default=500, help="batches per model")
    p.add_argument("--images", type=int, default=256)
    p.add_argument("--res", type=int, default=224)
    p.add_argument("--sync-every", type=int, default=1, metavar="K")
    a = p.parse_args()
    for name in ("batch", "batches", "images", "res"):
        if getattr(a, name) < 1:
            p.error(f"--{name} must be at least 1")
    if a.sync_every < 0:
        p.error("--sync-every must not be negative")
    a.models = [m for m in a.models.split(",") if m]
    if not a.models:
        p.error("--models names no model")
    return a


def is_oom(e):
    import torch
    if isinstance(e, torch.cuda.OutOfMemoryError):
        return True
    return "out of memory" in str(e) or "CUDA_ERROR_OUT_OF_MEMORY" in str(e)


def main():
    a = parse()
    import torch
    import torchvision

    for m in a.models:
        if not callable(getattr(torchvision.models, m, None)):
            print(f"pipeline: unknown torchvision model '{m}'", file=sys.stderr)
            return 2
    torch.backends.cudnn.benchmark = False
    dev = torch.device("cuda")
    torch.manual_seed(0)
    models = []
    for name in a.models:
        m = getattr(torchvision.models, name)(weights=None).eval()
        m = m.to(dev, torch.bfloat16)
        if not name.startswith(("vit_", "swin_")):
            m = m.to(memory_format=torch.channels_last)
        models.append(m)
    data = torch.randint(0, 256, (a.images, 3, a.res, a.res), dtype=torch.uint8,
                         device=dev)
    mean = torch.tensor([0.485, 0.456, 0.406], device=dev).view(1, 3, 1, 1)
    std = torch.tensor([0.229, 0.224, 0.225], device=dev).view(1, 3, 1, 1)

    def batch_at(i):
        idx = torch.arange(i * a.batch, (i + 1) * a.batch, device=dev) % a.images
        x = (data[idx].float().div_(255.0) - mean) / std
        return x.to(torch.bfloat16).contiguous(memory_format=torch.channels_last)

    crc = 0
    with torch.inference_mode():
        for m in models:
            m(batch_at(0)).argmax(1).cpu()
        torch.cuda.synchronize()
        t0 = time.time()
        for s, m in enumerate(models):
            ts = time.time()
            pending = []
            for i in range(a.batches):
                pending.append(m(batch_at(i)).argmax(1))
                if a.sync_every and len(pending) >= a.sync_every:
                    crc = zlib.crc32(torch.cat(pending).cpu().numpy().tobytes(), crc)
                    pending = []
            if pending:
                crc = zlib.crc32(torch.cat(pending).cpu().numpy().tobytes(), crc)
            torch.cuda.synchronize()
            ms = (time.time() - ts) * 1000.0
            print(f"STAGE {s} model={a.models[s]} ms={ms:.1f} "
                  f"ms_per_batch={ms / a.batches:.3f}", flush=True)
        roi = (time.time() - t0) * 1000.0
    print(f"RESULT app=pipeline variant=plain ms={roi:.3f} "
          f"wall_ms={(time.time() - T_PROC) * 1000.0:.1f} min_ms={roi:.3f} "
          f"reps={a.batches} stages={len(models)}", flush=True)
    print(f"CHECKSUM app=pipeline value=0x{crc:08x}", flush=True)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except SystemExit:
        raise
    except Exception as e:  # noqa: BLE001 - every failure is reported
        if is_oom(e):
            print(f"pipeline: out of memory: {str(e)[:400]}", file=sys.stderr)
            sys.exit(3)
        import traceback
        traceback.print_exc()
        sys.exit(1)
