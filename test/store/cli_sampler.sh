#!/usr/bin/env bash
# cli_sampler.sh: cudaspy-sampler's command line, word for word: --version,
# --help (with EXAMPLES and exit codes), usage errors exit 2 with one line
# plus "Try ... --help", an unwritable run file exits 3.
# Usage: cli_sampler.sh PATH/TO/cudaspy-sampler
set -euo pipefail
s=$1
fail() { echo "FAIL: $*" >&2; exit 1; }
expect() { # expect CODE STDERR_TEXT ARGS...
    local code=$1 want=$2 got err
    shift 2
    err=$("$s" "$@" 2>&1 >/dev/null) && got=0 || got=$?
    [ "$got" -eq "$code" ] || fail "$*: exit $got, want $code ($err)"
    [[ "$err" == *"$want"* ]] || fail "$*: stderr '$err' lacks '$want'"
}

[ "$("$s" --version)" = "cudaspy-sampler 0.1.0" ] || fail "--version"
help=$("$s" --help)
for w in "Usage: cudaspy-sampler" "Examples:" "Exit status:" "--no-host" "--ready-fd" "--page-source"; do
    [[ "$help" == *"$w"* ]] || fail "--help lacks $w"
done
expect 2 "cudaspy-sampler: unknown or incomplete option '--bogus'
Try 'cudaspy-sampler --help' for more information." --bogus
expect 2 "cudaspy-sampler: no command given (-- CMD ...) and no --pid" -o x.lmdb
expect 2 "cudaspy-sampler: give either --pid or a command, not both" --pid 1 -- true
expect 2 "cudaspy-sampler: invalid tier 'Z' (A, B or C)" --tier Z -- true
expect 2 "cudaspy-sampler: invalid page source 'pages' (allocs or faults)" --page-source pages -- true
expect 2 "cudaspy-sampler: invalid number 'x'" --window-ms x -- true
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
err=$(CUDASPY_PAGE_SOURCE=pages "$s" -q --no-host -o "$tmp/run.lmdb" -- true 2>&1) ||
    fail "CUDASPY_PAGE_SOURCE=pages: exit $?"
[[ "$err" == *"cudaspy-sampler: warning: CUDASPY_PAGE_SOURCE='pages' is not allocs or faults; faults"* ]] ||
    fail "CUDASPY_PAGE_SOURCE=pages: stderr '$err'"
expect 3 "cudaspy-sampler: /nonexistent/dir/run.lmdb: cannot create run file" \
    --no-host -o /nonexistent/dir/run.lmdb -- true
echo "ok   cli_sampler"
