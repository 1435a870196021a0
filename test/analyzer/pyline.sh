#!/bin/sh
# pyline.sh ANALYZE GEN_PYRUN CHECK_TRACE WORKDIR: the Python lines of issue
# 23 in every output. gen_pyrun writes a run whose calls come from known
# lines (test/analyzer/gen_pyrun.c says which, and the shares); the text
# report, --json, --by pyline, the HTML page, the Perfetto trace and MCP's
# get_hotspots must name exactly those lines with those shares, and the bad
# stacks (an id with no stack, string ids with no string) must read "?".
# gen_pyrun --lib puts an installed library's frames inside the user's
# (issue 30): each site must be the user's line, the library's frames its
# "via", and a stack of library frames only its innermost frame.
# The JSON checks need python3; the HTML check chromium (each skipped
# alone when absent).
set -u
A=$1 GEN=$2 CHECK=$3 W=$4
rm -rf "$W" && mkdir -p "$W" && cd "$W" || exit 1
fail=0
no() { echo "FAIL: $*"; fail=1; }
# has FILE LINE: FILE holds LINE, whole and exact
has() { grep -qxF -- "$2" "$1" || { no "$1 lacks: $2"; sed -n '1,200p' "$1" | grep -F -- "${3:-python}" | head -5; }; }

"$GEN" py.lmdb || { echo "gen_pyrun failed"; exit 1; }
"$GEN" gpu.lmdb --gpu || { echo "gen_pyrun --gpu failed"; exit 1; }
"$GEN" item.lmdb --item || { echo "gen_pyrun --item failed"; exit 1; }
"$GEN" lib.lmdb --lib || { echo "gen_pyrun --lib failed"; exit 1; }

# -- text: the findings name the lines and their shares
"$A" --color never py.lmdb >text.txt 2>err.txt || no "report exited $?"
[ -s err.txt ] && no "stderr not empty: $(cat err.txt)"
has text.txt "  python lines:"
has text.txt "    - 45.0 ms of GPU idle after the cudaStreamSynchronize at train.py:57 in train_step (75 %); the next GPU work was enqueued at train.py:49 in train_step"
has text.txt "      called from train.py:80 in main <- train.py:90 in <module>"
has text.txt "    - 15.0 ms of GPU idle after the cudaStreamSynchronize at eval.py:12 in evaluate (25 %); the next GPU work was enqueued at train.py:49 in train_step"
has text.txt "      called from train.py:85 in main <- train.py:90 in <module>"
has text.txt "    - 4.0 ms in cudaMalloc at model.py:30 in Net.forward (67 %)"
has text.txt "    - 2.0 ms in cudaFree at model.py:33 in Net.forward (33 %)"
grep -q 'LATENCY BY PYTHON LINE' text.txt && no "the per-line table without --by pyline"

# -- --by pyline: one row per site; native, missing and unnamed sites
"$A" --color never --by pyline py.lmdb >by.txt 2>err.txt || no "--by pyline exited $?"
row() { printf '  %-40s %-22s %9s %9s %9s %9s %9s %10s\n' "$@"; }
has by.txt "$(row 'train.py:57 in train_step' cudaStreamSynchronize 150 7.5ms 50.0us 50.0us 50.0us 45.0ms)"
has by.txt "$(row 'eval.py:12 in evaluate' cudaStreamSynchronize 50 2.5ms 50.0us 50.0us 50.0us 15.0ms)"
has by.txt "$(row 'train.py:49 in train_step' cudaLaunchKernel 201 2.0ms 10.0us 10.0us 10.0us 0ns)"
has by.txt "$(row 'libtorch_cuda.so+0x2000' cudaMemcpy 1 200.0us 200.0us 200.0us 200.0us 100.0us)"
has by.txt "    called from libc.so.6+0x3000"
has by.txt "$(row '?' cuMemsetD8Async 1 5.0us 5.0us 5.0us 5.0us 0ns)"
has by.txt "$(row '?:7 in ?' cudaEventSynchronize 1 5.0us 5.0us 5.0us 5.0us 0ns)"
has by.txt "    next GPU work enqueued at train.py:49 in train_step"
"$A" --color never --by pyline gpu.lmdb >gpu.txt 2>err.txt || no "--by pyline (gpu) exited $?"
# measured: a sync's idle runs on to the next sync (its 40 us kernels are
# too short to end it), less the kernel: 350 us a step
has gpu.txt "$(row 'train.py:57 in train_step' cudaStreamSynchronize 150 7.5ms 50.0us 50.0us 50.0us 52.5ms)"
grep -q 'idle after: GPU idle measured)$' gpu.txt || no "gpu run: idle not measured"
# .item() then a tiny kernel at once: its idle runs on past the tiny kernel
# to the next matmul, 321 us a step, and outweighs the warm-up sync's 20 ms
"$A" --color never --by pyline item.lmdb >item.txt 2>err.txt || no "--by pyline (item) exited $?"
has item.txt "$(row 'train.py:57 in train_step' cudaStreamSynchronize 200 102.0ms 510.0us 510.0us 510.0us 64.2ms)"
has item.txt "    next GPU work enqueued at train.py:58 in train_step"
has item.txt "$(row 'train.py:40 in main' cudaDeviceSynchronize 2 55.0us 5.0us 50.0us 50.0us 20.0ms)"

