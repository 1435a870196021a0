#!/bin/sh
# export_setup.sh ANALYZE GEN_RUN CHECK_TRACE WORKDIR: cli.export_setup, the
# set-up before the first step on the Perfetto steps track: gen_run
# gpu_setup spends 600 ms on CPU before its first step; the export holds one
# "set-up" slice of that length, before step 0, on the steps' track.
set -u
analyze=$1 gen=$2 check=$3 dir=$4
rm -rf "$dir" && mkdir -p "$dir" && cd "$dir" || exit 1
fail() { echo "FAIL export_setup: $*" >&2; exit 1; }
"$gen" gpu_setup run.lmdb || fail "gen_run"
"$analyze" export --chrome t.json run.lmdb || fail "export exited $?"
"$check" t.json >/dev/null || fail "check_trace rejects the export"
python3 - t.json <<'PY' || fail "no set-up slice of 600 ms before step 0 on the steps track"
import json, sys
ev = [e for e in json.load(open(sys.argv[1]))["traceEvents"] if e.get("cat") == "step"]
su = [e for e in ev if e["name"] == "set-up"]
s0 = [e for e in ev if e["name"] == "step 0"]
print("set-up:", su, file=sys.stderr)
ok = (len(su) == 1 and len(s0) == 1 and su[0]["tid"] == s0[0]["tid"] and
      595000 <= su[0]["dur"] <= 605000 and su[0]["ts"] + su[0]["dur"] <= s0[0]["ts"] + 1)
sys.exit(0 if ok else 1)
PY
echo "ok   export_setup"
