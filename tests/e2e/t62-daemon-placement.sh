#!/usr/bin/env bash
# Placement over two simulated GPUs: two 10 GiB jobs go to different GPUs
# (the memory term spreads them), a 2-GPU job gets both GPUs and sees both
# in CUDA_VISIBLE_DEVICES, and a job that fits on neither waits.  Then
# --placement: after a job on GPU 1 ended, busyness sends the next job to
# the now empty GPU 1, roundrobin to GPU 0 (placed on longest ago); a bad
# name is a usage error.
. "$(dirname "$0")/lib.sh"
export KMUX_FAKE_GPUS=2:16G
. "$(dirname "$0")/kmuxd-lib.sh"

start_daemon
a=$("$KMUX" submit -m 10G -- sleep 6)
b=$("$KMUX" submit -m 10G -- sleep 6)
check "job $a runs" wait_state "$a" running
check "job $b runs at the same time" wait_state "$b" running
check "the first went to GPU 0" [ "$(jq_job "$a" 'j["gpus"]')" = "[0]" ]
check "the second went to GPU 1" [ "$(jq_job "$b" 'j["gpus"]')" = "[1]" ]
c=$("$KMUX" submit -g 2 -m 4G -- sh -c 'echo "CVD=$CUDA_VISIBLE_DEVICES"')
"$KMUX" wait "$c"
check "a 2-GPU job of 4 GiB each fits beside them" [ $? -eq 0 ]
check "  ... on both GPUs" [ "$(jq_job "$c" 'j["gpus"], j["ngpus"]')" = "([0, 1], 2)" ]
check "  ... and sees both" grep -Eqx "CVD=(0,1|1,0)" <("$KMUX" logs "$c")
d=$("$KMUX" submit -m 8G -- true)
sleep 0.3
check "an 8 GiB job waits: 10 + 8 fit on neither GPU" [ "$(jq_job "$d" 'j["state"]')" = queued ]
check "top: 10 GiB committed on each GPU" [ "$(top_json '[g["mem_committed"] >> 30 for g in t["gpus"]]')" = "[10, 10]" ]
check "top: one task on each" [ "$(top_json '[g["tasks"] for g in t["gpus"]]')" = "[1, 1]" ]
"$KMUX" wait "$d"
check "it runs once one of them ended" [ $? -eq 0 ]
check "  ... not before" [ "$(jq_job "$d" 'j["start_us"]')" -ge "$(jq_job "$a" 'min(j["end_us"], 1<<62)')" ] || \
	[ "$(jq_job "$d" 'j["start_us"]')" -ge "$(jq_job "$b" 'j["end_us"]')" ]
stop_daemon

# place3 PLACEMENT: a long job (GPU 0), a short one (GPU 1) that ends, then
# a third; prints the third's GPUs.
place3() {
	local a b c
	"$KMUX" daemon --kill-grace 1 --placement "$1" || return 1
	a=$("$KMUX" submit -m 2G -- sleep 15)
	b=$("$KMUX" submit -m 2G -- true)
	"$KMUX" wait "$b" >/dev/null 2>&1
	c=$("$KMUX" submit -m 2G -- true)
	"$KMUX" wait "$c" >/dev/null 2>&1
	printf '%s %s %s\n' "$(jq_job "$a" 'j["gpus"]')" "$(jq_job "$b" 'j["gpus"]')" \
		"$(jq_job "$c" 'j["gpus"]')"
	"$KMUX" cancel -s KILL "$a" >/dev/null 2>&1
	stop_daemon
}
check "--placement busyness: the third job goes to the empty GPU 1" \
	[ "$(place3 busyness)" = "[0] [1] [1]" ]
grep -q "placement busyness" "$KMUX_STATE_DIR/kmuxd.log"
check "  ... and the daemon's log names the placement" [ $? -eq 0 ]
check "--placement roundrobin: it goes to GPU 0, placed on longest ago" \
	[ "$(place3 roundrobin)" = "[0] [1] [0]" ]
check "  ... and the daemon's log names it" grep -q "placement roundrobin" "$KMUX_STATE_DIR/kmuxd.log"
expect_rc 2 "--placement round-robin is a usage error" "$KMUX" daemon --placement round-robin
check "  ... that names the choices" err_has "bad --placement 'round-robin' (busyness or roundrobin)"
check "  ... and no daemon was started" [ ! -S "$KMUX_SOCKET" ]
finish
