#!/bin/bash
# python_unknown.sh BUILD CASE: test/fake/fake_python_CASE, an
# interpreter the shim cannot read (docs/python.md): exactly one notice
# line on stderr, its stdout and exit status as without the shim, all of
# its calls recorded, none with a Python stack.
. "$(dirname "$0")/shim_common.sh"
N=50
P="$B/fake/fake_python_$1"
"$P" $N >"$T/plain.out" || fail "fake_python without the shim exited $?"
unset CUDASPY_QUIET
timeout 60 "$B/cudaspy" record -o "$T/run.lmdb" --no-host -- "$P" $N \
    >"$T/out" 2>"$T/err" || { cat "$T/err" >&2; fail "traced fake_python exited $?"; }
same_stdout "$T/plain.out" "$T/out"
n=$(grep -c "cudaspy\[[0-9]*\]: python: CPython 3\.[0-9]*: .*; no Python frames" "$T/err")
[ "$n" -eq 1 ] || { cat "$T/err" >&2; fail "$n notices about the interpreter, want 1"; }
"$B/test_py_dump" "$T/run.lmdb" >"$T/dump" || fail "test_py_dump failed"
[ -s "$T/dump" ] && fail "Python stacks from an interpreter we cannot read"
"$B/cudaspy-analyze" --json "$T/run.lmdb" >"$T/json" || fail "analyze exited $?"
grep -A4 '"api": "cudaStreamSynchronize"' "$T/json" | grep -q "\"count\": $N," ||
    fail "the run lacks the $N syncs"
exit 0
