#!/bin/bash
# metrics.sh BUILD: `cudaspy record --metrics` (issue 33, docs/live.md).
# cause_workload churn runs under record --metrics 127.0.0.1:PORT (a port
# free when the test starts); curl scrapes /metrics during the run; each
# scrape must parse as Prometheus' text format 0.0.4 (every line a comment
# or `name{labels} value`, every metric with HELP and TYPE, histogram
# buckets cumulative with +Inf equal to _count), its counters must never
# go back, and its step count must be at most the final one. After the
# run, `cudaspy-analyze metrics --once RUN` must give exactly the run's
# steps.count (cudaspy-analyze --json), and the server must have ended
# with the sampler. Then other paths get 404, junk gets 400, the server
# survives both, and a bad address is a usage error.
. "$(dirname "$0")/shim_common.sh"
export LD_LIBRARY_PATH="$B/fake${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
command -v curl >/dev/null || { echo "metrics: skipped: no curl"; exit 77; }
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# check FILE...: each scrape parses; counters never go back; prints the
# last scrape's step count
check() {
    python3 - "$@" <<'PY'
import re, sys
line_re = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{([a-zA-Z_][a-zA-Z0-9_]*="(\\.|[^"\\])*"(,[a-zA-Z_][a-zA-Z0-9_]*="(\\.|[^"\\])*")*)?\})? (-?[0-9.e+-]+|\+Inf|NaN)$')
prev, steps = {}, None
for path in sys.argv[1:]:
    help_, type_, series = {}, {}, {}
    for n, l in enumerate(open(path).read().splitlines(), 1):
        if l.startswith("# HELP "):
            help_[l.split()[2]] = 1
        elif l.startswith("# TYPE "):
            _, _, name, t = l.split()
            assert t in ("counter", "gauge", "histogram"), (path, n, l)
            type_[name] = t
        else:
            m = line_re.match(l)
            assert m, "%s:%d: not a sample: %r" % (path, n, l)
            key = m.group(1) + (m.group(2) or "")
            assert key not in series, "%s:%d: duplicate series %s" % (path, n, key)
            series[key] = float(m.group(7))
    for key in series:
        name = key.split("{")[0]
        base = re.sub(r"_(bucket|sum|count)$", "", name)
        fam = name if name in type_ else base
        assert fam in type_ and fam in help_, "%s: %s has no HELP/TYPE" % (path, key)
        if type_[fam] == "counter":
            assert name.endswith("_total"), key
        if type_[fam] in ("counter", "histogram") and key in prev:
            assert series[key] >= prev[key], "%s: %s went back: %s -> %s" % (path, key, prev[key], series[key])
    h = "cudaspy_step_duration_seconds"
    buckets = [(float(k.split('"')[1]), v) for k, v in series.items() if k.startswith(h + "_bucket")]
    assert buckets, path
    vals = [v for _, v in sorted(buckets)]
    assert vals == sorted(vals), "%s: buckets not cumulative: %s" % (path, vals)
    assert vals[-1] == series[h + "_count"], (path, vals[-1], series[h + "_count"])
    assert series["cudaspy_up"] == 1, path
    prev, steps = series, series["cudaspy_steps_total"]
print(int(steps))
PY
}

# 1. scrapes during the run
port=$(free_port)
"$B/cudaspy" record -q -o "$T/run.lmdb" --metrics "127.0.0.1:$port" -- "$B/fake/cause_workload" churn 5 \
    >"$T/w.out" 2>"$T/w.err" &
rec=$!
n=0
for i in $(seq 40); do
    sleep 0.2
    curl -s -f -o "$T/scrape.$n" "http://127.0.0.1:$port/metrics" 2>/dev/null || continue
    grep -q "^cudaspy_recording 1" "$T/scrape.$n" || break
    grep -q "^cudaspy_steps_total" "$T/scrape.$n" && n=$((n + 1))
    [ $n -ge 6 ] && break
done
[ $n -ge 3 ] || { cat "$T/w.err"; fail "only $n scrapes during the run"; }
curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/other" >"$T/c404"
# raw junk, and a head that never ends, straight on the socket
raw() { exec 3<>"/dev/tcp/127.0.0.1/$port" && printf '%b' "$1" >&3 && head -n 1 <&3 | tr -d '\r'; exec 3<&-; }
[ "$(raw 'NOT HTTP AT ALL\r\n\r\n')" = "HTTP/1.1 400 Bad Request" ] || fail "junk: no 400"
[ "$(raw "GET /metrics HTTP/1.1\r\nX: $(head -c 9000 /dev/zero | tr '\0' a)")" = "HTTP/1.1 400 Bad Request" ] ||
    fail "a 9000-byte head: no 400"
curl -s -o /dev/null -w '%{http_code}' -X 'BAD METHOD' "http://127.0.0.1:$port/metrics" >"$T/c400" 2>/dev/null
curl -s -f -o "$T/scrape.$n" "http://127.0.0.1:$port/metrics" || fail "no scrape after a bad request"
n=$((n + 1))
files=$(seq -f "$T/scrape.%g" 0 $((n - 1)))
# shellcheck disable=SC2086 # one argument per scrape
live=$(check $files) || fail "a scrape during the run is not valid"
wait $rec || { cat "$T/w.err"; fail "record exited $?"; }
[ "$(cat "$T/c404")" = 404 ] || fail "/other: HTTP $(cat "$T/c404"), not 404"
[ "$(cat "$T/c400")" = 400 ] || fail "a bad request line: HTTP $(cat "$T/c400"), not 400"

# 2. after the run: the final figures are the run's
"$B/cudaspy-analyze" metrics --once "$T/run.lmdb" >"$T/final" || fail "metrics --once exited $?"
final=$(check "$T/final") || fail "the final exposition is not valid"
want=$("$B/cudaspy-analyze" --json "$T/run.lmdb" | python3 -c 'import json,sys; print(json.load(sys.stdin)["steps"]["count"])')
echo "metrics: $n scrapes during the run, last steps_total $live; final $final; the run's steps.count $want"
[ "$final" = "$want" ] || fail "final cudaspy_steps_total $final, the run has $want steps"
[ "$live" -le "$final" ] || fail "a live scrape's steps ($live) exceed the final count ($final)"
grep -q '^cudaspy_account_seconds_total{bucket="allocator"}' "$T/final" || fail "no allocator bucket"
grep -q '^cudaspy_recording 0' "$T/final" || fail "the finished run reads as recording"
for _ in $(seq 30); do curl -s -o /dev/null "http://127.0.0.1:$port/metrics" || break; sleep 0.1; done
curl -s -o /dev/null "http://127.0.0.1:$port/metrics" && fail "the metrics server outlived the run"

# 3. bad input
"$B/cudaspy" record --metrics 9464 -- true 2>"$T/e1"; rc=$?
[ $rc = 2 ] && grep -q "invalid address '9464'" "$T/e1" || fail "--metrics 9464: exit $rc: $(cat "$T/e1")"
"$B/cudaspy-analyze" metrics "$T/run.lmdb" 2>"$T/e2"; rc=$?
[ $rc = 2 ] && grep -q "needed" "$T/e2" || fail "metrics without --listen: exit $rc: $(cat "$T/e2")"
echo "ok   metrics"
exit 0
