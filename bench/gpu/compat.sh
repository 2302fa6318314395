#!/usr/bin/env bash
# compat.sh - GPU compatibility of kmux (issue 2, item 7).  Run on the GPU
# machine from the repo root (run-all.sh calls it): `bash bench/gpu/compat.sh`.
#
# Builds the test programs of bench/gpu/progs with nvcc into a scratch dir
# under /tmp, then runs each one four ways:
#   plain                      the program alone (the reference)
#   bare                       LD_PRELOAD=build/libkmux.so PROGRAM
#   trace                      build/kmux trace -o T.json -- PROGRAM
#   timing                     build/kmux trace --timing -o T.json -- PROGRAM
# and checks that every kmux run exits 0 with stdout byte-identical to the
# plain run, and that each trace holds kernel events ("cat":"kernel") with
# the program's kernel names.  KMUX_COMPAT_MODES="streams verify" runs the
# stream scheduler's modes instead (issue 3 on real stacks):
#   streams                    build/kmux run --streams N -- PROGRAM
#   verify                     build/kmux verify --stdout --streams N -- PROGRAM
# (N: KMUX_COMPAT_STREAMS, default 16); verify passes when it reports
# identical copies and stdout.  KMUX_COMPAT_PROGS="id ..." picks programs.  The PyTorch program is run plain twice: only
# if those two differ (not deterministic) are the kmux runs compared with a
# tolerance, and the table says so.  A program whose stack is missing is a
# SKIP, never a PASS.
#
# Output under $OUT (default ./out): compat.log (every run's stdout and the
# tail of its stderr), compat.md (table, date, GPU, driver, commands),
# compat-traces.json (small trace summaries), trace-drv_api.json (one small
# trace, as an example of the format).  Exit status 0 when nothing FAILed.
set -u
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

LOG=$OUT/compat.log
: >"$LOG"
ROWS=$WORK/compat.rows.tsv
CMDS=$WORK/compat.cmds
BUILD_LOG=$WORK/compat.build.log
: >"$BUILD_LOG"
: >"$ROWS"
: >"$CMDS"
TOL=0.001	# relative, only for a program shown to be nondeterministic
declare -a EXP=()

log "compat: start (OUT=$OUT, scratch $WORK, $(time_left)s of budget left)"
log "compat: GPU $(gpu_line); $(kmux_ident)"
check_stacks
check_kmux

# ------------------------------------------------------------------ build
B=$WORK/bin
build() {
	[ "$HAVE_NVCC" = 1 ] || { log "build: $WHY_NVCC: C/C++ programs SKIP"; return 0; }
	log "build: $NVCC $NVCCFLAGS ($("$NVCC" --version | tail -n 1))"
	# shellcheck disable=SC2086  # NVCCFLAGS is a list of words
	{
		nv "$B/drv_kernels.fatbin" $NVCCFLAGS -fatbin "$PROGS/drv_kernels.cu" &
		nv "$B/drv_lib_kernels.ptx" $NVCCFLAGS -ptx "$PROGS/drv_lib_kernels.cu" &
		nv "$B/drv_api" $NVCCFLAGS -cudart none -x c "$PROGS/drv_api.c" -lcuda &
		nv "$B/rt_shared" $NVCCFLAGS -cudart shared "$PROGS/rt_api.cu" &
		nv "$B/rt_static" $NVCCFLAGS "$PROGS/rt_api.cu" &
		nv "$B/graphs" $NVCCFLAGS -cudart shared "$PROGS/graphs.cu" &
		nv "$B/ptds" $NVCCFLAGS --default-stream per-thread "$PROGS/ptds.cu" &
		nv "$B/cublas_batched" $NVCCFLAGS "$PROGS/cublas_batched.cu" -lcublas &
		wait
	}
	log "build: done ($(ls "$B" | tr '\n' ' '))"
	if [ -s "$BUILD_LOG" ]; then
		logq "--- nvcc output ---"
		cat "$BUILD_LOG" >>"$LOG"
	fi
}

