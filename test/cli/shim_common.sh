# shim_common.sh: helpers sourced by the cli.shim_* scripts. $1 of every
# script is the build directory. Each test works in its own temporary
# directory, removed on success.
B=${1:?usage: $0 BUILD_DIR ...}
shift
T=$(mktemp -d /tmp/cs-shim-test.XXXXXX)
trap 'rc=$?; [ $rc -eq 0 ] && rm -rf "$T"; exit $rc' EXIT
export CUDASPY_QUIET=1
unset CUDASPY_SOCK CUDASPY_DISABLE LD_PRELOAD

fail() { echo "$(basename "$0"): $*" >&2; exit 1; }

# run_plain OUT EXPECT CMD...: the client without the shim.
run_plain() {
    local out=$1 exp=$2; shift 2
    FAKECUDA_EXPECT=$exp "$@" >"$out" || fail "untraced $1 exited $?"
}

# run_traced MODE RUN OUT EXPECT CMD...: MODE record (cudaspy record) or
# preload (plain LD_PRELOAD, collector auto-started).
run_traced() {
    local mode=$1 run=$2 out=$3 exp=$4; shift 4
    if [ "$mode" = record ]; then
        FAKECUDA_EXPECT=$exp "$B/cudaspy" record -o "$run" --no-host -- "$@" >"$out" ||
            fail "traced $1 exited $?"
    else
        CUDASPY_OUTPUT=$run CUDASPY_HOST=0 FAKECUDA_EXPECT=$exp \
            LD_PRELOAD="$B/libcudaspy.so" "$@" >"$out" || fail "preloaded $1 exited $?"
    fi
}

# same_stdout A B: stdout of the traced run equals the untraced one.
same_stdout() {
    cmp -s "$1" "$2" || { diff "$1" "$2" >&2; fail "stdout differs with the shim"; }
}
