# The analysis the MCP server keeps beside a run (analyzer/mcp/mcp_keep.c):
# reused by the next start, passed over when stale, corrupt or truncated,
# and kept in the cache folder when the run's folder is read-only; every
# start answers exactly as one that analyses afresh.
# Arguments: ANALYZE GEN_RUN WORKDIR.
. "$(dirname "$0")/analyze_common.sh"
gen clean run.lmdb --steps 50
export CUDASPY_CACHE_DIR="$PWD/cache"
printf '%s\n' \
    '{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}' \
    '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_causal_chains","arguments":{}}}' \
    '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"get_steps","arguments":{}}}' \
    '{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"get_hotspots","arguments":{}}}' \
    >req.txt
INIT='cudaspy-analyze: mcp: initialize: client asked 2025-11-25, answering 2025-11-25'

# serve [DIR]: one server on DIR/run.lmdb (default .), stdin req.txt;
# stderr without timings
serve() {
    "$A" mcp "${1:-.}/run.lmdb" <req.txt >out.txt 2>err_raw.txt
    echo $? >rc.txt
    sed -e 's/ in [0-9.]* s$//' -e 's/run-[0-9a-f]*-analysis/run-HASH-analysis/' err_raw.txt >err.txt
}

# case NAME: what the server answered is what an analysis afresh answers
same_answers() {
    want_rc 0
    cmp -s fresh.txt out.txt || { echo "$1: the answers differ"; diff fresh.txt out.txt | head; fail=1; }
}

CUDASPY_KEEP=off serve
want_err "cudaspy-analyze: mcp: run 0 run.lmdb: analysed
$INIT"
cp out.txt fresh.txt
[ ! -e run.lmdb-analysis ] || { echo "CUDASPY_KEEP=off kept a file"; fail=1; }

# mcp_keep-1: the first start keeps it, the second reads it
serve
same_answers keep-1.1
want_err "cudaspy-analyze: mcp: run 0 run.lmdb: analysed
cudaspy-analyze: mcp: run 0 run.lmdb: analysis kept in ./run.lmdb-analysis
$INIT"
serve
same_answers keep-1.2
want_err "cudaspy-analyze: mcp: run 0 run.lmdb: analysis read from ./run.lmdb-analysis
$INIT
cudaspy-analyze: mcp: run 0 run.lmdb: analysed"

# mcp_keep-2: a run that changed since (its mtime) is analysed again
cp run.lmdb-analysis good.keep
touch -d '2001-01-01' run.lmdb
serve
same_answers keep-2.1
want_err "cudaspy-analyze: mcp: ./run.lmdb-analysis: stale kept analysis (the run changed since): not used
cudaspy-analyze: mcp: run 0 run.lmdb: analysed
cudaspy-analyze: mcp: run 0 run.lmdb: analysis kept in ./run.lmdb-analysis
$INIT"
serve
same_answers keep-2.2

# mcp_keep-3: corrupt and truncated ones are rejected, then replaced
cp run.lmdb-analysis good.keep
size=$(wc -c <good.keep)
for c in payload header truncated magic; do
    cp good.keep run.lmdb-analysis
    case $c in
    payload) printf 'X' | dd of=run.lmdb-analysis bs=1 seek=$((size - 2)) conv=notrunc 2>/dev/null
             why="payload checksum mismatch" ;;
    header) printf 'X' | dd of=run.lmdb-analysis bs=1 seek=40 conv=notrunc 2>/dev/null
            why="header checksum mismatch" ;;
    truncated) head -c $((size - 100)) good.keep >run.lmdb-analysis
               why="truncated or padded (size mismatch)" ;;
    magic) printf 'not a kept analysis' >run.lmdb-analysis
           why="shorter than its header" ;;
    esac
    serve
    same_answers "keep-3.$c"
    want_err "cudaspy-analyze: mcp: ./run.lmdb-analysis: corrupt kept analysis ($why): not used
cudaspy-analyze: mcp: run 0 run.lmdb: analysed
cudaspy-analyze: mcp: run 0 run.lmdb: analysis kept in ./run.lmdb-analysis
$INIT"
    cmp -s good.keep run.lmdb-analysis || { echo "keep-3.$c: not rewritten whole"; fail=1; }
done

# mcp_keep-3.5: one that another user could have written is not trusted
chmod go+w run.lmdb-analysis
serve
same_answers keep-3.5
want_err "cudaspy-analyze: mcp: ./run.lmdb-analysis: corrupt kept analysis (another user could have written it): not used
cudaspy-analyze: mcp: run 0 run.lmdb: analysed
cudaspy-analyze: mcp: run 0 run.lmdb: analysis kept in ./run.lmdb-analysis
$INIT"

# mcp_keep-4: a read-only run folder: kept in the cache folder, then read
# from there. Root writes anywhere, so it gets a read-only bind mount.
mkdir ro && cp run.lmdb ro/ && touch -d '2002-02-02' ro/run.lmdb
if [ "$(id -u)" != 0 ]; then
    chmod a-w ro
    serve_ro() { serve ro; }
elif unshare -m sh -c 'mount --bind -o ro ro ro' 2>/dev/null; then
    serve_ro() {
        unshare -m sh -c 'mount --bind -o ro ro ro && exec "$0" mcp ro/run.lmdb' "$A" \
            <req.txt >out.txt 2>err_raw.txt
        echo $? >rc.txt
        sed -e 's/ in [0-9.]* s$//' -e 's/run-[0-9a-f]*-analysis/run-HASH-analysis/' \
            err_raw.txt >err.txt
    }
else
    echo "skipped keep-4: no read-only folder to be had (root without unshare)"
    finish
    exit 77
fi
serve_ro
same_answers keep-4.1
want_err "cudaspy-analyze: mcp: run 0 run.lmdb: analysed
cudaspy-analyze: mcp: run 0 run.lmdb: analysis kept in $PWD/cache/run-HASH-analysis
$INIT"
serve_ro
same_answers keep-4.2
want_err "cudaspy-analyze: mcp: run 0 run.lmdb: analysis read from $PWD/cache/run-HASH-analysis
$INIT
cudaspy-analyze: mcp: run 0 run.lmdb: analysed"
[ ! -e ro/run.lmdb-analysis ] || { echo "keep-4: wrote into the read-only folder"; fail=1; }
chmod u+w ro 2>/dev/null
finish
