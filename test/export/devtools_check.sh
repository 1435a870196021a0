#!/bin/sh
# devtools_check.sh: cli.export_devtools. Exports a run and loads it with
# Chrome DevTools' trace engine (npm @paulirish/trace_engine, pinned below),
# installed once into CACHE. Skips (exit 77) without node/npm or registry access.
# Usage: devtools_check.sh ANALYZE GEN_RUN WORKDIR CACHE
set -u
analyze=$1 gen=$2 dir=$3 cache=$4
pkg=@paulirish/trace_engine@0.0.65
command -v node >/dev/null && command -v npm >/dev/null || { echo "skip: no node/npm"; exit 77; }
if [ ! -f "$cache/node_modules/@paulirish/trace_engine/package.json" ]; then
    mkdir -p "$cache" && timeout 300 npm install --prefix "$cache" --no-audit --no-fund \
        --no-save "$pkg" >"$cache/npm.log" 2>&1 || { cat "$cache/npm.log"; echo "skip: cannot install $pkg"; exit 77; }
fi
rm -rf "$dir" && mkdir -p "$dir" && cd "$dir" || exit 1
"$gen" run.lmdb --calls 500 || exit 1
"$analyze" export --chrome t.json run.lmdb || exit 1
cp "$(dirname "$0")/devtools_check.mjs" "$cache/devtools_check.mjs"
node "$cache/devtools_check.mjs" "$dir/t.json"
