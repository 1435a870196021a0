#!/bin/bash
# analyze_waits.sh BUILD: cudaspy-analyze started while the run's collector
# still writes the file waits for it (one line on stderr), then reads the
# finished run, not degraded; with a bound shorter than the collector's
# work it says so and reads the run as it stands, marked degraded; a run
# whose collector is gone is read at once (docs/analyzer.md, "A run still
# being written").
. "$(dirname "$0")/shim_common.sh"
S="$B/cudaspy-sampler" A="$B/cudaspy-analyze" M="$B/cs_run_meta"

# start_collector RUN SECS: a collector in launch mode, its child asleep
# SECS; returns once the run file names its writer
start_collector() {
    "$S" -o "$1" --no-host -- sleep "$2" >/dev/null 2>&1 &
    for _ in $(seq 200); do
        "$M" "$1" collector_pid 2>/dev/null | grep -q '^collector_pid=[1-9]' && return 0
        sleep 0.05
    done
    fail "the collector never wrote $1's meta"
}

# 1. the collector finishes 2 s on: the analyzer waits, then reads it whole
start_collector "$T/a.lmdb" 2
cpid=$!
t0=$(date +%s%N)
CUDASPY_WAIT_S=30 "$A" --color never "$T/a.lmdb" >"$T/a.txt" 2>"$T/a.err" ||
    { cat "$T/a.err" >&2; fail "analyze exited $?"; }
ms=$((($(date +%s%N) - t0) / 1000000))
wait "$cpid"
[ "$(wc -l <"$T/a.err")" -eq 1 ] || { cat "$T/a.err" >&2; fail "want one stderr line"; }
grep -q "is still writing it: waiting for it (up to 30 s)$" "$T/a.err" ||
    { cat "$T/a.err" >&2; fail "no waiting line"; }
grep -q "degraded" "$T/a.txt" && fail "the finished run reads as degraded"
"$M" "$T/a.lmdb" clean_shutdown | grep -qx clean_shutdown=1 || fail "no clean shutdown"
[ "$ms" -ge 500 ] || fail "analyze returned after $ms ms: it did not wait"

# 2. a bound of 1 s, the collector busy 6 s: read as it stands, degraded
start_collector "$T/b.lmdb" 6
cpid=$!
CUDASPY_WAIT_S=1 "$A" --color never "$T/b.lmdb" >"$T/b.txt" 2>"$T/b.err" ||
    { cat "$T/b.err" >&2; fail "analyze (1 s) exited $?"; }
grep -q "still being written after 1 s: read as it stands$" "$T/b.err" ||
    { cat "$T/b.err" >&2; fail "no 'still being written' line"; }
grep -q "degraded" "$T/b.txt" || fail "the unfinished run is not marked degraded"
# 3. CUDASPY_WAIT_S=0: no wait, no line
CUDASPY_WAIT_S=0 "$A" --color never "$T/b.lmdb" >/dev/null 2>"$T/c.err" || fail "analyze (0) exited $?"
[ -s "$T/c.err" ] && { cat "$T/c.err" >&2; fail "CUDASPY_WAIT_S=0 printed"; }
kill -KILL "$cpid" 2>/dev/null
wait "$cpid" 2>/dev/null

# 4. its collector killed: read at once, degraded, no wait
t0=$(date +%s%N)
"$A" --color never "$T/b.lmdb" >"$T/d.txt" 2>"$T/d.err" || fail "analyze (dead writer) exited $?"
ms=$((($(date +%s%N) - t0) / 1000000))
grep -q "waiting" "$T/d.err" && fail "waited for a dead collector"
grep -q "degraded" "$T/d.txt" || fail "a run whose collector died is not marked degraded"
[ "$ms" -lt 5000 ] || fail "dead writer: analyze took $ms ms"
echo "ok   analyze_waits"
