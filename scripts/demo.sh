#!/usr/bin/env bash
# demo.sh: `make demo`, the main job on a bundled workload that needs no GPU.
# Records test/fake/demo_workload (a main process fed by 4 forked workers
# that gather random rows, allocate pages and compete for the CPUs, on a
# SIMULATED GPU: our fake CUDA driver with realistic kernel, copy and sync
# timings) with `cudaspy record`, prints the analysis, and writes the HTML
# report and the Perfetto/Chrome trace beside the run file.
# Usage: scripts/demo.sh [BUILD_DIR]   (DEMO_STEPS, DEMO_OUT override defaults)
set -euo pipefail
B=$(cd "${1:-build}" && pwd)
out=${DEMO_OUT:-$B/demo}
steps=${DEMO_STEPS:-400}
mkdir -p "$out"
run="$out/demo.lmdb"
rm -f "$run" "$run-lock"

cat <<TXT
== cudaspy demo: the GPU below is SIMULATED (cudaspy's fake CUDA driver, no GPU needed)
== workload: main process + 4 forked DataLoader-style workers, $steps steps, on $(nproc) CPUs
== recording: $B/cudaspy record -o $run -- $B/fake/demo_workload workers $steps
TXT
FAKECUDA_SIM=1 "$B/cudaspy" record -o "$run" -- "$B/fake/demo_workload" workers "$steps"
echo
echo "== analysis: $B/cudaspy-analyze $run"
"$B/cudaspy-analyze" "$run"
"$B/cudaspy-analyze" report --html "$out/demo.html" "$run"
"$B/cudaspy-analyze" export --chrome "$out/demo.trace.json" "$run"
cat <<TXT

== the run file:      $run
== HTML report:       $out/demo.html   (open it in any browser; self-contained)
== Perfetto trace:    $out/demo.trace.json   (drag it onto https://ui.perfetto.dev or chrome://tracing)
== ask an LLM:        $B/cudaspy-analyze mcp $run   (MCP server on stdio; see docs/mcp.md)
== reminder: the GPU in this demo is simulated; run \`cudaspy record -- python train.py\` on a real one
TXT
