# tests/slurm/cluster.sh - a one-machine Slurm cluster for kmux's tests,
# sourced by tests/slurm/run.sh (not named t*.sh: not a test itself).
#
# One private munged, one slurmctld and two slurmd (nodes n1 and n2, both
# on localhost with their own ports, spool and logs), each node with two
# fake GPUs in gres.conf (gpu, shard and the count-only kmuxmem) and a kmuxd
# of its own on the simulated driver.  Everything lives under $SC (a fresh
# directory in /tmp, an exec-able filesystem); cluster_stop kills what
# cluster_start started, by pid, and removes it.
#
# Exports for the tests: SLURM_CONF, SC, KS_SOCK_n1/n2 (kmuxd sockets),
# SC_NODE_MEM_MIB, SC_GPU_MEM.  Requires root (slurmd runs jobs as their
# users) and installs the Debian packages when they are missing.

SC_PKGS="slurmctld slurmd slurm-client munge libslurm-dev"
SC_NODES="n1 n2"
# Two simulated GPUs of 1 GiB per node: kmuxmem 2048 MiB a node.
SC_GPUS=2
SC_GPU_MEM=1G
SC_NODE_MEM_MIB=2048
SC_PORT=${KMUX_SLURM_PORT:-16817}
SC_PIDS=""

sc_log() { echo "cluster: $*"; }

# Install what is missing (CI, or a developer's root shell).
cluster_install() {
	local p missing=""
	for p in $SC_PKGS; do
		dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"
	done
	[ -z "$missing" ] && return 0
	sc_log "installing$missing"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq >/dev/null && apt-get install -y -qq $missing >/dev/null
}

# CPUs this machine has, as slurmd sees them: a node may not claim more.
sc_cpus() {
	/usr/sbin/slurmd -C 2>/dev/null | sed -n 's/.* CPUs=\([0-9]*\).*/\1/p' | head -1
}

sc_write_config() {
	local cpus port i n
	cpus=$(sc_cpus)
	[ -n "$cpus" ] || cpus=1
	mkdir -p "$SC/etc" "$SC/state" "$SC/log" "$SC/run" "$SC/dev" "$SC/munge"
	cat >"$SC/etc/slurm.conf" <<EOF
ClusterName=kmuxtest
SlurmctldHost=localhost
SlurmctldPort=$SC_PORT
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$SC/munge/munge.sock
CredType=cred/munge
StateSaveLocation=$SC/state
SlurmdSpoolDir=$SC/spool/%n
SlurmctldPidFile=$SC/run/slurmctld.pid
SlurmdPidFile=$SC/run/slurmd.%n.pid
SlurmctldLogFile=$SC/log/slurmctld.log
SlurmdLogFile=$SC/log/slurmd.%n.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
ReturnToService=2
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
GresTypes=gpu,shard,kmuxmem
JobSubmitPlugins=lua
PlugStackConfig=$SC/etc/plugstack.conf
MessageTimeout=10
InactiveLimit=0
KillWait=2
MinJobAge=600
SlurmdTimeout=300
# Start a job as soon as it is submitted and whenever resources free up:
# the tests time what waits for what.
SchedulerParameters=batch_sched_delay=0,sched_min_interval=100000,bf_interval=1
EOF
	i=0
	for n in $SC_NODES; do
		i=$((i + 1))
		port=$((SC_PORT + i))
		echo "NodeName=$n NodeHostname=localhost NodeAddr=127.0.0.1 Port=$port CPUs=$cpus Gres=gpu:$SC_GPUS,shard:4,kmuxmem:$SC_NODE_MEM_MIB State=UNKNOWN" \
			>>"$SC/etc/slurm.conf"
		# gres/gpu wants character devices; nothing ever opens them.
		ln -s /dev/null "$SC/dev/$n-gpu0"
		ln -s /dev/zero "$SC/dev/$n-gpu1"
		cat >>"$SC/etc/gres.conf" <<EOF
NodeName=$n Name=gpu File=$SC/dev/$n-gpu[0-1]
NodeName=$n Name=shard Count=4
NodeName=$n Name=kmuxmem Count=$SC_NODE_MEM_MIB
EOF
		mkdir -p "$SC/spool/$n" "$SC/kmux/$n"
		chmod 700 "$SC/kmux/$n"
	done
	echo "PartitionName=test Nodes=$(echo $SC_NODES | tr ' ' ,) Default=YES MaxTime=INFINITE State=UP" \
		>>"$SC/etc/slurm.conf"
	cp "$ROOT/contrib/slurm/job_submit.lua" "$SC/etc/job_submit.lua"
	plugstack_write ""
}

# plugstack_write EXTRA: the plugin's line, with EXTRA arguments (strict...).
plugstack_write() {
	echo "required $BUILD/kmux_spank.so lib=$BUILD/libkmux.so socket=$SC/kmux/%n/sock $1" \
		>"$SC/etc/plugstack.conf"
}

