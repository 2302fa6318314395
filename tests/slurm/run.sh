#!/usr/bin/env bash
# tests/slurm/run.sh - `make test-slurm`: start the one-machine Slurm
# cluster (cluster.sh), run every tests/slurm/t*.sh against it, stop it.
# Exit 0 when every test passed.  Needs root; installs Slurm and munge.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${BUILD:-build}
case $BUILD in /*) ;; *) BUILD=$ROOT/$BUILD ;; esac
KMUX=$BUILD/kmux
export BUILD

. "$ROOT/tests/slurm/cluster.sh"
trap cluster_stop EXIT
cluster_install || { echo "test-slurm: cannot install $SC_PKGS" >&2; exit 1; }
# The plugin needs Slurm's headers, which cluster_install just provided.
make -C "$ROOT" --no-print-directory BUILD="$BUILD" slurm >/dev/null || exit 1
[ -f "$BUILD/kmux_spank.so" ] || { echo "test-slurm: no $BUILD/kmux_spank.so" >&2; exit 1; }
start=$(date +%s)
cluster_start || { echo "test-slurm: the cluster did not start" >&2; exit 1; }

failed=0
for t in "$ROOT"/tests/slurm/t*.sh; do
	if [ -n "${1:-}" ] && [[ $(basename "$t") != $1* ]]; then
		continue
	fi
	echo "== $(basename "$t" .sh)"
	bash "$t" || failed=$((failed + 1))
done
echo "test-slurm: $failed test(s) failed, $(( $(date +%s) - start )) s"
if [ "$failed" -ne 0 ]; then
	for f in "$SC"/log/*.log "$SC"/kmux/*/state/kmuxd.log; do
		echo "--- $f"; tail -n 15 "$f"
	done
fi
[ "$failed" -eq 0 ]
