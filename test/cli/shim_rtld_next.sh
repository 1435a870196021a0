#!/bin/bash
# shim_rtld_next.sh BUILD: dlsym(RTLD_NEXT, ...) and dlsym(RTLD_DEFAULT, ...)
# find the same definitions with and without the shim (its dlsym must
# tail-call glibc's for them).
. "$(dirname "$0")/shim_common.sh"
"$B/test_shim_rtld" >"$T/plain" || fail "test_shim_rtld exited $?"
CUDASPY_DISABLE=0 CUDASPY_SOCK=@cudaspy-none LD_PRELOAD="$B/libcudaspy.so" \
    "$B/test_shim_rtld" >"$T/traced" 2>"$T/err" || fail "preloaded test_shim_rtld exited $?"
grep -q 'next from library: 1' "$T/plain" || fail "test setup: next is not libshim_rtld_a"
grep -q 'default from a local-scope library: 7' "$T/plain" || fail "test setup: local scope"
same_stdout "$T/plain" "$T/traced"
