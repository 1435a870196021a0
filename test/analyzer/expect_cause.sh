#!/bin/sh
# expect_cause.sh RUN.lmdb CHECK...: analyse RUN with cudaspy-analyze --json
# and apply json_expect's checks (top=CAUSE, has=CAUSE, nohigh, missing=TEXT).
# Reusable on real runs: CS_ANALYZE and CS_JSON_EXPECT name the binaries
# (default: from PATH). Example: expect_cause.sh run.lmdb top=cpu_contention_tree
set -u
run=$1
shift
analyze=${CS_ANALYZE:-cudaspy-analyze}
expect=${CS_JSON_EXPECT:-json_expect}
out=$("$analyze" --json "$run") || { echo "expect_cause: $run: cudaspy-analyze exited $?" >&2; exit 1; }
printf '%s\n' "$out" | "$expect" "$@" || exit 1
echo "ok   $run: $*"
