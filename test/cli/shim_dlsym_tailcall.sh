#!/bin/bash
# shim_dlsym_tailcall.sh BUILD: the shim's dlsym reaches glibc's with a jump,
# never a call (gcc < 15 has no musttail; this checks what -O2 emitted).
. "$(dirname "$0")/shim_common.sh"
objdump -d --no-show-raw-insn "$B/libcudaspy.so" | awk '/<dlsym>:/,/^$/' >"$T/dlsym.s"
[ -s "$T/dlsym.s" ] || fail "no dlsym in libcudaspy.so"
grep -qE 'jmp +\*%r' "$T/dlsym.s" || { cat "$T/dlsym.s" >&2; fail "dlsym has no indirect tail jump"; }
if grep -qE 'call +\*%r' "$T/dlsym.s"; then
    cat "$T/dlsym.s" >&2
    fail "dlsym calls the real dlsym instead of jumping to it"
fi
