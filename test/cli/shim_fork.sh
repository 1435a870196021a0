#!/bin/bash
# shim_fork.sh BUILD [CLIENT] WORKERS THREADS ITERS: forked workers with
# threads each record into their own ring; every process's records match
# what it did (no loss, no duplicate), and nothing hangs. CLIENT (under
# fake/) defaults to test_shim_fork.
. "$(dirname "$0")/shim_common.sh"
C=test_shim_fork
case $1 in [0-9]*) ;; *) C=$1; shift ;; esac
mkdir "$T/exp"
FAKECUDA_EXPECT="$T/exp/%p.exp" timeout 100 "$B/cudaspy" record -o "$T/run.lmdb" --no-host -- \
    "$B/fake/$C" "$@" >"$T/out" || fail "$C exited $? (hang?)"
n=$(ls "$T/exp" | wc -l)
[ "$n" -eq $(($1 + 1)) ] || fail "expectation files: got $n, want $(($1 + 1))"
"$B/test_shim_check" --wait 30 --runtime static "$T/run.lmdb" "$T"/exp/*.exp ||
    fail "run file does not match what the processes did"
