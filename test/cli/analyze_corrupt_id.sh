# A fuzzed run file whose stacks table holds a row with id 613416964 made
# the reader size its by-id array for that id: a 16 GB allocation, out of
# memory under the fuzzer. Ids are numbered 1..N as written, so the reader
# now refuses one far past its table's row count: a clean one-line error,
# exit 2, at once (before the fix: "out of memory", or minutes of zeroing
# 16 GB where the kernel overcommits; timeout 20 s).
D=$(cd "$(dirname "$0")" && pwd)
. "$D/analyze_common.sh"
cp "$D/../fuzz/corpus/runfile/regress-oom-stack-id.run" oom.run || exit 1

run timeout 20 "$A" oom.run
want_rc 2
want_out ""
want_err "cudaspy-analyze: oom.run: stacks: id 613416964 past the table's range (1092)"
finish
