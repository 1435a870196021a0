#!/bin/bash
# push.sh BUILD DIR: cli.fleet_push (issue 32, docs/fleet.md). Against a
# private ClickHouse server (clickhouse.sh; exit 77, skipped, without one):
# four runs pushed under three commits, two jobs and three hosts (accuracy_workload's
# healthy and hostdata loops, its contention_external loop beside CPU
# hogs, gen_pyrun's Python lines); every "-- fleet:" query of
# docs/fleet.md run and its answer checked against the runs' own reports
# (steps, findings) or their planted truth (the regression, the lines); one run's per-API counts and
# p99 equal to the report's; a second push stores nothing twice; a push
# cut short (its runs row gone) is cleaned and redone; a bad URL, a server
# that is not there, wrong credentials and a corrupt run: one line, exit 2,
# nothing written.
set -u
B=$1 W=$2
here=$(cd "$(dirname "$0")" && pwd)
docs=$here/../../docs/fleet.md
A=$B/cudaspy-analyze
rm -rf "$W" && mkdir -p "$W" || exit 1
fail() { echo "push.sh: $*" >&2; exit 1; }
url=$(sh "$here/clickhouse.sh" start "$W/ch") || exit $?
hogs=""
trap 'sh "$here/clickhouse.sh" stop "$W/ch"; [ -n "$hogs" ] && kill $hogs 2>/dev/null' EXIT
export LD_LIBRARY_PATH="$B/fake${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" CUDASPY_QUIET=1
sql() { curl -sS --fail-with-body "$url/" --data-binary "$1"; }
record() { # NAME MODE: accuracy_workload MODE for 1 s
    "$B/cudaspy" record -q -o "$W/$1.lmdb" --gpu-activity full -- \
        "$B/fake/accuracy_workload" "$2" 1.0 >"$W/$1.out" 2>&1 || { cat "$W/$1.out"; fail "$1: record failed"; }
}
record hostdata hostdata # c1's, then c2's: a commit's first run orders the commits
record healthy healthy
for _ in 1 2 3 4; do setsid "$B/fake/accuracy_workload" hog 60 >/dev/null 2>&1 & hogs="$hogs $!"; done
record contention contention_external
kill $hogs; hogs=""
"$B/gen_pyrun" "$W/py.lmdb" >/dev/null || fail "gen_pyrun failed"

push() { "$A" push --clickhouse "$url" --job train "$@"; }
push --commit c1 --host h1 "$W/hostdata.lmdb" >"$W/p1" || fail "push hostdata: exit $?"
push --commit c2 --host h1 "$W/healthy.lmdb" >"$W/p2" || fail "push healthy: exit $?"
push --commit c0 --host h3 "$W/py.lmdb" >>"$W/p2" || fail "push py: exit $?"
"$A" push --clickhouse "$url" --job serve --commit c1 --host h2 "$W/contention.lmdb" >"$W/p3" ||
    fail "push contention: exit $?"
cat "$W/p1" "$W/p2" "$W/p3"
grep -q 'findings into' "$W/p3" || fail "no push line"
counts() { sql "SELECT (SELECT count() FROM cudaspy_calls), (SELECT count() FROM cudaspy_steps), (SELECT count() FROM cudaspy_runs), (SELECT count() FROM cudaspy_pylines)"; }
before=$(counts) || fail "count query failed"

# every query of docs/fleet.md, each checked
id=$(sed -n 's/.*contention.lmdb: run \([0-9]*\):.*/\1/p' "$W/p3")
python3 - "$docs" "$url" "$W" "$A" "$id" <<'PY' || fail "fleet queries"
import json, re, subprocess, sys, urllib.request
docs, url, w, analyze, run_id = sys.argv[1:6]
qs = dict(re.findall(r"```sql\n-- fleet: (\w+)\n(.*?)```", open(docs).read(), re.S))
assert set(qs) == {"step_time", "contention_hosts", "regressions", "python_lines", "apis"}, qs.keys()
def run(name):
    body = re.sub(r"run_id = \d+", "run_id = " + run_id, qs[name])
    with urllib.request.urlopen(url + "/", (body + " FORMAT JSONEachRow").encode()) as r:
        rows = [json.loads(l) for l in r.read().decode().splitlines() if l]
    print("%s: %s" % (name, rows[:4]))
    return rows
# the truth: each pushed run's own report, under the labels it was pushed with
pushed = {"hostdata": ("train", "h1"), "healthy": ("train", "h1"), "py": ("train", "h3"),
          "contention": ("serve", "h2")}
report = {n: json.loads(subprocess.run([analyze, "--json", "%s/%s.lmdb" % (w, n)], check=True,
                                       capture_output=True).stdout) for n in pushed}
st = run("step_time")
want = {}
for n, (job, host) in pushed.items():
    want[(job, host)] = want.get((job, host), 0) + report[n]["steps"]["count"]
