#!/usr/bin/env bash
# One daemon per socket and per state directory: a second one is refused
# with a clear error and exit 1, leaving the first untouched; a stale
# socket (nobody listening) is replaced; anything else at the socket's path
# and a directory others can write are refused; clients racing to start
# the daemon end up with one.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/kmuxd-lib.sh"

expect_rc 0 "kmux daemon starts in the background" start_daemon
pid=$(daemon_pid)
check "  ... with the socket 0600 in a 0700 directory" \
	cond '[ "$(stat -c %a "$KMUX_SOCKET")" = 600 ] && [ "$(stat -c %a "$TMP/run")" = 700 ]'
expect_rc 1 "a second daemon on the same socket" "$KMUX" daemon
check "  ... says one runs, with its pid" err_has "already running on $KMUX_SOCKET (pid $pid)"
expect_rc 1 "  ... in the foreground too" "$KMUX" daemon --foreground
check "the first one still serves" cond '[ "$(daemon_pid)" = "$pid" ] && "$KMUX" ps >/dev/null'
expect_rc 1 "another socket on the same state directory" "$KMUX" daemon --socket "$TMP/run/other"
check "  ... says the state is in use" err_has "state directory $KMUX_STATE_DIR is in use"
stop_daemon

# A stale socket: bound, never listening, its owner gone.
python3 -c 'import socket, sys; s = socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); s.close()' "$KMUX_SOCKET"
check "a stale socket is there" [ -S "$KMUX_SOCKET" ]
expect_rc 0 "ps does not take it for a daemon: it reads the database" "$KMUX" ps
check "  ... and says no kmuxd is running" err_has "no kmuxd is running"
expect_rc 0 "a daemon starts over the stale socket" start_daemon
expect_rc 0 "  ... and serves" "$KMUX" ps
kill9_daemon
id=$("$KMUX" submit -- echo back)
expect_rc 0 "after kill -9, submit starts a new daemon on the stale socket" "$KMUX" wait "$id"
stop_daemon

# Something else at the socket's path.
touch "$KMUX_SOCKET"
expect_rc 1 "a regular file where the socket goes is refused" "$KMUX" daemon
check "  ... and left alone" cond '[ -f "$KMUX_SOCKET" ] && err_has "not a socket"'
rm -f "$KMUX_SOCKET"

# A socket directory others can write.
mkdir -p "$TMP/open"
chmod 777 "$TMP/open"
KMUX_SOCKET=$TMP/open/sock expect_rc 1 "a world-writable socket directory is refused" "$KMUX" daemon --state-dir "$TMP/state2"
check "  ... with the reason" err_has "lets others in"

# Four clients find no daemon at once: one daemon, four jobs.
for i in 1 2 3 4; do "$KMUX" submit -- echo "job $i" >"$TMP/race.$i" 2>&1 & done
wait
check "four racing submits all got a job id" cond '[ "$(cat "$TMP"/race.* | grep -c "^[0-9][0-9]*$")" = 4 ]'
check "  ... from one daemon" [ "$(pgrep -fc "daemon --socket $KMUX_SOCKET")" = 1 ]
stop_daemon

# A node's system daemon (here a daemon on KMUX_SYSTEM_SOCKET, so that the
# test need not own /run/kmux): a client with no KMUX_SOCKET and no
# per-user daemon uses it rather than starting a second one for the same
# GPUs; with it gone, the per-user daemon starts as before.
export KMUX_SYSTEM_SOCKET=$KMUX_SOCKET
expect_rc 0 "a daemon on the system socket starts" start_daemon
mkdir -p "$TMP/xdg"
chmod 700 "$TMP/xdg"
as_user() { env -u KMUX_SOCKET XDG_RUNTIME_DIR="$TMP/xdg" KMUX_STATE_DIR="$TMP/ustate" "$@"; }
id=$(as_user "$KMUX" submit -- echo via-system)
check "submit with no per-user daemon got a job id ($id)" [ -n "$id" ]
expect_rc 0 "  ... the system daemon has it" "$KMUX" wait "$id"
check "  ... and no per-user daemon was started" [ ! -e "$TMP/xdg/kmux/sock" ]
expect_rc 0 "kmux run -m goes there too" as_user "$KMUX" run -m 1G -- sh -c 'echo "$KMUX_SOCKET" >"$1"' sh "$TMP/run-sock"
check "  ... and hands its job the system socket" [ "$(cat "$TMP/run-sock")" = "$KMUX_SOCKET" ]
stop_daemon
id=$(as_user "$KMUX" submit -- echo per-user)
check "with the system daemon gone, submit starts a per-user one" [ -S "$TMP/xdg/kmux/sock" ]
KMUX_SOCKET=$TMP/xdg/kmux/sock expect_rc 0 "  ... which runs the job" "$KMUX" wait "$id"
# A client that lost its daemon finds that daemon again, not another one:
# with the system daemon back, `kmux wait` on a per-user job whose daemon
# died must not ask the system daemon, which has a job of the same id
# (exited 0), but wait for the per-user one.
expect_rc 0 "the system daemon is back" start_daemon
u=$(as_user "$KMUX" submit -- sleep 2)
check "a per-user job ($u) the system daemon also has an id for" \
	[ "$(jq_job "$u" 'j["state"]')" = exited ]
as_user "$KMUX" wait "$u" >"$TMP/uw.out" 2>"$TMP/uw.err" &
w=$!
sleep 0.5
p=$(cat "$TMP/xdg/kmux/sock.lock" 2>/dev/null)
[ -n "$p" ] && kill -9 "$p" 2>/dev/null
sleep 1
as_user "$KMUX" daemon
wait "$w"
check "  ... wait found the per-user daemon again (125: its code unknown there), not the system one's job (0)" [ $? -eq 125 ]
p=$(cat "$TMP/xdg/kmux/sock.lock" 2>/dev/null)
[ -n "$p" ] && kill "$p" 2>/dev/null
stop_daemon
unset KMUX_SYSTEM_SOCKET
finish
