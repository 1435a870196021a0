#!/bin/bash
# kill_sampler.sh BUILD ROUNDS: SIGKILL cudaspy-sampler at a random moment
# while the traced program runs (ROUNDS times, the first with host
# sampling): the program's stdout and exit status must be those of an
# untraced run. The program is a shell running fault_client and printing
# its status, so the status survives the sampler (its parent) dying.
. "$(dirname "$0")/fault_common.sh"
ROUNDS=${1:-5}
ITERS=400
seed_init
export FAKECUDA_LAT_NS=cuStreamSynchronize=1000000 FAKECUDA_LAT_MODE=sleep
prog() { echo "$C loop '$1' $ITERS; echo exit \$?"; }
sh -c "$(prog "$T/count.plain")" >"$T/plain.out" 2>"$T/plain.err"
grep -q '^exit 0$' "$T/plain.out" || fail "untraced run failed: $(cat "$T/plain.out" "$T/plain.err")"
for i in $(seq "$ROUNDS"); do
    cnt="$T/count.$i" host=--no-host
    [ "$i" -eq 1 ] && host=
    "$B/cudaspy" record -o "$T/run.$i.lmdb" $host -- sh -c "$(prog "$cnt")" \
        >"$T/out.$i" 2>"$T/err.$i" &
    rec=$!
    wait_ready "$cnt"
    ms=$((RANDOM % 300))
    sleep_ms $ms
    kill -KILL $rec
    { wait $rec; } 2>/dev/null
    for _ in $(seq 600); do grep -q '^exit' "$T/out.$i" && break; sleep 0.05; done
    cmp -s "$T/plain.out" "$T/out.$i" ||
        { diff "$T/plain.out" "$T/out.$i" >&2; cat "$T/err.$i" >&2;
          fail "round $i: output differs after the sampler was killed at +$ms ms"; }
    say "round $i: sampler killed $ms ms into the loop; output and exit status as untraced"
done
say "$ROUNDS sampler kills, program output and exit status identical to the untraced run"
