"""py_hostwork.py: a training-like loop on our fake CUDA runtime (through
ctypes, as py_workload.py) whose host code between CUDA calls has known hot
spots, for the collector's samples of host code (docs/python.md, "Host
code"; cli.python_samples_*). On the main thread each step launches a
kernel and synchronises, then runs pure Python: tokenize() (its busy loop
is marked HOT), log_step() (WARM), with four times as much work in the
first (about 4 ms and 1 ms here). By work, not by time: a thread preempted
in a function that runs until a deadline stays there until it runs again,
which gives a short function as much of a long preemption as a long one. A second
thread, a loader, makes the same calls and then waits for its next batch
in wait_batch() (a 4 ms sleep, which lets the main thread keep the GIL:
two threads spinning in Python would share it, and a thread waiting for it
stays on whatever line it waits at, which blurs the 4 to 1). The CUDA calls
themselves are short, so nearly every sample of host code must fall in
those three functions.

Usage: py_hostwork.py [STEPS]. Prints "py_hostwork: ok"."""
import ctypes
import sys
import threading
import time

from fake_rt import dim3, kernel, rt

STEPS = int(sys.argv[1]) if len(sys.argv) > 1 else 100
WORK = 50000  # loop turns of log_step(), about 1 ms; tokenize() does four times as many
KERNEL = kernel("hostwork_kernel")


def check(rc):
    if rc != 0:
        raise SystemExit("py_hostwork: CUDA error %d" % rc)


def tokenize(text):
    n = 0
    for _ in range(WORK * 4):
        n += len(text)  # HOT
    return n


def log_step(i):
    n = 0
    for _ in range(WORK):
        n += i  # WARM
    return n


def wait_batch():
    time.sleep(0.004)


def step_cuda(s, args):
    check(rt.cudaLaunchKernel(KERNEL, dim3(1, 1, 1), dim3(32, 1, 1), args, 0, s))
    check(rt.cudaStreamSynchronize(s))


def train(steps, loader=False):
    s = ctypes.c_void_p()
    check(rt.cudaStreamCreate(ctypes.byref(s)))
    arg = ctypes.c_void_p(0)
    args = (ctypes.c_void_p * 1)(ctypes.addressof(arg))
    for i in range(steps):
        step_cuda(s, args)
        if loader:
            wait_batch()
        else:
            tokenize("batch %d" % i)
            log_step(i)


t = threading.Thread(target=train, args=(STEPS, True), name="loader")
t.start()
train(STEPS)
t.join()
print("py_hostwork: ok")
