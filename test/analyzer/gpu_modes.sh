#!/bin/sh
# gpu_modes.sh CUDASPY WORKLOAD DIR: cli.gpu_modes, issue 22's calibration on
# the CPU. Two workloads of cause_workload, each recorded with GPU activity
# full and sampled (slices of 50 ms every 250 ms, so that a short run has
# several): each mode must put the GPU's busy share near the planted one,
# and the two must agree within 5 points.
#   duty      a 6 ms kernel and its sync, then 4 ms of host work: busy 60 %
#             (a little less for the sync's wake-up)
#   slowhost  250 ms of host work, then 10 ms of kernels: busy 4 %; whole
#             slices see no GPU work, and must count as idle, not be dropped
# Needs CS_ANALYZE and CS_JSON_EXPECT (test/analyzer.cmake).
set -u
cudaspy=$1 workload=$2 dir=$3
rm -rf "$dir" && mkdir -p "$dir" || exit 1
. "$(dirname "$0")/shield.sh" # the duty cycle is timed: other load would change it
busy() { # MODE WORKLOAD LO:HI: record, check the source and the range, print busy %
    CUDASPY_GPU_ACTIVITY=$1 CUDASPY_GPU_SAMPLE=50/250 shield "$cudaspy" record -q \
        -o "$dir/$2-$1.lmdb" --no-host -- "$workload" "$2" 3 >"$dir/$2-$1.log" 2>&1 ||
        { cat "$dir/$2-$1.log" >&2; echo "gpu_modes: $2 $1: recording failed" >&2; exit 1; }
    want=exact
    [ "$1" = sampled ] && want=sampled
    "$CS_ANALYZE" --json "$dir/$2-$1.lmdb" | "$CS_JSON_EXPECT" "gpu=$want" "busy=$3" print_busy ||
        { echo "gpu_modes: $2 $1: wrong source or busy share" >&2; exit 1; }
}
for w in duty:50:66 slowhost:1:8; do
    name=${w%%:*} range=${w#*:}
    full=$(busy full "$name" "$range") || exit 1
    sampled=$(busy sampled "$name" "$range") || exit 1
    echo "gpu_modes: $name: busy $full % (full), $sampled % (sampled)"
    awk -v a="$full" -v b="$sampled" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= 5) }' ||
        { echo "gpu_modes: $name: full and sampled differ by more than 5 points" >&2; exit 1; }
done
