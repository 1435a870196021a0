# fault_common.sh: helpers sourced by test/fault/*.sh. $1 of every script is
# the build directory; each works in its own temporary directory, removed on
# success. Random scripts take CS_TEST_SEED and print the seed they used.
B=${1:?usage: $0 BUILD_DIR ...}
shift
T=$(mktemp -d /tmp/cs-fault.XXXXXX)
trap 'rc=$?; [ $rc -eq 0 ] && rm -rf "$T"; exit $rc' EXIT
export CUDASPY_QUIET=1 CUDASPY_CLOCK=mono
unset CUDASPY_SOCK CUDASPY_DISABLE LD_PRELOAD CUDASPY_OUTPUT
C="$B/fake/fault_client"
NAME=$(basename "$0" .sh)

fail() { echo "$NAME: $*" >&2; exit 1; }
say() { echo "$NAME: $*"; }

# seed_init [SALT]: RANDOM from CS_TEST_SEED or the clock (+ SALT, so two
# tests started in the same second differ)
seed_init() {
    SEED=${CS_TEST_SEED:-$(( $(date +%s) % 100000 + ${1:-0} ))}
    RANDOM=$SEED
    say "seed $SEED (CS_TEST_SEED=$SEED to replay)"
}

# u32 at byte offset OFF of FILE
u32_at() { od -An -tu4 -j "$2" -N4 "$1" 2>/dev/null | tr -d ' '; }
u64_at() { od -An -tu8 -j "$2" -N8 "$1" 2>/dev/null | tr -d ' '; }

# wait_ready COUNTFILE: until fault_client's loop runs (10 s at most)
wait_ready() {
    for _ in $(seq 500); do
        [ "$(u32_at "$1" 4)" = 1 ] && return 0
        sleep 0.02
    done
    fail "$1: the client did not start its loop within 10 s"
}

# sleep_ms N
sleep_ms() { sleep "$(printf '%d.%03d' $(($1 / 1000)) $(($1 % 1000)))"; }
