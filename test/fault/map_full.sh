#!/bin/bash
# map_full.sh BUILD: a run-file map that may not grow past 2 MiB
# (CUDASPY_MAX_MAP_MB=2, with --map-mb 1 to start small) while a program
# makes 600,000 CUDA calls: recording stops with one stderr line, the
# program's stdout and exit status are those of an untraced run, and what
# was committed before still opens.
. "$(dirname "$0")/fault_common.sh"
# 600,000 calls: compact CUDA blocks (format 2) take about 8 bytes a call,
# so 60,000 no longer filled 2 MiB
ITERS=300000
export FAKECUDA_LAT_NS=cuStreamSynchronize=5000 # the collector keeps up: no ring drops
"$C" loop "$T/count.plain" $ITERS >"$T/plain.out" || fail "untraced run failed"
CUDASPY_MAX_MAP_MB=2 "$B/cudaspy-sampler" --map-mb 1 -o "$T/run.lmdb" --no-host \
    --preload "$B/libcudaspy.so" -- "$C" loop "$T/count" $ITERS >"$T/out" 2>"$T/err"
st=$?
[ $st -eq 0 ] || { cat "$T/err" >&2; fail "traced program exited $st"; }
cmp -s "$T/plain.out" "$T/out" || fail "stdout differs from the untraced run"
grep -v '^kernel name' "$T/err" >"$T/err2" || true
[ "$(wc -l <"$T/err2")" -eq 1 ] || { cat "$T/err2" >&2; fail "want exactly one stderr line"; }
say "stderr: $(cat "$T/err2")"
grep -q 'recording stopped' "$T/err2" || fail "the line does not say recording stopped"
line=$("$B/fault_check" "$T/run.lmdb" "$T/count" 1e12) || fail "committed part does not open: $line"
say "$line"
