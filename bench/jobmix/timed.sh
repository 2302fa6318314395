#!/usr/bin/env bash
# timed.sh DIR NAME CMD... - one job of bench/jobmix.sh, the same wrapper in
# every mode (plain, MPS, under kmux): runs CMD with its stdout and stderr
# in DIR/NAME.out and DIR/NAME.err, then writes DIR/NAME.rec:
#     START END RC GPUS        (epoch seconds; GPUS = CUDA_VISIBLE_DEVICES)
# A job killed before it ends leaves no .rec (the benchmark counts it as a
# timeout).  Exits with CMD's status.  DIR "-": $JOBMIX_REC_DIR (under
# kmux, so that the command line, which keys the command's learned profile,
# is the same in every run).
dir=$1 name=$2
[ "$dir" = - ] && dir=${JOBMIX_REC_DIR:?timed.sh: DIR - but no JOBMIX_REC_DIR}
shift 2
start=$(date +%s.%N)
"$@" >"$dir/$name.out" 2>"$dir/$name.err" </dev/null
rc=$?
end=$(date +%s.%N)
printf '%s %s %s %s\n' "$start" "$end" "$rc" "${CUDA_VISIBLE_DEVICES:--}" >"$dir/$name.rec.tmp" &&
	mv "$dir/$name.rec.tmp" "$dir/$name.rec"
exit "$rc"
