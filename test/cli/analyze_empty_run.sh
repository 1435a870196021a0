# A run without a single record: the report says so, exit 0.
. "$(dirname "$0")/analyze_common.sh"
gen empty run.lmdb
run "$A" run.lmdb
want_rc 0
want_err ""
want_out "run     run.lmdb
command  python train.py
duration 5.0ms   CUDA calls 0   host records 0   sampler tier A   CPUs ?
missing: empty run: no records at all

FINDINGS (0)
  none: no cause above the thresholds

LATENCY (exact over every call; nearest-rank percentiles)
  no CUDA calls

GPU FEED (GPU idle lower bound: sync returned -> next enqueue)
  no CUDA process

PROCESSES
  none recorded"
finish
