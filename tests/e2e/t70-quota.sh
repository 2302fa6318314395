#!/usr/bin/env bash
# Memory quota enforcement in the preload (issue 4, Enforcement): under
# KMUX_MEM_QUOTA an allocation past the quota gets CUDA_ERROR_OUT_OF_MEMORY
# (2) in that process only, frees give the bytes back, cuMemGetInfo reports
# the quota, and an invalid value leaves the program unlimited.
. "$(dirname "$0")/lib.sh"

Q=$PROGS/quota
has() { grep -qx "$2" "$1"; }

# Without kmux, and under the bare preload: the program gets all 256 MiB.
"$Q" >"$TMP/plain" 2>&1
check "quota program runs without kmux" [ $? -eq 0 ]
check "without kmux: 256 MiB, no failure" has "$TMP/plain" "got 256"
LD_PRELOAD=$PRELOAD "$Q" >"$TMP/bare" 2>&1
check "bare preload: same output as without kmux" cmp -s "$TMP/plain" "$TMP/bare"

# KMUX_MEM_QUOTA=64M: 64 MiB, then CUDA_ERROR_OUT_OF_MEMORY; frees give back.
KMUX_MEM_QUOTA=64M LD_PRELOAD=$PRELOAD "$Q" >"$TMP/q64" 2>&1
check "under a 64 MiB quota: exit 0" [ $? -eq 0 ]
check "under a 64 MiB quota: gets exactly 64 MiB" has "$TMP/q64" "got 64"
check "past the quota: CUDA_ERROR_OUT_OF_MEMORY" has "$TMP/q64" "stop err=2"
check "cuMemGetInfo reports the 64 MiB quota" has "$TMP/q64" "info0 total=64 free=64"
check "cuMemGetInfo at the limit: nothing free" has "$TMP/q64" "info1 total=64 free=0"
check "after the frees: all free again" has "$TMP/q64" "info2 total=64 free=64"
check "after the frees: allocation succeeds again" has "$TMP/q64" "realloc err=0"

# The same limit in plain bytes (what the daemon sets); a bigger quota.
KMUX_MEM_QUOTA=67108864 LD_PRELOAD=$PRELOAD "$Q" >"$TMP/qbytes" 2>&1
check "KMUX_MEM_QUOTA in bytes: same as 64M" cmp -s "$TMP/q64" "$TMP/qbytes"
KMUX_MEM_QUOTA=1G LD_PRELOAD=$PRELOAD "$Q" >"$TMP/q1g" 2>&1
check "a 1 GiB quota: the program gets its 256 MiB" has "$TMP/q1g" "got 256"
check "a 1 GiB quota: cuMemGetInfo total 1024" has "$TMP/q1g" "info0 total=1024 free=1024"

# Every counted kind: pitch (16 MiB), managed, async, VMM; host memory is not
# counted; cuMemRelease and cuMemFreeAsync give back.
QUOTA_KINDS=1 KMUX_MEM_QUOTA=64M LD_PRELOAD=$PRELOAD "$Q" 8 1 >"$TMP/kinds" 2>&1
check "kinds: exit 0" [ $? -eq 0 ]
for k in pitch managed async vmm host; do
	check "kinds: $k allocation within the quota" has "$TMP/kinds" "kinds $k err=0"
done
check "kinds: pitch+managed+async+VMM fill the quota" has "$TMP/kinds" "kinds over err=2"
check "kinds: cuMemGetInfo at the limit" has "$TMP/kinds" "kinds-full total=64 free=0"
check "kinds: cuMemRelease gives VMM memory back" has "$TMP/kinds" "kinds after-release err=0"
check "kinds: cuMemFreeAsync gives back" has "$TMP/kinds" "kinds after-free-async err=0"
check "kinds: everything back at the end" has "$TMP/kinds" "kinds-end total=64 free=64"
QUOTA_KINDS=1 "$Q" 8 1 >"$TMP/kinds-plain" 2>&1
check "kinds without kmux: no failure" has "$TMP/kinds-plain" "kinds over err=0"

# CUDA arrays count by their texels (2D, 3D, mipmapped: 53.3 MiB of the 64):
# one past the quota is refused, an allocation past it too, and destroying
# gives back.
QUOTA_ARRAYS=1 KMUX_MEM_QUOTA=64M LD_PRELOAD=$PRELOAD "$Q" 8 1 >"$TMP/arrays" 2>&1
check "arrays: exit 0" [ $? -eq 0 ]
for k in 2d 3d mipmap; do
	check "arrays: a $k array within the quota" has "$TMP/arrays" "arrays $k err=0"
done
check "arrays: a 64 MiB 3D array past the quota: CUDA_ERROR_OUT_OF_MEMORY" \
	has "$TMP/arrays" "arrays 3d-big err=2"
check "arrays: cuMemGetInfo counts them (10.7 MiB left)" \
	has "$TMP/arrays" "arrays-full total=64 free=10"
check "arrays: 16 MiB more is past the quota" has "$TMP/arrays" "arrays over err=2"
check "arrays: cuArrayDestroy gives back" has "$TMP/arrays" "arrays after-destroy err=0"
check "arrays: everything back at the end" has "$TMP/arrays" "arrays-end total=64 free=64"
QUOTA_ARRAYS=1 "$Q" 8 1 >"$TMP/arrays-plain" 2>&1
check "arrays without kmux: no failure" \
	bash -c "grep -qx 'arrays 3d-big err=0' '$TMP/arrays-plain' &&
		 grep -qx 'arrays over err=0' '$TMP/arrays-plain'"

