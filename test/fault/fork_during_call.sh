#!/bin/bash
# fork_during_call.sh BUILD: the program forks while another of its threads
# is inside a CUDA call (cuStreamSynchronize held 300 ms by the fake
# driver); the child makes CUDA calls of its own. No deadlock (fault_client
# gives up after 30 s), and each process's records match what it did.
. "$(dirname "$0")/fault_common.sh"
mkdir "$T/exp"
FAKECUDA_LAT_NS=cuStreamSynchronize=300000000 FAKECUDA_LAT_MODE=sleep \
FAKECUDA_EXPECT="$T/exp/%p.exp" timeout 60 "$B/cudaspy" record -o "$T/run.lmdb" --no-host -- \
    "$C" forkcall >"$T/out" 2>"$T/err" || { st=$?; cat "$T/err" >&2; fail "exited $st (deadlock?)"; }
grep -qx 'forkcall ok' "$T/out" || fail "no 'forkcall ok'"
n=$(ls "$T/exp" | wc -l)
[ "$n" -eq 2 ] || fail "expectation files: got $n, want 2"
"$B/test_shim_check" --wait 30 --runtime static "$T/run.lmdb" "$T"/exp/*.exp ||
    fail "run file does not match what the two processes did"
say "fork inside a 300 ms CUDA call: parent and child recorded, no deadlock"
