#!/bin/bash
# shim_duty_tree.sh BUILD: `record --duty` pauses the perf events in its off
# phases, and with them the fork and exit records that keep the process
# tree: a process born in an off phase that never calls CUDA (so no shim
# registers it) must still be traced once recording resumes, and one that
# died in an off phase must not stay alive in the run.
. "$(dirname "$0")/shim_common.sh"
awk=$(command -v awk) || fail "no awk"
cp "$awk" "$T/offkid" # a comm of its own
# sleep: born in the first on phase, dies at 0.3 s in the first off phase;
# offkid: born at 0.3 s in that off phase, burns CPU into the next on phases
"$B/cudaspy" record -q --duty 200 -o "$T/run.lmdb" -- \
    sh -c "sleep 0.3; \"$T/offkid\" 'BEGIN { while (i < 40000000) i++ }'" ||
    fail "record --duty exited $?"
"$B/cudaspy-analyze" --json "$T/run.lmdb" >"$T/run.json" || fail "cudaspy-analyze exited $?"
# one line per process: comm oncpu_ns exited
awk -F': ' '/"comm":/ { gsub(/[",]/, "", $2); c = $2 }
    /"oncpu_ns":/ { gsub(/,/, "", $2); on = $2 }
    /"exited":/ { gsub(/,/, "", $2); print c, on, $2 }' "$T/run.json" >"$T/procs.txt"
read -r _ kid_on _ < <(grep '^offkid ' "$T/procs.txt") ||
    fail "offkid (born in an off phase) is not in the run: $(cut -d' ' -f1 "$T/procs.txt" | xargs)"
[ "$kid_on" -gt 0 ] || fail "offkid has no on-CPU time"
grep -q '^sleep [0-9]* true$' "$T/procs.txt" ||
    fail "sleep (died in an off phase) is not marked exited: $(grep '^sleep' "$T/procs.txt")"
