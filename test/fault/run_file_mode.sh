#!/bin/bash
# run_file_mode.sh BUILD: run files (and their lock files) are created mode
# 0600 whatever the umask, by `cudaspy record` and by the auto-started
# collector under plain LD_PRELOAD.
. "$(dirname "$0")/fault_common.sh"
RC="$B/fake/client_rt_shared"
umask 000
"$B/cudaspy" record -o "$T/rec.lmdb" --no-host -- "$RC" >/dev/null || fail "record failed"
CUDASPY_OUTPUT="$T/pre.lmdb" CUDASPY_HOST=0 LD_PRELOAD="$B/libcudaspy.so" "$RC" >/dev/null ||
    fail "preloaded client failed"
for _ in $(seq 100); do [ -e "$T/pre.lmdb" ] && break; sleep 0.05; done
for f in rec.lmdb rec.lmdb-lock pre.lmdb pre.lmdb-lock; do
    [ "$(stat -c %a "$T/$f")" = 600 ] || fail "$f: mode $(stat -c %a "$T/$f"), want 600"
done
say "4 files (2 runs + locks) created 0600 under umask 000"