sc_start_munge() {
	dd if=/dev/urandom of="$SC/munge/munge.key" bs=1024 count=1 status=none
	chmod 400 "$SC/munge/munge.key"
	chmod 700 "$SC/munge"
	munged --force --socket="$SC/munge/munge.sock" \
		--key-file="$SC/munge/munge.key" \
		--pid-file="$SC/munge/munged.pid" \
		--log-file="$SC/munge/munged.log" \
		--seed-file="$SC/munge/munged.seed" || return 1
	SC_PIDS="$SC_PIDS $(cat "$SC/munge/munged.pid")"
}

# sc_wait TENTHS COMMAND...: until COMMAND succeeds.
sc_wait() {
	local n=$1 i
	shift
	for i in $(seq "$n"); do
		"$@" >/dev/null 2>&1 && return 0
		sleep 0.1
	done
	return 1
}

sc_nodes_idle() {
	[ "$(sinfo -h -N -o '%N %t' | grep -c ' idle$')" -eq 2 ]
}

# kmuxd_start NODE [ARGS...]: the node's kmuxd, weights on, 1 s apart.
kmuxd_start() {
	local n=$1
	shift
	KMUX_FAKE_GPUS=$SC_GPUS:$SC_GPU_MEM "$KMUX" daemon \
		--socket "$SC/kmux/$n/sock" --state-dir "$SC/kmux/$n/state" \
		--slurm-node "$n" --slurm-interval 1 "$@" || return 1
	SC_PIDS="$SC_PIDS $(cat "$SC/kmux/$n/sock.lock")"
}

kmuxd_stop() {
	local p
	p=$(cat "$SC/kmux/$1/sock.lock" 2>/dev/null)
	[ -n "$p" ] || return 0
	kill "$p" 2>/dev/null
	sc_wait 50 sh -c "! kill -0 $p"
}

cluster_start() {
	local n
	if [ "$(id -u)" -ne 0 ]; then
		echo "cluster: needs root (slurmd runs the jobs as their users)" >&2
		return 1
	fi
	cluster_install || { echo "cluster: cannot install $SC_PKGS" >&2; return 1; }
	SC=$(mktemp -d /tmp/kmux-slurm.XXXXXX)
	chmod 755 "$SC"
	export SC SLURM_CONF=$SC/etc/slurm.conf
	sc_write_config
	sc_start_munge || { echo "cluster: munged did not start" >&2; return 1; }
	/usr/sbin/slurmctld -c -f "$SLURM_CONF" || return 1
	sc_wait 50 test -s "$SC/run/slurmctld.pid" || return 1
	SC_PIDS="$SC_PIDS $(cat "$SC/run/slurmctld.pid")"
	for n in $SC_NODES; do
		/usr/sbin/slurmd -f "$SLURM_CONF" -N "$n" || return 1
		sc_wait 50 test -s "$SC/run/slurmd.$n.pid" || return 1
		SC_PIDS="$SC_PIDS $(cat "$SC/run/slurmd.$n.pid")"
	done
	if ! sc_wait 200 sc_nodes_idle; then
		echo "cluster: nodes not idle:" >&2
		sinfo -N >&2
		return 1
	fi
	for n in $SC_NODES; do
		kmuxd_start "$n" || { echo "cluster: kmuxd on $n did not start" >&2; return 1; }
		export "KS_SOCK_$n=$SC/kmux/$n/sock"
	done
	sc_log "up: $(sinfo -h -N -o '%N:%t' | tr '\n' ' ')in $SC"
}

# Everything we started, by pid; then the directory (kept with
# KMUX_SLURM_KEEP=1, for a post-mortem).
cluster_stop() {
	local p n
	[ -n "${SC:-}" ] || return 0
	scancel --full --quiet -u root >/dev/null 2>&1
	for n in $SC_NODES; do
		p=$(cat "$SC/kmux/$n/sock.lock" 2>/dev/null)
		[ -n "$p" ] && SC_PIDS="$SC_PIDS $p"
		p=$(cat "$SC/run/slurmd.$n.pid" 2>/dev/null)
		[ -n "$p" ] && SC_PIDS="$SC_PIDS $p"
	done
	p=$(cat "$SC/run/slurmctld.pid" 2>/dev/null)
	[ -n "$p" ] && SC_PIDS="$SC_PIDS $p"
	p=$(cat "$SC/munge/munged.pid" 2>/dev/null)
	[ -n "$p" ] && SC_PIDS="$SC_PIDS $p"
	for p in $SC_PIDS; do kill "$p" 2>/dev/null; done
	sleep 0.5
	for p in $SC_PIDS; do kill -9 "$p" 2>/dev/null; done
	# slurmstepd of steps still running: ours only (their spool is in $SC).
	for p in $(pgrep -x slurmstepd 2>/dev/null); do
		grep -q "$SC" "/proc/$p/cmdline" "/proc/$p/environ" 2>/dev/null &&
			kill -9 "$p" 2>/dev/null
	done
	if [ "${KMUX_SLURM_KEEP:-0}" = 1 ]; then
		sc_log "kept $SC"
	else
		rm -rf "$SC"
	fi
}
