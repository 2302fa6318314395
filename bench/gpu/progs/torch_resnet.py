#!/usr/bin/env python3
"""torch_resnet.py - compat program (d) and the PyTorch overhead loop.

A torchvision resnet18 (weights=None, so nothing is downloaded) trained with
SGD on fixed random data: convolutions and batch norm through cuDNN, the
final linear layer through cuBLAS, the rest through PyTorch's own kernels.

  --check  (compat, issue item 7): deterministic settings (manual_seed,
           cudnn.deterministic=True, cudnn.benchmark=False,
           use_deterministic_algorithms(True, warn_only=True),
           CUBLAS_WORKSPACE_CONFIG=:4096:8); prints the loss of every step
           with 5 decimals and a parameter checksum.  On one GPU and one
           software stack two runs give the same bytes; compat.sh checks
           that (two plain runs) before it demands identity of the kmux runs.
  --bench  (overhead, issue item 8): times training steps after a warm-up,
           for each CONFIG (batch x image size), with a CUDA synchronize
           after each step; prints one RESULT line per config with the
           median step time in ms.

Exits nonzero on any error (a CUDA error raises).
"""
import argparse
import os
import statistics
import sys
import time

# Must be set before cuBLAS is initialized (deterministic cuBLAS workspaces).
os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")

import torch  # noqa: E402
import torchvision  # noqa: E402


def make_model_and_data(batch, size, nbatches, seed):
    torch.manual_seed(seed)
    model = torchvision.models.resnet18(weights=None, num_classes=10).cuda()
    gen = torch.Generator(device="cuda")
    gen.manual_seed(seed + 1)
    data = [(torch.randn(batch, 3, size, size, device="cuda", generator=gen),
             torch.randint(0, 10, (batch,), device="cuda", generator=gen))
            for _ in range(nbatches)]
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    return model, data, opt


def step(model, opt, loss_fn, x, y):
    opt.zero_grad(set_to_none=True)
    loss = loss_fn(model(x), y)
    loss.backward()
    opt.step()
    return loss


def check(args):
    torch.backends.cudnn.deterministic = True
    torch.backends.cudnn.benchmark = False
    # warn_only: an op without a deterministic kernel warns (on stderr)
    # instead of failing; the two plain runs in compat.sh show whether the
    # result is reproducible.
    torch.use_deterministic_algorithms(True, warn_only=True)
    model, data, opt = make_model_and_data(args.batch, args.size, 4, 1234)
    loss_fn = torch.nn.CrossEntropyLoss()
    model.train()
    print(f"torch_resnet18 batch={args.batch} size={args.size} steps={args.steps}"
          f" cudnn={torch.backends.cudnn.is_available() and torch.backends.cudnn.enabled}")
    for i in range(args.steps):
        x, y = data[i % len(data)]
        loss = step(model, opt, loss_fn, x, y)
        print(f"step {i:03d} loss {loss.item():.5f}")
    torch.cuda.synchronize()
    with torch.no_grad():
        # sums on the host, in a fixed order
        psum = sum(p.detach().cpu().double().abs().sum().item()
                   for p in model.parameters())
        out = model.eval()(data[0][0][:4]).cpu().double().sum().item()
    print(f"param_abs_sum {psum:.6e}")
    print(f"eval_out_sum {out:.6e}")


def bench(args):
    torch.backends.cudnn.benchmark = False
    loss_fn = torch.nn.CrossEntropyLoss()
    for cfg in args.configs.split(","):
        batch, size = (int(v) for v in cfg.split("x"))
        model, data, opt = make_model_and_data(batch, size, 2, 99)
        model.train()
        for i in range(args.warmup):
            step(model, opt, loss_fn, *data[i % 2])
        torch.cuda.synchronize()
        times = []
        for i in range(args.steps):
            t0 = time.perf_counter()
            step(model, opt, loss_fn, *data[i % 2])
            torch.cuda.synchronize()
            times.append((time.perf_counter() - t0) * 1e3)
        med = statistics.median(times)
        print(f"RESULT config={cfg} steps={args.steps} warmup={args.warmup}"
              f" median_ms={med:.4f} min_ms={min(times):.4f}"
              f" max_ms={max(times):.4f}", flush=True)
        del model, data, opt
        torch.cuda.empty_cache()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    mode = ap.add_mutually_exclusive_group(required=True)
    mode.add_argument("--check", action="store_true")
    mode.add_argument("--bench", action="store_true")
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--size", type=int, default=112)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--configs", default="32x224,32x64",
                    help="bench: comma-separated BATCHxSIZE")
    args = ap.parse_args()
    if not torch.cuda.is_available():
        print("torch_resnet: no CUDA device", file=sys.stderr)
        return 1
    check(args) if args.check else bench(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
