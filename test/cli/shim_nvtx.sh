#!/bin/bash
# shim_nvtx.sh BUILD MODE THREADS ITERS: test/fake/client_nvtx's NVTX ranges
# (docs/shim.md, "NVTX"). MODE record: under `cudaspy record`, which sets
# NVTX_INJECTION64_PATH; preload: plain LD_PRELOAD, the shim's constructor
# sets it; disable: CUDASPY_DISABLE=1, nothing recorded. Each time the
# client's stdout and exit status equal its run without the shim, and
# test_nvtx_check finds exactly the ranges it made (none when disabled);
# recorded, the analyzer's model holds them all (test_nvtx_model) and the
# Perfetto export shows them all, nested per track (check_trace).
. "$(dirname "$0")/shim_common.sh"
MODE=$1 THREADS=$2 ITERS=$3
C="$B/fake/client_nvtx"
unset NVTX_INJECTION64_PATH
"$C" "$THREADS" "$ITERS" >"$T/plain.out" || fail "client_nvtx without the shim exited $?"
case $MODE in
record)
    timeout 100 "$B/cudaspy" record -o "$T/run.lmdb" --no-host -- "$C" "$THREADS" "$ITERS" \
        >"$T/out" || fail "client_nvtx under cudaspy record exited $?" ;;
preload)
    CUDASPY_OUTPUT="$T/run.lmdb" CUDASPY_HOST=0 LD_PRELOAD="$B/libcudaspy.so" timeout 100 \
        "$C" "$THREADS" "$ITERS" >"$T/out" || fail "preloaded client_nvtx exited $?" ;;
disable)
    CUDASPY_DISABLE=1 timeout 100 "$B/cudaspy" record -o "$T/run.lmdb" --no-host -- \
        "$C" "$THREADS" "$ITERS" >"$T/out" || fail "disabled client_nvtx exited $?" ;;
*) fail "unknown mode $MODE" ;;
esac
same_stdout "$T/plain.out" "$T/out"
if [ "$MODE" = disable ]; then
    "$B/test_nvtx_check" --none "$T/run.lmdb" || fail "NVTX recorded with CUDASPY_DISABLE=1"
else
    "$B/test_nvtx_check" "$T/run.lmdb" "$THREADS" "$ITERS" ||
        fail "run file does not hold exactly the client's NVTX ranges"
    # 8 a step, a handoff and an open range per worker, 3 + 3 of the main
    # thread and the child; threads: the workers, the main thread, the child's
    n=$((THREADS * ITERS * 8 + 2 * THREADS + 6))
    "$B/test_nvtx_model" "$T/run.lmdb" "$n" $((THREADS + 2)) ||
        fail "the analyzer's model lacks NVTX ranges"
    # the main thread's "handoff" ranges overlap (ended by the workers): never steps
    "$B/cudaspy-analyze" --step handoff "$T/run.lmdb" >/dev/null 2>"$T/step.err" &&
        fail "--step handoff: overlapping ranges taken as steps"
    grep -q 'NVTX ranges "handoff" overlap one another' "$T/step.err" ||
        fail "--step handoff: $(cat "$T/step.err")"
    # the Perfetto export: every range a slice, every mark an instant, nested per track
    "$B/cudaspy-analyze" export --chrome "$T/trace.json" "$T/run.lmdb" || fail "export exited $?"
    "$B/check_trace" "$T/trace.json" >/dev/null || fail "the export with NVTX ranges is not valid"
    got=$(grep -o '"cat":"nvtx"' "$T/trace.json" | wc -l)
    [ "$got" -eq "$n" ] || fail "export: $got NVTX events, want $n"
fi
