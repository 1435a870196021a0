#!/bin/sh
# html_cli.sh: cli.html_* cases. Usage: html_cli.sh CASE ANALYZE GEN_RUN WORKDIR [SRCDIR]
# The page must render in headless Chromium without a JS error (the page sets
# document.title to "cudaspy report: ok" when done, "error: ..." in onerror)
# and the screenshot must not be blank. Skipped (exit 77) without chromium.
set -u
case_=$1 analyze=$2 gen=$3 dir=$4 src=${5:-}
rm -rf "$dir" && mkdir -p "$dir" && cd "$dir" || exit 1
fail() { echo "FAIL $case_: $*" >&2; exit 1; }
expect_rc() { # want cmd...
    want=$1; shift
    "$@" >out.txt 2>err.txt; rc=$?
    [ "$rc" -eq "$want" ] || { cat out.txt err.txt >&2; fail "$* exited $rc, want $want"; }
}
chromium_() {
    timeout 90 chromium --headless=new --disable-gpu --no-sandbox --no-first-run \
        --enable-logging=stderr --v=0 --user-data-dir="$dir/profile" --hide-scrollbars \
        "$@" 2>>chromium.log
}
case $case_ in
renders)
    command -v chromium >/dev/null || { echo "skip: no chromium"; exit 77; }
    "$gen" run.lmdb --calls 2000 || fail gen
    expect_rc 0 "$analyze" report --html r.html run.lmdb
    grep -q 'https\?://' r.html && grep -o 'https\?://[^" )]*' r.html | grep -v 'www.w3.org/2000/svg' &&
        fail "page references the network"
    chromium_ --dump-dom "file://$dir/r.html" > dom.html || fail "chromium --dump-dom failed"
    grep -q '<title>cudaspy report: ok</title>' dom.html ||
        { grep -o '<title>[^<]*</title>' dom.html >&2; fail "page did not finish rendering"; }
    if grep -q ':CONSOLE' chromium.log; then
        grep ':CONSOLE' chromium.log >&2; fail "the page wrote to the console"
    fi
    grep -q 'cudaStreamSynchronize' dom.html || fail "no histogram for the syncs"
    grep -q '>trainer</td>' dom.html || fail "no process row"
    chromium_ --window-size=1366,1400 --screenshot="$dir/r.png" "file://$dir/r.html" || fail screenshot
    size=$(wc -c < r.png)
    [ "$size" -gt 30000 ] || fail "screenshot looks blank ($size bytes)"
    ;;
account)  # the Account section: its sum row is the window; the findings show their share of it
    command -v chromium >/dev/null || { echo "skip: no chromium"; exit 77; }
    "$gen" gpu_tail run.lmdb || fail gen   # sampled GPU activity: intervals, if_fixed
    expect_rc 0 "$analyze" report --html r.html run.lmdb
    "$analyze" --json run.lmdb > run.json || fail "--json"
    window=$(sed -n '/^  "account": {/,/^  }/p' run.json | sed -n 's/^    "window_ns": \([0-9]*\),$/\1/p')
    [ -n "$window" ] || fail "no account.window_ns in --json"
    chromium_ --dump-dom "file://$dir/r.html" > dom.html || fail "chromium --dump-dom failed"
    grep -q '<title>cudaspy report: ok</title>' dom.html || fail "page did not finish rendering"
    grep -q "<tr class=\"sum\" data-sum-ns=\"$window\" data-window-ns=\"$window\">" dom.html ||
        { grep -o '<tr class="sum"[^>]*>' dom.html >&2; fail "sum row is not the window ($window ns)"; }
    sum=$(grep -o '<tr id="acct-[a-z_]*" data-ns="[0-9]*"' dom.html | sed 's/.*data-ns="//; s/"$//' |
        awk '{ s += $1 } END { printf "%.0f", s }')
    [ "$sum" = "$window" ] || fail "bucket rows sum to $sum ns, want the window $window ns"
    grep -q 'the buckets sum to the window' dom.html || fail "no check mark on the sum row"
    grep -q '<tr id="acct-gpu_compute" data-ns=' dom.html || fail "no GPU busy row"
    grep -q '<a href="#f-sync_per_iteration">sync_per_iteration</a>' dom.html ||
        fail "the owner is not linked to its finding"
    grep -q 'id="f-sync_per_iteration"' dom.html || fail "no card for the owner"
    grep -q '95 % interval of the impact' dom.html || fail "no impact interval on the card"
    grep -q 'class="iffix">if fixed: step mean ' dom.html || fail "no if_fixed line on the card"
    ;;
escaping)  # markup in names cannot break out of the data block
    "$gen" run.lmdb --calls 200 || fail gen
    ln -s run.lmdb 'a<!--<script>.lmdb'
    expect_rc 0 "$analyze" report --html r.html 'a<!--<script>.lmdb'
    [ "$(grep -o '<script' r.html | wc -l)" -eq 2 ] || fail "extra <script in the page"
    grep -q '<!--' r.html && fail "comment opener in the page"
    grep -q 'a\\u003c!--\\u003cscript>.lmdb' r.html || fail "name not escaped"
    ;;
bad_input)
    echo junk > junk.lmdb
    expect_rc 2 "$analyze" report --html r.html junk.lmdb
    grep -q '^cudaspy-analyze: junk.lmdb' err.txt || fail message
    expect_rc 2 "$analyze" report --html
    ;;
assets)  # analyzer/views/html_assets.h is generated from analyzer/views/html/report.html.in
    sh "$src/test/html/gen_assets.sh" "$src/analyzer/views/html/report.html.in" assets.h || fail gen
    cmp assets.h "$src/analyzer/views/html_assets.h" || fail "html_assets.h is stale: run test/html/gen_assets.sh"
    ;;
*) fail "unknown case" ;;
esac
echo "ok   $case_"