assert {(r["job"], r["host"]): int(r["steps"]) for r in st} == want, (st, want)
ch = run("contention_hosts")
want = {}
for n, (job, host) in pushed.items():
    for f in report[n]["chains"]:
        if f["cause"] == "cpu_contention_external":
            want[host] = want.get(host, 0) + f["impact_ns"]
got = {r["host"]: round(float(r["impact_s"]) * 1e9) for r in ch}
assert got == want and [r["host"] for r in ch] == sorted(want, key=lambda h: -want[h]), (ch, want)
rg = run("regressions")
# hostdata's steps (c1) take about 6 ms, healthy's (c2) about 20 ms
last = [r for r in rg if r["job"] == "train"][-1]
assert last["commit"] == "c2" and last["before"] == "c1" and int(last["regressed"]) == 1, rg
py = run("python_lines")
assert py[0]["site"] == "train.py:57 in train_step" and abs(float(py[0]["gpu_idle_s"]) - 0.045) < 1e-6, py
apis = {(r["api"], int(r["nested"])): (int(r["calls"]), int(r["p99_ns"])) for r in run("apis")}
want = {(a["api"], int(bool(a.get("nested")))): (a["count"], a["p99_ns"])
        for a in report["contention"]["apis"]}
assert apis == want, (apis, want)
print("apis: %d rows equal to the report's" % len(want))
PY

# pushed again: stored once
push --commit c9 --host h9 "$W/healthy.lmdb" "$W/contention.lmdb" >"$W/again" || fail "re-push: exit $?"
[ "$(grep -c 'already stored' "$W/again")" = 2 ] || fail "re-push: $(cat "$W/again")"
[ "$(counts)" = "$before" ] || fail "re-push changed the tables: $before -> $(counts)"

# a push cut short before its runs row: cleaned and redone, nothing twice
sql "ALTER TABLE cudaspy_runs DELETE WHERE run_id = $id" || fail "delete failed"
for _ in $(seq 100); do [ "$(sql "SELECT count() FROM cudaspy_runs WHERE run_id = $id")" = 0 ] && break; sleep 0.1; done
"$A" push --clickhouse "$url" --job serve --commit c1 --host h2 "$W/contention.lmdb" >"$W/redo" || fail "redo: exit $?"
grep -q 'findings into' "$W/redo" || fail "redo: $(cat "$W/redo")"
[ "$(counts)" = "$before" ] || fail "redo left rows twice: $before -> $(counts)"

# failures: one line on stderr, exit 2, nothing written
cp "$W/healthy.lmdb" "$W/bad.lmdb" && truncate -s 20000 "$W/bad.lmdb"
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
pw=${url#http://}
for u in "ftp://$pw" "http://127.0.0.1:$port" "http://cudaspy:wrong@$pw" "$url"; do
    run=$W/hostdata.lmdb
    [ "$u" = "$url" ] && run=$W/bad.lmdb
    "$A" push --clickhouse "$u" "$run" >"$W/f.out" 2>"$W/f.err"; rc=$?
    echo "push --clickhouse $u $(basename "$run"): exit $rc: $(cat "$W/f.err")"
    [ $rc = 2 ] && [ "$(wc -l <"$W/f.err")" = 1 ] && [ ! -s "$W/f.out" ] || fail "$u: want one line and exit 2"
done
grep -q 'wrong user or password' "$W/f.err" 2>/dev/null ||
    "$A" push --clickhouse "http://cudaspy:wrong@$pw" "$W/hostdata.lmdb" 2>&1 | grep -q 'wrong user or password' ||
    fail "wrong credentials not said"
"$A" push --clickhouse "http://cudaspy:secret@$pw" "$W/hostdata.lmdb" | grep -q 'already stored' ||
    fail "the right credentials do not work"
[ "$(counts)" = "$before" ] || fail "a failed push wrote rows: $before -> $(counts)"

# a full disk: a server whose data lies on an 8 MiB tmpfs, a run of 2 M calls
mkdir -p "$W/full"
if mount -t tmpfs -o size=8m tmpfs "$W/full" 2>/dev/null; then
    trap 'sh "$here/clickhouse.sh" stop "$W/full/ch"; umount "$W/full"; sh "$here/clickhouse.sh" stop "$W/ch"' EXIT
    furl=$(sh "$here/clickhouse.sh" start "$W/full/ch") || exit $?
    "$B/gen_run" big "$W/big.lmdb" --big 2000000 --big-host 100000 || fail "gen_run failed"
    "$A" push --clickhouse "$furl" "$W/big.lmdb" >"$W/f.out" 2>"$W/f.err"; rc=$?
    echo "push into a full disk: exit $rc: $(cut -c1-200 "$W/f.err")"
    [ $rc = 2 ] && [ "$(wc -l <"$W/f.err")" = 1 ] && grep -q 'No space left' "$W/f.err" ||
        fail "full disk: want one line and exit 2"
    [ "$(curl -sS "$furl/" --data-binary 'SELECT count() FROM cudaspy_runs')" = 0 ] ||
        fail "full disk: the run counts"
else
    echo "push.sh: no tmpfs mount here (not root?): the full-disk case not run"
fi
echo "push.sh: ok ($before)"
