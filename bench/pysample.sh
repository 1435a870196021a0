#!/usr/bin/env bash
# pysample.sh: what the collector's samples of host code cost (docs/python.md,
# "Host code"): bench/pysample.py, 20 frames deep, each step about 0.5 ms of
# pure Python then a launch and a sync, under `cudaspy record --no-host`
# with samples at HZ a thread (CUDASPY_PYSAMPLE_HZ) and off (=0), ROUNDS
# pairs of runs interleaved, their order alternating. Figures: the step's
# paired on - off difference in % (median over rounds, bootstrap 95 %), in
# wall time and in the stepping thread's own CPU time (which the load of
# other programs leaves alone); the collector's CPU per sample (meta
# py_samples_cpu_ns over py_samples); the median time one read of a stack
# took (t_end - t_start: what a sample's time is uncertain by, preemption
# included).
# Usage: bench/pysample.sh [BUILD_DIR=build] [ROUNDS=10] [HZ=100] [N=400] [BATCHES=5]
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
B=$(cd "${1:-build}" && pwd)
rounds=${2:-10} hz=${3:-100} n=${4:-400} batches=${5:-5} depth=20 work=20000
w=$(mktemp -d /tmp/cudaspy-pysample.XXXXXX)
trap 'rm -rf "$w"' EXIT
export LD_LIBRARY_PATH="$B/fake${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" CUDASPY_QUIET=1
printf '# cudaspy-bench commit=%s host=%s cmd="bench/pysample.sh %s %s %s %s %s" python=%s\n' \
    "$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)" "$(hostname)" \
    "${1:-build}" "$rounds" "$hz" "$n" "$batches" "$(python3 -c 'import platform; print(platform.python_version())')"
one() { # HZ ROUND
    CUDASPY_PYSAMPLE_HZ=$1 "$B/cudaspy" record -q --no-host -o "$w/r.lmdb" -- \
        python3 "$root/bench/pysample.py" $depth "$n" "$batches" $work >"$w/t.$1.$2"
    echo "$("$B/test_py_dump" --meta py_samples_cpu_ns "$w/r.lmdb") $("$B/test_py_dump" --meta py_samples "$w/r.lmdb")" >"$w/cpu.$1.$2"
    "$B/test_py_dump" --samples "$w/r.lmdb" | awk '{print $4}' >"$w/read.$1.$2"
    rm -rf "$w/r.lmdb" "$w/r.lmdb-lock"
}
for i in $(seq 1 "$rounds"); do
    if [ $((i % 2)) -eq 1 ]; then one 0 "$i"; one "$hz" "$i"
    else one "$hz" "$i"; one 0 "$i"; fi
done
python3 - "$root/bench/gpu" "$w" "$rounds" "$hz" <<'PY'
import statistics, sys
sys.path.insert(0, sys.argv[1])
import collect as C
w, n, hz = sys.argv[2], int(sys.argv[3]), sys.argv[4]
rd = lambda p: open(f"{w}/{p}").read().split()
lines = lambda p: open(f"{w}/{p}").read().splitlines()
step = lambda on, i, k: statistics.median(map(float, lines(f"t.{on}.{i}")[k].split()))
for k, what in ((0, "step_wall"), (1, "step_cpu")):
    off = [step(0, i, k) for i in range(1, n + 1)]
    d = [100 * (step(hz, i, k) / off[i - 1] - 1) for i in range(1, n + 1)]
    m, (lo, hi) = C.bootstrap(d)
    print(f"collector.pysample            {what:<15} {m:+8.2f}  %      "
          f"95%={lo:+.2f}..{hi:+.2f} off={statistics.median(off):.0f}us hz={hz} frames=21 rounds={n}")
cpu = [int(rd(f"cpu.{hz}.{i}")[0]) / max(int(rd(f"cpu.{hz}.{i}")[1]), 1) for i in range(1, n + 1)]
samples = [int(rd(f"cpu.{hz}.{i}")[1]) for i in range(1, n + 1)]
reads = sorted(int(x) for i in range(1, n + 1) for x in rd(f"read.{hz}.{i}"))
print(f"collector.pysample            cpu_per_sample  {statistics.median(cpu) / 1000:8.1f}  us     "
      f"min={min(cpu) / 1000:.1f} max={max(cpu) / 1000:.1f} samples_per_run={statistics.median(samples):.0f}")
print(f"collector.pysample            read_p50        {reads[len(reads) // 2] / 1000:8.1f}  us     "
      f"p90={reads[len(reads) * 9 // 10] / 1000:.1f} n={len(reads)}")
PY
