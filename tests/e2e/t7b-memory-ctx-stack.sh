#!/usr/bin/env bash
# The context's stack reservation under a memory mode (src/preload/ctx-stack.h,
# docs/design-memory.md "The context's own memory").  simcuda counts a
# context's stack limit times SIMCUDA_STACK_THREADS bytes as used, as a GPU
# reserves it (65536 threads: 64 MiB at the default 1024 bytes).  Under
# --memory lazy kmux lowers the limit to 0 while every image loaded has PTX
# without a call, and puts the default back at the first image that may need
# it; the program sees the default limit all along.
. "$(dirname "$0")/lib.sh"

export SIMCUDA_STACK_THREADS=65536
val() { sed -n "s/^$1 free=\([0-9]*\) limit=\([0-9]*\)$/\\$2/p" "$3"; }

for m in ptx file own two; do
	"$PROGS/ctx-stack" $m >"$TMP/plain-$m" 2>&1
	KMUX_MEMORY=lazy KMUX_LOG=info LD_PRELOAD=$PRELOAD "$PROGS/ctx-stack" $m \
		>"$TMP/lazy-$m" 2>"$TMP/lazy-$m.log"
done
f0=$(val ctx 1 "$TMP/plain-ptx")
check "unscheduled: the context reserves 64 MiB of stack (free $f0 MiB)" [ -n "$f0" ]
check "lazy: the context's 64 MiB come back ($(val ctx 1 "$TMP/lazy-ptx") MiB free)" \
	[ "$(val ctx 1 "$TMP/lazy-ptx")" = $((f0 + 64)) ]
check "  ... the program still sees the 1024-byte limit" [ "$(val ctx 2 "$TMP/lazy-ptx")" = 1024 ]
check "  ... PTX without a call keeps them free" [ "$(val plain 1 "$TMP/lazy-ptx")" = $((f0 + 64)) ]
check "  ... PTX with a call puts the default back before its kernels run" \
	[ "$(val call 1 "$TMP/lazy-ptx")" = "$f0" ]
check "  ... counted at exit" \
	grep -q 'ctx-stack: pid [0-9]*: 1 context(s) with the stack limit lowered to 0, 1 put back (PTX with a call instruction), 2 images checked' "$TMP/lazy-ptx.log"
check "a module loaded from a file (not read): the default back" \
	bash -c "[ \"\$(sed -n 's/^file free=\([0-9]*\).*/\1/p' '$TMP/lazy-file')\" = $f0 ] && grep -q 'an image loaded from a file' '$TMP/lazy-file.log'"
check "the program sets 2048 bytes itself: its limit and reservation, kept after a call" \
	bash -c "diff <(grep -v '^ctx' '$TMP/plain-own') <(grep -v '^ctx' '$TMP/lazy-own') >/dev/null"
check "two contexts of its own: both lowered, both put back" \
	grep -q '2 context(s) with the stack limit lowered to 0, 2 put back' "$TMP/lazy-two.log"
check "  ... and the end state is the unscheduled one" \
	[ "$(sed -n 's/^call free=\([0-9]*\).*/\1/p' "$TMP/lazy-two")" = "$(sed -n 's/^call free=\([0-9]*\).*/\1/p' "$TMP/plain-two")" ]

KMUX_MEMORY=lazy KMUX_CTX_STACK=0 LD_PRELOAD=$PRELOAD "$PROGS/ctx-stack" ptx >"$TMP/off" 2>&1
check "KMUX_CTX_STACK=0: nothing lowered" [ "$(val ctx 1 "$TMP/off")" = "$f0" ]
LD_PRELOAD=$PRELOAD "$PROGS/ctx-stack" ptx >"$TMP/quota" 2>&1
check "without a memory mode: nothing lowered" [ "$(val ctx 1 "$TMP/quota")" = "$f0" ]
KMUX_MEMORY=lazy KMUX_CTX_STACK=maybe KMUX_LOG=warn LD_PRELOAD=$PRELOAD "$PROGS/ctx-stack" ptx \
	>"$TMP/bad" 2>"$TMP/bad.log"
check "KMUX_CTX_STACK=maybe: warned about, still on" \
	bash -c "grep -q 'KMUX_CTX_STACK=maybe: only 0' '$TMP/bad.log' && [ \"\$(sed -n 's/^ctx free=\([0-9]*\).*/\1/p' '$TMP/bad')\" = $((f0 + 64)) ]"
finish
