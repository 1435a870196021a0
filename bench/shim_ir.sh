#!/usr/bin/env bash
# shim_ir.sh: instructions the shim adds to each intercepted call, counted
# by valgrind's callgrind on the fake driver (bench_shim --calls): exact
# and repeatable where the time per call is not, though it says nothing of
# cache misses, which dominate on a real program (docs/shim.md). For each
# operation: total instructions of N and 2N calls, without the shim and
# under `cudaspy record --no-host`; added = the two slopes' difference.
# Usage: bench/shim_ir.sh [BUILD_DIR=build] [N=10000]   (needs valgrind)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
B=$(cd "${1:-build}" && pwd)
n=${2:-10000}
command -v valgrind >/dev/null || { echo "shim_ir.sh: needs valgrind (apt-get install valgrind)" >&2; exit 2; }
w=$(mktemp -d /tmp/cudaspy-ir.XXXXXX)
trap 'rm -rf "$w"' EXIT
export CUDASPY_QUIET=1
ops=(cuLaunchKernel cuMemcpyHtoDAsync_v2 cuStreamSynchronize cudaLaunchKernel)

# ir WRAP... : OP CALLS: instructions callgrind collected in bench_shim --calls
ir() {
    local pre=()
    while [ "$1" != : ]; do pre+=("$1"); shift; done
    shift
    { "${pre[@]}" valgrind --tool=callgrind --callgrind-out-file="$w/cg" \
        "$B/bench_shim" --calls "$1" "$2" 2>&1 || true; } |
        sed -n 's/.*Collected : \([0-9]*\).*/\1/p'
}
printf '# cudaspy-bench commit=%s host=%s cmd="bench/shim_ir.sh %s %s"\n' \
    "$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)" "$(hostname)" \
    "${1:-build}" "$n"
for op in 0 1 2 3; do
    p1=$(ir env : "$op" "$n") p2=$(ir env : "$op" $((2 * n)))
    r1=$(ir "$B/cudaspy" record --no-host -o "$w/r.lmdb" -- : "$op" "$n")
    r2=$(ir "$B/cudaspy" record --no-host -o "$w/r.lmdb" -- : "$op" $((2 * n)))
    [ -n "$p1" ] && [ -n "$p2" ] && [ -n "$r1" ] && [ -n "$r2" ] ||
        { echo "shim_ir.sh: ${ops[$op]}: no callgrind total" >&2; exit 3; }
    awk -v op="${ops[$op]}" -v n="$n" -v p1="$p1" -v p2="$p2" -v r1="$r1" -v r2="$r2" 'BEGIN {
        printf "shim.ir %-28s plain %6.1f  recording %6.1f  added %6.1f instructions/call\n",
            op, (p2 - p1) / n, (r2 - r1) / n, ((r2 - r1) - (p2 - p1)) / n }'
done
