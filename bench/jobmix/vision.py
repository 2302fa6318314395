"""vision.py - a torchvision job for bench/jobmix.sh: training or inference
of a model built with weights=None (random weights, nothing downloaded), on
synthetic images.

    python3 vision.py --name N --model resnet50 --mode train --batch 128 \
        --iters 80 [--gpu-cache GIB] [--res 224]

--gpu-cache GIB keeps a synthetic uint8 image set of that size on the GPU
(as GPU-side data loaders and DALI caches do) and draws every batch from
it: a memory-heavy job whose size its user knows.  Without it the batches
come from a small pool.  bf16 autocast, channels_last; SGD with momentum
for training.  Output: see common.py.
"""
import common


def main():
    p = common.parser(__doc__)
    p.add_argument("--model", required=True)
    p.add_argument("--mode", choices=("train", "infer"), required=True)
    p.add_argument("--batch", type=int, required=True)
    p.add_argument("--res", type=int, default=224)
    p.add_argument("--gpu-cache", type=float, default=0.0, metavar="GIB")
    a = p.parse_args()

    import torch
    import torch.nn.functional as F
    import torchvision

    dev = torch.device("cuda")

    def build():
        m = getattr(torchvision.models, a.model)(weights=None)
        m = m.to(dev).to(memory_format=torch.channels_last)
        img = 3 * a.res * a.res
        n = int(a.gpu_cache * common.GiB) // img if a.gpu_cache > 0 else 0
        n = max(n, 4 * a.batch)
        data = torch.randint(0, 256, (n, 3, a.res, a.res), dtype=torch.uint8,
                             device=dev)
        labels = torch.randint(0, 1000, (n,), device=dev)
        if a.mode == "train":
            m.train()
            opt = torch.optim.SGD(m.parameters(), lr=0.01, momentum=0.9)
        else:
            m.eval()
            opt = None
        return m, opt, data, labels

    def step(state, i):
        m, opt, data, labels = state
        idx = torch.randint(0, data.shape[0], (a.batch,), device=dev)
        x = data[idx].float().div_(255.0).sub_(0.45).div_(0.225)
        x = x.contiguous(memory_format=torch.channels_last)
        if opt is None:
            with torch.inference_mode(), torch.autocast("cuda", torch.bfloat16):
                m(x)
            return
        with torch.autocast("cuda", torch.bfloat16):
            loss = F.cross_entropy(m(x), labels[idx])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    common.run(a.name, a.iters, build, step)


if __name__ == "__main__":
    main()
