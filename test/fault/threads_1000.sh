#!/bin/bash
# threads_1000.sh BUILD: one process with 1000 threads, each making 20
# launch + synchronize pairs: no deadlock, and the run file holds every
# call the process made (test_shim_check against the fake's own counts).
. "$(dirname "$0")/fault_common.sh"
FAKECUDA_EXPECT="$T/client.exp" timeout 100 "$B/cudaspy" record -o "$T/run.lmdb" --no-host -- \
    "$C" threads 1000 20 >"$T/out" 2>"$T/err" || { st=$?; cat "$T/err" >&2; fail "exited $st (hang?)"; }
grep -qx 'threads 1000 of 1000' "$T/out" || fail "not every thread started: $(cat "$T/out")"
"$B/test_shim_check" --wait 30 --runtime static "$T/run.lmdb" "$T/client.exp" ||
    fail "run file does not match the 1000 threads' calls"
say "1000 threads x 40 calls: every call recorded"
