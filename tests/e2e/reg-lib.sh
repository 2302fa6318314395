# tests/e2e/reg-lib.sh - helpers for the registration tests (t6b, t6c, t6g):
# sourced after lib.sh and kmuxd-lib.sh.  R is tests/e2e/progs/reg.c, a
# CUDA program that knows nothing of kmux.
R=$PROGS/reg

# has FILE LINE: FILE has exactly that line.
has() { grep -qx "$2" "$1"; }

# job_of NAME: the id of the newest job called NAME ("" when none).
job_of() {
	"$KMUX" ps --all --json | python3 -c '
import json, sys
ids = [j["id"] for j in json.load(sys.stdin) if j["name"] == sys.argv[1]]
print(max(ids) if ids else "")' "$1"
}

# wait_job NAME: until a job called NAME exists (the process registered).
wait_job() {
	local i
	for i in $(seq 100); do
		[ -n "$(job_of "$1")" ] && return 0
		sleep 0.1
	done
	return 1
}

# wait_line FILE LINE [TENTHS]: until FILE has the line (default 10 s).
wait_line() {
	local i
	for i in $(seq "${3:-100}"); do
		grep -qx "$2" "$1" 2>/dev/null && return 0
		sleep 0.1
	done
	return 1
}
