#!/usr/bin/env bash
# streams-torch.sh - a short follow-up to bench/streams.sh for the PyTorch
# programs alone (googlenet, ensemble in one process): kmux verify once, then
# ROUNDS rounds of plain and `kmux run --streams N`, alternating, each a fresh
# process; every run's RESULT lines and kmux's exit statistics go to
# $OUT/streams-torch.log.  Run on the GPU machine with build/ carried:
#
#     ROUNDS=3 N=8 bash bench/streams-torch.sh
set -u
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1
OUT=${OUT:-./out}
mkdir -p "$OUT"
LOG=$OUT/streams-torch.log
ROUNDS=${ROUNDS:-3}
N=${N:-8}
PY=${PYTHON:-python3}
KMUX="env LD_LIBRARY_PATH=build/devlibs KMUX_LOG=info build/kmux"
SUITE="bench/apps/py/torch_suite.py plain --apps googlenet,ensemble --reps 5 --warmup 3"
{
	echo "# $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1)"
	echo "# git: $(git rev-parse --short HEAD 2>/dev/null)"
	echo "## verify: $KMUX verify --streams $N -- $PY bench/apps/py/torch_suite.py plain --apps googlenet,ensemble --reps 1 --warmup 1"
	timeout 120 $KMUX verify --streams "$N" -- $PY bench/apps/py/torch_suite.py plain \
		--apps googlenet,ensemble --reps 1 --warmup 1 2>&1 | tail -15
	echo "verify rc=${PIPESTATUS[0]}"
	for r in $(seq 1 "$ROUNDS"); do
		echo "## round $r plain: $PY $SUITE"
		timeout 60 $PY $SUITE 2>&1 | grep -E '^RESULT|^CHECK|Error'
		echo "## round $r kmux$N: $KMUX run --streams $N -- $PY $SUITE"
		timeout 60 $KMUX run --streams "$N" -- $PY $SUITE 2>&1 |
			grep -E '^RESULT|^CHECK|kmux:|Error'
	done
} >"$LOG" 2>&1
grep -E "RESULT|verify rc|streams: pid|identical|differ" "$LOG" | head -40
