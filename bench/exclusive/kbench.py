#!/usr/bin/env python3
"""One KernelBench-style benchmark command (bench/exclusive.sh, issue 6).

    kbench.py FAMILY CLASS JITTER [--region] [--dry]

Like a kernel-optimization harness's command: import torch, build inputs,
compile or load the candidate (a torch op, a Triton kernel or a CuPy
RawKernel), check it against a reference, then time it -- inside an
exclusive region with --region (`with kmux.exclusive():`).  Prints one
JSON line: name, family, class, medians, samples, the setup and region
times, the SM clock and throttle flags (kmux.bench.time_cuda).

FAMILY: mm (torch fp16 matmul), softmax, gelu (torch), triton_add (Triton),
cupy_saxpy (CuPy RawKernel).  CLASS: 0.1, 1 or 10 (ms, nominal: the sizes
aim there on an H200; the report classifies by the time measured alone).
JITTER: a size factor (0.8 .. 1.2), so that the batch holds distinct
kernels.  --dry: no GPU, no torch: sleeps stand in for the phases (to test
the harness on simcuda); the region is still taken.
"""
import json
import os
import sys
import time

T0 = time.time()


def startup_s():
    """Seconds from the command's start to T0: in a persistent worker of
    `kmux bench serve` from when it took the job ($KMUX_WORKER_JOB_T0),
    else from the process's start (/proc, 10 ms ticks)."""
    t = os.environ.get("KMUX_WORKER_JOB_T0")
    if t:
        return T0 - float(t)
    try:
        start = int(open("/proc/self/stat").read().rsplit(")", 1)[1]
                    .split()[19]) / os.sysconf("SC_CLK_TCK")
        # The boot-time clock at T0, less the start.
        return time.clock_gettime(time.CLOCK_BOOTTIME) + (T0 - time.time()) \
            - start
    except (OSError, ValueError, IndexError):
        return None


T_STARTUP = startup_s()

FAM = sys.argv[1]
CLS = sys.argv[2]
JIT = float(sys.argv[3])
REGION = "--region" in sys.argv
DRY = "--dry" in sys.argv
NAME = "%s-%s-%.2f" % (FAM, CLS, JIT)

SAMPLES = {"0.1": (10, 100), "1": (5, 50), "10": (3, 20)}[CLS]
# Nominal sizes on an H200: bytes moved ~4 TB/s, fp16 matmul ~500 TFLOP/s.
ELEMS = {"0.1": 50_000_000, "1": 500_000_000, "10": 500_000_000}[CLS]
INNER = {"0.1": 1, "1": 1, "10": 10}[CLS]     # launches per sample
# The 10 ms class is 10 launches of the 1 ms size, for every family.  Until
# run 4 its matmul was sized 10 ms per launch (n = 13568), so its samples
# took 50-125 ms and ran at the power cap throughout (bench/results/
# exclusive.md): not the class's length.
MM_N = {"0.1": 2944, "1": 6400, "10": 6400}[CLS]
ROWS = {"0.1": 6_000, "1": 60_000, "10": 60_000}[CLS]


def emit(**kw):
    kw.update(name=NAME, family=FAM, cls=CLS, region=REGION,
              t_total_s=time.time() - T0, t_startup_s=T_STARTUP,
              worker="KMUX_WORKER_JOB_T0" in os.environ)
    print(json.dumps(kw), flush=True)


def region():
    import contextlib
    if not REGION:
        return contextlib.nullcontext(False)
    import kmux
    return kmux.exclusive()


