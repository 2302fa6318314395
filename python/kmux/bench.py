"""kmux.bench: timing aids for kernels timed inside exclusive regions.

    from kmux.bench import time_cuda
    r = time_cuda(fn, warmup=5, samples=50, flush_l2=True)
    r["samples_ms"], r["median_ms"], r["throttled"], r["sm_mhz"]

Each sample is one call of fn between two CUDA events.  Before each
sample: optionally the L2 cache is flushed (a buffer larger than the L2 is
written), so every sample starts cold, as nvbench does.  The SM clock is
read through NVML before and after each sample, with the clock-throttle
reasons; a sample during which the GPU was throttled (power, thermal, HW
slowdown) is flagged and left out of the median; as nvbench does, the timer
then pauses (recover_ms) so the clocks can come back, and takes another
sample in its place; after RETAKES_IN_A_ROW throttled samples in a row the
kernel is throttling the GPU by itself and its samples are kept, flagged.  The GPU and memory
temperatures, the board's power draw, the memory clock and the throttle
reasons (NVML's bit mask) are recorded with each sample: a memory-bound kernel slows a
little as the HBM heats (the DRAM refreshes more often), which no clock
reading shows, so a report can tell drift of the GPU's own state apart
from interference.
Before the start event the stream is held by a short spin kernel
(hide_launch_us, torch.cuda._sleep), as nvbench's blocking kernel does: the
host enqueues the start event, fn's launches and the stop event while the
GPU spins, so a delay of the timing thread (another process on its CPU,
Python's own dispatch) shorter than the spin is not counted in the sample.
NVML is used through ctypes (libnvidia-ml.so.1); without it the clock
fields are None.  Needs torch for the events (imported lazily).
"""
import ctypes
import statistics

__all__ = ["Nvml", "time_cuda"]

# nvmlClocksThrottleReasons: idle (0x1) and application clocks (0x2) are
# not throttling; everything else slows the SMs.
_THROTTLE_MASK = ~(0x1 | 0x2) & 0xFFFFFFFFFFFFFFFF
_NVML_CLOCK_SM = 1
_NVML_CLOCK_MEM = 2
RETAKES_IN_A_ROW = 3
_NVML_TEMPERATURE_GPU = 0
_NVML_FI_DEV_MEMORY_TEMP = 82


class _FieldValue(ctypes.Structure):
    # nvmlFieldValue_t; the value union is 8 bytes.
    _fields_ = [("fieldId", ctypes.c_uint), ("scopeId", ctypes.c_uint),
                ("timestamp", ctypes.c_longlong),
                ("latencyUsec", ctypes.c_longlong),
                ("valueType", ctypes.c_int), ("nvmlReturn", ctypes.c_int),
                ("value", ctypes.c_ulonglong)]


class Nvml:
    """The few NVML calls used here; every method returns None on error."""

    def __init__(self, index=0):
        self.dev = None
        try:
            self.lib = ctypes.CDLL("libnvidia-ml.so.1")
            if self.lib.nvmlInit_v2() != 0:
                return
            dev = ctypes.c_void_p()
            if self.lib.nvmlDeviceGetHandleByIndex_v2(
                    ctypes.c_uint(index), ctypes.byref(dev)) == 0:
                self.dev = dev
        except OSError:
            pass

    def _clock(self, which):
        if self.dev is None:
            return None
        v = ctypes.c_uint()
        r = self.lib.nvmlDeviceGetClockInfo(self.dev, which, ctypes.byref(v))
        return v.value if r == 0 else None

    def sm_mhz(self):
        return self._clock(_NVML_CLOCK_SM)

    def mem_mhz(self):
        return self._clock(_NVML_CLOCK_MEM)

    def power_w(self):
        """Board power draw (W), NVML's own average; None if unknown."""
        if self.dev is None:
            return None
        v = ctypes.c_uint()
        r = self.lib.nvmlDeviceGetPowerUsage(self.dev, ctypes.byref(v))
        return v.value / 1000.0 if r == 0 else None

    def max_sm_mhz(self):
        if self.dev is None:
            return None
        v = ctypes.c_uint()
        r = self.lib.nvmlDeviceGetMaxClockInfo(self.dev, _NVML_CLOCK_SM,
                                               ctypes.byref(v))
        return v.value if r == 0 else None

    def gpu_temp(self):
        if self.dev is None:
            return None
        v = ctypes.c_uint()
        r = self.lib.nvmlDeviceGetTemperature(
            self.dev, ctypes.c_int(_NVML_TEMPERATURE_GPU), ctypes.byref(v))
        return v.value if r == 0 else None

    def mem_temp(self):
        """HBM temperature (C); None where the GPU does not report it."""
        if self.dev is None:
            return None
        f = _FieldValue()
        f.fieldId = _NVML_FI_DEV_MEMORY_TEMP
        try:
            r = self.lib.nvmlDeviceGetFieldValues(self.dev, ctypes.c_int(1),
                                                  ctypes.byref(f))
        except AttributeError:
            return None
        if r != 0 or f.nvmlReturn != 0:
            return None
        # valueType 1 is unsigned int, the low half of the union; a
        # 64-bit one fills it whole.
        return f.value & 0xFFFFFFFF if f.valueType == 1 else f.value

    def throttle(self):
        if self.dev is None:
            return None
        v = ctypes.c_ulonglong()
        r = self.lib.nvmlDeviceGetCurrentClocksThrottleReasons(
            self.dev, ctypes.byref(v))
        return (v.value & _THROTTLE_MASK) if r == 0 else None


