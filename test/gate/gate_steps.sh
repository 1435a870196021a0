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
record() { # OUT MODE
    CAUSE_STEPS=100 shield "$cudaspy" record -q -o "$1" -- "$workload" "$2" >"$1.log" 2>&1 ||
        { cat "$1.log" >&2; fail "recording $1"; }
}
record base.lmdb steps
case $case_ in
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
