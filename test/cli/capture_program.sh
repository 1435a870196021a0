#!/bin/bash
# capture_program.sh BUILD: capture ranges the program bounds (issue 33,
# docs/capture.md). capture_workload runs 12 steps (top-level NVTX ranges
# "step", 3 launches and a sync each, an "eval" range of 2 launches every
# 4th step, cudaProfilerStart/Stop around steps 3-5); each mode must record
# exactly the launches and steps it names, nothing else, whatever the
# collector's timing (the shim turns its own recording on and off):
# 1. --capture steps:3-5 (the step range found by itself), steps:2-6:step;
# 2. --capture cudaProfilerApi; 3. --capture nvtx:eval:2 (two ranges);
# 4. LD_PRELOAD with CUDASPY_CAPTURE=steps:7-9; 5. bad words: exit 2.
. "$(dirname "$0")/shim_common.sh"
export LD_LIBRARY_PATH="$B/fake${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
W="$B/fake/capture_workload"

# check RUN MODE LAUNCHES STEPS RANGES: the run against the truth (STEPS 0:
# the steps are not NVTX ranges whole in the window)
check() {
    "$B/cudaspy-analyze" --json "$1" >"$T/r.json" 2>"$T/r.err" ||
        fail "$2: analysis failed: $(cat "$T/r.err")"
    env -u LD_PRELOAD python3 - "$T/r.json" "$@" <<'PY' || fail "$2: wrong capture ($(cat "$T/err"))"
import json, sys
rep = json.load(open(sys.argv[1]))
mode, launches, steps, ranges = sys.argv[3], *map(int, sys.argv[4:7])
f = rep["run"]["files"][0]
got = sum(a["count"] for a in rep["apis"] if a["api"] == "cudaLaunchKernel" and not a.get("nested"))
print("%s: %s; launches %d (want %d), steps %d (%s); counts %s, dropped %s, lost %s" % (
      mode, f["capture"], got, launches, rep["steps"]["count"], rep["steps"]["how"], f["counts"],
      f["cuda_dropped"], f["shim_lost"]))
assert f["capture"]["mode"] == mode, f["capture"]
assert len(f["capture"]["ranges"]) == ranges, f["capture"]
assert got == launches, (got, launches)
if steps:
    assert rep["steps"]["count"] == steps and rep["steps"]["source"] == "nvtx", rep["steps"]
PY
}

run() { # run MODE STEPS PA PB: record capture_workload under --capture MODE
    "$B/cudaspy" record -q -o "$T/$5.lmdb" --capture "$1" -- "$W" "$2" 3 "$3" "$4" 2000 \
        >"$T/out" 2>"$T/err" || { cat "$T/err"; fail "record --capture $1 exited $?"; }
}
# 1. steps: 3 launches a step, 2 more in step 4 and 8
run steps:3-5 12 0 0 s1 && check "$T/s1.lmdb" steps:3-5 11 3 1
run steps:2-6:step 12 0 0 s2 && check "$T/s2.lmdb" steps:2-6:step 17 5 1
"$B/cudaspy-analyze" "$T/s1.lmdb" >"$T/s1.txt" 2>&1 || fail "text report failed"
grep -q '^capture  1 range recorded (steps:3-5)' "$T/s1.txt" || { grep capture "$T/s1.txt"; fail "no capture line"; }
# 2. cudaProfilerStart in step 3 .. cudaProfilerStop in step 5
run cudaProfilerApi 12 3 5 p && check "$T/p.lmdb" cudaProfilerApi 11 0 1
# 3. the first two "eval" ranges (steps 4 and 8): 2 launches each
run nvtx:eval:2 12 0 0 n && check "$T/n.lmdb" nvtx:eval:2 4 0 2
# 4. LD_PRELOAD: the shim reads CUDASPY_CAPTURE, the sampler it starts too
CUDASPY_OUTPUT="$T/l.lmdb" CUDASPY_CAPTURE=steps:7-9 LD_PRELOAD="$B/libcudaspy.so" \
    "$W" 12 3 0 0 2000 >"$T/out" 2>"$T/err" || { cat "$T/err"; fail "preloaded run exited $?"; }
for _ in $(seq 100); do "$B/cudaspy-analyze" --json "$T/l.lmdb" >/dev/null 2>&1 && break; sleep 0.1; done
check "$T/l.lmdb" steps:7-9 11 3 1
# 5. bad words
for bad in steps:5-3 steps:0-2 steps:3 nvtx: nvtx:x:0 cudaprofilerapi; do
    "$B/cudaspy" record --capture "$bad" -- true 2>"$T/e"; rc=$?
    [ $rc = 2 ] && grep -q "invalid capture '$bad'" "$T/e" || fail "--capture $bad: exit $rc: $(cat "$T/e")"
done
exit 0