_nvml = None


def _get_nvml(index):
    global _nvml
    if _nvml is None:
        _nvml = Nvml(index)
    return _nvml


def time_cuda(fn, warmup=3, samples=20, flush_l2=True, l2_bytes=256 << 20,
              nvml_index=0, device=None, hide_launch_us=500, recover_ms=50):
    """Time fn() on the current CUDA stream; a dict of the results.

    hide_launch_us: length of the spin before each sample (0: none).
    recover_ms: pause after a throttled sample before the next (0: none,
    and no sample is taken again)."""
    import time
    import torch

    dev = device or torch.device("cuda")
    flush = torch.empty(l2_bytes // 4, dtype=torch.float32, device=dev) \
        if flush_l2 else None
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    nv = _get_nvml(nvml_index)
    spin = getattr(torch.cuda, "_sleep", None) if hide_launch_us > 0 else None
    # _sleep counts SM cycles; the maximum clock makes the spin at least
    # hide_launch_us long whatever the current clock.
    mhz = nv.max_sm_mhz() or 2000
    cycles = int(hide_launch_us * mhz)
    start = torch.cuda.Event(enable_timing=True)
    stop = torch.cuda.Event(enable_timing=True)
    ms, flagged, clocks, temps = [], [], [], []
    power, reasons, mem_clocks = [], [], []
    extra = 0           # throttled samples replaced by another
    in_a_row = 0
    while len(ms) < samples + extra:
        if flush is not None:
            flush.zero_()
        c0, t0 = nv.sm_mhz(), nv.throttle()
        temps.append((nv.gpu_temp(), nv.mem_temp()))
        power.append(nv.power_w())
        mem_clocks.append(nv.mem_mhz())
        if spin is not None:
            spin(cycles)
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        c1, t1 = nv.sm_mhz(), nv.throttle()
        ms.append(start.elapsed_time(stop))
        bad = bool(t0) or bool(t1)
        reasons.append(None if t0 is None and t1 is None
                       else (t0 or 0) | (t1 or 0))
        flagged.append(bad)
        clocks.append((c0, c1))
        in_a_row = in_a_row + 1 if bad else 0
        # A kernel still throttled after RETAKES_IN_A_ROW pauses throttles
        # the GPU by itself (a long matmul at the power cap): pausing more
        # only stretches the region, so its samples are kept, flagged.
        if bad and recover_ms > 0 and in_a_row < RETAKES_IN_A_ROW \
                and extra < samples:
            extra += 1
            time.sleep(recover_ms / 1000.0)
    good = [m for m, f in zip(ms, flagged) if not f] or ms
    return {
        "samples_ms": ms,
        "throttled": flagged,
        "sm_mhz": clocks,
        "temp_c": temps,
        "power_w": power,
        "mem_mhz": mem_clocks,
        "throttle_reasons": reasons,
        "median_ms": statistics.median(good),
        "n_throttled": sum(flagged),
        "n_clean": len(ms) - sum(flagged),
        "n_retaken": extra,
        "hide_launch_us": hide_launch_us if spin is not None else 0,
    }
