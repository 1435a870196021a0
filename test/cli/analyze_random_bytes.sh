# A file of arbitrary bytes is not a run file: exit 2, no crash.
. "$(dirname "$0")/analyze_common.sh"
awk 'BEGIN { for (i = 0; i < 20000; i++) printf "%c", 33 + (i * 7919) % 90 }' >junk.lmdb
run "$A" junk.lmdb
want_rc 2
want_err "cudaspy-analyze: junk.lmdb: not a cudaspy run file (no LMDB header)"
finish
