#!/bin/bash
# signal_sampler.sh BUILD: SIGTERM, then (another run) SIGINT, to
# cudaspy-sampler while the traced program runs: the sampler exits on its
# own, the run file is complete (clean_shutdown 1) and holds the program's
# calls up to the signal, less at most the last 100 ms (fault_check against
# a copy of the program's count taken just before the signal). The program
# itself runs on, untouched, and is killed by the test.
. "$(dirname "$0")/fault_common.sh"
export FAKECUDA_LAT_NS=cuStreamSynchronize=200000 FAKECUDA_LAT_MODE=sleep
for sig in TERM INT; do
    cnt="$T/count.$sig" run="$T/run.$sig.lmdb"
    "$B/cudaspy" record -o "$run" --no-host -- "$C" loop "$cnt" >/dev/null 2>"$T/err.$sig" &
    rec=$!
    wait_ready "$cnt"
    sleep_ms 300
    cp "$cnt" "$cnt.at_signal" # what the program had completed just before the signal
    kill -$sig $rec
    pid=$(u32_at "$cnt" 0)
    timeout 20 tail --pid=$rec -f /dev/null || fail "SIG$sig: the sampler did not exit in 20 s"
    wait $rec
    st=$?
    kill -0 "$pid" 2>/dev/null || fail "SIG$sig: the traced program died with the sampler"
    kill -KILL "$pid"
    [ $st -eq 0 ] || { cat "$T/err.$sig" >&2; fail "SIG$sig: sampler exited $st"; }
    line=$("$B/fault_check" "$run" "$cnt.at_signal" 100) || fail "SIG$sig: $line"
    case $line in *"clean_shutdown 1") ;; *) fail "SIG$sig: not a clean shutdown: $line" ;; esac
    "$B/cudaspy-analyze" --json "$run" >/dev/null || fail "SIG$sig: the run file does not analyse"
    say "SIG$sig: $line"
done
