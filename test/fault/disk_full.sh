#!/bin/bash
# disk_full.sh BUILD: the run file lives on a 2 MiB tmpfs that fills up
# while a program makes 600,000 CUDA calls (about 5 MB of records):
# recording stops with one stderr line from the sampler (and its hint:
# line), the program's stdout and exit status are those of an untraced
# run, and what was committed before still opens. Needs root (mount);
# skipped (77) otherwise.
. "$(dirname "$0")/fault_common.sh"
mkdir "$T/mnt"
mount -t tmpfs -o size=2m tmpfs "$T/mnt" 2>/dev/null || { say "skipped: cannot mount tmpfs"; exit 77; }
trap 'rc=$?; umount "$T/mnt"; [ $rc -eq 0 ] && rm -rf "$T"; exit $rc' EXIT
# 600,000 calls: compact CUDA blocks (format 2) take about 8 bytes a call,
# so 60,000 no longer filled 2 MiB
ITERS=300000
export FAKECUDA_LAT_NS=cuStreamSynchronize=5000 # the collector keeps up: no ring drops
"$C" loop "$T/count.plain" $ITERS >"$T/plain.out" || fail "untraced run failed"
"$B/cudaspy" record -o "$T/mnt/run.lmdb" --no-host -- "$C" loop "$T/count" $ITERS \
    >"$T/out" 2>"$T/err"
st=$?
[ $st -eq 0 ] || { cat "$T/err" >&2; fail "traced program exited $st"; }
cmp -s "$T/plain.out" "$T/out" || fail "stdout differs from the untraced run"
grep -v '^kernel name' "$T/err" | grep -v '^hint: ' >"$T/err2" || true
[ "$(wc -l <"$T/err2")" -eq 1 ] || { cat "$T/err" >&2; fail "want exactly one stderr line (and a hint)"; }
say "stderr: $(cat "$T/err2") / $(grep '^hint: ' "$T/err")"
grep -q 'recording stopped' "$T/err2" || fail "the line does not say recording stopped"
line=$("$B/fault_check" "$T/mnt/run.lmdb" "$T/count" 1e12) || fail "committed part does not open: $line"
say "$line"
