#!/bin/sh
# gpu_budget.sh CUDASPY WORKLOAD DIR: cli.gpu_budget, sampled GPU activity
# kept within its cost budget (CUDASPY_GPU_BUDGET, docs/gpu.md). The fake
# CUPTI's cuptiFinalize made to take 30 ms (FAKECUPTI_FINALIZE_US): a slice
# then costs at least that, so at 0.5 % the next one waits 6 s or more, and
# a 4 s run gets its first slice alone; with the budget off (0) slices come
# every second; with switches that cost nothing the budget keeps them every
# second too (2 at least here: under load a switch takes longer). Slices
# are counted by the fake's attaches (FAKECUPTI_LOG). A slice's cost is
# also its switcher's slower pace inside it: the sync workload (0.4 ms of
# host work, a 0.3 ms kernel, its sync) with each launch recorded taking
# 3 ms more (FAKECUPTI_RECORD_US) runs at a fifth of its pace in a slice,
# so the second slice waits long and a 4 s run has 2. (At 0.2 ms the
# kernel's wait hides it on a quiet machine, and slices come every second;
# not tested: beside a CPU hog the spin is preempted and shows.) The
# analyzer's gpu.slowdown_ns, the same pace measured in the run, must see
# it. At 1 ms a launch it fell to 19.6 ms of a usual 45 beside a hog and a
# CI run: each step's wait for a CPU adds to both paces alike, and fewer
# steps fit in the slice; 3 ms keeps it at 67-77 ms beside 0-3 hogs. And
# CUDASPY_GPU_FIRST_MS=9000 leaves CUPTI untouched through a 2 s run. And
# the analyzer must still call the run's GPU figures sampled. Each slice
# starts at a random point of its period (a fixed phase sees one part of a
# periodic step only): at 50 ms every 200 ms the attaches (the fake logs
# their times) lie 200 ms apart on average, but not all alike.
# Needs CS_ANALYZE and CS_JSON_EXPECT (test/analyzer.cmake).
set -u
cudaspy=$1 workload=$2 dir=$3
rm -rf "$dir" && mkdir -p "$dir" || exit 1
slices() { # NAME MODE ENV...: record the workload's MODE for 4 s, print its slices
    name=$1 mode=$2
    shift 2
    env "$@" FAKECUPTI_LOG="$dir/$name.cupti" CUDASPY_GPU_ACTIVITY=sampled "$cudaspy" record \
        -q -o "$dir/$name.lmdb" --no-host -- "$workload" "$mode" 4 >"$dir/$name.log" 2>&1 ||
        { cat "$dir/$name.log" >&2; echo "gpu_budget: $name: recording failed" >&2; exit 1; }
    "$CS_ANALYZE" --json "$dir/$name.lmdb" | "$CS_JSON_EXPECT" gpu=sampled >/dev/null ||
        { echo "gpu_budget: $name: GPU figures are not sampled" >&2; exit 1; }
    grep -c '^attach' "$dir/$name.cupti"
}
costly=$(slices costly duty FAKECUPTI_FINALIZE_US=30000) || exit 1
fixed=$(slices fixed duty FAKECUPTI_FINALIZE_US=30000 CUDASPY_GPU_BUDGET=0) || exit 1
cheap=$(slices cheap duty FAKECUPTI_FINALIZE_US=0) || exit 1
paced=$(slices paced sync FAKECUPTI_RECORD_US=3000) || exit 1
echo "gpu_budget: slices in 4 s: $costly (30 ms switches, 0.5 %), $fixed (budget off)," \
    "$cheap (free switches), $paced (3 ms a launch recorded)"
placed=$(slices placed duty CUDASPY_GPU_SAMPLE=50/200) || exit 1
awk '$1 == "attach" { if (n++) { d = ($3 - t) / 1e6; s += d; lo = n == 2 || d < lo ? d : lo;
        hi = d > hi ? d : hi }; t = $3 }
    END { if (n < 8) { print "gpu_budget: 50/200: " n " slices in 4 s, want 8 or more"; exit 1 }
        printf "gpu_budget: 50/200: %d slices, %.0f ms apart on average, %.0f to %.0f\n",
            n, s / (n - 1), lo, hi
        if (s / (n - 1) < 150 || s / (n - 1) > 260) { print "gpu_budget: want 150-260 ms"; exit 1 }
        if (hi - lo < 40) { print "gpu_budget: slices at one phase of the period"; exit 1 } }' \
    "$dir/placed.cupti" >&2 || exit 1
[ "$costly" -eq 1 ] || { echo "gpu_budget: costly switches: want 1 slice" >&2; exit 1; }
[ "$paced" -le 2 ] || { echo "gpu_budget: slow launches in slices: want 2 at most" >&2; exit 1; }
# CUDASPY_GPU_FIRST_MS puts off the first slice: CUPTI untouched until then
env CUDASPY_GPU_FIRST_MS=9000 FAKECUPTI_LOG="$dir/late.cupti" CUDASPY_GPU_ACTIVITY=sampled \
    "$cudaspy" record -q -o "$dir/late.lmdb" --no-host -- "$workload" duty 2 \
    >"$dir/late.log" 2>&1 ||
    { cat "$dir/late.log" >&2; echo "gpu_budget: late: recording failed" >&2; exit 1; }
[ ! -s "$dir/late.cupti" ] ||
    { echo "gpu_budget: first slice at 9 s: CUPTI attached in 2 s" >&2; exit 1; }
# what the analyzer measures of it: the second slice's 100 ms held about 27
# steps of 3.7 ms, which take 19 ms at the usual 0.7: 20 ms slower at least
slow=$("$CS_ANALYZE" --json "$dir/paced.lmdb" | python3 -c \
    'import json, sys; print(json.load(sys.stdin)["gpu"]["slowdown_ns"])') || exit 1
echo "gpu_budget: slowdown inside the slices: $slow ns"
[ "$slow" -ge 20000000 ] || { echo "gpu_budget: slowdown_ns: want 20 ms or more" >&2; exit 1; }
[ "$fixed" -ge 3 ] || { echo "gpu_budget: budget off: want 3 slices or more" >&2; exit 1; }
[ "$cheap" -ge 2 ] || { echo "gpu_budget: free switches: want 2 slices or more" >&2; exit 1; }
