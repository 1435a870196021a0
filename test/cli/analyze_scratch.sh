# Big arrays in scratch files (CUDASPY_SCRATCH, analyzer/model/model.c):
# the report is byte for byte the one from anonymous memory, the files are
# gone afterwards, and a folder that cannot take them leaves the arrays in
# memory, silently.
. "$(dirname "$0")/analyze_common.sh"
gen clean run.lmdb --steps 50
CUDASPY_SCRATCH=off run "$A" --json run.lmdb
want_rc 0
want_err ""
cp out.txt anon.json
for dir in "$PWD/scratch" on "$PWD/missing"; do
    mkdir -p scratch
    CUDASPY_SCRATCH=$dir run "$A" --json run.lmdb
    want_rc 0
    want_err ""
    cmp -s anon.json out.txt || { echo "CUDASPY_SCRATCH=$dir: the JSON differs"; fail=1; }
done
[ -z "$(ls -A scratch)" ] || { echo "scratch files left behind: $(ls -A scratch)"; fail=1; }
[ "$(ls -A . | grep -v -e '\.txt$' -e '\.json$' -e '^run\.lmdb' -e '^scratch$')" = "" ] ||
    { echo "files left beside the run: $(ls -A .)"; fail=1; }
finish
