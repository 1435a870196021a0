# A run file that does not exist: one line, exit 2.
. "$(dirname "$0")/analyze_common.sh"
run "$A" nope.lmdb
want_rc 2
want_err "cudaspy-analyze: nope.lmdb: No such file or directory"
want_out ""
finish
