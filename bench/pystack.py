"""pystack.py: what a Python stack costs a CUDA call (docs/python.md), on
cudaspy's fake runtime, for bench/pystack.sh. At the bottom of a recursion
DEPTH frames deep, makes BATCHES batches of N calls and prints each batch's
ns per call. MODE sync: cudaStreamSynchronize, every one of which gets a
Python stack (the same one: the lookup path); launch: cudaLaunchKernel with
no sync between, none of which gets one.

Usage (LD_LIBRARY_PATH holding the fake libcudart.so.13 and libcuda.so.1):
    python3 pystack.py MODE DEPTH N BATCHES"""
import sys
import time

import fakert


def main():
    mode, depth, n, batches = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    launch, sync = fakert.calls(b"pystack_kernel")
    call = sync if mode == "sync" else launch

    def bottom(d):
        if d > 1:
            return bottom(d - 1)
        out = []
        for _ in range(batches):
            t0 = time.perf_counter_ns()
            for _ in range(n):
                call()
            out.append((time.perf_counter_ns() - t0) / n)
        return out

    print(" ".join("%.1f" % x for x in bottom(depth)))


main()
