#!/bin/bash
# cli_big_numbers.sh BUILD: whole-number options given numbers no integer
# type holds are usage errors (exit 2, the option's message), never a cast
# of an out-of-range double (undefined behaviour, found by fuzz_cli:
# `gate --seed 7444444444444444444444`).
. "$(dirname "$0")/fault_common.sh"
want="cudaspy-analyze: gate: expected a whole number (resamples >= 10, samples >= 1)"
for args in "--seed 7444444444444444444444" "--min-calls 1e300" "--resamples 1e10" \
            "--samples 18446744073709551616"; do
    # shellcheck disable=SC2086
    "$B/cudaspy-analyze" gate --baseline "$T/none.json" $args "$T/none.lmdb" 2>"$T/err"
    st=$?
    [ $st -eq 2 ] || fail "gate $args: exit $st, want 2"
    [ "$(head -1 "$T/err")" = "$want" ] || { cat "$T/err" >&2; fail "gate $args: wrong message"; }
done
say "4 out-of-range numbers rejected with exit 2"
