#!/bin/bash
# shim_duty.sh BUILD: `cudaspy record --duty 200` records in 200 ms phases,
# on and off in turn from the run's start: calls made in the off phases are
# not in the run (the shims pause), the on phases' are, the program's output
# is unchanged, and the report says the run covers half the time and makes
# no finding (the perf events pause too).
. "$(dirname "$0")/shim_common.sh"
C="$B/fake/client_ranks"
export FAKECUDA_DEVICES=2 FAKECUDA_LAT_NS="cuStreamSynchronize=1000000" FAKECUDA_LAT_MODE=sleep
"$C" control 600 >"$T/plain.out" || fail "untraced run exited $?"
"$B/cudaspy" record -q --duty 200 -o "$T/run.lmdb" -- "$C" control 600 >"$T/rec.out" ||
    fail "record --duty exited $?"
same_stdout "$T/plain.out" "$T/rec.out"

# The off phases are holes in the recorded calls: at least two gaps of
# 150 ms or more between one call and the next (each phase is 200 ms, and
# the client's 1.3 s hold two whole off phases wherever it starts), and
# hundreds of calls around them. Gaps, not fixed windows from the run's
# start: the collector flips a phase when it wakes, which under ASan beside
# a busy loop was 60 ms late (18 calls in the windows then).
"$B/cudaspy-analyze" export --chrome "$T/t.json" "$T/run.lmdb" || fail "export exited $?"
python3 - "$T/t.json" <<'PY' || fail "the off phases are not holes in the recorded calls"
import json, sys
d = json.load(open(sys.argv[1]))
ev = d["traceEvents"] if isinstance(d, dict) else d
ts = sorted(e["ts"] for e in ev if e.get("ph") == "X" and str(e.get("cat", "")).startswith("cuda."))
gaps = [round((b - a) / 1e3) for a, b in zip(ts, ts[1:]) if b - a >= 150e3]
print("shim_duty: %d calls, gaps of %s ms" % (len(ts), gaps))
assert len(ts) >= 100 and len(gaps) >= 2, (len(ts), gaps)
PY
"$B/cudaspy-analyze" --json "$T/run.lmdb" >"$T/all.json" || fail "cudaspy-analyze exited $?"
grep -q '"duty_ns": 200000000' "$T/all.json" || fail "JSON has no duty_ns 200000000"
grep -q '"half the run: recorded in phases of 200 ms on, 200 ms off' "$T/all.json" ||
    fail "missing does not say the run covers the on phases only"
grep -q '"chains": \[\]' "$T/all.json" || fail "findings made from half the scheduling events"
"$B/cudaspy-analyze" "$T/run.lmdb" >"$T/report.txt" || fail "text report exited $?"
grep -q '^  none: not made for a record --duty run (see missing)$' "$T/report.txt" ||
    fail "the text report does not say why it has no finding"
# usage errors
"$B/cudaspy" record --duty -- true 2>"$T/err" && fail "--duty without MS accepted"
grep -q "option --duty needs milliseconds" "$T/err" || fail "no --duty usage message"
"$B/cudaspy" record --duty 0 -o "$T/z.lmdb" -- true 2>"$T/err" && fail "--duty 0 accepted"
grep -q "invalid number '0'" "$T/err" || fail "no message for --duty 0"
exit 0
