#!/bin/bash
# shim_rtnext.sh BUILD: what a program's dlsym(RTLD_NEXT / RTLD_DEFAULT, ...)
# resolves to is the same with and without the shim preloaded (client_rtnext
# prints object, symbol and offset, independent of ASLR).
. "$(dirname "$0")/shim_common.sh"
for arg in "" load; do
    "$B/fake/client_rtnext" $arg >"$T/plain" || fail "client_rtnext $arg exited $?"
    CUDASPY_SOCK=@cudaspy-none LD_PRELOAD="$B/libcudaspy.so" "$B/fake/client_rtnext" $arg \
        >"$T/traced" 2>/dev/null || fail "preloaded client_rtnext $arg exited $?"
    same_stdout "$T/plain" "$T/traced"
done
