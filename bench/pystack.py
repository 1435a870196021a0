"""pystack.py: what a Python stack costs a CUDA call (docs/python.md), on
cudaspy's fake runtime, for bench/pystack.sh. At the bottom of a recursion
DEPTH frames deep, makes BATCHES batches of N calls and prints each batch's
ns per call. MODE sync: cudaStreamSynchronize, every one of which gets a
Python stack (the same one: the lookup path); launch: cudaLaunchKernel with
no sync between, none of which gets one.

Usage (LD_LIBRARY_PATH holding the fake libcudart.so.13 and libcuda.so.1):
    python3 pystack.py MODE DEPTH N BATCHES"""
import ctypes
import sys
import time


def main():
    mode, depth, n, batches = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    rt = ctypes.CDLL("libcudart.so.13", mode=ctypes.RTLD_GLOBAL)
    g = ctypes.CDLL(None)  # the global scope: the preloaded shim's wrappers first
    stub = ctypes.cast(rt.cudaGetLastError, ctypes.c_void_p).value
    rt.fakert_register_kernel(ctypes.c_void_p(stub), b"pystack_kernel")
    launch = g.cudaLaunchKernel
    launch.argtypes = [ctypes.c_void_p, ctypes.c_uint64, ctypes.c_uint32, ctypes.c_uint64,
                       ctypes.c_uint32, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]
    dim1 = (1 << 32) | 1
    params = (ctypes.c_void_p * 1)()
    s = ctypes.c_void_p()
    g.cudaStreamCreate(ctypes.byref(s))
    sync = g.cudaStreamSynchronize
    if mode == "sync":
        call = lambda: sync(s)
    else:
        call = lambda: launch(stub, dim1, 1, dim1, 1, params, 0, s)

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
