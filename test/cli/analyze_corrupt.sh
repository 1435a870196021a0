# Pages overwritten with 0xff: a clean message and exit 2, never a crash.
. "$(dirname "$0")/analyze_common.sh"
gen clean run.lmdb --steps 50
size=$(wc -c <run.lmdb)
off=8192
while [ "$off" -lt "$size" ]; do
    printf '\377\377\377\377\377\377\377\377\377\377\377\377\377\377\377\377' |
        dd of=run.lmdb bs=1 seek=$((off + 16)) conv=notrunc 2>/dev/null
    off=$((off + 28672))
done
run "$A" run.lmdb
want_rc 2
want_err "cudaspy-analyze: run.lmdb: corrupt run file (bus error reading a page)"
finish
