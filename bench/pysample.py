"""pysample.py: what the collector's samples of host code cost the program
(docs/python.md, "Host code"), on cudaspy's fake runtime, for
bench/pysample.sh. At the bottom of a recursion DEPTH frames deep, makes
BATCHES batches of N steps and prints each batch's us per step, wall time,
then on a second line the thread's own CPU time (what preemption by other
programs does not change). A step is
WORK iterations of pure Python (host code, sampled) then a kernel launch and
a stream sync (the CUDA calls, not sampled).

Usage (LD_LIBRARY_PATH holding the fake libcudart.so.13 and libcuda.so.1):
    python3 pysample.py DEPTH N BATCHES WORK"""
import sys
import time

import fakert


def main():
    depth, n, batches, work = (int(x) for x in sys.argv[1:5])
    launch, sync = fakert.calls(b"pysample_kernel")

    def host():
        x = 0
        for i in range(work):
            x += i * i
        return x

    def bottom(d):
        if d > 1:
            return bottom(d - 1)
        out, cpu = [], []
        for _ in range(batches):
            t0, c0 = time.perf_counter_ns(), time.thread_time_ns()
            for _ in range(n):
                host()
                launch()
                sync()
            out.append((time.perf_counter_ns() - t0) / n / 1000)
            cpu.append((time.thread_time_ns() - c0) / n / 1000)
        return out, cpu

    for line in bottom(depth):
        print(" ".join("%.2f" % x for x in line))


main()
