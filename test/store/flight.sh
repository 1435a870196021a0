#!/usr/bin/env bash
# flight.sh: cudaspy-sampler --max-size (the flight recorder, issue 25) on a
# real producer, real LMDB files. One deterministic workload (cs_producer -D:
# 2 threads x N records, durations that depend only on the record) is
# recorded twice, uncapped and with --max-size 2M:
#  - the capped file stays at or under the cap (its size is printed);
#  - every thread's newest records are there, whole (flight_check);
#  - the analyzer's whole-run count per API is the producer's exact count,
#    and p50/p99 from the aggregates are within 0.4 % (+1 ns) of the exact
#    ones of the uncapped run;
#  - the report says which part has full detail.
# Then the collector is SIGKILLed mid-run: the file still reads.
# Usage: flight.sh SAMPLER PRODUCER FLIGHT_CHECK ANALYZE
set -euo pipefail
sampler=$1 producer=$2 check=$3 analyze=$4
fail() { echo "FAIL: $*" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export CUDASPY_CLOCK=mono CUDASPY_QUIET=1
n=240000 cap=$((2 << 20)) # compact records: ~10 bytes each, the uncapped run ~5 MB

record() { # record FILE [--max-size SIZE]
    local out=$1
    shift
    "$sampler" --no-host "$@" -o "$out" -- "$producer" -t 2 -n $n -r 40 -D >"$out.prod"
    grep -q "produced $((2 * n)) dropped 0" "$out.prod" || fail "$out: $(cat "$out.prod")"
}
record "$tmp/full.lmdb"
record "$tmp/cap.lmdb" --max-size 2M

size=$(stat -c %s "$tmp/cap.lmdb")
full=$(stat -c %s "$tmp/full.lmdb")
echo "uncapped $full bytes; capped $size bytes, cap $cap"
[ "$size" -le "$cap" ] || fail "capped file $size bytes > cap $cap"
[ "$full" -gt $((2 * cap)) ] || fail "the workload is too small to test the cap ($full bytes)"

got=$("$check" "$tmp/cap.lmdb" $n) || fail "flight_check: $got"
echo "$got"
[[ "$got" == "threads=2 "* ]] || fail "flight_check: $got"
[[ "$got" != *" evicted=0" ]] || fail "nothing was evicted: $got"

"$analyze" --json "$tmp/full.lmdb" >"$tmp/full.json"
"$analyze" --json "$tmp/cap.lmdb" >"$tmp/cap.json"
python3 - "$tmp/full.json" "$tmp/cap.json" $n $cap <<'EOF'
import json, sys
full, cap, n = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), int(sys.argv[3])
cap_bytes = int(sys.argv[4])
assert "apis_source" not in full, "uncapped run reads as capped"
assert cap["apis_source"] == "aggregates", cap.get("apis_source")
want = {"cuLaunchKernel": 2 * (n - n // 5), "cuStreamSynchronize": 2 * (n // 5)}
exact = {a["api"]: a for a in full["apis"]}
agg = {a["api"]: a for a in cap["apis"]}
for api, count in want.items():
    e, g = exact[api], agg[api]
    assert e["count"] == count and g["count"] == count, (api, e["count"], g["count"], count)
    for k in ("total_ns", "min_ns", "max_ns", "errors"):
        assert g[k] == e[k], (api, k, g[k], e[k])
    for k in ("p50_ns", "p90_ns", "p99_ns", "p999_ns"):
        err = abs(g[k] - e[k]) / e[k]
        print(f"{api} {k}: exact {e[k]} aggregates {g[k]} error {100 * err:.3f} %")
        assert abs(g[k] - e[k]) <= e[k] / 256 + 1, (api, k, g[k], e[k])
fl = cap["run"]["files"][0]["flight"]
assert fl["max_size_bytes"] == cap_bytes and fl["evicted_records"] > 0, fl
assert fl["outermost_calls"] == 2 * n, fl
assert 0 < fl["detail_from_ns"] < fl["detail_to_ns"], fl
detail = sum(a["count"] for a in cap["apis_detail"])
assert 0 < detail < 2 * n, detail
print(f"detail {detail} of {2 * n} calls, from {fl['detail_from_ns'] / 1e9:.2f} s")
EOF
"$analyze" "$tmp/cap.lmdb" >"$tmp/cap.txt"
grep -q "^capped   run file capped at 2 MiB; full detail from [0-9.]* s to [0-9.]* s; before that, aggregates only" \
    "$tmp/cap.txt" || fail "report: $(grep -A1 capped "$tmp/cap.txt")"
grep -q "^LATENCY (whole run, from per-second aggregates" "$tmp/cap.txt" || fail "LATENCY heading"

# SIGKILL of the collector mid-run leaves a readable, capped file.
"$sampler" --no-host --max-size 4M -o "$tmp/kill.lmdb" -- \
    "$producer" -t 2 -m forever -r 40 -D -T 20 >/dev/null &
spid=$!
sleep 3
child=$(pgrep -P $spid || true)
kill -KILL $spid
wait $spid 2>/dev/null || true
[ -z "$child" ] || kill -KILL $child 2>/dev/null || true
"$analyze" --json "$tmp/kill.lmdb" >"$tmp/kill.json" || fail "killed run does not read"
python3 -c "
import json, sys
j = json.load(open(sys.argv[1]))
f = j['run']['files'][0]
assert f['clean_shutdown'] is False and f['flight']['outermost_calls'] > 0, f
assert j['apis_source'] == 'aggregates'
" "$tmp/kill.json" || fail "killed run: $(head -c 400 "$tmp/kill.json")"
[ "$(stat -c %s "$tmp/kill.lmdb")" -le $((4 << 20)) ] || fail "killed run over its cap"
echo "ok   flight"
