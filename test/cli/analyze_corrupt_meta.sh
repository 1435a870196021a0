# A fuzzed run file whose newest LMDB meta page (page 1) gives page size 0,
# while page 0's gives 4096: the pre-check divided the file size by the
# newest meta's page size (division by zero: UBSan in the fuzzer, SIGFPE
# in a plain build). Both metas must agree; a clean one-line error, exit 2.
. "$(dirname "$0")/analyze_common.sh"
corpus regress-meta-psize-0.run meta.run
want_rejected meta.run \
    "cudaspy-analyze: meta.run: corrupt run file (page size 0 in the newest meta, 4096 in the first)"
finish
