#!/usr/bin/env bash
# A job whose process dies (kill -9 from outside) is reaped at once: within
# 1 s ps shows it exited by SIGKILL, its memory is no longer committed, and
# the job waiting for that memory has started.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/kmuxd-lib.sh"

now_us() { python3 -c 'import time; print(int(time.time() * 1e6))'; }

start_daemon
a=$("$KMUX" submit -m 10G -- sleep 100)
b=$("$KMUX" submit -m 10G -- sleep 100)
check "job $a runs" wait_state "$a" running
check "10 GiB committed" [ "$(top_json 't["gpus"][0]["mem_committed"] >> 30')" = 10 ]
pid=$(jq_job "$a" 'j["pid"]')
t0=$(now_us)
kill -9 "$pid"
reaped=""
# Each look is a `kmux ps` and a Python: on a loaded machine the looking
# alone can take longer than the reaping, so the 1 s is judged by the
# daemon's own record of when it reaped (end_us), and the looking only
# has to see it happen.
for i in $(seq 200); do
	if [ "$(jq_job "$a" 'j["state"]')" = exited ]; then
		reaped=$(now_us)
		break
	fi
	sleep 0.05
done
check "ps shows it exited (seen $(( (${reaped:-0} - t0) / 1000 )) ms after the kill)" [ -n "$reaped" ]
end=$(jq_job "$a" 'j["end_us"]')
check "  ... reaped within 1 s: kmuxd recorded its end $(( (${end:-0} - t0) / 1000 )) ms after the kill" \
	cond '[ -n "$end" ] && [ "$end" -ge "$t0" ] && [ $((end - t0)) -lt 1000000 ]'
check "  ... exited by SIGKILL, no exit code" [ "$(jq_job "$a" 'j["signal"], j["exit_code"]')" = "('KILL', None)" ]
check "its memory went to the waiting job" wait_state "$b" running 10
check "  ... which started within 1 s of the kill" [ $(( $(jq_job "$b" 'j["start_us"]') - t0 )) -lt 1000000 ]
check "10 GiB committed (job $b's), not 20" [ "$(top_json 't["gpus"][0]["mem_committed"] >> 30')" = 10 ]
"$KMUX" cancel -s KILL "$b"
"$KMUX" wait "$b" >/dev/null 2>&1
check "nothing committed at the end" [ "$(top_json 't["gpus"][0]["mem_committed"]')" = 0 ]
finish
