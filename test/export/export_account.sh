#!/bin/sh
# export_account.sh ANALYZE GEN_RUN CHECK_TRACE WORKDIR: cli.export_account, the
# account on its own Perfetto track: one "account" slice per feeding process
# and GPU over its CUDA-active window, whose args are --json's
# account.processes row (buckets keyed by name) and sum to that window.
set -u
analyze=$1 gen=$2 check=$3 dir=$4
rm -rf "$dir" && mkdir -p "$dir" && cd "$dir" || exit 1
fail() { echo "FAIL export_account: $*" >&2; exit 1; }
"$gen" gpu_setup run.lmdb || fail "gen_run"
"$analyze" export --chrome t.json run.lmdb || fail "export exited $?"
"$analyze" --json run.lmdb > run.json || fail "--json exited $?"
"$check" t.json >/dev/null || fail "check_trace rejects the export"
python3 - t.json run.json <<'PY' || fail "the account slices are not --json's account"
import json, sys
ev = json.load(open(sys.argv[1]))["traceEvents"]
want = json.load(open(sys.argv[2]))["account"]["processes"]
acc = [e for e in ev if e.get("cat") == "account"]
names = {(e["pid"], e["tid"]): e["args"]["name"] for e in ev if e.get("name") == "thread_name"}
ok = len(acc) == len(want) > 0
for e, w in zip(acc, want):
    a = e["args"]
    rows = {b["name"]: {k: v for k, v in b.items() if k != "name"} for b in w["buckets"]}
    same = (e["pid"] == w["pid"] and a["buckets"] == rows and
            all(a[k] == w[k] for k in w if k not in ("pid", "buckets")))
    sums = sum(b["ns"] for b in a["buckets"].values()) == a["window_ns"] == round(e["dur"] * 1000)
    named = names.get((e["pid"], e["tid"])) == "account (GPU %d)" % w["device"]
    print(e["pid"], "same", same, "sums", sums, "named", named, file=sys.stderr)
    ok = ok and same and sums and named
sys.exit(0 if ok else 1)
PY
echo "ok   export_account"
