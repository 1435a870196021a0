"""py_trees.py: a Python program whose compiled step meets a new input
shape every few steps, as torch.compile(mode="reduce-overhead") meets a
batch size that keeps changing: its stand-in of torch's cudagraph trees
(trees/site-packages/torch, on our fake CUDA runtime, FAKECUDA_SIM=1 with
0.5 ms kernels) runs each new shape eagerly once, records a graph for it at
its second call and replays it after. Only the file paths and function
names are torch's: the analyzer tells torch's CUDA-graph code by them.

Prints the accuracy corpus's truth line (scripts/accuracy.py): truth_ns
is the workload's own measure, the time its stand-in spent warming up and
recording after the first WARM steps, less its syncs' waits; runq_ns the
loop's time waiting for a CPU (other load); warmups and records count
them. Usage: py_trees.py STEPS EVERY   (EVERY: steps per
shape; 0: one shape, recorded once in the first steps)"""
import ctypes
import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "trees",
                                "site-packages"))
from fake_rt import dim3, kernel, rt  # noqa: E402
from torch._inductor.cudagraph_trees import (METER, CUDAGraphTreeManager, busy,  # noqa: E402
                                             cudagraphify_impl)

WARM = 8
KERNEL_NS = 500000  # FAKECUDA_KERNEL_US=py_kernel=500
KERNEL = kernel("py_kernel")
STREAM = ctypes.c_void_p()


def launch():
    args = (ctypes.c_void_p * 1)()
    if rt.cudaLaunchKernel(KERNEL, dim3(4, 1, 1), dim3(32, 1, 1), args, 0, STREAM) != 0:
        raise SystemExit("py_trees: launch failed")


def model(x):
    for _ in range(3):
        launch()


def runq_ns():
    """This thread's time waiting for a CPU so far (schedstat's run_delay)."""
    try:
        with open("/proc/thread-self/schedstat") as f:
            return int(f.read().split()[1])
    except (OSError, IndexError, ValueError):
        return 0


def main():
    steps, every = int(sys.argv[1]), int(sys.argv[2])
    assert rt.cudaStreamCreate(ctypes.byref(STREAM)) == 0
    t_cuda = time.monotonic_ns()
    f = cudagraphify_impl(CUDAGraphTreeManager(STREAM), model)
    for i in range(steps):
        if i == WARM:
            rt.cudaDeviceSynchronize()
            t0, q0, METER["on"] = time.monotonic_ns(), runq_ns(), True
        busy(300)  # the user's input preparation
        f(i // every if every else 0, None)
        launch()  # the user's loss
    rt.cudaDeviceSynchronize()
    loop, runq = time.monotonic_ns() - t0, runq_ns() - q0
    print("cudaspy-truth: " + json.dumps({
        "case": "trees", "planted": "graph_recapture" if every else "none",
        "truth_ns": METER["ns"], "loop_ns": loop, "steps": steps - WARM,
        "setup_ns": t0 - t_cuda, "gpu_ns": (steps - WARM) * 4 * KERNEL_NS,
        "runq_ns": runq, "warmups": METER["warmups"], "records": METER["records"]}),
        flush=True)


main()
