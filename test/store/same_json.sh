#!/bin/sh
# same_json.sh ANALYZE RECODE WORKDIR RUN...: store.compact_same_json, readers
# get the same answers from compact blocks (issue 25). Each version-1 RUN is
# copied three times: v1 as it is, v2 with its CUDA blocks recoded compact
# (cs_recode: the same records and keys), v2m also merged into blocks of up
# to 2048 records, as the format-2 collector cuts them. `cudaspy-analyze
# --json`, the text report and the Perfetto export of each must equal v1's
# byte for byte. The runs are read under the same relative name, so the
# paths printed match.
set -u
A=$1 RECODE=$2 W=$3
shift 3
fail=0
for run in "$@"; do
    name=$(basename "$run")
    rm -rf "$W" && mkdir -p "$W/v1" "$W/v2" "$W/v2m" || exit 1
    for v in v1 v2 v2m; do cp "$run" "$W/$v/run.lmdb" || exit 1; done
    "$RECODE" "$W/v2/run.lmdb" >/dev/null && "$RECODE" --merge 2048 "$W/v2m/run.lmdb" >/dev/null ||
        { echo "$name: cs_recode failed"; exit 1; }
    for v in v1 v2 v2m; do
        (cd "$W/$v" && "$A" --json run.lmdb >report.json 2>err.txt &&
            "$A" --color never run.lmdb >report.txt 2>>err.txt &&
            "$A" export --chrome trace.json run.lmdb >/dev/null 2>>err.txt) ||
            { echo "$name: $v: cudaspy-analyze failed:"; cat "$W/$v/err.txt"; fail=1; }
    done
    for v in v2 v2m; do
        for f in report.json report.txt trace.json; do
            if ! cmp -s "$W/v1/$f" "$W/$v/$f"; then
                echo "$name: $f differs between the version-1 and the compact file ($v):"
                diff "$W/v1/$f" "$W/$v/$f" | head -n 20
                fail=1
            fi
        done
    done
    [ "$fail" = 0 ] && echo "$name: same report, JSON and trace ($(wc -c <"$W/v1/report.json") JSON bytes)"
done
exit "$fail"
