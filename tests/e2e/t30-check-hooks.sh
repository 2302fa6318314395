#!/usr/bin/env bash
# scripts/check-hooks.py passes on the tree and catches a wrapper without a
# HOOK line, a HOOK without a wrapper, a newer cuda.h variant than the hooked
# ones, and a stream-taking entry point with no wrapper.
. "$(dirname "$0")/lib.sh"

check "hook table and wrappers agree" python3 "$ROOT/scripts/check-hooks.py"
mkdir -p "$TMP/tree/scripts" "$TMP/tree/src"
cp "$ROOT/scripts/check-hooks.py" "$ROOT/scripts/gen-wrap-opaque.py" "$TMP/tree/scripts/"
cp -r "$ROOT/src/preload" "$TMP/tree/src/"
sed -i '/^HOOK(cuMemAlloc_v2)$/d' "$TMP/tree/src/preload/hooks.def"
BUILD=none python3 "$TMP/tree/scripts/check-hooks.py" >"$TMP/out" 2>&1
check "a wrapper without a HOOK line is caught" grep -q 'cuMemAlloc_v2.*no HOOK' "$TMP/out"
cp "$ROOT/src/preload/hooks.def" "$TMP/tree/src/preload/"
echo 'HOOK(cuZzzNoSuchWrapper)' >"$TMP/extra"
sed -i "/^HOOK(cuStreamWaitEvent_ptsz)$/r $TMP/extra" "$TMP/tree/src/preload/hooks.def"
BUILD=none python3 "$TMP/tree/scripts/check-hooks.py" >"$TMP/out" 2>&1
check "a HOOK without a wrapper is caught" grep -q 'cuZzzNoSuchWrapper) has 0' "$TMP/out"

# A newer ABI version in cuda.h than the hooked ones is a hole (CUDA 13's
# cudart fetches cuCtxSynchronize_v2): drop the v2 hook and its wrapper.
cp "$ROOT/src/preload/hooks.def" "$ROOT/src/preload/wrap-sync.c" "$TMP/tree/src/preload/"
sed -i '/^HOOK(cuCtxSynchronize_v2)$/d' "$TMP/tree/src/preload/hooks.def"
python3 - "$TMP/tree/src/preload/wrap-sync.c" <<'PY'
import re, sys
p = sys.argv[1]
s = open(p).read()
s = re.sub(r"KMUX_EXPORT CUresult CUDAAPI cuCtxSynchronize_v2\(.*?\n}\n", "", s, flags=re.S)
open(p, "w").write(s)
PY
BUILD=none python3 "$TMP/tree/scripts/check-hooks.py" >"$TMP/out" 2>&1
check "a newer variant in cuda.h than any hooked one is caught" \
	grep -q 'declares cuCtxSynchronize_v2, newer' "$TMP/out"

# An entry point that puts work on a stream but has no wrapper would run
# unordered with kmux's pool: drop cuStreamWriteValue32_v2's.
cp "$ROOT/src/preload/hooks.def" "$ROOT/src/preload/wrap-sync.c" "$TMP/tree/src/preload/"
sed -i '/^HOOK(cuStreamWriteValue32_v2)$/d' "$TMP/tree/src/preload/hooks.def"
python3 - "$TMP/tree/src/preload/wrap-opaque.c" <<'PY'
import re, sys
p = sys.argv[1]
s = open(p).read()
s = re.sub(r"KMUX_EXPORT CUresult CUDAAPI cuStreamWriteValue32_v2\(.*?\n}\n", "", s, flags=re.S)
open(p, "w").write(s)
PY
BUILD=none python3 "$TMP/tree/scripts/check-hooks.py" >"$TMP/out" 2>&1
check "an unwrapped stream-taking entry point is caught" \
	grep -q "cuStreamWriteValue32_v2 puts work on a stream but is not wrapped" "$TMP/out"
finish
