#!/bin/sh
# steps_count.sh CUDASPY WORKLOAD DIR: cli.steps_count, steps found in REAL
# recordings (launcher, sampler, shim, the fake driver's simulated GPU):
# test/fake/cause_workload prints how many steps it ran, and the analyzer's
# steps (inferred from the repeating calls: no NVTX here) must count them
# within 2 %, for loops of different shapes: a sync every step (duty,
# syncstep), a sync every 16 steps (hostdata: the kernel sequence marks the
# step), workers feeding the main process (starve), GPU-bound (clean).
# Then --step none turns them off and --step NAME of an unrecorded range is
# a clear error (exit 2).
set -u
cudaspy=$1 workload=$2 dir=$3
rm -rf "$dir" && mkdir -p "$dir" || exit 1
fail() { echo "steps_count: $*" >&2; exit 1; }

for mode in duty syncstep hostdata starve clean; do
    run=$dir/$mode.lmdb
    "$cudaspy" record -q -o "$run" -- "$workload" "$mode" 1 >"$dir/$mode.out" 2>"$dir/$mode.err" ||
        fail "$mode: record exited $?: $(cat "$dir/$mode.err")"
    n=$(sed -n "s/^cause_workload: $mode: \([0-9]*\) steps.*/\1/p" "$dir/$mode.out")
    [ -n "$n" ] || fail "$mode: no step count in: $(cat "$dir/$mode.out")"
    "$CS_ANALYZE" --json "$run" >"$dir/$mode.json" || fail "$mode: analyze exited $?"
    "$CS_JSON_EXPECT" "steps=inferred:$n" <"$dir/$mode.json" || fail "$mode: wrong steps"
done
"$CS_ANALYZE" --json --step none "$dir/duty.lmdb" | "$CS_JSON_EXPECT" "steps=none:0" ||
    fail "--step none: steps still found"
"$CS_ANALYZE" --step no_such_range "$dir/duty.lmdb" >/dev/null 2>"$dir/err"
st=$?
[ "$st" -eq 2 ] || fail "--step no_such_range: exit $st, want 2"
grep -q 'no top-level NVTX range "no_such_range"' "$dir/err" || fail "--step: message: $(cat "$dir/err")"
echo "steps_count: every loop's steps counted within 2 %"
