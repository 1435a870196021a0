"""py_stress.py: CUDA calls from threads whose frame chains keep changing,
beside threads that only build and tear down frames (recursion, generators,
coroutines, exceptions), for cli.python_stress_* (test/python.cmake): the
shim walks each calling thread's frames while all of that goes on. Every
CUDA call is on a line marked "# CUDA"; the test checks every stack's
innermost frame is one of them. Prints "py_stress: ok"."""
import ctypes
import sys
import threading
import time

ctypes.CDLL("libcudart.so.13", mode=ctypes.RTLD_GLOBAL)
rt = ctypes.CDLL(None)
SECONDS = float(sys.argv[1]) if len(sys.argv) > 1 else 1.5
stop = threading.Event()
errors = []


def sync(s, depth):
    if depth > 0:
        return sync(s, depth - 1)
    return rt.cudaStreamSynchronize(s)  # CUDA


def gen_sync(s, n):
    for i in range(n):
        yield rt.cudaStreamSynchronize(s)  # CUDA


def caller(i):
    s = ctypes.c_void_p()
    if rt.cudaStreamCreate(ctypes.byref(s)) != 0:  # CUDA
        errors.append("stream")
        return
    d = ctypes.c_void_p()
    k = 0
    while not stop.is_set():
        k += 1
        if sync(s, k % 40) != 0 or any(gen_sync(s, 2)):
            errors.append("sync")
            return
        try:
            raise KeyError(k)
        except KeyError:
            if rt.cudaMalloc(ctypes.byref(d), 4096) != 0 or rt.cudaFree(d) != 0:  # CUDA
                errors.append("alloc")
                return


def churn(i):
    def deep(n):
        return n if n == 0 else deep(n - 1) + 1

    def gen(n):
        for x in range(n):
            yield deep(x % 30)

    while not stop.is_set():
        sum(gen(50))
        try:
            deep(20)
            raise ValueError
        except ValueError:
            pass


def main():
    threads = [threading.Thread(target=caller, args=(i,)) for i in range(3)]
    threads += [threading.Thread(target=churn, args=(i,)) for i in range(3)]
    for t in threads:
        t.start()
    time.sleep(SECONDS)
    stop.set()
    for t in threads:
        t.join()
    if errors:
        raise SystemExit("py_stress: CUDA errors: %s" % errors[:3])
    print("py_stress: ok")


main()
