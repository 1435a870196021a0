#!/bin/bash
# capture.sh BUILD PYTHON: capture ranges (issue 33, docs/capture.md).
# test/python/py_capture.py logs when each of its launches entered and
# returned; the run must hold exactly the launches made inside the ranges
# it names (those within CAPTURE_EDGE_MS of an edge may go either way: the
# collector turns recording on and off within a tick), and the analysis
# must cover those ranges alone:
# 1. record --delay 0.6 --duration 0.6 (one range);
# 2. record --capture signal (GPU activity in full), `cudaspy ctl PID
#    start|stop` twice (two ranges, the time between them named as not
#    recorded; GPU records in both ranges);
# 3. LD_PRELOAD with CUDASPY_DELAY and CUDASPY_CAPTURE=signal: the sampler
#    the shim starts takes them (ctl finds it by its --pid);
# 4. bad input: seconds that are not, --duty with a range, ctl of a pid
#    that nothing records: one line, exit 2 or 1.
. "$(dirname "$0")/shim_common.sh"
PY=$1
D=$(cd "$(dirname "$0")/../python" && pwd)
export LD_LIBRARY_PATH="$B/fake${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
EDGE_MS=${CAPTURE_EDGE_MS:-15}

# check RUN LOG NRANGES: the launches in the run against the log
check() {
    "$B/cudaspy-analyze" --json "$1" >"$T/r.json" 2>"$T/r.err" || fail "analysis of $1 failed"
    env -u LD_PRELOAD python3 - "$T/r.json" "$2" "$3" "$EDGE_MS" <<'PY' || fail "$1: wrong ranges"
import json, sys
rep, log, want, edge = json.load(open(sys.argv[1])), sys.argv[2], int(sys.argv[3]), int(sys.argv[4]) * 10**6
f = rep["run"]["files"][0]
rg = [(f["t_start_ns"] + a, f["t_start_ns"] + b) for a, b in f["capture"]["ranges"]]
assert len(rg) == want, rg
calls = [tuple(map(int, l.split())) for l in open(log)]
inside = sum(1 for t0, t1 in calls if any(a + edge <= t0 and t1 <= b - edge for a, b in rg))
near = sum(1 for t0, t1 in calls if any(a - edge <= t1 and t0 <= b + edge for a, b in rg))
got = sum(a["count"] for a in rep["apis"] if a["api"] == "cudaLaunchKernel" and not a.get("nested"))
print("capture: %d ranges %s; launches recorded %d, inside %d, near an edge too %d, of %d" % (
    len(rg), ["%.2f-%.2f" % ((a - f["t_start_ns"]) / 1e9, (b - f["t_start_ns"]) / 1e9) for a, b in rg],
    got, inside, near, len(calls)))
assert inside > 50 and inside <= got <= near, (inside, got, near)
assert f["window_start_ns"] == rg[0][0] - f["t_start_ns"] and f["window_end_ns"] == rg[-1][1] - f["t_start_ns"]
gap = sum(b[0] - a[1] for a, b in zip(rg, rg[1:]))
if f["capture"]["mode"] == "signal":  # GPU activity in full: CUPTI on again in each range
    cov = rep["gpu"]["devices"][0] if rep.get("gpu", {}).get("devices") else {}
    print("capture: GPU covered %s" % {k: v for k, v in cov.items() if "cover" in k})
assert f["capture"]["not_recorded_ns"] == gap, f["capture"]
assert (gap > 0) == any("not recorded" in m for m in rep["missing"]), rep["missing"]
PY
}

# 1. delay and duration
"$B/cudaspy" record -o "$T/d.lmdb" --delay 0.6 --duration 0.6 -- \
    "$PY" "$D/py_capture.py" 1.8 "$T/d.log" >"$T/out" 2>"$T/err" || { cat "$T/err"; fail "record --delay exited $?"; }
check "$T/d.lmdb" "$T/d.log" 1
"$B/cudaspy-analyze" "$T/d.lmdb" >"$T/d.txt" 2>&1 || fail "text report failed"
grep -q '^capture  1 range recorded (delay 0.6 s, duration 0.6 s): 0.6[0-9]-1.2[0-9] s' "$T/d.txt" ||
    { grep capture "$T/d.txt"; fail "no capture line"; }

# 2. signal, twice, from cudaspy ctl
ctl() { "$B/cudaspy" ctl "$(cat "$1.pid")" "$2" || fail "ctl $2 exited $?"; }
"$B/cudaspy" record -o "$T/s.lmdb" --capture signal --gpu-activity full -- \
    "$PY" "$D/py_capture.py" 2.2 "$T/s.log" >"$T/out" 2>"$T/err" &
rec=$!
for _ in $(seq 100); do [ -s "$T/s.log.pid" ] && break; sleep 0.05; done
sleep 0.3; ctl "$T/s.log" start; sleep 0.5; ctl "$T/s.log" stop
sleep 0.4; ctl "$T/s.log" start; sleep 0.4; ctl "$T/s.log" stop
wait $rec || { cat "$T/err"; fail "record --capture signal exited $?"; }
check "$T/s.lmdb" "$T/s.log" 2

# 3. LD_PRELOAD: the auto-started sampler takes CUDASPY_DELAY and CUDASPY_CAPTURE
CUDASPY_OUTPUT="$T/p.lmdb" CUDASPY_DELAY=0.2 CUDASPY_CAPTURE=signal LD_PRELOAD="$B/libcudaspy.so" \
    "$PY" "$D/py_capture.py" 1.6 "$T/p.log" >"$T/out" 2>"$T/err" &
app=$!
for _ in $(seq 100); do [ -s "$T/p.log.pid" ] && break; sleep 0.05; done
sleep 0.4; ctl "$T/p.log" start; sleep 0.6; ctl "$T/p.log" stop
wait $app || { cat "$T/err"; fail "preloaded run exited $?"; }
for _ in $(seq 100); do "$B/cudaspy-analyze" --json "$T/p.lmdb" >/dev/null 2>&1 && break; sleep 0.1; done
check "$T/p.lmdb" "$T/p.log" 1
# the sampler the shim started ends with the program, paused or not
app_pid=$(cat "$T/p.log.pid")
for _ in $(seq 100); do pgrep -f -- "--pid $app_pid" >/dev/null || break; sleep 0.1; done
pgrep -f -- "--pid $app_pid" >/dev/null && { pkill -f -- "--pid $app_pid"; fail "the sampler outlived the program"; }

# 4. bad input
"$B/cudaspy" record --delay 1s -- true 2>"$T/e1"; rc=$?
[ $rc = 2 ] && grep -q "invalid seconds '1s'" "$T/e1" || fail "--delay 1s: exit $rc: $(cat "$T/e1")"
"$B/cudaspy" record --duty 100 --duration 1 -- true 2>"$T/e2"; rc=$?
[ $rc = 2 ] && grep -q "no capture ranges" "$T/e2" || fail "--duty with --duration: exit $rc"
"$B/cudaspy" record --capture sometimes -- true 2>"$T/e3"; rc=$?
[ $rc = 2 ] || fail "--capture sometimes: exit $rc"
"$B/cudaspy" ctl 1 start 2>"$T/e4"; rc=$?
[ $rc = 1 ] && grep -q "no cudaspy-sampler records it" "$T/e4" || fail "ctl 1: exit $rc: $(cat "$T/e4")"
"$B/cudaspy" ctl 1 pause 2>"$T/e5"; rc=$?
[ $rc = 2 ] || fail "ctl pause: exit $rc"
exit 0
