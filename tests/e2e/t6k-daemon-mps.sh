#!/usr/bin/env bash
# kmux daemon --mps with a stand-in nvidia-cuda-mps-control: the daemon
# starts it once (-d) with its private 0700 pipe and log directories and
# a clean environment; jobs of `kmux run` and `kmux submit` get
# CUDA_MPS_PIPE_DIRECTORY/CUDA_MPS_LOG_DIRECTORY naming them, jobs of a
# daemon without --mps get neither; SIGTERM quits it; a kill -9 restart
# re-uses the one that still answers (no second -d) and starts a new one
# when it is gone; a failed start, a missing binary and bad options are
# clear errors with the right exit status.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/kmuxd-lib.sh"

STUB_DIR=$TMP/stub
CALLS=$TMP/mps-calls
mkdir -p "$STUB_DIR"
# The stand-in: -d "starts the daemon" (a marker in the pipe directory),
# get_server_list answers while the marker is there, quit removes it.
# Every call is recorded with the environment it got.
cat >"$STUB_DIR/nvidia-cuda-mps-control" <<EOS
#!/bin/sh
m=\$CUDA_MPS_PIPE_DIRECTORY/stub-running
if [ "\${1:-}" = -d ]; then
	echo "-d pipe=\$CUDA_MPS_PIPE_DIRECTORY log=\$CUDA_MPS_LOG_DIRECTORY cvd=\${CUDA_VISIBLE_DEVICES-unset} preload=\${LD_PRELOAD-unset}" >>"$CALLS"
	if [ -n "\${MPS_STUB_FAIL:-}" ]; then
		echo "stub: cannot start: no GPU" >&2
		exit 3
	fi
	touch "\$m"
	exit 0
fi
read -r cmd
echo "\$cmd pipe=\$CUDA_MPS_PIPE_DIRECTORY" >>"$CALLS"
case \$cmd in
get_server_list) [ -e "\$m" ] ;;
quit) [ -e "\$m" ] && rm -f "\$m" ;;
*) exit 1 ;;
esac
EOS
chmod +x "$STUB_DIR/nvidia-cuda-mps-control"
PIPE=$KMUX_SOCKET.mps/pipe
LOGD=$KMUX_SOCKET.mps/log
JOBENV='echo "pipe=${CUDA_MPS_PIPE_DIRECTORY:-none} log=${CUDA_MPS_LOG_DIRECTORY:-none}"'
ndash_d() { grep -c '^-d ' "$CALLS" 2>/dev/null || true; }

# --- bad usage and failures: nothing left running ------------------------
expect_rc 2 "--mps-control without --mps is a usage error" \
	"$KMUX" daemon --mps-control "$STUB_DIR/nvidia-cuda-mps-control"
check "  ... says so" err_has "needs --mps"
expect_rc 2 "--mps with --system is a usage error" "$KMUX" daemon --mps --system
check "  ... says why" err_has "per-user only"
expect_rc 1 "a --mps-control that does not exist: exit 1" \
	"$KMUX" daemon --mps --mps-control "$TMP/no-such-control"
check "  ... naming it" err_has "$TMP/no-such-control"
check "  ... and no daemon listens" [ ! -e "$KMUX_SOCKET" ]
if [ ! -x /usr/local/nvidia/bin/nvidia-cuda-mps-control ]; then
	expect_rc 1 "no nvidia-cuda-mps-control in PATH: exit 1" \
		env PATH=/usr/bin:/bin "$KMUX" daemon --mps
	check "  ... says where it looked" \
		err_has "nvidia-cuda-mps-control not found in PATH or /usr/local/nvidia/bin"
fi
MPS_STUB_FAIL=1 expect_rc 1 "a control daemon that fails to start: exit 1" \
	"$KMUX" daemon --mps --mps-control "$STUB_DIR/nvidia-cuda-mps-control"
check "  ... says so, with its status" \
	err_has "the MPS control daemon did not start: .*-d exited with status 3"
check "  ... its own complaint shown too" err_has "stub: cannot start: no GPU"
check "  ... and no daemon listens" [ ! -e "$KMUX_SOCKET" ]
rm -f "$CALLS"

# --- a daemon with --mps: found in PATH, started once --------------------
export PATH=$STUB_DIR:$PATH
CUDA_VISIBLE_DEVICES=7 LD_PRELOAD=$LIBKMUX \
	expect_rc 0 "kmux daemon --mps starts" start_daemon --mps
