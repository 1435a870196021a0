#!/bin/sh
# gate_cli.sh: cli.gate_* cases. Usage: gate_cli.sh CASE ANALYZE GEN_RUN WORKDIR
# Runs are written by gen_run (the real cs_store writer); when the real shim
# and fake driver runs exist, gate_real.sh covers those.
set -u
case_=$1 analyze=$2 gen=$3 dir=$4
. "$(dirname "$0")/gate_common.sh"
rm -rf "$dir" && mkdir -p "$dir" && cd "$dir" || exit 1
"$gen" base.lmdb --seed 1 || fail "gen base"
case $case_ in
identical)
    "$gen" same.lmdb --seed 1 || fail gen
    expect_rc 0 "$analyze" gate --baseline base.lmdb same.lmdb
    grep -q '^gate: pass: 6 compared on p99, 0 regressed' out.txt || fail "no pass line"
    ;;
noise)  # same workload, other jitter: passes
    "$gen" other.lmdb --seed 7 || fail gen
    expect_rc 0 "$analyze" gate --baseline base.lmdb other.lmdb
    ;;
regress)
    "$gen" slow.lmdb --seed 9 --sync-us 300 || fail gen
    expect_rc 1 "$analyze" gate --baseline base.lmdb slow.lmdb
    grep -q '^cuStreamSynchronize .*REGRESSED: p99 3.0' out.txt || fail "no regressed row"
    grep -q '^cudaspy-analyze: gate: cuStreamSynchronize: p99 regressed' err.txt || fail "no stderr line"
    grep -q '^cudaLaunchKernel .* ok$' out.txt || fail "launch not ok"
    # the same runs with a selection that leaves the syncs out pass
    expect_rc 0 "$analyze" gate --baseline base.lmdb --api cudaLaunchKernel,cudaMemcpyAsync slow.lmdb
    # an absolute floor above the increase passes the p99 criterion; the
    # syncs' share of the window (10 % -> 30 %) still fails the run (gate v2)
    expect_rc 0 "$analyze" gate --baseline base.lmdb --criteria p99 --min-delta-us 1000 slow.lmdb
    expect_rc 1 "$analyze" gate --baseline base.lmdb --min-delta-us 1000 slow.lmdb
    grep -q '^cudaspy-analyze: gate: FAIL: cuStreamSynchronize 10.1% -> 29.9% of the window' err.txt ||
        fail "no API time reason"
    ;;
few_calls)  # the p99 criterion does not judge 50 calls; the syncs' share of
    # the window (10 % -> 30 %) is judged on any number of calls (gate v2)
    "$gen" short.lmdb --seed 9 --calls 50 --sync-us 300 || fail gen
    expect_rc 0 "$analyze" gate --baseline base.lmdb --criteria p99 short.lmdb
    grep -q '^cuStreamSynchronize .*too few calls: not judged: 1000/50 calls, need 100' out.txt ||
        fail "no too-few note"
    expect_rc 1 "$analyze" gate --baseline base.lmdb short.lmdb
    grep -q '^cuStreamSynchronize .*too few calls: not judged: 1000/50 calls, need 100' out.txt ||
        fail "no too-few note with every criterion"
    ;;
corrupt_base)
    "$gen" new.lmdb --seed 2 || fail gen
    echo garbage > junk.lmdb
    expect_rc 2 "$analyze" gate --baseline junk.lmdb new.lmdb
    grep -q '^cudaspy-analyze: junk.lmdb: ' err.txt || fail "message"
    "$analyze" summary --save good.json base.lmdb || fail summary
    head -c 200 good.json > cut.json
    expect_rc 2 "$analyze" gate --baseline cut.json new.lmdb
    grep -q '^cudaspy-analyze: cut.json: malformed summary JSON' err.txt || fail "cut message"
    sed 's/"version":2/"version":99/' good.json > v99.json
    expect_rc 2 "$analyze" gate --baseline v99.json new.lmdb
    grep -qx 'cudaspy-analyze: v99.json: unsupported summary version 99 (this build reads 1 to 2)' err.txt ||
        fail "version message"
    sed 's/"count":1000/"count":"x"/' good.json > badfield.json
    expect_rc 2 "$analyze" gate --baseline badfield.json new.lmdb
    grep -q 'bad or missing "count"' err.txt || fail "field message"
    expect_rc 2 "$analyze" gate --baseline missing.json new.lmdb
    ;;
