# Pages overwritten with 0xff: a clean message and exit 2, never a crash.
# Which check catches it (the reader's bounds checks, or the analyzer's
# fault handler when LMDB follows a bad page) decides the part in
# parentheses, so only that part is left open.
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
want_out ""
[ "$(wc -l <err.txt)" = 1 ] || { echo "stderr is not one line:"; cat err.txt; fail=1; }
case $(cat err.txt) in
"cudaspy-analyze: run.lmdb: "*"corrupt run file ("*")") ;;
*) echo "stderr: got '$(cat err.txt)', want 'cudaspy-analyze: run.lmdb: ...corrupt run file (...)'"; fail=1 ;;
esac
finish
