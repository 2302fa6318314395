"""googlenet_app.py - a real model with parallel branches (issue 3, item 6).

What it proves: torchvision's GoogLeNet (weights=None, eval, batch 4 at
224x224) is launch-bound at this batch size: ~200 small kernels per forward
(convolutions, batch norms, ReLUs, pools, concatenations), and each of its 9
Inception modules has 4 independent branches that PyTorch runs one after
another on the default stream.  Spreading them over streams can overlap the
branches; PyTorch's caching allocator puts many tensors into one device
allocation, so a scheduler that tracks dependencies per allocation sees
false conflicts (the later-work item in docs/design-streams.md).

plain:  model(x), as everyone writes it.
expert: each Inception module's forward replaced by a hand-written one that
        runs branch 1 on the current stream and branches 2-4 on three side
        streams (wait_stream before, wait_stream + record_stream after), then
        concatenates: what a PyTorch expert writes for branch parallelism.
Timed: ROI = --iters forward passes; ms per ROI (median of --reps).
Check: the output of one forward against the plain forward in the same
process; checksum of the output bytes.

Run alone: python3 googlenet_app.py [plain|expert] [--reps N] [--iters K]
"""

import argparse
import types

import torch

import torchbench

APP = "googlenet"


def build(batch):
    import torchvision

    torch.manual_seed(0)
    # init_weights=False: PyTorch's default initialisation (fast, seeded)
    model = torchvision.models.googlenet(weights=None, aux_logits=False,
                                         init_weights=False)
    model = model.cuda().eval()
    g = torch.Generator().manual_seed(1)
    x = torch.rand(batch, 3, 224, 224, generator=g).cuda()
    return model, x


def _inception_forward_streams(self, x):
    """Inception.forward with the 4 branches on 4 streams (bound per module)."""
    cur = torch.cuda.current_stream()
    side = self._kmux_side_streams
    outs = [self.branch1(x)]
    for branch, s in zip((self.branch2, self.branch3, self.branch4), side):
        s.wait_stream(cur)              # x is ready
        with torch.cuda.stream(s):
            outs.append(branch(x))
    for out, s in zip(outs[1:], side):
        cur.wait_stream(s)              # the branch is done
        out.record_stream(cur)          # its memory is used on cur now
    return torch.cat(outs, 1)


def make_expert(model):
    """Patch every Inception module (anything with branch1..branch4)."""
    side = [torch.cuda.Stream() for _ in range(3)]
    n = 0
    for m in model.modules():
        if all(hasattr(m, f"branch{i}") for i in range(1, 5)):
            m._kmux_side_streams = side
            m.forward = types.MethodType(_inception_forward_streams, m)
            n += 1
    if n == 0:
        raise RuntimeError("no Inception modules found to parallelize")
    return model


def run(variant, reps, iters, warmup, batch):
    model, x = build(batch)
    with torch.inference_mode():
        ref = model(x).clone()          # the plain forward (before patching)
        if variant == "expert":
            make_expert(model)

        def roi():
            for _ in range(iters):
                model(x)

        timing = torchbench.time_roi(roi, reps, warmup)
        torchbench.report(APP, variant, timing, reps, f"iters={iters} batch={batch}")
        out = model(x)
        torch.cuda.synchronize()
        torchbench.check(APP, variant, out, ref)


def add_args(p):
    p.add_argument("--googlenet-batch", type=int, default=4)
    p.add_argument("--googlenet-iters", type=int, default=10)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("variant", nargs="?", default="plain", choices=["plain", "expert"])
    p.add_argument("--reps", type=int, default=7)
    p.add_argument("--warmup", type=int, default=3)
    add_args(p)
    a = p.parse_args()
    torchbench.setup_determinism()
    run(a.variant, a.reps, a.googlenet_iters, a.warmup, a.googlenet_batch)


if __name__ == "__main__":
    main()