# ------------------------------------------------------------------ rows
# row PROGRAM MODE RC OUTPUT TRACE VERDICT NOTE
row() {
	local f line=""
	for f in "$@"; do
		f=${f//$'\t'/ }
		line="$line${line:+$'\t'}${f//$'\n'/ }"
	done
	printf '%s\n' "$line" >>"$ROWS"
	[ "$6" = PASS ] || log "  -> $1/$2: $6 ${7:-}"
}

# skip_prog PROGRAM REASON: one SKIP row for the whole program
skip_prog() {
	prog_selected "$1" || return 0
	row "$1" "all" "-" "-" "-" "SKIP" "$2"
}

# build_failed PROGRAM: one FAIL row for the whole program
build_failed() {
	row "$1" "all" "-" "-" "-" "FAIL" "nvcc build failed (see compat.log)"
}

# sched_summary STDERR: what the scheduler did, summed over the processes'
# reports ("streams: pid P: ..." at KMUX_LOG=info): how much of the work it
# ordered itself, so that a pass means something.
sched_summary() {
	awk '/streams: pid [0-9]+:/ {
		n++
		if (match($0, /[0-9]+ ops, [0-9]+ barriers/)) {
			split(substr($0, RSTART, RLENGTH), a, " "); ops += a[1]; bar += a[3]
		}
		if (match($0, /waits issued [0-9]+, pruned [0-9]+/)) {
			split(substr($0, RSTART, RLENGTH), a, "[ ,]+"); wi += a[3]; wp += a[5]
		}
		if (match($0, /[0-9]+ passed through/)) {
			split(substr($0, RSTART, RLENGTH), a, " "); pt += a[1]
		}
	}
	END {
		if (!n) { print "no scheduler report"; exit }
		printf "scheduled %d ops, %d barriers, waits issued %d pruned %d, passed through %d", ops, bar, wi, wp, pt
	}' "$1"
}

# ------------------------------------------------------------------ one program
# run_prog ID NONDET_OK TIMEOUT CMD...   (expected kernel regexes in EXP)
#   NONDET_OK=1: run plain twice; if they differ, compare with $TOL.
run_prog() {
	local id=$1 nondet_ok=$2 tmo=$3
	shift 3
	local modes mode so se tr rc dt out trc verdict note
	local deterministic=1 plain_rc=-1 cmpres
	if ! prog_selected "$id"; then
		log "== $id: not in KMUX_COMPAT_PROGS"
		return 0
	fi
	# shellcheck disable=SC2206  # a list of words
	modes=(plain $([ "$nondet_ok" = 1 ] && echo plain2) $COMPAT_MODES)
	log "== $id: $* (expect: ${EXP[*]:-none})"
	for mode in "${modes[@]}"; do
		if ! mode_ok "$mode"; then
			row "$id" "$mode" "-" "-" "-" "SKIP" "kmux not available here (see log)"
			continue
		fi
		if ! have_time 15; then
			row "$id" "$mode" "-" "-" "-" "SKIP" "time budget used up"
			continue
		fi
		so=$WORK/run/$id.$mode.stdout
		se=$WORK/run/$id.$mode.stderr
		tr=$WORK/traces/$id.$mode.json
		rm -f "$tr"
		mode_cmdline "$mode" "$tr" "$@" >>"$CMDS"
		dt=$SECONDS
		run_mode "$mode" "$tr" "$tmo" "$so" "$se" "$@"
		rc=$?
		dt=$((SECONDS - dt))
		log "  $id/$mode: exit $rc in ${dt}s"
		{
			echo "----- $id/$mode: exit $rc, ${dt}s: $(mode_cmdline "$mode" "$tr" "$@")"
			echo "--- stdout:"
			head -c 20000 "$so"
			echo "--- stderr (last 40 lines):"
			tail -n 40 "$se"
		} >>"$LOG"

		verdict=PASS
		note=""
		out="-"
		trc="-"
		if grep -q 'cannot be preloaded' "$se"; then
			verdict=FAIL
			note="ld.so did not load libkmux.so;"
		fi
		if [ "$rc" != 0 ]; then
			verdict=FAIL
			case $rc in
			124 | 137) note="$note timed out after ${tmo}s;" ;;
			*) note="$note exit $rc: $(tail -n 1 "$se" | cut -c1-100);" ;;
			esac
		fi
		case $mode in
		plain)
			plain_rc=$rc
			out="reference"
			;;
		verify)
			# verify ran the program twice itself and compared its
			# copies and its stdout: its verdict is the check
			if [ "$rc" = 0 ] && grep -q 'kmux verify: identical' "$so" "$se"; then
				out="identical"
			else
				out="DIVERGED"
				verdict=FAIL
				note="$note $(grep -h -m1 'kmux verify' "$so" "$se" | cut -c1-160);"
			fi
			;;
		plain2)
			cmpres=$("$PY" "$BENCH/benchtool.py" compare \
				"$WORK/run/$id.plain.stdout" "$so")
			if [ "$cmpres" = identical ]; then
				out="identical"
				note="$note plain runs agree: kmux runs must be identical;"
			else
				deterministic=0
				out="differs"
				note="$note NOT deterministic without kmux ($cmpres): kmux runs compared with rel tol $TOL;"
				log "  $id: two plain runs differ: $cmpres"
			fi
			;;
		*)
			if [ "$plain_rc" != 0 ]; then
				out="no reference"
				verdict=FAIL
				note="$note plain run failed;"
			elif [ "$deterministic" = 1 ]; then
				cmpres=$("$PY" "$BENCH/benchtool.py" compare \
					"$WORK/run/$id.plain.stdout" "$so")
				[ "$cmpres" = identical ] || { verdict=FAIL; note="$note $cmpres;"; }
				out=$cmpres
				[ "$cmpres" = identical ] || out="DIFFERENT"
			else
				cmpres=$("$PY" "$BENCH/benchtool.py" compare --tol "$TOL" \
					"$WORK/run/$id.plain.stdout" "$so")
				case $cmpres in
				identical) out="identical" ;;
				within-tol*) out="within tol"; note="$note $cmpres;" ;;
				*) out="DIFFERENT"; verdict=FAIL; note="$note $cmpres;" ;;
				esac
			fi
			;;
		esac
		if [ "$mode" = trace ] || [ "$mode" = timing ]; then
			local targs=() rx res
			for rx in "${EXP[@]}"; do targs+=(--expect "$rx"); done
			if ! res=$("$PY" "$BENCH/benchtool.py" trace "$tr" --label "$id/$mode" \
				--json-out "$WORK/traces/$id.$mode.sum.json" "${targs[@]}"); then
				verdict=FAIL
				note="$note trace check failed;"
			fi
			trc=$(printf '%s\n' "$res" | head -n 1)
			logq "$res"
			log "  $(printf '%s\n' "$res" | tail -n 1 | cut -c1-300)"
			# keep one small trace as an example; drop the rest (size)
			if [ "$id" = drv_api ] && [ "$mode" = trace ] && [ -f "$tr" ] &&
				[ "$(stat -c %s "$tr")" -lt 4000000 ]; then
				cp "$tr" "$OUT/trace-drv_api.json"
			fi
			rm -f "$tr"
		fi
		if [ "$mode" = streams ] || [ "$mode" = verify ]; then
			note="$note $(sched_summary "$se");"
		fi
		note=${note# }
		row "$id" "$mode" "$rc" "$out" "$trc" "$verdict" "${note%;}"
	done
}

