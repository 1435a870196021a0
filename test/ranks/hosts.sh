#!/bin/sh
# hosts.sh: cli.hosts_N (issue 32, docs/multihost.md): N "hosts" on this
# machine, each rank of client_ranks recorded by its own `cudaspy record`
# under its own host name (CUDASPY_HOST) and with a planted real-time clock
# error and drift (CUDASPY_TEST_REALTIME_SHIFT, up to 2.5 s and 40 ppm);
# the last rank straggles. cudaspy-analyze given the N runs must put them on
# one clock: every host's offset within TOL_US (default 50) of the truth
# (0: one machine) at both ends of the run, its real-time clock's planted
# error recovered within TOL_US, the straggler's host named, and one
# Perfetto trace holding every host that check_trace accepts.
# Usage: hosts.sh N CUDASPY ANALYZE CLIENT CHECK_TRACE WORKDIR [TOL_US]
set -u
n=$1 cudaspy=$2 analyze=$3 client=$4 check=$5 dir=$6 tol=${7:-50}
rm -rf "$dir" && mkdir -p "$dir" && cd "$dir" || exit 1
fail() { echo "FAIL hosts_$n: $*" >&2; exit 1; }
shifts="0 1700000000:40 -400000000:-25 2500000000:15"
for a in $(seq 0 $((n - 1))); do
    for b in $(seq 0 $((n - 1))); do
        [ "$a" = "$b" ] || mkfifo "p${a}_$b" || fail "mkfifo"
    done
done
export FAKECUDA_LAT_NS="cuStreamSynchronize=1000000" FAKECUDA_LAT_MODE=sleep
r=0 pids=
for s in $shifts; do
    [ $r -lt "$n" ] || break
    CUDASPY_HOST=host$r CUDASPY_TEST_REALTIME_SHIFT=$s "$cudaspy" record -q -o "h$r.lmdb" -- \
        "$client" host $r "$n" "$dir" $((n - 1)) 300 >"h$r.out" 2>"h$r.err" &
    pids="$pids $!" r=$((r + 1))
done
for p in $pids; do wait "$p" || { cat h*.err >&2; fail "a recording exited $?"; }; done
runs=$(for r in $(seq 0 $((n - 1))); do printf 'h%s.lmdb ' $r; done)
for r in $(seq 0 $((n - 1))); do
    [ -s "h$r.lmdb" ] || { cat "h$r.err" >&2; fail "host$r recorded nothing"; }
done
# shellcheck disable=SC2086
"$analyze" --json $runs >r.json 2>r.err || { cat r.err >&2; fail "analyze exited $?"; }
python3 - r.json "$n" "$shifts" "$tol" <<'PY' || { "$analyze" $runs | sed -n '/^HOSTS/,$p' >&2; fail "alignment"; }
import json, sys
rep, n, shifts = json.load(open(sys.argv[1])), int(sys.argv[2]), sys.argv[3].split()
tol = int(sys.argv[4]) * 1000
hosts = rep["hosts"]
assert [h["host"] for h in hosts] == ["host%d" % i for i in range(n)], hosts
span = max(f["duration_ns"] for f in rep["run"]["files"])
for i, h in enumerate(hosts[1:], 1):
    planted = int(shifts[i].split(":")[0])
    end = h["offset_ns"] + h["drift_ppm"] * 1e-6 * span
    print("host%d: offset %+.1f us (%+.1f us at the end), +-%.1f us, clock off by %+.6f s (planted %+.6f s), %d points, lag %d"
          % (i, h["offset_ns"] / 1e3, end / 1e3, h["uncertainty_ns"] / 1e3,
             h["clock_error_ns"] / 1e9, planted / 1e9, h["sync_points"], h["lag"]))
    assert h["method"] == "collectives", h
    assert abs(h["offset_ns"]) <= tol and abs(end) <= tol, h
    assert abs(h["clock_error_ns"] - planted) <= tol, h
st = [c for c in rep["chains"] if c.get("cause") == "rank_straggler"]
assert st and st[0].get("host") == "host%d" % (n - 1), [(c.get("cause"), c.get("host")) for c in rep["chains"]]
print("straggler: rank %d on %s" % (st[0]["rank"], st[0]["host"]))
PY
# shellcheck disable=SC2086
"$analyze" $runs >r.txt 2>&1 || fail "text report exited $?"
grep -q "^ *$((n - 1)) host$((n - 1)):[0-9]" r.txt || { sed -n '/^RANKS/,/^$/p' r.txt >&2; fail "RANKS does not name the hosts"; }
# shellcheck disable=SC2086
"$analyze" export --chrome all.json $runs 2>x.err || { cat x.err >&2; fail "export exited $?"; }
"$check" all.json >/dev/null || fail "check_trace rejects the trace of all hosts"
for r in $(seq 0 $((n - 1))); do
    grep -q "\"host$r: client_ranks" all.json || fail "no process of host$r in the trace"
done
echo "ok   hosts_$n"
