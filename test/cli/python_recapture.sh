#!/bin/bash
# python_recapture.sh BUILD PYTHON: graph_recapture names the Python line
# (issue 31). test/python/py_recapture.py rebuilds a CUDA graph every step
# on the fake driver's simulated GPU, recorded with GPU activity; the top
# finding must be graph_recapture and its first Python site the line that
# instantiates the graph (the capture's begin its second), as the program
# prints them.
. "$(dirname "$0")/shim_common.sh"
PY=$1
D=$(cd "$(dirname "$0")/../python" && pwd)
export LD_LIBRARY_PATH="$B/fake${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export FAKECUDA_SIM=1 FAKECUDA_KERNEL_US=py_kernel=500 FAKECUDA_LAT_MODE=sleep \
    FAKECUDA_LAT_NS=cuGraphInstantiateWithFlags=3000000
"$PY" -c 'import ctypes' 2>/dev/null || fail "$PY cannot import ctypes"
timeout 200 "$B/cudaspy" record -o "$T/run.lmdb" --gpu-activity full -- \
    "$PY" "$D/py_recapture.py" 60 >"$T/out" 2>"$T/err" || { cat "$T/err" >&2; fail "traced run exited $?"; }
read -r _ _ cap _ inst < <(grep "py_recapture: capture" "$T/out") || fail "no lines printed"
"$B/cudaspy-analyze" --json "$T/run.lmdb" >"$T/report.json" || fail "analysis failed"
env -u LD_PRELOAD python3 - "$T/report.json" "$cap" "$inst" <<'PY' || fail "wrong finding or line"
import json, sys
rep, cap, inst = json.load(open(sys.argv[1])), int(sys.argv[2]), int(sys.argv[3])
top = rep["chains"][0]
assert top["cause"] == "graph_recapture" and top["severity"] == "HIGH", top["cause"]
sites = top.get("python_sites") or []
lines = [(s.get("file", ""), s.get("line")) for s in sites]
print("python_recapture: %s, sites %s" % (top["summary"], lines))
assert sites and sites[0]["file"].endswith("py_recapture.py") and sites[0]["line"] == inst, lines
assert any(f.endswith("py_recapture.py") and l == cap for f, l in lines), lines
PY
exit 0
