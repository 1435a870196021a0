#!/bin/sh
# golden.sh ANALYZE GEN_RUN CASE_DIR WORKDIR: one data.analyzer.<case> test.
# Writes the synthetic run CASE_DIR/gen describes (gen_run arguments after the
# output file; gen_run is deterministic for its default seed), then requires
# `cudaspy-analyze --json` and the text report (--color never), each with the
# options in CASE_DIR/opts if present, to equal CASE_DIR/report.json and
# CASE_DIR/report.txt byte for byte, with exit code 0 and nothing on stderr.
# Guards behaviour-neutral changes such as the split of analyzer/ (issue 26).
# Determinism: the run is written and read in WORKDIR under a relative name,
# so the paths printed are "<case>.lmdb"; nothing prints times of day or
# pids of this process. One normalisation: "tool_version" is replaced by "X"
# in the JSON, so a version bump does not touch the golden files.
# A change that is meant to alter the reports: rerun with CS_GOLDEN_UPDATE=1
# (e.g. CS_GOLDEN_UPDATE=1 ctest -R data.analyzer) and review the diff.
set -u
A=$1 GEN=$2 CASE=$3 W=$4
name=$(basename "$CASE")
rm -rf "$W" && mkdir -p "$W" && cd "$W" || exit 1
opts=""
[ -f "$CASE/opts" ] && opts=$(cat "$CASE/opts")

# shellcheck disable=SC2046 # gen is a word list: SCENARIO [OPTIONS]
set -- $(cat "$CASE/gen")
scen=$1
shift
"$GEN" "$scen" "$name.lmdb" "$@" || { echo "gen_run $scen failed"; exit 1; }

fail=0
# report KIND FILE ARGS...: run the analyzer, normalise, compare with CASE/FILE
report() {
    kind=$1 file=$2
    shift 2
    "$A" "$@" "$name.lmdb" >raw.txt 2>err.txt
    rc=$?
    [ "$rc" = 0 ] || { echo "$kind: exit code $rc, want 0"; fail=1; }
    [ -s err.txt ] && { echo "$kind: stderr not empty:"; cat err.txt; fail=1; }
    sed 's/^\( *"tool_version": \)"[^"]*"/\1"X"/' raw.txt >"$file"
    if [ "${CS_GOLDEN_UPDATE:-0}" = 1 ]; then
        cp "$file" "$CASE/$file" && echo "updated $CASE/$file"
    elif ! cmp -s "$CASE/$file" "$file"; then
        echo "$kind report differs from $CASE/$file (want, got):"
        diff "$CASE/$file" "$file" | head -n 40
        fail=1
    fi
}
# shellcheck disable=SC2086
report json report.json --json $opts
# shellcheck disable=SC2086
report text report.txt --color never $opts
[ "$fail" = 0 ] || exit 1
echo "ok   $name"
