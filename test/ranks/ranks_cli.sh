#!/bin/sh
# ranks_cli.sh: cli.ranks_* cases: the real launcher, sampler and shim record
# client_ranks (two fake-driver rank processes with a pipe barrier, 1 ms
# syncs) and cudaspy-analyze --json must find the planted straggler.
# Usage: ranks_cli.sh CASE ANALYZE CUDASPY CLIENT JSON_EXPECT RANKS_EXPECT WORKDIR
set -u
case_=$1 analyze=$2 cudaspy=$3 client=$4 jexpect=$5 expect=$6 dir=$7
rm -rf "$dir" && mkdir -p "$dir" && cd "$dir" || exit 1
export FAKECUDA_DEVICES=2 # rank r on device r: the run must say so
fail() { echo "FAIL $case_: $*" >&2; exit 1; }
record() { # OUT MODE
    FAKECUDA_LAT_NS="cuStreamSynchronize=1000000" FAKECUDA_LAT_MODE=sleep \
        "$cudaspy" record -q -o "$1" -- "$client" "$2" 300 >"$1.out" 2>"$1.err" ||
        { cat "$1.err" >&2; fail "recording $1"; }
}
analyse() { # RUN CHECK...
    run=$1; shift
    "$analyze" --json "$run" >"$run.json" || fail "cudaspy-analyze $run exited $?"
    "$expect" "$@" <"$run.json" || { "$analyze" "$run" >&2; fail "$run: $*"; }
}
case $case_ in
straggler)  # rank 1 burns 20 ms of CPU every 10th step: it is named, on CPU
    record s.lmdb straggle
    analyse s.lmdb may_precede=host_bound ranks=2 straggler=1 busy_dominates \
        cause_in=busy,preempted_tree,preempted_external
    "$jexpect" has=rank_straggler <s.lmdb.json >/dev/null || fail "json_expect has"
    ;;
relay)      # rank 1 straggles, but each rank's barrier runs in a helper thread
    # that then wakes the syncing one (as gloo's threads do): still named
    record r.lmdb relay
    analyse r.lmdb may_precede=data_pipeline_starvation,host_bound ranks=2 straggler=1 \
        cause_in=busy,preempted_tree,preempted_external
    ;;
control)    # the same job without the extra work: no HIGH rank_straggler
    record c.lmdb control
    analyse c.lmdb ranks=2 no_high_straggler
    ;;
ranks_json) # ranks visible in JSON and text; the client's output is unchanged
    record s.lmdb straggle
    "$client" straggle 300 >plain.out 2>plain.err || fail "untraced run"
    cmp -s plain.out s.lmdb.out || fail "traced output differs"
    analyse s.lmdb ranks=2
    "$jexpect" collector_cpu <s.lmdb.json || fail "json_expect collector_cpu"
    "$analyze" s.lmdb >report.txt || fail "text report"
    grep -q '^tracing  collector CPU [0-9.]*[mu]*s ([0-9.]* % of one CPU)$' report.txt ||
        fail "no collector CPU line"
    grep -q '^RANKS' report.txt || fail "no RANKS section"
    grep -q '^ *1 [0-9]' report.txt || fail "no row for rank 1"
    ;;
*) fail "unknown case" ;;
esac
echo "ok   $case_"
