#!/usr/bin/env python3
"""triton_multi.py - Triton kernels under the stream scheduler.

What it is for: Triton launches through its own launcher
(cuLaunchKernelEx), with parameter lists that end in arguments the user
never wrote (scratch pointers), on PyTorch's current stream, which is the
legacy default stream unless the program says otherwise.  `kmux run
--streams` reorders that work by what the parameters point to.  This
program gives it independent branches of Triton kernels (a tiled matmul, a
row softmax, a fused elementwise update in place) with read-backs between
rounds, and a final reduction that joins every branch.

Deterministic (no atomics; fixed inputs): two plain runs print the same
bytes.  Every printed number is checked against PyTorch in float64.  Exits
nonzero on a mismatch or a CUDA error.
"""
import sys

import torch
import triton
import triton.language as tl

BR = 6
M = 256
ROUNDS = 3


@triton.jit
def kmux_tt_matmul(a_ptr, b_ptr, c_ptr, n, BM: tl.constexpr, BN: tl.constexpr,
                   BK: tl.constexpr):
    pm = tl.program_id(0)
    pn = tl.program_id(1)
    rm = pm * BM + tl.arange(0, BM)
    rn = pn * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, n, BK):
        a = tl.load(a_ptr + rm[:, None] * n + (k + rk)[None, :])
        b = tl.load(b_ptr + (k + rk)[:, None] * n + rn[None, :])
        acc += tl.dot(a, b, input_precision="ieee")
    tl.store(c_ptr + rm[:, None] * n + rn[None, :], acc)


@triton.jit
def kmux_tt_softmax(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * n + offs, mask=offs < n, other=-float("inf"))
    x = x - tl.max(x, axis=0)
    e = tl.exp(x)
    tl.store(y_ptr + row * n + offs, e / tl.sum(e, axis=0), mask=offs < n)


@triton.jit
def kmux_tt_update(a_ptr, s_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    a = tl.load(a_ptr + offs, mask=mask)
    s = tl.load(s_ptr + offs, mask=mask)
    tl.store(a_ptr + offs, 0.5 * a + 4.0 * s, mask=mask)


def main():
    if not torch.cuda.is_available():
        print("triton_multi: no CUDA device", file=sys.stderr)
        return 1
    gen = torch.Generator().manual_seed(4321)
    ha = [torch.randn(M, M, generator=gen) * 0.1 for _ in range(BR)]
    hb = [torch.randn(M, M, generator=gen) * 0.1 for _ in range(BR)]
    a = [x.cuda() for x in ha]
    b = [x.cuda() for x in hb]
    ra = [x.double() for x in ha]
    rb = [x.double() for x in hb]
    bad = []
    for r in range(ROUNDS):
        outs = []
        for i in range(BR):
            c = torch.empty(M, M, device="cuda")
            kmux_tt_matmul[(M // 64, M // 64)](a[i], b[i], c, M, BM=64, BN=64, BK=32)
            s = torch.empty_like(c)
            kmux_tt_softmax[(M,)](c, s, M, BLOCK=M)
            kmux_tt_update[(triton.cdiv(M * M, 1024),)](a[i], s, M * M, BLOCK=1024)
            outs.append(s)
        got = [float(x.double().sum()) for x in a]       # read-backs
        for i in range(BR):
            s_ref = torch.softmax(ra[i] @ rb[i], dim=1)
            ra[i] = 0.5 * ra[i] + 4.0 * s_ref
            if abs(got[i] - float(ra[i].sum())) > 1e-3 * max(1.0, abs(float(ra[i].sum()))):
                print(f"round {r} branch {i}: MISMATCH {got[i]} vs {float(ra[i].sum())}")
                bad.append((r, i))
        print(f"round {r} sums " + " ".join(f"{x:.6e}" for x in got))
    total = torch.stack([x.sum(dtype=torch.float64) for x in a]).sum()
    print(f"total {float(total):.6e}")
    torch.cuda.synchronize()
    print(f"triton_multi branches={BR} m={M} triton={triton.__version__}")
    if bad:
        print(f"triton_multi: {len(bad)} MISMATCHES")
        return 1
    print("triton_multi: reference check OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
