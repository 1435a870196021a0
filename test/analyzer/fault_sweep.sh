#!/bin/sh
# fault_sweep.sh ANALYZE GEN WORKDIR [SEED]: a run file (GEN is gen_run, or
# gen_pyrun for one whose calls have stacks) cut every other page
# boundary (and mid-page), then copies with random bytes flipped. Every
# analysis must end in a report (exit 0) or one clean message (exit 2),
# never a crash. Prints its seed (CS_TEST_SEED). FAULT_SCENARIO names
# gen_run's scenario (default clean; gpu_setup_host_pys: Python samples
# of host code).
set -u
A=$1 GEN=$2 W=$3
seed=${CS_TEST_SEED:-${4:-$(date +%s)}}
echo "seed $seed (CS_TEST_SEED)"
rm -rf "$W" && mkdir -p "$W" && cd "$W" || exit 1
case ${GEN##*/} in
gen_pyrun) "$GEN" orig.lmdb --steps 50 || exit 1 ;; # calls with Python stacks (issue 23)
*) "$GEN" "${FAULT_SCENARIO:-clean}" orig.lmdb --steps 50 || exit 1 ;;
esac
size=$(wc -c <orig.lmdb)
fail=0

check() { # check WHAT: the last analysis ended cleanly
    rc=$(cat rc.txt)
    if [ "$rc" != 0 ] && [ "$rc" != 2 ]; then
        echo "FAIL $1: exit $rc"; cat err.txt; fail=1; return
    fi
    if [ "$rc" = 2 ] && { [ "$(wc -l <err.txt)" != 1 ] || ! grep -q '^cudaspy-analyze: ' err.txt; }; then
        echo "FAIL $1: message is not one line:"; cat err.txt; fail=1
    fi
}

cut=0
while [ "$cut" -lt "$size" ]; do
    for off in 0 100; do
        cp orig.lmdb t.lmdb && truncate -s $((cut + off)) t.lmdb
        "$A" --json t.lmdb >/dev/null 2>err.txt; echo $? >rc.txt
        check "cut at $((cut + off))"
    done
    cut=$((cut + 8192))
done

x=$seed
for round in $(seq 1 20); do
    cp orig.lmdb t.lmdb
    for k in 1 2 3 4 5 6 7 8; do
        x=$(( (x * 1103515245 + 12345) % 2147483648 ))
        pos=$(( x % size ))
        printf "\\$(printf '%03o' $(( (x >> 8) % 256 )))" |
            dd of=t.lmdb bs=1 seek=$pos conv=notrunc 2>/dev/null
    done
    "$A" --json t.lmdb >/dev/null 2>err.txt; echo $? >rc.txt
    check "flip round $round"
done
[ "$fail" = 0 ] && echo "ok   $size-byte run: cuts every 8192 bytes, 20 flip rounds"
exit $fail
