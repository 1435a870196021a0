#!/bin/sh
# readme_length.sh SOURCE_DIR: README.md is for users and stays at most 200
# lines (issue 26); lab notes go to docs/performance.md.
set -u
n=$(wc -l <"$1/README.md") || exit 2
[ "$n" -le 200 ] || { echo "README.md: $n lines, over 200: move details to docs/"; exit 1; }
echo "README.md: $n lines"
