# A fuzzed run file whose newest LMDB meta page (page 1) gives page size 0,
# while page 0's gives 4096: the pre-check divided the file size by the
# newest meta's page size (division by zero: UBSan in the fuzzer, SIGFPE
# in a plain build). Both metas must agree; a clean one-line error, exit 2.
D=$(cd "$(dirname "$0")" && pwd)
. "$D/analyze_common.sh"
cp "$D/../fuzz/corpus/runfile/regress-meta-psize-0.run" meta.run || exit 1

run timeout 20 "$A" meta.run
want_rc 2
want_out ""
want_err "cudaspy-analyze: meta.run: corrupt run file (page size 0 in the newest meta, 4096 in the first)"
finish
