#!/usr/bin/env bash
# kmux.bench.time_cuda (issue 6, timing aids) without a GPU: a stand-in
# torch module times fake samples and a stand-in NVML says which of them
# ran throttled.  A throttled sample is left out of the median, the timer
# pauses (recover_ms) and takes another in its place, but not after three
# throttled in a row (the kernel throttles the GPU by itself); with recover_ms=0 the sample count is exactly `samples`;
# the temperatures are recorded per sample.
. "$(dirname "$0")/lib.sh"

mkdir -p "$TMP/fake/torch"
cat >"$TMP/fake/torch/__init__.py" <<'PY'
# Just what time_cuda calls; each Event pair's interval is the next value
# of SCRIPT (ms).
import types
SCRIPT = []
_now = [0.0]


class _Event:
    def __init__(self, enable_timing=False):
        self.t = None

    def record(self):
        if self is _pair[0]:
            self.t = 0.0
        else:
            self.t = SCRIPT.pop(0)

    def synchronize(self):
        pass

    def elapsed_time(self, other):
        return other.t - self.t


_pair = []


def _event(enable_timing=False):
    e = _Event(enable_timing)
    _pair.append(e)
    return e


class _Tensor:
    def zero_(self):
        return self


cuda = types.SimpleNamespace(Event=_event, synchronize=lambda: None,
                             _sleep=lambda cycles: None)


def device(name):
    return name


float32 = "float32"


def empty(n, dtype=None, device=None):
    return _Tensor()
PY

cat >"$TMP/t.py" <<'PY'
import sys
import time
import torch
import kmux.bench as kb


class FakeNvml:
    """Throttle reasons read after sample i (0-based) come from BAD."""
    def __init__(self, bad):
        self.bad, self.reads = set(bad), 0

    def sm_mhz(self):
        return 1980

    def max_sm_mhz(self):
        return 1980

    def throttle(self):
        # two reads per sample: before (always clear) and after
        self.reads += 1
        return 0x4 if self.reads % 2 == 0 and self.reads // 2 - 1 in self.bad \
            else 0

    def gpu_temp(self):
        return 40 + self.reads

    def mem_temp(self):
        return None

    def power_w(self):
        return 600.0 + self.reads

    def mem_mhz(self):
        return 3201


sleeps = []
time.sleep = lambda s: sleeps.append(s)
case = sys.argv[1]
if case == "retake":
    # samples 1 and 2 (0-based) throttled and slow: taken again
    torch.SCRIPT[:] = [10.0, 99.0, 98.0, 10.2, 10.1, 10.3]
    kb._nvml = FakeNvml({1, 2})
    r = kb.time_cuda(lambda: None, warmup=0, samples=4, recover_ms=50)
    print(len(r["samples_ms"]), r["n_throttled"], r["n_clean"],
          round(r["median_ms"], 3), sleeps, r["temp_c"][0],
          r["power_w"][0], r["mem_mhz"][0], r["throttle_reasons"][:3])
elif case == "norecover":
    torch.SCRIPT[:] = [10.0, 99.0, 10.2, 10.1]
    kb._nvml = FakeNvml({1})
    r = kb.time_cuda(lambda: None, warmup=0, samples=4, recover_ms=0)
    print(len(r["samples_ms"]), r["n_throttled"], r["median_ms"], sleeps)
elif case == "always":
    # every sample throttled: two are replaced, then the kernel is taken
    # to throttle the GPU itself; the median of them all
    torch.SCRIPT[:] = [float(i) for i in range(1, 13)]
    kb._nvml = FakeNvml(set(range(100)))
    r = kb.time_cuda(lambda: None, warmup=0, samples=10, recover_ms=10)
    print(len(r["samples_ms"]), r["n_clean"], r["median_ms"], len(sleeps),
          r["n_retaken"])
PY

run() { PYTHONPATH=$TMP/fake:$ROOT/python python3 "$TMP/t.py" "$1" 2>&1; }
out=$(run retake)
check "two throttled samples are taken again: 6 samples, 2 flagged, 4 clean" \
	[ "$(echo "$out" | cut -d' ' -f1-3)" = "6 2 4" ]
check "  ... the median is over the clean ones only (10.15 ms)" \
	[ "$(echo "$out" | cut -d' ' -f4)" = "10.15" ]
check "  ... with a 50 ms pause after each throttled one" \
	grep -q '\[0.05, 0.05\]' <<<"$out"
check "  ... and the GPU temperature of each sample recorded" \
	grep -q '(41, None) ' <<<"$out"
check "  ... its power draw, memory clock and throttle reasons too" \
	grep -q ' 601.0 3201 \[0, 4, 4\]$' <<<"$out"
out=$(run norecover)
check "recover_ms=0: exactly 'samples' samples, no pause, flagged one out of the median" \
	[ "$out" = "4 1 10.1 []" ]
out=$(run always)
check "a kernel throttled throughout: two samples replaced, then its own kept (12), median of them all" \
	[ "$out" = "12 0 6.5 2 2" ]
finish
