"""pyloop.py: a torch-like host loop on cudaspy's fake runtime, for
bench/pyloop_duty.sh. Each step makes 60 cudaLaunchKernel calls with Python
work between them (WORK list items squared and summed, a dict built) and a
cudaDeviceSynchronize, as a framework's loop does around its launches; so
the shim's lines are cold at each call, as in a real program.

Usage (LD_LIBRARY_PATH holding the fake libcudart.so.13 and libcuda.so.1):
    python3 pyloop.py STEPS WORK
Writes the CLOCK_MONOTONIC ns at the start and at each step's end to
$CS_STEP_LOG, one per line; prints "steps N"."""
import ctypes
import os
import sys
import time


def main():
    steps, work = int(sys.argv[1]), int(sys.argv[2])
    rt = ctypes.CDLL("libcudart.so.13", mode=ctypes.RTLD_GLOBAL)
    g = ctypes.CDLL(None)  # the global scope: the preloaded shim's wrappers first
    launch = g.cudaLaunchKernel
    launch.restype = ctypes.c_int
    launch.argtypes = [ctypes.c_void_p, ctypes.c_uint64, ctypes.c_uint32, ctypes.c_uint64,
                       ctypes.c_uint32, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]
    stub = ctypes.cast(rt.cudaGetLastError, ctypes.c_void_p).value  # any host address
    rt.fakert_register_kernel(ctypes.c_void_p(stub), b"pyloop_kernel")
    dim1 = (1 << 32) | 1  # dim3 {1, 1, 1}: x and y in one word, z apart
    params = (ctypes.c_void_p * 1)()
    data = list(range(work))
    ends = [time.monotonic_ns()]
    for _ in range(steps):
        for k in range(60):
            acc = sum(x * x for x in data)
            _ = {"acc": acc, "k": k}
            if launch(stub, dim1, 1, dim1, 1, params, 0, None) != 0:
                sys.exit("pyloop: cudaLaunchKernel failed")
        g.cudaDeviceSynchronize()
        ends.append(time.monotonic_ns())
    with open(os.environ["CS_STEP_LOG"], "w") as f:
        f.write("\n".join(map(str, ends)) + "\n")
    print("steps", steps)


if __name__ == "__main__":
    main()
