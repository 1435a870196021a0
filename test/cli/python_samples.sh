#!/bin/bash
# python_samples.sh BUILD PYTHON MODE: the collector's samples of a CUDA
# thread's Python stack while it runs host code (docs/python.md, "Host
# code"), under `cudaspy record` on the fake driver. MODE hostwork:
# test/python/py_hostwork.py's two threads run known hot spots between
# their CUDA calls, and the samples must name them (py_samples_check.py);
# stress: py_stress.py's threads tear frames down while the collector reads
# them (1000 Hz): every sample still names a frame the program could have
# been in; off: CUDASPY_PYSAMPLE_HZ=0, no sample. Each time the program's
# stdout and exit status are as without the shim.
. "$(dirname "$0")/shim_common.sh"
PY=$1 MODE=$2
D=$(cd "$(dirname "$0")/../python" && pwd)
export LD_LIBRARY_PATH="$B/fake${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
tsan=$(ldd "$B/fake/libcudart.so.13" | awk '/libtsan/ {print $3}')
[ -n "$tsan" ] && export LD_PRELOAD=$tsan \
    TSAN_OPTIONS="${TSAN_OPTIONS:+$TSAN_OPTIONS:}suppressions=$D/tsan.supp"
"$PY" -c 'import ctypes' 2>/dev/null || fail "$PY cannot import ctypes"
case $MODE in
hostwork) prog=("$D/py_hostwork.py" 100) hz=200 check=hostwork ;;
stress) prog=("$D/py_stress.py") hz=1000 check=stress ;;
off) prog=("$D/py_hostwork.py" 40) hz=0 check=off ;;
*) fail "unknown mode $MODE" ;;
esac
"$PY" "${prog[@]}" >"$T/plain.out" || fail "$PY ${prog[0]##*/} without the shim exited $?"
CUDASPY_PYSAMPLE_HZ=$hz timeout 200 "$B/cudaspy" record -o "$T/run.lmdb" --no-host -- \
    "$PY" "${prog[@]}" >"$T/out" 2>"$T/err" || { cat "$T/err" >&2; fail "traced run exited $?"; }
same_stdout "$T/plain.out" "$T/out"
grep -q "python:" "$T/err" && { cat "$T/err" >&2; fail "a notice about the interpreter"; }
"$B/test_py_dump" --samples "$T/run.lmdb" >"$T/dump" || fail "test_py_dump --samples failed"
env -u LD_PRELOAD python3 "$D/py_samples_check.py" "$check" "$T/dump" ||
    fail "samples differ from the program's host code"
exit 0