# ------------------------------------------------------------------ programs
# KMUX_COMPAT_MODES: the kmux modes after plain (default: issue 2's
# three); "streams verify" checks the stream scheduler on real stacks.
# KMUX_COMPAT_PROGS: only these programs (ids as in the table; default all).
COMPAT_MODES=${KMUX_COMPAT_MODES:-bare trace timing}
prog_selected() {
	[ -z "${KMUX_COMPAT_PROGS:-}" ] && return 0
	case " $KMUX_COMPAT_PROGS " in *" $1 "*) return 0 ;; esac
	return 1
}
build

if [ "$HAVE_NVCC" = 1 ]; then
	EXP=('^drv_saxpy$' '^drv_mix$' '^drv_iota$')
	if [ -x "$B/drv_api" ] && [ -f "$B/drv_kernels.fatbin" ] && [ -f "$B/drv_lib_kernels.ptx" ]; then
		run_prog drv_api 0 60 "$B/drv_api" "$B/drv_kernels.fatbin" "$B/drv_lib_kernels.ptx"
	else build_failed drv_api; fi
	EXP=('^rt_vec_add$' 'rt_axpy_t' 'rt_reduce_block')
	for p in rt_shared rt_static; do
		if [ -x "$B/$p" ]; then run_prog "$p" 0 60 "$B/$p"
		else build_failed "$p"; fi
	done
	EXP=('^graph_step$' '^graph_accum$')
	if [ -x "$B/graphs" ]; then run_prog graphs 0 60 "$B/graphs"
	else build_failed graphs; fi
	EXP=('ptds_work')
	if [ -x "$B/ptds" ]; then run_prog ptds 0 60 "$B/ptds"
	else build_failed ptds; fi
	EXP=('^k_rewrite_a$' '(?i)gemm')
	if [ -x "$B/cublas_batched" ]; then run_prog cublas_batched 0 60 "$B/cublas_batched"
	else build_failed cublas_batched; fi
else
	for p in drv_api rt_shared rt_static graphs ptds cublas_batched; do skip_prog "$p" "$WHY_NVCC"; done
fi

if [ "$HAVE_TORCH" = 1 ]; then
	# PyTorch's own kernels (at::native, mangled or not), a GEMM-like
	# kernel (cuBLAS / cuBLASLt) and a convolution/batch-norm-like kernel
	# (cuDNN).
	EXP=('at(6|::)native' '(?i)gemm|gemv|xmma|cutlass|cublas'
		'(?i)cudnn|conv|fprop|dgrad|wgrad|implicit|winograd|bn_')
	run_prog torch_resnet18 1 300 "$PY" "$PROGS/torch_resnet.py" --check --steps 30 \
		--batch 32 --size 112
else skip_prog torch_resnet18 "$WHY_TORCH"; fi

if [ "$HAVE_CUPY" = 1 ]; then
	EXP=('^cupy_saxpy$')
	run_prog cupy_raw 0 180 "$PY" "$PROGS/cupy_raw.py"
