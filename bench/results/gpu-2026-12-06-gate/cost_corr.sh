#!/usr/bin/env bash
# cost_corr.sh: what the CUPTI API kinds cost during sampled slices (commit
# 4017bf8, "new") against the shim before it (5dfe24c, "old": build it with
# scripts/build-gpu-variant.sh 5dfe24c prefix), interleaved with untraced
# runs: the empty-kernel launch loop (shared runtime) and itemstep noitem.
# Run on the GPU machine from the repository root; appends to $OUT/cost.txt.
# cost of the API kinds during slices: launch loop and itemstep, untraced / new shim / old shim, interleaved
set -u
nvcc -O2 -cudart shared -o /tmp/ll bench/gpu/launch_loop.cu
cp -r build-gpu /tmp/bold && cp shim-variants/libcudaspy-prefix.so /tmp/bold/libcudaspy.so
python3 -c "import torch; torch.ones(1,device='cuda').sum().item()"
for r in 1 2 3 4; do
  for v in plain new old; do
    case $v in plain) pre="";; new) pre="build-gpu/cudaspy record -q -o /tmp/c.lmdb --";; old) pre="/tmp/bold/cudaspy record -q -o /tmp/c.lmdb --";; esac
    x=$($pre taskset -c 2,3 /tmp/ll 300000 5 | sed -n 's/^us_per_launch: //p')
    y=$($pre taskset -c 2-7 python3 bench/gpu/workloads.py itemstep noitem 800 | sed -n 's/^elapsed: //p')
    echo "round $r $v launch_us $x itemstep_s $y" | tee -a $OUT/cost.txt
    rm -f /tmp/c.lmdb*
  done
done
