"""fakert.py: cudaspy's fake CUDA runtime reached through the preloaded shim,
for the Python benchmarks (pystack.py, pysample.py): the calls they time."""
import ctypes


def calls(kernel):
    """A launch of a kernel named `kernel` and a sync, both on one new stream,
    as two functions of no argument. The runtime is looked up in the global
    scope, where the preloaded shim's wrappers come first."""
    rt = ctypes.CDLL("libcudart.so.13", mode=ctypes.RTLD_GLOBAL)
    g = ctypes.CDLL(None)
    stub = ctypes.cast(rt.cudaGetLastError, ctypes.c_void_p).value
    rt.fakert_register_kernel(ctypes.c_void_p(stub), kernel)
    launch = g.cudaLaunchKernel
    launch.argtypes = [ctypes.c_void_p, ctypes.c_uint64, ctypes.c_uint32, ctypes.c_uint64,
                       ctypes.c_uint32, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]
    dim1 = (1 << 32) | 1
    params = (ctypes.c_void_p * 1)()
    s = ctypes.c_void_p()
    g.cudaStreamCreate(ctypes.byref(s))
    sync = g.cudaStreamSynchronize
    return (lambda: launch(stub, dim1, 1, dim1, 1, params, 0, s)), (lambda: sync(s))
