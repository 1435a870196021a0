# A run file cut short: the reader says where, exit 2.
. "$(dirname "$0")/analyze_common.sh"
gen empty run.lmdb
truncate -s 20000 run.lmdb
run "$A" run.lmdb
want_rc 2
want_err "cudaspy-analyze: run.lmdb: truncated file (expected 4096-byte page at offset 36864, file ends at 20000)"
finish
