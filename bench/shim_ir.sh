#!/usr/bin/env bash
# shim_ir.sh: what the shim adds to each intercepted call, counted by
# valgrind's callgrind on the fake driver (bench_shim --calls): exact and
# repeatable where the time per call on a shared VM is not.
#  - instructions: N and 2N calls back to back;
#  - L1 misses, data (D1) and instructions (I1): N/5 and 2N/5 calls, each
#    after writing 256 KiB of other memory and running 64 KiB of other code
#    (callgrind's simulated L1s), as in a program that works between its
#    CUDA calls: the cache lines a record touches that were cold.
# Each figure is the slope (per call) under `cudaspy record --no-host` less
# the slope without the shim. Neither says what a miss costs on a given
# CPU; that is the GPU duty measure's question (docs/shim.md).
# Usage: bench/shim_ir.sh [BUILD_DIR=build] [N=10000]   (needs valgrind)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
B=$(cd "${1:-build}" && pwd)
n=${2:-10000}
command -v valgrind >/dev/null || { echo "shim_ir.sh: needs valgrind (apt-get install valgrind)" >&2; exit 2; }
w=$(mktemp -d /tmp/cudaspy-ir.XXXXXX)
trap 'rm -rf "$w"' EXIT
# the GPU hosts stamp records with the TSC: count that path, not clock_gettime
export CUDASPY_QUIET=1 CUDASPY_CLOCK=tsc
ops=(cuLaunchKernel cuMemcpyHtoDAsync_v2 cuStreamSynchronize cudaLaunchKernel)

# count MODE OP CALLS EVICT_KB [WHAT]: callgrind's total of instructions
# (EVICT_KB 0) or of WHAT (D1 or I1) misses, for bench_shim --calls; MODE
# plain or record
count() {
    local pre=(env) vg=(valgrind --tool=callgrind --callgrind-out-file="$w/cg")
    [ "$1" = record ] && pre=("$B/cudaspy" record --no-host -o "$w/r.lmdb" --)
    [ "$4" != 0 ] && vg+=(--cache-sim=yes)
    { "${pre[@]}" "${vg[@]}" "$B/bench_shim" --calls "$2" "$3" "$4" 2>&1 || true; } |
        if [ "$4" = 0 ]; then
            sed -n 's/.*Collected : \([0-9]*\).*/\1/p'
        else
            sed -n "s/.*$5  misses: *\([0-9,]*\).*/\1/p" | tr -d ,
        fi
}

# added OP CALLS EVICT_KB [WHAT]: the shim's slope less the plain one, per call
added() {
    local op=$1 k=$2 ev=$3 what=${4:-} p1 p2 r1 r2
    p1=$(count plain "$op" "$k" "$ev" "$what") p2=$(count plain "$op" $((2 * k)) "$ev" "$what")
    r1=$(count record "$op" "$k" "$ev" "$what") r2=$(count record "$op" $((2 * k)) "$ev" "$what")
    [ -n "$p1" ] && [ -n "$p2" ] && [ -n "$r1" ] && [ -n "$r2" ] ||
        { echo "shim_ir.sh: ${ops[$op]}: no callgrind total" >&2; exit 3; }
    awk -v k="$k" -v p1="$p1" -v p2="$p2" -v r1="$r1" -v r2="$r2" \
        'BEGIN { printf "%.1f", ((r2 - r1) - (p2 - p1)) / k }'
}

printf '# cudaspy-bench commit=%s host=%s cmd="bench/shim_ir.sh %s %s"\n' \
    "$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)" "$(hostname)" \
    "${1:-build}" "$n"
for op in 0 1 2 3; do
    printf 'shim.ir %-22s added %6s instructions, cold L1 misses %5s data %5s code per call\n' \
        "${ops[$op]}" "$(added "$op" "$n" 0)" "$(added "$op" $((n / 5)) 256 D1)" \
        "$(added "$op" $((n / 5)) 256 I1)"
done
