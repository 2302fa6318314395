"""ensemble_app.py - an ensemble of small models in one process (issue 3, item 6).

What it proves: six small, independent models (three CNNs on 3x64x64
images, three MLPs on 3072-vectors, batch 8) evaluated one after another
on the default stream, then averaged: the models share nothing but the
final average, yet each fills a small part of the GPU and they run in
order.  A multi-model serving process looks like this.

plain:  outs = [m(x_m) for m in models]; mean of their softmaxes.
expert: model i on side stream i (wait_stream before, wait_stream +
        record_stream after), the average on the current stream.
Timed: ROI = --iters rounds over the ensemble; ms per ROI (median of --reps).
Check: the ensemble output against the plain one in the same process;
checksum of the output bytes.

Run alone: python3 ensemble_app.py [plain|expert] [--reps N] [--iters K]
"""

import argparse

import torch
from torch import nn

import torchbench

APP = "ensemble"


def cnn(width):
    w = width
    return nn.Sequential(
        nn.Conv2d(3, w, 3, padding=1), nn.BatchNorm2d(w), nn.ReLU(),
        nn.Conv2d(w, w, 3, padding=1), nn.BatchNorm2d(w), nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(w, 2 * w, 3, padding=1), nn.BatchNorm2d(2 * w), nn.ReLU(),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(2 * w, 10))


def mlp(hidden):
    return nn.Sequential(
        nn.Linear(3072, hidden), nn.ReLU(),
        nn.Linear(hidden, hidden), nn.ReLU(),
        nn.Linear(hidden, 10))


def build(batch):
    torch.manual_seed(0)
    models = [cnn(32), cnn(48), cnn(64), mlp(1024), mlp(1536), mlp(2048)]
    models = [m.cuda().eval() for m in models]
    g = torch.Generator().manual_seed(2)
    inputs = [torch.rand(batch, 3, 64, 64, generator=g).cuda() for _ in range(3)]
    inputs += [torch.rand(batch, 3072, generator=g).cuda() for _ in range(3)]
    return models, inputs


def combine(outs):
    return torch.stack([o.softmax(-1) for o in outs]).mean(0)


def forward_plain(models, inputs):
    return combine([m(x) for m, x in zip(models, inputs)])


def forward_expert(models, inputs, streams):
    cur = torch.cuda.current_stream()
    outs = []
    for m, x, s in zip(models, inputs, streams):
        s.wait_stream(cur)
        with torch.cuda.stream(s):
            outs.append(m(x))
    for o, s in zip(outs, streams):
        cur.wait_stream(s)
        o.record_stream(cur)
    return combine(outs)


def run(variant, reps, iters, warmup, batch):
    models, inputs = build(batch)
    streams = [torch.cuda.Stream() for _ in models]
    with torch.inference_mode():
        ref = forward_plain(models, inputs).clone()
        if variant == "expert":
            def fwd():
                return forward_expert(models, inputs, streams)
        else:
            def fwd():
                return forward_plain(models, inputs)

        def roi():
            for _ in range(iters):
                fwd()

        timing = torchbench.time_roi(roi, reps, warmup)
        torchbench.report(APP, variant, timing, reps, f"iters={iters} batch={batch}")
        out = fwd()
        torch.cuda.synchronize()
        torchbench.check(APP, variant, out, ref)


def add_args(p):
    p.add_argument("--ensemble-batch", type=int, default=8)
    p.add_argument("--ensemble-iters", type=int, default=20)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("variant", nargs="?", default="plain", choices=["plain", "expert"])
    p.add_argument("--reps", type=int, default=7)
    p.add_argument("--warmup", type=int, default=3)
    add_args(p)
    a = p.parse_args()
    torchbench.setup_determinism()
    run(a.variant, a.reps, a.ensemble_iters, a.warmup, a.ensemble_batch)


if __name__ == "__main__":
    main()
