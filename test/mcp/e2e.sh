#!/bin/sh
# e2e.sh: end-to-end MCP test with the real SDK client. Installs
# @modelcontextprotocol/sdk (pinned) into CLIENT_DIR once, writes two
# synthetic runs with gen_run, then runs e2e.mjs against the server.
# With CUDASPY and FAKE_CLIENT the two runs are recorded instead: `cudaspy
# record` of the fake-driver client, syncs made 2 ms slow in one of them.
# Usage: e2e.sh CUDASPY_ANALYZE GEN_RUN CLIENT_DIR WORK_DIR [CUDASPY FAKE_CLIENT]
# Exit 77 (ctest skip) when node/npm are missing or the install fails.
set -u
bin=$1 gen=$2 client=$3 work=$4 cudaspy=${5:-} fake=${6:-}
sdk=1.32.2
here=$(cd "$(dirname "$0")" && pwd)

command -v node >/dev/null 2>&1 || { echo "e2e: node not found; skipped"; exit 77; }
if ! grep -qs "\"version\": \"$sdk\"" "$client/node_modules/@modelcontextprotocol/sdk/package.json"; then
    command -v npm >/dev/null 2>&1 || { echo "e2e: npm not found; skipped"; exit 77; }
    npm install --prefix "$client" "@modelcontextprotocol/sdk@$sdk" --no-audit --no-fund \
        --loglevel=error || { echo "e2e: npm install failed; skipped"; exit 77; }
fi
rm -rf "$work" && mkdir -p "$work" || exit 1
if [ -n "$cudaspy" ]; then
    for r in clean:200000 tree:2000000; do
        FAKECUDA_LAT_NS="cuStreamSynchronize=${r#*:}" FAKECUDA_LAT_MODE=sleep \
            "$cudaspy" record -q -o "$work/${r%%:*}.lmdb" -- "$fake" 200 16 \
            >"$work/${r%%:*}.log" 2>&1 || { cat "$work/${r%%:*}.log"; exit 1; }
    done
else
    "$gen" clean "$work/clean.lmdb" --steps 300 || exit 1
    "$gen" cpu_contention_tree "$work/tree.lmdb" --steps 300 || exit 1
fi
MCP_CLIENT_DIR=$client exec node "$here/e2e.mjs" "$bin" "$work/tree.lmdb" "$work/clean.lmdb"
