#!/bin/bash
# flight_keep.sh BUILD: the flight recorder's trigger (record --max-size 2M
# --keep-on, issue 33, docs/capture.md). capture_workload runs ~10 s of 2.5
# ms steps (top-level NVTX ranges) with 6 slow steps (150 ms) near 3 s,
# recorded twice under a 2 MiB cap:
#  - without a trigger, the slow steps are evicted (the tail alone remains);
#  - with --keep-on 'step_p99>4x' (1.5x fired on a busy CI box before the
#    slow steps; with 20 ms ones 4x never fired under ASan, whose usual p99
#    is 2-3 times a plain build's; 50 ms ones did not fire beside two busy
#    loops, where the earlier windows' p99 reached 16 ms; 150 ms ones are
#    60x a quiet step, 9x that; 6 of them, 0.9 s, lie inside what the
#    trigger keeps: from its window's start to 1 s after it matched), the
#    run keeps a
#    window holding every slow step (the workload's own times) and the
#    tail, the file stays at or under the cap, and the analysis finds the
#    slow steps (max >= 150 ms) and says what was evicted between the two;
#  - --keep-on without --max-size, or with a bad expression: exit 2.
B=${1:?usage: $0 BUILD_DIR}
T=$(mktemp -d /tmp/cs-keep.XXXXXX)
trap 'rc=$?; [ $rc -eq 0 ] && rm -rf "$T"; exit $rc' EXIT
fail() { echo "flight_keep.sh: $*" >&2; exit 1; }
export LD_LIBRARY_PATH="$B/fake${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" CUDASPY_QUIET=1
unset LD_PRELOAD CUDASPY_SOCK

record() { # record NAME [--keep-on EXPR]
    local name=$1; shift
    "$B/cudaspy" record -o "$T/$name.lmdb" --max-size 2M "$@" -- \
        "$B/fake/capture_workload" 3600 25 0 0 2500 1200 1205 150000 >"$T/$name.out" 2>"$T/$name.err" ||
        { cat "$T/$name.err"; fail "record $name exited $?"; }
    "$B/cudaspy-analyze" --json "$T/$name.lmdb" >"$T/$name.json" 2>"$T/$name.aerr" ||
        fail "$name: analysis failed: $(cat "$T/$name.aerr")"
}
record tail
record keep --keep-on 'step_p99>4x'
env -u LD_PRELOAD python3 - "$T" "$(stat -c %s "$T/keep.lmdb")" <<'PY' || fail "wrong kept window"
import json, re, sys
T, size = sys.argv[1], int(sys.argv[2])
def slow(name):  # the workload's slow steps: CLOCK_MONOTONIC ns, as the run's
    return map(int, re.search(r"at (\d+)-(\d+)", open(T + "/%s.out" % name).read()).groups())
t0, t1 = slow("keep")
tail, keep = json.load(open(T + "/tail.json")), json.load(open(T + "/keep.json"))
f = keep["run"]["files"][0]
start = f["t_start_ns"]
print("tail only: window %.2f-%.2f s, steps max %.1f ms" % (
    tail["run"]["files"][0]["window_start_ns"] / 1e9, tail["run"]["files"][0]["window_end_ns"] / 1e9,
    tail["steps"]["max_ns"] / 1e6))
print("kept: %s; slow steps at %.2f-%.2f s; steps %d, max %.1f ms; file %d bytes" % (
    f.get("capture"), (t0 - start) / 1e9, (t1 - start) / 1e9, keep["steps"]["count"],
    keep["steps"]["max_ns"] / 1e6, size))
tf = tail["run"]["files"][0]
assert tf["t_start_ns"] + tf["window_start_ns"] > list(slow("tail"))[1], "the tail holds the slow steps"
cap = f["capture"]
assert cap["keep_on"] and cap["mode"] == "step_p99>4x" and len(cap["ranges"]) == 2, cap
k0, k1 = cap["ranges"][0]
assert start + k0 <= t0 and t1 <= start + k1, "the kept window misses the slow steps"
assert keep["steps"]["max_ns"] >= 150e6, keep["steps"]
assert size <= 2 * 1024 * 1024, size
assert any("the trigger kept" in m for m in keep["missing"]), keep["missing"]
PY
"$B/cudaspy" record --keep-on 'step_p99>4x' -- true 2>"$T/e1"; rc=$?
[ $rc = 2 ] && grep -q "give --max-size" "$T/e1" || fail "--keep-on without --max-size: exit $rc"
"$B/cudaspy-analyze" watch --keep-on 'step_p99>' "$T/keep.lmdb" 2>"$T/e2"; rc=$?
[ $rc = 2 ] && grep -q "invalid EXPR" "$T/e2" || fail "a bad EXPR: exit $rc"
exit 0
