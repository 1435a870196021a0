# A fuzzed run file whose stacks table holds a row with id 613416964 made
# the reader size its by-id array for that id: a 16 GB allocation, out of
# memory under the fuzzer. Ids are numbered 1..N as written, so the reader
# now refuses one far past its table's row count: a clean one-line error,
# exit 2, at once (before the fix: "out of memory", or minutes of zeroing
# 16 GB where the kernel overcommits, past want_rejected's timeout).
. "$(dirname "$0")/analyze_common.sh"
corpus regress-oom-stack-id.run oom.run
want_rejected oom.run "cudaspy-analyze: oom.run: stacks: id 613416964 past the table's range (1092)"
finish
