"""torch_graph_mem.py - a CUDA graph whose allocations are graph memory
nodes, from PyTorch (bench/gpu/graphmem-check.sh).

Run with PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync: PyTorch then
allocates inside a capture with cudaMallocAsync, which makes memory nodes
of the graph (and instantiates it with auto-free).  The graph allocates a
temporary of MIB MiB, fills and sums it, frees it, and keeps the small
result.  Prints "capture ok", then "replay N ok SUM" for each of two
replays, or the first line of PyTorch's error.

    python3 torch_graph_mem.py MIB
"""
import sys

import torch


def main():
    mib = int(sys.argv[1])
    n = mib * (1 << 20) // 4
    x = torch.ones(1024, device="cuda")
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        warm = torch.empty(1024, device="cuda").fill_(1.0).sum() + x.sum()
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    del warm
    g = torch.cuda.CUDAGraph()
    try:
        with torch.cuda.graph(g):
            tmp = torch.empty(n, device="cuda")
            tmp.fill_(1.0)
            out = tmp.sum() + x.sum()
            del tmp
        torch.cuda.synchronize()
        print("capture ok", flush=True)
    except RuntimeError as e:
        print("capture failed:", str(e).splitlines()[0], flush=True)
        return 0
    for i in range(2):
        try:
            g.replay()
            torch.cuda.synchronize()
            print("replay %d ok %.0f" % (i, float(out)), flush=True)
        except RuntimeError as e:
            print("replay %d failed: %s" % (i, str(e).splitlines()[0]),
                  flush=True)
            return 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
