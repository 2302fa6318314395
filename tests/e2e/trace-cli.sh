#!/usr/bin/env bash
# tests/e2e/trace-cli.sh - the kmux CLI and `kmux trace` on programs that do
# not use CUDA: usage errors, exec failures, unwritable output (checked
# before the command runs), exit statuses and signals passed through, the
# child's environment, and a valid empty trace.  Needs build/kmux and
# build/libkmux.so; no simulated driver.
. "$(dirname "$0")/lib.sh"

# Under the sanitizer build the preload needs the ASan runtime in front of
# it in LD_PRELOAD (kmux keeps sanitizer runtimes first): give it to kmux
# alone, through a wrapper, not to every tool of this script.
SAN_PRELOAD=
if [ -n "${ASAN_LIB:-}" ]; then
	SAN_PRELOAD=$ASAN_LIB:
	cat >"$TMP/kmux-san" <<EOF
#!/bin/sh
LD_PRELOAD=$ASAN_LIB\${LD_PRELOAD:+:\$LD_PRELOAD} exec "$KMUX" "\$@"
EOF
	chmod +x "$TMP/kmux-san"
	KMUX=$TMP/kmux-san
fi

json_valid() { python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$1"; }

# expect_status N COMMAND...: COMMAND exits with N.
expect_status() {
	local want=$1 got
	shift
	"$@"
	got=$?
	[ "$got" -eq "$want" ] || { echo "    exit status $got, wanted $want" >&2; return 1; }
}

cd "$TMP" || exit 1

# --- the command table --------------------------------------------------
check "kmux with no command: usage, exit 2" \
	expect_status 2 "$KMUX" 2>"$TMP/err"
check "  ... usage on stderr" grep -q '^usage: kmux' "$TMP/err"
check "unknown command: exit 2" expect_status 2 "$KMUX" frobnicate 2>"$TMP/err"
check "  ... names it" grep -q "unknown command 'frobnicate'" "$TMP/err"
check "unknown global option: exit 2" expect_status 2 "$KMUX" --frob 2>/dev/null
check "kmux --help: exit 0, lists trace" \
	sh -c '"$0" --help | grep -q "^  trace "' "$KMUX"
check "kmux --version: exit 0" sh -c '"$0" --version >/dev/null' "$KMUX"
check "kmux help trace: exit 0" sh -c '"$0" help trace >/dev/null' "$KMUX"
check "kmux trace --help: exit 0, usage on stdout" \
	sh -c '"$0" trace --help 2>/dev/null | grep -q "^usage: kmux trace"' "$KMUX"
check "kmux run --exclusive=1: exit 2, the option takes no argument" \
	sh -c '"$0" run --exclusive=1 -- true 2>"$1"; [ $? -eq 2 ] &&
	       grep -qx "kmux: run: option .--exclusive. takes no argument" "$1"' "$KMUX" "$TMP/err"
check "a bad value names the command (kmux: run: bad --mem ...)" \
	sh -c '"$0" run --mem 12Q -- true 2>"$1"; [ $? -eq 2 ] &&
	       grep -q "^kmux: run: bad --mem .12Q." "$1"' "$KMUX" "$TMP/err"
check "kmux run -- '': usage error (exit 2), as submit says it" \
	sh -c '"$0" run -- "" 2>"$1"; [ $? -eq 2 ] && grep -q "empty command name" "$1"' "$KMUX" "$TMP/err"
# Output that cannot be written is a failure, said on stderr.
if [ -w /dev/full ]; then
	"$KMUX" --version >/dev/full 2>"$TMP/err"
	rc=$?
	check "kmux --version into a full disk: exit 1" [ $rc -eq 1 ]
	check "  ... says why" grep -qx 'kmux: cannot write to standard output: No space left on device' "$TMP/err"
	check "kmux trace --help into a full disk: exit 1, names the command" \
		sh -c '"$0" trace --help >/dev/full 2>"$1"; [ $? -eq 1 ] &&
		       grep -q "^kmux: trace: cannot write to standard output" "$1"' "$KMUX" "$TMP/err"
fi

# --- kmux trace: bad usage ------------------------------------------------
check "trace: unknown option: exit 2" \
	expect_status 2 "$KMUX" trace --frob -- true 2>"$TMP/err"
check "  ... names the option" grep -q "unknown option '--frob'" "$TMP/err"
check "  ... and prints the usage" grep -q '^usage: kmux trace' "$TMP/err"
check "trace: -o without its argument: exit 2" \
	expect_status 2 "$KMUX" trace -o 2>/dev/null
check "trace: no command: exit 2" expect_status 2 "$KMUX" trace 2>/dev/null
check "trace: options after CMD are CMD's" \
	expect_status 0 "$KMUX" trace -q -o "$TMP/o.json" -- sh -c 'test "$1" = --frob' x --frob

# --- kmux trace: CMD cannot run -----------------------------------------
rm -f "$TMP/nf.json"
check "CMD not found: exit 127" \
	expect_status 127 "$KMUX" trace -o "$TMP/nf.json" -- /nonexistent/cmd 2>"$TMP/err"
check "  ... clear message" \
	grep -q "^kmux: cannot run '/nonexistent/cmd': No such file or directory" "$TMP/err"
check "  ... no empty trace file left" [ ! -e "$TMP/nf.json" ]
check "CMD not in PATH: exit 127" \
	expect_status 127 "$KMUX" trace -o "$TMP/nf.json" -- kmux-no-such-command 2>/dev/null
printf 'echo hi\n' >"$TMP/noexec"
chmod 0644 "$TMP/noexec"
check "CMD not executable: exit 126" \
	expect_status 126 "$KMUX" trace -o "$TMP/nf.json" -- "$TMP/noexec" 2>"$TMP/err"
check "  ... says why" grep -q "Permission denied" "$TMP/err"

# --- unwritable trace file: error before CMD runs -------------------------
rm -f "$TMP/ran"
check "-o in a missing directory: exit 1" \
	expect_status 1 "$KMUX" trace -o "$TMP/no/such/dir/t.json" -- touch "$TMP/ran" 2>"$TMP/err"
check "  ... names the file" grep -q "cannot open $TMP/no/such/dir/t.json" "$TMP/err"
check "  ... CMD did not run" [ ! -e "$TMP/ran" ]
check "-o under /proc: exit 1, CMD did not run" \
	sh -c '! "$0" trace -o /proc/kmux-test.json -- touch "$1" 2>/dev/null && [ ! -e "$1" ]' \
	"$KMUX" "$TMP/ran"
mkdir -p "$TMP/adir"
check "-o a directory: exit 1, CMD did not run" \
	sh -c '! "$0" trace -o "$2" -- touch "$1" 2>/dev/null && [ ! -e "$1" ]' \
	"$KMUX" "$TMP/ran" "$TMP/adir"
check "--summary-json unwritable: exit 1, CMD did not run" \
	sh -c '! "$0" trace --summary-json /proc/x/y -- touch "$1" 2>/dev/null && [ ! -e "$1" ]' \
	"$KMUX" "$TMP/ran"
check "KMUX_LIBRARY missing: exit 1, CMD did not run" \
	sh -c '! KMUX_LIBRARY=/nonexistent/libkmux.so "$0" trace -- touch "$1" 2>/dev/null && [ ! -e "$1" ]' \
	"$KMUX" "$TMP/ran"

# --- exit statuses and signals ---------------------------------------------
check "exit status passed through" \
	expect_status 3 "$KMUX" trace -q -o "$TMP/x.json" -- sh -c 'exit 3'
check "  ... and the trace is still written" json_valid "$TMP/x.json"
check "CMD killed by SIGTERM: 143" \
	expect_status 143 "$KMUX" trace -q -o "$TMP/x.json" -- sh -c 'kill -TERM $$'
check "CMD killed by SIGKILL: 137" \
	expect_status 137 "$KMUX" trace -q -o "$TMP/x.json" -- sh -c 'kill -KILL $$'

# A signal sent to kmux goes to CMD, and kmux outlives it to write the trace.
rm -f "$TMP/ready" "$TMP/sig.json"
"$KMUX" trace -q -o "$TMP/sig.json" -- \
	sh -c 'trap "exit 42" TERM; touch "$0"; while :; do sleep 0.05; done' \
	"$TMP/ready" &
kpid=$!
for _ in $(seq 100); do [ -e "$TMP/ready" ] && break; sleep 0.05; done
kill -TERM "$kpid"
wait "$kpid"
st=$?
check "SIGTERM to kmux reaches CMD (its trap exits 42)" [ "$st" -eq 42 ]
check "  ... and the trace is written" json_valid "$TMP/sig.json"

rm -f "$TMP/ready"
"$KMUX" trace -q -o "$TMP/sig.json" -- \
	sh -c 'trap "exit 7" USR1; touch "$0"; while :; do sleep 0.05; done' \
	"$TMP/ready" &
kpid=$!
for _ in $(seq 100); do [ -e "$TMP/ready" ] && break; sleep 0.05; done
kill -USR1 "$kpid"
wait "$kpid"
check "SIGUSR1 forwarded too" [ $? -eq 7 ]

# --- a command that does not use CUDA -------------------------------------
"$KMUX" trace -- sh -c 'echo hello' >"$TMP/stdout" 2>"$TMP/stderr"
check "no-CUDA command: exit 0" [ $? -eq 0 ]
check "  ... CMD's stdout is its own" [ "$(cat "$TMP/stdout")" = hello ]
check "  ... default output kmux-trace.json is valid JSON" json_valid "$TMP/kmux-trace.json"
check "  ... zero launches, zero processes" json_check "$TMP/kmux-trace.json" \
	"summary['launches'] == 0 and summary['processes'] == 0 and t['traceEvents'] == [] and t['displayTimeUnit'] == 'ns' and t['kmux']['version'] == 1"
check "  ... summary on stderr" \
	grep -q '^kmux trace: wrote kmux-trace.json (0 processes, 0 launches' "$TMP/stderr"

"$KMUX" trace --json -o "$TMP/j.json" -- true >"$TMP/stdout" 2>"$TMP/stderr"
check "--json: the summary as JSON on stdout" json_check "$TMP/stdout" \
	"t['launches'] == 0 and t['timing'] is False and 'kernels' in t"
check "  ... and no human summary" [ ! -s "$TMP/stderr" ]
"$KMUX" trace -q --summary-json "$TMP/s.json" -o "$TMP/j.json" -- true 2>"$TMP/stderr"
check "--summary-json FILE" json_check "$TMP/s.json" "t['processes'] == 0"
check "-q: nothing on stderr" [ ! -s "$TMP/stderr" ]

# An existing output file is replaced, not appended to.
printf 'garbage that is longer than an empty trace would ever be, surely %0200d\n' 0 >"$TMP/old.json"
"$KMUX" trace -q -o "$TMP/old.json" -- true
check "an existing trace file is overwritten" json_valid "$TMP/old.json"

# --- the child's environment, the temporary directory ---------------------
mkdir -p "$TMP/tmpdir"
TMPDIR=$TMP/tmpdir "$KMUX" trace -q -o "$TMP/e.json" -- sh -c \
	'printf "%s\n" "$KMUX_TRACE_DIR" "${KMUX_TRACE_TIMING-unset}"; test -d "$KMUX_TRACE_DIR"' \
	>"$TMP/env" 2>/dev/null
check "KMUX_TRACE_DIR is a directory under TMPDIR while CMD runs" \
	grep -q "^$TMP/tmpdir/kmux-trace\." "$TMP/env"
check "  ... removed afterwards" [ -z "$(ls -A "$TMP/tmpdir")" ]
check "KMUX_TRACE_TIMING unset without --timing" [ "$(sed -n 2p "$TMP/env")" = unset ]
KMUX_TRACE_TIMING=1 "$KMUX" trace -q -o "$TMP/e.json" -- sh -c \
	'printf "%s\n" "${KMUX_TRACE_TIMING-unset}"' >"$TMP/env" 2>/dev/null
check "  ... even when kmux's own environment has it" [ "$(cat "$TMP/env")" = unset ]
"$KMUX" trace -q --timing -o "$TMP/e.json" -- sh -c \
	'printf "%s\n" "${KMUX_TRACE_TIMING-unset}"' >"$TMP/env" 2>/dev/null
check "KMUX_TRACE_TIMING=1 with --timing" [ "$(cat "$TMP/env")" = 1 ]

lib=$(cd "$(dirname "$LIBKMUX")" && pwd -P)/$(basename "$LIBKMUX")
[ -n "${KMUX_LIBRARY:-}" ] && lib=$(cd "$(dirname "$KMUX_LIBRARY")" && pwd -P)/$(basename "$KMUX_LIBRARY")
LD_PRELOAD="/nonexistent/libclang_rt.asan.so /x/libfoo.so:/old/libkmux.so::$lib" \
	"$KMUX" trace -q -o "$TMP/e.json" -- sh -c 'printf "%s\n" "$LD_PRELOAD"' \
	>"$TMP/env" 2>/dev/null
check "LD_PRELOAD: sanitizer runtime first, then kmux once, then the rest" \
	[ "$(cat "$TMP/env")" = "$SAN_PRELOAD/nonexistent/libclang_rt.asan.so:$lib:/x/libfoo.so" ]

"$KMUX" trace -q --keep -o "$TMP/k.json" -- true 2>"$TMP/stderr"
kept=$(sed -n 's/^kmux trace: per-process files kept in //p' "$TMP/stderr")
check "--keep keeps the directory and says where" test -n "$kept" -a -d "$kept"
[ -n "$kept" ] && rm -rf "$kept"

finish
