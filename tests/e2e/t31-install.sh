#!/usr/bin/env bash
# `make install PREFIX=...` lays out bin/kmux, lib/kmux/libkmux.so and the
# man pages, and the installed kmux finds its installed preload by itself.
. "$(dirname "$0")/lib.sh"

prefix=$TMP/prefix
san=; [ "$(basename "$BUILD")" = build-san ] && san=SAN=1
make -s -C "$ROOT" install $san PREFIX="$prefix" >"$TMP/install.log" 2>&1
check "make install succeeds" [ $? -eq 0 ]
check "bin/kmux installed" [ -x "$prefix/bin/kmux" ]
check "lib/kmux/libkmux.so installed" [ -f "$prefix/lib/kmux/libkmux.so" ]
check "man pages installed" [ -f "$prefix/share/man/man1/kmux-trace.1" ] && [ -f "$prefix/share/man/man7/libkmux.7" ]
unset KMUX_LIBRARY
"$prefix/bin/kmux" trace -q -o "$TMP/t.json" -- "$PROGS/drv-basic" 1 >/dev/null 2>&1
check "the installed kmux traces with the installed preload" json_check "$TMP/t.json" "len(kernels) == 3"
check "the bench workers' Python module installed" [ -f "$prefix/lib/kmux/python/kmux/worker.py" ]
finish
