#!/bin/sh
# gate_steps.sh: cli.gate_steps_* cases, gate v2 (issue 24) on REAL run
# files: the real launcher, sampler and shim recording cause_workload's
# step loops (`steps`, `steps_sync`, `steps_slowdata`) on the fake driver's
# simulated GPU. A sync added to each step makes the launches no slower,
# only the steps; fewer data workers make the steps wait for batches.
# Usage: gate_steps.sh CASE ANALYZE CUDASPY WORKLOAD WORKDIR
set -u
case_=$1 analyze=$2 cudaspy=$3 workload=$4 dir=$5
. "$(dirname "$0")/gate_common.sh"
rm -rf "$dir" && mkdir -p "$dir" && cd "$dir" || exit 1
. "$(dirname "$0")/../analyzer/shield.sh"
# 100 steps of 3 ms at the base: 0.3 s of loop a recording
record() { # OUT MODE [RECORD-OPTION...]
    out=$1 mode=$2
    shift 2
    CAUSE_STEPS=${CAUSE_STEPS:-100} shield "$cudaspy" record -q "$@" -o "$out" -- \
        "$workload" "$mode" >"$out.log" 2>&1 || { cat "$out.log" >&2; fail "recording $out"; }
}
[ "$case_" = steps_ahead ] || record base.lmdb steps
case $case_ in
steps_ahead)  # issue 36: the host runs ahead of the GPU, whose steps decide
    # 300 steps (NVTX ranges), the GPU's 1 ms each: the host's 150 us, then
    # 450 us (the host side alone reads +200 %), then the GPU's 1.5 ms
    CAUSE_STEPS=300 record base.lmdb ahead --gpu-activity full
    grep -q "built without nvtx3" base.lmdb.log && { echo "skip: no nvtx3 headers"; exit 77; }
    CAUSE_STEPS=300 record host.lmdb ahead_slowhost --gpu-activity full
    CAUSE_STEPS=300 record gpu.lmdb ahead_slowgpu --gpu-activity full
    expect_rc 0 "$analyze" gate --step train_step --baseline base.lmdb host.lmdb
    grep -q '^step time p50 (GPU) .* ok' out.txt || fail "GPU step time not judged ok"
    "$analyze" summary --step train_step --save host.json host.lmdb || fail summary
    python3 -c "
import json, sys
g = json.load(open(sys.argv[1]))['gpu_steps']
assert g['count'] >= 250 and 950e3 <= g['p50_ns'] <= 1100e3, g
assert g['host_p50_ns'] < 0.8 * g['p50_ns'], g
" host.json || fail "gpu_steps of the summary"
    expect_rc 1 "$analyze" gate --step train_step --baseline base.lmdb host.json gpu.lmdb
    head -n 1 err.txt | grep -q '^cudaspy-analyze: gate: FAIL: step time p50 (GPU) +[0-9]*% ' ||
        fail "first line does not name the GPU's step time"
    ;;
steps_sync)  # issue 24: 3 ms -> 4 ms a step, the new sync named first
    record sync.lmdb steps_sync
    expect_rc 1 "$analyze" gate --baseline base.lmdb sync.lmdb
    head -n 1 err.txt | grep -q '^cudaspy-analyze: gate: FAIL: step time p50 +[0-9]*% ' ||
        fail "first line does not name the step time"
    head -n 1 err.txt | grep -q '; cudaStreamSynchronize new: [0-9]*% of the window' ||
        fail "first line does not name the new sync"
    grep -q '^API time cudaStreamSynchronize .*REGRESSED: new: ' out.txt || fail "no API time row"
    grep -q '^cudaLaunchKernel .* ok$' out.txt || fail "the launches' p99 should pass"
    # a saved summary gives the same verdict as its run file
    "$analyze" summary --save base.json base.lmdb || fail summary
    grep -q '"version":2' base.json || fail "summary not version 2"
    expect_rc 1 "$analyze" gate --json --baseline base.lmdb sync.lmdb
    mv out.txt from_run.json
    expect_rc 1 "$analyze" gate --json --baseline base.json sync.lmdb
    cmp from_run.json out.txt || fail "verdict differs between run file and summary"
    # v1's view: the per-API p99 alone passes this candidate
    expect_rc 0 "$analyze" gate --baseline base.json --criteria p99 sync.lmdb
    ;;
steps_slowdata)  # 1 data worker instead of 4: 3 ms -> 6 ms a step
    record slow.lmdb steps_slowdata
    expect_rc 1 "$analyze" gate --baseline base.lmdb slow.lmdb
    head -n 1 err.txt | grep -q '^cudaspy-analyze: gate: FAIL: step time p50 +[0-9]*% ' ||
        fail "first line does not name the step time"
    ;;
steps_rerun)  # the same loop recorded 21 times: 20 pairs, at most one fails
    "$analyze" summary --save r0.json base.lmdb || fail summary
    i=1 failed=0
    while [ $i -le 20 ]; do
        record r$i.lmdb steps
        "$analyze" summary --save r$i.json r$i.lmdb || fail "summary r$i"
        "$analyze" gate --baseline r$((i - 1)).json r$i.json >out$i.txt 2>err$i.txt
        rc=$?
        [ $rc -le 1 ] || { cat err$i.txt >&2; fail "gate r$i exited $rc"; }
        [ $rc -eq 0 ] || { failed=$((failed + 1)); head -n 1 err$i.txt; }
        i=$((i + 1))
    done
    echo "$failed of 20 pairs failed"
    [ $failed -le 1 ] || fail "$failed of 20 reruns failed the gate"
    ;;
*) fail "unknown case" ;;
esac
echo "ok   $case_"
