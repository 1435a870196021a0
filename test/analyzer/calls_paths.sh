#!/bin/sh
# calls_paths.sh GEN_RUN ANALYZE DIR: the model's calls in the compact
# store (CUDASPY_CALLS=store: a single run's placed straight into it while
# loading, model/calls.c) and in the array (CUDASPY_CALLS=array) give one
# answer, on a planted run as written, with one call written 30 records
# after its place (inside the placement's window) and 200 after (past it:
# loading falls back to the array, then moves the calls into the store).
# Every report is the same but for the file's path.
set -u
gen=$1 an=$2 dir=$3
fail() { echo "calls_paths.sh: $*" >&2; exit 1; }
mkdir -p "$dir"
for late in 0 30 200; do
    f="$dir/late$late.lmdb"
    rm -f "$f" "$f-lock"
    "$gen" sync_per_iteration "$f" --late $late || fail "gen_run --late $late"
    CUDASPY_CALLS=store "$an" --json "$f" | sed "s|$f|RUN|g" >"$dir/direct$late.json" ||
        fail "analyze $f"
    CUDASPY_CALLS=array "$an" --json "$f" | sed "s|$f|RUN|g" >"$dir/array$late.json" ||
        fail "analyze $f (array)"
    cmp -s "$dir/direct$late.json" "$dir/array$late.json" || fail "late $late: direct and array differ"
    cmp -s "$dir/direct0.json" "$dir/direct$late.json" || fail "late $late: differs from in order"
done
grep -q '"sync_per_iteration"' "$dir/direct0.json" || fail "the planted cause is not in the report"
exit 0
