# A run that lost records says so at the top, exit 0.
. "$(dirname "$0")/analyze_common.sh"
gen clean run.lmdb --steps 50 --lost 1234
run "$A" run.lmdb
want_rc 0
want_err ""
want_out "run     run.lmdb
command  python train.py
duration 165.6ms   CUDA calls 2,200   host records 91   sampler tier A   CPUs 2
start-up 5.0ms to the first CUDA call (CUDA initialisation 0ns)   CUDA-active 159.3ms
WARNING: degraded run: 0 CUDA records dropped, 1,234 host records lost, collector did not shut down cleanly; figures are lower bounds" 5
finish
