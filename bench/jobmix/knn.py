"""knn.py - a retrieval job for bench/jobmix.sh: exact top-k similarity
search of query batches against a corpus of embeddings kept on the GPU.
The corpus is allocated first and held for the whole run (as a vector
search service or an evaluation over a stored embedding set does), so the
job is memory-heavy from its first second; its size is CORPUS_GIB, which
its user knows (or does not bother to declare).

    python3 knn.py --name N --corpus-gib 40 --dim 1024 --queries 1024 \
        --k 10 --iters 30

Each iteration scores a batch of random queries against every corpus row
(bf16 GEMMs over chunks of the corpus, so the whole buffer is read every
time), keeps the running top-k per query, and checks the result on the
host.  Output: see common.py.
"""
import common

CHUNK_ROWS = 1 << 18	# scores of one chunk: queries x 256K x 2 bytes


def main():
    p = common.parser(__doc__)
    p.add_argument("--corpus-gib", type=float, required=True)
    p.add_argument("--dim", type=int, default=1024)
    p.add_argument("--queries", type=int, default=1024)
    p.add_argument("--k", type=int, default=10)
    a = p.parse_args()

    import torch

    dev = torch.device("cuda")
    rows = int(a.corpus_gib * common.GiB) // (2 * a.dim)

    def build():
        # One allocation, filled in place (no second copy at the peak).
        corpus = torch.empty(rows, a.dim, dtype=torch.bfloat16, device=dev)
        for s in range(0, rows, CHUNK_ROWS):
            c = corpus[s:s + CHUNK_ROWS]
            c.normal_()
            c.div_(c.float().norm(dim=1, keepdim=True).to(c.dtype))
        return corpus

    def step(corpus, i):
        q = torch.randn(a.queries, a.dim, device=dev, dtype=torch.bfloat16)
        best_v = torch.full((a.queries, a.k), -float("inf"), device=dev)
        best_i = torch.zeros((a.queries, a.k), dtype=torch.long, device=dev)
        for s in range(0, rows, CHUNK_ROWS):
            v, ix = (q @ corpus[s:s + CHUNK_ROWS].T).topk(a.k, dim=1)
            v = torch.cat([best_v, v.float()], dim=1)
            ix = torch.cat([best_i, ix + s], dim=1)
            best_v, o = v.topk(a.k, dim=1)
            best_i = ix.gather(1, o)
        if i == 0:
            # The best match of the first query, scored on its own.
            j = int(best_i[0, 0])
            want = float((q[0].float() @ corpus[j].float()))
            got = float(best_v[0, 0])
            if abs(want - got) > 0.05 * max(1.0, abs(want)):
                raise RuntimeError(f"knn: top-1 score {got} != {want}")

    common.run(a.name, a.iters, build, step)


if __name__ == "__main__":
    main()
