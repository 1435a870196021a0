#!/usr/bin/env bash
# bytes.sh: bytes on disk per CUDA record (issue 25, point 2), on recordings
# of the fake runtime and driver: bench/pyloop.py under `cudaspy record`
# (60 runtime launches a step, each with its nested driver launch: PyTorch's
# pairs), test/fake/cause_workload in a few modes, and the synthetic
# producer (cs_producer, 1 thread, flat out) under cudaspy-sampler. One line
# per run from build/cs_run_bytes (bench/run_bytes.c), then the mean over
# the runs. With KEEP=DIR the run files stay in DIR (to read them with
# another build's analyzer); else they go with a scratch directory.
# Usage: bench/bytes.sh [BUILD_DIR=build] [PYSTEPS=500] [CAUSE_SECS=2] [PRODUCER_N=2000000]
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
B=$(cd "${1:-build}" && pwd)
steps=${2:-500} secs=${3:-2} nprod=${4:-2000000}
if [ -n "${KEEP:-}" ]; then
    w=$KEEP && mkdir -p "$w"
else
    w=$(mktemp -d /tmp/cudaspy-bytes.XXXXXX)
    trap 'rm -rf "$w"' EXIT
fi
export LD_LIBRARY_PATH="$B/fake${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" CUDASPY_QUIET=1
printf '# cudaspy-bench commit=%s host=%s cmd="bench/bytes.sh %s %s %s %s"\n' \
    "$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)" "$(hostname)" \
    "${1:-build}" "$steps" "$secs" "$nprod"

args=()
CS_STEP_LOG="$w/pyloop.steps" "$B/cudaspy" record -q -o "$w/pyloop.lmdb" -- \
    python3 "$root/bench/pyloop.py" "$steps" 100 >/dev/null
args+=(bytes.pyloop "$w/pyloop.lmdb")
for mode in sync steps pageable churn; do
    "$B/cudaspy" record -q -o "$w/cause_$mode.lmdb" -- \
        "$B/fake/cause_workload" "$mode" "$secs" >/dev/null
    args+=("bytes.cause_$mode" "$w/cause_$mode.lmdb")
done
CUDASPY_CLOCK=tsc CUDASPY_RING_KB=16384 "$B/cudaspy-sampler" --no-host -q -o "$w/producer.lmdb" \
    -- "$B/cs_producer" -p 1 -t 1 -n "$nprod" >/dev/null
args+=(bytes.producer "$w/producer.lmdb")

"$B/cs_run_bytes" "${args[@]}" | tee "$w/bytes.txt"
awk '{ for (i = 1; i <= NF; i++) if ($i ~ /^disk_per_rec=/) { split($i, a, "="); d += a[2] }
       v += $3; n++ }
     END { printf "bytes.mean               bytes_per_rec %6.2f  B      runs=%d disk_per_rec=%.2f\n",
                  v / n, n, d / n }' "$w/bytes.txt"