# -- library frames: the user's line is the site, whatever is inside it
"$A" --color never --by pyline lib.lmdb >lib.txt 2>err.txt || no "--lib exited $?"
[ -s err.txt ] && no "--lib: stderr not empty: $(cat err.txt)"
has lib.txt "    - 45.0 ms of GPU idle after the cudaStreamSynchronize at train.py:57 in train_step (75 %); the next GPU work was enqueued at train.py:49 in train_step"
has lib.txt "      via torch/cuda/__init__.py:1162 in synchronize"
has lib.txt "      called from train.py:80 in main <- train.py:90 in <module>"
has lib.txt "    - 2.0 ms in cudaFree at model.py:33 in Net.forward (33 %)"
has lib.txt "      via copy.py:128 in deepcopy"
has lib.txt "$(row 'train.py:49 in train_step' cudaLaunchKernel 201 2.0ms 10.0us 10.0us 10.0us 0ns)"
has lib.txt "    via torch/nn/modules/module.py:1532 in Module._call_impl"
has lib.txt "    called from train.py:80 in main <- train.py:90 in <module> <- <frozen runpy>:88 in _run_code"
# a pseudo file (exec()'d: a dataclass's __init__) before the library's frames
has lib.txt "$(row '<string>:3 in __init__' cudaMalloc 200 4.0ms 20.0us 20.0us 20.0us 0ns)"
has lib.txt "    called from torch/nn/modules/module.py:1532 in Module._call_impl"
# library frames only: the innermost, named from its package on
has lib.txt "$(row 'torch/utils/data/_utils/pin_memory.py:30 in _pin_memory_loop' cudaMemcpy 1 200.0us 200.0us 200.0us 200.0us 100.0us)"
has lib.txt "    called from threading.py:1010 in Thread.run <- threading.py:1073 in Thread._bootstrap_inner"
grep -q ' at [^ ]*:1162 in synchronize' lib.txt && no "--lib: torch's synchronize named as a site"

# -- JSON
if command -v python3 >/dev/null; then
    "$A" --json --by pyline py.lmdb >r.json || no "--json exited $?"
    python3 - r.json <<'EOF' || fail=1
import json, sys
j = json.load(open(sys.argv[1]))
bad = []
def want(what, got, exp):
    if got != exp:
        bad.append(f"{what}: got {got!r}, want {exp!r}")
ch = {c["cause"]: c for c in j["chains"]}
s = ch["sync_per_iteration"]["python_sites"]
want("sync sites", [(x["file"], x["line"], x["function"]) for x in s],
     [("/home/u/proj/train.py", 57, "train_step"), ("/home/u/proj/eval.py", 12, "evaluate")])
