#!/bin/bash
# shim_collector_dies.sh BUILD: when the collector is killed mid-run, the
# program finishes as it would untraced (same stdout, same exit status) and
# the shim prints at most one line about it.
. "$(dirname "$0")/shim_common.sh"
export FAKECUDA_LAT_NS='cuStreamSynchronize=1000000'
C="$B/fake/client_rt_shared"
run_plain "$T/plain.out" "$T/plain.exp" "$C" 400
CUDASPY_OUTPUT="$T/run.lmdb" LD_PRELOAD="$B/libcudaspy.so" "$C" 400 >"$T/out" 2>"$T/err" &
cpid=$!
sampler=""
for _ in $(seq 50); do
    sampler=$(ps -eo pid=,args= | awk -v p="--pid $cpid " '$2 ~ /cudaspy-sampler$/ && index($0, p) {print $1}')
    [ -n "$sampler" ] && break
    sleep 0.05
done
[ -n "$sampler" ] || fail "no sampler found for pid $cpid"
sleep 0.5
kill -KILL "$sampler"
wait "$cpid" || fail "client exited $? after the collector died"
same_stdout "$T/plain.out" "$T/out"
n=$(grep -c '^cudaspy\[' "$T/err" || true)
[ "$n" -le 1 ] || { cat "$T/err" >&2; fail "want at most one shim line, got $n"; }
