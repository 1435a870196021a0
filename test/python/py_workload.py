"""py_workload.py: a Python program driving our fake CUDA runtime through
ctypes, loaded the way PyTorch loads libcudart (globally, so the calls reach
the LD_PRELOADed shim), for cli.python_* (test/python.cmake). It calls CUDA
from the main thread, from threads, from a forked child, at the bottom of a
deep recursion, inside a generator, inside a coroutine, and in an except
block and a finally clause while an exception is in flight.

Each CUDA call is followed, on the same line, by note(api): note() writes
what the shim should have captured there (the innermost Python frame and
its caller, as file:line:function) to EXPECT.<pid>. py_check.py compares
those with the run's stacks.

Usage: py_workload.py EXPECT_PREFIX [STEPS]. Prints "py_workload: ok"."""
import asyncio
import ctypes
import os
import sys
import threading

from fake_rt import dim3, kernel, rt

STEPS = int(sys.argv[2]) if len(sys.argv) > 2 else 20
PREFIX = sys.argv[1]
KERNEL = kernel("py_kernel")

notes = []
lock = threading.Lock()
armed = {}  # tid -> a sync was made: the next launch gets a stack


def where(f):
    return "%s:%d:%s" % (f.f_code.co_filename, f.f_lineno,
                         getattr(f.f_code, "co_qualname", f.f_code.co_name))


def note(api, kind):
    """The call on the caller's line made @api: record what the shim
    captures there (syncs, allocations, the first launch after a sync)."""
    tid = threading.get_native_id()
    captured = kind != "launch" or armed.get(tid, False)
    if kind == "sync":
        armed[tid] = True
    elif kind == "launch":
        armed[tid] = False
    f = sys._getframe(1)
    with lock:
        notes.append("%d %d %s %s %s %s" % (os.getpid(), tid, api, kind,
                                             "yes" if captured else "no",
                                             where(f) + " | " + where(f.f_back)))


def check(rc):
    if rc != 0:
        raise SystemExit("py_workload: CUDA error %d" % rc)


def new_stream():
    s = ctypes.c_void_p()
    check(rt.cudaStreamCreate(ctypes.byref(s)))
    return s


def launch(s, d):
    arg = ctypes.c_void_p(d.value)
    args = (ctypes.c_void_p * 1)(ctypes.addressof(arg))
    rc = rt.cudaLaunchKernel(KERNEL, dim3(4, 1, 1), dim3(32, 1, 1), args, 0, s); note("cudaLaunchKernel", "launch")
    return rc


def train_step(s, d):
    check(launch(s, d))
    check(launch(s, d))
    check(rt.cudaStreamSynchronize(s)); note("cudaStreamSynchronize", "sync")


def loop(steps):
    s = new_stream()
    d = ctypes.c_void_p()
    check(rt.cudaMalloc(ctypes.byref(d), 1 << 20)); note("cudaMalloc", "alloc")
    for _ in range(steps):
        train_step(s, d)
    check(rt.cudaFree(d)); note("cudaFree", "alloc")


def worker(i, steps):
    loop(steps)


def recurse(n, s):
    if n == 0:
        check(rt.cudaStreamSynchronize(s)); note("cudaStreamSynchronize", "sync")
        return
    recurse(n - 1, s)


def batches(s, n):
    for i in range(n):
        check(rt.cudaStreamSynchronize(s)); note("cudaStreamSynchronize", "sync")
        yield i


async def fetch(s):
    await asyncio.sleep(0)
    check(rt.cudaStreamSynchronize(s)); note("cudaStreamSynchronize", "sync")


async def serve(s):
    await asyncio.gather(fetch(s), fetch(s))


def on_érror(s):  # a non-ASCII name: the shim turns str objects into UTF-8
    try:
        try:
            raise ValueError("bad batch")
        except ValueError:
            check(rt.cudaStreamSynchronize(s)); note("cudaStreamSynchronize", "sync")
            raise
        finally:
            check(rt.cudaStreamSynchronize(s)); note("cudaStreamSynchronize", "sync")
    except ValueError:
        pass


def child(steps):
    loop(steps)
    write_notes()
    os._exit(0)


def write_notes():
    with open("%s.%d" % (PREFIX, os.getpid()), "w", encoding="utf-8") as f:
        f.write("\n".join(notes) + "\n")


def main():
    loop(STEPS)
    threads = [threading.Thread(target=worker, args=(i, STEPS)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    s = new_stream()
    recurse(50, s)
    for _ in batches(s, 3):
        pass
    asyncio.run(serve(s))
    on_érror(s)
    parent = threading.get_native_id()
    pid = os.fork()
    if pid == 0:  # the forking thread's state goes with it: a sync was its last call
        notes.clear()
        armed[threading.get_native_id()] = armed.get(parent, False)
        child(STEPS)
    _, st = os.waitpid(pid, 0)
    if st != 0:
        raise SystemExit("py_workload: child exited %d" % st)
    write_notes()
    print("py_workload: ok")


main()
