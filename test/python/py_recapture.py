"""py_recapture.py: a Python program that rebuilds a CUDA graph every step,
as torch.compile(mode="reduce-overhead") does for an input shape it has not
seen: the step's code runs eagerly (warm-up), is captured on a stream and
instantiated, then replayed; driven through ctypes on our fake CUDA runtime
(FAKECUDA_SIM=1, 0.5 ms kernels, cuGraphInstantiateWithFlags slowed by
FAKECUDA_LAT_NS), for cli.python_recapture (test/python.cmake).

Prints the lines it captures and instantiates from
("py_recapture: capture LINE instantiate LINE"), then "py_recapture: ok".
Usage: py_recapture.py [STEPS]"""
import ctypes
import sys

from fake_rt import dim3, kernel, rt

STEPS = int(sys.argv[1]) if len(sys.argv) > 1 else 60
KERNEL = kernel("py_kernel")
LINES = {}


def check(rc):
    if rc != 0:
        raise SystemExit("py_recapture: CUDA error %d" % rc)


def here():
    return sys._getframe(1).f_lineno


def forward(s):
    args = (ctypes.c_void_p * 1)()
    for _ in range(3):
        check(rt.cudaLaunchKernel(KERNEL, dim3(4, 1, 1), dim3(32, 1, 1), args, 0, s))


def record_graph(s):
    g, e = ctypes.c_void_p(), ctypes.c_void_p()
    LINES["capture"] = here() + 1
    check(rt.cudaStreamBeginCapture(s, 2))  # cudaStreamCaptureModeRelaxed
    sum(i * i for i in range(20000))  # the framework tracing what it captures
    forward(s)
    check(rt.cudaStreamEndCapture(s, ctypes.byref(g)))
    LINES["instantiate"] = here() + 1
    check(rt.cudaGraphInstantiateWithFlags(ctypes.byref(e), g, ctypes.c_ulonglong(0)))
    check(rt.cudaGraphDestroy(g))
    return e


def step(s):
    forward(s)  # the warm-up run of a new shape
    check(rt.cudaStreamSynchronize(s))
    e = record_graph(s)
    check(rt.cudaGraphLaunch(e, s))
    check(rt.cudaStreamSynchronize(s))
    check(rt.cudaGraphExecDestroy(e))


def main():
    s = ctypes.c_void_p()
    check(rt.cudaStreamCreate(ctypes.byref(s)))
    for _ in range(STEPS):
        step(s)
    print("py_recapture: capture %d instantiate %d" % (LINES["capture"], LINES["instantiate"]))
    print("py_recapture: ok")


main()
