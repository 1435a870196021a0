#!/bin/sh
# e2e.sh: end-to-end MCP test with the real SDK client. Installs
# @modelcontextprotocol/sdk (pinned) into CLIENT_DIR once, writes two
# synthetic runs with gen_run, then runs e2e.mjs against the server.
# Usage: e2e.sh CUDASPY_ANALYZE GEN_RUN CLIENT_DIR WORK_DIR
# Exit 77 (ctest skip) when node/npm are missing or the install fails.
set -u
bin=$1 gen=$2 client=$3 work=$4
sdk=1.32.2
here=$(cd "$(dirname "$0")" && pwd)

command -v node >/dev/null 2>&1 || { echo "e2e: node not found; skipped"; exit 77; }
if ! grep -qs "\"version\": \"$sdk\"" "$client/node_modules/@modelcontextprotocol/sdk/package.json"; then
    command -v npm >/dev/null 2>&1 || { echo "e2e: npm not found; skipped"; exit 77; }
    npm install --prefix "$client" "@modelcontextprotocol/sdk@$sdk" --no-audit --no-fund \
        --loglevel=error || { echo "e2e: npm install failed; skipped"; exit 77; }
fi
mkdir -p "$work" || exit 1
"$gen" clean "$work/clean.lmdb" --steps 300 || exit 1
"$gen" cpu_contention_tree "$work/tree.lmdb" --steps 300 || exit 1
MCP_CLIENT_DIR=$client exec node "$here/e2e.mjs" "$bin" "$work/tree.lmdb" "$work/clean.lmdb"
