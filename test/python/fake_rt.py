"""fake_rt.py: the fake CUDA runtime as the test workloads load it, the way
PyTorch loads libcudart (globally, so the calls reach the LD_PRELOADed
shim): `rt` (the global namespace, the shim's wrappers first), `dim3`, and
`kernel(name)`, a host stub registered as a device function of that name."""
import ctypes

ctypes.CDLL("libcudart.so.13", mode=ctypes.RTLD_GLOBAL)
rt = ctypes.CDLL(None)  # global lookup: the shim's wrappers come first


class dim3(ctypes.Structure):
    _fields_ = [("x", ctypes.c_uint), ("y", ctypes.c_uint), ("z", ctypes.c_uint)]


rt.cudaLaunchKernel.argtypes = [ctypes.c_void_p, dim3, dim3, ctypes.c_void_p,
                                ctypes.c_size_t, ctypes.c_void_p]


def kernel(name):
    """A host stub (libc's abs) registered as device function @name."""
    k = ctypes.cast(rt.abs, ctypes.c_void_p)
    assert rt.fakert_register_kernel(k, name.encode()) == 0
    return k