want("sync ns", [x["ns"] for x in s], [45000000, 15000000])
want("sync shares", [round(x["share"], 3) for x in s], [0.749, 0.250])
want("next enqueue", s[0]["next_enqueue"]["line"], 49)
want("callers", s[0]["callers"], [{"file": "/home/u/proj/train.py", "function": "main", "line": 80},
                                   {"file": "/home/u/proj/train.py", "function": "<module>", "line": 90}])
a = ch["alloc_churn"]["python_sites"]
want("alloc sites", [(x["line"], x["api"], x["calls"], x["ns"]) for x in a],
     [(30, "cudaMalloc", 200, 4000000), (33, "cudaFree", 200, 2000000)])
p = j["pylines"]
want("idle source", p["idle_source"], "host_lower_bound")
want("stacked calls", p["calls"], 804)
rows = {x["text"]: x for x in p["rows"]}
want("native frame", {k: rows["libtorch_cuda.so+0x2000"][k] for k in ("module", "offset")},
     {"module": "/usr/lib/libtorch_cuda.so", "offset": 8192})
want("missing stack", {k: rows["?"][k] for k in ("file", "function", "line")},
     {"file": "?", "function": "?", "line": 0})
want("bad strings", {k: rows["?:7 in ?"][k] for k in ("file", "function", "line")},
     {"file": "?", "function": "?", "line": 7})
want("row 57", {k: rows["train.py:57 in train_step"][k] for k in
                ("calls", "total_ns", "p50_ns", "p99_ns", "max_ns", "idle_after_ns")},
     {"calls": 150, "total_ns": 7500000, "p50_ns": 50000, "p99_ns": 50000, "max_ns": 50000,
      "idle_after_ns": 45000000})
want("mixed stack", rows["train.py:57 in train_step"]["stack"][:2],
     [{"module": "/usr/lib/libtorch_cuda.so", "offset": 0x1100},
      {"file": "/home/u/proj/train.py", "function": "train_step", "line": 57}])
for b in bad:
    print("FAIL: json: " + b)
sys.exit(1 if bad else 0)
EOF
    "$A" --json --by pyline lib.lmdb >lib.json || no "--json --lib exited $?"
    python3 - lib.json <<'EOF' || fail=1
import json, sys
j = json.load(open(sys.argv[1]))
bad = []
def want(what, got, exp):
    if got != exp:
        bad.append(f"{what}: got {got!r}, want {exp!r}")
venv = "/opt/venv/lib/python3.12/site-packages/torch/"
ch = {c["cause"]: c for c in j["chains"]}
s = ch["sync_per_iteration"]["python_sites"][0]
want("lib site", (s["file"], s["line"], s["function"]), ("/home/u/proj/train.py", 57, "train_step"))
want("lib via", s["via"], [{"file": venv + "cuda/__init__.py", "function": "synchronize", "line": 1162}])
rows = {x["text"]: x for x in j["pylines"]["rows"]}
r = rows["train.py:57 in train_step"]
want("lib stack kept", [f.get("function") for f in r["stack"]],
     [None, "synchronize", "train_step", "main", "<module>"])
want("lib callers", [f["function"] for f in rows["train.py:49 in train_step"]["callers"]],
     ["main", "<module>", "_run_code"])
want("eval via", rows["eval.py:12 in evaluate"]["via"], [])
want("library only", rows["torch/utils/data/_utils/pin_memory.py:30 in _pin_memory_loop"]["file"],
     "/usr/lib/python3/dist-packages/torch/utils/data/_utils/pin_memory.py")
for b in bad:
    print("FAIL: json --lib: " + b)
sys.exit(1 if bad else 0)
EOF
    "$A" export --chrome lib.trace.json lib.lmdb 2>err.txt || no "export --lib exited $?"
    python3 - lib.trace.json <<'EOF' || fail=1
import collections, json, sys
t = json.load(open(sys.argv[1]))
ev = t["traceEvents"] if isinstance(t, dict) else t
n = collections.Counter(e["args"]["site"] for e in ev if e.get("ph") == "X" and "site" in e.get("args", {}))
ok = (n["train.py:57 in train_step"] == 150 and n["train.py:49 in train_step"] == 201 and
      n["torch/utils/data/_utils/pin_memory.py:30 in _pin_memory_loop"] == 1 and
      not any("synchronize" in k for k in n))
