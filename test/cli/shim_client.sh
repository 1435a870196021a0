#!/bin/bash
# shim_client.sh BUILD MODE RUNTIME CLIENT [ARGS...]: run a fake client under
# the shim (MODE record|preload) and check the run file holds exactly what
# the fake driver saw (RUNTIME shared: runtime-layer records too; static_rt:
# none, and every record flagged CS_CF_STATIC_RT), that stdout is unchanged
# and that names were resolved. With SHIM_GPU=full|sampled in the
# environment, the client runs on the simulated GPU with GPU activity in
# that mode (the fake CUPTI) and its GPU records are checked too. With the
# shared runtime, runtime records fold in their driver calls, or with
# CUDASPY_FOLD=0 in the environment never do.
. "$(dirname "$0")/shim_common.sh"
MODE=$1 RUNTIME=$2 CLIENT=$3
shift 3
if [ -n "${SHIM_GPU:-}" ]; then
    export CUDASPY_GPU_ACTIVITY=$SHIM_GPU FAKECUDA_SIM=1
fi
run_plain "$T/plain.out" "$T/plain.exp" "$B/$CLIENT" "$@"
run_traced "$MODE" "$T/run.lmdb" "$T/traced.out" "$T/traced.exp" "$B/$CLIENT" "$@"
same_stdout "$T/plain.out" "$T/traced.out"
FLAGS=(--runtime "$RUNTIME")
[ "$RUNTIME" = shared ] && FLAGS+=(--fold "$([ "${CUDASPY_FOLD:-1}" = 0 ] && echo off || echo on)")
[ "$RUNTIME" = static_rt ] && FLAGS=(--runtime static --static-rt)
[ -n "${SHIM_GPU:-}" ] && FLAGS+=(--gpu "$SHIM_GPU")
"$B/test_shim_check" --wait 30 "${FLAGS[@]}" "$T/run.lmdb" "$T/traced.exp" ||
    fail "run file does not match what $CLIENT did"
