# analyze_common.sh: sourced by test/cli/analyze_*.sh. Arguments of every
# case: ANALYZE GEN_RUN WORKDIR. Runs in a fresh WORKDIR (so paths in
# messages are relative and stable) and compares stdout, stderr and the exit
# code with what the case expects, word for word.
set -u
A=$1
GEN=$2
W=$3
CLI_DIR=$(cd "$(dirname "$0")" && pwd) # test/cli, before the cd below
rm -rf "$W" && mkdir -p "$W" && cd "$W" || exit 1
fail=0

# run CMD...: run it, keeping stdout, stderr and the exit code
run() {
    "$@" >out.txt 2>err.txt
    echo $? >rc.txt
}

# want_rc N
want_rc() {
    got=$(cat rc.txt)
    [ "$got" = "$1" ] || { echo "exit code: got $got, want $1"; fail=1; }
}

# want_err TEXT: stderr is exactly TEXT plus a newline ("" = empty)
want_err() {
    if [ -z "$1" ]; then : >want.txt; else printf '%s\n' "$1" >want.txt; fi
    cmp -s want.txt err.txt || { echo "stderr differs (want, got):"; diff want.txt err.txt; fail=1; }
}

# want_out TEXT [N]: stdout (its first N lines if N given) is exactly TEXT
want_out() {
    if [ -z "$1" ]; then : >want.txt; else printf '%s\n' "$1" >want.txt; fi
    if [ $# -gt 1 ]; then head -n "$2" out.txt >got.txt; else cp out.txt got.txt; fi
    cmp -s want.txt got.txt || { echo "stdout differs (want, got):"; diff want.txt got.txt; fail=1; }
}

# gen SCENARIO FILE [ARGS]: write a synthetic run
gen() {
    s=$1 f=$2
    shift 2
    "$GEN" "$s" "$f" "$@" || { echo "gen_run $s failed"; exit 1; }
}

# corpus NAME LOCAL: copy the fuzz corpus's run file NAME to LOCAL
corpus() {
    cp "$CLI_DIR/../fuzz/corpus/runfile/$1" "$2" || exit 1
}

# want_rejected FILE TEXT: the analyzer refuses FILE at once (a 20 s
# timeout stands in for a hang): exit 2, no stdout, stderr exactly TEXT
want_rejected() {
    run timeout 20 "$A" "$1"
    want_rc 2
    want_out ""
    want_err "$2"
}

finish() {
    [ "$fail" = 0 ] || exit 1
    echo ok
}