if not ok:
    print(f"FAIL: trace --lib: sites {dict(n)}")
sys.exit(0 if ok else 1)
EOF
    # -- MCP: get_hotspots ranks the same sites both ways
    printf '%s\n' \
        '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}' \
        '{"jsonrpc":"2.0","method":"notifications/initialized"}' \
        '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"get_hotspots","arguments":{"top":2}}}' |
        "$A" mcp py.lmdb >mcp.out 2>mcp.err || no "mcp exited $?"
    python3 - mcp.out <<'EOF' || fail=1
import json, sys
r = [json.loads(l) for l in open(sys.argv[1]) if l.strip()][-1]["result"]["structuredContent"]
t = [x["text"] for x in r["by_time"]]
i = [(x["text"], x["idle_after_ns"]) for x in r["by_idle"]]
ok = t == ["train.py:57 in train_step", "model.py:30 in Net.forward"] and \
     i == [("train.py:57 in train_step", 45000000), ("eval.py:12 in evaluate", 15000000)] and \
     r["total"] == 8
if not ok:
    print(f"FAIL: get_hotspots: by_time {t}, by_idle {i}, total {r['total']}")
sys.exit(0 if ok else 1)
EOF
    # -- Perfetto: every call slice carries its site and stack
    "$A" export --chrome t.json py.lmdb 2>err.txt || no "export exited $?"
    "$CHECK" t.json >/dev/null || no "check_trace rejected the trace"
    python3 - t.json <<'EOF' || fail=1
import json, sys
t = json.load(open(sys.argv[1]))
ev = t["traceEvents"] if isinstance(t, dict) else t
s = [e for e in ev if e.get("ph") == "X" and "site" in e.get("args", {})]
sync = [e for e in s if e["args"]["site"] == "train.py:57 in train_step"]
ok = len(s) == 804 and len(sync) == 150 and sync[0]["args"]["stack"] == [
    "libtorch_cuda.so+0x1100", "train.py:57 in train_step", "train.py:80 in main",
    "train.py:90 in <module>"] and any(e["args"]["site"] == "?" for e in s)
if not ok:
    print(f"FAIL: trace: {len(s)} slices with a site, {len(sync)} at train.py:57")
sys.exit(0 if ok else 1)
EOF
else
    echo "skip: JSON, MCP and trace checks (no python3)"
fi

# -- HTML: the findings' lines and the per-line table, as rendered
"$A" report --html r.html py.lmdb 2>err.txt || no "report --html exited $?"
if command -v chromium >/dev/null; then
    timeout 90 chromium --headless=new --disable-gpu --no-sandbox --no-first-run \
        --user-data-dir="$W/profile" --dump-dom "file://$W/r.html" >dom.html 2>chromium.log
    grep -q '<title>cudaspy report: ok</title>' dom.html || no "page did not finish rendering"
    grep -qF '<li>45.0 ms of GPU idle after the cudaStreamSynchronize at train.py:57 in train_step (75 %)' dom.html ||
        no "page: no python line in the finding"
    grep -qF '<tr><td>train.py:57 in train_step</td><td>cudaStreamSynchronize</td><td>150</td>' dom.html ||
        no "page: no per-line table row"
else
    echo "skip: HTML rendering (no chromium)"
fi
# -- a stacks row that is not whole frames: the run is refused, in one line
"$GEN" bad.lmdb --corrupt-stack || { echo "gen_pyrun --corrupt-stack failed"; exit 1; }
"$A" bad.lmdb >out.txt 2>err.txt
rc=$?
[ "$rc" = 2 ] || no "corrupt stack: exit code $rc, want 2"
[ -s out.txt ] && no "corrupt stack: stdout not empty"
printf '%s\n' "cudaspy-analyze: bad.lmdb: stacks: row of 15 bytes is not whole frames" >want.txt
cmp -s want.txt err.txt || { no "corrupt stack: stderr differs (want, got):"; diff want.txt err.txt; }
[ "$fail" = 0 ] || exit 1
echo "ok   pyline"
