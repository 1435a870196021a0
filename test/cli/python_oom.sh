#!/bin/bash
# python_oom.sh BUILD PYTHON: test/python/py_oom.py under `cudaspy record`
# (issue 31): a Python program whose allocation fails out of memory and
# that exits right after, as one that torch.cuda.OutOfMemoryError ends.
# The oom finding names the line that asked (# BIG), the size, what the
# process held and the device's free memory; the largest holder is the
# line that allocated the weights (# WEIGHTS); the program's own
# cudaMemGetInfo is recorded as the program's reading.
. "$(dirname "$0")/shim_common.sh"
PY=$1
D=$(cd "$(dirname "$0")/../python" && pwd)
export LD_LIBRARY_PATH="$B/fake${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" FAKECUDA_MEM_LIMIT=268435456
tsan=$(ldd "$B/fake/libcudart.so.13" | awk '/libtsan/ {print $3}')
[ -n "$tsan" ] && export LD_PRELOAD=$tsan
timeout 100 "$B/cudaspy" record -o "$T/run.lmdb" --no-host -- "$PY" "$D/py_oom.py" \
    >"$T/out" 2>"$T/err"
rc=$?
[ "$rc" -eq 1 ] || { cat "$T/err" >&2; fail "py_oom.py exited $rc, want 1"; }
grep -q "py_oom: out of memory: tried to allocate 512 MiB; 160 MiB free of 256 MiB" "$T/out" ||
    fail "the program's own message: $(cat "$T/out")"
"$B/cudaspy-analyze" --json "$T/run.lmdb" >"$T/report.json" || fail "analyze exited $?"
big=$(grep -n '# BIG' "$D/py_oom.py" | cut -d: -f1)
weights=$(grep -n '# WEIGHTS' "$D/py_oom.py" | cut -d: -f1)
env -u LD_PRELOAD python3 - "$T/report.json" "$big" "$weights" <<'PY' || fail "report (in $T)"
import json, sys
d, big, weights = json.load(open(sys.argv[1])), sys.argv[2], sys.argv[3]
MIB = 1 << 20
f = d["chains"][0]
assert f["cause"] == "oom" and f["severity"] == "HIGH", (f["cause"], f["severity"])
o = f["oom"]
assert o["site"].startswith("py_oom.py:%s in step" % big), o["site"]
assert o["bytes"] == 512 * MIB and o["held_bytes"] == 96 * MIB, o
assert o["free_bytes"] == 160 * MIB and o["total_bytes"] == 256 * MIB, o
assert o["top_holders"][0]["site"].startswith("py_oom.py:%s in load_model" % weights), o
p = d["memory"]["processes"][0]
assert [r["why"] for r in p["readings"]] == ["first_allocation", "out_of_memory", "program"], \
    p["readings"]
assert p["peak_bytes"] == 104 * MIB and p["held_end_bytes"] == 96 * MIB, p
PY
exit 0
