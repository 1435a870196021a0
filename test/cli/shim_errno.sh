#!/bin/bash
# shim_errno.sh BUILD: every call's result and errno, and so the client's
# stdout, are the same with and without the shim, and the run file still
# holds every call:
#  1. with errors injected by the fake driver (which also set errno to EDOM),
#     failed calls included;
#  2. with every fake driver call leaving an errno of its own
#     (FAKECUDA_ERRNO), each call slow enough for a native stack
#     (CUDASPY_STACK_US): the shim's own driver calls after the program's
#     (the thread's device, the first launch's kernel name) and the stack
#     walk must not show in errno, since the wrappers do not save it.
. "$(dirname "$0")/shim_common.sh"
C="$B/fake/test_shim_errno"
fails="cuMemAlloc_v2@2=2,cuMemcpyHtoD_v2@*=1,cuStreamSynchronize@1=400,cuMemcpyHtoDAsync_v2@2=700"

FAKECUDA_FAIL=$fails run_plain "$T/plain.out" "$T/plain.exp" "$C"
FAKECUDA_FAIL=$fails run_traced record "$T/run.lmdb" "$T/traced.out" "$T/traced.exp" "$C"
same_stdout "$T/plain.out" "$T/traced.out"
grep -q "gpa cuMemAlloc_v2 rc=2 errno=33" "$T/traced.out" || fail "injected error not seen"
grep -q 'export cuMemcpyHtoD_v2 rc=1 errno=33' "$T/traced.out" || fail "injected error not seen"
grep -q 'export cuMemsetD8_v2 rc=0 errno=4242' "$T/traced.out" || fail "errno changed on success"
"$B/test_shim_check" --wait 30 --runtime static "$T/run.lmdb" "$T/traced.exp" ||
    fail "run file does not match the calls made"

export FAKECUDA_ERRNO=1 FAKECUDA_LAT_NS='*=3000'
run_plain "$T/plain2.out" "$T/plain2.exp" "$C"
CUDASPY_STACK_US=1 run_traced record "$T/run2.lmdb" "$T/traced2.out" "$T/traced2.exp" "$C"
same_stdout "$T/plain2.out" "$T/traced2.out"
grep -q 'export cuLaunchKernel rc=0 errno=1[0-9][0-9][0-9]$' "$T/traced2.out" ||
    fail "FAKECUDA_ERRNO had no effect"
"$B/test_shim_check" --wait 30 --runtime static --stacks "$T/run2.lmdb" "$T/traced2.exp" ||
    fail "run file does not match the calls made, or slow calls lack stacks (errno pass)"
