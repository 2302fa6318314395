# tests/slurm/lib.sh - sourced by each tests/slurm/t*.sh, after run.sh has
# started the cluster (cluster.sh) and exported SC and SLURM_CONF.
#
# The e2e helpers (check, ok, fail, finish, $TMP, $KMUX, $PROGS, the
# simulated driver on LD_LIBRARY_PATH), plus what the Slurm tests share.
. "$(dirname "${BASH_SOURCE[0]}")/../e2e/lib.sh"

# Tasks see two simulated GPUs of 1 GiB, like the nodes' kmuxd.
export SIMCUDA_DEVICES=2 SIMCUDA_MEM_BYTES=1G
# Jobs run in $TMP: the same host, and removed with it.
cd "$TMP" || exit 1

# Nothing may hang: every Slurm command gets a bound.
T_SRUN() { timeout 60 srun "$@"; }

# kmux_on NODE ARGS...: kmux talking to NODE's kmuxd.
kmux_on() {
	local n=$1
	shift
	KMUX_SOCKET=$SC/kmux/$n/sock "$KMUX" "$@"
}

node_weight() {
	scontrol -o show node "$1" | tr ' ' '\n' | sed -n 's/^Weight=//p'
}

job_field() {	# job_field JOBID FIELD: scontrol's value of FIELD
	scontrol -o show job "$1" | tr ' ' '\n' | sed -n "s/^$2=//p"
}

# wait_until TENTHS COMMAND...: until COMMAND succeeds.
wait_until() {
	local n=$1 i
	shift
	for i in $(seq "$n"); do
		"$@" >/dev/null 2>&1 && return 0
		sleep 0.1
	done
	return 1
}

job_state_is() { [ "$(job_field "$1" JobState)" = "$2" ]; }

has() { grep -q -- "$2" "$1"; }
hasx() { grep -qxF -- "$2" "$1"; }

skip() { echo "  SKIP $T_NAME: $*"; }

# cond 'SHELL CONDITION': for check, with pipes, && or ||.
cond() { eval "$1"; }
