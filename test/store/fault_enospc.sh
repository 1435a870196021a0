#!/usr/bin/env bash
# fault_enospc.sh: the run file's file system fills up mid-run. The sampler
# says so once (with a hint), keeps the command running to its end, exits
# with its status, and leaves a file that opens with the blocks committed
# before the failure. Needs root for a 3 MiB tmpfs; skips otherwise.
# Usage: fault_enospc.sh SAMPLER PRODUCER OPEN_RUN
set -euo pipefail
sampler=$1 producer=$2 openrun=$3
dir=$(mktemp -d /tmp/cs_enospc.XXXXXX)
cleanup() { umount "$dir" 2>/dev/null || true; rm -rf "$dir"; }
trap cleanup EXIT
if ! mount -t tmpfs -o size=3m tmpfs "$dir" 2>/dev/null; then
    echo "skip: cannot mount a tmpfs (needs root)"
    exit 0
fi
fail() { echo "FAIL: $*" >&2; exit 1; }

set +e
# Paced (2 x 200 records/ms, ~0.3 MB of compact blocks per 100 ms commit)
# so some commits land before the 3 MiB fill up: flat out, the first commit
# alone outgrew the tmpfs on a quiet machine and nothing was committed.
# 2 M records (about 8 B each on disk) are more than 3 MiB hold.
CUDASPY_RING_KB=8192 "$sampler" --no-host -o "$dir/run.lmdb" -- \
    "$producer" -p 1 -t 2 -n 1000000 -r 200 >/dev/null 2>"$dir.err"
rc=$?
set -e
err=$(cat "$dir.err"); rm -f "$dir.err"
[ "$rc" -eq 0 ] || fail "exit $rc, want the command's 0 ($err)"
[[ "$err" == *"cudaspy-sampler: $dir/run.lmdb: cannot commit ("*"); recording stopped"* ]] ||
    fail "no commit failure line in: $err"
[[ "$err" == *"hint: the file system holding $dir/run.lmdb is full"* ]] || fail "no hint in: $err"
[[ "$err" == *"(run file incomplete: a write failed)"* ]] || fail "summary: $err"
out=$("$openrun" "$dir/run.lmdb") || fail "run file does not open: $out"
n=${out#count=}; n=${n%% *}
[ "$n" -gt 0 ] && [ "$n" -lt 2000000 ] || fail "records $n, want some but not all"
[[ "$out" == *"clean=0"* ]] || fail "clean_shutdown: $out"
echo "ok   fault_enospc ($n of 2000000 records before the disk filled)"
