# A run file from a newer format version is refused, exit 2.
. "$(dirname "$0")/analyze_common.sh"
gen empty run.lmdb --format-version 5
run "$A" run.lmdb
want_rc 2
want_err "cudaspy-analyze: run.lmdb: format version 5 is newer than this cudaspy reads (4)"
finish