# A free the stream scheduler deferred still holds its charge: the array
# after it gives that back first, as cuMemAlloc does (64 MiB quota, all of
# it allocated, written and freed, then a 16 MiB array).
QUOTA_DEFER=1 KMUX_STREAMS=4 KMUX_MEM_QUOTA=64M LD_PRELOAD=$PRELOAD "$Q" 64 1 >"$TMP/defer" 2>&1
check "an array after a deferred free: exit 0" [ $? -eq 0 ]
check "  ... the array fits" has "$TMP/defer" "deferred array err=0"

# Graph memory nodes (64 MiB quota): charged while a launch keeps them
# live, never at capture; a launch that would allocate past the quota is
# refused before the driver; auto-free gives the last launch's back.
QUOTA_GRAPHS=1 KMUX_MEM_QUOTA=64M LD_PRELOAD=$PRELOAD "$Q" 8 1 >"$TMP/graphs" 2>&1
check "graphs: exit 0" [ $? -eq 0 ]
check "graphs: a graph that frees its own 32 MiB runs" has "$TMP/graphs" "graphs own-free err=0"
check "  ... and runs again" has "$TMP/graphs" "graphs own-free-again err=0"
check "  ... and holds nothing after" has "$TMP/graphs" "graphs-after-own total=64 free=64"
check "graphs: 48 MiB left live by a launch are counted" has "$TMP/graphs" "graphs-live total=64 free=16"
check "  ... so 32 MiB more is past the quota" has "$TMP/graphs" "graphs alloc-while-live err=2"
check "  ... cuMemFreeAsync gives them back" has "$TMP/graphs" "graphs-freed-async total=64 free=64"
check "  ... the graph launches again" has "$TMP/graphs" "graphs relaunch err=0"
check "  ... cuMemFree gives them back" has "$TMP/graphs" "graphs-freed-sync total=64 free=64"
check "graphs: a launch allocating 2 x 40 MiB: CUDA_ERROR_OUT_OF_MEMORY" has "$TMP/graphs" "graphs too-big err=2"
check "  ... and nothing stays charged" has "$TMP/graphs" "graphs-after-big total=64 free=64"
check "graphs: a captured cuMemAllocAsync charges nothing at capture" has "$TMP/graphs" "graphs-capturing total=64 free=64"
check "  ... its graph launches twice" \
	bash -c "grep -qx 'graphs captured err=0' '$TMP/graphs' && grep -qx 'graphs captured-again err=0' '$TMP/graphs'"
check "  ... and holds nothing after" has "$TMP/graphs" "graphs-after-captured total=64 free=64"
check "graphs: an auto-free graph of 48 MiB launches twice" \
	bash -c "grep -qx 'graphs auto-free err=0' '$TMP/graphs' && grep -qx 'graphs auto-free-again err=0' '$TMP/graphs'"
check "  ... holding 48 MiB, not 96" has "$TMP/graphs" "graphs-auto-live total=64 free=16"
check "graphs: everything back at the end" has "$TMP/graphs" "graphs-end total=64 free=64"
QUOTA_GRAPHS=1 "$Q" 8 1 >"$TMP/graphs-plain" 2>&1
check "graphs without kmux: no failure" \
	bash -c "grep -qx 'graphs alloc-while-live err=0' '$TMP/graphs-plain' &&
		 grep -qx 'graphs too-big err=0' '$TMP/graphs-plain'"
# Under the stream scheduler too (its graph launches are barriers).
QUOTA_GRAPHS=1 KMUX_STREAMS=4 KMUX_MEM_QUOTA=64M LD_PRELOAD=$PRELOAD "$Q" 8 1 >"$TMP/graphs-st" 2>&1
check "graphs under KMUX_STREAMS=4: the same" cmp -s "$TMP/graphs" "$TMP/graphs-st"

# Two processes at once, different quotas: each hits only its own limit.
QUOTA_HOLD_MS=500 KMUX_MEM_QUOTA=32M LD_PRELOAD=$PRELOAD "$Q" >"$TMP/a" 2>&1 &
pa=$!
QUOTA_HOLD_MS=500 KMUX_MEM_QUOTA=96M LD_PRELOAD=$PRELOAD "$Q" >"$TMP/b" 2>&1 &
pb=$!
wait $pa; ra=$?
wait $pb; rb=$?
check "two at once: both exit 0" [ $((ra + rb)) -eq 0 ]
check "two at once: the 32 MiB one gets 32 MiB" has "$TMP/a" "got 32"
check "two at once: the 96 MiB one gets 96 MiB" has "$TMP/b" "got 96"
check "two at once: each reports its own quota" \
	bash -c "grep -qx 'info0 total=32 free=32' '$TMP/a' && grep -qx 'info0 total=96 free=96' '$TMP/b'"

# An invalid quota: a warning (under KMUX_LOG=warn), and no limit.
KMUX_MEM_QUOTA=12Q LD_PRELOAD=$PRELOAD "$Q" >"$TMP/bad" 2>"$TMP/bad.err"
check "KMUX_MEM_QUOTA=12Q: unlimited, same output as without kmux" cmp -s "$TMP/plain" "$TMP/bad"
check "KMUX_MEM_QUOTA=12Q: silent by default" [ ! -s "$TMP/bad.err" ]
KMUX_LOG=warn KMUX_MEM_QUOTA=12Q LD_PRELOAD=$PRELOAD "$Q" >"$TMP/badw" 2>"$TMP/badw.err"
check "KMUX_MEM_QUOTA=12Q under KMUX_LOG=warn: unlimited" has "$TMP/badw" "got 256"
check "KMUX_MEM_QUOTA=12Q under KMUX_LOG=warn: a warning" grep -q "kmux: KMUX_MEM_QUOTA=12Q is not a byte count" "$TMP/badw.err"
finish
