#!/bin/sh
# pyline_real.sh BUILD_DIR PYTHON WORKDIR: the analyzer's Python lines on a
# REAL recording: test/python/py_workload.py (the shim's own test program,
# test/python.cmake) on interpreter PYTHON under `cudaspy record` on the fake
# driver. Its EXPECT files say which lines made captured calls; --by pyline
# must have a row for each of them and no other but slow calls' (1 ms or
# more: any line gets a stack then), with at least as many calls, every row's
# site in py_workload.py (or a slow call's in fake_rt.py, which it loads the
# runtime with); the Perfetto trace (check_trace) puts a site on
# every stacked call, and MCP's get_hotspots ranks the same rows.
set -u
B=$1 PY=$2 W=$3
D=$(cd "$(dirname "$0")/../python" && pwd)
rm -rf "$W" && mkdir -p "$W" && cd "$W" || exit 1
command -v python3 >/dev/null || { echo "skip: no python3"; exit 77; }
"$PY" -c 'import ctypes' 2>/dev/null || { echo "skip: $PY cannot import ctypes"; exit 77; }
export LD_LIBRARY_PATH="$B/fake${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" CUDASPY_QUIET=1
# a TSan build: its runtime first, preloaded into the uninstrumented
# interpreter (as test/cli/python_lines.sh does)
tsan=$(ldd "$B/fake/libcudart.so.13" | awk '/libtsan/ {print $3}')
[ -n "$tsan" ] && export TSAN_OPTIONS="${TSAN_OPTIONS:+$TSAN_OPTIONS:}suppressions=$D/tsan.supp"
LD_PRELOAD=$tsan timeout 200 "$B/cudaspy" record -o run.lmdb --no-host -- "$PY" \
    "$D/py_workload.py" "$W/exp" >out 2>err || { echo "FAIL: traced run exited $?"; cat err; exit 1; }
A=$B/cudaspy-analyze
fail=0
"$A" --json --by pyline run.lmdb >r.json 2>aerr || { echo "FAIL: analyze exited $?"; fail=1; }
"$A" --color never --by pyline run.lmdb >r.txt 2>>aerr || { echo "FAIL: text exited $?"; fail=1; }
"$A" export --chrome t.json run.lmdb 2>>aerr || { echo "FAIL: export exited $?"; fail=1; }
"$B/check_trace" t.json >/dev/null || { echo "FAIL: check_trace rejected the trace"; fail=1; }
printf '%s\n' \
    '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}' \
    '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"get_hotspots","arguments":{"top":100}}}' |
    "$A" mcp run.lmdb >mcp.out 2>>aerr || { echo "FAIL: mcp exited $?"; fail=1; }
python3 - r.json t.json mcp.out exp.* <<'EOF' || fail=1
import collections, json, sys
j = json.load(open(sys.argv[1], encoding="utf-8"))
bad = []
rows = j["pylines"]["rows"]
want = collections.Counter()  # (line, function) -> captured calls noted
seen = set()                  # every line a call was made from
for path in sys.argv[4:]:
    for l in open(path, encoding="utf-8"):
        f = l.split()
        site = f[5].rsplit(":", 2)  # file:line:function of the innermost frame
        key = (int(site[1]), site[2])
        seen.add(key)
        if f[4] == "yes":
            want[key] += 1
got, slow = {}, {}
for r in rows:
    if r.get("file", "").endswith("/fake_rt.py") and r["p50_ns"] >= 1000000:
        continue  # the module the workload loads the runtime with: the runtime's slow first
                  # call (cuInit, 1 ms or more under TSan) may be made there
    if not r.get("file", "").endswith("/py_workload.py"):
        bad.append(f"row not in py_workload.py: {r.get('text')}")
        continue
    got[(r["line"], r["function"])] = r["calls"]
    slow[(r["line"], r["function"])] = r["p50_ns"] >= 1000000
for k, n in want.items():
    if got.get(k, 0) < n:
        bad.append(f"line {k[0]} {k[1]}: {got.get(k, 0)} calls, want >= {n}")
for k in got:  # a line no noted call came from: only a call of 1 ms or more (cuInit)
    if k not in seen and not slow[k]:
        bad.append(f"row for line {k[0]} {k[1]}, where no call was made")
t = json.load(open(sys.argv[2], encoding="utf-8"))
ev = t["traceEvents"] if isinstance(t, dict) else t
sites = [e for e in ev if e.get("ph") == "X" and "site" in e.get("args", {})]
if len(sites) != j["pylines"]["calls"]:
    bad.append(f"trace: {len(sites)} slices with a site, want {j['pylines']['calls']}")
if any(not e["args"]["site"].startswith(("py_workload.py:", "fake_rt.py:")) for e in sites):
    bad.append("trace: a site outside py_workload.py")
r = [json.loads(l) for l in open(sys.argv[3], encoding="utf-8") if l.strip()][-1]["result"]["structuredContent"]
if [x["text"] for x in r["by_time"]] != [x["text"] for x in rows]:
    bad.append("get_hotspots by_time is not the --by pyline rows")
for b in bad:
    print("FAIL: " + b)
print(f"pyline_real: {len(rows)} sites, {sum(want.values())} captured calls noted")
sys.exit(1 if bad else 0)
EOF
if grep -v '^cudaspy-analyze: mcp: ' aerr >aerr.rest; then
    echo "FAIL: analyzer stderr:"; cat aerr.rest; fail=1
fi
[ "$fail" = 0 ] || exit 1
echo "ok   pyline_real"
