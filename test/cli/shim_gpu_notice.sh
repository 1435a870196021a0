#!/bin/bash
# shim_gpu_notice.sh BUILD CASE: GPU activity that cannot be had (issue 22):
# the program's stdout is unchanged, every CUDA call is still recorded, the
# run says why in a span record, and stderr gets exactly one line:
#   missing    CUDASPY_CUPTI names no library
#   held       another CUPTI client holds CUPTI (the fake's FAKECUPTI_SUBSCRIBED)
#   failing    cuptiActivityEnable fails
#   version    a CUPTI whose record layouts this cudaspy does not know
#   injection  CUDA_INJECTION64_PATH names another tool (Nsight Systems does)
#   reattach   CUPTI refuses two sampled slices after the first (as on the
#              H200 in torch processes): skipped, then recording again
#   refusing   CUPTI refuses every slice after the first: off after three
#              (the skip line, then the off line)
#   kinds      the same CUPTI with CUDASPY_GPU_SWITCH=kinds (CUPTI stays
#              attached, slices switch its activity kinds): never refused,
#              every slice recorded, nothing on stderr
. "$(dirname "$0")/shim_common.sh"
CASE=$1
C=("$B/fake/client_rt_shared") check=(--runtime shared) lines=1
export FAKECUDA_SIM=1 CUDASPY_GPU_ACTIVITY=sampled
skipped='GPU activity: a slice skipped: CUPTI would not take callbacks \(CUPTI_ERROR_NOT_INITIALIZED\); trying again'
case $CASE in
missing)
    env=(CUDASPY_CUPTI=/nonexistent/libcupti.so.13)
    want='GPU activity off: CUDASPY_CUPTI=/nonexistent/libcupti.so.13 does not load; CUDA calls are still recorded'
    ;;
held)
    env=(FAKECUPTI_SUBSCRIBED=1)
    want='GPU activity paused: another CUPTI client \(a profiler\) is active'
    ;;
failing)
    env=(FAKECUPTI_FAIL=enable)
    want='GPU activity off: cuptiActivityEnable\(10\) failed \(CUPTI_ERROR_UNKNOWN\); CUDA calls are still recorded'
    ;;
version)
    env=(FAKECUPTI_VERSION=120800)
    want='GPU activity off: CUPTI API version 120800: its record layouts are unknown to this cudaspy \(built for [0-9]+\); CUDA calls are still recorded'
    ;;
injection)
    env=(CUDA_INJECTION64_PATH=/nonexistent/libother-tool.so)
    want='GPU activity off: CUDA_INJECTION64_PATH names another tool \(/nonexistent/libother-tool.so\); CUDA calls are still recorded'
    ;;
reattach | refusing)
    [ "$CASE" = reattach ] && k=2 || k=9
    env=(FAKECUPTI_FAIL=reattach=$k CUDASPY_GPU_SAMPLE=10/20)
    C=("$B/fake/test_shim_kernels" 8000) check=(--runtime static --gpu sampled)
    want=$skipped
    if [ "$CASE" = reattach ]; then
        check+=(--gpu-paused 2)
    else
        want2='GPU activity off: CUPTI would not take callbacks \(CUPTI_ERROR_NOT_INITIALIZED\); CUDA calls are still recorded'
        lines=2
    fi
    ;;
kinds)
    env=(CUDASPY_GPU_SWITCH=kinds FAKECUPTI_FAIL=reattach=9 CUDASPY_GPU_SAMPLE=10/20)
    C=("$B/fake/test_shim_kernels" 8000) check=(--runtime static --gpu sampled --gpu-paused 0)
    lines=0 want=
    ;;
*) fail "unknown case $CASE" ;;
esac
run_plain "$T/plain.out" "$T/plain.exp" "${C[@]}"
env "${env[@]}" CUDASPY_OUTPUT="$T/run.lmdb" CUDASPY_HOST=0 FAKECUDA_EXPECT="$T/traced.exp" \
    LD_PRELOAD="$B/libcudaspy.so" "${C[@]}" >"$T/out" 2>"$T/err" || fail "client exited $?"
same_stdout "$T/plain.out" "$T/out"
grep -v '^kernel name' "$T/err" >"$T/err2" || true
[ "$(wc -l <"$T/err2")" -eq "$lines" ] || { cat "$T/err2" >&2; fail "want $lines stderr line(s)"; }
[ -z "$want" ] || grep -qE "^cudaspy\[[0-9]+\]: $want\$" "$T/err2" ||
    { cat "$T/err2" >&2; fail "unexpected message"; }
[ -z "${want2:-}" ] || grep -qE "^cudaspy\[[0-9]+\]: $want2\$" "$T/err2" ||
    { cat "$T/err2" >&2; fail "no second message"; }
"$B/test_shim_check" --wait 30 "${check[@]}" "$T/run.lmdb" "$T/traced.exp" ||
    fail "CUDA records do not match what the client did"
