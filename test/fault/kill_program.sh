#!/bin/bash
# kill_program.sh BUILD ROUNDS [SALT]: SIGKILL the traced program at a random moment
# (20..420 ms into its loop) under `cudaspy record`, ROUNDS times. Every run
# file must open and analyse, and lose at most the last 100 ms of the calls
# the program completed (fault_check). The first 5 rounds sample the host
# too. Prints the worst loss over all rounds.
. "$(dirname "$0")/fault_common.sh"
ROUNDS=${1:-50}
seed_init "${2:-0}"
worst_ms=0 worst_calls=0 kills=0
export FAKECUDA_LAT_NS=cuStreamSynchronize=200000 FAKECUDA_LAT_MODE=sleep
for i in $(seq "$ROUNDS"); do
    cnt="$T/count.$i" run="$T/run.$i.lmdb" host=--no-host
    [ "$i" -le 5 ] && host=
    timeout 60 "$B/cudaspy" record -o "$run" $host -- "$C" loop "$cnt" >/dev/null 2>"$T/err.$i" &
    rec=$!
    wait_ready "$cnt"
    sleep_ms $((20 + RANDOM % 400))
    kill -KILL "$(u32_at "$cnt" 0)"
    { wait $rec; } 2>/dev/null
    st=$?
    [ $st -eq 137 ] || { cat "$T/err.$i" >&2; fail "round $i: cudaspy record exited $st, want 137"; }
    kills=$((kills + 1))
    line=$("$B/fault_check" "$run" "$cnt" 100) || fail "round $i: $line"
    "$B/cudaspy-analyze" --json "$run" >/dev/null 2>"$T/an.$i" ||
        { cat "$T/an.$i" >&2; fail "round $i: the run file does not analyse"; }
    set -- $line
    lost_calls=$8 lost_ms=${11}
    [ "$lost_calls" -gt "$worst_calls" ] && worst_calls=$lost_calls
    awk -v a="$lost_ms" -v b="$worst_ms" 'BEGIN{exit !(a > b)}' && worst_ms=$lost_ms
    say "round $i: $line"
    rm -f "$run" "$run-lock"
done
say "$kills kills of the traced program, $kills run files opened and analysed," \
    "lost at most $worst_calls calls, lost_ms max $worst_ms"
