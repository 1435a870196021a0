#!/bin/bash
# shim_no_driver.sh BUILD: a process without any CUDA library that finds the
# shim's exports calls them safely: CUDA_ERROR_NOT_FOUND (500) from driver
# wrappers, cudaErrorInitializationError (3) from runtime ones, and one
# stderr line per layer, not one per call.
. "$(dirname "$0")/shim_common.sh"
CUDASPY_SOCK=@cudaspy-none LD_PRELOAD="$B/libcudaspy.so" "$B/test_shim_nodriver" \
    >"$T/out" 2>"$T/err" || fail "test_shim_nodriver exited $?"
printf 'cuMemAlloc_v2 500\ncudaMalloc 3\ncuMemAlloc_v2 500\ncudaMalloc 3\n' >"$T/want"
same_stdout "$T/want" "$T/out"
[ "$(grep -c 'real driver function not found' "$T/err")" -eq 1 ] || fail "driver line count"
[ "$(grep -c 'real runtime function not found' "$T/err")" -eq 1 ] || fail "runtime line count"
[ "$(wc -l <"$T/err")" -eq 2 ] || { cat "$T/err" >&2; fail "want exactly two stderr lines"; }
