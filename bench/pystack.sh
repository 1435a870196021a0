#!/usr/bin/env bash
# pystack.sh: what a Python stack costs a CUDA call (docs/python.md):
# bench/pystack.py 20 frames deep, under `cudaspy record --no-host` with
# Python stacks on (CUDASPY_PYTHON=1) and off (=0), ROUNDS pairs of runs
# interleaved, their order alternating. "sync": every call gets a stack, so
# on - off is the capture (walk, hash, lookup); "launch": no call gets one,
# so on - off is what the check costs the others. Per run, the median ns per
# call over its batches; the figure is the median of the paired differences
# with a bootstrap 95 % interval.
# Usage: bench/pystack.sh [BUILD_DIR=build] [ROUNDS=10] [N=20000] [BATCHES=10]
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
B=$(cd "${1:-build}" && pwd)
rounds=${2:-10} n=${3:-20000} batches=${4:-10} depth=20
w=$(mktemp -d /tmp/cudaspy-pystack.XXXXXX)
trap 'rm -rf "$w"' EXIT
export LD_LIBRARY_PATH="$B/fake${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" CUDASPY_QUIET=1
printf '# cudaspy-bench commit=%s host=%s cmd="bench/pystack.sh %s %s %s %s" python=%s\n' \
    "$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)" "$(hostname)" \
    "${1:-build}" "$rounds" "$n" "$batches" "$(python3 -c 'import platform; print(platform.python_version())')"
one() { # MODE ON ROUND
    CUDASPY_PYTHON=$2 "$B/cudaspy" record -q --no-host -o "$w/r.lmdb" -- \
        python3 "$root/bench/pystack.py" "$1" $depth "$n" "$batches" >"$w/$1.$2.$3"
    rm -rf "$w/r.lmdb"
}
for mode in sync launch; do
    for i in $(seq 1 "$rounds"); do
        if [ $((i % 2)) -eq 1 ]; then one $mode 0 "$i"; one $mode 1 "$i"
        else one $mode 1 "$i"; one $mode 0 "$i"; fi
    done
done
python3 - "$root/bench/gpu" "$w" "$rounds" <<'PY'
import statistics, sys
sys.path.insert(0, sys.argv[1])
import collect as C
w, n = sys.argv[2], int(sys.argv[3])
med = lambda m, on, i: statistics.median(map(float, open(f"{w}/{m}.{on}.{i}").read().split()))
for mode, what in (("sync", "capture"), ("launch", "no_capture")):
    off = [med(mode, 0, i) for i in range(1, n + 1)]
    d = [med(mode, 1, i) - off[i - 1] for i in range(1, n + 1)]
    m, (lo, hi) = C.bootstrap(d)
    print(f"shim.pystack                  {what + '_ns':<15} {m:+8.1f}  ns     "
          f"95%={lo:+.1f}..{hi:+.1f} call_off={statistics.median(off):.0f}ns frames=20 rounds={n}")
PY
