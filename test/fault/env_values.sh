#!/bin/bash
# env_values.sh BUILD: the shim takes its settings from the environment only;
# bad CUDASPY_RING_KB and CUDASPY_STACK_US values (letters, signs, zero,
# overflow, units) give exactly one warning line on stderr and the default,
# never a crash: the program's stdout and status are as untraced and every
# call is still recorded.
. "$(dirname "$0")/fault_common.sh"
RC="$B/fake/client_rt_shared"
"$RC" >"$T/plain.out" 2>/dev/null || fail "untraced client failed"
check() { # VAR VALUE PATTERN
    local var=$1 val=$2 pat=$3
    env "$var=$val" FAKECUDA_EXPECT="$T/client.exp" "$B/cudaspy" record -o "$T/run.lmdb" \
        --no-host -- "$RC" >"$T/out" 2>"$T/err" || fail "$var='$val': client exited $?"
    cmp -s "$T/plain.out" "$T/out" || fail "$var='$val': stdout differs from the untraced run"
    grep -v '^kernel name' "$T/err" >"$T/err2" || true
    [ "$(wc -l <"$T/err2")" -eq 1 ] || { cat "$T/err2" >&2; fail "$var='$val': want one line"; }
    grep -qE "$pat" "$T/err2" || { cat "$T/err2" >&2; fail "$var='$val': unexpected message"; }
    "$B/test_shim_check" --wait 30 "$T/run.lmdb" "$T/client.exp" >/dev/null ||
        fail "$var='$val': calls not recorded with the default"
    n=$((n + 1))
}
n=0
for v in abc -1 0 3 1048577 99999999999999999999999 12k ' 64'; do
    check CUDASPY_RING_KB "$v" \
        '^cudaspy\[[0-9]+\]: warning: CUDASPY_RING_KB=.* is not a size from 4 to 1048576 KiB; using 1024$'
done
for v in abc -5 1e3 99999999999999999999999 60000001 10us; do
    check CUDASPY_STACK_US "$v" \
        '^cudaspy\[[0-9]+\]: warning: CUDASPY_STACK_US is not a number of microseconds from 0 to 60000000; stacks off$'
done
say "$n bad values: one warning each, defaults used, every call recorded"
