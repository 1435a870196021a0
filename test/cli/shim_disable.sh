#!/bin/bash
# shim_disable.sh BUILD: CUDASPY_DISABLE=1 makes the shim a pass-through: no
# collector, no run file, no record, same output; under cudaspy record the
# run holds no CUDA record.
. "$(dirname "$0")/shim_common.sh"
C="$B/fake/client_rt_shared"
run_plain "$T/plain.out" "$T/plain.exp" "$C"
mkdir "$T/cwd"
(cd "$T/cwd" && CUDASPY_DISABLE=1 LD_PRELOAD="$B/libcudaspy.so" "$C" >"$T/off.out") ||
    fail "disabled run exited $?"
same_stdout "$T/plain.out" "$T/off.out"
[ -z "$(ls -A "$T/cwd")" ] || fail "disabled shim wrote files: $(ls -A "$T/cwd")"
CUDASPY_DISABLE=1 "$B/cudaspy" record -o "$T/run.lmdb" --no-host -- "$C" >"$T/rec.out" ||
    fail "disabled record exited $?"
same_stdout "$T/plain.out" "$T/rec.out"
"$B/test_shim_check" --wait 30 --none "$T/run.lmdb" || fail "disabled shim recorded"
