#!/usr/bin/env bash
# push.sh: `cudaspy-analyze push` into a local ClickHouse server (issue 32,
# point 4; docs/fleet.md). Two figures, on a private server that
# test/fleet/clickhouse.sh starts under a scratch folder:
# 1. push rate from one core: a synthetic run of CALLS CUDA calls and
#    CALLS/2 off-CPU intervals (build/gen_run big), pushed REPEAT times
#    (each time as another run, gen_run --id) by a push pinned to CPU 0;
#    records a second of the push's own CPU while it streams them (the
#    push line's "s of CPU": reading, decoding, Native blocks, sending),
#    of the wall time streaming them into the server ("records streamed
#    in": the server's inserts included, on the other CPU), and of the
#    whole push (analysis, steps, account, findings included);
# 2. a fleet of RUNS runs of 2 M records each (1.4 M calls, 0.6 M off-CPU
#    intervals; 8 hosts, 4 commits) pushed one after the other, then the
#    per-host step-time p99 over all of them (docs/fleet.md's step_time
#    query, by host) asked QUERIES times: its wall time through the HTTP
#    interface (curl's time_total), each run, and the median.
# Usage: bench/push.sh [BUILD_DIR=build-rel] [CALLS=4000000] [REPEAT=3] [RUNS=100] [QUERIES=5]
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
B=$(cd "${1:-build-rel}" && pwd)
calls=${2:-4000000} repeat=${3:-3} runs=${4:-100} queries=${5:-5}
w=$(mktemp -d /var/tmp/cudaspy-push.XXXXXX)
url=$(sh "$root/test/fleet/clickhouse.sh" start "$w/ch")
trap 'sh "$root/test/fleet/clickhouse.sh" stop "$w/ch"; rm -rf "$w"' EXIT
printf '# cudaspy-bench commit=%s host=%s ncpu=%s clickhouse=%s cmd="bench/push.sh %s %s %s %s %s"\n' \
    "$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)" "$(hostname)" \
    "$(nproc)" "$(curl -s "$url/?query=SELECT%20version()")" "${1:-build-rel}" "$calls" \
    "$repeat" "$runs" "$queries"

# push LINE: records a second streamed and over the whole push
rate() {
    python3 -c '
import re, sys
l = sys.argv[1]
c, g, o = (int(x) for x in re.search(r"(\d+) calls, (\d+) GPU, (\d+) off-CPU", l).groups())
wall, stream, cpu = (float(x) for x in re.search(
    r"in ([\d.]+) s \(records streamed in ([\d.]+) s, ([\d.]+) s of CPU", l).groups())
n = c + g + o
print("%d records: %.2f M/s a CPU second of the push (%.2f s), %.2f M/s streamed into the server (%.2f s), %.2f M/s over the whole push (%.2f s)" %
      (n, n / cpu / 1e6, cpu, n / stream / 1e6, stream, n / wall / 1e6, wall))' "$1"
}

echo "== 1. push rate from one core: $calls calls + $((calls / 2)) off-CPU a run"
for i in $(seq "$repeat"); do
    "$B/gen_run" big "$w/r.lmdb" --big "$calls" --big-host $((calls / 2)) --id $((1000 + i))
    line=$(taskset -c 0 "$B/cudaspy-analyze" push --clickhouse "$url" "$w/r.lmdb")
    echo "push $i: $(rate "$line")"
    rm -f "$w/r.lmdb" "$w/r.lmdb-lock"
done

echo "== 2. $runs runs of 2 M records (8 hosts, 4 commits), then per-host step p99 over all"
t0=$(date +%s.%N)
for i in $(seq "$runs"); do
    "$B/gen_run" big "$w/f.lmdb" --big 1400000 --big-host 600000 --id $((5000 + i)) --seed "$i"
    "$B/cudaspy-analyze" push -q --clickhouse "$url" --job train --commit "c$((i * 4 / (runs + 1)))" \
        --host "host$((i % 8))" "$w/f.lmdb"
    rm -f "$w/f.lmdb" "$w/f.lmdb-lock"
done
echo "pushed $runs runs in $(python3 -c "import sys; print('%.0f' % (float(sys.argv[2]) - float(sys.argv[1])))" "$t0" "$(date +%s.%N)") s:" \
    "$(curl -s "$url/" --data-binary 'SELECT count() FROM cudaspy_runs') runs," \
    "$(curl -s "$url/" --data-binary 'SELECT count() FROM cudaspy_calls') calls," \
    "$(curl -s "$url/" --data-binary 'SELECT count() FROM cudaspy_offcpu') off-CPU," \
    "$(curl -s "$url/" --data-binary 'SELECT count() FROM cudaspy_steps') steps;" \
    "on disk $(du -sh "$w/ch/data" | cut -f1)"
q="SELECT host, count() AS steps, quantileExact(0.99)(dur_ns) AS p99_ns FROM cudaspy_steps
ANY INNER JOIN (SELECT run_id, host FROM cudaspy_runs) USING run_id GROUP BY host ORDER BY host"
curl -s "$url/" --data-binary "$q" | head -3
for i in $(seq "$queries"); do
    curl -s -o /dev/null -w '%{time_total}\n' "$url/" --data-binary "$q"
done | python3 -c '
import statistics, sys
t = [float(x) for x in sys.stdin]
print("per-host step p99 over all runs: %s s, median %.3f s" % (" ".join("%.3f" % x for x in t), statistics.median(t)))'
