#!/usr/bin/env bash
# bench/run.sh: run the benchmarks and print one figure per line under one
# header line (STYLE.md "Benchmarks").
# Usage: bench/run.sh [BUILD_DIR] [SUBJECT...]   e.g. bench/run.sh build store shim
# Every build/bench_<subject> runs with its default arguments unless named
# in bench_args below. Each bench's own header line is dropped.
set -euo pipefail

build=${1:-build}
shift || true
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
work=$(mktemp -d /tmp/cudaspy-bench.XXXXXX)
trap 'rm -rf "$work"' EXIT

bench_args() {
    case "$1" in
        mcp) printf '%s\n' "$build/cudaspy-analyze" "$build/gen_run" "$work" ;;
    esac
}

commit=$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)
printf '# cudaspy-bench commit=%s host=%s cmd="bench/run.sh %s"\n' \
    "$commit" "$(hostname)" "$build${*:+ $*}"

status=0
for exe in "$build"/bench_*; do
    [ -x "$exe" ] || continue
    subject=${exe##*/bench_}
    if [ "$#" -gt 0 ] && [[ " $* " != *" $subject "* ]]; then continue; fi
    mapfile -t args < <(bench_args "$subject")
    if ! "$exe" "${args[@]}" | grep -v '^# cudaspy-bench'; then
        printf '# bench_%s failed\n' "$subject"
        status=1
    fi
done
exit "$status"
