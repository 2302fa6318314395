#!/usr/bin/env python3
"""triton_add.py - compat program (e), Triton half.

A Triton kernel (JIT-compiled, launched by Triton's own launcher through
cuLaunchKernelEx) on PyTorch tensors.  Prints host-side float64 checksums
(deterministic) and checks against PyTorch; exits nonzero on a mismatch or
any CUDA error.
"""
import sys

import torch
import triton
import triton.language as tl


@triton.jit
def kmux_triton_add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(axis=0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x * 2.0 + y, mask=mask)


def main():
    if not torch.cuda.is_available():
        print("triton_add: no CUDA device", file=sys.stderr)
        return 1
    n = (1 << 20) + 17
    idx = torch.arange(n, device="cuda", dtype=torch.float32)
    x = torch.remainder(idx, 1000) * 0.001
    y = torch.remainder(idx, 7) - 3
    out = torch.empty_like(x)
    grid = (triton.cdiv(n, 1024),)
    for _ in range(3):
        kmux_triton_add[grid](x, y, out, n, BLOCK=1024)
    torch.cuda.synchronize()
    ref = x * 2.0 + y
    print(f"triton_add n={n}")
    print(f"kmux_triton_add checksum={out.cpu().double().sum().item():.9e}")
    if not torch.allclose(out, ref, rtol=1e-6, atol=1e-6):
        print("triton_add: MISMATCH")
        return 1
    print("triton_add: reference check OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
