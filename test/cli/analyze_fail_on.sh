# --fail-on: exit 1 when a finding is at or above the severity, else 0.
. "$(dirname "$0")/analyze_common.sh"
gen cpu_contention_tree hot.lmdb --steps 200
gen clean cool.lmdb --steps 200
run "$A" --fail-on high hot.lmdb
want_rc 1
want_err ""
run "$A" --fail-on high cool.lmdb
want_rc 0
run "$A" --fail-on low cool.lmdb
want_rc 1
finish
