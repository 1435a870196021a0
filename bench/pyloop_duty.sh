#!/usr/bin/env bash
# pyloop_duty.sh: what recording costs a torch-like Python loop on the CPU
# (bench/pyloop.py on the fake runtime: 60 launches a step, a runtime and a
# nested driver record each), measured as on the GPU (docs/sampler.md,
# "--duty"): PAIRS untraced runs and runs under `cudaspy record --duty 250`,
# interleaved; each on phase's mean step time against its off neighbours,
# and the untraced runs on the same grid as a placebo.
# Usage: bench/pyloop_duty.sh [BUILD_DIR=build] [PAIRS=3] [STEPS=4000] [WORK=1000]
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
B=$(cd "${1:-build}" && pwd)
pairs=${2:-3} steps=${3:-4000} work=${4:-1000}
w=$(mktemp -d /tmp/cudaspy-pyloop.XXXXXX)
trap 'rm -rf "$w"' EXIT
export LD_LIBRARY_PATH="$B/fake${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" CUDASPY_QUIET=1
printf '# cudaspy-bench commit=%s host=%s cmd="bench/pyloop_duty.sh %s %s %s %s"\n' \
    "$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)" "$(hostname)" \
    "${1:-build}" "$pairs" "$steps" "$work"
# run I as gpu-check.sh names it: output I.out (unused), steps I.steps, summary I.meta.json
for i in $(seq 1 "$pairs"); do
    CS_STEP_LOG="$w/u$i.steps" python3 "$root/bench/pyloop.py" "$steps" "$work" >"$w/u$i.out"
    CS_STEP_LOG="$w/t$i.steps" "$B/cudaspy" record -q --duty 250 -o "$w/t$i.lmdb" -- \
        python3 "$root/bench/pyloop.py" "$steps" "$work" >"$w/t$i.out"
    "$B/cudaspy-analyze" --json --until 0.001 "$w/t$i.lmdb" >"$w/t$i.meta.json"
done
python3 - "$root/bench/gpu" "$w" "$pairs" <<'PY'
import statistics, sys
sys.path.insert(0, sys.argv[1])
import collect as C
w, n = sys.argv[2], int(sys.argv[3])
run = lambda k, i: {"out": f"{w}/{k}{i}.out", "meta": f"{w}/{k}{i}.meta.json"}
d = C.duty_stats([run("u", i) for i in range(1, n + 1)], [run("t", i) for i in range(1, n + 1)])
on = [x for r in d["traced"] for x in r]
placebo = [x for r in d["placebo"] for x in r]
med, (lo, hi) = C.bootstrap(on)
pmed, (plo, phi) = C.bootstrap(placebo)
us = statistics.median(statistics.median(b - a for a, b in zip(e, e[1:]))
                       for e in (C.read_steps(run("u", i)["out"]) for i in range(1, n + 1))) / 1e3
print(f"shim.pyloop_duty              overhead_p50    {med:+8.2f}  %      "
      f"95%={lo:+.2f}..{hi:+.2f} phase_pairs={len(on)} runs={n}")
print(f"shim.pyloop_duty              placebo_p50     {pmed:+8.2f}  %      "
      f"95%={plo:+.2f}..{phi:+.2f} phase_pairs={len(placebo)}")
print(f"shim.pyloop_duty              per_record      {med / 100 * us * 1000 / 120:8.0f}  ns     "
      f"step={us:.0f}us records_per_step=120")
PY
