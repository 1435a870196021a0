#!/bin/sh
# compiler_pool.sh CUDASPY WORKLOAD DIR: cli.compiler_pool. torch.compile's
# compiler pool (processes of torch/_inductor/compile_worker, which wake the
# CUDA thread with compiled code) is no data-loader worker (procs.c). The
# epoch_workers mode of test/fake/accuracy_workload.c, whose forked workers
# start anew each epoch (planted worker_startup), runs once under its own
# name and once through a link at .../torch/_inductor/compile_worker/, the
# command line its workers then keep: the first has 4 or more workers and
# worker_startup; the second none of them and no worker_startup finding.
# Needs CS_ANALYZE and python3.
set -u
cudaspy=$1 workload=$2 dir=$3
rm -rf "$dir" && mkdir -p "$dir/torch/_inductor/compile_worker" || exit 1
ln -s "$workload" "$dir/torch/_inductor/compile_worker/accuracy_workload" || exit 1
for how in plain pool; do
    w=$workload
    [ "$how" = pool ] && w=$dir/torch/_inductor/compile_worker/accuracy_workload
    "$cudaspy" record -q -o "$dir/$how.lmdb" --gpu-activity full -- "$w" epoch_workers 0.6 \
        >"$dir/$how.log" 2>&1 || { cat "$dir/$how.log" >&2; echo "compiler_pool: $how: recording failed" >&2; exit 1; }
    "$CS_ANALYZE" --json "$dir/$how.lmdb" >"$dir/$how.json" ||
        { echo "compiler_pool: $how: analysis failed" >&2; exit 1; }
done
exec python3 - "$dir" <<'PY'
import json, sys

d = sys.argv[1]
bad = []
for how in ("plain", "pool"):
    j = json.load(open(f"{d}/{how}.json"))
    roles = [p.get("role") for p in j.get("processes", [])]
    causes = [f["cause"] for f in j.get("chains", [])]
    workers = roles.count("worker")
    print(f"compiler_pool: {how}: {len(roles)} processes, {workers} workers; findings {causes}")
    if how == "plain" and (workers < 4 or "worker_startup" not in causes):
        bad.append(f"{how}: want >= 4 workers and worker_startup")
    if how == "pool" and (workers or "worker_startup" in causes or len(roles) < 5):
        bad.append(f"{how}: want 5 or more processes, none a worker, no worker_startup")
for b in bad:
    print("compiler_pool: FAIL " + b, file=sys.stderr)
sys.exit(1 if bad else 0)
PY
