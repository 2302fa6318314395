#!/usr/bin/env python3
"""cupy_raw.py - compat program (e), CuPy half.

A cupy.RawKernel (compiled by NVRTC, launched by CuPy through the driver)
plus a few of CuPy's own elementwise kernels.  Prints checksums computed on
the host in float64 (deterministic) and checks them against NumPy; exits
nonzero on a mismatch or any CUDA error.
"""
import sys

import cupy as cp
import numpy as np

SRC = r'''
extern "C" __global__ void cupy_saxpy(float a, const float *x, float *y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        y[i] = a * x[i] + y[i];
}
'''


def main():
    n = 1 << 20
    kern = cp.RawKernel(SRC, "cupy_saxpy")
    hx = (np.arange(n, dtype=np.float32) % 1000) * np.float32(0.001)
    hy = (np.arange(n, dtype=np.float32) % 7) - np.float32(3)
    x = cp.asarray(hx)
    y = cp.asarray(hy)
    threads = 256
    for _ in range(3):
        kern(((n + threads - 1) // threads,), (threads,),
             (np.float32(1.5), x, y, np.int32(n)))
    z = cp.sqrt(cp.abs(y)) * 2 + 1          # CuPy's own kernels
    cp.cuda.runtime.deviceSynchronize()
    gy = cp.asnumpy(y)
    gz = cp.asnumpy(z)
    ry = hy.astype(np.float64)
    for _ in range(3):
        ry = 1.5 * hx.astype(np.float64) + ry
    print(f"cupy_raw n={n} cupy={cp.__version__.split('.')[0]}")
    print(f"cupy_saxpy checksum={gy.astype(np.float64).sum():.9e}")
    print(f"cupy_elementwise checksum={gz.astype(np.float64).sum():.9e}")
    if not np.allclose(gy, ry, rtol=1e-5, atol=1e-4):
        print("cupy_raw: MISMATCH")
        return 1
    print("cupy_raw: reference check OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
