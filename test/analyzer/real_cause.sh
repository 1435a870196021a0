#!/bin/sh
# real_cause.sh MODE CUDASPY WORKLOAD DIR: cli.real_cause_<MODE>, a planted
# cause on a REAL recording: the real launcher, sampler and shim record
# test/fake/cause_workload MODE on the fake driver's simulated GPU (with GPU
# activity sampled, the default, from the fake CUPTI), and the report must
# name the planted cause first (clean: no HIGH finding, the GPU busy 90 % or
# more counting the time that outside processes kept it idle: `make
# test-hog` runs it beside a hog, and that contention is real; quiet, it
# reads 95-100 %, under load 91-99 %: the busy share is estimated from 3
# sampled slices; slowinit: the same with a 1.2 s context creation,
# start-up that is neither idle GPU nor active time; syncstep and hostdata: issue 22's two
# misses, found HIGH; syncstep's may come second to outside contention,
# which under CI's hog took 42 % of the CUDA thread and is then the truth).
# expect_cause.sh needs CS_ANALYZE and CS_JSON_EXPECT (test/analyzer.cmake).
# For `external` it first starts CPU hogs outside the traced tree (their own
# session, not children of the traced program), killed on every exit path.
set -u
mode=$1 cudaspy=$2 workload=$3 dir=$4
secs=${REAL_CAUSE_SECS:-3} wmode=$1
case $mode in
tree) want=top=cpu_contention_tree ;;
external) want=top=cpu_contention_external ;;
starve) want=top=data_pipeline_starvation ;;
pageable) want=top=pageable_memcpy ;;
churn) want=top=alloc_churn ;;
sync) want=top=sync_per_iteration ;;
clean) want="nohigh gpu=sampled busy_ext=90:110" ;;
slowinit) want="nohigh gpu=sampled busy_ext=90:110" wmode=clean secs=${REAL_CAUSE_SECS:-4}
    FAKECUDA_LAT_NS=cuDevicePrimaryCtxRetain=1200000000 && export FAKECUDA_LAT_NS ;;
syncstep) want="top_in=sync_per_iteration,host_bound,cpu_contention_external high_in=sync_per_iteration,host_bound gpu=sampled" ;;
hostdata) want="top=host_bound top_sev=HIGH gpu=sampled" ;;
*) echo "real_cause: $mode: unknown mode" >&2; exit 2 ;;
esac
rm -rf "$dir" && mkdir -p "$dir" || exit 1
run=$dir/$mode.lmdb

hogs=""
stop_hogs() {
    for p in $hogs; do kill "$p" 2>/dev/null; done
    for p in $hogs; do wait "$p" 2>/dev/null; done
    hogs=""
}
trap stop_hogs EXIT
trap 'exit 1' INT TERM HUP
if [ "$mode" = external ]; then
    # 2 x CPUs + 2 spinners; each also stops by itself after secs + 30 s
    n=$(( $(nproc) * 2 + 2 ))
    while [ "$n" -gt 0 ]; do
        setsid "$workload" hog $((secs + 30)) &
        hogs="$hogs $!"
        n=$((n - 1))
    done
fi

# Causes other than CPU contention are recorded shielded (shield.sh): the
# box's other sessions then delay the workload less, and outside contention
# does not outgrow the planted cause.
. "$(dirname "$0")/shield.sh"
shielded() {
    case $mode in
    tree | external) "$@" ;;
    *) shield "$@" ;;
    esac
}
shielded "$cudaspy" record -q -o "$run" -- "$workload" "$wmode" "$secs" >"$run.log" 2>&1 ||
    { cat "$run.log" >&2; echo "real_cause: $mode: recording failed" >&2; exit 1; }
stop_hogs
cat "$run.log"
# the host causes need the scheduler events of tier A (perf, as root)
tier=$("${CS_ANALYZE:-cudaspy-analyze}" "$run" | sed -n 's/.*sampler tier \([A-Za-z]*\).*/\1/p' | head -n 1)
[ "$tier" = A ] || { echo "real_cause: $mode: skipped: sampler tier ${tier:-?}, not A"; exit 77; }
# shellcheck disable=SC2086 # $want is a list of checks
if ! sh "$(dirname "$0")/expect_cause.sh" "$run" $want; then
    "${CS_ANALYZE:-cudaspy-analyze}" "$run" | sed -n '/^FINDINGS/,/^LATENCY/p' >&2
    exit 1
fi