def dry():
    import random
    random.seed(NAME)
    time.sleep(0.05 + 0.05 * random.random())       # import, build, check
    base = float(CLS) * JIT / 1000.0
    warm, n = SAMPLES
    t_enter = time.time()
    with region() as ex:
        t_got = time.time()
        ms = []
        for _ in range(warm + n):
            t = time.perf_counter()
            while time.perf_counter() - t < base:
                pass
            ms.append((time.perf_counter() - t) * 1000.0)
        ms = ms[warm:]
    t_left = time.time()
    ms.sort()
    emit(ok=True, exclusive=bool(ex), samples_ms=ms, median_ms=ms[len(ms) // 2],
         n_throttled=0, t_setup_s=t_enter - T0, t_wait_s=t_got - t_enter,
         t_region_s=t_left - t_got)


def build():
    """The candidate and its reference check; returns fn to time."""
    import torch
    dev = torch.device("cuda")
    torch.manual_seed(0)
    if FAM == "mm":
        n = int(MM_N * JIT) // 64 * 64
        a = torch.randn(n, n, device=dev, dtype=torch.float16)
        b = torch.randn(n, n, device=dev, dtype=torch.float16)
        out = torch.empty(n, n, device=dev, dtype=torch.float16)
        fn = lambda: torch.matmul(a, b, out=out)  # noqa: E731
        fn()
        ref = a[:64].float() @ b.float()
        ok = torch.allclose(out[:64].float(), ref, rtol=2e-2, atol=1.0)
    elif FAM == "softmax":
        x = torch.randn(int(ROWS * JIT), 4096, device=dev)
        out = torch.empty_like(x)
        fn = lambda: torch.ops.aten._softmax.out(x, 1, False, out=out)  # noqa: E731,E501
        fn()
        ok = torch.allclose(out.sum(1), torch.ones(out.shape[0], device=dev),
                            atol=1e-3)
    elif FAM == "gelu":
        x = torch.randn(int(ELEMS * JIT), device=dev)
        y = torch.empty_like(x)
        fn = lambda: torch.ops.aten.gelu.out(x, out=y)  # noqa: E731
        fn()
        x2 = x[:1 << 20]
        ok = torch.allclose(y[:1 << 20],
                            0.5 * x2 * (1 + torch.erf(x2 / 2 ** 0.5)),
                            atol=1e-5)
    elif FAM == "triton_add":
        import triton
        import triton.language as tl

        @triton.jit
        def add_kernel(x_ptr, y_ptr, o_ptr, n, BLOCK: tl.constexpr):
            pid = tl.program_id(0)
            offs = pid * BLOCK + tl.arange(0, BLOCK)
            m = offs < n
            tl.store(o_ptr + offs, tl.load(x_ptr + offs, mask=m) +
                     tl.load(y_ptr + offs, mask=m), mask=m)

        n = int(ELEMS * JIT * 2 // 3)
        x = torch.randn(n, device=dev)
        y = torch.randn(n, device=dev)
        out = torch.empty_like(x)
        grid = (triton.cdiv(n, 1024),)
        fn = lambda: add_kernel[grid](x, y, out, n, BLOCK=1024)  # noqa: E731
        fn()
        ok = torch.allclose(out, x + y)
    elif FAM == "cupy_saxpy":
        import cupy as cp
        src = r'''
        extern "C" __global__ void saxpy(float a, const float *x,
                                         const float *y, float *o, long n) {
            long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
            if (i < n) o[i] = a * x[i] + y[i];
        }'''
        k = cp.RawKernel(src, "saxpy")
        n = int(ELEMS * JIT * 2 // 3)
        x = torch.randn(n, device=dev)
        y = torch.randn(n, device=dev)
        out = torch.empty_like(x)
        cx, cy, co = (cp.from_dlpack(t) for t in (x, y, out))
        blocks = (n + 255) // 256
        stream = cp.cuda.ExternalStream(torch.cuda.current_stream().cuda_stream)

        def fn():
            with stream:
                k((blocks,), (256,), (cp.float32(2.0), cx, cy, co, cp.int64(n)))
        fn()
        ok = torch.allclose(out, 2.0 * x + y)
    else:
        raise SystemExit("unknown family " + FAM)
    if INNER > 1:
        one = fn
        fn = lambda: [one() for _ in range(INNER)]  # noqa: E731
    return fn, bool(ok)


def temp_summary(temps):
    """[gpu mean, gpu max, memory mean, memory max] over the samples (C)."""
    out = []
    for i in (0, 1):
        xs = [t[i] for t in temps if t[i] is not None]
        out += [round(sum(xs) / len(xs), 1), max(xs)] if xs else [None, None]
    return out


def state_summary(r):
    """Power [mean, max] (W), the first memory clock (MHz) and the OR of
    every sample's throttle reasons: what the GPU's own state was."""
    ws = [w for w in r.get("power_w", []) if w is not None]
    rs = [x for x in r.get("throttle_reasons", []) if x is not None]
    mems = [m for m in r.get("mem_mhz", []) if m is not None]
    out = 0
    for x in rs:
        out |= x
    return {"power_w": [round(sum(ws) / len(ws), 1), max(ws)] if ws
            else [None, None],
            "mem_mhz": mems[0] if mems else None,
            "throttle_bits": out if rs else None}


def gpu():
    import torch
    from kmux.bench import time_cuda
    torch.cuda.init()
    fn, ok = build()
    torch.cuda.synchronize()
    warm, n = SAMPLES
    t_enter = time.time()
    with region() as ex:
        t_got = time.time()
        r = time_cuda(fn, warmup=warm, samples=n, flush_l2=True)
    t_left = time.time()
    emit(ok=ok, exclusive=bool(ex), samples_ms=r["samples_ms"],
         median_ms=r["median_ms"], n_throttled=r["n_throttled"],
         throttled=r["throttled"], sm_mhz=r["sm_mhz"][:3],
         temp_c=temp_summary(r.get("temp_c", [])), **state_summary(r),
         t_setup_s=t_enter - T0,
         t_wait_s=t_got - t_enter, t_region_s=t_left - t_got)


if __name__ == "__main__":
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(
        __file__)), "..", "..", "python"))
    dry() if DRY else gpu()
