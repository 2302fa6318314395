#!/usr/bin/env bash
# kmuxd under valgrind (memcheck, leaks included) through a session that
# walks its main paths: submit, queueing, reaping, wait, logs -f, ps, top,
# cancel of a queued and a running job, `kmux run` (its command's pid
# named with STARTED, its end, a cancel of it), a malformed frame, shutdown.
# Skipped under the sanitizer build and where valgrind is missing.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/kmuxd-lib.sh"

if [ -n "${ASAN_LIB:-}" ] || ! command -v valgrind >/dev/null 2>&1; then
	echo "  skip $T_NAME: sanitizer build or no valgrind"
	finish
fi
valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite \
	--child-silent-after-fork=yes --log-file="$TMP/vg.log" \
	"$KMUX" daemon --foreground --kill-grace 0.5 2>"$TMP/daemon.err" &
vg=$!
for i in $(seq 600); do [ -S "$KMUX_SOCKET" ] && break; sleep 0.1; done
check "the daemon listens under valgrind" [ -S "$KMUX_SOCKET" ]
a=$("$KMUX" submit -m 10G -- sh -c 'echo a; sleep 0.3')
b=$("$KMUX" submit -m 10G -- echo b)
c=$("$KMUX" submit -m 10G -- echo c)
"$KMUX" cancel "$c"
timeout 20 "$KMUX" logs -f "$b" >"$TMP/b.log"
check "a queued job ran after the first, its log followed" grep -qx b "$TMP/b.log"
expect_rc 0 "wait" "$KMUX" wait "$a"
# The client side too: framing, JSON, the text views.
VG=(valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite)
expect_rc 0 "memcheck: kmux ps --all --json" "${VG[@]}" "$KMUX" ps --all --json
expect_rc 0 "memcheck: kmux top --once" "${VG[@]}" "$KMUX" top --once
expect_rc 0 "memcheck: kmux logs" "${VG[@]}" "$KMUX" logs "$a"
expect_rc 3 "memcheck: kmux cancel of an unknown job" "${VG[@]}" "$KMUX" cancel 99
d=$("$KMUX" submit -- sleep 30)
wait_state "$d" running 300
"$KMUX" cancel "$d"
expect_rc 143 "cancel of a running job" "$KMUX" wait "$d"
expect_rc 3 "memcheck: kmux run, its exit status" "${VG[@]}" "$KMUX" run -m 1G -- sh -c 'exit 3'
"$KMUX" run -m 1G -n vgrun -- sleep 30 >/dev/null 2>&1 &
rp=$!
vgrun_id() { "$KMUX" ps --json | python3 -c 'import json, sys
print([j["id"] for j in json.load(sys.stdin) if j["name"] == "vgrun"][0])' 2>/dev/null; }
vgrun_started() {
	vr=$(vgrun_id) && grep -q "job $vr: its command runs as pid" "$TMP/daemon.err"
}
check "a kmux run names its command's pid" wait_for 30 vgrun_started
"$KMUX" cancel "$vr"
wait "$rp"
check "  ... cancelled: kmux run exits 143" [ $? -eq 143 ]
e=$("$KMUX" submit -- "$TMP/missing-program")
expect_rc 127 "a job that cannot start" "$KMUX" wait "$e"
python3 -c 'import socket, sys
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); s.sendall(b"garbage!" * 4); s.recv(100)' "$KMUX_SOCKET"
expect_rc 0 "served after a malformed frame" "$KMUX" ps
kill -TERM "$vg"
wait "$vg"
rc=$?
check "memcheck: no errors and no leaks (exit $rc)" [ $rc -eq 0 ]
sed 's/^/    /' "$TMP/vg.log" | head -30
finish
