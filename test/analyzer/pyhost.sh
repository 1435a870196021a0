#!/bin/sh
# pyhost.sh ANALYZE GEN_RUN WORKDIR: host_bound names the Python lines the
# feeding thread ran in the GPU's idle gaps, from the collector's samples of
# its host code (docs/python.md, "Host code"; rules/pyhost.c). gen_run's
# gpu_setup_host_pys samples each step's 3 ms of host code at 1 ms: two
# samples in data.py:88 collate (under a library's default_collate), one in
# train.py:61 log_metrics, so the idle splits 2 to 1 between them. The same
# run without samples (gpu_setup_host_py) keeps the sync's line, has no
# "pysample" count.
set -u
A=$1 GEN=$2 W=$3
rm -rf "$W" && mkdir -p "$W" && cd "$W" || exit 1
fail=0
no() { echo "FAIL: $*"; fail=1; }
has() { grep -qxF -- "$2" "$1" || { no "$1 lacks: $2"; grep -A6 'python lines' "$1" | head -8; }; }

"$GEN" gpu_setup_host_pys pys.lmdb || { echo "gen_run gpu_setup_host_pys failed"; exit 1; }
"$GEN" gpu_setup_host_py py.lmdb || { echo "gen_run gpu_setup_host_py failed"; exit 1; }
"$GEN" gpu_setup_host_pyx pyx.lmdb || { echo "gen_run gpu_setup_host_pyx failed"; exit 1; }
"$A" --color never pys.lmdb >pys.txt 2>err.txt || no "report exited $?"
[ -s err.txt ] && no "stderr not empty: $(cat err.txt)"
has pys.txt "    - 1.29 s of GPU idle while the host ran data.py:88 in collate (67 %; 1198 samples)"
has pys.txt "      via torch/utils/data/_utils/collate.py:140 in default_collate"
has pys.txt "      called from train.py:60 in train_step <- train.py:80 in main"
has pys.txt "    - 645.2 ms of GPU idle while the host ran train.py:61 in log_metrics (33 %; 599 samples)"
"$A" --color never py.lmdb >py.txt 2>err.txt || no "report (no samples) exited $?"
grep -q 'while the host ran' py.txt && no "samples named without samples"
grep -q 'GPU idle after the cudaStreamSynchronize at train.py:57 in train_step' py.txt ||
    no "without samples, host_bound lost its sync line"
if command -v python3 >/dev/null; then
    "$A" --json pys.lmdb >pys.json && "$A" --json py.lmdb >py.json &&
        "$A" --json pyx.lmdb >pyx.json || no "--json exited $?"
    python3 - pys.json py.json pyx.json <<'PY' || fail=1
import json, sys
j, k, x = (json.load(open(p)) for p in sys.argv[1:4])
bad = []
def want(what, got, exp):
    if got != exp:
        bad.append(f"{what}: got {got!r}, want {exp!r}")
hb = [c for c in j["chains"] if c["cause"] == "host_bound"][0]["python_sites"]
want("sites", [(s["file"], s["line"], s["samples"], s["source"], round(s["share"], 3)) for s in hb],
     [("/w/data.py", 88, 1198, "samples", 0.667), ("/w/train.py", 61, 599, "samples", 0.333)])
want("via", [f["function"] for f in hb[0]["via"]], ["default_collate"])
want("samples counted", j["run"]["files"][0]["counts"].get("pysample"), 1800)
want("no samples, no count", "pysample" in k["run"]["files"][0]["counts"], False)
# pyx: the same host code sampled 2 to 1 in a DataLoader's receive path and
# in an optimizer: data_recv and host_framework, owned by the data pipeline
# and launch_bound; the user's host code none of it
b = {v["name"]: v for v in x["account"]["buckets"]}
want("pys: no data_recv", "data_recv" in {v["name"] for v in j["account"]["buckets"]}, False)
r, fw = b.get("data_recv", {}).get("ns", 0), b.get("host_framework", {}).get("ns", 0)
want("data_recv to host_framework 2 to 1", bool(fw) and 1.8 <= r / fw <= 2.2, True)
want("owners", (b["data_recv"]["owner"], b["host_framework"]["owner"]),
     ("data_pipeline_starvation", "launch_bound"))
want("host code left", b.get("host_code", {}).get("ns", 0) < 1e6, True)
own = {c["cause"]: c["impact_ns"] for c in x["chains"]}
want("data_pipeline_starvation owns data_recv", own.get("data_pipeline_starvation", 0) >= r, True)
want("launch_bound owns host_framework", own.get("launch_bound", 0) >= fw, True)
for b in bad:
    print("FAIL: json: " + b)
sys.exit(1 if bad else 0)
PY
fi
[ "$fail" = 0 ] || exit 1
echo "ok   pyhost"
