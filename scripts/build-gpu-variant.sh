#!/usr/bin/env bash
# build-gpu-variant.sh: libcudaspy.so of another commit, built the way
# scripts/build-gpu.sh builds it, as shim-variants/libcudaspy-NAME.so: what
# `gpu-check.sh ddpdutyvar` takes in SHIM_VARIANTS to measure two shims in
# turn inside one GPU call (carry shim-variants with the build).
# Usage: scripts/build-gpu-variant.sh REV [NAME=REV]
#   e.g. scripts/build-gpu-variant.sh 6a7a77d old
#        (device) SHIM_VARIANTS=shim-variants/libcudaspy-old.so gpu-check.sh ddpdutyvar
set -euo pipefail
[ $# -ge 1 ] && [ $# -le 2 ] || { echo "usage: $0 REV [NAME]" >&2; exit 2; }
rev=$1 name=${2:-$1}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
wt=$(mktemp -d /tmp/cudaspy-variant.XXXXXX)
rmdir "$wt"
git -C "$root" worktree add -q --detach "$wt" "$rev"
trap 'git -C "$root" worktree remove --force "$wt"' EXIT
(cd "$wt" && bash scripts/build-gpu.sh build-gpu >/dev/null)
mkdir -p "$root/shim-variants"
cp "$wt/build-gpu/libcudaspy.so" "$root/shim-variants/libcudaspy-$name.so"
echo "shim-variants/libcudaspy-$name.so: libcudaspy.so of $(git -C "$root" rev-parse --short "$rev")"