else skip_prog cupy_raw "$WHY_CUPY"; fi

if [ "$HAVE_TRITON" = 1 ]; then
	EXP=('^kmux_triton_add$')
	run_prog triton_add 0 240 "$PY" "$PROGS/triton_add.py"
else skip_prog triton_add "$WHY_TRITON"; fi

# Libraries and compilers whose kernels kmux never saw as source: many
# independent branches for the stream scheduler (streams / verify modes).
if [ "$HAVE_CUPY" = 1 ]; then
	EXP=('(?i)gemm|cutlass|xmma|sm90')
	run_prog cupy_libs 0 180 "$PY" "$PROGS/cupy_libs.py"
else skip_prog cupy_libs "$WHY_CUPY"; fi

if [ "$HAVE_TRITON" = 1 ]; then
	EXP=('^kmux_tt_matmul$' '^kmux_tt_softmax$' '^kmux_tt_update$')
	run_prog triton_multi 0 240 "$PY" "$PROGS/triton_multi.py"
else skip_prog triton_multi "$WHY_TRITON"; fi

if [ "$HAVE_JAX" = 1 ]; then
	EXP=('.')
	run_prog jax_mlp 1 180 "$PY" "$PROGS/jax_mlp.py"
else skip_prog jax_mlp "$WHY_JAX"; fi

# ------------------------------------------------------------------ report
MD=$OUT/compat.md
{
	echo "# kmux GPU compatibility (issue 2, item 7)"
	echo
	echo "- date: $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
	echo "- GPU, driver: $(gpu_line)"
	echo "- host: $(uname -srm); nvcc: $([ "$HAVE_NVCC" = 1 ] && "$NVCC" --version | tail -n 1)"
	echo "- python stack: ${STACK_VERSIONS:-?}"
	echo "- kmux: $(kmux_ident)"
	echo
	echo "Modes: plain (reference) - bare preload \`LD_PRELOAD=build/libkmux.so\` -"
	echo "\`kmux trace -o\` - \`kmux trace --timing -o\`. A kmux run passes when it exits 0,"
	echo "its stdout is byte-identical to the plain run's (within a relative tolerance of $TOL"
	echo "only for a program whose two plain runs differ, marked in the note) and, for trace"
	echo "modes, the trace has kernel events with each expected name (count > 0)."
	echo "Stream scheduler modes (when KMUX_COMPAT_MODES names them): streams, \`kmux run"
	echo "--streams $KMUX_COMPAT_STREAMS\` as shipped, judged like the others; verify, \`kmux verify --stdout"
	echo "--streams $KMUX_COMPAT_STREAMS\`, which runs the program unscheduled and then with every"
	echo "operation scheduled (KMUX_PASS_THROUGH=0) and passes when every device-to-host copy"
	echo "and the whole stdout are the same."
	echo "Modes run: plain $COMPAT_MODES."
	echo
} >"$MD"
log "compat: results"
"$PY" "$BENCH/benchtool.py" table "$ROWS" --md-append "$MD" | tee -a "$LOG"
status=${PIPESTATUS[0]}
{
	echo
	echo "Expected kernel names (regular expressions, searched in the trace's kernel names):"
	echo "drv_api: ^drv_saxpy\$ ^drv_mix\$ ^drv_iota\$; rt_shared/rt_static: ^rt_vec_add\$ rt_axpy_t"
	echo "rt_reduce_block; graphs: ^graph_step\$ ^graph_accum\$ (reach the driver during stream"
	echo "capture only); ptds: ptds_work; torch_resnet18: at(6|::)native, a GEMM-like and a"
	echo "cuDNN-like name; cupy_raw: ^cupy_saxpy\$; triton_add: ^kmux_triton_add\$;"
	echo "cupy_libs: a GEMM-like name; triton_multi: ^kmux_tt_matmul\$ ^kmux_tt_softmax\$"
	echo "^kmux_tt_update\$; jax_mlp: any kernel; cublas_batched: ^k_rewrite_a\$ and a GEMM-like name."
	echo "Per-trace counts, top kernels and kmux's own summary: compat-traces.json."
	echo
	echo "## Commands"
	echo
	echo '```'
	echo "bash bench/gpu/compat.sh      # or bash bench/gpu/run-all.sh"
	echo "# scratch dir: W=$WORK (removed afterwards by run-all.sh)"
	echo "# build:"
	grep -h '^\$ ' "$LOG" | sed 's/^\$ //' | shorten_cmds
	echo "# runs:"
	shorten_cmds <"$CMDS"
	echo '```'
} >>"$MD"
"$PY" "$BENCH/benchtool.py" merge "$OUT/compat-traces.json" "$WORK"/traces/*.sum.json
log "compat: done ($(time_left)s of budget left); $MD"
exit "$status"
