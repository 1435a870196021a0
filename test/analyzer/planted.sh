#!/bin/sh
# planted.sh GEN_RUN DIR SCENARIO CHECK...: write a synthetic run with one
# planted cause (gen_run.c) and check the report finds it (expect_cause.sh).
set -u
gen=$1 dir=$2 scen=$3
shift 3
mkdir -p "$dir"
rm -f "$dir/$scen.lmdb" "$dir/$scen.lmdb-lock"
"$gen" "$scen" "$dir/$scen.lmdb" || exit 1
exec sh "$(dirname "$0")/expect_cause.sh" "$dir/$scen.lmdb" "$@"