roundtrip)  # a saved summary gives the same verdict, byte for byte
    "$gen" slow.lmdb --seed 9 --sync-us 300 || fail gen
    "$analyze" summary --save base.json base.lmdb || fail summary
    [ "$(wc -c < base.json)" -lt 100000 ] || fail "summary too big"
    expect_rc 1 "$analyze" gate --json --by-kernel --baseline base.lmdb slow.lmdb
    mv out.txt from_run.json
    expect_rc 1 "$analyze" gate --json --by-kernel --baseline base.json slow.lmdb
    cmp from_run.json out.txt || fail "verdict differs between run file and summary"
    grep -q '"verdict": "fail"' out.txt || fail "json verdict"
    ;;
outputs)
    "$gen" slow.lmdb --seed 9 --sync-us 300 || fail gen
    expect_rc 1 "$analyze" gate --baseline base.lmdb --junit j.xml --markdown m.md --by-kernel slow.lmdb
    grep -q '<testsuite name="cudaspy-gate" tests="10" failures="2" skipped="0">' j.xml || fail junit
    grep -q 'gemm_kernel&lt;float, 128&gt;' j.xml || fail "junit escaping"
    grep -q '^### cudaspy gate: FAIL' m.md || fail markdown
    grep -q '^| `cuStreamSynchronize` | 1000 | 1000 | .* | \*\*REGRESSED\*\*' m.md || fail "md row"
    ;;
v1_summary)  # a version 1 summary (gate v1) still gates, on p99 alone
    "$gen" slow.lmdb --seed 9 --sync-us 300 || fail gen
    "$analyze" summary --save v2.json base.lmdb || fail summary
    grep -q '"version":2,' v2.json || fail "not version 2"
    sed 's/"window_ns":.*"high_findings":\[[^]]*\],//; s/"version":2/"version":1/; s/,"total_ns":[0-9]*//g' \
        v2.json > v1.json
    grep -q '"steps"\|"total_ns"' v1.json && fail "v1.json keeps run fields"
    expect_rc 0 "$analyze" gate --baseline v1.json base.lmdb
    grep -q '^step time p50 .*not judged: the baseline has no run measures (version 1 summary)$' out.txt ||
        fail "no not-judged step row"
    grep -q '^gate: pass: 6 compared on p99, 0 regressed' out.txt || fail "no pass line"
    expect_rc 1 "$analyze" gate --baseline v1.json slow.lmdb
    grep -q '^cudaspy-analyze: gate: FAIL: cuStreamSynchronize p99 3.00x; cudaStreamSynchronize p99 2.99x$' err.txt ||
        fail "v1 reason"
    # resaved, a version 1 file stays version 1
    "$analyze" summary v1.json > again.json || fail resave
    grep -q '"version":1,' again.json || fail "resaved as another version"
    ;;
usage)
    expect_rc 2 "$analyze" gate base.lmdb
    grep -qx "cudaspy-analyze: gate: --baseline BASE is required" err.txt || fail msg
    expect_rc 2 "$analyze" gate --baseline base.lmdb --metric p42 base.lmdb
    expect_rc 2 "$analyze" gate --baseline base.lmdb --frobnicate base.lmdb
    expect_rc 2 "$analyze" gate --baseline base.lmdb --api cuStreamSynchronise base.lmdb
    grep -qx "cudaspy-analyze: gate: --api cuStreamSynchronise: no such API in either run" err.txt ||
        fail "misspelt --api"
    expect_rc 2 "$analyze" gate --baseline base.lmdb --criteria steps,bogus base.lmdb
    grep -qx "cudaspy-analyze: gate: --criteria: expected a list of steps, api-time, p99, gpu-idle, findings" err.txt ||
        fail "--criteria message"
    expect_rc 2 "$analyze" gate --baseline base.lmdb --step nosuch base.lmdb
    grep -qx 'cudaspy-analyze: base.lmdb: --step: no NVTX range "nosuch" in the window' err.txt ||
        fail "--step message"
    expect_rc 0 "$analyze" gate --help
    grep -q '^Exit status: 0 pass, 1 regression, 2 usage' out.txt || fail help
    ;;
*) fail "unknown case" ;;
esac
echo "ok   $case_"
