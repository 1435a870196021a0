#!/bin/bash
# shim_errno.sh BUILD: with errors injected by the fake driver (which also
# set errno to EDOM), every call's result and errno, and so the client's
# stdout, are the same with and without the shim; the run file still holds
# every call, failed ones included.
. "$(dirname "$0")/shim_common.sh"
export FAKECUDA_FAIL="cuMemAlloc_v2@2=2,cuMemcpyHtoD_v2@*=1,cuStreamSynchronize@1=400,cuMemcpyHtoDAsync_v2@2=700"
C="$B/fake/test_shim_errno"
run_plain "$T/plain.out" "$T/plain.exp" "$C"
run_traced record "$T/run.lmdb" "$T/traced.out" "$T/traced.exp" "$C"
same_stdout "$T/plain.out" "$T/traced.out"
grep -q "gpa cuMemAlloc_v2 rc=2 errno=33" "$T/traced.out" || fail "injected error not seen"
grep -q 'export cuMemcpyHtoD_v2 rc=1 errno=33' "$T/traced.out" || fail "injected error not seen"
grep -q 'export cuMemsetD8_v2 rc=0 errno=4242' "$T/traced.out" || fail "errno changed on success"
"$B/test_shim_check" --wait 30 --runtime static "$T/run.lmdb" "$T/traced.exp" ||
    fail "run file does not match the calls made"
