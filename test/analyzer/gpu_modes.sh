#!/bin/sh
# gpu_modes.sh CUDASPY WORKLOAD DIR: cli.gpu_modes, issue 22's calibration on
# the CPU: cause_workload duty (a 6 ms kernel and its sync, then 4 ms of host
# work: the GPU busy 60 % of the time, a little less for the sync's wake-up)
# recorded with GPU activity full and sampled (slices of 50 ms every 250 ms,
# so that a short run has several); each must put the GPU's busy share near
# the duty cycle, and the two must agree within 5 points.
# Needs CS_ANALYZE and CS_JSON_EXPECT (test/analyzer.cmake).
set -u
cudaspy=$1 workload=$2 dir=$3
rm -rf "$dir" && mkdir -p "$dir" || exit 1
busy() { # MODE: record in that mode, check the source, print busy %
    CUDASPY_GPU_ACTIVITY=$1 CUDASPY_GPU_SAMPLE=50/250 "$cudaspy" record -q -o "$dir/$1.lmdb" \
        --no-host -- "$workload" duty 3 >"$dir/$1.log" 2>&1 ||
        { cat "$dir/$1.log" >&2; echo "gpu_modes: $1: recording failed" >&2; exit 1; }
    want=exact
    [ "$1" = sampled ] && want=sampled
    "$CS_ANALYZE" --json "$dir/$1.lmdb" | "$CS_JSON_EXPECT" "gpu=$want" busy=50:66 print_busy ||
        { echo "gpu_modes: $1: wrong source or busy share" >&2; exit 1; }
}
full=$(busy full) || exit 1
sampled=$(busy sampled) || exit 1
echo "gpu_modes: duty 60 %: busy $full % (full), $sampled % (sampled)"
awk -v a="$full" -v b="$sampled" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= 5) }' ||
    { echo "gpu_modes: full and sampled differ by more than 5 points" >&2; exit 1; }
