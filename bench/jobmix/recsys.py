"""recsys.py - a recommendation-model job for bench/jobmix.sh (DLRM-like):
large embedding tables, small MLPs, random ids and features.  The tables
are what makes it memory-heavy, and their size is known to its user:
TABLES x ROWS x DIM x 4 bytes.

    python3 recsys.py --name N --mode train --tables 10 --rows 4194304 \
        --dim 256 --batch 4096 --pool 32 --iters 300

Training: sparse gradients for the tables (SGD), dense ones for the MLPs.
Inference: forward under inference_mode.  Output: see common.py.
"""
import common


def main():
    p = common.parser(__doc__)
    p.add_argument("--mode", choices=("train", "infer"), required=True)
    p.add_argument("--tables", type=int, required=True)
    p.add_argument("--rows", type=int, required=True)
    p.add_argument("--dim", type=int, required=True)
    p.add_argument("--batch", type=int, required=True)
    p.add_argument("--pool", type=int, default=32, help="ids per bag")
    a = p.parse_args()

    import torch
    import torch.nn as nn

    dev = torch.device("cuda")
    train = a.mode == "train"

    class DLRM(nn.Module):
        def __init__(self):
            super().__init__()
            self.tables = nn.ModuleList(
                nn.EmbeddingBag(a.rows, a.dim, mode="sum", sparse=train,
                                device=dev) for _ in range(a.tables))
            self.bottom = nn.Sequential(nn.Linear(13, 512), nn.ReLU(),
                                        nn.Linear(512, a.dim), nn.ReLU())
            self.top = nn.Sequential(
                nn.Linear((a.tables + 1) * a.dim, 1024), nn.ReLU(),
                nn.Linear(1024, 512), nn.ReLU(), nn.Linear(512, 1))

        def forward(self, dense, ids, offsets):
            feats = [self.bottom(dense)]
            feats += [t(ids[k], offsets) for k, t in enumerate(self.tables)]
            return self.top(torch.cat(feats, dim=1)).squeeze(1)

    def build():
        m = DLRM().to(dev)
        opt = None
        if train:
            opt = (torch.optim.SGD(list(m.tables.parameters()), lr=0.01),
                   torch.optim.Adam(list(m.bottom.parameters()) +
                                    list(m.top.parameters()), lr=1e-3))
        else:
            m.eval()
        offsets = torch.arange(0, a.batch * a.pool, a.pool, device=dev)
        return m, opt, offsets

    def step(state, i):
        m, opt, offsets = state
        ids = torch.randint(0, a.rows, (a.tables, a.batch * a.pool),
                            device=dev)
        dense = torch.randn(a.batch, 13, device=dev)
        if opt is None:
            with torch.inference_mode():
                m(dense, ids, offsets)
            return
        y = torch.randint(0, 2, (a.batch,), device=dev).float()
        loss = nn.functional.binary_cross_entropy_with_logits(
            m(dense, ids, offsets), y)
        for o in opt:
            o.zero_grad(set_to_none=True)
        loss.backward()
        for o in opt:
            o.step()

    common.run(a.name, a.iters, build, step)


if __name__ == "__main__":
    main()
