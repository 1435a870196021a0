#!/bin/sh
# export_real.sh: cli.export_real / cli.html_real on a REAL run file (launcher +
# sampler + shim recording the fake runtime/driver client, host sampling on).
# Usage: export_real.sh CASE ANALYZE CUDASPY CLIENT CHECK_TRACE WORKDIR
set -u
case_=$1 analyze=$2 cudaspy=$3 client=$4 check=$5 dir=$6
rm -rf "$dir" && mkdir -p "$dir" && cd "$dir" || exit 1
fail() { echo "FAIL $case_: $*" >&2; exit 1; }
FAKECUDA_LAT_NS="cuStreamSynchronize=200000" FAKECUDA_LAT_MODE=sleep \
    "$cudaspy" record -q -o run.lmdb -- "$client" 200 16 >rec.log 2>&1 || { cat rec.log >&2; fail record; }
case $case_ in
export_real)
    "$analyze" export --chrome t.json run.lmdb || fail export
    "$check" t.json || fail "check_trace rejects the export"
    grep -q '"name":"cudaStreamSynchronize"' t.json || fail "no sync slices"
    grep -q '"name":"thread_name"' t.json || fail "no thread names"
    # every runtime call that folded in its driver call names it, once
    "$analyze" --json run.lmdb >a.json || fail "analyze --json"
    python3 - t.json a.json <<'PY' || fail "folded driver calls in the export differ from --json"
import collections, json, sys
events = json.load(open(sys.argv[1]))["traceEvents"]
got = collections.Counter((e["name"], e["args"]["driver"]) for e in events
                          if e.get("ph") == "X" and "driver" in e.get("args", {}))
want = collections.Counter({(f["runtime"], f["driver"]): f["count"]
                            for f in json.load(open(sys.argv[2])).get("folded_driver_calls", [])})
print("folded in the export:", dict(got), file=sys.stderr)
sys.exit(0 if want and got == want else 1)
PY
    ;;
html_real)
    command -v chromium >/dev/null || { echo "skip: no chromium"; exit 77; }
    "$analyze" report --html r.html run.lmdb || fail report
    timeout 90 chromium --headless=new --disable-gpu --no-sandbox --no-first-run \
        --enable-logging=stderr --v=0 --user-data-dir="$dir/profile" \
        --dump-dom "file://$dir/r.html" >dom.html 2>chromium.log || fail chromium
    if grep -q ':CONSOLE' chromium.log; then
        grep ':CONSOLE' chromium.log >&2; fail "the page wrote to the console"
    fi
    grep -q '<title>cudaspy report: ok</title>' dom.html ||
        { grep -o '<title>[^<]*</title>' dom.html >&2; fail "page did not finish rendering"; }
    ;;
*) fail "unknown case" ;;
esac
echo "ok   $case_"
