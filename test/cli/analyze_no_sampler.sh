# CUDA calls but no host sampler: the report says what is missing, exit 0.
. "$(dirname "$0")/analyze_common.sh"
gen nohost run.lmdb --steps 50
run "$A" run.lmdb
want_rc 0
want_err ""
want_out "run     run.lmdb
command  python train.py
duration 161.9ms   CUDA calls 2,200   host records 0   sampler tier none   CPUs ?
start-up 5.0ms to the first CUDA call (CUDA initialisation 0ns)   CUDA-active 155.7ms
GPU      idle >= 11.7ms (host lower bound: no GPU activity recorded)
STEPS    50 (inferred: every cudaStreamSynchronize on thread 1000 (22.0 calls a step)): p50 3.1ms  p90 3.5ms  p99 3.6ms  max 3.6ms (step 12); cv 0.09
         of step time: in CUDA calls 91.1 %, outside them 8.9 % (no host data)
missing: no host data (sampler tier none: perf_event_open: permission denied)" 8
finish
