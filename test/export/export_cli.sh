#!/bin/sh
# export_cli.sh: cli.export_* cases. Usage: export_cli.sh CASE ANALYZE GEN_RUN CHECK_TRACE WORKDIR
set -u
case_=$1 analyze=$2 gen=$3 check=$4 dir=$5
rm -rf "$dir" && mkdir -p "$dir" && cd "$dir" || exit 1
fail() { echo "FAIL $case_: $*" >&2; exit 1; }
expect_rc() { # want cmd...
    want=$1; shift
    "$@" >out.txt 2>err.txt; rc=$?
    [ "$rc" -eq "$want" ] || { cat out.txt err.txt >&2; fail "$* exited $rc, want $want"; }
}
"$gen" run.lmdb --calls 300 || fail "gen"
case $case_ in
valid)  # the strict checker accepts the whole export
    expect_rc 0 "$analyze" export --chrome t.json run.lmdb
    expect_rc 0 "$check" t.json
    grep -q '^check_trace: ok: ' out.txt || fail "checker"
    grep -q '"name":"process_name","args":{"name":"trainer (CUDA)"}' t.json || fail "process name"
    grep -q '"name":"thread_name","args":{"name":"loader \\"0\\""}' t.json || fail "escaped thread name"
    grep -q '"name":"cudaMemcpyAsync","args":{.*"bytes":1048576,"direction":"HtoD","pinned":true' t.json ||
        fail "copy args"
    grep -q '"kernel":"gemm_kernel<float, 128>"' t.json || fail "kernel arg"
    grep -q '"pid":4242,"tid":4251,"ts":0,"name":"thread_name","args":{"name":"thread 4251"}' t.json ||
        fail "no fallback name for a thread missing from the table"
    grep -q '"name":"off-cpu: preempted by worker 4243"' t.json || fail "off-cpu name"
    grep -q '"ph":"C".*"name":"system cpu %"' t.json || fail "cpu counter"
    grep -q '"ph":"C","pid":4242.*"name":"page allocations"' t.json || fail "page counter"
    grep -q '"ph":"f",.*"bp":"e"' t.json || fail "flow"
    ;;
clipped)  # a preemption that starts 1 us before its sync is cut at the call boundary
    expect_rc 0 "$analyze" export --chrome t.json run.lmdb
    # iteration 3: sync at 3050.000 us; the interval starts at 3049.000
    grep -q '"ph":"X","pid":4242,"tid":4242,"ts":3049.000,"dur":1.000,"cat":"offcpu"' t.json ||
        fail "no piece before the call"
    grep -q '"ph":"X","pid":4242,"tid":4242,"ts":3050.000,"dur":0.200,"cat":"offcpu"' t.json ||
        fail "no piece inside the runtime call"
    expect_rc 0 "$check" t.json
    ;;
window)
    expect_rc 0 "$analyze" export --chrome w.json --since 0.1 --until 0.2 run.lmdb
    expect_rc 0 "$check" w.json
    # ts are microseconds: the window is [100000, 200000)
    grep -q '"ts":[0-9]\{1,5\}\.' w.json && fail "event before --since"
    grep -q '"ts":[2-9][0-9]\{5\}\.' w.json && fail "event after --until"
    grep -q '"ts":150[0-9][0-9][0-9]\.' w.json || fail "nothing inside the window"
    ;;
bad_input)
    echo junk > junk.lmdb
    expect_rc 2 "$analyze" export --chrome t.json junk.lmdb
    grep -q '^cudaspy-analyze: junk.lmdb: ' err.txt || fail message
    expect_rc 2 "$analyze" export run.lmdb
    grep -qx 'cudaspy-analyze: export: --chrome OUT.json is required' err.txt || fail usage
    expect_rc 2 "$analyze" export --chrome t.json --since x run.lmdb
    expect_rc 3 "$analyze" export --chrome /nonexistent/dir/t.json run.lmdb
    ;;
checker_rejects)  # the checker is strict: broken traces fail it
    printf '{"traceEvents":[{"ph":"M","pid":1,"tid":1,"ts":0,"name":"process_name","args":{"name":"p"}},{"ph":"M","pid":1,"tid":1,"ts":0,"name":"thread_name","args":{"name":"t"}},{"ph":"X","pid":1,"tid":1,"ts":1.000,"dur":5.000,"name":"a"},{"ph":"X","pid":1,"tid":1,"ts":3.000,"dur":5.000,"name":"b"}]}' > overlap.json
    expect_rc 1 "$check" overlap.json
    grep -q 'X slices do not nest' err.txt || fail overlap
    printf '[{"ph":"X","pid":1,"tid":1,"ts":1,"dur":1,"name":"a"},{"ph":"s","pid":1,"tid":1,"ts":1.5,"name":"f","cat":"c","id":1}]' > flow.json
    expect_rc 1 "$check" flow.json
    grep -q 'flow start without a finish' err.txt || fail flow
    grep -q 'process without process_name' err.txt || fail names
    printf '[{"ph":"X","pid":1,"tid":1,"ts":1.0001,"dur":1,"name":"a"}]' > prec.json
    expect_rc 1 "$check" prec.json
    printf '[{"ph":"C","pid":1,"tid":1,"ts":1,"name":"c","args":{"v":"x"}}]' > ctr.json
    expect_rc 1 "$check" ctr.json
    ;;
*) fail "unknown case" ;;
esac
echo "ok   $case_"
