#!/usr/bin/env bash
# flight_cli.sh: bad values of record --max-size and CUDASPY_MAX_SIZE give
# one clear line and exit 2, from the launcher (no sampler starts) and from
# cudaspy-sampler, word for word; good ones run.
# Usage: flight_cli.sh PATH/TO/cudaspy PATH/TO/cudaspy-sampler
set -euo pipefail
cudaspy=$1 s=$2
fail() { echo "FAIL: $*" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
expect() { # expect PROG_OUTPUT_WANT ARGS... (exit 2, stderr exactly WANT)
    local want=$1 got err
    shift
    err=$("$@" 2>&1 >/dev/null) && got=0 || got=$?
    [ "$got" -eq 2 ] || fail "$*: exit $got, want 2 ($err)"
    [ "$err" = "$want" ] || fail "$*: stderr '$err', want '$want'"
}
range="from 1M to 8E bytes" syntax="digits and K, M, G or T: 200M, 2G"
for bad in 0 512K 99999999999999999999 9000000000T; do
    expect "cudaspy: --max-size: invalid size '$bad' ($range)
Try 'cudaspy record --help'" "$cudaspy" record --max-size "$bad" -- true
    expect "cudaspy-sampler: --max-size: invalid size '$bad' ($range)
Try 'cudaspy-sampler --help' for more information." "$s" --max-size "$bad" -- true
done
for bad in abc 12X 1.5G -3 ""; do
    expect "cudaspy: --max-size: invalid size '$bad' ($syntax)
Try 'cudaspy record --help'" "$cudaspy" record --max-size="$bad" -- true
    expect "cudaspy-sampler: --max-size: invalid size '$bad' ($syntax)
Try 'cudaspy-sampler --help' for more information." "$s" --max-size="$bad" -- true
done
expect "cudaspy: option --max-size needs a size (200M, 2G)
Try 'cudaspy record --help'" "$cudaspy" record --max-size -- true
expect "cudaspy-sampler: CUDASPY_MAX_SIZE: invalid size 'lots' ($syntax)
Try 'cudaspy-sampler --help' for more information." env CUDASPY_MAX_SIZE=lots "$s" -- true
# good sizes: the run is capped, the meta says so
for good in 2M 1G 3MiB 4096K; do
    "$s" -q --no-host --max-size "$good" -o "$tmp/r.lmdb" -- true || fail "--max-size $good"
done
CUDASPY_MAX_SIZE=5M "$s" -q --no-host -o "$tmp/e.lmdb" -- true || fail "CUDASPY_MAX_SIZE=5M"
[[ "$("$cudaspy" record --help)" == *"--max-size SIZE"* ]] || fail "record --help lacks --max-size"
[[ "$("$s" --help)" == *"--max-size SIZE"* ]] || fail "sampler --help lacks --max-size"
echo "ok   flight_cli"
