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

# calls SINCE UNTIL: outermost CUDA calls that entered in [SINCE, UNTIL) s
calls() {
    "$B/cudaspy-analyze" --json --since "$1" --until "$2" "$T/run.lmdb" >"$T/w.json" ||
        fail "cudaspy-analyze --since $1 --until $2 exited $?"
    sed -n 's/.*"outermost_calls": \([0-9]*\).*/\1/p' "$T/w.json"
}
# the inner 120 ms of each phase (the collector flips a phase up to a poll
# late); the client runs about 1.3 s (phases 0-5), and starts late on a
# loaded machine: two on phases with calls are enough
on=0 off=0 busy=0
for k in 0 1 2 3 4 5; do
    n=$(calls "$(awk "BEGIN { print $k * 0.2 + 0.04 }")" "$(awk "BEGIN { print $k * 0.2 + 0.16 }")")
    [ -n "$n" ] || fail "no outermost_calls in phase $k"
    if [ $((k % 2)) = 0 ]; then
        on=$((on + n))
        [ "$n" -gt 0 ] && busy=$((busy + 1))
    else
        off=$((off + n))
    fi
done
[ "$busy" -ge 2 ] || fail "only $busy on phase(s) hold calls"
[ "$on" -ge 100 ] || fail "on phases hold $on calls, want >= 100"
[ $((off * 50)) -le "$on" ] || fail "off phases hold $off calls against $on in on phases"
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
