#!/usr/bin/env bash
# scripts/check-hooks.py passes on the tree and catches a wrapper without a
# HOOK line and a HOOK without a wrapper.
. "$(dirname "$0")/lib.sh"

check "hook table and wrappers agree" python3 "$ROOT/scripts/check-hooks.py"
mkdir -p "$TMP/tree/scripts" "$TMP/tree/src"
cp "$ROOT/scripts/check-hooks.py" "$TMP/tree/scripts/"
cp -r "$ROOT/src/preload" "$TMP/tree/src/"
sed -i '/^HOOK(cuMemAlloc_v2)$/d' "$TMP/tree/src/preload/hooks.def"
BUILD=none python3 "$TMP/tree/scripts/check-hooks.py" >"$TMP/out" 2>&1
check "a wrapper without a HOOK line is caught" grep -q 'cuMemAlloc_v2.*no HOOK' "$TMP/out"
cp "$ROOT/src/preload/hooks.def" "$TMP/tree/src/preload/"
echo 'HOOK(cuZzzNoSuchWrapper)' >"$TMP/extra"
sed -i "/^HOOK(cuStreamWaitEvent_ptsz)$/r $TMP/extra" "$TMP/tree/src/preload/hooks.def"
BUILD=none python3 "$TMP/tree/scripts/check-hooks.py" >"$TMP/out" 2>&1
check "a HOOK without a wrapper is caught" grep -q 'cuZzzNoSuchWrapper) has 0' "$TMP/out"
finish
