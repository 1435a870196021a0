"""py_oom.py: a Python program that dies of out-of-memory, as a PyTorch
one ends in torch.cuda.OutOfMemoryError, driving our fake CUDA runtime
through ctypes (for cli.python_oom, test/python.cmake; issue 31). The
device has FAKECUDA_MEM_LIMIT bytes; the weights take 96 MiB at the line
marked WEIGHTS, a step's activations 8 MiB at ACTS (freed each step), and
the last step asks 512 MiB at BIG, which fails: the program asks the
device's free memory for its message (as PyTorch does) and exits 1.
The analyzer must name BIG's line in the oom finding, and WEIGHTS' line
as the largest holder."""
import ctypes
import sys

ctypes.CDLL("libcudart.so.13", mode=ctypes.RTLD_GLOBAL)
rt = ctypes.CDLL(None)  # global lookup: the shim's wrappers come first
MIB = 1 << 20


def load_model():
    w = ctypes.c_void_p()
    assert rt.cudaMalloc(ctypes.byref(w), ctypes.c_size_t(96 * MIB)) == 0  # WEIGHTS
    return w


def step(big):
    a = ctypes.c_void_p()
    n = (512 if big else 8) * MIB
    if rt.cudaMalloc(ctypes.byref(a), ctypes.c_size_t(n)) != 0:  # BIG ACTS
        free, total = ctypes.c_size_t(), ctypes.c_size_t()
        rt.cudaMemGetInfo(ctypes.byref(free), ctypes.byref(total))
        print("py_oom: out of memory: tried to allocate %d MiB; %d MiB free of %d MiB"
              % (n // MIB, free.value // MIB, total.value // MIB))
        sys.exit(1)
    rt.cudaFree(a)


weights = load_model()
for i in range(10):
    step(big=(i == 9))