check "the control daemon was started once, with -d" [ "$(ndash_d)" = 1 ]
check "  ... with the pipe and log directories under the socket's" \
	grep -qx -- "-d pipe=$PIPE log=$LOGD cvd=unset preload=unset" "$CALLS"
check "  ... which are private (0700)" \
	cond '[ "$(stat -c %a "$PIPE")" = 700 ] && [ "$(stat -c %a "$LOGD")" = 700 ] && [ "$(stat -c %a "$KMUX_SOCKET.mps")" = 700 ]'
check "  ... and answered get_server_list before any admission" \
	grep -qx "get_server_list pipe=$PIPE" "$CALLS"
check "the daemon logs it" grep -q "mps: started $STUB_DIR/nvidia-cuda-mps-control -d; jobs run as clients of the MPS daemon in $PIPE" \
	"$KMUX_STATE_DIR/kmuxd.log"

expect_rc 0 "kmux run --gpus 1 runs" "$KMUX" run --gpus 1 -- sh -c "$JOBENV"
check "  ... with CUDA_MPS_PIPE/LOG_DIRECTORY set to the daemon's" \
	grep -qx "pipe=$PIPE log=$LOGD" "$TMP/out"
j=$("$KMUX" submit --gpus 1 -- sh -c "$JOBENV")
expect_rc 0 "kmux submit's job runs" "$KMUX" wait "$j"
check "  ... with the same directories" grep -qx "pipe=$PIPE log=$LOGD" <("$KMUX" logs "$j")
# The user's own MPS variables lose to kmuxd's.
CUDA_MPS_PIPE_DIRECTORY=/elsewhere \
	expect_rc 0 "kmux run with another CUDA_MPS_PIPE_DIRECTORY" \
	"$KMUX" run --gpus 1 -- sh -c "$JOBENV"
check "  ... gets kmuxd's" grep -qx "pipe=$PIPE log=$LOGD" "$TMP/out"

# --- kill -9 of kmuxd: the control daemon answers and is re-used ---------
kill9_daemon
expect_rc 0 "kmuxd --mps restarts after kill -9" start_daemon --mps
check "  ... re-using the control daemon: no second -d" [ "$(ndash_d)" = 1 ]
check "  ... and says so" grep -q "re-using the MPS control daemon that answers in $PIPE" \
	"$KMUX_STATE_DIR/kmuxd.log"
expect_rc 0 "a job after the restart runs" "$KMUX" run --gpus 1 -- sh -c "$JOBENV"
check "  ... in the same MPS daemon" grep -qx "pipe=$PIPE log=$LOGD" "$TMP/out"

# --- SIGTERM: quit, then it no longer answers -----------------------------
p=$(daemon_pid)
stop_daemon
check "SIGTERM: kmuxd exited" cond '! kill -0 "$p" 2>/dev/null'
check "  ... after quitting the control daemon" grep -qx "quit pipe=$PIPE" "$CALLS"
check "  ... which is gone" [ ! -e "$PIPE/stub-running" ]
check "  ... and logs that it stopped" grep -q "the MPS control daemon in $PIPE stopped" \
	"$KMUX_STATE_DIR/kmuxd.log"

# --- kill -9 with the control daemon gone too: a new one is started -------
expect_rc 0 "kmuxd --mps starts again" start_daemon --mps
check "  ... with a new -d (none answered)" [ "$(ndash_d)" = 2 ]
kill9_daemon
rm -f "$PIPE/stub-running"	# the control daemon died too
expect_rc 0 "kmuxd --mps restarts after both died" start_daemon --mps
check "  ... starting a third -d" [ "$(ndash_d)" = 3 ]
stop_daemon

# --- without --mps: nothing of MPS -----------------------------------------
: >"$CALLS"
expect_rc 0 "kmux daemon without --mps starts" start_daemon
check "  ... never runs the control binary" [ ! -s "$CALLS" ]
check "  ... mentions the directory a kmuxd --mps left" \
	grep -q "$PIPE is left from a kmuxd --mps" "$KMUX_STATE_DIR/kmuxd.log"
expect_rc 0 "kmux run --gpus 1 without --mps" "$KMUX" run --gpus 1 -- sh -c "$JOBENV"
check "  ... sees no MPS variables" grep -qx "pipe=none log=none" "$TMP/out"
j=$("$KMUX" submit --gpus 1 -- sh -c "$JOBENV")
expect_rc 0 "kmux submit without --mps" "$KMUX" wait "$j"
check "  ... sees none either" grep -qx "pipe=none log=none" <("$KMUX" logs "$j")
stop_daemon
exit $T_FAILED
