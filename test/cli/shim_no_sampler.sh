#!/bin/bash
# shim_no_sampler.sh BUILD: when the collector cannot start, the program runs
# as without the shim and stderr gets exactly one line saying so.
. "$(dirname "$0")/shim_common.sh"
C="$B/fake/client_rt_shared"
run_plain "$T/plain.out" "$T/plain.exp" "$C"
CUDASPY_SAMPLER=/nonexistent/cudaspy-sampler LD_PRELOAD="$B/libcudaspy.so" "$C" \
    >"$T/out" 2>"$T/err" || fail "client exited $? without a collector"
same_stdout "$T/plain.out" "$T/out"
grep -v '^kernel name' "$T/err" >"$T/err2" || true
[ "$(wc -l <"$T/err2")" -eq 1 ] || { cat "$T/err2" >&2; fail "want exactly one stderr line"; }
grep -qE '^cudaspy\[[0-9]+\]: recording stopped: cannot start /nonexistent/cudaspy-sampler \(it exited before it was ready\)$' \
    "$T/err2" || { cat "$T/err2" >&2; fail "unexpected message"; }
