#!/bin/bash
# scripts/fuzz.sh: build the libFuzzer targets (test/fuzz/) with clang,
# ASan+UBSan and coverage for every library, in build-fuzz, then run each
# target for FUZZ_SECONDS (default 60) from its seed corpus
# (test/fuzz/corpus/<target>/). New inputs go to build-fuzz/corpus/<target>/,
# crashes to build-fuzz/crashes/. Prints one line per target with the
# executions; exits 1 if any target crashed.
#   FUZZ_SECONDS=10 FUZZ_TARGETS="runfile mcp" bash scripts/fuzz.sh
set -u
cd "$(dirname "$0")/.."
SECS=${FUZZ_SECONDS:-60}
TARGETS=${FUZZ_TARGETS:-"runfile cudablk summary mcp cli"}
B=${FUZZ_BUILD:-build-fuzz}
SRC=$(pwd)
JOBS=${JOBS:-$(nproc 2>/dev/null || echo 2)}
CC=${FUZZ_CC:-clang}

command -v "$CC" >/dev/null || { echo "fuzz.sh: $CC not found (libFuzzer needs clang)" >&2; exit 2; }
cmake -S . -B "$B" -DCMAKE_C_COMPILER="$CC" -DCS_FUZZ=ON -DCS_SANITIZE=address \
      -DCMAKE_BUILD_TYPE=Debug -DCMAKE_C_FLAGS="-fsanitize=fuzzer-no-link -O1" >/dev/null ||
    exit 3
build=()
for t in $TARGETS; do build+=(--target "fuzz_$t"); done
cmake --build "$B" -j "$JOBS" "${build[@]}" >"$B/fuzz-build.log" 2>&1 ||
    { tail -30 "$B/fuzz-build.log" >&2; echo "fuzz.sh: build failed" >&2; exit 3; }
B=$(cd "$B" && pwd) # fuzz_cli works in a scratch directory: absolute paths only

# LMDB faults inside liblmdb are handled by fuzz_runfile itself (see there);
# leaks there are expected after such a fault.
export ASAN_OPTIONS=${ASAN_OPTIONS:-"allocator_may_return_null=1:handle_segv=1:handle_sigbus=1"}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-"print_stacktrace=1:halt_on_error=1"}
mkdir -p "$B/crashes"
status=0
for t in $TARGETS; do
    corpus="$B/corpus/$t"
    mkdir -p "$corpus"
    extra=(-close_fd_mask=1) asan=$ASAN_OPTIONS
    case $t in
    runfile) extra+=(-detect_leaks=0 -max_len=262144 -rss_limit_mb=4096) asan+=:detect_leaks=0 ;;
    mcp) extra+=(-max_len=8192) ;;
    cli) extra=(-close_fd_mask=3 -max_len=1024) ;; # usage texts and errors by the thousand
    esac
    log="$B/fuzz_$t.log"
    ASAN_OPTIONS=$asan "$B/fuzz_$t" "$corpus" "$SRC/test/fuzz/corpus/$t" -max_total_time="$SECS" -print_final_stats=1 \
        -timeout=30 -artifact_prefix="$B/crashes/$t-" "${extra[@]}" \
        </dev/null >"$log" 2>&1
    rc=$?
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    cov=$(grep -oE 'cov: [0-9]+' "$log" | tail -1)
    if [ $rc -ne 0 ]; then
        status=1
        echo "fuzz_$t: CRASH after ${execs:-?} executions (rc $rc); see $log and $B/crashes/"
        grep -m3 -E 'ERROR: |runtime error|SUMMARY' "$log"
    else
        echo "fuzz_$t: ${execs:-?} executions in ${SECS} s, ${cov:-cov: ?}, no crash"
    fi
done
exit $status
