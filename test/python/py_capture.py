"""py_capture.py: a launch loop on our fake CUDA runtime that logs when each
of its launches entered and returned (CLOCK_MONOTONIC, the run file's
clock), for cli.capture (test/cli/capture.sh): the recorded ranges must
hold exactly the launches made inside them.

Writes its pid to LOG.pid before the first CUDA call, then "T0 T1" a launch
to LOG. Usage: py_capture.py SECONDS LOG"""
import ctypes
import sys
import time

from fake_rt import dim3, kernel, rt


def main():
    secs, log = float(sys.argv[1]), sys.argv[2]
    with open(log + ".pid", "w") as f:
        f.write("%d\n" % __import__("os").getpid())
    k, s = kernel("cap_kernel"), ctypes.c_void_p()
    args = (ctypes.c_void_p * 1)()
    assert rt.cudaStreamCreate(ctypes.byref(s)) == 0
    calls, end = [], time.monotonic() + secs
    while time.monotonic() < end:
        t0 = time.monotonic_ns()
        assert rt.cudaLaunchKernel(k, dim3(1, 1, 1), dim3(32, 1, 1), args, 0, s) == 0
        calls.append((t0, time.monotonic_ns()))
        time.sleep(0.001)
    rt.cudaStreamSynchronize(s)
    with open(log, "w") as f:
        f.writelines("%d %d\n" % c for c in calls)


main()
