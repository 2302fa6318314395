#!/usr/bin/env python3
"""cupy_libs.py - CuPy's libraries under the stream scheduler.

What it is for: `kmux run --streams` reorders a program's default-stream
work by what each kernel's parameters point to.  NVIDIA's libraries launch
kernels kmux never saw compiled (SASS only) with their own parameter
layouts, workspaces and, in CuPy's case, memory sub-allocated from one
pool.  This program gives the scheduler plenty to spread and to get wrong:
independent branches of cuBLAS GEMMs (plain and strided-batched), cuFFT
transforms, CUB sorts and reductions, cuRAND, CuPy's own elementwise and
reduction kernels, in-place updates that make write-after-read and
write-after-write dependencies, arrays freed and their pool memory reused
by the next branch, and read-backs in the middle.

Everything is deterministic (fixed inputs, no atomics-based reductions), so
two plain runs print the same bytes; every printed number is also checked
against NumPy in float64.  Exits nonzero on a mismatch or a CUDA error.
"""
import sys

import cupy as cp
import numpy as np

BR = 6          # independent branches
N = 192         # GEMM size
SIG = 1 << 15   # FFT and sort length
ROUNDS = 3


def host_inputs(rng):
    a = [rng.standard_normal((N, N)).astype(np.float32) for _ in range(BR)]
    b = [rng.standard_normal((N, N)).astype(np.float32) for _ in range(BR)]
    s = [rng.standard_normal(SIG).astype(np.float32) for _ in range(BR)]
    v = [rng.permutation(SIG).astype(np.int32) for _ in range(BR)]
    return a, b, s, v


def check(name, got, want, rtol, atol, bad):
    if not np.allclose(got, want, rtol=rtol, atol=atol):
        err = np.max(np.abs(np.asarray(got, np.float64) - want))
        print(f"{name}: MISMATCH (max abs error {err:.3e})")
        bad.append(name)


def main():
    rng = np.random.default_rng(1234)
    ha, hb, hs, hv = host_inputs(rng)
    da = [cp.asarray(x) for x in ha]
    db = [cp.asarray(x) for x in hb]
    ds = [cp.asarray(x) for x in hs]
    dv = [cp.asarray(x) for x in hv]
    bad = []
    ra = [x.astype(np.float64) for x in ha]
    rb = [x.astype(np.float64) for x in hb]

    for r in range(ROUNDS):
        # Independent GEMM chains: c = a @ b; a <- 0.5 * tanh(c) (in place,
        # so the next round's GEMM must wait for this update, and this
        # update for the GEMM that read a).
        sums = []
        for i in range(BR):
            c = da[i] @ db[i]
            cp.tanh(c, out=c)
            c *= 0.5
            da[i][...] = c
            sums.append(cp.sum(c, dtype=cp.float64))
        host = [float(x) for x in sums]      # read-backs mid-program
        for i in range(BR):
            ra[i] = 0.5 * np.tanh(ra[i] @ rb[i])
            check(f"gemm r{r} b{i}", host[i], ra[i].sum(), 1e-3, 1e-2, bad)
        print(f"round {r} gemm sums " + " ".join(f"{x:.6e}" for x in host))

    # Strided-batched GEMM over all branches at once (one cuBLAS call).
    stack_a = cp.stack(da)
    stack_b = cp.stack(db)
    bat = cp.matmul(stack_a, stack_b)
    want = np.stack([ra[i] @ rb[i] for i in range(BR)])
    check("batched gemm", cp.asnumpy(bat), want, 1e-3, 1e-2, bad)
    print(f"batched gemm sum {float(cp.sum(bat, dtype=cp.float64)):.6e}")
    del stack_a, stack_b, bat   # pool memory reused below

    # cuFFT: forward and back per branch, a spectrum energy each.
    energy = []
    for i in range(BR):
        f = cp.fft.rfft(ds[i])
        e = cp.sum(cp.abs(f) ** 2, dtype=cp.float64)
        back = cp.fft.irfft(f * 0.5, n=SIG)
        ds[i] += back                      # s <- 1.5 s
        energy.append(e)
    energy = [float(x) for x in energy]
    for i in range(BR):
        want_e = np.sum(np.abs(np.fft.rfft(hs[i].astype(np.float64))) ** 2)
        check(f"fft energy b{i}", energy[i], want_e, 1e-4, 1e-3, bad)
        check(f"fft back b{i}", cp.asnumpy(ds[i]), 1.5 * hs[i].astype(np.float64),
              1e-4, 1e-4, bad)
    print("fft energy " + " ".join(f"{x:.6e}" for x in energy))

    # CUB: sort each permutation, argsort a signal, prefix sums.
    keys = []
    for i in range(BR):
        sv = cp.sort(dv[i])
        order = cp.argsort(ds[i])
        cs = cp.cumsum(sv.astype(cp.int64))
        keys.append((sv, order, cs))
    for i, (sv, order, cs) in enumerate(keys):
        hsv = cp.asnumpy(sv)
        if not np.array_equal(hsv, np.arange(SIG, dtype=np.int32)):
            print(f"sort b{i}: MISMATCH")
            bad.append(f"sort b{i}")
        hs15 = cp.asnumpy(ds[i])
        if not np.all(np.diff(hs15[cp.asnumpy(order)]) >= 0):
            print(f"argsort b{i}: MISMATCH")
            bad.append(f"argsort b{i}")
        if int(cs[-1]) != SIG * (SIG - 1) // 2:
            print(f"cumsum b{i}: MISMATCH")
            bad.append(f"cumsum b{i}")
    print(f"sorts ok {BR - sum(1 for x in bad if x.startswith(('sort', 'arg', 'cum')))}/{BR}")

    # cuRAND with a seed: one generator, consumed in order.
    gen = cp.random.RandomState(seed=99)
    rnd = [gen.standard_normal(1 << 16, dtype=cp.float32) for _ in range(BR)]
    moments = [float(cp.mean(x * x, dtype=cp.float64)) for x in rnd]
    print("random second moments " + " ".join(f"{x:.6e}" for x in moments))
    for i, m in enumerate(moments):
        if not 0.9 < m < 1.1:
            print(f"random b{i}: MISMATCH ({m})")
            bad.append(f"random b{i}")

    cp.cuda.runtime.deviceSynchronize()
    print(f"cupy_libs branches={BR} n={N} sig={SIG} cupy={cp.__version__.split('.')[0]}")
    if bad:
        print(f"cupy_libs: {len(bad)} MISMATCHES")
        return 1
    print("cupy_libs: reference check OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
