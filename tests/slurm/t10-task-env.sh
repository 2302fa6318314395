#!/usr/bin/env bash
# A step with --kmux-mem runs under the preload with its quota and Slurm's
# GPU: each task's environment (LD_PRELOAD once, KMUX_*), srun inside sbatch
# (no second preload, the inner step's own name and quota), the kmuxmem
# GRES request job_submit.lua adds, and the quota itself on simcuda.
. "$(dirname "$0")/lib.sh"

LIB=$BUILD/libkmux.so
envof() { grep "^$2=" "$1" | head -1 | cut -d= -f2-; }

T_SRUN -w n1 --gres=shard:1 --kmux-mem=64M env >"$TMP/env" 2>"$TMP/env.err"
check "srun --kmux-mem=64M: exit 0" [ $? -eq 0 ]
check "LD_PRELOAD is the preload, once" [ "$(envof "$TMP/env" LD_PRELOAD)" = "$LIB" ]
check "KMUX_MEM_QUOTA in bytes" [ "$(envof "$TMP/env" KMUX_MEM_QUOTA)" = 67108864 ]
check "KMUX_MEM in bytes" [ "$(envof "$TMP/env" KMUX_MEM)" = 67108864 ]
job=$(envof "$TMP/env" SLURM_JOB_ID)
check "KMUX_NAME=slurm-JOB.STEP.TASK" [ "$(envof "$TMP/env" KMUX_NAME)" = "slurm-$job.0.0" ]
check "KMUX_SOCKET is node n1's kmuxd" [ "$(envof "$TMP/env" KMUX_SOCKET)" = "$SC/kmux/n1/sock" ]
check "Slurm's GPU binding is kept (CUDA_VISIBLE_DEVICES)" [ -n "$(envof "$TMP/env" CUDA_VISIBLE_DEVICES)" ]
check "KMUX_LOG=warn: the preload's warnings reach the job's output" [ "$(envof "$TMP/env" KMUX_LOG)" = warn ]
check "kmuxd answers: no warning" [ ! -s "$TMP/env.err" ]
KMUX_LOG=error T_SRUN -w n1 --kmux-mem=64M env >"$TMP/env2" 2>&1
check "the user's own KMUX_LOG is kept" [ "$(envof "$TMP/env2" KMUX_LOG)" = error ]
check "job_submit.lua asked for kmuxmem:64 (MiB)" \
	cond "job_field $job TresPerNode | grep -q 'kmuxmem:64'"

# Two tasks on a node: a name each; --ntasks-per-node doubles the request.
T_SRUN -w n1 -n 2 --ntasks-per-node=2 --kmux-mem=100M sh -c 'echo "$KMUX_NAME $SLURM_JOB_ID"' >"$TMP/two"
job=$(awk 'NR == 1 { print $2 }' "$TMP/two")
check "two tasks: slurm-J.0.0 and slurm-J.0.1" \
	[ "$(awk '{ print $1 }' "$TMP/two" | sort | tr '\n' ' ')" = "slurm-$job.0.0 slurm-$job.0.1 " ]
check "two tasks per node: kmuxmem:200" cond "job_field $job TresPerNode | grep -q 'kmuxmem:200'"

# The other options.
T_SRUN -w n2 --kmux-streams=4 --kmux-exclusive env >"$TMP/opts"
check "--kmux-streams=4: KMUX_STREAMS=4" [ "$(envof "$TMP/opts" KMUX_STREAMS)" = 4 ]
check "--kmux-exclusive: KMUX_EXCLUSIVE=1" [ "$(envof "$TMP/opts" KMUX_EXCLUSIVE)" = 1 ]
check "no --kmux-mem: no quota" [ -z "$(envof "$TMP/opts" KMUX_MEM_QUOTA)" ]

# No kmux option: the plugin leaves the step alone.
T_SRUN -w n1 env >"$TMP/plain"
check "no kmux option: no preload" [ -z "$(envof "$TMP/plain" LD_PRELOAD)" ]
check "no kmux option: no KMUX_ variable" cond "! grep -v '^KMUX_SLURM_' '$TMP/plain' | grep -q '^KMUX_'"

# sbatch --kmux-mem, and srun inside it.
cat >"$TMP/batch.sh" <<'EOS'
#!/bin/bash
echo "batch $LD_PRELOAD $KMUX_NAME $KMUX_MEM_QUOTA"
srun sh -c 'echo "step $LD_PRELOAD $KMUX_NAME $KMUX_MEM_QUOTA"'
srun --kmux-mem=32M sh -c 'echo "step2 $LD_PRELOAD $KMUX_NAME $KMUX_MEM_QUOTA"'
EOS
job=$(sbatch --parsable -w n1 --kmux-mem=64M -o "$TMP/batch.out" "$TMP/batch.sh")
wait_until 300 job_state_is "$job" COMPLETED
check "sbatch --kmux-mem: the batch job completed" job_state_is "$job" COMPLETED
check "the batch script runs under the preload" hasx "$TMP/batch.out" "batch $LIB slurm-$job.batch.0 67108864"
check "srun inside sbatch: the preload once, the step's own name" hasx "$TMP/batch.out" "step $LIB slurm-$job.0.0 67108864"
check "srun --kmux-mem inside sbatch: its own quota" hasx "$TMP/batch.out" "step2 $LIB slurm-$job.1.0 33554432"

# The quota on the simulated GPU: 64 MiB, then out of memory.
T_SRUN -w n1 --gres=shard:1 --kmux-mem=64M "$PROGS/quota" >"$TMP/q" 2>&1
check "quota program under srun: exit 0" [ $? -eq 0 ]
check "cuMemGetInfo reports the 64 MiB quota" hasx "$TMP/q" "info0 total=64 free=64"
check "the task gets exactly its 64 MiB" hasx "$TMP/q" "got 64"
finish
