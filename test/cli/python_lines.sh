#!/bin/bash
# python_lines.sh BUILD PYTHON MODE: test/python/py_workload.py on
# interpreter PYTHON under `cudaspy record` (docs/python.md). MODE lines:
# every stack names the line, function and caller that made the call
# (py_check.py); mixed: the same with native stacks on (CUDASPY_STACK_US=1),
# whose native frames stop where the interpreter begins (ctypes' module is
# the last); off: CUDASPY_PYTHON=0, no Python stack at all; stress:
# py_stress.py's threads tear frames down while others call CUDA. Each
# time the program's stdout and exit status are as without the shim.
. "$(dirname "$0")/shim_common.sh"
PY=$1 MODE=$2
D=$(cd "$(dirname "$0")/../python" && pwd)
export LD_LIBRARY_PATH="$B/fake${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
# A TSan build's fake runtime cannot be dlopened (libtsan wants static TLS):
# its runtime is preloaded into the (uninstrumented) interpreter instead.
tsan=$(ldd "$B/fake/libcudart.so.13" | awk '/libtsan/ {print $3}')
[ -n "$tsan" ] && export LD_PRELOAD=$tsan \
    TSAN_OPTIONS="${TSAN_OPTIONS:+$TSAN_OPTIONS:}suppressions=$D/tsan.supp"
"$PY" -c 'import ctypes' 2>/dev/null || fail "$PY cannot import ctypes"
case $MODE in
lines|mixed|off) prog=("$D/py_workload.py" "$T/plain") ;;
stress) prog=("$D/py_stress.py") ;;
*) fail "unknown mode $MODE" ;;
esac
"$PY" "${prog[@]}" >"$T/plain.out" || fail "$PY ${prog[0]##*/} without the shim exited $?"
rm -f "$T"/plain.*[0-9]
off=; [ "$MODE" = off ] && off=0
[ "$MODE" = lines ] || [ "$MODE" = mixed ] && prog[1]=$T/exp
us=; [ "$MODE" = mixed ] && us=1
CUDASPY_STACK_US=$us CUDASPY_PYTHON=${off:-1} timeout 200 "$B/cudaspy" record -o "$T/run.lmdb" --no-host -- \
    "$PY" "${prog[@]}" >"$T/out" 2>"$T/err" || { cat "$T/err" >&2; fail "traced run exited $?"; }
same_stdout "$T/plain.out" "$T/out"
grep -q "python:" "$T/err" && { cat "$T/err" >&2; fail "a notice about the interpreter"; }
"$B/test_py_dump" "$T/run.lmdb" >"$T/dump" || fail "test_py_dump failed"
case $MODE in
lines) env -u LD_PRELOAD python3 "$D/py_check.py" "$T/dump" "$T"/exp.* || fail "stacks differ from the calls" ;;
mixed)
    env -u LD_PRELOAD python3 "$D/py_check.py" --slow-us 1 "$T/dump" "$T"/exp.* ||
        fail "stacks differ from the calls"
    n=$(grep -c ' native [0-9]* ' "$T/dump")
    [ "$n" -ge 5 ] || fail "mixed: $n stacks with native frames, want >= 5"
    bad=$(grep ' native ' "$T/dump" | grep -Ev ',_ctypes[^,]*$' | head -3)
    [ -z "$bad" ] || fail "mixed: native frames do not end at ctypes' module: $bad"
    grep ' native ' "$T/dump" | grep -E ' native [0-9]+ (.*,)?(lib)?python' &&
        fail "mixed: an interpreter frame among the native ones" ;;
off) [ -s "$T/dump" ] && { head -3 "$T/dump" >&2; fail "Python stacks with CUDASPY_PYTHON=0"; } ;;
stress)
    n=$(wc -l <"$T/dump")
    [ "$n" -gt 200 ] || fail "stress: $n Python stacks, want > 200"
    lines=$(grep -n '# CUDA' "$D/py_stress.py" | cut -d: -f1 | paste -sd'|')
    bad=$(grep -Ev "^[0-9]+ [0-9]+ [^ ]+ [0-9]+ [0-9]+ [^ ]*/py_stress.py:($lines):" "$T/dump" | head -3)
    [ -z "$bad" ] || fail "stress: a stack whose innermost frame made no CUDA call: $bad" ;;
esac
exit 0
