#!/bin/sh
# gate_hog.sh: cli.gate_hog_reruns (issue 36): identical reruns must pass
# the gate on a loaded machine. 25 recordings of the same fake workload
# (client_rt_shared, 400 iterations: 400 launches and 400 slept 1 ms
# cuStreamSynchronize calls, as in the issue) are made while two busy
# loops per CPU load the box; recordings 6 to 25 are each gated against
# the 5 before them (--baseline r1 .. r5 r6, as docs/gate.md recommends),
# 20 gates that must all exit 0. One baseline is not enough here: under
# the hogs the GPU wait moves between cudaEventSynchronize and
# cudaStreamSynchronize from run to run (7 % -> 20 % of the window, CI of
# the calls 1.74-4.31), a difference no interval within one run can see;
# the script also gates each run against the one before it alone and
# prints how many of those 20 pairs failed, for the record.
# The recordings run at normal priority (no shield): the load is the point.
# Usage: gate_hog.sh CASE ANALYZE CUDASPY CLIENT WORKDIR [GATES]
set -u
case_=$1 analyze=$2 cudaspy=$3 client=$4 dir=$5 gates=${6:-20}
. "$(dirname "$0")/gate_common.sh"
rm -rf "$dir" && mkdir -p "$dir" && cd "$dir" || exit 1
hogs=""
stop_hogs() { for p in $hogs; do kill "$p" 2>/dev/null; done; hogs=""; }
trap stop_hogs EXIT
trap 'stop_hogs; exit 1' INT TERM
record() { # OUT
    FAKECUDA_LAT_MODE=sleep FAKECUDA_LAT_NS="cuStreamSynchronize=1000000" \
        "$cudaspy" record -q -o "$1" -- "$client" 400 16 >"$1.log" 2>&1 ||
        { cat "$1.log" >&2; fail "recording $1"; }
}
ncpu=$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 2)
i=0
while [ $i -lt $((2 * ncpu)) ]; do
    sh -c 'while :; do :; done' &
    hogs="$hogs $!"
    i=$((i + 1))
done
keep=5 n=$((gates + keep))
i=1 failed=0 single=0
while [ $i -le $n ]; do
    record r$i.lmdb
    "$analyze" summary --save r$i.json r$i.lmdb || fail "summary r$i"
    rm -f r$i.lmdb r$i.lmdb-lock
    if [ $i -gt 1 ]; then
        "$analyze" gate --baseline r$((i - 1)).json r$i.json >one$i.txt 2>&1 || single=$((single + 1))
    fi
    if [ $i -gt $keep ]; then
        bases="" j=$((i - keep))
        while [ $j -lt $i ]; do bases="$bases r$j.json"; j=$((j + 1)); done
        # shellcheck disable=SC2086
        "$analyze" gate --baseline $bases r$i.json >out$i.txt 2>err$i.txt
        rc=$?
        [ $rc -le 1 ] || { cat err$i.txt >&2; fail "gate r$i exited $rc"; }
        [ $rc -eq 0 ] || { failed=$((failed + 1)); head -n 1 err$i.txt; }
    fi
    i=$((i + 1))
done
stop_hogs
echo "$failed of $gates gates against $keep baselines failed; against one baseline $single of $((n - 1)) pairs failed ($((2 * ncpu)) CPU hogs)"
[ $failed -eq 0 ] || fail "$failed of $gates gates of identical runs failed under CPU load"
echo "ok   $case_"
