#!/bin/sh
# mps-control-stub.sh - a stand-in for nvidia-cuda-mps-control in the dry
# and simulated modes of bench/jobmix.sh and bench/memory-mix.sh: -d starts
# "a daemon" (a marker file in $CUDA_MPS_PIPE_DIRECTORY), a command on stdin
# needs it and is logged to $CUDA_MPS_LOG_DIRECTORY/control.log, quit
# removes it.
m=$CUDA_MPS_PIPE_DIRECTORY/stub-running
if [ "${1:-}" = -d ]; then touch "$m"; echo "stub: started" >>"$CUDA_MPS_LOG_DIRECTORY/control.log"; exit 0; fi
[ -e "$m" ] || { echo "stub: no MPS daemon" >&2; exit 1; }
read -r c
echo "stub: $c" >>"$CUDA_MPS_LOG_DIRECTORY/control.log"
[ "$c" = quit ] && rm -f "$m"
exit 0
