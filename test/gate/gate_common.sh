# gate_common.sh: what the cli.gate_* scripts share (gate_cli.sh,
# gate_real.sh, gate_steps.sh). Sourced after $case_ is set.
fail() { echo "FAIL $case_: $*" >&2; exit 1; }
# expect_rc WANT CMD...: run CMD (stdout to out.txt, stderr to err.txt), exit WANT
expect_rc() {
    want=$1; shift
    "$@" >out.txt 2>err.txt; rc=$?
    [ "$rc" -eq "$want" ] || { cat out.txt err.txt >&2; fail "$* exited $rc, want $want"; }
}
