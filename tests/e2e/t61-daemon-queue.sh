#!/usr/bin/env bash
# Memory-safe queueing on one simulated 16 GiB GPU: two 10 GiB jobs never
# run together (the second starts after the first ended, by the daemon's
# own timestamps), and a 4 GiB job that fits beside the first is started
# ahead of the waiting one (backfill).
. "$(dirname "$0")/lib.sh"
export KMUX_FAKE_GPUS=1:16G
. "$(dirname "$0")/kmuxd-lib.sh"

start_daemon
# The first job holds until the test has looked (a fixed sleep ran out
# under CI's load before ps and top were asked), 60 s at most.
a=$("$KMUX" submit -m 10G -n first -- sh -c \
	"i=0; while [ ! -e '$TMP/release' ] && [ \$i -lt 1200 ]; do sleep 0.05; i=\$((i + 1)); done")
b=$("$KMUX" submit -m 10G -n second -- true)
c=$("$KMUX" submit -m 4G -n small -- true)
check "the first 10 GiB job runs" wait_state "$a" running
check "the second 10 GiB job waits: 20 GiB do not fit in 16" [ "$(jq_job "$b" 'j["state"]')" = queued ]
"$KMUX" ps >"$TMP/ps"
check "ps shows it queued" grep -q "^ *$b  queued" "$TMP/ps"
"$KMUX" top --once >"$TMP/top"
check "top shows 10 GiB committed on GPU 0" grep -q "^  0 .*10.00 GiB (62%)" "$TMP/top"
"$KMUX" wait "$c"
check "the 4 GiB job ran beside the first (backfill)" [ $? -eq 0 ]
check "  ... and started before the first ended" \
	[ "$(jq_job "$a" 'j["state"]')" = running ]
touch "$TMP/release"
"$KMUX" wait "$b"
check "the second job ran in the end" [ $? -eq 0 ]
a_end=$(jq_job "$a" 'j["end_us"]')
b_start=$(jq_job "$b" 'j["start_us"]')
c_start=$(jq_job "$c" 'j["start_us"]')
check "the second started after the first ended ($b_start >= $a_end)" [ "$b_start" -ge "$a_end" ]
check "  ... and within a second of it" [ $((b_start - a_end)) -lt 1000000 ]
check "the small one started while the first ran ($c_start < $a_end)" [ "$c_start" -lt "$a_end" ]
check "nothing is committed once all ended" [ "$(top_json 't["gpus"][0]["mem_committed"]')" = 0 ]
finish
