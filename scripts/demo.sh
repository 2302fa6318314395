#!/usr/bin/env bash
# scripts/demo.sh - what `make demo` runs: `kmux trace` on examples/demo, on
# the real GPU when this machine has one, on the simulated driver otherwise,
# and says which.
set -u
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
out=$BUILD/demo-trace.json

if nvidia-smi -L >/dev/null 2>&1; then
	gpu=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1)
	echo "kmux demo: running on the real GPU ($gpu)"
else
	echo "kmux demo: no NVIDIA GPU here; running on tests/simcuda, the CPU-simulated"
	echo "           driver kmux's tests use (a test double: timings mean nothing)"
	export LD_LIBRARY_PATH=$PWD/$BUILD/simcuda${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
	export KMUX_DEMO_MODULE=$PWD/$BUILD/simcuda/kernels/basic.so
fi
echo "kmux demo: $BUILD/kmux trace -o $out -- $BUILD/examples/demo"
echo
"$BUILD/kmux" trace -o "$out" -- "$BUILD/examples/demo"
rc=$?
echo
[ $rc -eq 0 ] && echo "kmux demo: open $out in https://ui.perfetto.dev or chrome://tracing"
exit $rc
