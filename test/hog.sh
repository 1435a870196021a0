#!/bin/sh
# hog.sh: run a command beside a CPU hog, one busy loop per CPU at normal
# priority, and exit with the command's status (`make test-hog`, issue 36).
# The hogs run in their own session, outside any traced tree.
# Usage: hog.sh COMMAND [ARG...]
set -u
ncpu=$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 2)
hogs=""
i=0
while [ $i -lt "$ncpu" ]; do
    setsid sh -c 'while :; do :; done' &
    hogs="$hogs $!"
    i=$((i + 1))
done
trap 'kill $hogs 2>/dev/null' EXIT INT TERM
echo "hog.sh: $ncpu busy loops beside: $*" >&2
"$@"
