#!/bin/bash
# unwritable_dir.sh BUILD: the run file's directory is a read-only mount
# (root writes anywhere else). Under plain LD_PRELOAD the program runs as
# untraced (same stdout, status 0) and stderr says why, naming the file;
# `cudaspy record` refuses before starting the command: one line naming the
# file and the reason, exit 3 (the user asked for a recording and would not
# get one). Skipped (77) when tmpfs cannot be mounted.
. "$(dirname "$0")/fault_common.sh"
RC="$B/fake/client_rt_shared"
mkdir "$T/ro"
mount -t tmpfs -o ro tmpfs "$T/ro" 2>/dev/null || { say "skipped: cannot mount tmpfs"; exit 77; }
trap 'rc=$?; umount "$T/ro"; [ $rc -eq 0 ] && rm -rf "$T"; exit $rc' EXIT
want="cudaspy-sampler: $T/ro/run.lmdb: cannot create run file (Read-only file system)"
"$RC" >"$T/plain.out" || fail "untraced client failed"
CUDASPY_OUTPUT="$T/ro/run.lmdb" CUDASPY_HOST=0 LD_PRELOAD="$B/libcudaspy.so" "$RC" \
    >"$T/out" 2>"$T/err" || fail "preloaded client exited $?"
cmp -s "$T/plain.out" "$T/out" || fail "preload: stdout differs from the untraced run"
grep -qxF "$want" "$T/err" || { cat "$T/err" >&2; fail "preload: no line naming the file"; }
grep -q '^cudaspy\[[0-9]*\]: recording stopped: ' "$T/err" || fail "preload: no 'recording stopped'"
say "preload: program ran as untraced; stderr: $(grep -v '^kernel name' "$T/err" | tr '\n' '|')"
"$B/cudaspy" record -o "$T/ro/run.lmdb" --no-host -- "$RC" >"$T/out2" 2>"$T/err2"
st=$?
[ $st -eq 3 ] || fail "record: exit $st, want 3"
[ "$(cat "$T/err2")" = "$want" ] || { cat "$T/err2" >&2; fail "record: want exactly: $want"; }
[ ! -s "$T/out2" ] || fail "record: the command ran although nothing could be recorded"
say "record: refused with exit 3: $(cat "$T/err2")"
